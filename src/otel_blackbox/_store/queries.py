"""Read-side queries for the CLI: recent traces, one trace's spans, errors, stats.

Everything here reads through a connection from ``connect_reader``; nothing writes.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from otel_blackbox._spans.semconv import ATTR_RUN_INCOMPLETE
from otel_blackbox._store.contents import ContentReader
from otel_blackbox._store.schema import SCHEMA_VERSION
from otel_blackbox._store.span_record import SpanRecord
from otel_blackbox.errors import AmbiguousTraceId, MalformedTraceId, TraceNotFound

__all__ = [
    "CUT_BY_SDK",
    "INCOMPLETE_SQL",
    "NOT_OK",
    "SpanRecord",
    "TraceSummary",
    "count_spans",
    "error_spans",
    "iter_spans",
    "last_seen_by_trace",
    "recent_traces",
    "recorder_of_span",
    "resolve_trace_id",
    "select_traces",
    "span_records",
    "stats",
    "summarize",
    "trace_spans",
]


def recorder_of_span(column: str) -> str:
    """SQL for ``column`` of the recorder row (the run) that wrote the current ``spans`` row: the
    row of the same pid started last at or before the span's row was written. One rule for every
    query that joins a span to its run (a pid may be reused by a later process)."""
    return f"""(SELECT r.{column} FROM recorders AS r
    WHERE r.pid = spans.pid AND r.started_ns <= spans.written_ns
    ORDER BY r.started_ns DESC LIMIT 1)"""


# When a span was last known to be alive: its end, or for an open span the later of its row's
# write and its recording process's last heartbeat.
LAST_SEEN_SQL = f"coalesce(end_ns, max(written_ns, coalesce({recorder_of_span('last_seen_ns')}, 0)))"
# SQLite does not infer that status = 'error' satisfies the partial index spans_not_ok
# (WHERE status IN ('error', 'open')): spelling the index's condition out lets it use it.
NOT_OK = "status IN ('error', 'open')"
_ERRORS = f"{NOT_OK} AND status = 'error'"
# A model call's tokens, counted once: an LLM span (or one of no kind with token counts: OpenLLMetry's
# older spans) whose parent is not an LLM span with tokens of its own (an SDK's span under an
# instrumentor's is the same call: _spans/view/trace.py, which decides it from whole spans).
_COUNTED_CALL = """(oi_span_kind = 'LLM' OR oi_span_kind IS NULL) AND NOT EXISTS (
    SELECT 1 FROM spans AS parent_row WHERE parent_row.trace_id = spans.trace_id
    AND parent_row.span_id = spans.parent_span_id AND parent_row.oi_span_kind = 'LLM'
    AND parent_row.total_tokens IS NOT NULL)"""
_HEX = re.compile(r"^[0-9a-f]{1,32}$")
# Why a root span's run stopped before the model's last word, read from the row's own attributes
# (which keep this short member when the rest is stored apart). Only an import's (no process's:
# pid < 0) roots are looked into, the instr() first, so that no other row is parsed as JSON
# (json_valid: nor a row that is not JSON, which json_extract would fail the whole query on).
INCOMPLETE_SQL = (
    f"CASE WHEN parent_span_id IS NULL AND pid < 0 AND instr(attributes, '\"{ATTR_RUN_INCOMPLETE}\"') > 0 "
    f"AND json_valid(attributes) THEN json_extract(attributes, '$.\"{ATTR_RUN_INCOMPLETE}\"') END"
)


@dataclass
class TraceSummary:
    trace_id: str
    start_ns: int
    end_ns: int
    span_count: int
    open_count: int
    error_count: int
    root_name: str
    session_id: str | None
    total_tokens: int | None
    incomplete: str | None = None  # why its root (an imported conversation) stopped before the end

    @property
    def status(self) -> str:
        """open if a span is still open, else error if one failed, else incomplete if the root says
        the run stopped before the model's last word, else ok."""
        if self.open_count:
            return "open"
        if self.error_count:
            return "error"
        return "incomplete" if self.incomplete else "ok"

    @property
    def duration_ns(self) -> int:
        return max(0, self.end_ns - self.start_ns)


def _recent_trace_ids(
    conn: sqlite3.Connection, limit: int, session: str | None, errors_only: bool
) -> list[str]:
    where, params = [], []
    if session is not None:
        where.append("session_id = ?")
        params.append(session)
    if errors_only:
        where.append(_ERRORS)
    clause = f"WHERE {' AND '.join(where)}" if where else ""
    seen: dict[str, None] = {}
    # Walk the start-time index from the newest span down until `limit` distinct traces are found.
    for (trace_id,) in conn.execute(f"SELECT trace_id FROM spans {clause} ORDER BY start_ns DESC", params):
        seen.setdefault(trace_id, None)
        if len(seen) >= limit:
            break
    return list(seen)


