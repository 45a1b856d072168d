"""The writer process: reads batches of span snapshots from its stdin and writes them to SQLite.

Started by the agent (_recorder.process_sink) and fed by its shipper thread. A thread of its own reads
the pipe as fast as it fills (the shipper bounds what it sends ahead of the writer's progress), so
open rows that arrive while a batch of final rows or a step of eviction is being written are
committed after the chunk or step at hand, not after them all. It outlives the agent only
as long as it takes to write what it received: at the end of its stdin (the agent stopped it,
exited, or was killed) it records that moment as the run's last sign of life (open spans are shown
to end there), writes what it holds and exits. Its own log lines go back to the agent, which logs
them under the ``otel_blackbox`` logger as if they were its own.

Imports neither OpenTelemetry nor anything of the package beyond the store.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
import traceback
from collections import deque
from typing import Any

from otel_blackbox._store.frames import FrameReader, encode, write_all
from otel_blackbox._store.writer import SpanWriter

__all__ = ["main"]

_READ_SIZE = 1 << 20
_LAST_WRITE_S = 5.0  # after the agent is gone, how long to keep trying a locked or failing file
_TERM_GRACE_S = 3.0  # after SIGTERM, how long to keep serving the agent before exiting

_UP = 1  # stdout: the pipe back to the agent


def _send(message: tuple[Any, ...]) -> None:
    with contextlib.suppress(OSError):  # the agent is gone: nobody to tell
        write_all(_UP, encode(message))


class _ToAgent(logging.Handler):
    """Log lines go back to the agent's logger."""

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.exc_info:
            text += "\n" + "".join(traceback.format_exception(*record.exc_info)).rstrip()
        _send(("log", record.levelno, text))


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the agent's Ctrl-C is the agent's to handle
    if hasattr(signal, "SIGXFSZ"):  # past a file size limit a write fails (EFBIG) rather than kill us
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        os.setsid()  # out of the agent's process group: signals to the group are not for us
    logger = logging.getLogger("otel_blackbox")
    logger.addHandler(_ToAgent())
    logger.setLevel(logging.INFO)
    logger.propagate = False
    loop = _Loop()
    signal.signal(signal.SIGTERM, loop.terminate)
    try:
        loop.run()
    finally:  # an error that ends the loop still closes the connection (run() closes it otherwise)
        if loop.writer is not None:
            loop.writer.close()


class _Inbox:
    """What the agent sent, read off the pipe as it comes by a thread of its own: the pipe never
    backs up behind a long transaction. Bounded by the shipper, which sends no more final rows
    while a batch's worth is unconfirmed (_recorder.process_sink)."""

    def __init__(self) -> None:
        self.messages: deque[tuple[Any, ...]] = deque()
        self.arrived = threading.Event()
        self.ended = False  # the pipe ended: the agent stopped us, exited, or was killed
        self.garbled: Exception | None = None
        self._thread = threading.Thread(target=self._read, name="otel-blackbox-writer-inbox", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        frames = FrameReader()
        try:
            while True:
                try:
                    data = os.read(0, _READ_SIZE)
                except OSError:
                    data = b""
                if not data:
                    break
                self.messages.extend(frames.feed(data))
                self.arrived.set()
        except Exception as exc:  # a garbled message: nothing after it can be trusted
            self.garbled = exc
        self.ended = True
        self.arrived.set()

    def take(self) -> list[tuple[Any, ...]]:
        taken = []
        while self.messages:
            taken.append(self.messages.popleft())
        return taken


class _Loop:
    """Write what the agent sent, answer; until the agent is gone or says stop."""

    def __init__(self) -> None:
        self.inbox = _Inbox()
        self.writer: SpanWriter | None = None
        self.agent_pid = os.getppid()
        self.dropped = 0  # spans the agent dropped (its queue was full)
        self.tick = 0.1
        self.stop = False
        self.term_deadline: float | None = None
        self.flushes: list[int] = []  # flushes whose batches are received and not yet written
        self._told = (0, 0)  # the counts of the last progress sent

    def terminate(self, *_: object) -> None:
        """SIGTERM: keep serving the agent a moment (it may be flushing on its own SIGTERM), then go."""
        if self.term_deadline is None:
            self.term_deadline = time.monotonic() + _TERM_GRACE_S

    def run(self) -> None:
        inbox = self.inbox
        while True:
            inbox.arrived.wait(self.tick)
            inbox.arrived.clear()
            batches = self._take()
            writer = self.writer
            if self._agent_gone():
                if writer is not None:
                    _last_write(writer, time.time_ns())
                return
            if writer is None:
                continue
            due, self.flushes = self.flushes, []  # those received from now on wait for the next write
            writer.check_file()
            error = writer.write_pending(self._between)
            writer.heartbeat()
            writer.maintain(self._between)
            counts = (writer.spans_written, writer.write_errors, error is None)
            if batches or counts[:2] != self._told:
                self._told = counts[:2]
                _send(("progress", *counts, None))
            for flush_id in due:
                _send(("ack", *counts, flush_id))
            if self.stop:
                writer.write_pending()  # what came with the stop
                writer.finish()
                writer.heartbeat()
                writer.close()
                counts = (writer.spans_written, writer.write_errors, True)
                for flush_id in self.flushes:
                    _send(("ack", *counts, flush_id))
                _send(("stopped", *counts, None))
                return
            if writer.pending or self.flushes:  # taken in between two transactions: now, not a tick later
                inbox.arrived.set()

    def _between(self) -> None:
        """Between two chunks of a long write or two steps of eviction: take in what arrived (the
        writer commits its open rows then), and tell the agent how far the writing is when that
        moved (its shipper sends more as the count goes up)."""
        writer = self.writer
        assert writer is not None
        self._take()
        counts = (writer.spans_written, writer.write_errors)
        if counts != self._told:
            self._told = counts
            _send(("progress", *counts, True, None))

    def _take(self) -> int:
        """Take in what the agent sent: the number of batches (their flushes join ``flushes``)."""
        if self.inbox.garbled is not None:
            raise self.inbox.garbled
        batches = 0
        for message in self.inbox.take():
            kind = message[0]
            if kind == "batch" and self.writer is not None:
                _, definitions, finals, opens, (self.dropped, outside), flush_id = message
                self.writer.receive(definitions, finals, opens)
                self.writer.outside_errors = outside
                batches += 1
                if flush_id is not None:
                    self.flushes.append(flush_id)
            elif kind == "config":
                _, config, self.agent_pid, started_ns = message
                self.writer = SpanWriter(
                    config, pid=self.agent_pid, started_ns=started_ns, dropped=self._dropped
                )
                self.tick = config.flush_interval_ms / 2000
                _send(("ready", os.getpid()))
            elif kind == "stop":
                self.stop = True
        return batches

    def _dropped(self) -> int:
        return self.dropped

    def _agent_gone(self) -> bool:
        """The pipe ended, or the agent died with the pipe still held open (by a process it forked
        without closing it), or SIGTERM's grace is over."""
        deadline = self.term_deadline
        return (
            (self.inbox.ended and not self.inbox.messages)
            or os.getppid() != self.agent_pid
            or (deadline is not None and time.monotonic() > deadline)
        )


def _last_write(writer: SpanWriter, gone_ns: int) -> None:
    """The agent is gone (at ``gone_ns``): write what is held, for a bounded time, and say when it died."""
    deadline = time.monotonic() + _LAST_WRITE_S
    while writer.write_pending() is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    writer.finish()
    writer.heartbeat(gone_ns)
    writer.close()
