"""The host under load: what the recorder costs a busy agent, against a no-op span processor.

Run it as a script (it is not a test and asserts nothing about timing)::

    python bench/bench_host_load.py [--repeat R] [--only burst,cpu,steady] [--set VAR=VALUE ...]
                                    [--json out.json]

Every run is a fresh Python process (``--child``), so no contender inherits another's heap, GC
generations or threads. Within each repeat the contenders run back to back and the first one
rotates. A bar's figure is taken within each repeat (this machine's speed drifts by tens of per
cent over seconds, so a ratio of runs seconds apart is steadier than a ratio of medians) and the
median of the R figures is the result; the tables show each contender's median. The contenders:

- ``noop``: a TracerProvider with a SpanProcessor that does nothing (the floor);
- ``blackbox``: BlackboxSpanProcessor with its defaults, on a fresh file (``--set`` passes
  OTEL_BLACKBOX_* settings to it, to sweep one);
- ``batch-noop`` (information): BatchSpanProcessor with a no-op exporter;
- ``bare`` (the CPU-bound loop only): no processor at all, the speed the others keep.

The measurements, and the bars of issue 23:

1. **burst**: 4 threads make 50,000 spans each as fast as they can (one 200-character attribute a
   span). Wall time of the burst (bar: ≤ 1.25× the no-op's), peak RSS growth during it (VmHWM
   after, minus VmRSS before, after a warm-up: ≤ 64 MB), the slowest single start + end
   (≤ 2× the no-op's). After the burst, ``force_flush`` and the rows are counted: finished rows plus
   ``dropped_count()`` must equal the spans made, or the run is reported invalid.
2. **cpu**: a CPU-bound loop, two spans (bench_recorder's AGENT/LLM pair) per ~160 µs of pure-Python
   work (bench_cpu_host's ``agent_work``, calibrated once in the parent), timed until
   ``force_flush`` returns. Speed kept = bare time / contender time (bar: ≥ 0.90).
3. **steady**: an agent that waits between steps (a pair of spans, then a 200 µs sleep, 5,000 times).
   The wall time of the pairs alone, per span; the bar: the recorder's cost beyond the no-op's is
   ≤ 10 % of the no-op's span. Every span must be on disk and none dropped.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench_cpu_host import agent_work, calibrate
from bench_recorder import FLUSH_TIMEOUT_MS, NoopExporter, machine_info, otel_pairs, rotated
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from otel_blackbox import BlackboxConfig, BlackboxSpanProcessor

MEASURES = ("burst", "cpu", "steady")
CONTENDERS = {
    "burst": ("noop", "blackbox", "batch-noop"),
    "cpu": ("bare", "noop", "blackbox", "batch-noop"),
    "steady": ("noop", "blackbox", "batch-noop"),
}
LABELS = {
    "bare": "bare SDK (no processor)",
    "noop": "no-op SpanProcessor",
    "blackbox": "BlackboxSpanProcessor (defaults)",
    "blackbox-before": "BlackboxSpanProcessor, --baseline-src",
    "batch-noop": "BatchSpanProcessor(no-op exporter)",
}
BURST_THREADS, BURST_SPANS = 4, 50_000
CPU_WORK_US, CPU_PAIRS = 160.0, 2_000
STEADY_PAIRS, STEADY_SLEEP_S = 5_000, 0.0002
WARMUP_SPANS = 4_000
BARS = {
    "burst wall / no-op": ("<=", 1.25),
    "burst peak RSS growth, MB": ("<=", 64.0),
    "slowest start+end / no-op": ("<=", 2.0),
    "cpu loop speed kept": (">=", 0.90),
    "steady cost beyond no-op, share of its span": ("<=", 0.10),
}


class NoopProcessor(SpanProcessor):
    """The floor: the SDK's own cost of a span, with nothing recording it."""


# -- the child: one contender, one measurement, in a fresh process ------------------------------------


