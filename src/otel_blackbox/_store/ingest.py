"""Importing spans: OTLP documents (_spans/otlp_in/) stored as one run, each file in one transaction.

Rows are built by the recorder's own RowBuilder, so redaction, bounds and columns are those of
recorded spans, and written by its SpanInserter. An import is idempotent on (trace id, span id): a
span already stored with its end is a duplicate and is skipped, a span stored open is replaced by
its end. A span whose end is missing is stored open. A transcript imported again after it grew
names the spans its traces now hold (``replace``): a stored trace with any other span is deleted
first, in the same transaction, so the trace is stored anew rather than twice.

An import is one run (one ``recorders`` row, ``source`` naming what it read). Its spans carry a
pid of their own, negative so that no process's spans are ever taken for it. Their ``written_ns``
is when the source last saw them: the end of a span, or for an open span the latest moment of its
trace in the file. So the run covers the time the spans happened, and ``runs``, ``cassette --run``
and ``report --run`` find them as they find a recording's.

In bounded memory: documents are decoded one at a time as they come and ended spans written in
batches of at most _BATCH spans or _BATCH_BYTES (a long conversation's LLM spans each hold every
message before it); only open spans, few in any file, are kept to the end.
"""

from __future__ import annotations

import contextlib
import gzip
import secrets
import sqlite3
import time
import zlib
from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from otel_blackbox._config import BlackboxConfig
from otel_blackbox._spans.otlp_in.decoder import OtlpDecoder
from otel_blackbox._spans.otlp_in.span import OtlpError
from otel_blackbox._spans.redact import redactor_for
from otel_blackbox._store.connection import connect_writer, describe_sqlite_error
from otel_blackbox._store.inserts import SpanInserter
from otel_blackbox._store.retention import delete_traces
from otel_blackbox._store.rows import RowBuilder
from otel_blackbox._store.runs import next_source_pid
from otel_blackbox._store.schema import ROW_START_NS, ROW_WRITTEN_NS
from otel_blackbox._store.snapshot import (
    END_NS,
    EVENTS,
    SPAN_ID,
    START_NS,
    STATUS,
    TRACE_ID,
    Snapshot,
    queued_bytes,
)
from otel_blackbox.errors import ImportInputError

__all__ = ["ImportCounts", "Importer"]

# Spans looked up and inserted together: at most this many, and a batch ends once their estimated
# size (store.snapshot.queued_bytes: the attributes' text, mostly) reaches _BATCH_BYTES. A long
# conversation's LLM spans each hold every message before it: 512 of them can be a gigabyte.
_BATCH = 512
_BATCH_BYTES = 16 * 1024 * 1024
_SOURCE_CHARS = 200  # recorders.source is a label, not a list of every file


@dataclass
class ImportCounts:
    spans: int = 0  # stored: new, or an open span's end
    duplicates: int = 0  # already stored with their end (or open, and open again here)
    replaced: int = 0  # traces stored before with other spans, deleted and stored anew
    trace_ids: set[str] = field(default_factory=set)  # traces that got a span
    oldest_start_ns: int | None = None

    @property
    def traces(self) -> int:
        return len(self.trace_ids)

    def add(self, other: ImportCounts) -> None:
        self.spans += other.spans
        self.duplicates += other.duplicates
        self.replaced += other.replaced
        self.trace_ids |= other.trace_ids
        if other.oldest_start_ns is not None:
            self.oldest_start_ns = min(self.oldest_start_ns or other.oldest_start_ns, other.oldest_start_ns)


