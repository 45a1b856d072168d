"""Where the shipper delivers: the sink protocol, the in-thread sink (the SpanWriter run on the
shipper's own thread), and the flush markers a sink settles once what came before them is written.

The other sink, the writer process, is process_sink.py.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Protocol

from otel_blackbox._config import BlackboxConfig
from otel_blackbox._store.snapshot import Definition, Snapshot
from otel_blackbox._store.writer import SpanWriter

__all__ = ["FlushMarker", "InThreadSink", "Sink", "SinkFailed", "fail_markers"]


class FlushMarker:
    """Queued by force_flush: set once everything queued before it is written (or failed)."""

    __slots__ = ("done", "ok")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.ok = True


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
        """The writer is behind (a batch, the writer process): hold final rows back (open rows go)."""
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


def fail_markers(markers: Sequence[FlushMarker]) -> None:
    for marker in markers:
        marker.ok = False
        marker.done.set()
