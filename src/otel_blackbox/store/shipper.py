"""The agent-side thread: takes what the processor queued and hands it to the writer.

Each tick (half the flush interval), or sooner when a batch's worth is queued, it delivers to a sink:

* the writer process (store.companion, the default): pickled down a pipe, so row building,
  redaction and SQLite run outside the agent's interpreter and never take its GIL;
* an in-thread writer (InThreadSink): the same SpanWriter, run right here. Used when asked
  (``writer="thread"``), where no process can be started, and if the process dies.

An ended span arrives as a snapshot (store.snapshot), taken by on_end on the agent's thread while
the span is still in its caches, which costs a fraction of taking it here later; a span started
since the last tick and still open gets an open snapshot here (its row shows it running). The
thread's CPU time is held to a share of the interpreter (store.share): past it, it rests, and the
processor's bounded queue sheds what the agent makes meanwhile.

Open rows are the promise, final rows the load. Open snapshots go first, in a delivery of their
own, before the share's rest and before any final row; final rows wait in the queue while the
writer process is a batch behind (``backed_up``), so the shipper never blocks on a full pipe; and
until the writer process is ready (a Python starting: 100 to 500 ms on a busy host), open rows
are written from this thread, so the first spans of a run are on disk within the flush interval
too.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, attach, set_value
from opentelemetry.sdk.trace import Span

from ..config import BlackboxConfig
from .share import InterpreterShare
from .snapshot import Definition, Snapshot, Snapshotter
from .writer import SpanWriter

__all__ = ["Backlog", "FlushMarker", "InThreadSink", "Shipper"]

logger = logging.getLogger("otel_blackbox")


class FlushMarker:
    """Queued by force_flush: set once everything queued before it is written (or failed)."""

    __slots__ = ("done", "ok")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.ok = True


class Backlog:
    """What waits for the shipper, filled by the processor on the agent's threads.

    ``ended``: (estimated bytes, item) pairs in the order they came: a final snapshot (a tuple), a
    span for the shipper to snapshot, or a FlushMarker. ``bytes``: the sum of their estimates, which
    bounds the queue (with its length). ``opens``: the spans started since the shipper last looked,
    by span id, each removed when it ends. ``shown_open``: the span ids given an open row and not
    ended yet: their ends are queued even past the bounds, so no row says "open" of a span that
    ended. ``urgent``: set by a flush or stop, which does not wait for the shipper's share of the
    interpreter.
    """

    __slots__ = ("bytes", "ended", "opens", "shown_open", "urgent")

    def __init__(self) -> None:
        self.ended: deque[tuple[int, Any]] = deque()
        self.opens: dict[int, Span] = {}
        self.shown_open: dict[int, bool] = {}
        self.bytes = 0
        self.urgent = threading.Event()


class SinkFailed(Exception):
    """The writer process is gone: the batch in hand was not delivered."""


class Sink(Protocol):
    mode: str
    pid: int | None
    failed: bool

    def deliver(
        self,
        definitions: list[Definition],
        finals: list[Snapshot],
        opens: list[Snapshot],
        markers: list[FlushMarker],
    ) -> None: ...

    def tick(self) -> None: ...

    def backed_up(self) -> bool:
        """The writer is a batch behind: hold final rows back (open rows still go)."""
        ...

    def stop(self, timeout_s: float) -> None: ...

    def counts(self) -> tuple[int, int]:
        """(spans written, spans lost in writing) so far."""
        ...

    def unconfirmed(self) -> int:
        """Final snapshots delivered and neither written nor counted lost (lost if the sink fails)."""
        ...


class InThreadSink:
    """The SpanWriter on the shipper's own thread."""

    mode = "thread"
    pid: int | None = None
    failed = False

    def __init__(
        self,
        config: BlackboxConfig,
        started_ns: int,
        dropped: Callable[[], int],
        outside: Callable[[], int],
        fresh_opens: Callable[[], tuple[list[Definition], list[Snapshot]]] | None = None,
    ) -> None:
        self.writer = SpanWriter(config, started_ns=started_ns, dropped=dropped)
        self._outside = outside
        # Between two transactions of a big batch: the open rows of spans started meanwhile.
        self._fresh_opens = fresh_opens
        # Held around all SQLite work; os.fork() takes it first, so a child never inherits a
        # connection (or SQLite's own mutexes) in the middle of a call.
        self.io_lock = threading.Lock()

    def deliver(
        self,
        definitions: list[Definition],
        finals: list[Snapshot],
        opens: list[Snapshot],
        markers: list[FlushMarker],
    ) -> None:
        writer = self.writer
        with self.io_lock:
            writer.outside_errors = self._outside()
            writer.check_file()
            writer.receive(definitions, finals, opens)
            error = writer.write_pending(self._between if self._fresh_opens is not None else None)
        for marker in markers:
            marker.ok = error is None
            marker.done.set()

    def tick(self) -> None:
        writer = self.writer
        with self.io_lock:
            writer.outside_errors = self._outside()
            writer.check_file()
            writer.write_pending()  # a batch held for a retry
            writer.heartbeat()
            writer.maintain()

    def _between(self) -> None:
        assert self._fresh_opens is not None
        definitions, opens = self._fresh_opens()
        if opens:
            self.writer.receive(definitions, (), opens)
            self.writer.write_opens()

    def backed_up(self) -> bool:
        return False  # it writes what it is given before it returns

    def stop(self, timeout_s: float) -> None:
        with self.io_lock:
            try:
                self.writer.write_pending()
                self.writer.finish()
                self.writer.heartbeat()
            finally:  # whatever failed above, the connection goes with the run
                self.writer.close()

    def counts(self) -> tuple[int, int]:
        return self.writer.spans_written, self.writer.write_errors

    def unconfirmed(self) -> int:
        return 0