class Importer:
    """One import: every ``store`` call is one transaction, and all of them are one run."""

    def __init__(self, config: BlackboxConfig, source: str) -> None:
        self.config = config
        self.source = source if len(source) <= _SOURCE_CHARS else source[: _SOURCE_CHARS - 3] + "..."
        redactor = redactor_for(config)
        self._redactor = redactor
        self._decoder = OtlpDecoder()
        self._conn: sqlite3.Connection | None = None
        self._created = False  # whether this import's connection made the database file
        self._recorder_id: int | None = None
        self._rows: RowBuilder | None = None
        self.run_id: str | None = None
        self.total = ImportCounts()

    def store(
        self,
        name: str,
        documents: Iterable[tuple[int | None, object]],
        *,
        unit: str = "line",
        replace: Mapping[str, Set[str]] | None = None,
    ) -> ImportCounts:
        """Store every span of ``documents`` ((line number or None, parsed JSON) pairs), or none.

        ``replace`` (trace id -> the span ids the documents hold for it, in hex): a stored trace
        with a span not named is deleted first. Raises ImportInputError naming ``name``, the line
        (or the ``unit`` a number counts) and the field at the first bad one.
        """
        conn = self._connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            own = self._rows.pid if self._rows is not None else None
            replaced = _replace(conn, replace, own) if replace else 0
            counts = self._store(conn, name, documents, unit)
            counts.replaced = replaced
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if self.total.spans == 0:  # the run row went with the transaction
                self._recorder_id = self._rows = self.run_id = None
            raise
        self.total.add(counts)
        return counts

    def close(self, *, failed: bool = False) -> None:
        """Close the connection. ``failed``: the import stopped on an error; then a database file it
        created and stored nothing in is removed (with its -wal, -shm and -journal), never one that
        was there before."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        remove = failed and self._created and self.total.spans == 0 and _holds_nothing(conn)
        conn.close()
        if remove:
            _remove_database(Path(self.config.db_path))

    # -- one file ----------------------------------------------------------------------------------

    def _store(
        self, conn: sqlite3.Connection, name: str, documents: Iterable[tuple[int | None, object]], unit: str
    ) -> ImportCounts:
        counts = ImportCounts()
        rows = self._run(conn)
        inserter = SpanInserter(conn)
        trace_seen: dict[int, int] = {}  # trace id -> the latest moment the file shows it
        # Open spans are written last, once every trace's latest moment is known: a file holds few
        # (the spans in flight when it was written). Ended spans are written in batches as they come,
        # so what is held at once is one document and one batch.
        opens: list[tuple[Snapshot, int | None]] = []
        batch = _Batch()
        where = name
        try:
            for line, document in _named(documents, name):
                where = name if line is None else f"{name}, {unit} {line}"
                decoded = self._decoder.from_json(document, strict=True)
                del document  # the snapshots hold what is stored of it
                for definition in decoded.definitions:
                    rows.define(definition)
                for snapshot in decoded.snapshots:
                    _note_times(trace_seen, snapshot)
                    if snapshot[STATUS] is None:  # open
                        opens.append((snapshot, decoded.seen_ns.get((snapshot[TRACE_ID], snapshot[SPAN_ID]))))
                    elif batch.add(snapshot, snapshot[END_NS]):
                        self._write(conn, inserter, rows, batch.take(), counts, final=True)
                del decoded
            where = name
            self._write(conn, inserter, rows, batch.take(), counts, final=True)
            for snapshot, seen in opens:
                if batch.add(snapshot, seen or trace_seen[snapshot[TRACE_ID]]):
                    self._write(conn, inserter, rows, batch.take(), counts, final=False)
            self._write(conn, inserter, rows, batch.take(), counts, final=False)
        except OtlpError as exc:
            raise ImportInputError(f"{where}: {exc}") from None
        except UnicodeDecodeError as exc:
            raise ImportInputError(f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise ImportInputError(f"{where}: a broken gzip stream ({exc})") from None
        except sqlite3.Error as exc:
            raise describe_sqlite_error(self.config.db_path, exc) from None
        self._update_run(conn, counts)
        return counts

    def _write(
        self,
        conn: sqlite3.Connection,
        inserter: SpanInserter,
        rows: RowBuilder,
        batch: list[tuple[Snapshot, int]],
        counts: ImportCounts,
        *,
        final: bool,
    ) -> None:
        """Insert the spans of ``batch`` ((snapshot, written_ns) pairs) not stored yet."""
        if not batch:
            return
        stored = _stored(conn, {format(s[TRACE_ID], "032x") for s, _ in batch})
        new: dict[tuple[str, str], tuple[Any, ...]] = {}
        for snapshot, written_ns in batch:
            key = (format(snapshot[TRACE_ID], "032x"), format(snapshot[SPAN_ID], "016x"))
            status = stored.get(key)
            if key in new or (status is not None and (status != "open" or not final)):
                counts.duplicates += 1
                continue
            new[key] = rows.row(snapshot, written_ns)
        inserter.insert(list(new.values()), final=final)
        for (trace_id, _), row in new.items():
            counts.trace_ids.add(trace_id)
            start_ns = row[ROW_START_NS]
            counts.oldest_start_ns = (
                start_ns if counts.oldest_start_ns is None else min(counts.oldest_start_ns, start_ns)
            )
        counts.spans += len(new)
        self._span_times(conn, new.values())

    # -- the run -----------------------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self._created = not Path(self.config.db_path).exists()
            self._conn = connect_writer(
                Path(self.config.db_path), busy_timeout_ms=self.config.busy_timeout_ms
            )
        return self._conn

    def _run(self, conn: sqlite3.Connection) -> RowBuilder:
        """The run's row builder; its recorders row made in this transaction if there is none yet."""
        if self._rows is None:
            pid = next_source_pid(conn)
            run_id = secrets.token_hex(8)
            now = time.time_ns()
            cursor = conn.execute(
                "INSERT INTO recorders (run_id, pid, started_ns, last_seen_ns, source) "
                "VALUES (?, ?, ?, ?, ?)",
                (run_id, pid, now, 0, self.source),
            )
            self._recorder_id, self.run_id = cursor.lastrowid, run_id
            self._rows = RowBuilder(self._redactor, pid)
        return self._rows

    def _span_times(self, conn: sqlite3.Connection, rows: Iterable[tuple[Any, ...]]) -> None:
        """Widen the run to the times of these rows: it starts at the first start, ends at the last sight."""
        rows = list(rows)
        if rows:
            conn.execute(
                "UPDATE recorders SET started_ns = min(started_ns, ?), last_seen_ns = max(last_seen_ns, ?) "
                "WHERE id = ?",
                (min(r[ROW_START_NS] for r in rows), max(r[ROW_WRITTEN_NS] for r in rows), self._recorder_id),
            )

    def _update_run(self, conn: sqlite3.Connection, counts: ImportCounts) -> None:
        if self.total.spans + counts.spans == 0:  # nothing new: no run to show
            conn.execute("DELETE FROM recorders WHERE id = ?", (self._recorder_id,))
            self._recorder_id = self._rows = self.run_id = None
            return
        conn.execute(
            "UPDATE recorders SET spans_written = spans_written + ? WHERE id = ?",
            (counts.spans, self._recorder_id),
        )


