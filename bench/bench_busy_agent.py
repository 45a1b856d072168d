"""How fast the writer drains while the agent's own thread is CPU-bound (it never waits on I/O).

A CPU-bound host thread holds the GIL; the writer gets it back only at switch intervals. This
measures spans persisted per second in that situation, next to the same drain with an idle host,
and how much of its speed the busy host keeps (a spin counter with and without the recorder).

    .venv/bin/python bench/bench_busy_agent.py [--spans 20000]
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

from bench_recorder import otel_pairs  # the same workload as the main benchmark
from opentelemetry.sdk.trace import TracerProvider

from otel_blackbox import BlackboxConfig, BlackboxSpanProcessor


def spin_until(stop: threading.Event) -> int:
    """The busy agent: pure-Python work, counted."""
    count = 0
    while not stop.is_set():
        count += 1
    return count


def drain(spans: int, workdir: Path, *, busy: bool) -> tuple[float, float]:
    """Seconds to persist `spans` queued spans, and the host's spin rate meanwhile (per second)."""
    db = workdir / f"busy-{busy}.db"
    processor = BlackboxSpanProcessor(config=BlackboxConfig(db_path=db, max_queue_size=4 * spans))
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    otel_pairs(provider.get_tracer("bench"), 50)  # opens the database
    provider.force_flush()
    stop = threading.Event()
    flushed: list[float] = []

    def flush() -> None:
        processor.force_flush(600_000)
        flushed.append(time.perf_counter())
        stop.set()

    start = time.perf_counter()
    otel_pairs(provider.get_tracer("bench"), spans // 2)
    waiter = threading.Thread(target=flush)
    waiter.start()
    spun = spin_until(stop) if busy else 0
    waiter.join()
    elapsed = flushed[0] - start
    provider.shutdown()
    return elapsed, spun / elapsed


def spin_rate(seconds: float = 1.0) -> float:
    stop = threading.Event()
    timer = threading.Timer(seconds, stop.set)
    timer.start()
    start = time.perf_counter()
    count = spin_until(stop)
    return count / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        idle, _ = drain(args.spans, Path(tmp), busy=False)
        busy, busy_spin = drain(args.spans, Path(tmp), busy=True)
    alone = spin_rate()
    print(f"spans persisted per second, host idle:        {args.spans / idle:10.0f}")
    print(f"spans persisted per second, host CPU-bound:   {args.spans / busy:10.0f}")
    print(f"host speed kept while the writer drains:      {busy_spin / alone:10.0%}")


if __name__ == "__main__":
    main()
