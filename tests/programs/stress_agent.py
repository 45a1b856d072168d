"""A stand-in agent for the reliability tests, run as its own process (tests/reliability/).

    python tests/programs/stress_agent.py load  --db PATH --threads 4 --steps 500 --tag p3
    python tests/programs/stress_agent.py burst --db PATH --spans 100000 --queue 2000
    python tests/programs/stress_agent.py churn --db PATH --threads 3   # ~5k spans/s until killed
    python tests/programs/stress_agent.py cassettes --out PATH          # saves cassettes until killed
    python tests/programs/stress_agent.py serve --db PATH               # phases driven on stdin

(``load`` writes at most 400 spans/s a thread.)

Results are JSON lines on stdout; the recorder's warnings go to stderr (logging's last resort).
Every span the agent makes goes through the real SDK and BlackboxSpanProcessor.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import resource
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.trace import Span, Tracer

from otel_blackbox import BlackboxConfig, BlackboxSpanProcessor
from otel_blackbox._cassette.io import save_cassette
from otel_blackbox._cassette.model import Cassette

PAYLOAD = "The tool returned a long answer about the weather in Lisbon. " * 8  # ~500 bytes


def emit(record: dict[str, Any]) -> None:
    print(json.dumps(record), flush=True)


def recorder(args: argparse.Namespace, **config: Any) -> tuple[TracerProvider, BlackboxSpanProcessor, Tracer]:
    processor = BlackboxSpanProcessor(config=BlackboxConfig(db_path=args.db, **config))
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    return provider, processor, provider.get_tracer("stress-agent")


def counters(processor: BlackboxSpanProcessor) -> dict[str, int]:
    return {
        "written": processor.spans_written,
        "dropped": processor.dropped_count(),
        "open_rows_dropped": processor.open_rows_dropped,
        "write_errors": processor.write_errors,
    }


def agent_step(tracer: Tracer, name: str, payload: str = PAYLOAD) -> int:
    """One agent step: a root with an LLM call and a tool call that makes an HTTP request (4 spans)."""
    with tracer.start_as_current_span(name, attributes={"openinference.span.kind": "AGENT"}):
        with tracer.start_as_current_span(
            "llm", attributes={"openinference.span.kind": "LLM", "input.value": payload}
        ):
            pass
        with (
            tracer.start_as_current_span(
                "tool", attributes={"openinference.span.kind": "TOOL", "tool.name": "w"}
            ),
            tracer.start_as_current_span("http", attributes={"output.value": payload}),
        ):
            pass
    return 4


# -- load: many threads, nested spans, a fixed count -------------------------------------------------


def run_load(args: argparse.Namespace) -> None:
    provider, processor, tracer = recorder(args)
    ended = [0] * args.threads

    def worker(index: int) -> None:
        for step in range(args.steps):
            ended[index] += agent_step(tracer, f"{args.tag}/{index}/{step}")
            time.sleep(args.pace)

    started = time.time()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(args.threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    produced = time.time()
    provider.shutdown()  # waits for the writer: every span on disk
    emit(
        {
            "ended": sum(ended),
            "started_at": started,
            "produced_at": produced,
            "done_at": time.time(),
            **counters(processor),
        }
    )


# -- burst: far more spans than the queue holds, as fast as the threads can make them ----------------


class _NoOp(SpanProcessor):
    """The baseline: the SDK's own cost of a span, with nothing recording it."""


def _burst(tracer: Tracer, count: int, threads: int, prefix: str) -> float:
    """Make ``count`` spans from ``threads`` threads; the slowest single start+end, in seconds (the
    caller times the whole burst)."""
    slowest = [0.0] * threads
    per_thread = count // threads

    def worker(index: int) -> None:
        clock = time.perf_counter
        worst = 0.0
        for i in range(per_thread):
            began = clock()
            tracer.start_span(f"{prefix}-{index}-{i}", attributes={"input.value": "x" * 200}).end()
            took = clock() - began
            if took > worst:
                worst = took
        slowest[index] = worst

    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return max(slowest)