def vm_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def make_provider(contender: str, db: Path) -> tuple[TracerProvider, Any]:
    provider = TracerProvider(shutdown_on_exit=False)
    processor: Any = None
    if contender == "noop":
        processor = NoopProcessor()
    elif contender == "batch-noop":
        processor = BatchSpanProcessor(NoopExporter())
    elif contender == "blackbox":
        processor = BlackboxSpanProcessor(config=BlackboxConfig.from_env(db_path=db))
    elif contender != "bare":
        raise ValueError(contender)
    if processor is not None:
        provider.add_span_processor(processor)
    return provider, processor


def finished_rows(db: Path) -> int:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT count(end_ns) FROM spans").fetchone()[0])
    finally:
        conn.close()


def accounting(contender: str, processor: Any, db: Path, made: int) -> dict[str, Any]:
    """Flush, then check that every span is on disk or counted as dropped."""
    if contender != "blackbox":
        return {"valid": True, "dropped": 0, "rows": made}
    flushed = processor.force_flush(FLUSH_TIMEOUT_MS)
    rows, dropped = finished_rows(db), processor.dropped_count()
    note = "" if flushed else "force_flush returned False; "
    if rows + dropped != made:
        note += f"{rows} rows + {dropped} dropped != {made} made"
    if processor.write_errors:
        note += f"; {processor.write_errors} write errors"
    return {"valid": not note, "note": note, "rows": rows, "dropped": dropped}


def child_burst(contender: str, db: Path) -> dict[str, Any]:
    provider, processor = make_provider(contender, db)
    tracer = provider.get_tracer("bench_host_load")
    text = "x" * 200
    slowest = [0.0] * BURST_THREADS

    def worker(index: int, count: int, prefix: str) -> None:
        clock = time.perf_counter
        worst = 0.0
        for i in range(count):
            began = clock()
            tracer.start_span(f"{prefix}-{index}-{i}", attributes={"input.value": text}).end()
            took = clock() - began
            if took > worst:
                worst = took
        slowest[index] = worst

    def burst(count: int, prefix: str) -> float:
        pool = [threading.Thread(target=worker, args=(i, count, prefix)) for i in range(BURST_THREADS)]
        began = time.perf_counter()
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join()
        return time.perf_counter() - began

    burst(WARMUP_SPANS // BURST_THREADS, "warmup")  # starts the writer; warms the allocator
    if processor is not None and contender == "blackbox":
        processor.force_flush(FLUSH_TIMEOUT_MS)
    gc.collect()
    rss_before = vm_kb("VmRSS")
    wall = burst(BURST_SPANS, "burst")
    peak = vm_kb("VmHWM")
    made = WARMUP_SPANS // BURST_THREADS * BURST_THREADS + BURST_SPANS * BURST_THREADS
    result = {
        "wall_s": wall,
        "rss_growth_mb": max(0, peak - rss_before) / 1024,
        "slowest_s": max(slowest),
        **accounting(contender, processor, db, made),
    }
    provider.shutdown()
    return result


def child_cpu(contender: str, db: Path, messages: int) -> dict[str, Any]:
    provider, processor = make_provider(contender, db)
    tracer = provider.get_tracer("bench_host_load")

    def work(step: int) -> int:
        return agent_work(messages, step)

    otel_pairs(tracer, 200, work=work)  # warm-up: the writer starts, the code paths are warm
    if contender == "blackbox":
        processor.force_flush(FLUSH_TIMEOUT_MS)
    gc.collect()
    began = time.perf_counter()
    otel_pairs(tracer, CPU_PAIRS, work=work)
    if processor is not None:
        processor.force_flush(FLUSH_TIMEOUT_MS)
    elapsed = time.perf_counter() - began
    result = {"elapsed_s": elapsed, **accounting(contender, processor, db, 2 * (CPU_PAIRS + 200))}
    provider.shutdown()
    return result


def child_steady(contender: str, db: Path) -> dict[str, Any]:
    provider, processor = make_provider(contender, db)
    tracer = provider.get_tracer("bench_host_load")
    clock, sleep = time.perf_counter, time.sleep
    otel_pairs(tracer, 500)  # warm-up
    if contender == "blackbox":
        processor.force_flush(FLUSH_TIMEOUT_MS)
    gc.collect()
    in_spans = 0.0
    for _ in range(STEADY_PAIRS):
        began = clock()
        otel_pairs(tracer, 1)
        in_spans += clock() - began
        sleep(STEADY_SLEEP_S)
    result = {
        "us_per_span": in_spans / (2 * STEADY_PAIRS) * 1e6,
        **accounting(contender, processor, db, 2 * (STEADY_PAIRS + 500)),
    }
    if contender == "blackbox" and result["dropped"]:
        result["valid"], result["note"] = False, f"{result['dropped']} dropped at a steady pace"
    provider.shutdown()
    return result


def run_child(argv: Sequence[str]) -> int:
    measure, contender = argv[0], argv[1]
    with tempfile.TemporaryDirectory(prefix="bench-host-load-") as tmp:
        db = Path(tmp) / "blackbox.db"
        if measure == "burst":
            result = child_burst(contender, db)
        elif measure == "cpu":
            result = child_cpu(contender, db, int(argv[2]))
        else:
            result = child_steady(contender, db)
    print(json.dumps(result))
    return 0


# -- the parent: fresh processes, alternating, medians ------------------------------------------------


def spawn(measure: str, contender: str, extra: Sequence[str], env: dict[str, str]) -> dict[str, Any]:
    if contender == "blackbox-before":  # the same child, with the older source first on the path
        contender, env = "blackbox", {**env, "PYTHONPATH": env["BENCH_BASELINE_PATH"]}
    command = [sys.executable, __file__, "--child", measure, contender, *extra]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600, check=False)
    if done.returncode != 0:
        return {"valid": False, "note": f"exit {done.returncode}: {done.stderr.strip()[-300:]}"}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def median(samples: list[dict[str, Any]], key: str) -> float:
    values = [s[key] for s in samples if s.get("valid")]
    return statistics.median(values) if values else float("nan")


