"""A stand-in agent for tests/unit/recorder/test_writer_process.py, run as its own process.

    python tests/programs/writer_process_agent.py basic   --db PATH [--spans N]
        [--ending normal|exception|stdin]
    python tests/programs/writer_process_agent.py prefork --db PATH --master-spans N --workers N
        --exit os_exit|normal
    python tests/programs/writer_process_agent.py mp      --db PATH --method spawn|forkserver --workers N

Every process it starts reports on stdout, one JSON object a line with a "role". The recorder's
configuration comes from OTEL_BLACKBOX_* (BlackboxConfig.from_env), its warnings (logger
"otel_blackbox") are collected and reported. otel_blackbox is imported only once the "before"
state is taken, so the report says what importing it and creating the processor started.

The /proc helpers here are also what the tests use to find writer processes from the outside.
"""

from __future__ import annotations

import argparse
import atexit
import json
import logging
import multiprocessing
import os
import resource
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from multiprocessing.queues import Queue

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Tracer

    from otel_blackbox import BlackboxSpanProcessor

WRITER_MARK = "otel-blackbox-writer"  # in the writer process's command line


# -- /proc ------------------------------------------------------------------------------------------


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:  # gone (or never there)
        return None


def cmdline(pid: int) -> list[str]:
    raw = _read(f"/proc/{pid}/cmdline") or b""
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def stat_fields(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, None once it is gone."""
    raw = _read(f"/proc/{pid}/stat")
    if raw is None:
        return None
    after_name = raw[raw.rindex(b")") + 2 :].split()  # the name (field 2) may hold spaces and parens
    return after_name[0].decode(), int(after_name[1])


def parent_of(pid: int) -> int | None:
    fields = stat_fields(pid)
    return None if fields is None else fields[1]


def has_exited(pid: int) -> bool:
    """Gone, or a zombie: this machine's init does not reap orphans, so one that exited may stay Z.

    Every thread counts: a killed process's main thread shows Z while its other threads still
    exit, and its descriptors (a pipe's read end) stay open until the last one has."""
    fields = stat_fields(pid)
    if fields is None:
        return True
    if fields[0] not in ("Z", "X"):
        return False
    try:
        threads = [int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid]
    except OSError:
        return True
    return all(
        (_read(f"/proc/{pid}/task/{t}/stat") or b") X").rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
        for t in threads
    )


def environ_keys(pid: int) -> list[str]:
    raw = _read(f"/proc/{pid}/environ") or b""
    return sorted(entry.split(b"=", 1)[0].decode(errors="replace") for entry in raw.split(b"\0") if entry)


def live_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def writer_processes(parent: int | None = None) -> list[int]:
    """Live processes whose command line names the writer (children of ``parent`` if given)."""
    found = []
    for pid in live_pids():
        named = any(WRITER_MARK in arg for arg in cmdline(pid))
        if named and not has_exited(pid) and (parent is None or parent_of(pid) == parent):
            found.append(pid)
    return sorted(found)


def child_processes(parent: int) -> list[int]:
    return sorted(pid for pid in live_pids() if parent_of(pid) == parent and not has_exited(pid))


def interpreter_flags(argv: list[str]) -> str:
    """The single-letter options given to the interpreter before -c / -m / the script ("-IS" -> "IS")."""
    flags = ""
    args = iter(argv[1:])
    for arg in args:
        if not arg.startswith("-") or arg.startswith("--") or arg == "-":
            break
        letters = arg[1:]
        for index, letter in enumerate(letters):
            if letter in "cm":
                return flags
            flags += letter
            if letter in "WX":  # takes a value: the rest of this argument, or the next one
                if index == len(letters) - 1:
                    next(args, None)
                break
    return flags


def writer_facts(processor: BlackboxSpanProcessor) -> dict[str, Any]:
    """What this process's processor says about its writer, and what /proc says about it."""
    pid = processor.writer_pid
    return {
        "pid": os.getpid(),
        "ppid": os.getppid(),
        "writer_mode": processor.writer_mode,
        "writer_pid": pid,
        "writer_ppid": None if pid is None else parent_of(pid),
        "writer_argv": None if pid is None else cmdline(pid),
        "writer_env_keys": None if pid is None else environ_keys(pid),
        "writers_found": writer_processes(parent=os.getpid()),
        "children": child_processes(os.getpid()),
        "threads": sorted(t.name for t in threading.enumerate()),
    }


def counters(processor: BlackboxSpanProcessor) -> dict[str, int]:
    return {
        "written": processor.spans_written,
        "dropped": processor.dropped_count(),
        "write_errors": processor.write_errors,
    }


# -- the recorder -----------------------------------------------------------------------------------


class Warnings(logging.Handler):
    """The recorder's warnings (logger "otel_blackbox"), kept to be reported."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


WARNINGS = Warnings()
KEEP: list[
    tuple[TracerProvider, BlackboxSpanProcessor]
] = []  # the recorder lives until the interpreter's exit, as a script's globals do


def make_recorder(db: str, **config: Any) -> tuple[TracerProvider, BlackboxSpanProcessor, Tracer]:
    from opentelemetry.sdk.trace import TracerProvider

    from otel_blackbox import BlackboxConfig, BlackboxSpanProcessor

    logging.getLogger("otel_blackbox").addHandler(WARNINGS)
    processor = BlackboxSpanProcessor(config=BlackboxConfig.from_env(db_path=db, **config))
    provider = TracerProvider(shutdown_on_exit=False)  # only the recorder's own exit handling
    provider.add_span_processor(processor)
    return provider, processor, provider.get_tracer("writer-process-agent")


def exit_report() -> None:
    """At the interpreter's exit, after the recorder's own exit flush: its counters and warnings."""
    for _provider, processor in KEEP:
        emit({"role": "exit", **counters(processor), "warnings": WARNINGS.messages})


def emit(record: dict[str, Any]) -> None:
    """One JSON line, in one write: a forked worker's lines never mix with its siblings'."""
    line = (json.dumps(record) + "\n").encode()
    written = 0
    while written < len(line):
        written += os.write(1, line[written:])


def wait_for_writer(processor: BlackboxSpanProcessor) -> None:
    """A bounded wait for the writer a first span starts (it may start in the background)."""
    deadline = time.monotonic() + 15
    while processor.writer_mode is None or (processor.writer_mode == "process" and not processor.writer_pid):
        if time.monotonic() > deadline:
            return
        time.sleep(0.01)


# -- basic: one process, then an ending ---------------------------------------------------------


def process_state() -> dict[str, Any]:
    return {
        "children": child_processes(os.getpid()),
        "threads": sorted(t.name for t in threading.enumerate()),
    }


def run_basic(args: argparse.Namespace) -> None:
    before_import = process_state()
    atexit.register(exit_report)  # before the recorder's own: runs after its exit flush
    provider, processor, tracer = make_recorder(args.db, busy_timeout_ms=args.busy_timeout_ms)
    KEEP.append((provider, processor))
    created = {**process_state(), "writer_mode": processor.writer_mode, "writer_pid": processor.writer_pid}
    if args.nproc is not None:  # from here on, this real uid may have only this many tasks
        # The SDK's resource detectors ran in a thread pool: joined, its threads may take a moment
        # more to be gone from the kernel's count (a bounded wait).
        deadline = time.monotonic() + 10
        while len(os.listdir("/proc/self/task")) > 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        resource.setrlimit(resource.RLIMIT_NPROC, (args.nproc, args.nproc))
        created["tasks"] = len(os.listdir("/proc/self/task"))
    root = tracer.start_span("agent-run", attributes={"order_code": "XYZ-987654"})
    from opentelemetry.trace import set_span_in_context

    context = set_span_in_context(root)
    if args.on_sigterm:  # as a service does: a few more spans, then a clean exit (atexit flushes)

        def on_sigterm(signum: int, frame: object) -> None:
            for i in range(5):
                tracer.start_span(f"on-term-{i}", context=context).end()
            sys.exit(128 + signum)

        signal.signal(signal.SIGTERM, on_sigterm)
    for i in range(args.spans):
        tracer.start_span(f"step-{i}", context=context).end()
    tracer.start_span("never-ended", context=context)  # open until the process ends
    flushed = processor.force_flush(10_000)
    emit(
        {
            "role": "agent",
            "before_import": before_import,
            "created": created,
            "flushed": flushed,
            "trace_id": format(root.get_span_context().trace_id, "032x"),
            **writer_facts(processor),
            **counters(processor),
            "warnings": WARNINGS.messages,
        }
    )
    if args.ending == "stdin":  # commands until stdin closes (or the test kills us)
        for line in sys.stdin:
            label, count = line.split()
            for i in range(int(count)):
                tracer.start_span(f"{label}-{i}", context=context).end()
            flushed = processor.force_flush(args.flush_ms)
            emit(
                {"role": "agent", "label": label, "flushed": flushed, **writer_facts(processor),
                 **counters(processor), "warnings": WARNINGS.messages}
            )  # fmt: skip
    # The end of the program ("normal" or by the exception): root and never-ended still open, these
    # ended but not flushed, and no shutdown(): the recorder's own exit handling must write them.
    for i in range(5):
        tracer.start_span(f"tail-{i}", context=context).end()
    if args.ending == "exception":
        raise RuntimeError("agent crashed")


# -- prefork: a master that creates the recorder, then forks workers (gunicorn's preload) --------


def run_prefork(args: argparse.Namespace) -> None:
    provider, processor, tracer = make_recorder(args.db)
    for i in range(args.master_spans):  # not flushed: the queue may still hold them at the fork
        tracer.start_span(f"master-{i}").end()
    emit({"role": "master", "at_fork": writer_facts(processor)})
    workers = []
    for index in range(args.workers):
        pid = os.fork()
        if pid == 0:
            prefork_worker(index, args, processor, tracer)  # never returns
        workers.append(pid)
    for i in range(2):
        tracer.start_span(f"master-after-{i}").end()
    statuses = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in workers]
    flushed = processor.force_flush(10_000)
    facts = writer_facts(processor)
    provider.shutdown()
    emit(
        {"role": "master", "workers": workers, "statuses": statuses, "flushed": flushed, **facts,
         **counters(processor), "warnings": WARNINGS.messages}
    )  # fmt: skip


def prefork_worker(
    index: int, args: argparse.Namespace, processor: BlackboxSpanProcessor, tracer: Tracer
) -> None:
    try:
        for k in range(3):
            with tracer.start_as_current_span(f"worker-{index}-{k}"):
                pass
        if args.exit == "os_exit":  # gunicorn's worker after its last request: flush, then os._exit
            flushed = processor.force_flush(10_000)
            emit({"role": "worker", "index": index, "flushed": flushed, **writer_facts(processor)})
            os._exit(0)
        wait_for_writer(processor)
        emit({"role": "worker", "index": index, **writer_facts(processor)})
    except Exception:
        traceback.print_exc()
        os._exit(4)
    sys.exit(0)  # a normal exit: SystemExit unwinds the master's code and the interpreter's exit runs


# -- mp: multiprocessing, with the recorder set up at import time as a script does ------------------

MP_DB = "WRITER_AGENT_MP_DB"
MODULE_RECORDER: tuple[TracerProvider, BlackboxSpanProcessor, Tracer] | None = None
if __name__ in ("__main__", "__mp_main__") and os.environ.get(MP_DB):
    # Spawn runs this again in each child (as __mp_main__); the forkserver runs it once, and its
    # children inherit that processor, which never saw a span there.
    MODULE_RECORDER = make_recorder(os.environ[MP_DB])


def mp_worker(index: int, results: Queue[dict[str, Any]], flush: bool) -> None:
    assert MODULE_RECORDER is not None
    _provider, processor, tracer = MODULE_RECORDER
    for k in range(3):
        with tracer.start_as_current_span(f"worker-{index}-{k}"):
            pass
    if flush:
        flushed = processor.force_flush(10_000)
    else:  # the worker function just returns, as most do: multiprocessing ends the process
        wait_for_writer(processor)
        flushed = None
    facts = writer_facts(processor)
    forkserver_writers = writer_processes(parent=os.getppid())
    results.put({"role": "worker", "index": index, "flushed": flushed, **facts,
                 "writers_of_parent": forkserver_writers, "warnings": WARNINGS.messages})  # fmt: skip


def run_mp(args: argparse.Namespace) -> None:
    assert MODULE_RECORDER is not None, f"set {MP_DB}"
    provider, processor, tracer = MODULE_RECORDER
    tracer.start_span("master-before").end()
    assert processor.force_flush(10_000)
    context = multiprocessing.get_context(args.method)
    results = context.Queue()
    workers = [context.Process(target=mp_worker, args=(i, results, args.flush)) for i in range(args.workers)]
    for worker in workers:
        worker.start()
    reports = [results.get(timeout=60) for _ in workers]
    for worker in workers:
        worker.join(60)
    tracer.start_span("master-after").end()
    flushed = processor.force_flush(10_000)
    facts = writer_facts(processor)
    provider.shutdown()
    for report in reports:
        emit(report)
    emit(
        {"role": "master", "exitcodes": [w.exitcode for w in workers], "flushed": flushed, **facts,
         **counters(processor), "warnings": WARNINGS.messages}
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--executable", help="set sys.executable to this before the recorder starts (a failure to start)"
    )
    parser.add_argument(
        "--frozen", action="store_true", help="set sys.frozen, as a frozen application has it"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    basic = sub.add_parser("basic")
    basic.add_argument("--spans", type=int, default=20)
    basic.add_argument("--ending", choices=["normal", "exception", "stdin"], default="normal")
    basic.add_argument("--flush-ms", type=int, default=10_000, help="force_flush timeout after a command")
    basic.add_argument("--on-sigterm", action="store_true", help="on SIGTERM: 5 spans, then sys.exit")
    basic.add_argument("--busy-timeout-ms", type=int, help="BlackboxConfig.busy_timeout_ms")
    basic.add_argument(
        "--nproc", type=int, help="RLIMIT_NPROC from the first span on (set after the SDK's start)"
    )
    prefork = sub.add_parser("prefork")
    prefork.add_argument("--master-spans", type=int, default=0)
    prefork.add_argument("--workers", type=int, default=3)
    prefork.add_argument("--exit", choices=["os_exit", "normal"], default="os_exit")
    mp = sub.add_parser("mp")
    mp.add_argument("--method", choices=["fork", "spawn", "forkserver"], required=True)
    mp.add_argument("--workers", type=int, default=2)
    mp.add_argument("--no-flush", dest="flush", action="store_false", help="workers do not force_flush()")
    for command in (basic, prefork):
        command.add_argument("--db", type=Path, required=True)
    args = parser.parse_args()
    if args.executable is not None:
        sys.executable = args.executable
    if args.frozen:  # as PyInstaller and the like leave it: sys.executable is the application itself
        sys.frozen = True  # type: ignore[attr-defined]
    {"basic": run_basic, "prefork": run_prefork, "mp": run_mp}[args.command](args)


if __name__ == "__main__":
    main()
