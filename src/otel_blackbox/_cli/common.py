"""Helpers every command module shares: styling, the database path, JSON output."""

from __future__ import annotations

import contextlib
import io
import json
import sqlite3
import sys
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar, cast

import click

from otel_blackbox._render.text import safe, safe_json
from otel_blackbox._store.connection import connect_reader, connect_writer, describe_sqlite_error
from otel_blackbox._store.schema import SCHEMA_VERSION
from otel_blackbox._store.trace_logs import attached
from otel_blackbox._urls import http_url
from otel_blackbox.errors import OutputError, RunNotFound, StoreError

if TYPE_CHECKING:
    from otel_blackbox._cassette.model import Cassette
    from otel_blackbox._store.queries import SpanRecord

__all__ = [
    "ALLOW_UNVERIFIED",
    "PRICE_MODEL",
    "base_url_option",
    "carried_warning",
    "checked_inputs",
    "db_path",
    "echo_document",
    "echo_json",
    "exactly_one",
    "group_spans",
    "output_option",
    "progress",
    "reader",
    "style",
    "trace_run_or_session",
    "usd_option",
    "utf8_text",
]

_F = TypeVar("_F", bound=Callable[..., Any])

_STATUS_COLORS = {"ok": "green", "error": "red", "open": "yellow", "unset": None, "pass": "green",
                  "fail": "red", "skip": None, "success": "green", "incomplete": "yellow"}  # fmt: skip


def style(text: str, status: str) -> str:
    return click.style(text, fg=_STATUS_COLORS.get(status))


