"""Writing span rows with multi-row INSERT statements.

``executemany`` steps SQLite once per row and releases the GIL around every step; getting it
back from a busy agent thread can take a whole switch interval (5 ms), so under a CPU-bound agent
a 2,000-row batch could take seconds. One statement carrying hundreds of rows needs one step:
the GIL is handed back once per chunk, and SQLite does the B-tree work in parallel with the agent.

A row arrives with its resource and scope as JSON text (the last two items, in SPAN_COLUMNS order)
and is stored with their ids in ``resources`` and ``scopes`` (schema version 3). The ids a
connection has looked up are kept in memory: a process has a handful of resources and scopes, so
after the first rows no statement is spent on them. Attributes or events of ``APART_CHARS`` or more
go to ``contents`` (schema version 6, ``_store.contents``), the row keeping the root's id.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from otel_blackbox._store.contents import APART_CHARS, STORED_APART_MARK, ContentWriter
from otel_blackbox._store.schema import SPAN_COLUMNS

__all__ = ["ROWS_PER_STATEMENT", "SpanInserter"]

# The columns of span_rows written for each span: the row tuple's, with the ids of its resource
# and scope in place of their JSON, and the roots of its attributes and events when stored apart.
_TEXTS = len(SPAN_COLUMNS) - 2  # the row items written as they are
_STORED = (*SPAN_COLUMNS[:_TEXTS], "resource_id", "scope_id", "attributes_content", "events_content")
assert SPAN_COLUMNS[_TEXTS:] == ("resource", "scope")
_ATTRIBUTES, _EVENTS = SPAN_COLUMNS.index("attributes"), SPAN_COLUMNS.index("events")
# What the row's own column holds when the text is stored apart: readers take the root instead.
_EVENTS_APART = "[]"

# What the row's own text keeps of attributes stored apart: this mark, and their short members whose
# key holds no index (the model, the token counts, the SDK's dropped counts: what `stats`, cost and
# users' SQL read with json_extract), not the flattened messages.
_MARK = f'"{STORED_APART_MARK}":true'

# 256 rows x 27 columns = 6,912 parameters, well under SQLite's default limit of 32,766.
ROWS_PER_STATEMENT = _CHUNK = 256
_COLUMNS = ", ".join(_STORED)
_ONE_ROW = "(" + ", ".join("?" * len(_STORED)) + ")"
_ON_FINAL = "ON CONFLICT (trace_id, span_id) DO UPDATE SET " + ", ".join(
    f"{c} = excluded.{c}" for c in _STORED[2:]
)
# An open row never replaces anything: the final row may already be there.
_ON_OPEN = "ON CONFLICT (trace_id, span_id) DO NOTHING"
# Past this many distinct texts (a program making tracers by the thousand), start over.
_MAX_CACHED = 4096


@lru_cache(maxsize=32)
def _statement(rows: int, final: bool) -> str:
    values = ", ".join([_ONE_ROW] * rows)
    return f"INSERT INTO span_rows ({_COLUMNS}) VALUES {values} {_ON_FINAL if final else _ON_OPEN}"


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


class SpanInserter:
    """Writes span rows through one connection, inside the caller's write transaction.

    The id of a resource or scope inserted here is only real once the transaction commits, so an
    inserter lives exactly as long as its connection: a writer whose transaction fails closes the
    connection and makes a new inserter with the next one. A failure inside ``insert`` also
    forgets every id, in case the caller rolls back and carries on with this connection.
    Rows of ``resources`` and ``scopes`` are never deleted, so an id committed once stays valid.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._resource_ids: dict[str, int] = {}
        self._scope_ids: dict[str, int] = {}
        self._contents = ContentWriter(conn)

    def insert(self, rows: Sequence[tuple[Any, ...]], *, final: bool) -> None:
        """Final rows replace whatever is stored for their span; open rows are written only where none is."""
        try:
            self._insert(rows, final)
        except BaseException:
            self._resource_ids.clear()
            self._scope_ids.clear()
            self._contents.forget()
            raise

    def _insert(self, rows: Sequence[tuple[Any, ...]], final: bool) -> None:
        resource_ids, scope_ids = self._resource_ids, self._scope_ids
        began = False
        start = 0
        for size in _chunk_sizes(len(rows)):
            params: list[Any] = []
            for row in rows[start : start + size]:
                attributes, events = row[_ATTRIBUTES], row[_EVENTS]
                if len(attributes) < APART_CHARS and len(events) < APART_CHARS:
                    params += row[:_TEXTS]
                    attributes_root = events_root = None
                else:
                    if not began:
                        self._contents.begin()
                        began = True
                    summary: list[str] = []
                    attributes_root = self._apart(attributes, summary)
                    events_root = self._apart(events)
                    texts = list(row[:_TEXTS])
                    if attributes_root is not None:
                        texts[_ATTRIBUTES] = "{" + ",".join([_MARK, *summary]) + "}"
                    if events_root is not None:
                        texts[_EVENTS] = _EVENTS_APART
                    params += texts
                resource, scope = row[_TEXTS], row[_TEXTS + 1]
                resource_id = resource_ids.get(resource)
                if resource_id is None:
                    resource_id = self._id("resources", resource_ids, resource)
                scope_id = scope_ids.get(scope)
                if scope_id is None:
                    scope_id = self._id("scopes", scope_ids, scope)
                params.append(resource_id)
                params.append(scope_id)
                params.append(attributes_root)
                params.append(events_root)
            self._conn.execute(_statement(size, final), params)
            start += size

    def _apart(self, text: str, summary: list[str] | None = None) -> int | None:
        return self._contents.store(text, summary) if len(text) >= APART_CHARS else None

    def _id(self, table: str, cache: dict[str, int], text: str) -> int:
        """The id of this JSON text in ``resources`` or ``scopes``, the row added if it is new."""
        self._conn.execute(f"INSERT OR IGNORE INTO {table} (json) VALUES (?)", (text,))
        (found,) = self._conn.execute(f"SELECT id FROM {table} WHERE json = ?", (text,)).fetchone()
        if len(cache) >= _MAX_CACHED:
            cache.clear()
        cache[text] = int(found)
        return int(found)
