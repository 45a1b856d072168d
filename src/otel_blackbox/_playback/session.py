"""Making a session: ``session()``, the public context manager (record or replay), and
``open_session``, which the launcher and the pytest plugin call (a fork or a rerun has its own class).

The factory lives here, not in the base class (interceptor.py), so the base never imports its modes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from otel_blackbox._playback.interceptor import Match, Mode, Session, check_match
from otel_blackbox._playback.record import RecordSession
from otel_blackbox._playback.replay import ReplaySession
from otel_blackbox.errors import SessionError

__all__ = ["open_session", "session"]


def open_session(
    mode: str,
    cassette: str | Path,
    *,
    match: str = "exact",
    stub_tools: bool = False,
    allow_unverified: bool = False,
) -> Session:
    """A record or replay session over ``cassette`` (a fork or a rerun has its own class and plan).

    ``stub_tools`` answers the program's framework tools from the cassette in a replay; a recording
    runs them (it is what the replay answers from). A replay's cassette is checked first: one that
    fails verify's hash_chain is a CassetteError, unless ``allow_unverified``."""
    checked = check_match(match)
    if mode == "record":
        return RecordSession(cassette, match=checked)
    if mode == "replay":
        return ReplaySession(
            cassette, match=checked, stub_tools=stub_tools, allow_unverified=allow_unverified
        )
    raise SessionError(f"mode must be record or replay, not {mode!r} (a fork is a ForkSession)")


@contextlib.contextmanager
def session(
    mode: Mode,
    cassette: str | Path,
    *,
    match: Match = "exact",
    stub_tools: bool = False,
    allow_unverified: bool = False,
) -> Iterator[Session]:
    """Record or replay the HTTP traffic of the code inside the block::

    with otel_blackbox.session(mode="replay", cassette="tests/cassettes/run.json", stub_tools=True):
        run_agent()

    With ``stub_tools`` a replay answers the program's framework tools (and ``stubbable`` functions)
    from the cassette: their functions do not run. A replay's cassette that fails verify's
    hash_chain (edited by hand) is a CassetteError, unless ``allow_unverified``.
    """
    running = open_session(
        mode, cassette, match=match, stub_tools=stub_tools, allow_unverified=allow_unverified
    ).start()
    try:
        yield running
    except BaseException as exc:
        try:
            running.finish(exc)
        except SessionError as session_error:  # the typed cause beats the SDK's 400 it provoked
            raise session_error from exc
        raise
    running.finish()