def utf8_text(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """An option callback for text that is looked up, not a path: bytes that are not UTF-8 (which
    Python hands over as lone surrogates) can match nothing recorded, and SQLite cannot take them."""
    if value is not None and not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise click.BadParameter(f"not UTF-8 text: {value!r}", ctx, param) from None
    return value


def base_url_option(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """The callback of a built-in rerun's --base-url: http(s)://host[:port][/path], else exit 2
    before anything runs."""
    if value is not None:
        try:
            http_url(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc), ctx, param) from None
    return value


def parse_stubs(stubs: tuple[str, ...]) -> dict[str, Any]:
    """The ``--stub NAME=JSON`` of a built-in rerun or a blame, by tool name (exit 2 for a bad one)."""
    from otel_blackbox._playback.agent.tools import parse_stub  # the execution side: only when given
    from otel_blackbox.errors import SessionError

    parsed: dict[str, Any] = {}
    for text in stubs:
        try:
            name, value = parse_stub(text)
        except SessionError as exc:
            raise click.BadParameter(str(exc).removeprefix("--stub "), param_hint="--stub") from None
        parsed[name] = value
    return parsed


def usd_option(ctx: click.Context, param: click.Parameter, value: str | None) -> Decimal | None:
    """The callback of --max-cost: a positive amount of US dollars (``0.50``, ``$2``), else exit 2
    before anything runs."""
    if value is None:
        return None
    from otel_blackbox._playback.budget import parse_usd  # the execution side: only when it is given

    try:
        return parse_usd(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None


def output_option(
    help_text: str, *, stdout: bool = False, metavar: str = "FILE", path: bool = False
) -> Callable[[_F], _F]:
    """-o / --output, checked before the command does any work (a missing or unwritable folder, a
    folder, a database: one line naming it, exit 2). ``stdout``: optional, ``-`` (the default) prints
    instead; ``path``: the command gets a Path."""

    def checked(ctx: click.Context, param: click.Parameter, value: str | None) -> str | Path | None:
        if value is None or value == "-":
            return value
        from otel_blackbox._output_file import check_output_file

        try:
            check_output_file(value, database=db_path(ctx))
        except OutputError as exc:
            raise click.BadParameter(str(exc), ctx, param) from None
        return Path(value) if path else value

    given: dict[str, Any] = {"default": "-", "show_default": True} if stdout else {"required": True}
    return click.option("-o", "--output", metavar=metavar, callback=checked, help=help_text, **given)


def db_path(ctx: click.Context) -> Path:
    return Path(ctx.find_root().params["db"])


@contextlib.contextmanager
def reader(ctx: click.Context) -> Iterator[sqlite3.Connection]:
    path = db_path(ctx)
    conn = connect_reader(path)
    try:
        _upgrade_older(path, conn)
        yield conn
    except sqlite3.Error as exc:
        raise describe_sqlite_error(path, exc) from None
    finally:
        conn.close()


def _upgrade_older(path: Path, conn: sqlite3.Connection) -> None:
    """Migrate a file an older otel-blackbox wrote, as a recorder opening it would: the migrations
    keep every column the reader reads (version 3 moves the rows under the ``spans`` view, with the
    same columns), and the reader sees them at once. A file this user cannot write, or one locked
    past the timeout, is read as it is (the run queries then say what is missing)."""
    (version,) = conn.execute("PRAGMA user_version").fetchone()
    if version < SCHEMA_VERSION:
        with contextlib.suppress(StoreError):
            connect_writer(path, busy_timeout_ms=2000, create=False).close()


def echo_json(value: Any) -> None:
    """``value`` as indented JSON on stdout; while the answer carries an unverified cassette's
    warning (:func:`checked_inputs`), with a top-level ``"unverified"`` field saying so."""
    carried = _CARRIED[-1] if _CARRIED else None
    if carried is not None:
        reason = "; ".join(carried.warnings)
        value = (
            {"unverified": reason, **value}
            if isinstance(value, dict)
            else {"unverified": reason, "value": value}
        )
    text = safe_json(json.dumps(value, indent=2, ensure_ascii=False, default=str))
    click.echo(text, file=None if carried is None else carried.stdout)  # JSON: never a prefix


def carried_warning() -> str | None:
    """The unverified cassettes' warning the running command's answer carries, or None."""
    return "; ".join(_CARRIED[-1].warnings) if _CARRIED else None


def echo_document(text: str) -> None:
    """A document the user keeps (a contract on ``-o -``), whole on stdout: never a line prefix,
    which would make it unreadable; it says it was made unverified in its own fields."""
    click.echo(text, nl=False, file=_CARRIED[-1].stdout if _CARRIED else None)


# -- cassettes checked before use --------------------------------------------------------------------

ALLOW_UNVERIFIED = click.option(
    "--allow-unverified",
    is_flag=True,
    help="Go on with a cassette that fails verify's schema_version or hash_chain check (edited by "
    "hand, or broken): the warning on stderr first, and every line of the answer starts with "
    '[unverified] (--json: an "unverified" field). Without it such a cassette is refused, exit 2.',
)

UNVERIFIED_PREFIX = "[unverified] "


class _Prefixed(io.TextIOBase):
    """A text stream that starts each line written to ``stream`` with ``prefix``."""

    def __init__(self, stream: TextIO, prefix: str) -> None:
        super().__init__()
        self._stream, self._prefix, self._at_start = stream, prefix, True

    def write(self, text: str) -> int:
        if not isinstance(text, str):  # click asks whether this is a binary stream: it is not
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        out = []
        for piece in text.splitlines(keepends=True):
            if self._at_start:
                out.append(self._prefix)
            out.append(piece)
            self._at_start = piece.endswith(("\n", "\r"))
        self._stream.write("".join(out))
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._stream.encoding

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return self._stream.errors


class _Carried:
    def __init__(self, warnings: list[str], stdout: TextIO) -> None:
        self.warnings, self.stdout = warnings, stdout


_CARRIED: list[_Carried] = []  # the running command's, while its answer carries them


@contextlib.contextmanager
def _carrying(warnings: list[str]) -> Iterator[None]:
    """Each warning on stderr, then every line the command writes (stdout and stderr) starting with
    ``[unverified] ``, until it ends."""
    for warning in warnings:
        click.echo(f"otel-blackbox: warning: {safe(warning)}", err=True)
    out, err = sys.stdout, sys.stderr
    sys.stdout = cast(TextIO, _Prefixed(out, UNVERIFIED_PREFIX))
    sys.stderr = cast(TextIO, _Prefixed(err, UNVERIFIED_PREFIX))
    _CARRIED.append(_Carried(warnings, out))
    try:
        yield
    finally:
        _CARRIED.pop()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        sys.stdout, sys.stderr = out, err


def checked_inputs(paths: Iterable[Path], allow_unverified: bool) -> list[Cassette]:
    """The user's cassettes, each checked before use (schema_version, hash_chain): a broken one is
    refused with one line naming the file, the check and the step (exit 2); with
    ``--allow-unverified`` the command goes on and, from here to its end, its answer carries the
    warning (:data:`ALLOW_UNVERIFIED`). Call it before the command prints anything."""
    from otel_blackbox._cassette.trusted import load_checked_cassette

    checked = [load_checked_cassette(path, allow_unverified=allow_unverified) for path in paths]
    warnings = [c.warning for c in checked if c.warning is not None]
    if warnings:
        click.get_current_context().with_resource(_carrying(warnings))
    return [c.cassette for c in checked]


@contextlib.contextmanager
def progress(length: int, label: str) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr when it is a terminal, advanced by the callable; silent otherwise."""
    if length <= 0 or not sys.stderr.isatty():
        yield lambda _done: None
        return
    with click.progressbar(length=length, label=label, file=sys.stderr) as bar:
        yield bar.update


def exactly_one(ctx: click.Context, given: dict[str, str | None]) -> None:
    """A usage error (exit 2) unless exactly one of these arguments / options was given."""
    named = [name for name, value in given.items() if value is not None]
    if len(named) != 1:
        choices = ", ".join(given)
        raise click.UsageError(
            f"give exactly one of {choices}" + (f" (got {' and '.join(named)})" if named else ""), ctx
        )


def group_spans(
    conn: sqlite3.Connection, run: str | None, session: str | None
) -> tuple[str, str, list[SpanRecord]]:
    """("run", full run id, its spans) for --run, or ("session", id, its traces' spans) for --session:
    all their traces, in time order. A run with no span left is not found (exit 1) as well."""
    from otel_blackbox._store import (
        runs,
    )  # for cassette and report only: not loaded by the commands of one trace

    if run is not None:
        run_id = runs.resolve_run_id(conn, run)
        spans = attached(conn, runs.run_spans(conn, run_id))
        if not spans:
            raise RunNotFound(f"run {run_id} has no spans (it recorded none, or its traces expired)")
        return "run", run_id, spans
    if session is None:
        raise ValueError("group_spans needs a run or a session")
    return "session", session, attached(conn, runs.session_spans(conn, session))


def _price_model(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """``--price-model NAME``: a model the price data knows, else one line and exit 2."""
    if value is None:
        return None
    from otel_blackbox._cost.prices import unknown_model

    refused = unknown_model(value)
    if refused is not None:
        raise click.BadParameter(refused)
    return value.strip()


PRICE_MODEL = click.option(
    "--price-model",
    metavar="NAME",
    callback=_price_model,
    help="Price the recorded tokens as if model NAME had answered (what would it cost on NAME).",
)


def trace_run_or_session(command: _F) -> _F:
    """``TRACE_ID``, ``--run RUN_ID`` or ``--session ID``: what a command reads (``exactly_one`` checks
    that one was given)."""
    command = click.option(
        "--session", "session_id", metavar="ID", callback=utf8_text,
        help="Every trace with a span of this session id, in time order.",
    )(command)  # fmt: skip
    command = click.option(
        "--run",
        "run_id",
        metavar="RUN_ID",
        help="Every trace of this run, in time order (a unique prefix is enough).",
    )(command)
    return click.argument("trace_id", required=False)(command)
