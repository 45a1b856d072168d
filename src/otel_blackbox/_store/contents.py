"""Large JSON texts stored once, by the hash of their content (schema version 6).

A span whose attributes (or events) come to ``APART_CHARS`` characters or more of JSON keeps them
in ``contents``: the text is cut at its JSON boundaries (``_store.content_split``), each piece is a
node stored once under the hash of its content, and a node of several pieces lists its children's
ids. The row points at its root (``span_rows.attributes_content``, ``events_content``). A
conversation's 60th model call then adds its new messages and a few nodes, not the 59 calls' worth
it repeats; the same system prompt or tool list is one node across the spans of every run.

A long list of children is itself cut into nodes where a child's hash ends in a given pattern
(content-defined, as in rsync or a Prolly tree): a list that grew at its end keeps every node but
the last few, whatever its length, so a call adds a number of nodes that does not grow with the
conversation.

A text node's bytes are zlib-compressed when that saves room. Nothing is ever changed in place; a
node no row reaches any more is deleted by ``sweep`` (retention, the size cap, ``cleanup``, an
import replacing a trace), which counts its passes in ``content_sweeps`` so a writer that keeps the
ids of nodes it has stored knows when to forget them.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import zlib
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import quote

from otel_blackbox._store.content_split import Piece, split_json

__all__ = ["APART_CHARS", "STORED_APART_MARK", "ContentReader", "ContentWriter", "has_contents", "sweep"]

# A JSON text of attributes or events this long or longer is stored apart; most spans are far
# shorter and keep their text in the row.
APART_CHARS = 2048
STORED_APART_MARK = "blackbox.stored_apart"  # in the row's own text of attributes stored apart
_FANOUT_BITS = 4  # a list of children is cut after a child whose hash ends in 4 zero bits: ~16 a node
_COMPRESS_BYTES = 128  # shorter text nodes are stored as they are
_TEXT, _ZLIB, _LIST = "t", "z", "l"
_MAX_KNOWN = 200_000  # hashes of stored nodes a writer remembers (16 bytes each, and an id)
_MAX_TEXT_CHARS = 32 * 1024 * 1024  # texts of nodes a writer remembers, in characters
_READ_CACHE_CHARS = 32 * 1024 * 1024  # texts a reader keeps, in characters
_READ_CACHE_MAX_NODE = 1024 * 1024  # a node's text longer than this is rebuilt, not kept
_PARSED_KEPT = 4  # parsed values a reader keeps: a long call's attributes parse to tens of MB


def has_contents(conn: sqlite3.Connection) -> bool:
    """Whether the file has the ``contents`` table (schema version 6 and later)."""
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'contents'").fetchone()
    return row is not None


def _digest(kind: bytes, data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16, person=kind).digest()


class ContentWriter:
    """Stores texts as nodes through one connection, inside the caller's write transaction.

    The ids of nodes stored are remembered by hash, so a conversation's repeated messages cost a
    dictionary lookup; they hold only once the transaction commits (``forget`` on a rollback) and
    while no ``sweep`` has run since (checked at each ``begin``).
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._known: dict[bytes, int] = {}
        self._texts: dict[str, tuple[bytes, int]] = {}  # a text seen: no encoding nor hashing again
        self._text_chars = 0
        self._sweeps: int | None = None

    def forget(self) -> None:
        self._known.clear()
        self._texts.clear()
        self._text_chars = 0
        self._sweeps = None

    def begin(self) -> None:
        """Call inside each write transaction before ``store``: a sweep since makes every id suspect."""
        (sweeps,) = self._conn.execute("SELECT coalesce(max(n), 0) FROM content_sweeps").fetchone()
        if sweeps != self._sweeps:
            self._known.clear()
            self._texts.clear()
            self._text_chars = 0
            self._sweeps = sweeps

    def store(self, text: str, summary: list[str] | None = None) -> int:
        """The id of the root node holding ``text`` (``summary``: see ``split_json``)."""
        return self._piece(split_json(text, summary))[1]

    def _piece(self, piece: Piece) -> tuple[bytes, int]:
        if isinstance(piece, str):
            return self._text(piece)
        return self._list([self._piece(p) for p in piece])

    def _text(self, text: str) -> tuple[bytes, int]:
        seen = self._texts.get(text)
        if seen is not None:
            return seen
        raw = text.encode("utf-8", "surrogatepass")
        digest = _digest(b"t", raw)
        known = self._known.get(digest)
        if known is not None:
            self._remember(text, (digest, known))
            return digest, known
        kind, data = _TEXT, raw
        if len(raw) >= _COMPRESS_BYTES:
            packed = zlib.compress(raw, 6)
            if len(packed) < len(raw) * 0.9:
                kind, data = _ZLIB, packed
        found = digest, self._insert(digest, kind, None, data)
        self._remember(text, found)
        return found

    def _remember(self, text: str, node: tuple[bytes, int]) -> None:
        self._text_chars += len(text)
        if self._text_chars > _MAX_TEXT_CHARS or len(self._texts) >= _MAX_KNOWN:
            self._texts.clear()
            self._text_chars = len(text)
        self._texts[text] = node

    def _list(self, children: list[tuple[bytes, int]]) -> tuple[bytes, int]:
        """One node for these children, through as many levels of ~16 as it takes."""
        if len(children) == 1:
            return children[0]
        level = children
        while len(level) > 1 << _FANOUT_BITS:
            level = [self._node(group) for group in _groups(level)]
        return self._node(level)

    def _node(self, children: Sequence[tuple[bytes, int]]) -> tuple[bytes, int]:
        if len(children) == 1:
            return children[0]
        digest = _digest(b"l", b"".join(d for d, _ in children))
        known = self._known.get(digest)
        if known is not None:
            return digest, known
        ids = ",".join(str(i) for _, i in children)
        return digest, self._insert(digest, _LIST, f"[{ids}]", None)

    def _insert(self, digest: bytes, kind: str, children: str | None, data: bytes | None) -> int:
        conn = self._conn
        conn.execute(
            "INSERT OR IGNORE INTO contents (hash, kind, children, data) VALUES (?, ?, ?, ?)",
            (digest, kind, children, data),
        )
        (found,) = conn.execute("SELECT id FROM contents WHERE hash = ?", (digest,)).fetchone()
        if len(self._known) >= _MAX_KNOWN:
            self._known.clear()
        self._known[digest] = int(found)
        return int(found)


