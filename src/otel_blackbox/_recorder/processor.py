"""BlackboxSpanProcessor: every span on disk from the moment it starts.

``on_start`` and ``on_end`` run on the agent's thread and only hand the span to the queue
(span_queue.py, which owns every rule of it, as BatchSpanProcessor's worker does): ``on_start``
registers the live span; ``on_end`` has its snapshot taken (plain data, _store/snapshot.py: under a
microsecond while the span is still in the CPU's caches) and queued, bounded. A shipper thread
(shipper.py) hands what is queued to the writer: by default a companion process (process_sink.py,
_store/writer_process.py) that does the redaction and SQLite work outside the
agent's interpreter; an in-thread writer where no process can be started or ``writer="thread"``
asks for it. It also writes an open row for each registered span still running. Nothing starts
until the first span arrives.

The queue is bounded by count (``max_queue_size``) and by an estimate of the memory it holds
(``max_queue_mb``); the shipper by a share of the interpreter (``shipper_share``). Past either, spans
are dropped and counted, never waited for: the agent comes first.

With ``capture_http`` on, it also records each HTTP exchange of the process as a span of its own
(capture.py); the hook and the provider translations are imported only then.
"""

from __future__ import annotations

import importlib
import logging
import sys
import threading
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from otel_blackbox._config import BlackboxConfig
from otel_blackbox._playback import active
from otel_blackbox._recorder import process_runs
from otel_blackbox._recorder.lifecycle import EXIT_FLUSH_TIMEOUT_S, Recorder, call_at_exit
from otel_blackbox._recorder.shipper import Shipper
from otel_blackbox._recorder.sinks import InThreadSink
from otel_blackbox._recorder.span_queue import SpanQueue
from otel_blackbox._spans.semconv import ATTR_SESSION_MODE
from otel_blackbox._store.snapshot import Snapshotter

if TYPE_CHECKING:
    from otel_blackbox._recorder.capture import HttpCapture

__all__ = ["BlackboxSpanProcessor"]

logger = logging.getLogger("otel_blackbox")


