"""The intake: decoded spans from the handler threads, written by one writer thread.

Handler threads ``admit`` the spans of a request into a queue bounded by ``max_queue_size`` spans
(the spans queued plus those the writer holds for a retry, none of them committed yet). A request
is taken whole or refused whole: one that does not fit now raises QueueFull (answered 503 with
Retry-After: the exporter sends it again), one larger than the whole queue raises LargerThanQueue
(413: it never could fit). Nothing admitted is dropped for want of room.

The writer thread owns the one ``SpanWriter`` of the process (one run): woken by each request, or
every flush interval, it takes everything queued and writes it in one transaction, as the
recorder's in-thread writer does (check_file, write_pending, heartbeat, maintain). Each request
gets a ``Ticket``, set once its spans are committed, so that it is answered 200 only then; a
batch the database refused is held and tried again next tick, its tickets left waiting (unless the
writer had to let some of it go: then they are told to send it again).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from otel_blackbox._config import BlackboxConfig
from otel_blackbox._store.snapshot import STATUS, Definition, Snapshot
from otel_blackbox._store.writer import SpanWriter

__all__ = ["Intake", "IntakeClosed", "LargerThanQueue", "QueueFull", "Ticket"]

logger = logging.getLogger("otel_blackbox")

_STOP_RETRY_S = 10.0  # at shutdown, how long a refused final batch is tried again


class IntakeClosed(RuntimeError):
    """The receiver is shutting down: nothing more is admitted."""


class QueueFull(RuntimeError):
    """The request's spans do not fit the queue now: none of them is taken."""


class LargerThanQueue(RuntimeError):
    """The request holds more spans than the whole queue: it is never taken."""


@dataclass
class Ticket:
    """The spans of one request, until the writer has committed them (or lost them)."""

    spans: int
    done: threading.Event = field(default_factory=threading.Event)
    error: str | None = None  # set with ``done`` when the spans could not be stored
    retryable: bool = True  # whether sending them again may help


@dataclass
class _Entry:
    definitions: list[Definition]
    finals: list[Snapshot]
    opens: list[Snapshot]
    ticket: Ticket | None