def paired(samples_a: list[dict[str, Any]], samples_b: list[dict[str, Any]], key: str) -> list[float]:
    """a / b within each repeat (the two ran seconds apart: on a noisy machine, the steadier ratio)."""
    pairs = zip(samples_a, samples_b, strict=True)
    return [a[key] / b[key] for a, b in pairs if a.get("valid") and b.get("valid")]


def figures(results: dict[str, dict[str, list[dict[str, Any]]]], who: str) -> dict[str, list[float]]:
    """Each bar's figure for the recorder ``who`` in every repeat."""
    out: dict[str, list[float]] = {}
    if "burst" in results:
        b = results["burst"]
        out["burst wall / no-op"] = paired(b[who], b["noop"], "wall_s")
        out["burst peak RSS growth, MB"] = [s["rss_growth_mb"] for s in b[who] if s.get("valid")]
        out["slowest start+end / no-op"] = paired(b[who], b["noop"], "slowest_s")
    if "cpu" in results:
        c = results["cpu"]
        out["cpu loop speed kept"] = paired(c["bare"], c[who], "elapsed_s")
    if "steady" in results:
        s = results["steady"]
        out["steady cost beyond no-op, share of its span"] = [
            r - 1 for r in paired(s[who], s["noop"], "us_per_span")
        ]
    return out