def _groups(level: list[tuple[bytes, int]]) -> Iterable[list[tuple[bytes, int]]]:
    """Children cut after each one whose hash ends in _FANOUT_BITS zero bits (at least two a group,
    so every level is at most half the one below)."""
    mask = (1 << _FANOUT_BITS) - 1
    group: list[tuple[bytes, int]] = []
    for child in level:
        group.append(child)
        if len(group) > 1 and not child[0][-1] & mask:
            yield group
            group = []
    if group:
        yield group


class ContentReader:
    """Gives back the texts stored by ContentWriter, exactly; keeps recent ones (bounded), and the
    last few parsed (a reader asks for the same span's attributes many times in a row)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        # Records read through it may be read after their connection closed: reopen the file then.
        self._path = str(conn.execute("PRAGMA database_list").fetchone()[2] or "")
        self._cache: OrderedDict[int, str] = OrderedDict()
        self._cached_chars = 0
        self._parsed: OrderedDict[int, Any] = OrderedDict()

    def parsed(self, node_id: int) -> Any:
        """The JSON value of the text under ``node_id`` (the same object while it is kept: do not
        change it)."""
        value = self._parsed.get(node_id)
        if value is None:
            value = json.loads(self.text(node_id))
            self._parsed[node_id] = value
            if len(self._parsed) > _PARSED_KEPT:
                self._parsed.popitem(last=False)
        else:
            self._parsed.move_to_end(node_id)
        return value

    def text(self, node_id: int) -> str:
        cached = self._cache.get(node_id)
        if cached is not None:
            self._cache.move_to_end(node_id)
            return cached
        row = self._row(node_id)
        if row is None:
            raise LookupError(f"content node {node_id} is missing")
        kind, children, data = row[0], row[1], row[2]
        if kind == _LIST:
            text = "".join(self.text(int(c)) for c in json.loads(children))
        elif kind == _ZLIB:
            text = zlib.decompress(data).decode("utf-8", "surrogatepass")
        else:
            text = bytes(data).decode("utf-8", "surrogatepass")
        self._keep(node_id, text)
        return text

    def _row(self, node_id: int) -> Any:
        query = "SELECT kind, children, data FROM contents WHERE id = ?"
        try:
            return self._conn.execute(query, (node_id,)).fetchone()
        except sqlite3.ProgrammingError:  # closed: a read-only connection of our own, kept
            if not self._path:
                raise
            uri = f"file:{quote(os.fsencode(self._path))}?mode=ro"
            self._conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
            return self._conn.execute(query, (node_id,)).fetchone()

    def _keep(self, node_id: int, text: str) -> None:
        if len(text) > _READ_CACHE_MAX_NODE:
            return
        self._cache[node_id] = text
        self._cached_chars += len(text)
        while self._cached_chars > _READ_CACHE_CHARS:
            _, dropped = self._cache.popitem(last=False)
            self._cached_chars -= len(dropped)


# The nodes some row reaches, from the rows' roots down through the lists' children.
_LIVE = """
WITH RECURSIVE live(id) AS (
    SELECT attributes_content FROM span_rows WHERE attributes_content IS NOT NULL
    UNION SELECT events_content FROM span_rows WHERE events_content IS NOT NULL
    UNION SELECT child.value FROM live JOIN contents AS node ON node.id = live.id
        JOIN json_each(node.children) AS child WHERE node.kind = 'l'
)
INSERT OR IGNORE INTO temp.blackbox_live (id) SELECT id FROM live
"""


def sweep(conn: sqlite3.Connection) -> int:
    """Delete the nodes no row reaches (in the caller's write transaction); their count."""
    if not has_contents(conn) or conn.execute("SELECT 1 FROM contents LIMIT 1").fetchone() is None:
        return 0
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS blackbox_live (id INTEGER PRIMARY KEY)")
    try:
        conn.execute(_LIVE)
        unreached = "DELETE FROM contents WHERE id NOT IN (SELECT id FROM temp.blackbox_live)"
        deleted = conn.execute(unreached).rowcount
    finally:
        conn.execute("DELETE FROM temp.blackbox_live")
    if deleted:
        conn.execute("UPDATE content_sweeps SET n = n + 1")
    return int(deleted)
