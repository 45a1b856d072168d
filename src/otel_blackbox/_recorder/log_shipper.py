"""The queue of a BlackboxLogRecordProcessor and the thread that writes what is queued.

The queue's producer side runs on the agent's threads (``put``: a snapshot of plain data, an
append; no I/O, a lock only on the overload and skip paths, to keep the counts exact). It is bounded
as the span queue is, by count (``max_queue_size``) and by an estimate of the memory held
(``max_queue_mb``): past either, a record is dropped and counted (``dropped``). A record with no
span context is not queued at all (``skipped``).

The writer thread takes batches of at most ``max_batch_size`` every half flush interval (sooner
when a batch's worth is queued, or a flush waits), and writes them through a LogWriter (redaction
and rows there, off the agent's threads); its CPU time is held to the shipper's share of the
interpreter (cpu_share.py), as the span shipper's is.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from typing import Any

from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, attach, set_value

from otel_blackbox._config import BlackboxConfig
from otel_blackbox._recorder import process_runs
from otel_blackbox._recorder.cpu_share import InterpreterShare
from otel_blackbox._recorder.sinks import FlushMarker
from otel_blackbox._store.log_rows import LogSnapshot, log_queued_bytes, snapshot_log
from otel_blackbox._store.log_writer import LogWriter

__all__ = ["LogQueue", "LogShipper"]

logger = logging.getLogger("otel_blackbox")


class LogQueue:
    """One per processor and process (a forked child makes its own)."""

    def __init__(self, config: BlackboxConfig) -> None:
        self._max_records = config.max_queue_size
        self._max_bytes = int(config.max_queue_mb * 1024 * 1024)
        self._wake_at = config.max_batch_size
        self.wake = threading.Event()
        self.urgent = threading.Event()
        self.queued: deque[tuple[int, Any]] = deque()
        self.bytes = 0
        self.dropped = 0  # the queue was full
        self.skipped = 0  # no span context: not stored
        self.unreadable = 0  # not a log record this processor can read
        self._count_lock = threading.Lock()

    # -- the agent's threads -----------------------------------------------------------------------

    def put(self, record: Any) -> None:
        try:
            snapshot = snapshot_log(record)
        except Exception:
            with self._count_lock:
                self.unreadable += 1
            return
        if snapshot is None:
            with self._count_lock:
                self.skipped += 1
            return
        queue = self.queued
        if len(queue) >= self._max_records or self.bytes >= self._max_bytes:
            with self._count_lock:
                self.dropped += 1
            return
        size = log_queued_bytes(snapshot)
        self.bytes += size  # before the append: the writer subtracts only what it took
        queue.append((size, snapshot))
        if len(queue) >= self._wake_at and not self.wake.is_set():
            self.wake.set()

    def flush(self) -> FlushMarker:
        marker = FlushMarker()
        self.queued.append((0, marker))
        self.urgent.set()
        self.wake.set()
        return marker

    # -- the writer's thread -----------------------------------------------------------------------

    def take(self, batch_size: int) -> tuple[list[LogSnapshot], list[FlushMarker]]:
        queue = self.queued
        records: list[LogSnapshot] = []
        markers: list[FlushMarker] = []
        freed = 0
        for _ in range(batch_size):
            try:
                size, item = queue.popleft()
            except IndexError:
                break
            freed += size
            if item.__class__ is FlushMarker:
                markers.append(item)
            else:
                records.append(item)
        self.bytes -= freed
        return records, markers


class LogShipper:
    """The writer thread of one processor (and process: a forked child starts its own)."""

    def __init__(self, config: BlackboxConfig, queue: LogQueue) -> None:
        self.config = config
        self.queue = queue
        self._share = InterpreterShare(config.shipper_share)
        self._started_ns = time.time_ns()
        self.writer = LogWriter(
            config,
            run_start=lambda: process_runs.run_start(config.db_path, self._started_ns),
            dropped=lambda: queue.dropped,
            skipped=lambda: queue.skipped,
            outside=lambda: queue.unreadable,
        )
        self._stopping = False
        self._warned: set[str] = set()
        # Held around all SQLite work: os.fork() takes it first (the processor's _before_fork).
        self.io_lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, name="otel-blackbox-logs", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self, timeout_s: float) -> bool:
        """Write what is queued, close the file, end the thread. False if not in time."""
        self._stopping = True
        self.queue.urgent.set()
        self.queue.wake.set()
        self.thread.join(timeout_s)
        return not self.thread.is_alive()

    def _run(self) -> None:
        # Our own SQLite work must not show up as spans (or log records) of the agent.
        attach(set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
        tick = self.config.flush_interval_ms / 2000
        while True:
            self.queue.wake.wait(tick)
            self.queue.wake.clear()
            stopping = self._stopping
            try:
                self._ship(stopping)
            except Exception:  # the thread must survive anything: log and keep going
                self._warn_once("ship", "otel-blackbox log writer error; continuing", exc_info=True)
            if stopping:
                self._finish()
                return

    def _ship(self, stopping: bool) -> None:
        queue = self.queue
        while True:
            urgent = stopping or queue.urgent.is_set()
            rest = self._share.rest_s(urgent=urgent)
            if rest > 0 and not urgent:
                queue.urgent.wait(rest)  # cut short by a flush or a stop
                continue
            records, markers = queue.take(self.config.max_batch_size)
            ok = False
            try:
                with self.io_lock:
                    self.writer.receive(records)
                    ok = self.writer.write_pending()
            finally:
                for marker in markers:
                    marker.ok = ok
                    marker.done.set()
            if not queue.queued:
                queue.urgent.clear()
                return

    def _finish(self) -> None:
        try:
            with self.io_lock:
                self.writer.write_pending()
                self.writer.finish()
        except Exception:
            self._warn_once("stop", "otel-blackbox log writer did not stop cleanly", exc_info=True)
        finally:
            self.writer.close()
            for _, item in list(self.queue.queued):  # a flush queued after the stop: nothing waits
                if item.__class__ is FlushMarker:
                    item.done.set()

    def _warn_once(self, key: str, message: str, **kwargs: Any) -> None:
        if key not in self._warned:
            self._warned.add(key)
            logger.warning(message, **kwargs)
