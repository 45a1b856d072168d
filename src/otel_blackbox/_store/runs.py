"""Runs and sessions: the spans of one recorder's lifetime, or of one session id, across traces.

A run is one row of ``recorders``: one ``BlackboxSpanProcessor`` in one process, from its start
to the last moment it wrote. Frameworks with no root span (LangChain, the official
opentelemetry-instrumentation-openai-v2) make every model call a trace of its own; the run joins
them. A span belongs to the run of its pid that started last at or before its row was written
(``queries.recorder_of_span``, the rule LAST_SEEN_SQL uses too).

The spans of a run are found through the start-time index first, between the run's start less
``START_SLACK_NS`` and its last sighting, and only then checked for pid and run: what is read is
the spans (of any process) that started while the run was alive, never the whole file. A span that
started more than ``START_SLACK_NS`` before its recorder did (an explicit start time, a processor
added long after the span began) is not counted.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

from otel_blackbox._store.queries import (
    INCOMPLETE_SQL,
    SpanRecord,
    last_seen_by_trace,
    recorder_of_span,
    span_records,
)
from otel_blackbox.errors import AmbiguousRunId, MalformedRunId, RunNotFound, SessionIdNotFound, StoreError

__all__ = [
    "ROOT_NAMES_SHOWN",
    "START_SLACK_NS",
    "RunSummary",
    "last_seen_by_traces",
    "next_source_pid",
    "recent_runs",
    "resolve_run_id",
    "run_spans",
    "run_summary",
    "session_spans",
]

START_SLACK_NS = 600 * 10**9  # 10 minutes
ROOT_NAMES_SHOWN = 5
_HEX = re.compile(r"^[0-9a-f]{1,16}$")
_RUN_COLUMNS = "id, run_id, pid, started_ns, last_seen_ns"


class _Run(NamedTuple):
    id: int
    run_id: str
    pid: int
    started_ns: int
    last_seen_ns: int
    source: str | None


@dataclass
class RunSummary:
    run_id: str
    pid: int
    started_ns: int
    last_seen_ns: int  # the recorder's last write or heartbeat: its end, for a run that is over
    source: str | None = None  # an `import` or `serve` run: what it read; None for a recording
    traces: int = 0
    spans: int = 0
    open_count: int = 0
    error_count: int = 0
    incomplete_count: int = 0  # traces whose root (an imported conversation) stopped before the end
    root_names: list[str] = field(default_factory=list)  # distinct, in time order, ROOT_NAMES_SHOWN at most
    more_root_names: int = 0  # distinct root names past those

    @property
    def status(self) -> str:
        """As for a trace: open if a span is still open, else error if one failed, else incomplete
        if a trace's root says it stopped before the model's last word, else ok."""
        if self.open_count:
            return "open"
        if self.error_count:
            return "error"
        return "incomplete" if self.incomplete_count else "ok"

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "status": self.status}


def _require_run_ids(conn: sqlite3.Connection) -> None:
    """A file of schema version 1 that could not be upgraded (read-only, or locked) has no run ids."""
    (found,) = conn.execute(
        "SELECT count(*) FROM pragma_table_info('recorders') WHERE name = 'run_id'"
    ).fetchone()
    if not found:
        raise StoreError(
            "this database predates runs (schema version 1) and could not be upgraded here: "
            "open it once with write access (any otel-blackbox command does it)"
        )


def _summarize(conn: sqlite3.Connection, runs: list[_Run]) -> list[RunSummary]:
    """One pass over the start-time index window that covers all of ``runs``, grouped by run.

    The window's rows are attributed once (materialized), then counted and their root names taken:
    the rows are the cost (about a third of a second a million spans, warm), so they are read once.
    Rows of other runs of the same pids (an older process with a reused pid) are counted and dropped.
    """
    summaries = {
        run.id: RunSummary(run.run_id, run.pid, run.started_ns, run.last_seen_ns, run.source) for run in runs
    }
    if not runs:
        return []
    pids = sorted({run.pid for run in runs})
    low, high = min(r.started_ns for r in runs) - START_SLACK_NS, max(r.last_seen_ns for r in runs)
    rows = conn.execute(
        f"""WITH w AS MATERIALIZED (
              SELECT {recorder_of_span("id")} AS run, trace_id, status, start_ns,
                     CASE WHEN parent_span_id IS NULL THEN name END AS root,
                     CASE WHEN ({INCOMPLETE_SQL}) IS NOT NULL THEN trace_id END AS incomplete
              FROM spans WHERE start_ns BETWEEN ? AND ? AND pid IN ({",".join("?" * len(pids))}))
            SELECT run, NULL, count(*), count(DISTINCT trace_id), sum(status = 'open'), sum(status = 'error'),
                   count(DISTINCT incomplete)
            FROM w GROUP BY run
            UNION ALL
            SELECT run, root, min(start_ns), NULL, NULL, NULL, NULL
            FROM w WHERE root IS NOT NULL GROUP BY run, root""",
        (low, high, *pids),
    ).fetchall()
    roots: dict[int, list[tuple[int, str]]] = {}
    for run_row, root, count_or_start, traces, open_count, error_count, incomplete in rows:
        summary = summaries.get(run_row)
        if summary is None:
            continue
        if root is None:
            summary.spans, summary.traces = count_or_start, traces
            summary.open_count, summary.error_count = open_count, error_count
            summary.incomplete_count = incomplete
        else:
            roots.setdefault(run_row, []).append((count_or_start, root))
    for run_row, named in roots.items():
        names = [name for _, name in sorted(named)]
        summaries[run_row].root_names = names[:ROOT_NAMES_SHOWN]
        summaries[run_row].more_root_names = max(0, len(names) - ROOT_NAMES_SHOWN)
    return [summaries[run.id] for run in runs]


def _run_columns(conn: sqlite3.Connection) -> str:
    """The columns of a run; a file of schema version 3 opened read-only has no source (NULL)."""
    (found,) = conn.execute(
        "SELECT count(*) FROM pragma_table_info('recorders') WHERE name = 'source'"
    ).fetchone()
    return f"{_RUN_COLUMNS}, {'source' if found else 'NULL'}"


def next_source_pid(conn: sqlite3.Connection) -> int:
    """The pid for the spans of a new run no process recorded (an import, a `serve`): negative, and
    below every pid in the file, so no process's spans are ever attributed to it. Call it in the
    write transaction that inserts the run's row."""
    (lowest,) = conn.execute("SELECT min(pid) FROM recorders").fetchone()
    return min(lowest or 0, 0) - 1


