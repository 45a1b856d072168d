"""The agent-side thread: takes what the processor queued and hands it to the writer.

Each tick (half the flush interval), or sooner when a batch's worth is queued, it delivers to a sink:

* the writer process (process_sink.py, the default): pickled down a pipe, so row building,
  redaction and SQLite run outside the agent's interpreter and never take its GIL;
* an in-thread writer (InThreadSink): the same SpanWriter, run right here. Used when asked
  (``writer="thread"``), where no process can be started, and if the process dies.

An ended span arrives as a snapshot (store.snapshot), taken by on_end on the agent's thread while
the span is still in its caches, which costs a fraction of taking it here later; a span started
since the last tick and still open gets an open snapshot here (its row shows it running). The
thread's CPU time is held to a share of the interpreter (cpu_share.py): past it, it rests, and the
processor's bounded queue sheds what the agent makes meanwhile.

Open rows are the promise, final rows the load. Open snapshots go first: with the batch of final
rows that goes at once (the writer commits them ahead of it), or in a delivery of their own before
the share's rest or while final rows wait; final rows wait in the queue while the writer process
is a batch behind (``backed_up``), so the shipper never blocks on a full pipe; and
until the writer process is ready (a Python starting: 100 to 500 ms on a busy host), open rows
are written from this thread, so the first spans of a run are on disk within the flush interval
too.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, attach, set_value

from otel_blackbox._config import BlackboxConfig
from otel_blackbox._recorder.cpu_share import InterpreterShare
from otel_blackbox._recorder.process_sink import ProcessSink
from otel_blackbox._recorder.sinks import FlushMarker, InThreadSink, Sink, SinkFailed
from otel_blackbox._recorder.span_queue import SpanQueue
from otel_blackbox._store.snapshot import Definition, Snapshot, Snapshotter

__all__ = ["Shipper"]

logger = logging.getLogger("otel_blackbox")


class Shipper:
    """One per processor (and per process: a forked child starts its own)."""

    def __init__(
        self,
        config: BlackboxConfig,
        queue: SpanQueue,
        dropped: Callable[[], int],
        snapshotter: Snapshotter,
    ) -> None:
        self.config = config
        self.queue = queue
        self.wake = queue.wake
        self._share = InterpreterShare(config.shipper_share)
        self._dropped = dropped
        self._started_ns = time.time_ns()
        self._snapshotter = snapshotter  # the processor's: one numbering of resources and scopes
        self.outside_errors = 0  # spans that could not be snapshotted, or were lost with a dead writer
        self._warned: set[str] = set()
        self._resend_definitions = False
        self._stopping = False
        self.sink: Sink | None = None
        self.ready = threading.Event()  # set once the sink is chosen (and the process started)
        # Taken by os.fork() (processor._before_fork) while a sink is being made: a child must not
        # inherit a pipe half set up.
        self.start_lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, name="otel-blackbox-shipper", daemon=True)

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        self.thread.start()

    def stop(self, timeout_s: float) -> bool:
        """Deliver what is queued, let the writer finish, end the thread. False if not in time."""
        self._stopping = True
        self._stop_timeout_s = timeout_s
        self.queue.urgent.set()
        self.wake.set()
        self.thread.join(timeout_s)
        return not self.thread.is_alive()

    def abandon(self) -> None:
        """In a forked child: let go of the parent's writer process (its pipes), touching nothing else."""
        abandon = getattr(self.sink, "abandon", None)
        if abandon is not None:
            abandon()

    @property
    def started_ns(self) -> int:
        """When the run began: with the agent's pid, what names its row of ``recorders``."""
        return self._started_ns

    @property
    def mode(self) -> str | None:
        return self.sink.mode if self.sink is not None else None

    @property
    def pid(self) -> int | None:
        return self.sink.pid if self.sink is not None else None

    @property
    def spans_written(self) -> int:
        return self.sink.counts()[0] if self.sink is not None else 0

    @property
    def write_errors(self) -> int:
        return (self.sink.counts()[1] if self.sink is not None else 0) + self.outside_errors

    def _run(self) -> None:
        # Our own I/O (SQLite here, the pipe, the process start) must not show up as spans of the agent.
        attach(set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
        with self.start_lock:
            self.sink, bridged = self._open_sink()
        self.ready.set()
        if bridged:  # on disk already: the writer process learns of them and of their definitions
            self._resend_definitions = True
            self._deliver([], bridged, [])
        tick = self.config.flush_interval_ms / 2000
        self.wake.set()  # what was started while the sink was made is overdue: no tick's wait
        while True:
            self.wake.wait(tick)
            self.wake.clear()
            stopping = self._stopping
            try:
                self._ship()
                self._sink().tick()
            except Exception:  # the shipper must survive anything: log and keep going
                self._warn_once("shipper", "otel-blackbox writer error; continuing", exc_info=True)
            if stopping:
                try:
                    self._sink().stop(getattr(self, "_stop_timeout_s", 30.0))
                except Exception:
                    self._warn_once("stop", "otel-blackbox writer did not stop cleanly", exc_info=True)
                return

    def _open_sink(self) -> tuple[Sink, list[Snapshot]]:
        """The writer, and the open snapshots written from this thread while the process started."""
        if self.config.writer != "process":
            return self._in_thread_sink(), []
        bridge: InThreadSink | None = None
        bridged: dict[tuple[int, int], Snapshot] = {}
        try:
            # Imported here: the thread writer never loads the process machinery.
            sink = ProcessSink.start(
                self.config, self._started_ns, self._dropped, lambda: self.outside_errors, self.wake
            )
            # Until it is ready, the open rows due meanwhile are written here, each tick.
            while not sink.wait_ready(self.config.flush_interval_ms / 2000):
                opens = self._take_opens()
                if opens:
                    if bridge is None:
                        bridge = self._in_thread_sink()
                        bridge.writer.leave_warnings()  # the writer process warns of the same file
                    bridge.deliver(self._snapshotter.take_definitions(), [], list(opens.values()), [])
                    bridged.update(opens)
            if bridge is not None:
                bridge.writer.close()
            return sink, list(bridged.values())
        except Exception as exc:
            logger.warning(
                "otel-blackbox: the writer process could not be started (%s); "
                "writing from a thread of this process instead",
                exc,
            )
        if bridge is not None:  # it leaves warnings to the process: a writer of its own instead
            bridge.writer.close()
            self._resend_definitions = True  # the bridge took them
        return self._in_thread_sink(), []

    def _in_thread_sink(self) -> InThreadSink:
        return InThreadSink(
            self.config, self._started_ns, self._dropped, lambda: self.outside_errors, self._fresh_opens
        )

    def _fresh_opens(self) -> tuple[list[Definition], list[Snapshot]]:
        opens = self._take_opens()
        if not opens:
            return [], []
        return self._snapshotter.take_definitions(), list(opens.values())

    def _sink(self) -> Sink:
        """The sink, replaced by an in-thread writer if the writer process died."""
        sink = self.sink
        assert sink is not None
        if sink.failed:
            lost = sink.unconfirmed()
            self.outside_errors += lost
            logger.warning(
                "otel-blackbox: the writer process exited unexpectedly (%d spans in it lost); "
                "writing from a thread of this process instead",
                lost,
            )
            written, errors = sink.counts()
            self.sink = replacement = self._in_thread_sink()
            # The run goes on: its counts (and its recorders row) carry on from the process's.
            replacement.writer.spans_written, replacement.writer.write_errors = written, errors
            self._resend_definitions = True  # the new writer knows no resource or scope yet
            return replacement
        return sink

    # -- shipping --------------------------------------------------------------------------------

    def _ship(self) -> None:
        """Deliver everything queued right now, in batches of at most max_batch_size spans, within
        the shipper's share of the interpreter (resting past it, unless a flush or stop waits)."""
        queue = self.queue
        batch_size = self.config.max_batch_size
        while True:
            opens = self._take_opens()  # each batch: a long span waits for no backlog
            if not queue.queued:
                if opens:
                    self._deliver([], list(opens.values()), [])
                break
            urgent = self._stopping or queue.urgent.is_set()
            rest = self._share.rest_s(urgent=urgent)
            if rest > 0:
                if opens:  # on their own, before the rest, whatever it lasts
                    self._deliver([], list(opens.values()), [])
                    opens = {}
                self._rest(rest)
            if not urgent and self._sink().backed_up():
                if opens:  # on their own: the final rows wait, they do not
                    self._deliver([], list(opens.values()), [])
                break  # the writer's progress wakes this thread; meanwhile the queue bounds the rest
            finals, markers = queue.take_batch(batch_size, self._snapshot_failed)
            # One delivery: the writer commits the open rows first (apart from a big batch), and a
            # message less is a wake-up less for the writer and for this process's reader thread.
            self._deliver(finals, list(opens.values()), markers)
        if queue.urgent.is_set():
            self._share.rest_s(urgent=True)  # the flush's own work leaves no debt either
            if not queue.queued:
                queue.urgent.clear()

    def _take_opens(self) -> dict[tuple[int, int], Snapshot]:
        return self.queue.take_opens(self._snapshot_failed)

    def _rest(self, seconds: float) -> None:
        """Past the budget: wait (without the GIL), still writing open rows every tick so a long
        span is on disk within the flush interval; cut short by a flush or stop."""
        self._share.rested_s += seconds
        deadline = time.monotonic() + seconds
        tick = self.config.flush_interval_ms / 2000
        urgent = self.queue.urgent
        while not self._stopping and not urgent.wait(min(tick, max(0.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                return
            opens = self._take_opens()
            if opens:
                self._deliver([], list(opens.values()), [])

    def _snapshot_failed(self, item: Any) -> None:
        self.outside_errors += 1
        name = getattr(item, "name", "?")
        self._warn_once("row", f"otel-blackbox could not serialize span {name!r}", exc_info=True)

    def _deliver(self, finals: list[Snapshot], opens: list[Snapshot], markers: list[FlushMarker]) -> None:
        definitions = self._snapshotter.take_definitions()
        while True:
            sink = self._sink()
            if self._resend_definitions:
                self._resend_definitions = False
                definitions = self._snapshotter.all_definitions()
            try:
                sink.deliver(definitions, finals, opens, markers)
                return
            except SinkFailed:
                # Nothing of this batch reached the process: the in-thread writer that takes over
                # gets it, with every resource and scope it refers to.
                continue

    def _warn_once(self, key: str, message: str, **kwargs: Any) -> None:
        if key not in self._warned:
            self._warned.add(key)
            logger.warning(message, **kwargs)
