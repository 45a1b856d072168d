"""The pytest plugin (entry point ``blackbox``): run a test inside a record or replay Session.

Mark a test ``@pytest.mark.blackbox`` (or ``@pytest.mark.blackbox(cassette="name.json",
match="sequence")``), or ask for the ``blackbox`` fixture, and its HTTP traffic is recorded to or
replayed from ``<test file dir>/cassettes/<module>/<test>.json``. ``--blackbox-mode`` picks
``replay`` (the default), ``record``, or ``once`` (record when the cassette is missing, else replay).
``stub_tools=True`` on the marker (or ``--blackbox-stub-tools`` for every test) answers the test's
framework tools from the cassette while replaying: their functions, and what they need (a database,
credentials), do not run. A recording always runs them.

The session is started when the fixture is set up and finished when the test function returns or
raises, so a divergence or an incomplete replay is reported as a failure of the test itself. While
replaying, every socket connect is refused and fails the test: a replayed test must not need a network.
A cassette that fails verify's schema_version or hash_chain check (edited by hand) fails the test
with the line that says where, unless ``--blackbox-allow-unverified`` (then the run's summary names
each such test and its cassette's line, ``[unverified]``).
"""

from __future__ import annotations

import hashlib
import os
import re
import socket
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn, cast

import pytest

from otel_blackbox.errors import CassetteError, ReplayIncomplete, SessionError

if TYPE_CHECKING:  # pytest loads this plugin in every run: the session is imported only when used
    from otel_blackbox._playback.interceptor import Match, Mode, Session

__all__ = ["BlockedConnection", "cassette_file_name"]

PluginMode = Literal["replay", "record", "once"]
MODES: tuple[PluginMode, ...] = ("replay", "record", "once")
_MATCHES = ("exact", "sequence")
_MARKER_KEYS = frozenset({"cassette", "match", "stub_tools"})
_RECORD_HINT = "record it with `pytest --blackbox-mode=record` (or `--blackbox-mode=once`)"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-\[\]]+")
_MAX_STEM = 120  # well below the usual 255-byte file name limit, with room for the hash
_ALLOW = "--blackbox-allow-unverified"


