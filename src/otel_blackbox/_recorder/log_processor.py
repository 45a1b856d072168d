"""BlackboxLogRecordProcessor: content sent as OpenTelemetry log records, kept beside its spans.

Instrumentations that send message content through the Logs API (openai-v2 with
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=EVENT_ONLY``, Google ADK, Strands) emit log
records that carry the trace and span ids of the model call's span. Added to the SDK's
LoggerProvider, this processor stores each such record in the ``logs`` table of the same database
as the spans; the read side attaches them to their span (``SpanRecord.logs``).

Same promise as the span processor: ``on_emit`` runs on the caller's thread, takes a snapshot of
plain data and queues it (bounded: a full queue drops and counts), and never blocks on I/O nor
raises. A record without a span context is counted as skipped and not stored. A writer thread
(log_shipper.py) redacts, bounds and writes, with a connection of its own; the counts go on the
run's row of ``recorders``: the span recorder's of this process and file when there is one.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from opentelemetry.sdk._logs import LogRecordProcessor

from otel_blackbox._config import BlackboxConfig
from otel_blackbox._recorder.lifecycle import EXIT_FLUSH_TIMEOUT_S, Recorder
from otel_blackbox._recorder.log_shipper import LogQueue, LogShipper

__all__ = ["BlackboxLogRecordProcessor"]

logger = logging.getLogger("otel_blackbox")


class BlackboxLogRecordProcessor(Recorder, LogRecordProcessor):
    """Records log records that name a span to the local SQLite file of the spans.

    Args:
        db_path: the database file; default ``OTEL_BLACKBOX_DB`` or ``./blackbox.db``.
        config: every other setting (``BlackboxConfig.from_env()`` when omitted); ``db_path`` wins
            over ``config.db_path`` when both are given.
    """

    def __init__(self, db_path: str | Path | None = None, *, config: BlackboxConfig | None = None) -> None:
        self._set_up(db_path, config)

    def _new_writer(self) -> None:
        """A fresh queue and writer thread, started with the first record (creating a processor
        starts no thread and opens no file)."""
        self._queue = LogQueue(self.config)
        self._writer = LogShipper(self.config, self._queue)
        self._started = False

    def _start(self) -> None:
        with self._start_lock:
            if not self._started and not self._shutdown:
                self._writer.start()
                self._started = True

    # -- LogRecordProcessor (caller's thread: append only) -----------------------------------------

    def on_emit(self, log_record: Any) -> None:
        """Queue the record (a ReadWriteLogRecord; in SDKs before 1.39 a LogData)."""
        if self._shutdown or self.disabled:
            return
        try:
            if not self._started:
                self._start()
            self._queue.put(log_record)
        except Exception:  # never raise into the host
            logger.debug("otel-blackbox: a log record could not be queued", exc_info=True)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Write every record queued so far. False on timeout or write failure."""
        if self._shutdown or self.disabled or not self._started or not self._writer.thread.is_alive():
            return not self._queue.queued
        marker = self._queue.flush()
        if not marker.done.wait(max(timeout_millis, 0) / 1000):
            return False
        return marker.ok

    def shutdown(self) -> None:
        if self._shutdown:
            return
        self._shutdown = True
        if self.disabled or not self._started:
            return
        if not self._writer.stop(EXIT_FLUSH_TIMEOUT_S * 6):
            logger.warning("otel-blackbox log writer did not finish within %ss", EXIT_FLUSH_TIMEOUT_S * 6)

    # -- counters ----------------------------------------------------------------------------------

    @property
    def logs_dropped(self) -> int:
        """Records lost because the queue was full."""
        return self._queue.dropped

    @property
    def logs_skipped(self) -> int:
        """Records not stored because they carry no span context."""
        return self._queue.skipped

    @property
    def logs_written(self) -> int:
        return self._writer.writer.logs_written

    @property
    def write_errors(self) -> int:
        """Records lost because the database could not be written (or the record read)."""
        return self._writer.writer.write_errors + self._queue.unreadable

    # -- process events ----------------------------------------------------------------------------

    def _before_fork(self) -> None:
        # Wait (bounded) for the writer to finish its current SQLite call: the child must not
        # inherit a connection in the middle of one.
        lock = self._writer.io_lock
        self._fork_locked = lock.acquire(timeout=EXIT_FLUSH_TIMEOUT_S)

    def _after_fork_in_parent(self) -> None:
        if getattr(self, "_fork_locked", False):
            self._writer.io_lock.release()
        self._fork_locked = False

    def _after_fork_in_child(self) -> None:
        # The parent's queue, thread and connection are the parent's: start afresh with the
        # child's first record (its counts start at zero, on a run of its own).
        self._fork_locked = False
        self._start_lock = threading.Lock()
        self._new_writer()

    def _at_exit(self) -> None:
        if not self._shutdown and not self.disabled and self._started:
            self.force_flush(int(EXIT_FLUSH_TIMEOUT_S * 1000))