class BlackboxSpanProcessor(Recorder, SpanProcessor):
    """Records spans to a local SQLite file when they start, and replaces the row when they end.

    Args:
        db_path: the database file; default ``OTEL_BLACKBOX_DB`` or ``./blackbox.db``.
        config: every other setting (``BlackboxConfig.from_env()`` when omitted); ``db_path`` wins
            over ``config.db_path`` when both are given.
    """

    def __init__(self, db_path: str | Path | None = None, *, config: BlackboxConfig | None = None) -> None:
        self._set_up(db_path, config)
        self._capture: HttpCapture | None = None
        if self.config.capture_http and not self.disabled:
            self._capture = self._start_capture()

    def _start_capture(self) -> HttpCapture | None:
        try:
            # Imported by name, on this path only: it loads the HTTP hook, httpcore and the provider
            # translations, which neither the package nor the analysis side may pull in by import
            # (tests/integration/test_boundaries.py walks every import statement reachable from the package).
            capture = importlib.import_module("otel_blackbox._recorder.capture")
            started: HttpCapture = capture.HttpCapture(self).start()
            return started
        except Exception:  # the spans are still recorded; the host's traffic is untouched
            logger.warning("otel-blackbox: HTTP capture could not start; spans are recorded", exc_info=True)
            return None

    def _new_writer(self) -> None:
        """A fresh queue and shipper, started with the first span (lazily: creating a processor
        starts no thread and no process)."""
        snapshotter = Snapshotter()
        self._queue = SpanQueue(self.config, snapshotter, threading.Event())
        self._writer = Shipper(self.config, self._queue, self.dropped_count, snapshotter)
        self._started = False
        # Log records recorded by this process to the same file join this run (process_runs.py).
        process_runs.register(self.config.db_path, self._writer.started_ns)

    def _start(self) -> None:
        with self._start_lock:
            if not self._started and not self._shutdown:
                self._writer.start()
                self._started = True
                _flush_at_multiprocessing_exit(self)

    # -- SpanProcessor (caller's thread: append only) -----------------------------------------------

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if self._shutdown or self.disabled:
            return
        if active.mode is not None:  # a record / replay / fork session is running here
            span.set_attribute(ATTR_SESSION_MODE, active.mode)
        if not self._started:
            self._start()
        self._queue.started(span)

    def on_end(self, span: ReadableSpan) -> None:
        if self._shutdown or self.disabled:
            return
        if not self._started:
            self._start()
        self._queue.ended(span)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Write everything recorded so far (open spans as open rows). False on timeout or write failure."""
        if self._shutdown or self.disabled or not self._writer.thread.is_alive():
            return not self._queue.queued
        marker = self._queue.flush()
        if not marker.done.wait(max(timeout_millis, 0) / 1000):
            return False
        return marker.ok

    def shutdown(self) -> None:
        if self._shutdown:
            return
        self._shutdown = True
        if self._capture is not None:
            try:
                self._capture.stop()
            except Exception:  # never raise into the host
                logger.warning("otel-blackbox: could not stop HTTP capture", exc_info=True)
        if self.disabled or not self._started:
            return
        if not self._writer.stop(EXIT_FLUSH_TIMEOUT_S * 6):
            logger.warning("otel-blackbox writer did not finish within %ss", EXIT_FLUSH_TIMEOUT_S * 6)

    # -- counters ----------------------------------------------------------------------------------

    def dropped_count(self) -> int:
        """Spans lost because the queue was full (their final row was never written)."""
        return self._queue.dropped

    @property
    def open_rows_dropped(self) -> int:
        """Span starts not queued because the queue was full (the span still gets its final row)."""
        return self._queue.open_rows_dropped

    @property
    def spans_written(self) -> int:
        return self._writer.spans_written

    @property
    def write_errors(self) -> int:
        """Spans lost because the database could not be written (or the span serialized)."""
        return self._writer.write_errors

    @property
    def writer_mode(self) -> str | None:
        """Where rows are written: "process", "thread" (asked for, or the fallback), None before the
        first span."""
        if self._started:
            self._writer.ready.wait(EXIT_FLUSH_TIMEOUT_S)
        return self._writer.mode

    @property
    def writer_pid(self) -> int | None:
        """The writer process's pid (None in thread mode, or before the first span)."""
        if self._started:
            self._writer.ready.wait(EXIT_FLUSH_TIMEOUT_S)
        return self._writer.pid

    # -- process events ----------------------------------------------------------------------------

    def _before_fork(self) -> None:
        # Wait for the writer to finish its current SQLite call, or the shipper to finish starting
        # the writer process (bounded: never hang the fork). Then the child inherits no connection
        # in the middle of a call and no pipe half set up.
        self._fork_locks = []
        lock = self._writer.start_lock
        if lock.acquire(timeout=EXIT_FLUSH_TIMEOUT_S):
            self._fork_locks.append(lock)
        sink = self._writer.sink
        if isinstance(sink, InThreadSink) and sink.io_lock.acquire(timeout=EXIT_FLUSH_TIMEOUT_S):
            self._fork_locks.append(sink.io_lock)

    def _after_fork_in_parent(self) -> None:
        for lock in getattr(self, "_fork_locks", ()):
            lock.release()
        self._fork_locks = []

    def _after_fork_in_child(self) -> None:
        # The parent's queue, thread, writer process and SQLite connection belong to the parent:
        # let go of its pipes and start afresh (with the child's first span).
        self._writer.abandon()
        self._fork_locks = []
        self._start_lock = threading.Lock()
        self._new_writer()  # a new queue: its counts start at zero

    def _at_exit(self) -> None:
        # A clean exit or an unhandled exception: flush, even if nobody calls shutdown().
        if not self._shutdown and not self.disabled:
            self.force_flush(int(EXIT_FLUSH_TIMEOUT_S * 1000))


def _flush_at_multiprocessing_exit(processor: BlackboxSpanProcessor) -> None:
    """A multiprocessing worker started by fork or forkserver ends with os._exit: atexit never runs,
    but multiprocessing's own finalizers do. Registered per process, with its first span."""
    util = sys.modules.get("multiprocessing.util")
    if util is not None:
        util.Finalize(None, call_at_exit, args=(weakref.ref(processor), "_at_exit"), exitpriority=100)
