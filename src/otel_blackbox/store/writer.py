"""The writer thread: drains the processor's queue and writes rows in batched transactions.

The caller's thread only appends span objects to a deque. Each tick (half the flush interval) the
writer takes what is queued and:

* a span that has ended gets its final row (an upsert on trace id + span id);
* a span that is still open gets an open row (insert-if-absent), so a process killed now still
  shows it; a span that started and ended between two ticks never needs an open row at all.

A final row is never overwritten by an open one, whatever order the rows arrive in.

When the database cannot be written (locked past the busy timeout, read-only, a full disk, deleted
or corrupted), the batch is kept and tried again next tick, up to max_queue_size spans: a passing
fault loses nothing, a lasting one loses the oldest spans, counted in ``write_errors``. Each kind
of fault is warned about once. A file deleted or replaced under the writer is noticed within a
tick and recording goes on in a new file.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from itertools import islice
from pathlib import Path
from typing import Any

from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, attach, set_value
from opentelemetry.sdk.trace import ReadableSpan, Span

from ..config import BlackboxConfig
from ..errors import StoreError
from ..redact import Redactor
from .connection import connect_writer
from .inserts import SpanInserter
from .retention import apply_retention, database_bytes, evict_oldest, give_space_back, size_cap_target
from .rows import RowBuilder

__all__ = ["FlushMarker", "SpanWriter"]

logger = logging.getLogger("otel_blackbox")


_MAX_TRACKED_OPEN = 100_000
_MAINTENANCE_BUDGET_S = 0.05  # of each 100 ms tick, for evicting traces down from the size cap
_VACUUM_PAGES_PER_TICK = 2048  # 16 MB of 8 KiB pages given back to the filesystem a tick

# Failures caused by a batch's content, not by the file: trying again cannot help.
_NOT_RETRYABLE = (sqlite3.IntegrityError, sqlite3.DataError, sqlite3.InterfaceError, sqlite3.ProgrammingError)


class FlushMarker:
    """Queued by force_flush: set once everything queued before it is written (or failed)."""

    __slots__ = ("done", "ok")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.ok = True


class SpanWriter:
    """Owns the SQLite connection and the thread that writes to it. One per process."""

    def __init__(
        self,
        config: BlackboxConfig,
        queue: deque[Any],
        wake: threading.Event,
        dropped: Callable[[], int],
    ) -> None:
        self.config = config
        self.queue = queue
        self.wake = wake
        self._dropped = dropped
        self.redactor = Redactor(
            enabled=config.redact,
            patterns=config.redact_patterns,
            fields=config.redact_fields,
            max_bytes=config.max_attribute_bytes,
        )
        self.rows = RowBuilder(self.redactor, os.getpid())
        self.spans_written = 0
        self.write_errors = 0
        self._stopping = False
        self._conn: sqlite3.Connection | None = None
        self._inserter: SpanInserter | None = None  # made with the connection, dropped with it
        self._recorder_id: int | None = None
        self._warned: set[str] = set()
        self._last_cleanup = 0.0
        self._last_size_check = 0.0
        self._evicting = False  # over the size cap: evicting a share each tick down to 90 %
        self._freed = False  # pages to give back to the filesystem once eviction is done
        self._last_heartbeat = 0.0
        self._heartbeat_s = config.flush_interval_ms / 1000
        self._open_on_disk: set[Any] = set()
        # A batch that could not be written, kept for the next tick (bounded by max_queue_size).
        self._retry_finals: dict[tuple[int, int], ReadableSpan] = {}
        self._retry_opens: dict[tuple[int, int], ReadableSpan] = {}
        self._failing = False
        self._file_id: tuple[int, int] | None = None  # (st_dev, st_ino) of the file we write
        self._recorded_dropped = 0
        self._started_ns = time.time_ns()
        # Held around all SQLite work; os.fork() takes it first, so a child never inherits a
        # connection (or SQLite's own mutexes) in the middle of a call.
        self.io_lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, name="otel-blackbox-writer", daemon=True)

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        self.thread.start()

    def stop(self, timeout_s: float) -> bool:
        """Write what is queued, then end the thread. False if it did not finish in time."""
        self._stopping = True
        self.wake.set()
        self.thread.join(timeout_s)
        return not self.thread.is_alive()

    def _run(self) -> None:
        # Our own SQLite I/O must not show up as spans of the agent.
        attach(set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
        tick = self.config.flush_interval_ms / 2000
        while True:
            self.wake.wait(tick)
            self.wake.clear()
            stopping = self._stopping
            try:
                with self.io_lock:
                    self._check_file()
                    self.write_pending()
                    self._heartbeat()
                    self.maintain()
            except Exception:  # the writer must survive anything: log and keep going
                self._warn_once("writer", "otel-blackbox writer error; continuing", exc_info=True)
            if stopping:
                self.write_errors += len(self._retry_finals)  # still held at exit: lost
                self._retry_finals.clear()
                self.close()
                return

    # -- writing ---------------------------------------------------------------------------------

    def write_pending(self) -> None:
        """Write everything queued right now, in transactions of at most max_batch_size rows."""
        while self.queue or self._retry_finals or self._retry_opens:
            # A batch that failed last tick goes first, so rows stay in the order spans ended.
            finals, opens = self._retry_finals, self._retry_opens
            self._retry_finals, self._retry_opens = {}, {}
            markers: list[FlushMarker] = []
            for _ in range(self.config.max_batch_size):
                try:
                    item = self.queue.popleft()
                except IndexError:
                    break
                if isinstance(item, Span):  # queued by on_start: the live span
                    if item.end_time is not None:
                        continue  # ended since: on_end queued its final snapshot after it
                    context = item.context
                    key = (context.trace_id, context.span_id)
                    if key not in finals:
                        opens[key] = item
                elif isinstance(item, FlushMarker):
                    markers.append(item)
                elif item.context is None:  # not a recordable SDK span: count it, keep the batch
                    self._skip(item)
                else:  # queued by on_end: the final snapshot
                    key = (item.context.trace_id, item.context.span_id)
                    finals[key] = item
                    opens.pop(key, None)
            error = self._write(finals, opens)
            for marker in markers:
                marker.ok = error is None
                marker.done.set()
            if error is not None:
                if isinstance(error, _NOT_RETRYABLE):
                    self.write_errors += len(finals)
                else:
                    self._keep_for_retry(finals, opens)
                return  # the fault may last: try again next tick, not in a tight loop

    def write_finished(self, spans: Iterable[ReadableSpan]) -> bool:
        """Write these spans' final rows now, on the calling thread (the exporter's path)."""
        finals = {}
        for span in spans:
            if span.context is None:
                self._skip(span)
            else:
                finals[(span.context.trace_id, span.context.span_id)] = span
        self._check_file()
        if self._write(finals, {}) is None:
            return True
        self.write_errors += len(finals)  # the exporter's caller does not retry: these are lost
        return False

    def _keep_for_retry(self, finals: dict[Any, ReadableSpan], opens: dict[Any, ReadableSpan]) -> None:
        """Hold a failed batch for the next tick; past max_queue_size the oldest final rows are lost."""
        room = self.config.max_queue_size
        if len(finals) > room:
            lost = len(finals) - room
            self.write_errors += lost
            finals = dict(islice(finals.items(), lost, None))  # dicts keep arrival order: drop the oldest
        room -= len(finals)
        # An open row that is not kept costs nothing lasting: the span's final row comes later.
        self._retry_opens = dict(
            islice(((k, s) for k, s in opens.items() if s.end_time is None and k not in finals), room)
        )
        self._retry_finals = finals

    def _write(self, finals: dict[Any, ReadableSpan], opens: dict[Any, ReadableSpan]) -> Exception | None:
        """One transaction; None when it committed, else the error (warned once per kind of fault)."""
        if not finals and not opens:
            return None
        try:
            conn = self._connection()
            inserter = self._inserter
            assert inserter is not None  # _connection() made it
            now = time.time_ns()  # after connecting: the recorder row must not be newer than its rows
            final_rows = self._rows(finals.values(), now, is_open=False)
            # A span may have ended since it was queued: its final row is on its way, skip the open one.
            still_open = {key: s for key, s in opens.items() if s.end_time is None}
            open_rows = self._rows(still_open.values(), now, is_open=True)
            conn.execute("BEGIN IMMEDIATE")
            try:
                inserter.insert(final_rows, final=True)
                inserter.insert(open_rows, final=False)
                self.spans_written += len(final_rows)
                self._update_recorder(conn, now)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            self._track_open(still_open, finals)
            if self._failing:
                self._failing = False
                logger.info("otel-blackbox is writing to %s again", self.config.db_path)
            return None
        except (sqlite3.Error, StoreError, OSError) as exc:
            self._fault(exc)
            return exc

    def _fault(self, exc: Exception) -> None:
        """The database cannot be written: warn once, and reopen it on the next try."""
        self._failing = True
        self._warn_once(
            "write",
            f"otel-blackbox could not write to {self.config.db_path} ({exc}); the agent is unaffected, "
            "spans are held for a retry and counted if lost",
        )
        self.close()  # the file may have been replaced or fixed by the next try

    def _rows(self, spans: Iterable[ReadableSpan], now: int, *, is_open: bool) -> list[tuple[Any, ...]]:
        """Row tuples; a span whose row cannot be built is skipped and counted, not the whole batch."""
        rows = []
        for span in spans:
            for attempt in range(3):
                try:
                    rows.append(self.rows.row(span, now, is_open=is_open))
                    break
                except RuntimeError:  # a live span changed under us (dict / deque mutated): try again
                    if attempt == 2:
                        self._skip(span)
                except Exception:
                    self._skip(span)
                    break
        return rows

    def _skip(self, span: ReadableSpan) -> None:
        self.write_errors += 1
        self._warn_once("row", f"otel-blackbox could not serialize span {span.name!r}", exc_info=True)

    def _track_open(self, opened: dict[Any, ReadableSpan], finals: dict[Any, ReadableSpan]) -> None:
        """Remember which open rows are on disk, so the heartbeat runs only while there are some."""
        self._open_on_disk.update(opened)
        self._open_on_disk.difference_update(finals)
        if len(self._open_on_disk) > _MAX_TRACKED_OPEN:  # leaked spans that never end: stop tracking
            self._open_on_disk.clear()

    def _heartbeat(self) -> None:
        """Keep this process's recorder row current between batches.

        While open rows are on disk it says, every flush interval, that the process is still alive:
        that moment (recorders.last_seen_ns) is where a killed run's open spans are shown to end.
        It also records drops that happened since the last batch, so `stats` sees them at once.
        """
        now = time.monotonic()
        alive_due = bool(self._open_on_disk) and now - self._last_heartbeat >= self._heartbeat_s
        if self._conn is None or not (alive_due or self._dropped() != self._recorded_dropped):
            return
        self._last_heartbeat = now
        try:
            self._update_recorder(self._conn, time.time_ns())
        except sqlite3.Error as exc:
            self._warn_once(f"heartbeat:{type(exc).__name__}", f"otel-blackbox heartbeat failed: {exc}")

    def _check_file(self) -> None:
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
            self._evicting = self._freed = False  # that work was for the old file

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            path = Path(self.config.db_path)
            if self._file_id is not None and not path.exists():
                _unlink_wal_files(path)
            conn = connect_writer(path, busy_timeout_ms=self.config.busy_timeout_ms)
            stat = os.stat(path)
            self._file_id = (stat.st_dev, stat.st_ino)
            # One recorder row per process: after a reconnect, carry on with the same row if the
            # file still has it (a replaced file gets a new one).
            found = conn.execute(
                "SELECT id FROM recorders WHERE pid = ? AND started_ns = ?", (os.getpid(), self._started_ns)
            ).fetchone()
            if found is not None:
                self._recorder_id = found[0]
            else:
                cursor = conn.execute(
                    "INSERT INTO recorders (run_id, pid, started_ns, last_seen_ns) VALUES (?, ?, ?, ?)",
                    (secrets.token_hex(8), os.getpid(), self._started_ns, time.time_ns()),
                )
                self._recorder_id = cursor.lastrowid
            self._conn = conn
            self._inserter = SpanInserter(conn)  # its cached ids hold only as long as this connection
        return self._conn

    def _update_recorder(self, conn: sqlite3.Connection, now: int) -> None:
        dropped = self._dropped()
        conn.execute(
            "UPDATE recorders SET last_seen_ns = ?, spans_written = ?, spans_dropped = ?, write_errors = ? "
            "WHERE id = ?",
            (now, self.spans_written, dropped, self.write_errors, self._recorder_id),
        )
        self._recorded_dropped = dropped

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None
            self._inserter = None

    # -- maintenance -----------------------------------------------------------------------------

    def maintain(self) -> None:
        """Retention and the size cap, a bounded share each tick so span writes never wait long.

        Retention runs at start and every cleanup interval. The size is checked once a second; over
        the cap, the oldest complete traces go (about _MAINTENANCE_BUDGET_S of work a tick) until
        the data is down to 90 % of it, then the freed pages go back to the filesystem.
        """
        dropped = self._dropped()
        if dropped:
            self._warn_once("dropped", f"otel-blackbox queue full: dropping spans ({dropped} so far)")
        config = self.config
        cap = config.max_db_bytes
        if (config.retention_seconds is None and cap is None) or self._failing:
            return  # maintenance cannot work where writing does not: wait for it
        now = time.monotonic()
        retention_due = config.retention_seconds is not None and (
            self._last_cleanup == 0.0 or now - self._last_cleanup >= config.cleanup_interval_s
        )
        size_check_due = cap is not None and not self._evicting and now - self._last_size_check >= 1.0
        if not (
            retention_due or self._evicting or self._freed or (size_check_due and self._conn is not None)
        ):
            return  # nothing due: do not open (or re-create) the file just to look at it
        try:
            conn = self._connection()
            if retention_due and config.retention_seconds is not None:
                self._last_cleanup = now
                self._freed |= apply_retention(conn, config.retention_seconds) > 0
            if cap is not None and size_check_due:
                self._last_size_check = now
                self._evicting = database_bytes(conn) > cap
            if cap is not None and self._evicting:
                # Past the cap itself, take a larger share: the cap must hold even under heavy writing.
                budget = _MAINTENANCE_BUDGET_S * (3 if database_bytes(conn) > cap else 1)
                evicted, done = evict_oldest(conn, size_cap_target(cap), budget_s=budget)
                self._evicting = not done
                self._freed |= evicted > 0
            if self._freed and not self._evicting:
                self._freed = not give_space_back(conn, max_pages=_VACUUM_PAGES_PER_TICK)
        except (sqlite3.Error, StoreError, OSError) as exc:
            self._fault(exc)

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