class Shipper:
    """One per processor (and per process: a forked child starts its own)."""

    def __init__(
        self,
        config: BlackboxConfig,
        backlog: Backlog,
        wake: threading.Event,
        dropped: Callable[[], int],
        snapshotter: Snapshotter,
    ) -> None:
        self.config = config
        self.backlog = backlog
        self.wake = wake
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
        self.backlog.urgent.set()
        self.wake.set()
        self.thread.join(timeout_s)
        return not self.thread.is_alive()

    def abandon(self) -> None:
        """In a forked child: let go of the parent's writer process (its pipes), touching nothing else."""
        abandon = getattr(self.sink, "abandon", None)
        if abandon is not None:
            abandon()

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
            from .companion import ProcessSink

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
        backlog = self.backlog
        queue = backlog.ended
        snapshot = self._snapshotter.snapshot
        batch_size = self.config.max_batch_size
        while True:
            opens = self._take_opens()  # each batch: a long span waits for no backlog
            if opens:  # first, on their own: before the rest, whatever it lasts, and any final row
                self._deliver([], list(opens.values()), [])
            if not queue:
                break
            urgent = self._stopping or backlog.urgent.is_set()
            rest = self._share.rest_s(urgent=urgent)
            if rest > 0:
                self._rest(rest)
            if not urgent and self._sink().backed_up():
                break  # the writer's progress wakes this thread; meanwhile the queue bounds the rest
            finals: list[Snapshot] = []
            markers: list[FlushMarker] = []
            freed = 0
            for _ in range(batch_size):
                try:
                    size, item = queue.popleft()
                except IndexError:
                    break
                freed += size
                if item.__class__ is tuple:  # snapshotted on the agent's thread, as it ended
                    finals.append(item)
                elif item.__class__ is FlushMarker:
                    markers.append(item)
                else:  # a span left for this thread to snapshot (an HTTP capture span)
                    try:
                        finals.append(snapshot(item, is_open=False))
                    except Exception:  # not a recordable SDK span: count it, keep the batch
                        self._snapshot_failed(item)
            # The one writer of the count but for the agent's threads' +=: each a single read and
            # write with no call between (under the GIL, never interleaved).
            backlog.bytes -= freed
            self._deliver(finals, [], markers)
        if backlog.urgent.is_set():
            self._share.rest_s(urgent=True)  # the flush's own work leaves no debt either
            if not queue:
                backlog.urgent.clear()

    def _take_opens(self) -> dict[tuple[int, int], Snapshot]:
        """Open snapshots of the spans started since the last call and still running; each span is
        let go once looked at (its final snapshot comes from on_end), so the registry stays small."""
        registry = self.backlog.opens
        if not registry:
            return {}
        taken: dict[tuple[int, int], Snapshot] = {}
        shown, limit = self.backlog.shown_open, self.config.max_queue_size
        for key, span in list(registry.items()):  # a copy made without releasing the GIL
            registry.pop(key, None)
            try:
                # Marked first: an end from now on sees the mark; an end before it, the end time.
                marked = len(shown) < limit  # past it (spans never ended), their ends may drop
                if marked:
                    shown[key] = True
                if span.end_time is None:
                    found = self._snapshotter.snapshot(span, is_open=True)
                    taken[(found[0], found[1])] = found
                elif marked:
                    shown.pop(key, None)
            except Exception:
                self._snapshot_failed(span)
        return taken

    def _rest(self, seconds: float) -> None:
        """Past the budget: wait (without the GIL), still writing open rows every tick so a long
        span is on disk within the flush interval; cut short by a flush or stop."""
        self._share.rested_s += seconds
        deadline = time.monotonic() + seconds
        tick = self.config.flush_interval_ms / 2000
        urgent = self.backlog.urgent
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


def fail_markers(markers: Sequence[FlushMarker]) -> None:
    for marker in markers:
        marker.ok = False
        marker.done.set()
