"""The agent's side of the writer process: starting it, feeding it, hearing back from it.

The process (store.writer_process) is started lazily by the shipper thread, never by the agent's
own threads, as ``python -I`` (isolated: no PYTHONPATH, so no OpenTelemetry auto-instrumentation
and no launcher sitecustomize; no user site) with every ``OTEL_*`` variable removed, in a session
of its own (a Ctrl-C or a signal to the agent's process group does not reach it).

Two anonymous pipes: batches go down the child's stdin; acknowledgements, progress and the
child's log lines come back on its stdout, read by a small thread here. The child exits at the
end of its stdin: when the agent stops it, exits, or is killed (the kernel closes the pipe).

The shipper sends no more final rows while a batch's worth (``max_batch_size``) is neither written
nor counted lost (``backed_up``): they wait in the processor's bounded queue, so the pipe never
fills up with them and an open row sent meanwhile reaches the writer at once. One, not two: with
two batches in flight an open row under a burst waited behind both in the pipe (issue 48 measured
the burst's open rows over 200 ms at 16 % with two, 10 % with one). Progress from the writer wakes
the shipper.

The pipe to the child is closed only under ``_pipe``, the lock a send holds: a descriptor closed
while another thread writes to it can be reused at once by a file the host opens (its SQLite
database, say), and the rest of the frame would land in that file.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from otel_blackbox._config import BlackboxConfig
from otel_blackbox._recorder.sinks import FlushMarker, SinkFailed, fail_markers
from otel_blackbox._store.frames import FrameReader, encode, write_all
from otel_blackbox._store.snapshot import Definition, Snapshot

__all__ = ["WRITER_TAG", "ProcessSink"]

logger = logging.getLogger("otel_blackbox")

WRITER_TAG = "otel-blackbox-writer"  # in the process's command line, to tell it apart in ps
_CHILD_MARKER = "BLACKBOX_WRITER_PROCESS"
_START_TIMEOUT_S = 10.0
_REAP_TIMEOUT_S = 5.0
_BOOT = (
    "import sys; sys.path[:0] = sys.argv[2:]; from otel_blackbox._store.writer_process import main; main()"
)


def _inheritable_fds() -> list[int]:
    """This process's descriptors above stderr that a new program would inherit."""
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:  # no /proc (macOS): nothing to find out cheaply
        return []
    found = []
    for fd in fds:
        if fd > 2:
            try:
                if os.get_inheritable(fd):
                    found.append(fd)
            except OSError:  # the listing's own descriptor, closed by now
                continue
    return found


