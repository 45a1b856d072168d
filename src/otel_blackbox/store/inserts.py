"""Writing span rows with multi-row INSERT statements.

``executemany`` steps SQLite once per row and releases the GIL around every step; getting it
back from a busy agent thread can take a whole switch interval (5 ms), so under a CPU-bound agent
a 2,000-row batch could take seconds. One statement carrying hundreds of rows needs one step:
the GIL is handed back once per chunk, and SQLite does the B-tree work in parallel with the agent.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from functools import lru_cache
from itertools import chain
from typing import Any

from .schema import SPAN_COLUMNS

__all__ = ["insert_spans"]

# 256 rows x 25 columns = 6,400 parameters, well under SQLite's default limit of 32,766.
_CHUNK = 256
_COLUMNS = ", ".join(SPAN_COLUMNS)
_ONE_ROW = "(" + ", ".join("?" * len(SPAN_COLUMNS)) + ")"
_ON_FINAL = "ON CONFLICT (trace_id, span_id) DO UPDATE SET " + ", ".join(
    f"{c} = excluded.{c}" for c in SPAN_COLUMNS[2:]
)
# An open row never replaces anything: the final row may already be there.
_ON_OPEN = "ON CONFLICT (trace_id, span_id) DO NOTHING"


@lru_cache(maxsize=32)
def _statement(rows: int, final: bool) -> str:
    values = ", ".join([_ONE_ROW] * rows)
    return f"INSERT INTO spans ({_COLUMNS}) VALUES {values} {_ON_FINAL if final else _ON_OPEN}"


def _chunk_sizes(total: int) -> list[int]:
    """Full chunks, then the rest in powers of two: few distinct statements, all of them cached."""
    sizes = [_CHUNK] * (total // _CHUNK)
    rest = total % _CHUNK
    size = _CHUNK // 2
    while rest:
        if rest >= size:
            sizes.append(size)
            rest -= size
        size //= 2
    return sizes


def insert_spans(conn: sqlite3.Connection, rows: Sequence[tuple[Any, ...]], *, final: bool) -> None:
    """Final rows replace whatever is stored for their span; open rows are written only where none is."""
    start = 0
    for size in _chunk_sizes(len(rows)):
        chunk = rows[start : start + size]
        conn.execute(_statement(size, final), list(chain.from_iterable(chunk)))
        start += size
