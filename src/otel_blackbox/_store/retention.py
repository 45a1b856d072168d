"""Retention by age and the size cap: deleting whole traces and giving the space back to the disk."""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass

from otel_blackbox._store.contents import has_contents, sweep

__all__ = [
    "CLEANUP_STEPS",
    "CleanupResult",
    "apply_retention",
    "cleanup",
    "database_bytes",
    "delete_traces",
    "enforce_size_cap",
    "evict_oldest",
    "give_space_back",
    "oldest_complete_traces",
    "size_cap_target",
]

# Evict down to this share of the cap, so a database at the cap is not trimmed on every batch.
_LOW_WATER = 0.9
_EVICTION_CHUNK = 200  # traces deleted in one transaction: short, so writers never wait long
_OPEN = "status IN ('error', 'open') AND status = 'open'"  # as written, it reads the partial index


@dataclass
class CleanupResult:
    traces_expired: int = 0
    traces_evicted: int = 0
    bytes_before: int = 0
    bytes_after: int = 0


def database_bytes(conn: sqlite3.Connection) -> int:
    """Bytes in use by the main database file (pages not on the freelist)."""
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    return int((pages - free) * page_size)


def delete_traces(conn: sqlite3.Connection, trace_ids: list[str]) -> None:
    """Delete every span of these traces, their log records, and the content only they reached
    (in the caller's transaction)."""
    apart = False
    for i in range(0, len(trace_ids), 500):
        chunk = trace_ids[i : i + 500]
        marks = ",".join("?" * len(chunk))
        if not apart and has_contents(conn):
            apart = _holds_content(conn, marks, chunk)
        conn.execute(f"DELETE FROM span_rows WHERE trace_id IN ({marks})", chunk)
        conn.execute(f"DELETE FROM logs WHERE trace_id IN ({marks})", chunk)
    if apart:
        sweep(conn)


def _holds_content(conn: sqlite3.Connection, marks: str, trace_ids: list[str]) -> bool:
    row = conn.execute(
        f"""SELECT 1 FROM span_rows WHERE trace_id IN ({marks})
        AND (attributes_content IS NOT NULL OR events_content IS NOT NULL) LIMIT 1""",
        trace_ids,
    ).fetchone()
    return row is not None


def apply_retention(conn: sqlite3.Connection, max_age_s: float, now_ns: int | None = None) -> int:
    """Delete every trace whose spans all started and ended before now - max_age_s. Returns the count."""
    now_ns = time.time_ns() if now_ns is None else now_ns
    cutoff = now_ns - int(max_age_s * 1e9)
    # Candidates come from the start index; a trace goes only if none of its spans is newer.
    rows = conn.execute(
        """
        SELECT trace_id FROM spans
        WHERE trace_id IN (SELECT DISTINCT trace_id FROM spans WHERE start_ns < ?)
        GROUP BY trace_id
        HAVING max(coalesce(end_ns, written_ns)) < ?
        """,
        (cutoff, cutoff),
    ).fetchall()
    expired = [r[0] for r in rows]
    if expired:
        conn.execute("BEGIN IMMEDIATE")
        try:
            delete_traces(conn, expired)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return len(expired)


def oldest_complete_traces(conn: sqlite3.Connection, limit: int) -> list[str]:
    """Up to ``limit`` traces with no open span, oldest first by their first span's start.

    Walks the start index from its oldest end and stops early, so the cost follows ``limit``, not
    the size of the table. A trace with an open span may still be running: it is never chosen.
    """
    running = {r[0] for r in conn.execute(f"SELECT trace_id FROM spans WHERE {_OPEN}")}
    victims: list[str] = []
    seen: set[str] = set()
    with contextlib.closing(conn.execute("SELECT trace_id FROM spans ORDER BY start_ns")) as rows:
        for (trace_id,) in rows:
            if trace_id in seen:
                continue
            seen.add(trace_id)
            if trace_id not in running:
                victims.append(trace_id)
                if len(victims) >= limit:
                    break
    return victims


def evict_oldest(
    conn: sqlite3.Connection,
    down_to_bytes: int,
    *,
    budget_s: float | None = None,
    between: Callable[[], None] | None = None,
) -> tuple[int, bool]:
    """Evict the oldest complete traces, a short transaction at a time, until the data fits.

    With ``budget_s`` it stops after about that long (the writer's share of a tick). ``between``
    is called after each transaction (the writer commits open rows that arrived meanwhile).
    Returns the count and whether it is done: the data fits, or only running traces are left.
    """
    deadline = None if budget_s is None else time.monotonic() + budget_s
    evicted = 0
    while database_bytes(conn) > down_to_bytes:
        if evicted and between is not None:
            between()
        if deadline is not None and time.monotonic() >= deadline:
            return evicted, False
        victims = oldest_complete_traces(conn, _EVICTION_CHUNK)
        if not victims:
            break
        conn.execute("BEGIN IMMEDIATE")
        try:
            delete_traces(conn, victims)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        evicted += len(victims)
    return evicted, True


def _sweep_now(conn: sqlite3.Connection) -> int:
    conn.execute("BEGIN IMMEDIATE")
    try:
        swept = sweep(conn)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return swept


def size_cap_target(max_bytes: int) -> int:
    return int(max_bytes * _LOW_WATER)


def enforce_size_cap(conn: sqlite3.Connection, max_bytes: int) -> int:
    """Over the cap, evict the oldest complete traces down to 90 % of it. Returns the count."""
    if database_bytes(conn) <= max_bytes:
        return 0
    return evict_oldest(conn, size_cap_target(max_bytes))[0]


def give_space_back(conn: sqlite3.Connection, *, max_pages: int | None = None) -> bool:
    """Return free pages to the filesystem (at most ``max_pages`` at a time); True when none are left."""
    # Through execute() each step frees one page only; executescript steps the pragma to completion.
    conn.executescript(f"PRAGMA incremental_vacuum({max_pages or 0});")
    if conn.execute("PRAGMA freelist_count").fetchone()[0]:
        return False
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return True


CLEANUP_STEPS = 3


def cleanup(
    conn: sqlite3.Connection,
    *,
    max_age_s: float | None,
    max_bytes: int | None,
    step_done: Callable[[int], None] = lambda _n: None,
) -> CleanupResult:
    """Retention, then the size cap, then return freed pages to the filesystem.

    ``step_done(1)`` is called after each of the CLEANUP_STEPS phases (for a progress bar).
    """
    result = CleanupResult(bytes_before=database_bytes(conn))
    if max_age_s:
        result.traces_expired = apply_retention(conn, max_age_s)
    step_done(1)
    if max_bytes:
        result.traces_evicted = enforce_size_cap(conn, max_bytes)
    step_done(1)
    swept = _sweep_now(conn)  # what replaced open rows left behind, when nothing was deleted
    if result.traces_expired or result.traces_evicted or swept:
        give_space_back(conn)
    step_done(1)
    result.bytes_after = database_bytes(conn)
    return result
