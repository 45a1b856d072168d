"""How fast the writer drains while the agent's own thread is CPU-bound (it never waits on I/O).

A CPU-bound host thread holds the GIL; a writer thread in its process gets it back only at switch
intervals. This measures spans persisted per second in that situation, next to the same drain with
an idle host, and how much of its speed the busy host keeps: a spin counter's rate during the drain
(from the end of the span loop until force_flush() returns) against its rate alone. Both writers:
``writer="process"`` (the companion writer process, the default) and ``writer="thread"``. The
writers and the spin-alone measurement alternate within every repeat (the starting one rotates);
medians of R. Every drain is checked: all rows on disk, all finished, none dropped, or it is
reported and left out. (Before the writer process, the spin rate was divided by the whole run,
span loop included, which understated the speed kept; the drain alone is the interval now.)

    .venv/bin/python bench/bench_busy_agent.py [--spans 20000] [--writer both|process|thread] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import sqlite3
import statistics
import tempfile
import threading
import time
from pathlib import Path

from bench_recorder import otel_pairs, remove_db, rotated  # the same workload as the main benchmark
from opentelemetry.sdk.trace import TracerProvider

from otel_blackbox import BlackboxConfig, BlackboxSpanProcessor

WARM_PAIRS = 50  # before the clock starts: opens the database (and starts the writer)


def spin_until(stop: threading.Event) -> int:
    """The busy agent: pure-Python work, counted."""
    count = 0
    while not stop.is_set():
        count += 1
    return count


def drain(spans: int, workdir: Path, *, busy: bool, writer: str) -> tuple[float, float, float, str]:
    """Seconds to persist `spans` spans (from the first one), seconds of it after they were all
    created (the drain), the host's spin rate during the drain (per second), and a problem if any."""
    db = workdir / f"busy-{writer}-{busy}.db"
    remove_db(db)
    config = BlackboxConfig(db_path=db, max_queue_size=4 * spans, writer=writer)
    processor = BlackboxSpanProcessor(config=config)
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    otel_pairs(provider.get_tracer("bench"), WARM_PAIRS)
    provider.force_flush()
    stop = threading.Event()
    flushed: list[tuple[float, bool]] = []

    def flush() -> None:
        ok = processor.force_flush(600_000)
        flushed.append((time.perf_counter(), ok))
        stop.set()

    gc.collect()
    start = time.perf_counter()
    otel_pairs(provider.get_tracer("bench"), spans // 2)
    waiter = threading.Thread(target=flush)
    created = time.perf_counter()
    waiter.start()
    spun = spin_until(stop) if busy else 0
    waiter.join()
    end, ok = flushed[0]
    elapsed, drained = end - start, end - created

    expected = 2 * (spans // 2 + WARM_PAIRS)
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows, finished = conn.execute("SELECT count(*), count(end_ns) FROM spans").fetchone()
    finally:
        conn.close()
    problem = []
    if not ok:
        problem.append("force_flush returned False")
    if rows != expected or finished != expected:
        problem.append(f"{rows} rows, {finished} finished, of {expected}")
    if processor.dropped_count():
        problem.append(f"{processor.dropped_count()} dropped")
    provider.shutdown()
    remove_db(db)
    return elapsed, drained, spun / drained, "; ".join(problem)


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
    parser.add_argument(
        "--writer", choices=("both", "process", "thread"), default="both", help="which writer(s) (both)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="repeats; medians (default 3)")
    args = parser.parse_args()
    writers = ("process", "thread") if args.writer == "both" else (args.writer,)
    spans = args.spans - args.spans % 2
    idle: dict[str, list[float]] = {w: [] for w in writers}
    busy: dict[str, list[float]] = {w: [] for w in writers}
    busy_spin: dict[str, list[float]] = {w: [] for w in writers}
    idle_drain: dict[str, list[float]] = {w: [] for w in writers}
    busy_drain: dict[str, list[float]] = {w: [] for w in writers}
    alone: list[float] = []
    left_out = 0
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.repeat):
            for who in rotated(("alone", *writers), rep):
                if who == "alone":
                    alone.append(spin_rate())
                    print(f"  {rep + 1}/{args.repeat} spin alone {alone[-1]:14,.0f} /s", flush=True)
                    continue
                for is_busy in (False, True):
                    elapsed, drained, spin, problem = drain(spans, Path(tmp), busy=is_busy, writer=who)
                    print(
                        f"  {rep + 1}/{args.repeat} {who:<7} host {'CPU-bound' if is_busy else 'idle':<9} "
                        f"{spans / elapsed:8.0f} spans/s  drain after the loop {drained:6.3f} s"
                        + (f"  spin {spin:14,.0f} /s" if is_busy else "")
                        + (f"  INVALID ({problem}): left out" if problem else ""),
                        flush=True,
                    )
                    if problem:
                        left_out += 1
                    elif is_busy:
                        busy[who].append(spans / elapsed)
                        busy_drain[who].append(drained)
                        busy_spin[who].append(spin)
                    else:
                        idle[who].append(spans / elapsed)
                        idle_drain[who].append(drained)

    def med(values: list[float]) -> float:
        return statistics.median(values) if values else float("nan")

    print(f"\n{spans} spans a drain, medians of {args.repeat}")
    base = med(alone)
    rows = (
        ("spans persisted per second, host idle:", [f"{med(idle[w]):12.0f}" for w in writers]),
        ("spans persisted per second, host CPU-bound:", [f"{med(busy[w]):12.0f}" for w in writers]),
        ("drain after the loop, host idle (s):", [f"{med(idle_drain[w]):12.3f}" for w in writers]),
        ("drain after the loop, host CPU-bound (s):", [f"{med(busy_drain[w]):12.3f}" for w in writers]),
        ("host speed kept while the writer drains:", [f"{med(busy_spin[w]) / base:12.1%}" for w in writers]),
    )
    print(f"{'':<46}" + "".join(f"{w:>12}" for w in writers))
    for title, cells in rows:
        print(f"{title:<46}" + "".join(cells))
    if left_out:
        print(f"{left_out} drain(s) did not persist every span and were left out")


if __name__ == "__main__":
    main()