class ProcessSink:
    """One writer process, fed by one shipper."""

    mode = "process"

    def __init__(self, pid: int, to_child: int, from_child: int, dropped: Callable[[], int],
                 outside: Callable[[], int], wake: threading.Event, in_flight: int) -> None:  # fmt: skip
        self.pid: int | None = pid
        self._in_flight = in_flight  # final rows sent ahead of the writer's progress, at most
        self._held = False  # the shipper waits for progress
        self._sending: int | None = None  # the flush id of the batch on its way down the pipe
        self._started_at = time.monotonic()
        self._to_child: int | None = to_child
        self._pipe = threading.Lock()  # held while _to_child is written to or closed
        self._from_child: int | None = from_child
        self._dropped = dropped
        self._outside = outside
        self._wake = wake
        self.failed = False
        self._written = 0
        self._errors = 0
        self._shipped = 0  # final snapshots sent
        self._sent_counts = (0, 0)
        self._next_flush = 0
        self._waiting: dict[int, list[FlushMarker]] = {}
        self._lock = threading.Lock()  # _waiting and the counters, shared with the reader thread
        self._ready = threading.Event()
        self._ready_ok = False
        self._stopped = threading.Event()
        self._reader = threading.Thread(target=self._read, name="otel-blackbox-writer-acks", daemon=True)

    @classmethod
    def start(
        cls,
        config: BlackboxConfig,
        started_ns: int,
        dropped: Callable[[], int],
        outside: Callable[[], int],
        wake: threading.Event,
    ) -> ProcessSink:
        """Start the process; raises when it cannot be. ``wait_ready`` tells when it can write."""
        if not hasattr(os, "posix_spawn") or not sys.executable:
            raise OSError("no way to start a process here")
        if getattr(sys, "frozen", False):  # sys.executable is the application, not a Python
            raise OSError("a frozen application has no Python to run the writer with")
        if os.environ.get(_CHILD_MARKER):  # never a writer process of a writer process
            raise OSError("this process was started as a writer process")
        down_r, down_w = os.pipe()
        up_r, up_w = os.pipe()
        try:
            env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
            env[_CHILD_MARKER] = "1"
            package_root = str(Path(__file__).resolve().parents[2])
            argv = [sys.executable, "-I", "-c", _BOOT, WRITER_TAG, package_root]
            actions: list[tuple[Any, ...]] = [(os.POSIX_SPAWN_DUP2, down_r, 0)]
            actions.append((os.POSIX_SPAWN_DUP2, up_w, 1))
            # As subprocess's close_fds: descriptors the agent inherited stay the agent's (a pipe
            # held open by the writer could keep someone waiting for its end).
            actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inheritable_fds() if fd not in (down_r, up_w)]
            pid = os.posix_spawn(sys.executable, argv, env, file_actions=actions)
        except BaseException:
            for fd in (down_r, down_w, up_r, up_w):
                os.close(fd)
            raise
        os.close(down_r)
        os.close(up_w)
        sink = cls(pid, down_w, up_r, dropped, outside, wake, config.max_batch_size)
        sink._reader.start()
        try:
            sink._send(("config", config, os.getpid(), started_ns))
        except BaseException:
            sink.kill()
            raise
        return sink

    def wait_ready(self, timeout_s: float) -> bool:
        """True once the process said it is ready; False if not yet; raises (and kills it) if it
        cannot be had: it died, or it did not say so within _START_TIMEOUT_S of its start."""
        ready = self._ready.wait(timeout_s)
        if ready and not self.failed and self._ready_ok:
            return True
        if ready or time.monotonic() - self._started_at >= _START_TIMEOUT_S:
            self.kill()
            raise OSError("the writer process did not start")
        return False

    # -- the shipper's side ------------------------------------------------------------------------

    def deliver(
        self,
        definitions: list[Definition],
        finals: list[Snapshot],
        opens: list[Snapshot],
        markers: list[FlushMarker],
    ) -> None:
        flush_id = None
        if markers:
            with self._lock:
                if self.failed:
                    raise SinkFailed("the writer process is gone")
                self._next_flush += 1
                flush_id = self._sending = self._next_flush
                self._waiting[flush_id] = markers
        counts = (self._dropped(), self._outside())
        self._sent_counts = counts
        try:
            self._send(("batch", definitions, finals, opens, counts, flush_id))
        except SinkFailed:
            with self._lock:  # these markers go, with the batch, to the writer that takes over
                self._waiting.pop(flush_id or 0, None)
                self._sending = None
            self._fail()
            raise
        self._shipped += len(finals)
        if flush_id is not None:
            with self._lock:
                self._sending = None
                # The process died while this batch went (_fail left its markers to us): sent, unwritten.
                lost = self._waiting.pop(flush_id, None) if self.failed else None
            if lost:
                fail_markers(lost)

    def tick(self) -> None:
        counts = (self._dropped(), self._outside())
        if counts != self._sent_counts:  # drops since the last batch: let the run's row say so now
            self._sent_counts = counts
            try:
                self._send(("batch", [], [], [], counts, None))
            except SinkFailed:
                self._fail()

    def stop(self, timeout_s: float) -> None:
        """Let the process write everything and exit; wait for it (bounded)."""
        deadline = time.monotonic() + timeout_s
        try:
            self._send(("stop",))
            if not self._stopped.wait(max(0.0, deadline - time.monotonic())):
                logger.warning("otel-blackbox: the writer process did not finish within %ss", timeout_s)
        except SinkFailed:
            pass
        self._close_to_child()
        self._reap(min(_REAP_TIMEOUT_S, max(0.1, deadline - time.monotonic())))
        self._reader.join(1.0)

    def backed_up(self) -> bool:
        """A batch's worth of final rows sent and not yet written: send no more until progress."""
        held = self.unconfirmed() >= self._in_flight
        self._held = held
        return held

    def counts(self) -> tuple[int, int]:
        return self._written, self._errors

    def unconfirmed(self) -> int:
        return max(0, self._shipped - self._written - self._errors)

    def abandon(self) -> None:
        """In a forked child: let go of the parent's process without touching it."""
        for fd in (self._to_child, self._from_child):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._to_child = self._from_child = None
        self.pid = None

    def _send(self, message: tuple[Any, ...]) -> None:
        data = encode(message)
        with self._pipe:
            fd = self._to_child
            if fd is None or self.failed:
                raise SinkFailed("the writer process is gone")
            try:
                write_all(fd, data)
            except OSError as exc:  # EPIPE: the process died
                self.failed = True
                raise SinkFailed(str(exc)) from None

    # -- the reader thread -----------------------------------------------------------------------

    def _read(self) -> None:
        fd = self._from_child
        assert fd is not None
        frames = FrameReader()
        try:
            while True:
                try:
                    data = os.read(fd, 65536)
                except OSError:
                    data = b""
                if not data:
                    break
                for message in frames.feed(data):
                    self._handle(message)
        except Exception:  # a garbled message: the process cannot be trusted any more
            logger.warning("otel-blackbox: unreadable message from the writer process", exc_info=True)
            self._signal_kill()  # it may be alive and not reading: a send blocked on it ends (EPIPE)
        finally:
            if not self._stopped.is_set():
                self._fail()
            if self._from_child is not None:  # abandon() in a forked child does not run here
                self._from_child = None
                with contextlib.suppress(OSError):
                    os.close(fd)

    def _handle(self, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "log":
            logger.log(message[1], "%s", message[2])
        elif kind == "ready":
            self._ready_ok = True
            self._ready.set()
        elif kind in ("progress", "ack", "stopped"):
            with self._lock:
                self._written, self._errors = message[1], message[2]
                markers = self._waiting.pop(message[4], []) if kind == "ack" else []
            if self._held:  # the shipper waits for this
                self._held = False
                self._wake.set()
            for marker in markers:
                marker.ok = message[3]
                marker.done.set()
            if kind == "stopped":
                self._stopped.set()

    def _fail(self) -> None:
        """The process is gone: every flush still waiting fails, the shipper switches writers."""
        with self._lock:
            self.failed = True
            # A batch being sent right now is its sender's to settle: retried elsewhere if the send
            # failed, failed if it went.
            waiting = {k: v for k, v in self._waiting.items() if k != self._sending}
            self._waiting = {k: v for k, v in self._waiting.items() if k == self._sending}
        for markers in waiting.values():
            fail_markers(markers)
        self._ready.set()
        self._wake.set()
        self._close_to_child()
        self._reap(0.5)

    def _close_to_child(self) -> None:
        """Close the pipe once, never while a send is writing to it (it waits for that send, which
        ends when the process reads or is gone)."""
        with self._pipe:
            fd, self._to_child = self._to_child, None
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def kill(self) -> None:
        self._signal_kill()
        self._close_to_child()
        self._reap(_REAP_TIMEOUT_S)

    def _signal_kill(self) -> None:
        if self.pid is not None:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)

    def _reap(self, timeout_s: float) -> None:
        """Collect the exited process (bounded): no zombie left behind."""
        pid = self.pid
        if pid is None:
            return
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # already collected (a SIGCHLD handler of the host's)
                done = pid
            if done:
                self.pid = None
                return
            if time.monotonic() >= deadline:
                return
            time.sleep(0.01)
