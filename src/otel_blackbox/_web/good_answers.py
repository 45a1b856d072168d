"""What a good answer of a tool looks like, when the database knows one: what the rerun form prefills
a stub with, instead of the failing call's arguments (an answer the tool never gave).

First a successful result of the same tool in the incident itself, else the latest successful call
of it in another recorded trace (read as a rerun reads it: the trace made a cassette, its tool
results taken). None known: the form leaves the field empty, to be written.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from otel_blackbox._cassette.from_spans.cassette import cassette_from_spans
from otel_blackbox._playback.agent.incident import Incident, RecordedResult, read_incident
from otel_blackbox._store.trace_logs import load_trace
from otel_blackbox._web.masking import mask_spans
from otel_blackbox.errors import BlackboxError

__all__ = ["KnownAnswer", "known_answers"]

MAX_TRACES = 3  # the other traces read for one tool, newest first
MAX_SPANS = 50  # the successful calls of it looked at to find them


@dataclass(frozen=True)
class KnownAnswer:
    """A tool's successful result, and where it was recorded (for the form's hint)."""

    value: Any
    source: str  # "this incident, step 7" / "trace 0af7651916cd43dd"


def _success(results: Iterable[RecordedResult], tool: str) -> RecordedResult | None:
    return next((r for r in results if r.tool_name == tool and "error" not in r.outcome), None)


def known_answers(
    conn: sqlite3.Connection, incident: Incident, tools: Iterable[str], *, exclude: Iterable[str] = ()
) -> dict[str, KnownAnswer]:
    """For each of ``tools``, a successful result recorded for it, when there is one; ``exclude``: the
    incident's own trace ids (its failing calls are no example of a good answer)."""
    own = set(exclude)
    found: dict[str, KnownAnswer] = {}
    for tool in tools:
        mine = _success(incident.results, tool)
        if mine is not None:
            found[tool] = KnownAnswer(mine.outcome.get("result"), f"this incident, step {mine.step}")
            continue
        answer = _from_other_traces(conn, tool, own)
        if answer is not None:
            found[tool] = answer
    return found


def _from_other_traces(conn: sqlite3.Connection, tool: str, own: set[str]) -> KnownAnswer | None:
    rows = conn.execute(
        "SELECT trace_id FROM spans WHERE tool_name = ? AND status IN ('ok', 'unset') "
        "ORDER BY start_ns DESC LIMIT ?",
        (tool, MAX_SPANS),
    ).fetchall()
    traces = list(dict.fromkeys(row[0] for row in rows if row[0] not in own))[:MAX_TRACES]
    for trace_id in traces:
        try:
            spans = mask_spans(load_trace(conn, trace_id))
            other = read_incident(cassette_from_spans(spans, cassette_id=f"trace-{trace_id}"), trace_id)
        except (BlackboxError, ValueError, KeyError, TypeError):
            continue  # a trace no rerun could read: no example from it
        result = _success(other.results, tool)
        if result is not None:
            return KnownAnswer(result.outcome.get("result"), f"trace {trace_id[:16]}")
    return None
