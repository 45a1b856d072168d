"""The writer process: reads batches of span snapshots from its stdin and writes them to SQLite.

Started by the agent (store.companion) and fed by its shipper thread. It outlives the agent only
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
import select
import signal
import time
import traceback
from typing import Any

from .frames import FrameReader, encode, write_all
from .writer import SpanWriter

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


class _Loop:
    """Read what the agent sent, write it, answer; until the agent is gone or says stop."""

    def __init__(self) -> None:
        self.frames = FrameReader()
        self.writer: SpanWriter | None = None
        self.agent_pid = os.getppid()
        self.dropped = 0  # spans the agent dropped (its queue was full)
        self.tick = 0.1
        self.ended = False
        self.stop = False
        self.term_deadline: float | None = None

    def terminate(self, *_: object) -> None:
        """SIGTERM: keep serving the agent a moment (it may be flushing on its own SIGTERM), then go."""
        if self.term_deadline is None:
            self.term_deadline = time.monotonic() + _TERM_GRACE_S

    def run(self) -> None:
        while True:
            readable, _, _ = select.select([0], [], [], self.tick)
            batches, flushes = self._read() if readable else (0, [])
            writer = self.writer
            if self._agent_gone():
                if writer is not None:
                    _last_write(writer, time.time_ns())
                return
            if writer is None:
                continue
            writer.check_file()
            error = writer.write_pending()
            writer.heartbeat()
            writer.maintain()
            counts = (writer.spans_written, writer.write_errors, error is None)
            if batches:
                _send(("progress", *counts, None))
            for flush_id in flushes:
                _send(("ack", *counts, flush_id))
            if self.stop:
                writer.finish()
                writer.heartbeat()
                writer.close()
                _send(("stopped", writer.spans_written, writer.write_errors, True, None))
                return

    def _read(self) -> tuple[int, list[int]]:
        """Take in what is in the pipe: the number of batches, and the flushes asked for."""
        data = os.read(0, _READ_SIZE)
        if not data:
            self.ended = True
        batches, flushes = 0, []
        for message in self.frames.feed(data):
            kind = message[0]
            if kind == "batch" and self.writer is not None:
                _, definitions, finals, opens, (self.dropped, outside), flush_id = message
                self.writer.receive(definitions, finals, opens)
                self.writer.outside_errors = outside
                batches += 1
                if flush_id is not None:
                    flushes.append(flush_id)
            elif kind == "config":
                _, config, self.agent_pid, started_ns = message
                self.writer = SpanWriter(
                    config, pid=self.agent_pid, started_ns=started_ns, dropped=self._dropped
                )
                self.tick = config.flush_interval_ms / 2000
                _send(("ready", os.getpid()))
            elif kind == "stop":
                self.stop = True
        return batches, flushes

    def _dropped(self) -> int:
        return self.dropped

    def _agent_gone(self) -> bool:
        """The pipe ended, or the agent died with the pipe still held open (by a process it forked
        without closing it), or SIGTERM's grace is over."""
        deadline = self.term_deadline
        return (
            self.ended
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
