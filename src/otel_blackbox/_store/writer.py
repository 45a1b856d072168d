"""The writer: span snapshots in, rows written in batched transactions.

It runs wherever the rows are built: in the companion writer process (_store.writer_process), or
on the agent's own shipper thread when no process can be started (_recorder.shipper). It receives
snapshots (_store.snapshot) in batches and:

* a span that has ended gets its final row (an upsert on trace id + span id);
* a span that is still open gets an open row (insert-if-absent), so a process killed now still
  shows it; a span that started and ended between two batches never needs an open row at all.

Open rows are the promise, final rows the load: open rows commit first, in a transaction of their
own, and final rows go in transactions of at most _FINALS_CHUNK rows, so an open row that arrives
while they are written waits for one chunk, not for the whole batch (the writer process takes in
what arrived between two chunks, or two steps of eviction, and commits its open rows then).

A final row is never overwritten by an open one, whatever order the rows arrive in.

When the database cannot be written (locked past the busy timeout, read-only, a full disk, deleted
or corrupted), the batch is kept and tried again next tick, up to max_queue_size spans: a passing
fault loses nothing, a lasting one loses the oldest spans, counted in ``write_errors``. Each kind
of fault is warned about once. A file deleted or replaced under the writer is noticed within a
tick and recording goes on in a new file.

Past 400 lines, on purpose: receiving, batching, the retry queue and its bounds, the run's row and
its heartbeat, and reconnecting after a fault are one state (what is held, what is on disk, which
connection and run row); split, each part would reach into the others' fields.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import sqlite3
import time
from collections.abc import Callable, Iterable
from itertools import islice
from pathlib import Path
from typing import Any

from otel_blackbox._config import BlackboxConfig
from otel_blackbox._spans.redact import redactor_for
from otel_blackbox._store.connection import connect_writer
from otel_blackbox._store.inserts import SpanInserter
from otel_blackbox._store.maintenance import Maintenance
from otel_blackbox._store.rows import RowBuilder
from otel_blackbox._store.runs import next_source_pid
from otel_blackbox._store.schema import ROW_START_NS
from otel_blackbox._store.snapshot import NAME, SPAN_ID, TRACE_ID, Definition, Snapshot, queued_bytes
from otel_blackbox.errors import StoreError

__all__ = ["SpanWriter"]

logger = logging.getLogger("otel_blackbox")


_MAX_TRACKED_OPEN = 100_000
_OPENS_APART = 200  # final rows past which open rows commit in a transaction of their own
_FINALS_CHUNK = 200  # final rows a transaction: what an open row arriving meanwhile may wait for

# Failures caused by a batch's content, not by the file: trying again cannot help.
_NOT_RETRYABLE = (sqlite3.IntegrityError, sqlite3.DataError, sqlite3.InterfaceError, sqlite3.ProgrammingError)

Key = tuple[int, int]  # (trace id, span id)


class SpanWriter:
    """Owns the SQLite connection of one recording process (one run) and writes its rows.

    ``pid`` and ``started_ns`` are the agent's: they name the run (the recorders row), whichever
    process does the writing.
    """

    def __init__(
        self,
        config: BlackboxConfig,
        *,
        pid: int | None = None,
        started_ns: int | None = None,
        dropped: Callable[[], int] = lambda: 0,
        source: str | None = None,
    ) -> None:
        self.config = config
        self._max_held_bytes = int(config.max_queue_mb * 1024 * 1024)
        # What the run is when no recorder made it (`serve`): recorders.source. Such a run's spans
        # get a pid of their own, negative, allocated with its row (store.runs.next_source_pid),
        # and the run starts at the earliest span it wrote, not when its writer was made: an
        # agent's clock and start are its own.
        self.source = source
        self._run_has_spans = False  # a source run: its row's start is a span's, not a placeholder
        self.rows_added = 0  # a source run: rows that were new (not a span sent again), for `serve`
        self.pid = (0 if source is not None else os.getpid()) if pid is None else pid
        self._run_id: str | None = None
        self._dropped = dropped
        self.redactor = redactor_for(config)
        self.rows = RowBuilder(self.redactor, self.pid)
        self.spans_written = 0
        self.write_errors = 0
        self.outside_errors = 0  # spans lost before they reached this writer (reported by the agent)
        self._conn: sqlite3.Connection | None = None
        self._inserter: SpanInserter | None = None  # made with the connection, dropped with it
        self._recorder_id: int | None = None
        self._warned: set[str] = set()
        self.maintenance = Maintenance(config)
        self._last_heartbeat = 0.0
        self._heartbeat_s = config.flush_interval_ms / 1000
        self._open_on_disk: set[Key] = set()
        # Received and not yet written: the next batch, or one that failed and waits for a retry
        # (bounded by max_queue_size). Dicts keep arrival order: rows go in the order spans ended.
        self._finals: dict[Key, Snapshot] = {}
        self._opens: dict[Key, Snapshot] = {}
        self._failing = False
        self._file_id: tuple[int, int] | None = None  # (st_dev, st_ino) of the file we write
        self._recorded_dropped = 0
        self._started_ns = time.time_ns() if started_ns is None else started_ns

    # -- receiving ---------------------------------------------------------------------------------

    def receive(
        self, definitions: Iterable[Definition], finals: Iterable[Snapshot], opens: Iterable[Snapshot]
    ) -> None:
        """Take a batch: resources and scopes first seen, ended spans, spans still open."""
        for definition in definitions:
            self.rows.define(definition)
        pending_finals, pending_opens = self._finals, self._opens
        for snapshot in opens:
            key = (snapshot[TRACE_ID], snapshot[SPAN_ID])
            if key not in pending_finals:
                pending_opens[key] = snapshot
        for snapshot in finals:
            key = (snapshot[TRACE_ID], snapshot[SPAN_ID])
            pending_finals[key] = snapshot
            pending_opens.pop(key, None)

    @property
    def pending(self) -> bool:
        return bool(self._finals or self._opens)

    # -- writing ---------------------------------------------------------------------------------

    def write_pending(self, between: Callable[[], None] | None = None) -> Exception | None:
        """Write everything received; None when it all committed, else the last error.

        Open rows first (in a transaction of their own ahead of more than _OPENS_APART final rows),
        then final rows in transactions of at most _FINALS_CHUNK, calling ``between`` after each
        but the last (the writer process takes in what arrived meanwhile: see write_opens). What
        is received meanwhile waits for the next call. A failed chunk and the rest are kept for
        the next call, up to max_queue_size spans (a chunk that fails for its content is not: its
        spans are counted as lost).
        """
        if not self.pending:
            return None
        finals, opens = self._finals, self._opens
        self._finals, self._opens = {}, {}
        if opens and len(finals) > _OPENS_APART and self._write({}, opens) is None:
            # A long span's open row does not wait for a big batch of final rows to be built and
            # written: it commits first, in a transaction of its own (the flush interval bounds it).
            opens = {}
        items = list(finals.items())
        failed = None
        for first in range(0, max(len(items), 1), _FINALS_CHUNK):
            chunk = dict(items[first : first + _FINALS_CHUNK])
            error = self._write(chunk, opens)
            if error is not None and not isinstance(error, _NOT_RETRYABLE):
                self._keep_for_retry(dict(items[first:]), opens)
                return error
            if error is not None:
                self.write_errors += len(chunk)
                failed = error
            opens = {}
            if between is not None and first + _FINALS_CHUNK < len(items):
                between()
        return failed

    def write_opens(self) -> None:
        """Commit the open rows received since the last write, ahead of any final rows waiting.

        Called between two transactions of a long write (or steps of eviction): a long span's open
        row waits for one of them, not for all. Kept for the next write if the file fails.
        """
        if not self._opens:
            return
        opens, self._opens = self._opens, {}
        error = self._write({}, opens)
        if error is not None and not isinstance(error, _NOT_RETRYABLE):
            for key, snapshot in opens.items():
                if key not in self._finals:
                    self._opens.setdefault(key, snapshot)

    def write_now(self, finals: Iterable[Snapshot]) -> bool:
        """Write these final rows now, nothing held for later (the exporter's path)."""
        batch = {(s[TRACE_ID], s[SPAN_ID]): s for s in finals}
        self.check_file()
        if self._write(batch, {}) is None:
            return True
        self.write_errors += len(batch)  # the exporter's caller does not retry: these are lost
        return False

    def finish(self) -> None:
        """The end of the run: whatever is still held for a retry is lost, and counted."""
        self.write_errors += len(self._finals)
        self._finals.clear()
        self._opens.clear()

    def skip(self, name: object) -> None:
        """A span that could not be snapshotted or serialized: counted, warned about once."""
        self.write_errors += 1
        self._warn_once("row", f"otel-blackbox could not serialize span {name!r}", exc_info=True)

    def _keep_for_retry(self, finals: dict[Key, Snapshot], opens: dict[Key, Snapshot]) -> None:
        """Hold a failed batch for the next try; past max_queue_size spans or max_queue_mb, the
        oldest final rows are lost (counted)."""
        finals.update(self._finals)  # anything received meanwhile comes after
        for key, snapshot in self._opens.items():
            if key not in finals:
                opens[key] = snapshot
        room = self.config.max_queue_size
        # Held by count and by the queue's memory bound too: a writer that fails fast must not
        # hold more than the processor's queue would (in thread mode, this is the agent's memory).
        sizes = [queued_bytes(snapshot) for snapshot in finals.values()]
        held, lost = sum(sizes), max(0, len(finals) - room)
        held -= sum(sizes[:lost])
        while held > self._max_held_bytes and lost < len(sizes):
            held -= sizes[lost]
            lost += 1
        if lost:
            self.write_errors += lost
            finals = dict(islice(finals.items(), lost, None))  # drop the oldest
        room -= len(finals)
        # An open row that is not kept costs nothing lasting: the span's final row comes later.
        self._opens = dict(islice(((k, s) for k, s in opens.items() if k not in finals), room))
        self._finals = finals

    def _write(self, finals: dict[Key, Snapshot], opens: dict[Key, Snapshot]) -> Exception | None:
        """One transaction; None when it committed, else the error (warned once per kind of fault)."""
        if not finals and not opens:
            return None
        try:
            conn = self._connection()
            inserter = self._inserter
            assert inserter is not None  # _connection() made it
            now = time.time_ns()  # after connecting: the recorder row must not be newer than its rows
            final_rows = self._rows(finals.values(), now)
            open_rows = self._rows((s for k, s in opens.items() if k not in finals), now)
            conn.execute("BEGIN IMMEDIATE")
            try:
                last_id = self._last_row_id(conn)
                inserter.insert(final_rows, final=True)
                inserter.insert(open_rows, final=False)
                self.spans_written += len(final_rows)
                starts = [r[ROW_START_NS] for r in final_rows] + [r[ROW_START_NS] for r in open_rows]
                self._update_recorder(conn, now, min(starts, default=None))
                added = self._rows_since(conn, last_id)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            self.rows_added += added
            self._run_has_spans = self._run_has_spans or bool(starts)
            self._track_open(opens, finals)
            if self._failing:
                self._failing = False
                logger.info("otel-blackbox is writing to %s again", self.config.db_path)
            return None
        except (sqlite3.Error, StoreError, OSError) as exc:
            self._fault(exc)
            return exc

    def _last_row_id(self, conn: sqlite3.Connection) -> int | None:
        """For a source run, the highest row id before this transaction's inserts (None otherwise)."""
        if self.source is None:
            return None
        (last,) = conn.execute("SELECT coalesce(max(id), 0) FROM span_rows").fetchone()
        return int(last)

    def _rows_since(self, conn: sqlite3.Connection, last_id: int | None) -> int:
        """The rows this transaction added: a new row's id is past every id before it (no
        AUTOINCREMENT), and a final row replacing a stored one keeps its id."""
        if last_id is None:
            return 0
        (added,) = conn.execute("SELECT count(*) FROM span_rows WHERE id > ?", (last_id,)).fetchone()
        return int(added)

    def _fault(self, exc: Exception) -> None:
        """The database cannot be written: warn once, and reopen it on the next try."""
        self._failing = True
        self._warn_once(
            "write",
            f"otel-blackbox could not write to {self.config.db_path} ({exc}); the agent is unaffected, "
            "spans are held for a retry and counted if lost",
        )
        self.close()  # the file may have been replaced or fixed by the next try

    def _rows(self, snapshots: Iterable[Snapshot], now: int) -> list[tuple[Any, ...]]:
        """Row tuples; a span whose row cannot be built is skipped and counted, not the whole batch."""
        rows = []
        row = self.rows.row
        for snapshot in snapshots:
            try:
                rows.append(row(snapshot, now))
            except Exception:
                self.skip(snapshot[NAME] if len(snapshot) > NAME else snapshot)
        return rows

    def _track_open(self, opened: dict[Key, Snapshot], finals: dict[Key, Snapshot]) -> None:
        """Remember which open rows are on disk, so the heartbeat runs only while there are some."""
        self._open_on_disk.update(opened)
        self._open_on_disk.difference_update(finals)
        if len(self._open_on_disk) > _MAX_TRACKED_OPEN:  # leaked spans that never end: stop tracking
            self._open_on_disk.clear()

    def heartbeat(self, now_ns: int | None = None) -> None:
        """Keep this run's recorder row current between batches.

        While open rows are on disk it says, every flush interval, that the agent is still alive:
        that moment (recorders.last_seen_ns) is where a killed run's open spans are shown to end.
        It also records drops that happened since the last batch, so `stats` sees them at once.
        ``now_ns`` given: record that moment now (the writer process saw its agent die then).
        """
        now = time.monotonic()
        alive_due = bool(self._open_on_disk) and now - self._last_heartbeat >= self._heartbeat_s
        if now_ns is None and not (alive_due or self._dropped() != self._recorded_dropped):
            return
        if self._conn is None and (now_ns is None or self._recorder_id is None):
            return
        self._last_heartbeat = now
        try:
            self._update_recorder(self._connection(), now_ns or time.time_ns())
        except (sqlite3.Error, StoreError, OSError) as exc:
            self._warn_once(f"heartbeat:{type(exc).__name__}", f"otel-blackbox heartbeat failed: {exc}")

    def check_file(self) -> None:
        """Let go of a file that was deleted or replaced under us (one stat a tick)."""
        if self._conn is None or self._file_id is None:
            return
        try:
            stat = os.stat(self.config.db_path)
            current: tuple[int, int] | None = (stat.st_dev, stat.st_ino)
        except OSError:
            current = None
        if current != self._file_id:
            self._warn_once(
                "replaced",
                f"otel-blackbox: {self.config.db_path} was deleted or replaced while recording; "
                "recording goes on in a new file",
            )
            self.close()
            self.maintenance = Maintenance(self.config)  # its work was for the old file

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            path = Path(self.config.db_path)
            if self._file_id is not None and not path.exists():
                _unlink_wal_files(path)
            conn = connect_writer(path, busy_timeout_ms=self.config.busy_timeout_ms)
            try:
                stat = os.stat(path)
                self._file_id = (stat.st_dev, stat.st_ino)
                self._find_or_insert_recorder(conn)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
            self._inserter = SpanInserter(conn)  # its cached ids hold only as long as this connection
        return self._conn

    def _find_or_insert_recorder(self, conn: sqlite3.Connection) -> None:
        """The run's recorders row: after a reconnect the same one if the file still has it (a
        replaced file gets a new one). A recording's row is found by its pid and start, so that an
        in-thread writer (the bridge while the writer process starts, or the one taking over from a
        dead process) shares the process's row. Looked up inside the write transaction that would
        insert it: two writers of one run connecting at once must not both miss it and make two runs.
        """
        conn.execute("BEGIN IMMEDIATE")  # a source run's pid is allocated with its row, too
        try:
            found = (
                conn.execute("SELECT id FROM recorders WHERE run_id = ?", (self._run_id,)).fetchone()
                if self.source is not None
                else conn.execute(
                    "SELECT id FROM recorders WHERE pid = ? AND started_ns = ?", (self.pid, self._started_ns)
                ).fetchone()
            )
            if found is not None:
                conn.execute("COMMIT")
                self._recorder_id = found[0]
                return
            if self.source is not None:
                self.pid = self.rows.pid = next_source_pid(conn)
                self._run_has_spans = False
            run_id = secrets.token_hex(8)
            cursor = conn.execute(
                "INSERT INTO recorders (run_id, pid, started_ns, last_seen_ns, source) "
                "VALUES (?, ?, ?, ?, ?)",
                (run_id, self.pid, self._started_ns, time.time_ns(), self.source),
            )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        self._recorder_id, self._run_id = cursor.lastrowid, run_id

    def _update_recorder(self, conn: sqlite3.Connection, now: int, earliest_ns: int | None = None) -> None:
        dropped = self._dropped()
        first = later = None  # a source run's start: set by its first spans, then only moved back
        if self.source is not None and earliest_ns is not None:
            if self._run_has_spans:
                later = earliest_ns
            else:  # not after now: a row written before its run started would belong to no run
                first = min(earliest_ns, now)
        conn.execute(
            "UPDATE recorders SET last_seen_ns = ?, spans_written = ?, spans_dropped = ?, write_errors = ?, "
            "started_ns = coalesce(?, min(started_ns, coalesce(?, started_ns))) WHERE id = ?",
            (
                now,
                self.spans_written,
                dropped,
                self.write_errors + self.outside_errors,
                first,
                later,
                self._recorder_id,
            ),
        )
        self._recorded_dropped = dropped

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None
            self._inserter = None

    # -- maintenance -----------------------------------------------------------------------------

    def maintain(self, between: Callable[[], None] | None = None) -> None:
        """Retention and the size cap (maintenance.py), a bounded share each tick; warns once of drops."""
        dropped = self._dropped()
        if dropped:
            self._warn_once("dropped", f"otel-blackbox queue full: dropping spans ({dropped} so far)")
        if self._failing:
            return  # maintenance cannot work where writing does not: wait for it
        try:
            self.maintenance.tick(self._connection, connected=self._conn is not None, between=between)
        except (sqlite3.Error, StoreError, OSError) as exc:
            self._fault(exc)

    def leave_warnings(self) -> None:
        """Warn about nothing: another writer of the same file says it (the writer process, for the
        stand-in that writes open rows from the agent while it starts)."""
        self._warned.update(("write", "dropped", "row"))

    def _warn_once(self, key: str, message: str, **kwargs: Any) -> None:
        if key not in self._warned:
            self._warned.add(key)
            logger.warning(message, **kwargs)


def _unlink_wal_files(path: Path) -> None:
    """Remove the -wal and -shm left by a database that was deleted under us.

    They belong to the deleted file: a new file beside them would share them (and their pages)
    with any process still writing to the old one. Unlinked, they stay that process's own until it
    notices and lets go.
    """
    for suffix in ("-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")
