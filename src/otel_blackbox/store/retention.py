"""Retention by age and the size cap: deleting whole traces and giving the space back to the disk."""

from __future__ import annotations

import math
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "CLEANUP_STEPS",
    "CleanupResult",
    "apply_retention",
    "cleanup",
    "database_bytes",
    "enforce_size_cap",
]

# Evict down to this share of the cap, so a database at the cap is not trimmed on every batch.
_LOW_WATER = 0.9


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


def _delete_traces(conn: sqlite3.Connection, trace_ids: list[str]) -> None:
    for i in range(0, len(trace_ids), 500):
        chunk = trace_ids[i : i + 500]
        conn.execute(f"DELETE FROM spans WHERE trace_id IN ({','.join('?' * len(chunk))})", chunk)


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
            _delete_traces(conn, expired)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return len(expired)


def enforce_size_cap(conn: sqlite3.Connection, max_bytes: int) -> int:
    """Evict the oldest complete traces until the data fits under max_bytes. Returns the count."""
    evicted = 0
    target = int(max_bytes * _LOW_WATER)
    for _ in range(50):  # each round removes a proportional share; bounded so it always ends
        used = database_bytes(conn)
        if used <= max_bytes if evicted == 0 else used <= target:
            break
        traces = conn.execute("SELECT count(DISTINCT trace_id) FROM spans").fetchone()[0]
        if not traces:
            break
        share = max(1, math.ceil(traces * (used - target) / used))
        # Oldest first by trace start; a trace with open spans may still be running: keep it.
        victims = [
            r[0]
            for r in conn.execute(
                """
                SELECT trace_id FROM spans GROUP BY trace_id
                HAVING sum(status = 'open') = 0
                ORDER BY min(start_ns) LIMIT ?
                """,
                (share,),
            )
        ]
        if not victims:
            break
        conn.execute("BEGIN IMMEDIATE")
        try:
            _delete_traces(conn, victims)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        evicted += len(victims)
    return evicted


def _give_space_back(conn: sqlite3.Connection) -> None:
    # Through execute() each step frees one page only; executescript steps the pragma to completion.
    conn.executescript("PRAGMA incremental_vacuum;")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


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
    if result.traces_expired or result.traces_evicted:
        _give_space_back(conn)
    step_done(1)
    result.bytes_after = database_bytes(conn)
    return result
