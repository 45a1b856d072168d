"""How long a long span takes from its start to its open row committed, under load, by stage.

Run it as a script (it is not a test and asserts nothing about timing)::

    python bench/bench_open_row_latency.py [--load churn|burst|both] [--seconds S] [--busy N]
                                           [--rounds R] [--baseline-src DIR]

Loads:

* ``churn``: the agent of the SIGKILL test (``tests/programs/stress_agent.py churn``: three threads, about
  5,000 spans/s, a 20 MB size cap reached within seconds so eviction runs throughout, each thread
  keeping a span open 0.25 to 0.6 s), killed with SIGKILL after S seconds;
* ``burst``: the burst test's agent (``stress_agent.py burst --long-spans``: four threads making
  spans as fast as they can, far more than the queue holds) with a fifth thread keeping long spans
  open the same way, for the whole burst.

Each runs beside N busy-looping processes (``--busy``: the machine's other work). The agent runs
under ``bench/open_row_probe.py``, which timestamps every stage of every open row in the agent and
in its writer process: the span's start (the SDK's), the shipper taking it from the registry, the
delivery to the writer process, the writer receiving it, its transaction committing. A span's
latency is its commit minus its start; a long span started at least a second before the end that
was never committed counts as infinite (a miss). Figures: the distribution against the flush
interval (200 ms), the first span of each thread apart (its row waits for the writer process to
start), and where the time of the slowest went. With ``--baseline-src``, an older checkout's
``src/`` runs the same rounds, alternately (the probe wraps the same internals there).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STRESS_AGENT = ROOT / "tests" / "programs" / "stress_agent.py"
PROBE = ROOT / "bench" / "open_row_probe.py"
FLUSH_INTERVAL_MS = 200.0


@dataclass
class Way:
    """One open row's way to disk (ns since the epoch; 0 where the stage was not seen)."""

    start: int
    taken: int = 0
    sent: int = 0
    received: int = 0
    committed: int = 0

    @property
    def latency_ms(self) -> float:
        return (self.committed - self.start) / 1e6 if self.committed else math.inf


@dataclass
class Round:
    firsts: list[Way] = field(default_factory=list)
    others: list[Way] = field(default_factory=list)
    writer_start_ms: float = math.nan
    maintenance_ms: list[float] = field(default_factory=list)
    transaction_ms: list[float] = field(default_factory=list)


def run_agent(
    load: str, seconds: float, busy: int, src: str | None, probe_dir: Path, db: Path
) -> tuple[list[str], int]:
    """Run the probed agent; its printed long spans and the time it ended (killed or done)."""
    env = dict(os.environ, BLACKBOX_PROBE_DIR=str(probe_dir))
    if src is not None:
        env["PYTHONPATH"] = src
    if load == "churn":
        args = ["churn", "--db", str(db), "--threads", "3", "--max-db-mb", "20"]
    else:
        args = ["burst", "--db", str(db), "--spans", "400000", "--queue", "2000", "--long-spans"]
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    lines: list[str] = []
    try:
        agent = subprocess.Popen(
            [sys.executable, str(PROBE), str(STRESS_AGENT), *args],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
        )  # fmt: skip

        def read() -> None:
            assert agent.stdout is not None
            lines.extend(line for line in agent.stdout if line.startswith("L "))

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        with contextlib.suppress(subprocess.TimeoutExpired):
            agent.wait(seconds if load == "churn" else 600)
        ended_ns = time.time_ns()
        agent.kill()
        agent.wait()
        reader.join(10)
        time.sleep(1.0)  # the writer process writes what it had, then exits: let the probe see it
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    return lines, ended_ns


def read_round(lines: list[str], ended_ns: int, probe_dir: Path, threads: int) -> Round:
    """The ways of a round's long spans; the first ``threads`` (one a thread) are apart."""
    ways: dict[str, Way] = {}
    order: list[str] = []
    for line in lines:
        _, trace_id, span_id, printed_ns = line.split()
        key = f"{trace_id}:{span_id}"
        ways[key] = Way(start=int(printed_ns))
        order.append(key)
    result = Round()
    for log in probe_dir.glob("*.log"):
        sending: list[str] = []  # taken, waiting for the delivery that carries them
        maintenance_began = transaction_began = 0
        for raw in log.read_text().splitlines():
            kind, now_text, *rest = raw.split()
            now = int(now_text)
            if kind == "P0":
                started = now
            elif kind == "P1" and math.isnan(result.writer_start_ms):
                result.writer_start_ms = (now - started) / 1e6
            elif kind == "T":
                way = ways.get(rest[0])
                if way is not None and not way.taken:
                    way.start, way.taken = int(rest[1]), now  # the SDK's start time, not the printed one
                    sending.append(rest[0])
            elif kind == "D1" and int(rest[1]):
                for key in sending:
                    ways[key].sent = now
                sending = []
            elif kind == "V":
                for key in rest[2:]:
                    if key in ways and not ways[key].received:
                        ways[key].received = now
            elif kind == "W0":
                transaction_began = now
            elif kind == "W1":
                result.transaction_ms.append((now - transaction_began) / 1e6)
                for key in rest[2:]:
                    if key in ways and not ways[key].committed:
                        ways[key].committed = now
            elif kind == "M0":
                maintenance_began = now
            elif kind == "M1":
                result.maintenance_ms.append((now - maintenance_began) / 1e6)
    # Only spans that had a second to get there: a span started just before the end may not have.
    eligible = [ways[k] for k in order if ways[k].start < ended_ns - 1_000_000_000]
    first_keys = set(order[:threads])
    result.firsts = [ways[k] for k in order if k in first_keys and ways[k] in eligible]
    result.others = [ways[k] for k in order if k not in first_keys and ways[k] in eligible]
    return result


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(fraction * len(ordered)) - 1)] if ordered else math.nan