class _Batch:
    """Snapshots with their written_ns, kept until written: ``add`` says when the batch is full
    (_BATCH spans, or _BATCH_BYTES of them estimated)."""

    def __init__(self) -> None:
        self.items: list[tuple[Snapshot, int]] = []
        self.bytes = 0

    def add(self, snapshot: Snapshot, written_ns: int) -> bool:
        self.items.append((snapshot, written_ns))
        self.bytes += queued_bytes(snapshot)
        return len(self.items) >= _BATCH or self.bytes >= _BATCH_BYTES

    def take(self) -> list[tuple[Snapshot, int]]:
        """Every item, the batch left empty."""
        items, self.items, self.bytes = self.items, [], 0
        return items


def _holds_nothing(conn: sqlite3.Connection) -> bool:
    """Whether a database holds no span, log record or run (False when that cannot be read)."""
    try:
        return not conn.execute(
            "SELECT EXISTS (SELECT 1 FROM spans) OR EXISTS (SELECT 1 FROM recorders) "
            "OR EXISTS (SELECT 1 FROM logs)"
        ).fetchone()[0]
    except sqlite3.Error:
        return False


def _remove_database(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        # Gone already, or not ours to remove: the error that stopped the import is what is said.
        with contextlib.suppress(OSError):
            path.with_name(path.name + suffix).unlink()


def _named(documents: Iterable[tuple[int | None, object]], name: str) -> Iterable[tuple[int | None, object]]:
    """The documents; a line that cannot be read (not JSON) is named with the file it is in."""
    iterator = iter(documents)
    while True:
        try:
            item = next(iterator)
        except StopIteration:
            return
        except OtlpError as exc:
            raise ImportInputError(f"{name}, {exc}") from None
        yield item
        del item  # not held while the next one is read


def _replace(conn: sqlite3.Connection, traces: Mapping[str, Set[str]], own_pid: int | None) -> int:
    """Delete the stored traces that hold a span not in ``traces``; their count. An import's run
    left with no span goes too (importing a grown session every day adds no empty runs), but for
    this import's own (``own_pid``): its row is still to be written to."""
    stale = sorted({t for t, span_id in _stored(conn, set(traces)) if span_id not in traces[t]})
    if not stale:
        return 0
    marks = ",".join("?" * len(stale))
    pids = [
        p for (p,) in conn.execute(f"SELECT DISTINCT pid FROM span_rows WHERE trace_id IN ({marks})", stale)
    ]
    delete_traces(conn, stale)
    for pid in pids:
        if pid is not None and pid < 0 and pid != own_pid:  # an import's or serve's run (next_source_pid)
            conn.execute(
                "DELETE FROM recorders WHERE pid = ? AND NOT EXISTS (SELECT 1 FROM span_rows WHERE pid = ?)",
                (pid, pid),
            )
    return len(stale)


def _note_times(trace_seen: dict[int, int], snapshot: Snapshot) -> None:
    latest = max(snapshot[START_NS] or 0, snapshot[END_NS] or 0, *(e[1] or 0 for e in snapshot[EVENTS]))
    if latest > trace_seen.get(snapshot[TRACE_ID], 0):
        trace_seen[snapshot[TRACE_ID]] = latest


def _stored(conn: sqlite3.Connection, trace_ids: set[str]) -> dict[tuple[str, str], str]:
    """The status of every stored span of these traces, by (trace id, span id)."""
    found: dict[tuple[str, str], str] = {}
    ids = sorted(trace_ids)
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ",".join("?" * len(chunk))
        query = f"SELECT trace_id, span_id, status FROM span_rows WHERE trace_id IN ({marks})"
        for trace_id, span_id, status in conn.execute(query, chunk):
            found[(trace_id, span_id)] = status
    return found