def peak_rss_mb() -> float:
    """This process's peak resident memory (VmHWM: unlike ru_maxrss, it does not carry over the
    parent's size from before exec, so a test runner's own memory does not hide ours)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024  # kB
    raise RuntimeError("no VmHWM in /proc/self/status")


def run_burst(args: argparse.Namespace) -> None:
    baseline = TracerProvider(shutdown_on_exit=False)
    baseline.add_span_processor(_NoOp())
    base_tracer = baseline.get_tracer("baseline")
    _burst(base_tracer, min(args.spans, 20_000), args.threads, "warmup")
    rss_before = peak_rss_mb()
    began = time.perf_counter()
    base_slowest = _burst(base_tracer, args.spans, args.threads, "baseline")
    baseline_s = time.perf_counter() - began
    rss_baseline = peak_rss_mb()

    # No size cap: the accounting checked is written + dropped == ended, and the writer process
    # writes enough of a 2,000,000-span burst (~700,000) to pass the default 300 MB, where the cap
    # would evict some of them.
    provider, processor, tracer = recorder(args, max_queue_size=args.queue, max_db_mb=0)
    done = threading.Event()
    if args.long_spans:  # bench/bench_open_row_latency.py: long spans' open rows during the burst
        threading.Thread(target=_long_spans, args=(tracer, done), daemon=True).start()
    began = time.perf_counter()
    slowest = _burst(tracer, args.spans, args.threads, "burst")
    burst_s = time.perf_counter() - began
    done.set()
    rss_burst = peak_rss_mb()
    processor.force_flush(60_000)
    after_burst = counters(processor)
    # Recovery: an agent going on at a normal pace after the burst loses nothing.
    for i in range(args.recover):
        tracer.start_span(f"recover-{i}").end()
        time.sleep(0.0005)
    processor.force_flush(60_000)
    emit(
        {
            "ended": args.spans // args.threads * args.threads + args.recover,
            "burst_spans": args.spans // args.threads * args.threads,
            "burst_s": burst_s,
            "baseline_burst_s": baseline_s,
            "slowest_call_s": slowest,
            "baseline_slowest_call_s": base_slowest,
            "rss_before_mb": rss_before,
            "rss_baseline_mb": rss_baseline,
            "rss_burst_mb": rss_burst,
            "after_burst": after_burst,
            **counters(processor),
        }
    )
    provider.shutdown()


def _long_spans(tracer: Tracer, done: threading.Event) -> None:
    """One span after another, each open 0.25 to 0.6 s, its id and start printed as it opens."""
    rng = random.Random(0)
    for k in range(1_000_000):
        if done.is_set():
            return
        span = tracer.start_span(f"long-{k}")
        _print_long(span)
        done.wait(rng.uniform(0.25, 0.6))
        span.end()


_PRINT_LOCK = threading.Lock()


def _print_long(span: Span) -> None:
    """The parent's record of what was open, and since when (after the start: never too early)."""
    context = span.get_span_context()
    with _PRINT_LOCK:
        print(f"L {context.trace_id:032x} {context.span_id:016x} {time.time_ns()}", flush=True)


# -- churn: heavy writing with long spans, until SIGKILL --------------------------------------------


def run_churn(args: argparse.Namespace) -> None:
    _provider, _processor, tracer = recorder(args, max_db_mb=args.max_db_mb)
    rng = random.Random(args.seed)

    def worker(index: int) -> None:
        tracer.start_span(f"forever-{index}")  # never ends: open until the kill
        for k in range(1_000_000):
            span = tracer.start_span(f"long-{index}-{k}")
            _print_long(span)
            until = time.monotonic() + rng.uniform(0.25, 0.6)
            while time.monotonic() < until:
                agent_step(tracer, f"step-{index}-{k}")
                time.sleep(args.pace)  # an agent waits on the network; without it, it is a burst
            span.end()

    for i in range(args.threads):
        threading.Thread(target=worker, args=(i,), daemon=True).start()
    time.sleep(3600)