def stage_ms(way: Way) -> str:
    """Where a slow open row's time went: registry, shipper, pipe, writer (ms)."""
    if not way.taken:
        return "never taken from the registry"
    parts = [f"registry {(way.taken - way.start) / 1e6:.0f}"]
    if way.sent:
        parts.append(f"shipper {(way.sent - way.taken) / 1e6:.0f}")
    if way.received:
        parts.append(f"pipe {(way.received - (way.sent or way.taken)) / 1e6:.0f}")
    if way.committed:
        parts.append(f"writer {(way.committed - (way.received or way.sent or way.taken)) / 1e6:.0f}")
    return ", ".join(parts)


def describe(name: str, rounds: list[Round]) -> list[str]:
    others = [w.latency_ms for r in rounds for w in r.others]
    firsts = [w.latency_ms for r in rounds for w in r.firsts]
    over = sum(x > FLUSH_INTERVAL_MS for x in others)
    starts = [r.writer_start_ms for r in rounds]
    transactions = [t for r in rounds for t in r.transaction_ms]
    maintenance = [m for r in rounds for m in r.maintenance_ms]
    lines = [
        f"{name}: n={len(others)} median {statistics.median(others):.0f} ms,"
        f" p99 {percentile(others, 0.99):.0f}, p99.9 {percentile(others, 0.999):.0f}, max {max(others):.0f};"
        f" over {FLUSH_INTERVAL_MS:.0f} ms:"
        f" {over} ({100 * over / len(others):.2f} %)",
        f"{name}: first span of each thread (n={len(firsts)}): {min(firsts):.0f}-{max(firsts):.0f} ms; "
        f"writer process start {min(starts):.0f}-{max(starts):.0f} ms",
        f"{name}: writer transactions p99 {percentile(transactions, 0.99):.0f} ms,"
        f" max {max(transactions, default=math.nan):.0f}; maintenance p99"
        f" {percentile(maintenance, 0.99):.0f} ms, max {max(maintenance, default=math.nan):.0f}",
    ]
    slowest = sorted((w for r in rounds for w in r.others + r.firsts), key=lambda w: w.latency_ms)[-3:]
    lines += [f"{name}:   slow: {w.latency_ms:.0f} ms = {stage_ms(w)}" for w in reversed(slowest)]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--load", choices=["churn", "burst", "both"], default="both")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long each churn round's agent runs")
    parser.add_argument("--busy", type=int, default=0, help="busy-looping processes beside the agent")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline-src", help="an older checkout's src/, run alternately")
    args = parser.parse_args()
    contenders: dict[str, str | None] = {"current": None}
    if args.baseline_src:
        contenders["baseline"] = args.baseline_src
    loads = ["churn", "burst"] if args.load == "both" else [args.load]
    print(f"{args.busy} busy loops, {args.rounds} rounds, churn {args.seconds:g} s a round", flush=True)
    for load in loads:
        results: dict[str, list[Round]] = {name: [] for name in contenders}
        for _ in range(args.rounds):
            for name, src in contenders.items():
                with tempfile.TemporaryDirectory() as tmp:
                    probe_dir = Path(tmp) / "probe"
                    probe_dir.mkdir()
                    lines, ended_ns = run_agent(
                        load, args.seconds, args.busy, src, probe_dir, Path(tmp) / "a.db"
                    )
                    threads = 3 if load == "churn" else 1  # threads keeping long spans open
                    results[name].append(read_round(lines, ended_ns, probe_dir, threads))
        for name, rounds in results.items():
            print("\n".join(describe(f"{load} {name:>8}", rounds)), flush=True)


if __name__ == "__main__":
    main()
