"""The queue between the agent's threads and the shipper, and every rule of it.

The processor only hands spans over (``started``, ``ended``, ``flush``), as the OpenTelemetry SDK's
BatchSpanProcessor hands them to its worker; what is kept, dropped, snapshotted and taken, and when
the shipper is woken, is decided here. The producer side runs on the agent's threads: no I/O, and
no lock but on the overload path (to keep the drop counts exact across threads). The consumer side
(``take_opens``, ``take_batch``) runs on the shipper's thread alone.

``queued``: (estimated bytes, item) pairs in the order they came: a final snapshot (a tuple), a span
for the shipper to snapshot, or a FlushMarker. ``bytes``: the sum of their estimates, which bounds
the queue (with its length). ``opens``: the spans started since the shipper last looked, by span
id, each removed when it ends. ``shown_open``: the span ids given an open row and not ended yet:
their ends are queued even past the bounds (counted in ``kept_past_bounds``; at most one per
open row, so the queue holds at most twice its bounds), so no row says "open" of a span that ended.
``urgent``: set by a flush or stop, which does not wait for the shipper's share of the interpreter.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, Span

from otel_blackbox._config import BlackboxConfig
from otel_blackbox._recorder.sinks import FlushMarker
from otel_blackbox._store.snapshot import (
    DEFERRED_SPAN_BYTES,
    SPAN_ID,
    TRACE_ID,
    Snapshot,
    Snapshotter,
    queued_bytes,
)

__all__ = ["SpanQueue"]


class SpanQueue:
    """One per processor and process (a forked child makes its own)."""

    def __init__(self, config: BlackboxConfig, snapshotter: Snapshotter, wake: threading.Event) -> None:
        # Bounded by count and by an estimate of the memory held; the registry of spans started
        # since the shipper last looked, by the same count.
        self._max_spans = config.max_queue_size
        self._max_bytes = int(config.max_queue_mb * 1024 * 1024)
        self._wake_at = config.max_batch_size
        self._snapshot = snapshotter.snapshot
        self.wake = wake
        self.queued: deque[tuple[int, Any]] = deque()
        self.opens: dict[int, Span] = {}
        self.shown_open: dict[int, bool] = {}
        self.bytes = 0
        self.urgent = threading.Event()
        self.dropped = 0  # spans whose final row was never written: the queue was full
        self.open_rows_dropped = 0  # span starts not registered: the registry was full
        self.kept_past_bounds = 0  # ends queued over the bounds: their spans were on disk as open
        self._drop_lock = threading.Lock()

    # -- the agent's threads -----------------------------------------------------------------------

    def started(self, span: Span) -> None:
        opens = self.opens
        if len(opens) < self._max_spans:
            opens[span._context[1]] = span  # type: ignore[index]  # SpanContext: a tuple, [1] the span id
        else:
            with self._drop_lock:  # only on the overload path: keeps the count exact across threads
                self.open_rows_dropped += 1

    def ended(self, span: ReadableSpan) -> None:
        context = getattr(span, "_context", None)  # None: not an SDK span, let go once seen ended
        key: int = context[1] if context is not None else 0  # 0: never a valid span id
        if self.opens:
            self.opens.pop(key, None)
        # A span already on disk as open is never dropped: its row would say it is still running.
        shown_open = bool(self.shown_open) and self.shown_open.pop(key, False)
        queue = self.queued
        if len(queue) >= self._max_spans or self.bytes >= self._max_bytes:
            with self._drop_lock:
                if not shown_open:
                    self.dropped += 1
                    return
                self.kept_past_bounds += 1
        item: Any = span
        if span.__class__ is ReadableSpan:  # the SDK's: snapshot it now, while it is in the caches
            try:
                item = self._snapshot(span, is_open=False)
                size = queued_bytes(item)
            except Exception:  # the shipper tries again, and counts and reports the failure
                item, size = span, DEFERRED_SPAN_BYTES
        else:  # another kind (an HTTP capture span computes its attributes when first read)
            size = getattr(span, "queued_bytes", DEFERRED_SPAN_BYTES)
        self.bytes += size  # before the append: the shipper subtracts only what it took
        queue.append((size, item))
        if len(queue) >= self._wake_at and not self.wake.is_set():
            self.wake.set()

    def flush(self) -> FlushMarker:
        """A marker set once everything queued before it is written; the shipper is woken at once
        and does not rest on its share while the flush waits."""
        marker = FlushMarker()
        self.queued.append((0, marker))
        self.urgent.set()
        self.wake.set()
        return marker

    # -- the shipper's thread ----------------------------------------------------------------------

    def take_opens(self, failed: Callable[[Any], None]) -> dict[tuple[int, int], Snapshot]:
        """Open snapshots of the spans started since the last call and still running; each span is
        let go once looked at (its final snapshot comes from ``ended``), so the registry stays small."""
        registry = self.opens
        if not registry:
            return {}
        taken: dict[tuple[int, int], Snapshot] = {}
        shown, limit = self.shown_open, self._max_spans
        for key, span in list(registry.items()):  # a copy made without releasing the GIL
            registry.pop(key, None)
            try:
                # Marked first: an end from now on sees the mark; an end before it, the end time.
                marked = len(shown) < limit  # past it (spans never ended), their ends may drop
                if marked:
                    shown[key] = True
                if span.end_time is None:
                    found = self._snapshot(span, is_open=True)
                    taken[(found[TRACE_ID], found[SPAN_ID])] = found
                elif marked:
                    shown.pop(key, None)
            except Exception:
                failed(span)
        return taken

    def take_batch(
        self, batch_size: int, failed: Callable[[Any], None]
    ) -> tuple[list[Snapshot], list[FlushMarker]]:
        """Up to ``batch_size`` items, in order: final snapshots, and the flush markers among them."""
        queue = self.queued
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
                    finals.append(self._snapshot(item, is_open=False))
                except Exception:  # not a recordable SDK span: count it, keep the batch
                    failed(item)
        # The one writer of the count but for the agent's threads' +=: each a single read and
        # write with no call between (under the GIL, never interleaved).
        self.bytes -= freed
        return finals, markers