def recent_runs(conn: sqlite3.Connection, limit: int = 20) -> list[RunSummary]:
    """The ``limit`` runs that started last, newest first (runs that recorded nothing included)."""
    _require_run_ids(conn)
    rows = conn.execute(
        f"SELECT {_run_columns(conn)} FROM recorders ORDER BY started_ns DESC, id DESC LIMIT ?", (limit,)
    )
    return _summarize(conn, [_Run(*r) for r in rows])


def resolve_run_id(conn: sqlite3.Connection, prefix: str) -> str:
    """A full run id from a unique prefix; RunNotFound / AmbiguousRunId otherwise."""
    _require_run_ids(conn)
    wanted = prefix.strip().lower()
    if not _HEX.match(wanted):
        raise MalformedRunId(f"not a run id (expected 1 to 16 hex digits): {prefix!r}")
    found = [
        str(r[0])
        for r in conn.execute(
            "SELECT run_id FROM recorders WHERE run_id >= ? AND run_id < ? ORDER BY run_id LIMIT 6",
            (wanted, wanted + "g"),  # every id with the prefix sorts between prefix and prefix + 'g'
        )
    ]
    if not found:
        raise RunNotFound(f"no run with id {prefix!r} (otel-blackbox runs lists them)")
    if len(found) > 1:
        shown = ", ".join(found[:5])
        raise AmbiguousRunId(
            f"run id {prefix!r} is ambiguous: it matches {shown}{' ...' if len(found) > 5 else ''}"
        )
    return found[0]


def _run(conn: sqlite3.Connection, run_id: str) -> _Run:
    _require_run_ids(conn)
    row = conn.execute(f"SELECT {_run_columns(conn)} FROM recorders WHERE run_id = ?", (run_id,)).fetchone()
    if row is None:
        raise RunNotFound(f"no run with id {run_id!r} (otel-blackbox runs lists them)")
    return _Run(*row)


def run_summary(conn: sqlite3.Connection, run_id: str) -> RunSummary:
    (summary,) = _summarize(conn, [_run(conn, run_id)])
    return summary


def run_spans(conn: sqlite3.Connection, run_id: str) -> list[SpanRecord]:
    """Every span the run recorded, of all its traces, in time order."""
    run = _run(conn, run_id)
    rows = conn.execute(
        f"""SELECT * FROM spans WHERE start_ns BETWEEN ? AND ? AND pid = ? AND {recorder_of_span("id")} = ?
            ORDER BY start_ns, id""",
        (run.started_ns - START_SLACK_NS, run.last_seen_ns, run.pid, run.id),
    )
    return span_records(conn, rows)


def session_spans(conn: sqlite3.Connection, session_id: str) -> list[SpanRecord]:
    """Every span of every trace that has a span with this session id, in time order."""
    # The traces come from the session index, their spans from the (trace_id, span_id) index; the
    # unary + keeps SQLite from walking the whole start-time index to avoid sorting.
    rows = conn.execute(
        """SELECT * FROM spans WHERE trace_id IN (SELECT trace_id FROM spans WHERE session_id = ?)
           ORDER BY +start_ns, id""",
        (session_id,),
    ).fetchall()
    if not rows:
        raise SessionIdNotFound(f"no span with session id {session_id!r}")
    return span_records(conn, rows)


def last_seen_by_traces(conn: sqlite3.Connection, spans: list[SpanRecord]) -> dict[str, int]:
    """For each trace of ``spans`` with an open span: when it was last seen alive (as for one trace)."""
    found: dict[str, int] = {}
    for trace_id in dict.fromkeys(s.trace_id for s in spans if s.status == "open"):
        found.update(last_seen_by_trace(conn, trace_id))
    return found
