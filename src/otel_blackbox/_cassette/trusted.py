"""Cassettes are checked before use: every reader of a user's cassette loads it here.

A cassette edited by hand (a step's text changed, a step cut) still parses; only its hashes tell.
Before a command acts on one (diff, rerun, blame, replay, fork, eval, inspect, report, assert, the
workbench, the MCP tools, the pytest plugin), the two cheap checks of ``verify`` run on it:
``schema_version`` and ``hash_chain`` (not provider_neutrality or replayability, which say whether
it can be replayed, not whether it is the file that was written). A cassette that fails one is
refused with one line naming the file, the check and the step (CassetteError: exit 2 in the CLI),
unless the caller allows it; then the same line comes back as a warning for the answer to carry.

Files a command wrote itself a moment ago (a rerun's child, a blame's branches) may be read with
the plain ``io.load_cassette``.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace
from pathlib import Path

from otel_blackbox._cassette.canonical import CanonicalError
from otel_blackbox._cassette.model import Cassette, Step
from otel_blackbox._cassette.verify import failure_line, read_verified
from otel_blackbox.errors import CassetteError

__all__ = ["ALLOW_OPTION", "Checked", "checked_cassette", "load_checked_cassette", "resealed"]

ALLOW_OPTION = "--allow-unverified"


@dataclass(frozen=True)
class Checked:
    """A cassette read and checked: ``warning`` is None when it passed, else the line that says it
    did not (the caller allowed it)."""

    cassette: Cassette
    warning: str | None = None


def load_checked_cassette(
    path: str | Path, *, allow_unverified: bool = False, option: str = ALLOW_OPTION
) -> Checked:
    """The cassette at ``path`` with its schema_version and hash_chain checked.

    A failure raises CassetteError (``x.json fails verify (hash_chain) at step 0: ...; --allow-unverified
    goes on anyway``); with ``allow_unverified`` the cassette comes back with that line as its
    warning. ``option`` is how the caller's user allows it (an MCP argument, a pytest option). A
    file that is not a cassette at all is a CassetteError either way."""
    cassette, report = read_verified(path, through="hash_chain")
    failure = report.first_failure
    if failure is None:
        return Checked(cassette)
    problem = f"{path} fails verify {failure_line(failure)}"
    if not allow_unverified:
        raise CassetteError(f"{problem}; {option} goes on anyway")
    return Checked(cassette, f"{problem}; going on anyway ({option})")


def checked_cassette(path: str | Path, *, allow_unverified: bool = False) -> Cassette:
    """:func:`load_checked_cassette` for a caller whose front end shows the warning itself."""
    return load_checked_cassette(path, allow_unverified=allow_unverified).cassette


def resealed(cassette: Cassette) -> Cassette:
    """The cassette as its content hashes: each step's prevHash and hash recomputed in order (an
    equal cassette for one that verifies). A hash-mode diff of an unverified cassette compares
    these, so a step edited by hand diverges where it was edited instead of hiding behind the hash
    it kept. A payload with no canonical form keeps its stored hash."""
    steps: list[Step] = []
    prev: str | None = None
    for step in cassette.steps:
        fresh = replace(step, prev_hash=prev)
        with contextlib.suppress(CanonicalError, RecursionError):
            fresh.hash = fresh.expected_hash()
        steps.append(fresh)
        prev = fresh.hash
    return replace(cassette, steps=steps)