class BlockedConnection(OSError):
    """A socket connect refused during a replay; an OSError so HTTP clients fail as if offline."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("blackbox", "otel-blackbox record / replay")
    group.addoption(
        "--blackbox-mode",
        dest="blackbox_mode",
        choices=MODES,
        default="replay",
        help="replay (default): serve HTTP from each test's cassette, network blocked; "
        "record: run against the real services and (over)write the cassettes; "
        "once: record the tests whose cassette is missing, replay the others.",
    )
    group.addoption(
        "--blackbox-stub-tools",
        dest="blackbox_stub_tools",
        action="store_true",
        default=False,
        help="while replaying, answer every blackbox test's framework tools (Agents SDK, LangChain, "
        "pydantic-ai, otel_blackbox.stubbable) from its cassette: their functions never run.",
    )
    group.addoption(
        _ALLOW,
        dest="blackbox_allow_unverified",
        action="store_true",
        default=False,
        help="replay a cassette that fails verify's schema_version or hash_chain check (edited by "
        "hand), with a warning; by default such a test fails, naming the check and the step.",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "blackbox(cassette=None, match='exact', stub_tools=False): record or replay the test's HTTP "
        "traffic with a cassette (default cassettes/<module>/<test>.json beside the test file); "
        "match='sequence' serves recorded responses in order without comparing requests; "
        "stub_tools=True answers the test's tools from the cassette while replaying. See --blackbox-mode.",
    )


def cassette_file_name(test_name: str) -> str:
    """A file name for a test (``Class.test_x[id]``); a hash keeps lossy or shortened names distinct."""
    stem = _UNSAFE.sub("-", test_name).strip("-.") or "test"
    if stem != test_name or len(stem) > _MAX_STEM:
        digest = hashlib.sha1(test_name.encode("utf-8")).hexdigest()[:8]
        stem = f"{stem[:_MAX_STEM]}-{digest}"
    return f"{stem}.json"


def _default_dir(item: pytest.Item) -> Path:
    return item.path.parent / "cassettes" / item.path.stem


def _test_name(item: pytest.Item) -> str:
    # The node id past the file: "TestA::test_x[1]" -> "TestA.test_x[1]", so classes do not collide.
    return ".".join(item.nodeid.split("::")[1:]) or item.name


def _options(item: pytest.Item) -> tuple[Path, Match, bool]:
    marker = item.get_closest_marker("blackbox")
    kwargs: dict[str, Any] = dict(marker.kwargs) if marker else {}
    if marker and marker.args:
        pytest.fail("[blackbox] the blackbox marker takes keyword arguments only", pytrace=False)
    unknown = sorted(set(kwargs) - _MARKER_KEYS)
    if unknown:
        pytest.fail(f"[blackbox] unknown blackbox marker argument(s): {', '.join(unknown)}", pytrace=False)
    match = kwargs.get("match", "exact")
    if match not in _MATCHES:
        pytest.fail(f"[blackbox] match must be 'exact' or 'sequence', not {match!r}", pytrace=False)
    stub_tools = kwargs.get("stub_tools", item.config.getoption("blackbox_stub_tools"))
    if not isinstance(stub_tools, bool):
        pytest.fail(f"[blackbox] stub_tools must be True or False, not {stub_tools!r}", pytrace=False)
    cassette = kwargs.get("cassette")
    if cassette is not None and not isinstance(cassette, (str, os.PathLike)):
        pytest.fail(f"[blackbox] cassette must be a file name or path, not {cassette!r}", pytrace=False)
    if cassette is None:
        path = _default_dir(item) / cassette_file_name(_test_name(item))
    else:
        path = _default_dir(item) / Path(cassette)  # an absolute path replaces the default directory
    return path, cast("Match", match), stub_tools


@dataclass
class _NetworkGuard:
    """Refuses every socket connect while installed, and remembers each attempt."""

    attempts: list[str] = field(default_factory=list)
    reported: int = 0
    _patch: pytest.MonkeyPatch = field(default_factory=pytest.MonkeyPatch)

    def install(self) -> None:
        def connect(sock: socket.socket, address: Any) -> None:
            self._refuse(address)

        def connect_ex(sock: socket.socket, address: Any) -> int:
            self._refuse(address)  # raises rather than returning an errno: a retry loop must not spin

        def create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
            self._refuse(address)

        # ssl sockets and asyncio's sock_connect end in socket.socket.connect too.
        self._patch.setattr(socket.socket, "connect", connect)
        self._patch.setattr(socket.socket, "connect_ex", connect_ex)
        self._patch.setattr(socket, "create_connection", create_connection)

    def uninstall(self) -> None:
        self._patch.undo()

    def _refuse(self, address: Any) -> NoReturn:
        where = f"{address[0]}:{address[1]}" if isinstance(address, tuple) and len(address) >= 2 else address
        self.attempts.append(str(where))
        raise BlockedConnection(f"[blackbox] network blocked during replay: connect to {where} refused")

    def unreported(self) -> str | None:
        """One line about the attempts not reported yet, or None."""
        new = self.attempts[self.reported :]
        self.reported = len(self.attempts)
        if not new:
            return None
        shown = ", ".join(dict.fromkeys(new))
        return (
            f"[blackbox] network blocked during replay: the test tried to connect to {shown}; "
            "a replayed test is served from its cassette only"
        )


@dataclass
class _Run:
    session: Session
    guard: _NetworkGuard | None
    ended: bool = False

    def end(self, error: BaseException | None) -> None:
        """Finish the session after the test function; fail the test with what went wrong."""
        self.ended = True
        if isinstance(error, pytest.skip.Exception):
            self.abandon()  # a skipped test has no verdict, and no recording worth writing
            return
        problems: list[str] = []
        if self.guard is not None and (blocked := self.guard.unreported()):
            problems.append(blocked)
        if self.session.mode == "record":
            self.session.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.session.finish(error)
        except ReplayIncomplete as exc:
            if error is None:  # else the test's own exception says better why calls are missing
                problems.append(str(exc))
        except SessionError as exc:
            problems.append(str(exc))
        # Replace the test's exception (an SDK error provoked by the 400, often), not an interrupt.
        if problems and (error is None or isinstance(error, (Exception, pytest.fail.Exception))):
            problems.append(f"cassette: {self.session.path}")
            pytest.fail("\n".join(problems), pytrace=False)

    def abandon(self) -> None:
        """Stop intercepting without writing or checking: the test function never ran (or skipped)."""
        from otel_blackbox._playback.interceptor import stop_intercepting

        self.ended = True
        stop_intercepting()  # the hook, and the tool seams of a stubbing session


_RUN = pytest.StashKey[_Run]()
_UNVERIFIED = pytest.StashKey[list[str]]()  # the tests replayed from a cassette that fails verify


def _mode(config: pytest.Config, path: Path) -> Mode:
    chosen = cast(PluginMode, config.getoption("blackbox_mode"))
    if chosen == "once":
        return "replay" if path.is_file() else "record"
    return chosen


@pytest.fixture
def blackbox(request: pytest.FixtureRequest) -> Iterator[Session]:
    """The test's record or replay Session, started before the test and finished right after it."""
    item = request.node
    path, match, stub_tools = _options(item)
    mode = _mode(request.config, path)
    if mode == "replay" and not path.is_file():
        pytest.fail(f"[blackbox] no cassette at {path}: {_RECORD_HINT}", pytrace=False)
    from otel_blackbox._playback.session import open_session

    allow = bool(request.config.getoption("blackbox_allow_unverified"))
    if mode == "replay":
        _check_cassette(request, path, allow)
    try:
        active = open_session(mode, path, match=match, stub_tools=stub_tools, allow_unverified=allow)
    except CassetteError as exc:
        pytest.fail(
            f"[blackbox] cannot replay: {exc}; re-record it with --blackbox-mode=record", pytrace=False
        )
    guard = _NetworkGuard() if mode == "replay" else None
    if guard is not None:
        guard.install()
    run = item.stash[_RUN] = _Run(active, guard)
    try:
        active.start()
        yield active
    finally:
        del item.stash[_RUN]
        called = run.ended  # else a fixture's setup failed (or skipped), which already says why
        if not called:
            run.abandon()
        if guard is not None:
            guard.uninstall()
    # Connects from fixture teardowns, after the test function's verdict.
    if called and guard is not None and (blocked := guard.unreported()):
        pytest.fail(blocked, pytrace=False)


