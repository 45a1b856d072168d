"""The traces the viewer lists: the newest matching every filter, newest first, found through the
indexes the filters allow rather than by grouping the whole table on every refresh."""

from __future__ import annotations

import sqlite3

from otel_blackbox._store import queries
from otel_blackbox._web.filters import TraceFilter

__all__ = ["find_traces"]


def _share_since(conn: sqlite3.Connection, since_ns: int) -> float:
    """About what share of the recorded time span falls after ``since_ns`` (two index lookups)."""
    first: int | None = conn.execute("SELECT min(start_ns) FROM spans").fetchone()[0]
    last: int | None = conn.execute("SELECT max(start_ns) FROM spans").fetchone()[0]
    if first is None or last is None or last <= first:
        return 1.0
    return max(0.0, min(1.0, (last - since_ns) / (last - first)))


def find_traces(conn: sqlite3.Connection, flt: TraceFilter) -> list[queries.TraceSummary]:
    """The newest traces matching every filter, newest first."""
    if not (flt.open or flt.q or flt.since_ns is not None):
        # The common case: walk the start-time index, as `otel-blackbox list` does.
        return queries.recent_traces(conn, limit=flt.limit, session=flt.session, errors_only=flt.errors)
    # Open and failed spans have a partial index, and a recent time window the start-time index:
    # those filters first name the traces that can match, so that only their spans are grouped
    # rather than the whole table on every refresh. A window holding most of the file, or the text
    # search (no index can serve it), is cheaper as one scan. The HAVING clauses decide exactly.
    candidates: list[str] = []
    candidate_params: list[str | int] = []
    having: list[str] = []
    having_params: list[str | int] = []
    for wanted, status in ((flt.errors, "error"), (flt.open, "open")):
        if wanted:
            candidates.append(f"SELECT trace_id FROM spans WHERE {queries.NOT_OK} AND status = '{status}'")
            having.append(f"sum(status = '{status}') > 0")
    if flt.since_ns is not None:
        if _share_since(conn, flt.since_ns) < 0.5:
            candidates.append("SELECT trace_id FROM spans WHERE start_ns >= ?")
            candidate_params.append(flt.since_ns)
        having.append("min(start_ns) >= ?")
        having_params.append(flt.since_ns)
    if flt.q:
        # Root name (a span without a parent) or trace id contains the text, case-insensitively.
        having.append(
            "(instr(trace_id, lower(?)) > 0 OR "
            "sum(parent_span_id IS NULL AND instr(lower(name), lower(?)) > 0) > 0)"
        )
        having_params += [flt.q, flt.q]
    where = [f"trace_id IN ({' INTERSECT '.join(candidates)})"] if candidates else []
    params: list[str | int] = list(candidate_params)
    if flt.session is not None:
        where.append("session_id = ?")
        params.append(flt.session)
    clause = f"WHERE {' AND '.join(where)}" if where else ""
    rows = conn.execute(
        f"SELECT trace_id FROM spans {clause} GROUP BY trace_id "
        f"HAVING {' AND '.join(having)} ORDER BY min(start_ns) DESC LIMIT ?",
        [*params, *having_params, flt.limit],
    ).fetchall()
    return queries.summarize(conn, [str(r[0]) for r in rows])