def summarize(conn: sqlite3.Connection, trace_ids: list[str]) -> list[TraceSummary]:
    if not trace_ids:
        return []
    marks = ",".join("?" * len(trace_ids))
    # The root's name, and why it stopped short (only root rows are looked into: INCOMPLETE_SQL).
    roots = {
        r[0]: (r[1], r[2])
        for r in conn.execute(
            f"""
            SELECT trace_id, name, incomplete FROM (
                SELECT trace_id, name, {INCOMPLETE_SQL} AS incomplete, row_number() OVER (
                    PARTITION BY trace_id ORDER BY parent_span_id IS NOT NULL, start_ns) AS n
                FROM spans WHERE trace_id IN ({marks})
            ) WHERE n = 1
            """,
            trace_ids,
        )
    }
    rows = conn.execute(
        f"""
        SELECT trace_id, min(start_ns), max({LAST_SEEN_SQL}), count(*),
               sum(status = 'open'), sum(status = 'error'), max(session_id),
               sum(CASE WHEN {_COUNTED_CALL} THEN total_tokens END)
        FROM spans WHERE trace_id IN ({marks}) GROUP BY trace_id
        """,
        trace_ids,
    ).fetchall()
    summaries = []
    for r in rows:
        name, why = roots.get(r[0], ("?", None))
        summaries.append(
            TraceSummary(r[0], r[1], r[2], r[3], r[4], r[5], name, r[6], r[7], str(why) if why else None)
        )
    return sorted(summaries, key=lambda s: s.start_ns, reverse=True)


def recent_traces(
    conn: sqlite3.Connection, *, limit: int = 20, session: str | None = None, errors_only: bool = False
) -> list[TraceSummary]:
    return summarize(conn, _recent_trace_ids(conn, limit, session, errors_only))


def resolve_trace_id(conn: sqlite3.Connection, prefix: str) -> str:
    """A full trace id from a unique prefix; TraceNotFound / AmbiguousTraceId otherwise."""
    wanted = prefix.strip().lower()
    if not _HEX.match(wanted):
        raise MalformedTraceId(f"not a trace id (expected 1 to 32 hex digits): {prefix!r}")
    upper = wanted + "g"  # every id with the prefix sorts between prefix and prefix + 'g'
    found = [
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT trace_id FROM spans WHERE trace_id >= ? AND trace_id < ? LIMIT 6",
            (wanted, upper),
        )
    ]
    if not found:
        raise TraceNotFound(f"no trace with id {prefix!r}")
    if len(found) > 1:
        shown = ", ".join(f[:12] for f in found[:5])
        raise AmbiguousTraceId(
            f"trace id {prefix!r} is ambiguous: it matches {shown}{' ...' if len(found) > 5 else ''}"
        )
    return str(found[0])


def trace_spans(conn: sqlite3.Connection, trace_id: str) -> list[SpanRecord]:
    rows = conn.execute("SELECT * FROM spans WHERE trace_id = ? ORDER BY start_ns, id", (trace_id,))
    return span_records(conn, rows)


def span_records(conn: sqlite3.Connection, rows: Iterable[sqlite3.Row]) -> list[SpanRecord]:
    """The records of rows read through ``conn`` (which reads what they store apart)."""
    contents = ContentReader(conn)
    return [SpanRecord.from_row(r, contents) for r in rows]


def error_spans(conn: sqlite3.Connection, *, limit: int = 20) -> list[SpanRecord]:
    rows = conn.execute(f"SELECT * FROM spans WHERE {_ERRORS} ORDER BY start_ns DESC LIMIT ?", (limit,))
    return span_records(conn, rows)