def _check_cassette(request: pytest.FixtureRequest, path: Path, allow: bool) -> None:
    """A replay's cassette checked before use: one that fails verify's hash_chain fails the test
    with the line (or, with --blackbox-allow-unverified, is replayed, the line kept for the run's
    summary: a warning would fail a run under ``-W error``, which the option means to let go on)."""
    from otel_blackbox._cassette.trusted import load_checked_cassette

    warning = refused = None
    try:
        warning = load_checked_cassette(path, allow_unverified=allow, option=_ALLOW).warning
    except CassetteError as exc:
        refused = str(exc)  # failed outside the handler: the report shows one line, not a chain
    if refused is not None:
        pytest.fail(
            f"[blackbox] cannot replay: {refused}; re-record it with --blackbox-mode=record", pytrace=False
        )
    if warning is not None:
        request.config.stash.setdefault(_UNVERIFIED, []).append(f"{request.node.nodeid}: {warning}")


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    lines = config.stash.get(_UNVERIFIED, [])
    if lines:
        terminalreporter.section("blackbox: replayed from unverified cassettes", yellow=True)
        for line in lines:
            terminalreporter.write_line(f"[unverified] {line}")


@pytest.fixture(autouse=True)
def _blackbox_marker(request: pytest.FixtureRequest) -> None:
    # Autouse fixtures are set up first, so the session also covers the test's other fixtures.
    if request.node.get_closest_marker("blackbox") is not None:
        request.getfixturevalue("blackbox")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    run = item.stash.get(_RUN, None)
    if run is None:
        return (yield)
    try:
        result = yield
    except BaseException as exc:
        run.end(exc)
        raise
    run.end(None)
    return result
