"""How long a long span takes to be on disk as open, under heavy writing and CPU contention.

Run it as a script (it is not a test and asserts nothing about timing)::

    python bench/bench_open_row_latency.py [--seconds S] [--busy N] [--rounds R] [--baseline-src DIR]

Each round starts ``tests/stress_agent.py churn`` (the agent of the SIGKILL test: three threads,
about 5,000 spans/s, each keeping a span open 0.25 to 0.6 s and printing its id and start time)
beside N busy-looping processes, polls the file every 20 ms for the long spans' rows, and kills the
agent after S seconds. A span's latency is the first poll that saw its row minus its start (so it
includes up to one poll of lag). The first span of each thread is reported apart: its row waits for
the writer process to start. The SIGKILL test's bar is the flush interval, 200 ms. With
``--baseline-src``, an older checkout's ``src/`` runs the same rounds, alternately.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import closing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STRESS_AGENT = ROOT / "tests" / "stress_agent.py"
POLL_S = 0.02
THREADS = 3


def one_round(seconds: float, busy: int, src: str | None) -> tuple[list[float], list[float]]:
    """(latencies of each thread's first long span, of the others), in ms; unseen spans are inf."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = src
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "churn.db"
        args = ["churn", "--db", str(db), "--threads", str(THREADS), "--max-db-mb", "20"]
        agent = subprocess.Popen(
            [sys.executable, str(STRESS_AGENT), *args], stdout=subprocess.PIPE, text=True, env=env
        )
        started: list[tuple[int, tuple[str, str]]] = []

        def read() -> None:
            assert agent.stdout is not None
            for line in agent.stdout:
                _, trace_id, span_id, started_ns = line.split()
                started.append((int(started_ns), (trace_id, span_id)))

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        seen: dict[tuple[str, str], int] = {}
        end = time.monotonic() + seconds
        try:
            while time.monotonic() < end:
                try:
                    with closing(sqlite3.connect(db, timeout=1)) as conn:
                        keys = conn.execute("SELECT trace_id, span_id FROM spans WHERE name LIKE 'long-%'")
                        found = keys.fetchall()
                except sqlite3.Error:  # not created yet, or busy: the next poll
                    found = []
                now = time.time_ns()  # after the query: a latency is never under-stated
                for key in found:
                    seen.setdefault(key, now)
                time.sleep(POLL_S)
        finally:
            killed_ns = time.time_ns()
            agent.kill()
            agent.wait()
            for loop in loops:
                loop.kill()
                loop.wait()
        reader.join(5)
    last_ns = killed_ns - int(1e9)  # a span started in the last second before the kill may not be seen
    ordered = sorted(started)
    latencies = [
        (seen[key] - ns) / 1e6 if key in seen else float("inf") for ns, key in ordered if ns < last_ns
    ]
    return latencies[:THREADS], latencies[THREADS:]


def describe(firsts: list[float], others: list[float]) -> str:
    others = sorted(others)
    p90 = others[int(len(others) * 0.9)] if others else float("nan")
    return (
        f"first spans {min(firsts):.0f}-{max(firsts):.0f} ms; others (n={len(others)}): "
        f"median {statistics.median(others):.0f}, p90 {p90:.0f}, max {max(others):.0f} ms, "
        f"over 200 ms: {sum(x > 200 for x in others)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="how long each round's agent runs")
    parser.add_argument("--busy", type=int, default=2, help="busy-looping processes beside it")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--baseline-src", help="an older checkout's src/, run alternately")
    args = parser.parse_args()
    contenders: dict[str, str | None] = {"current": None}
    if args.baseline_src:
        contenders["baseline"] = args.baseline_src
    print(
        f"{THREADS} churn threads, {args.busy} busy loops, {args.seconds:g} s a round, {args.rounds} rounds"
    )
    for round_ in range(args.rounds):
        for name, src in contenders.items():
            firsts, others = one_round(args.seconds, args.busy, src)
            print(f"round {round_ + 1} {name:>8}: {describe(firsts, others)}", flush=True)


if __name__ == "__main__":
    main()
