"""Reading log records back: each span's, in time order, attached to its SpanRecord.

``load_trace`` is ``queries.trace_spans`` with every span's log records on ``SpanRecord.logs``:
the read side's one way to load a trace whose content may have come as log records (openai-v2
with EVENT_ONLY, Google ADK, Strands). A file of a schema before version 5 (read-only, so never
upgraded) has no ``logs`` table: its spans simply have none.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import Any

from otel_blackbox._store.queries import SpanRecord, trace_spans

__all__ = ["attach_logs", "attached", "load_trace", "logs_of_trace"]


def _has_logs(conn: sqlite3.Connection) -> bool:
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'logs'").fetchone()
    return found is not None


def _value(text: str | None, empty: Any) -> Any:
    """A stored JSON column: its value; text that is not JSON, as it is."""
    if text is None:
        return empty
    try:
        return json.loads(text)
    except ValueError:
        return text


def logs_of_trace(conn: sqlite3.Connection, trace_id: str) -> dict[str, list[dict[str, Any]]]:
    """The trace's log records by span id, each span's in time order (then in the order written)."""
    if not _has_logs(conn):
        return {}
    rows = conn.execute(
        "SELECT span_id, timestamp_ns, event_name, severity, body, attributes FROM logs "
        "WHERE trace_id = ? ORDER BY timestamp_ns, id",
        (trace_id,),
    )
    found: dict[str, list[dict[str, Any]]] = {}
    for span_id, timestamp_ns, event_name, severity, body, attributes in rows:
        parsed = _value(attributes, {})
        found.setdefault(str(span_id), []).append(
            {
                "timestamp_ns": int(timestamp_ns),
                "event_name": event_name,
                "severity": severity,
                "body": _value(body, None),
                "attributes": parsed if isinstance(parsed, dict) else {"blackbox.unreadable": parsed},
            }
        )
    return found


def attach_logs(conn: sqlite3.Connection, spans: Iterable[SpanRecord]) -> None:
    """Set ``logs`` on each span from the stored records of its trace (one query a trace)."""
    by_trace: dict[str, list[SpanRecord]] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    for trace_id, members in by_trace.items():
        logs = logs_of_trace(conn, trace_id)
        for span in members:
            span.logs = logs.get(span.span_id, [])


def attached(conn: sqlite3.Connection, spans: list[SpanRecord]) -> list[SpanRecord]:
    """``spans`` (a run's, a session's), each with its log records."""
    attach_logs(conn, spans)
    return spans


def load_trace(conn: sqlite3.Connection, trace_id: str) -> list[SpanRecord]:
    """The trace's spans (as ``trace_spans`` gives them), each with its log records."""
    spans = trace_spans(conn, trace_id)
    attach_logs(conn, spans)
    return spans