class Intake:
    """The queue and the writer thread of one ``serve`` process."""

    def __init__(self, config: BlackboxConfig, *, source: str) -> None:
        self.config = config
        # Held from decoding a request to admitting it: a resource or scope is defined by the
        # request that saw it first, and that definition must reach the writer before any span
        # of another request that refers to it.
        self.order = threading.Lock()
        self._lock = threading.Lock()  # the queue and the counts
        self._entries: list[_Entry] = []
        self._in_flight = 0  # spans admitted and not committed (or lost) yet
        self._held: list[Ticket] = []  # the writer thread's: tickets of spans handed to the writer
        self._wake = threading.Event()
        self._closed = False
        self._warned: set[str] = set()
        self.committed = 0  # spans committed, a span sent again (or ending an open one) included
        self.lost = 0  # spans admitted that could not be stored
        self.writer = SpanWriter(config, source=source)
        self._thread = threading.Thread(target=self._run, name="otel-blackbox-serve-writer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    # -- the handler threads' side -----------------------------------------------------------------

    def admit(self, definitions: Sequence[Definition], snapshots: Sequence[Snapshot]) -> Ticket | None:
        """Queue every one of ``snapshots``, or none (QueueFull, LargerThanQueue); the definitions
        always go (a later request's spans may use them: the decoder sends each only once)."""
        limit = self.config.max_queue_size
        with self._lock:
            if self._closed:
                raise IntakeClosed("the receiver is shutting down")
            refusal: Exception | None = None
            if len(snapshots) > limit:
                refusal = LargerThanQueue(
                    f"the request holds {len(snapshots)} spans, more than the whole queue "
                    f"(OTEL_BLACKBOX_MAX_QUEUE_SIZE={limit}): send smaller batches or raise it"
                )
            elif self._in_flight + len(snapshots) > limit:
                refusal = QueueFull(
                    f"the queue is full ({self._in_flight} of {limit} spans waiting for the database, "
                    "OTEL_BLACKBOX_MAX_QUEUE_SIZE): nothing of the request was taken; send it again"
                )
            taken = () if refusal is not None else snapshots
            self._in_flight += len(taken)
            ticket = Ticket(len(taken)) if taken else None
            if definitions or taken:
                finals = [s for s in taken if s[STATUS] is not None]  # status None: still open
                opens = [s for s in taken if s[STATUS] is None]
                self._entries.append(_Entry(list(definitions), finals, opens, ticket))
        self._wake.set()
        if refusal is not None:
            raise refusal
        return ticket

    @property
    def stored(self) -> int:
        """Spans stored that were not stored before (a span sent again is not counted twice)."""
        return self.writer.rows_added

    # -- the writer thread -------------------------------------------------------------------------

    def stop(self, timeout_s: float = _STOP_RETRY_S + 5) -> bool:
        """Admit nothing more, write everything admitted, end the run; False if not done in time."""
        with self._lock:
            self._closed = True
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)
            return not self._thread.is_alive()
        self._finish()  # never started: nothing was admitted, but close what there is
        return True

    def _run(self) -> None:
        interval = self.config.flush_interval_ms / 1000
        while True:
            self._wake.wait(interval)
            self._wake.clear()
            with self._lock:
                closing = self._closed
            try:
                self._tick()
            except Exception as exc:  # a bug: the tickets waiting are answered 503, the writer goes on
                self._warn_once("tick", f"otel-blackbox serve: writer error: {type(exc).__name__}: {exc}")
            if closing:
                break
        self._finish()

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            logger.warning(message)

    def _tick(self) -> None:
        writer = self.writer
        writer.check_file()
        self._hand_over()
        if writer.pending:
            self._write()
        writer.heartbeat()
        writer.maintain()

    def _hand_over(self) -> None:
        """Everything queued, to the writer (its batch for the next transaction)."""
        with self._lock:
            entries, self._entries = self._entries, []
        writer = self.writer
        for entry in entries:
            writer.receive(entry.definitions, entry.finals, entry.opens)
            if entry.ticket is not None:
                self._held.append(entry.ticket)

    def _write(self) -> bool:
        """One transaction; the held tickets settled unless the batch is kept for a retry."""
        writer = self.writer
        errors = writer.write_errors
        error = writer.write_pending()
        if error is None:
            self._settle(None)
            return True
        if not writer.pending:  # not retryable (the batch's content): the writer counted it lost
            self._settle(f"the spans could not be stored: {error}", retryable=False)
        elif writer.write_errors > errors:
            # Past its memory bound (OTEL_BLACKBOX_MAX_QUEUE_MB) the writer let the oldest spans
            # held for the retry go: which requests they came from is not known, so every waiting
            # request is told to send its spans again (a span stored twice is one row).
            self._settle(
                f"the database refused the spans ({error}) and some could not be held; send them again",
                lost=writer.write_errors - errors,
            )
        return False

    def _settle(self, error: str | None, *, retryable: bool = True, lost: int | None = None) -> None:
        """Answer the held tickets; on an error, ``lost`` of their spans are lost (all, unless told)."""
        held, self._held = self._held, []
        spans = sum(ticket.spans for ticket in held)
        with self._lock:
            self._in_flight -= spans
            if error is None:
                self.committed += spans
            else:
                self.lost += spans if lost is None else lost
        for ticket in held:
            ticket.error, ticket.retryable = error, retryable
            ticket.done.set()

    def _finish(self) -> None:
        """The end of the run: the last batch written (tried again for a while if refused), closed."""
        writer = self.writer
        try:
            self._hand_over()
            deadline = time.monotonic() + _STOP_RETRY_S
            while writer.pending and not self._write() and time.monotonic() < deadline:
                time.sleep(min(0.2, self.config.flush_interval_ms / 1000))
            if self._held:
                self._settle("the receiver stopped before the database took the spans")
            writer.finish()
            writer.heartbeat()
        finally:
            writer.close()