def run_cassettes(args: argparse.Namespace) -> None:
    """Save two large cassettes in turn over one path, until killed."""
    versions = [_big_cassette(tag) for tag in ("a", "b")]
    for n in range(1_000_000):
        save_cassette(versions[n % 2], args.out)
        print(f"saved {n}", flush=True)


def _big_cassette(tag: str) -> Cassette:
    """About 1 MB, so that a kill often lands mid-write: a model call, then notes (200 steps)."""
    cassette = Cassette(id=f"run-{tag}", created_at=1_700_000_000_000)
    cassette.append("model_input", {"messages": [{"role": "user", "content": tag}]}, 1_700_000_000_000)
    for index in range(199):
        cassette.append(
            "metadata", {"name": "note", "tag": tag, "blob": f"{tag}{index}" * 1000}, 1_700_000_000_000
        )
    return cassette


# -- serve: phases driven by the test over stdin -------------------------------------------------------


def run_serve(args: argparse.Namespace) -> None:
    """Commands, one a line: `spans LABEL N [BYTES]`, `rlimit BYTES|unlimited`, `exit`."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past RLIMIT_FSIZE a write fails (EFBIG), like a full disk
    provider, processor, tracer = recorder(
        args, busy_timeout_ms=args.busy_timeout_ms, max_queue_size=args.queue
    )
    for line in sys.stdin:
        command, *rest = line.split()
        if command == "spans":
            label, count = rest[0], int(rest[1])
            size = int(rest[2]) if len(rest) > 2 else 0
            slowest = 0.0
            for i in range(count):
                # BYTES of random text a step (the store keeps content once, compressed: "x" * BYTES
                # repeated would take next to no room)
                payload = base64.b64encode(os.urandom(size * 3 // 4)).decode() if size else PAYLOAD
                began = time.perf_counter()
                agent_step(tracer, f"{label}-{i}", payload)
                slowest = max(slowest, time.perf_counter() - began)
            flushed = processor.force_flush(args.flush_timeout_ms)
            emit({"label": label, "flushed": flushed, "slowest_step_s": slowest, **counters(processor)})
        elif command == "rlimit":
            limit = resource.RLIM_INFINITY if rest[0] == "unlimited" else int(rest[0])
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
            if processor.writer_pid is not None:  # the process that writes is the writer process
                resource.prlimit(processor.writer_pid, resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
            emit({"rlimit": rest[0]})
        elif command == "exit":
            break
    provider.shutdown()
    emit({"exit": True, **counters(processor)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    load = sub.add_parser("load")
    load.add_argument("--threads", type=int, default=4)
    load.add_argument("--steps", type=int, default=100)
    load.add_argument("--tag", default="p0")
    load.add_argument("--pace", type=float, default=0.01, help="seconds between steps (4 spans each)")
    burst = sub.add_parser("burst")
    burst.add_argument("--spans", type=int, default=100_000)
    burst.add_argument("--threads", type=int, default=4)
    burst.add_argument("--queue", type=int, default=2_000)
    burst.add_argument("--recover", type=int, default=1_000)
    burst.add_argument("--long-spans", action="store_true", help="also keep long spans open, printing each")
    churn = sub.add_parser("churn")
    churn.add_argument("--threads", type=int, default=3)
    churn.add_argument("--seed", type=int, default=0)
    churn.add_argument("--pace", type=float, default=0.002, help="seconds between steps (4 spans each)")
    churn.add_argument("--max-db-mb", type=float, default=300.0, help="the size cap (300 MB, the default)")
    cassettes = sub.add_parser("cassettes")
    cassettes.add_argument("--out", type=Path, required=True)
    serve = sub.add_parser("serve")
    serve.add_argument("--busy-timeout-ms", type=int, default=5_000)
    serve.add_argument("--queue", type=int, default=20_000)
    serve.add_argument("--flush-timeout-ms", type=int, default=10_000)
    for command in (load, burst, churn, serve):
        command.add_argument("--db", type=Path, required=True)
    args = parser.parse_args()
    {
        "load": run_load,
        "burst": run_burst,
        "churn": run_churn,
        "cassettes": run_cassettes,
        "serve": run_serve,
    }[args.command](args)


if __name__ == "__main__":
    main()