def print_tables(
    results: dict[str, dict[str, list[dict[str, Any]]]], bars_of: dict[str, dict[str, list[float]]]
) -> None:
    columns = {
        "burst": ("wall_s", "rss_growth_mb", "slowest_s", "dropped"),
        "cpu": ("elapsed_s",),
        "steady": ("us_per_span",),
    }
    for measure, by_contender in results.items():
        print(f"\n{measure}: " + ", ".join(f"{c} (median)" for c in columns[measure]))
        for contender, samples in by_contender.items():
            cells = "  ".join(f"{median(samples, c):10.3f}" for c in columns[measure])
            invalid = [s.get("note", "") for s in samples if not s.get("valid")]
            print(f"  {LABELS[contender]:<36} {cells}" + (f"  INVALID: {invalid}" if invalid else ""))
    for who, bars in bars_of.items():
        print(f"\nbars (issue 23), {LABELS[who]}: the median of the figure within each repeat, and each")
        print_bars(bars)


def print_bars(bars: dict[str, list[float]]) -> None:
    for name, values in bars.items():
        op, bar = BARS[name]
        value = statistics.median(values) if values else float("nan")
        met = value <= bar if op == "<=" else value >= bar
        each = " ".join(f"{v:.3f}" for v in values)
        print(f"  {name:<46} {value:8.3f}  (bar {op} {bar})  {'met ' if met else 'MISS'}  [{each}]")


def main(argv: Sequence[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    if args_in[:1] == ["--child"]:
        return run_child(args_in[1:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default=",".join(MEASURES), help="comma list of: " + ", ".join(MEASURES))
    parser.add_argument("--set", action="append", default=[], metavar="VAR=VALUE", help="for the recorder")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--baseline-src", type=Path, help="an older checkout's src/: its recorder runs as blackbox-before"
    )
    args = parser.parse_args(args_in)
    measures = [m for m in args.only.split(",") if m]
    if unknown := set(measures) - set(MEASURES):
        parser.error(f"unknown measure: {', '.join(sorted(unknown))}")
    env = dict(os.environ)
    env["PYTHONHASHSEED"] = "0"  # the same dict layouts in every child: one less source of noise
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).parent), env.get("PYTHONPATH")]))
    contenders = {m: list(c) for m, c in CONTENDERS.items()}
    if args.baseline_src is not None:
        if not (args.baseline_src / "otel_blackbox" / "__init__.py").is_file():
            parser.error(f"--baseline-src {args.baseline_src}: no otel_blackbox package there")
        env["BENCH_BASELINE_PATH"] = os.pathsep.join([str(args.baseline_src.resolve()), env["PYTHONPATH"]])
        for names in contenders.values():
            names.insert(names.index("blackbox") + 1, "blackbox-before")
    for item in args.set:
        name, sep, value = item.partition("=")
        if not sep:
            parser.error(f"--set {item!r}: expected VAR=VALUE")
        env[name] = value
    info = machine_info()
    print(f"machine: {info['nproc']} CPUs, Python {info['python']}, load {info['loadavg_1m']}")
    print(f"recorder settings: {args.set or 'defaults'}")
    extra: dict[str, list[str]] = {"burst": [], "steady": [], "cpu": []}
    if "cpu" in measures:
        messages, measured = calibrate(CPU_WORK_US)
        extra["cpu"] = [str(messages)]
        print(f"cpu loop: {messages} messages a step, {measured:.1f} µs of work (aim {CPU_WORK_US:.0f})")
    results: dict[str, dict[str, list[dict[str, Any]]]] = {}
    began = time.perf_counter()
    for repeat in range(args.repeat):
        for measure in measures:
            by_contender = results.setdefault(measure, {c: [] for c in contenders[measure]})
            for contender in rotated(contenders[measure], repeat):
                by_contender[contender].append(spawn(measure, contender, extra[measure], env))
    bars: dict[str, dict[str, list[float]]] = {
        who: figures(results, who) for who in ("blackbox", "blackbox-before") if who in contenders["burst"]
    }
    print_tables(results, bars)
    took = time.perf_counter() - began
    print(f"\n{args.repeat} repeats in {took:.0f} s; load average at the end {os.getloadavg()[0]:.2f}")
    if args.json:
        doc = {"machine": info, "set": args.set, "results": results, "bars": bars}
        args.json.write_text(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