def writable(path: Path) -> bool:
    """Whether a recorder run by this user can write here (the file, and its folder for the -wal)."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK)


def stats(conn: sqlite3.Connection, path: str | Path) -> dict[str, Any]:
    import shutil  # with its compression modules: only for the free space, not for every read command

    path = Path(path)
    files = [path, Path(f"{path}-wal"), Path(f"{path}-shm")]
    size = sum(p.stat().st_size for p in files if p.exists())
    # Each count from the smallest index that answers it: one statement for all of them scanned the
    # whole table (0.6 s at a million spans; these take ~45 ms together).
    (spans,) = conn.execute("SELECT count(*) FROM spans").fetchone()
    (traces,) = conn.execute("SELECT count(*) FROM (SELECT DISTINCT trace_id FROM spans)").fetchone()
    not_ok = dict(
        conn.execute(f"SELECT status, count(*) FROM spans WHERE {NOT_OK} GROUP BY status").fetchall()
    )
    open_spans, errors = not_ok.get("open", 0), not_ok.get("error", 0)
    dropped, write_errors, recorders = conn.execute(
        "SELECT coalesce(sum(spans_dropped), 0), coalesce(sum(write_errors), 0), count(*) FROM recorders"
    ).fetchone()
    # Apart, each is one seek of the start index; together they scan it.
    (oldest,) = conn.execute("SELECT min(start_ns) FROM spans").fetchone()
    (newest,) = conn.execute("SELECT max(start_ns) FROM spans").fetchone()
    (cut,) = conn.execute(_CUT_BY_SDK).fetchone()  # issue 49: spans the SDK's span limits cut
    return {
        "database": str(path),
        "size_bytes": size,
        "writable": writable(path),
        "disk_free_bytes": shutil.disk_usage(path.parent).free,
        "schema_version": SCHEMA_VERSION,
        "traces": traces,
        "spans": spans,
        "open_spans": open_spans,
        "error_spans": errors,
        "spans_dropped": dropped,
        "spans_cut_by_sdk_limits": cut,
        **_log_counts(conn),
        "write_errors": write_errors,
        "recording_processes": recorders,
        "oldest_span_ns": oldest,
        "newest_span_ns": newest,
    }


# Spans whose stored attributes carry the counts the SDK's span limits dropped (_spans/sdk_limits.py;
# set only when above 0, and kept in the row's own text when the rest is stored apart): the partial
# index spans_cut_by_sdk (schema version 6) holds exactly these rows, so the count reads only them.
CUT_BY_SDK = "instr(attributes, '\"blackbox.otlp.dropped_') > 0"
_CUT_BY_SDK = f"SELECT count(*) FROM spans WHERE {CUT_BY_SDK}"


def _log_counts(conn: sqlite3.Connection) -> dict[str, int]:
    """Log records stored and dropped (schema version 5; a file read as an older one has none)."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'logs'").fetchone() is None:
        return {"logs": 0, "logs_dropped": 0}
    (stored,) = conn.execute("SELECT count(*) FROM logs").fetchone()
    (dropped,) = conn.execute("SELECT coalesce(sum(logs_dropped), 0) FROM recorders").fetchone()
    return {"logs": int(stored), "logs_dropped": int(dropped)}


def iter_spans(conn: sqlite3.Connection, trace_id: str | None = None) -> Iterator[SpanRecord]:
    """Every span (or one trace's), oldest first, streamed from the cursor."""
    if trace_id is None:
        rows = conn.execute("SELECT * FROM spans ORDER BY start_ns, id")
    else:
        rows = conn.execute("SELECT * FROM spans WHERE trace_id = ? ORDER BY start_ns, id", (trace_id,))
    contents = ContentReader(conn)
    for row in rows:
        yield SpanRecord.from_row(row, contents)


def last_seen_by_trace(conn: sqlite3.Connection, trace_id: str | None = None) -> dict[str, int]:
    """For traces with open spans: the last moment anything in the trace was seen (ended or written)."""
    query = (
        f"SELECT trace_id, max({LAST_SEEN_SQL}) FROM spans WHERE trace_id IN "
        "(SELECT trace_id FROM spans WHERE status = 'open'{}) GROUP BY trace_id"
    )
    if trace_id is None:
        return dict(conn.execute(query.format("")).fetchall())
    return dict(conn.execute(query.format(" AND trace_id = ?"), (trace_id,)).fetchall())


def select_traces(
    conn: sqlite3.Connection, trace_id: str | None = None, since_ns: int | None = None
) -> list[tuple[str, int]]:
    """(trace id, span count) of the traces to send, oldest first: one trace, and/or those with a
    span started at or after ``since_ns``. Always whole traces, never part of one."""
    where: list[str] = []
    params: list[str | int] = []
    if trace_id is not None:
        where.append("trace_id = ?")
        params.append(trace_id)
    if since_ns is not None:
        where.append("trace_id IN (SELECT trace_id FROM spans WHERE start_ns >= ?)")
        params.append(since_ns)
    clause = f"WHERE {' AND '.join(where)}" if where else ""
    rows = conn.execute(
        f"SELECT trace_id, count(*) FROM spans {clause} GROUP BY trace_id ORDER BY min(start_ns), trace_id",
        params,
    )
    return [(str(r[0]), int(r[1])) for r in rows]


def count_spans(conn: sqlite3.Connection, trace_id: str | None = None) -> int:
    if trace_id is None:
        return int(conn.execute("SELECT count(*) FROM spans").fetchone()[0])
    return int(conn.execute("SELECT count(*) FROM spans WHERE trace_id = ?", (trace_id,)).fetchone()[0])
