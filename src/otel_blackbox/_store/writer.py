"""The writer: span snapshots in, rows written in batched transactions.

It runs wherever the rows are built: in the companion writer process (_store.writer_process), or
on the agent's own shipper thread when no process can be started (_recorder.shipper). It receives
snapshots (_store.snapshot) in batches and:

* a span that has ended gets its final row (an upsert on trace id + span id);
* a span that is still open gets an open row (insert-if-absent), so a process killed now still
  shows it; a span that started and ended between two batches never needs an open row at all.

Open rows are the promise, final rows the load: open rows commit first, in a transaction of their
own, and a batch of final rows is built and inserted _FINALS_CHUNK rows at a time, in one
transaction; between two chunks the writer process takes in what arrived, and an open row among it
is inserted and committed then, with the chunks before it: it waits for one chunk, not for the whole
batch (and between two steps of eviction, for one step). A transaction is not cut where no open
row waits (but past _COMMIT_AFTER_S): each commit rewrites the pages it touched in the WAL, and
commits every 200 rows doubled the bytes written a span and cost a quarter more CPU (issue 48).

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
from otel_blackbox._store.inserts import ROWS_PER_STATEMENT, SpanInserter
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
# Final rows built and inserted at a time: what an open row arriving meanwhile waits for. One
# INSERT statement's worth: every statement after a transaction's first keeps a statement journal
# (a temporary file), and chunks of 200 (three statements each) wrote 43 % more bytes a span.
_FINALS_CHUNK = ROWS_PER_STATEMENT
_COMMIT_AFTER_S = 0.1  # a long batch commits at least this often (its progress reaches the agent)

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
        self._writing = False  # inside _write_run's transaction (write_opens waits for its commit)
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
        then the final rows in one transaction (``_write``), cut where ``between``, called after
        every _FINALS_CHUNK rows, brings in open rows. What else is received meanwhile waits for the
        next call. A failed transaction and the rest are kept for the next call, up to
        max_queue_size spans; one that fails for its content is tried again in chunks of
        _FINALS_CHUNK, each its own transaction, and only the chunks at fault are lost (counted).
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
        first = 0
        while True:
            error, end, held = self._write_run(items, first, opens, between)
            opens = {}
            if error is not None and not isinstance(error, _NOT_RETRYABLE):
                self._keep_for_retry(dict(items[first:]), held)
                return error
            if error is not None:  # the content: only the chunks at fault are lost
                for start in range(first, end, _FINALS_CHUNK):
                    chunk = dict(items[start : start + _FINALS_CHUNK])
                    error = self._write(chunk, held)
                    held = {}
                    if error is not None and not isinstance(error, _NOT_RETRYABLE):
                        self._keep_for_retry(dict(items[start:]), {})
                        return error
                    if error is not None:
                        self.write_errors += len(chunk)
                        failed = error
            if end >= len(items):
                return failed
            first = end

    def write_opens(self) -> None:
        """Commit the open rows received since the last write, ahead of any final rows waiting.

        Called between two steps of eviction (maintain), where no transaction is open: a long
        span's open row waits for one of them, not for all. Inside a write (``between`` of
        write_pending) it does nothing: the write commits them as it comes back. Kept for the next
        write if the file fails.
        """
        if not self._opens or self._writing:
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
        return self._write_run(list(finals.items()), 0, opens, None)[0]

    def _write_run(
        self,
        items: list[tuple[Key, Snapshot]],
        first: int,
        opens: dict[Key, Snapshot],
        between: Callable[[], None] | None,
    ) -> tuple[Exception | None, int, dict[Key, Snapshot]]:
        """The final rows of ``items`` from ``first`` on, and ``opens``, in one transaction.

        With ``between``, the final rows go _FINALS_CHUNK at a time and ``between()`` is called
        after each chunk but the last; when it brought in open rows, or the transaction has lasted
        _COMMIT_AFTER_S, those open rows join it and it commits there. Returns the error (None: it
        committed), where its final rows ended, and the open rows it held (to keep for a retry).
        """
        if first >= len(items) and not opens:
            return None, first, opens
        end = stop = first
        counted = 0
        try:
            conn = self._connection()
            inserter = self._inserter
            assert inserter is not None  # _connection() made it
            now = time.time_ns()  # after connecting: the recorder row must not be newer than its rows
            conn.execute("BEGIN IMMEDIATE")
            self._writing = True
            try:
                last_id = self._last_row_id(conn)
                began = time.monotonic()
                written = 0
                earliest: int | None = None
                while True:
                    stop = len(items) if between is None else min(end + _FINALS_CHUNK, len(items))
                    final_rows = self._rows((snapshot for _, snapshot in items[end:stop]), now)
                    inserter.insert(final_rows, final=True)
                    written += len(final_rows)
                    earliest = _earliest(final_rows, earliest)
                    end = stop
                    if end >= len(items) or between is None:
                        break
                    between()
                    if self._opens or time.monotonic() - began >= _COMMIT_AFTER_S:
                        opens, self._opens = {**opens, **self._opens}, {}
                        break
                ended = {key for key, _ in items[first:end]}
                open_rows = self._rows((s for k, s in opens.items() if k not in ended), now)
                inserter.insert(open_rows, final=False)
                earliest = _earliest(open_rows, earliest)
                self.spans_written += written  # before the recorder's row, which says it
                counted = written
                self._update_recorder(conn, now, earliest)
                added = self._rows_since(conn, last_id)
                conn.execute("COMMIT")
            except BaseException:
                self.spans_written -= counted
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            finally:
                self._writing = False
            self.rows_added += added
            self._run_has_spans = self._run_has_spans or earliest is not None
            self._track_open(opens, ended)
            if self._failing:
                self._failing = False
                logger.info("otel-blackbox is writing to %s again", self.config.db_path)
            return None, end, opens
        except (sqlite3.Error, StoreError, OSError) as exc:
            self._fault(exc)
            return exc, max(end, stop), opens  # stop: the end of the chunk at fault

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

    def _track_open(self, opened: dict[Key, Snapshot], finals: Iterable[Key]) -> None:
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
        """Retention and the size cap (maintenance.py), a bounded share each tick; warns once of drops.
        ``between`` (take in what arrived) is called between two steps, and the open rows it brought
        in commit then."""
        dropped = self._dropped()
        if dropped:
            self._warn_once("dropped", f"otel-blackbox queue full: dropping spans ({dropped} so far)")
        if self._failing:
            return  # maintenance cannot work where writing does not: wait for it
        steps = None
        if between is not None:
            take_in = between

            def steps() -> None:  # between two steps, no transaction is open: open rows commit now
                take_in()
                self.write_opens()

        try:
            self.maintenance.tick(self._connection, connected=self._conn is not None, between=steps)
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


def _earliest(rows: list[tuple[Any, ...]], earliest: int | None) -> int | None:
    """The earliest start among ``rows`` and ``earliest`` (None: none yet)."""
    if rows:
        first = min(row[ROW_START_NS] for row in rows)
        return first if earliest is None or first < earliest else earliest
    return earliest
