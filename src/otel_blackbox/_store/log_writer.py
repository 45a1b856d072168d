"""The writer of log records: log snapshots in, rows of ``logs`` written in one transaction a batch.

It runs on the thread of a BlackboxLogRecordProcessor (its writer) or of the SDK's
BatchLogRecordProcessor (the exporter), with a connection of its own to the same file as the span
writer (WAL: the two take turns for a few milliseconds a batch). Its counts go on the run's row of
``recorders`` (``logs_written``, ``logs_dropped``, ``logs_skipped``, ``logs_write_errors``): the
row of the span recorder of this process on the same file when there is one (``run_start`` names its
start; the row is found by pid and start as the span writer finds it), else a row of its own.

When the file cannot be written, the batch is kept for the next try up to max_queue_size records
(the oldest are lost past it, counted), as the span writer does; a batch that fails for its
content is counted lost at once. Each kind of fault is warned about once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import sqlite3
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from otel_blackbox._config import BlackboxConfig
from otel_blackbox._spans.redact import redactor_for
from otel_blackbox._store.connection import connect_writer
from otel_blackbox._store.log_rows import LOG_COLUMNS, LogRowBuilder, LogSnapshot
from otel_blackbox.errors import StoreError

__all__ = ["LogWriter"]

logger = logging.getLogger("otel_blackbox")

_NOT_RETRYABLE = (sqlite3.IntegrityError, sqlite3.DataError, sqlite3.InterfaceError, sqlite3.ProgrammingError)
_CHUNK = 200  # rows a statement: 9 columns each, well under SQLite's parameter limit
_INSERT = f"INSERT INTO logs ({', '.join(LOG_COLUMNS)}) VALUES "
_ONE_ROW = "(" + ", ".join("?" * len(LOG_COLUMNS)) + ")"


def _zero() -> int:
    return 0


class LogWriter:
    """Owns one connection to the database and writes log rows through it."""

    def __init__(
        self,
        config: BlackboxConfig,
        *,
        run_start: Callable[[], int] | None = None,
        dropped: Callable[[], int] = _zero,
        skipped: Callable[[], int] = _zero,
        outside: Callable[[], int] = _zero,
    ) -> None:
        self.config = config
        self.pid = os.getpid()
        started = time.time_ns()
        self._run_start = run_start or (lambda: started)
        self._dropped = dropped
        self._skipped = skipped
        self._outside = outside  # records lost before they reached this writer (unreadable)
        self.rows = LogRowBuilder(redactor_for(config), self.pid)
        self.logs_written = 0
        self.write_errors = 0
        self._held: list[LogSnapshot] = []
        self._conn: sqlite3.Connection | None = None
        self._recorder_id: int | None = None
        self._recorded: tuple[int, ...] = ()
        self._failing = False
        self._warned: set[str] = set()

    def receive(self, snapshots: Iterable[LogSnapshot]) -> None:
        self._held.extend(snapshots)

    @property
    def pending(self) -> bool:
        return bool(self._held)

    def write_pending(self) -> bool:
        """Write what is held; True when it committed (or there was nothing to write)."""
        if not self._held:
            self.update_counts()
            return True
        batch, self._held = self._held, []
        error = self._write(batch)
        if error is None:
            return True
        if isinstance(error, _NOT_RETRYABLE):
            self.write_errors += len(batch)
        else:
            self._held = batch + self._held
            lost = max(0, len(self._held) - self.config.max_queue_size)
            if lost:
                self.write_errors += lost
                del self._held[:lost]  # the oldest
        return False

    def finish(self) -> None:
        """The end of the run: what is still held is lost, and counted."""
        self.write_errors += len(self._held)
        self._held.clear()
        self.update_counts()

    def skip(self, count: int = 1) -> None:
        """Records that could not be snapshotted or turned into rows: counted, warned about once."""
        self.write_errors += count
        self._warn_once("row", "otel-blackbox could not serialize a log record", exc_info=True)

    def update_counts(self) -> None:
        """Put the counts on the run's row when they changed since it was last written (and the
        file is open: counting never creates it)."""
        if self._conn is None or self._counts() == self._recorded:
            return
        counts = self._counts()
        try:
            self._update_recorder(self._conn, time.time_ns(), counts)
            self._recorded = counts
        except (sqlite3.Error, StoreError, OSError) as exc:
            self._fault(exc)

    def _counts(self, written: int | None = None) -> tuple[int, ...]:
        written = self.logs_written if written is None else written
        return (written, self._dropped(), self._skipped(), self.write_errors + self._outside())

    def _write(self, batch: list[LogSnapshot]) -> Exception | None:
        try:
            conn = self._connection()
            now = time.time_ns()
            rows = []
            for snapshot in batch:
                try:
                    rows.append(self.rows.row(snapshot, now))
                except Exception:  # one bad record does not cost the batch
                    self.skip()
            conn.execute("BEGIN IMMEDIATE")
            try:
                for first in range(0, len(rows), _CHUNK):
                    chunk = rows[first : first + _CHUNK]
                    params: list[Any] = [value for row in chunk for value in row]
                    conn.execute(_INSERT + ", ".join([_ONE_ROW] * len(chunk)), params)
                counts = self._counts(written=self.logs_written + len(rows))
                self._update_recorder(conn, now, counts)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            self.logs_written += len(rows)
            self._recorded = counts
            if self._failing:
                self._failing = False
                logger.info("otel-blackbox is writing log records to %s again", self.config.db_path)
            return None
        except (sqlite3.Error, StoreError, OSError) as exc:
            self._fault(exc)
            return exc

    def _fault(self, exc: Exception) -> None:
        self._failing = True
        self._warn_once(
            "write",
            f"otel-blackbox could not write log records to {self.config.db_path} ({exc}); the agent "
            "is unaffected, records are held for a retry and counted if lost",
        )
        self.close()

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = connect_writer(Path(self.config.db_path), busy_timeout_ms=self.config.busy_timeout_ms)
            try:
                self._recorder_id = self._find_or_insert_recorder(conn)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def _find_or_insert_recorder(self, conn: sqlite3.Connection) -> int:
        """The run's row: the span recorder's of this process and file (by pid and start, as the span
        writer finds it), made here if no span was written yet; looked up inside the transaction
        that would insert it, so the two writers never make two rows for one run."""
        started_ns = self._run_start()
        conn.execute("BEGIN IMMEDIATE")
        try:
            found = conn.execute(
                "SELECT id FROM recorders WHERE pid = ? AND started_ns = ?", (self.pid, started_ns)
            ).fetchone()
            if found is None:
                cursor = conn.execute(
                    "INSERT INTO recorders (run_id, pid, started_ns, last_seen_ns) VALUES (?, ?, ?, ?)",
                    (secrets.token_hex(8), self.pid, started_ns, time.time_ns()),
                )
                recorder_id = cursor.lastrowid
            else:
                recorder_id = found[0]
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        assert recorder_id is not None
        return int(recorder_id)

    def _update_recorder(self, conn: sqlite3.Connection, now: int, counts: tuple[int, ...]) -> None:
        conn.execute(
            "UPDATE recorders SET logs_written = ?, logs_dropped = ?, logs_skipped = ?, "
            "logs_write_errors = ?, last_seen_ns = max(last_seen_ns, ?) WHERE id = ?",
            (*counts, now, self._recorder_id),
        )

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None

    def _warn_once(self, key: str, message: str, **kwargs: Any) -> None:
        if key not in self._warned:
            self._warned.add(key)
            logger.warning(message, **kwargs)
