"""Side-by-side benchmark: bare OTel SDK, BatchSpanProcessor, BlackboxSpanProcessor, ai-blackbox-recorder.

Run it as a script (it is not a test and asserts nothing about timing)::

    python bench/bench_recorder.py [--spans N] [--repeat R] [--json out.json] [--profile] [--no-gc]

Three measurements, each contender alternated with the others in every repeat (the starting
contender rotates), the median of R repeats reported, and ratios compared with the targets:

1. caller cost: µs per span on the caller's thread for a nested parent/child pair of small spans,
   timing only the span-creation loop (never the flush);
2. persisted spans/s: from before the first span until force_flush()/flush() returns, with the rows
   counted in SQLite afterwards (a run that did not persist every span is not counted);
3. redaction cost: the same persisted run with BlackboxConfig(redact=False) vs the default, on the
   ordinary spans and on secret-heavy ones (the prompt pastes a config file with six credentials).

``--profile`` adds cProfile listings of the caller loop and of the Blackbox writer (run on the main
thread over a prepared queue) plus the writer's isolated cost per span, with and without redaction.
``--phases`` times a persisted Blackbox run's loop and the flush after it apart, and counts the rows
written during the loop, at three GIL switch intervals: how much of the writer's work overlaps the
agent's loop.
``--no-gc`` turns the cyclic garbage collector off while timing, to show how much of the caller cost is
collections traversing spans that are still queued (a diagnostic, not a setting anyone should use).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import platform
import pstats
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import ai_blackbox_recorder as abr  # type: ignore[import-untyped, unused-ignore]
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer

from otel_blackbox import BlackboxConfig, BlackboxSpanProcessor

# ~200 characters, no secrets in it (the redactor still scans every character).
INPUT_TEXT = (
    "Plan the next step: look up tomorrow's weather in Paris with the weather tool, convert the "
    "temperature to Fahrenheit, then answer the user in one short, friendly sentence citing the source."
)
assert 180 <= len(INPUT_TEXT) <= 220


def _secret_text() -> str:
    """A prompt that pastes a config file: six credentials in their real shapes (fake, seeded)."""
    rng = random.Random(0)

    def chars(alphabet: str, n: int) -> str:
        return "".join(rng.choice(alphabet) for _ in range(n))

    alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    base32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
    return (
        f"Deploy with this config and tell me what is wrong. OPENAI_API_KEY=sk-proj-{chars(alnum, 74)}"
        f"T3BlbkFJ{chars(alnum, 74)}\naws_access_key_id = AKIA{chars(base32, 16)}\n"
        f"aws_secret_access_key = {chars(alnum + '/+', 40)}\ngithub: ghp_{chars(alnum, 36)}\n"
        f"database: postgres://app:{chars(alnum, 20)}@db.internal:5432/prod\n"
        f"Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.{chars(alnum, 60)}.{chars(alnum, 43)}"
    )


SECRET_TEXT = _secret_text()  # ~620 characters

FLUSH_TIMEOUT_MS = 300_000

TARGET_CALLER_RATIO = 1.25  # added(Blackbox) / added(BatchSpanProcessor) <= this
TARGET_VS_ABR = 3.0  # persisted rate: Blackbox / ai-blackbox-recorder >= this
TARGET_VS_BATCH = 0.75  # persisted rate: Blackbox / BatchSpanProcessor(no-op exporter) >= this

TARGET_BYTES_PER_SPAN = 400  # on disk after a checkpoint, Blackbox: <= this

CALLER_CONTENDERS = ("bare-sdk", "batch", "batch-noop", "blackbox", "blackbox-thread", "ai-blackbox-recorder")
OTEL_PROCESSORS = ("batch", "batch-noop", "blackbox", "blackbox-thread")  # the ones with an "added" cost
PERSIST_CONTENDERS = (
    "batch-noop", "blackbox", "blackbox-thread", "blackbox-noredact", "blackbox-secrets",
    "blackbox-secrets-noredact", "ai-blackbox-recorder",
)  # fmt: skip
BLACKBOX_CONTENDERS = (
    "blackbox", "blackbox-thread", "blackbox-noredact", "blackbox-secrets", "blackbox-secrets-noredact",
)  # fmt: skip
# The two writers, each held to the same targets: "blackbox" is the default (writer="process").
WRITERS = {"blackbox": "process", "blackbox-thread": "thread"}
ON_DISK = ("blackbox", "blackbox-thread", "ai-blackbox-recorder")  # bytes per span reported for these
LABELS = {
    "bare-sdk": "bare SDK (no processor)",
    "batch": "BatchSpanProcessor(InMemorySpanExporter)",
    "batch-noop": "BatchSpanProcessor(no-op exporter)",
    "blackbox": 'BlackboxSpanProcessor (writer="process")',
    "blackbox-thread": 'BlackboxSpanProcessor(writer="thread")',
    "blackbox-noredact": "BlackboxSpanProcessor(redact=False)",
    "blackbox-secrets": "BlackboxSpanProcessor, secret-heavy spans",
    "blackbox-secrets-noredact": "BlackboxSpanProcessor(redact=False), secret-heavy",
    "ai-blackbox-recorder": f"ai-blackbox-recorder {abr.__version__} Tracer().span",
}


# -- the workload ----------------------------------------------------------------------------------


def otel_pairs(
    tracer: Tracer, pairs: int, text: str = INPUT_TEXT, work: Callable[[int], object] | None = None
) -> None:
    """A parent AGENT span with one LLM child, ``pairs`` times: 5 attributes per span.

    ``work(i)``, when given, runs before each pair: the host's own work (bench_cpu_host.py).
    """
    for i in range(pairs):
        if work is not None:
            work(i)
        with (
            tracer.start_as_current_span(
                "agent.step",
                attributes={
                    "openinference.span.kind": "AGENT",
                    "input.value": text,
                    "agent.step": i,
                    "agent.max_steps": 10,
                    "agent.retries": 0,
                },
            ),
            tracer.start_as_current_span(
                "llm.chat",
                attributes={
                    "openinference.span.kind": "LLM",
                    "input.value": text,
                    "llm.token_count.prompt": 120 + i % 50,
                    "llm.token_count.completion": 30,
                    "llm.token_count.total": 150 + i % 50,
                },
            ),
        ):
            pass


def abr_pairs(tracer: Any, pairs: int) -> None:
    """The same workload through ai-blackbox-recorder's context manager (kind, inputs, 3 ints)."""
    agent, llm = abr.SpanKind.AGENT, abr.SpanKind.LLM
    for i in range(pairs):
        with (
            tracer.span(
                "agent.step",
                kind=agent,
                inputs={"input.value": INPUT_TEXT},
                metadata={"agent.step": i, "agent.max_steps": 10, "agent.retries": 0},
            ),
            tracer.span(
                "llm.chat",
                kind=llm,
                inputs={"input.value": INPUT_TEXT},
                metadata={
                    "llm.token_count.prompt": 120 + i % 50,
                    "llm.token_count.completion": 30,
                    "llm.token_count.total": 150 + i % 50,
                },
            ),
        ):
            pass


class NoopExporter(SpanExporter):
    """Accepts every batch and drops it; counts what it was given."""

    def __init__(self) -> None:
        self.exported = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.exported += len(spans)
        return SpanExportResult.SUCCESS


# -- one run ---------------------------------------------------------------------------------------


@dataclass
class Sample:
    contender: str
    spans: int
    elapsed_ns: int  # wall time of what was timed (perf_counter_ns)
    caller_cpu_ns: int  # CPU time of the caller's thread over the same interval (thread_time_ns)
    persisted: int  # spans accounted for afterwards: final rows on disk / spans exported or kept
    rows: int  # rows in SQLite (-1 when there is no database)
    valid: bool
    bytes_on_disk: int = -1  # db + -wal after shutdown and a TRUNCATE checkpoint (persisted runs)
    writer_mode: str | None = None  # BlackboxSpanProcessor.writer_mode, when it has one
    writer_pid: int | None = None  # BlackboxSpanProcessor.writer_pid, when it has one
    writer_rss_kb: int | None = None  # VmRSS of the writer process after the flush (persisted runs)
    writer_hwm_kb: int | None = None  # VmHWM (peak RSS) of the writer process

    @property
    def us_per_span(self) -> float:
        return self.elapsed_ns / self.spans / 1000

    @property
    def cpu_us_per_span(self) -> float:
        return self.caller_cpu_ns / self.spans / 1000

    @property
    def spans_per_s(self) -> float:
        return self.spans / (self.elapsed_ns / 1e9)

    @property
    def bytes_per_span(self) -> float:
        return self.bytes_on_disk / self.spans if self.bytes_on_disk >= 0 else float("nan")


def count_rows(db: Path, final_sql: str) -> tuple[int, int]:
    """(all rows, finished rows) in the spans table, read with a fresh sqlite3 connection."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        total, final = conn.execute(f"SELECT count(*), {final_sql} FROM spans").fetchone()
        return int(total), int(final or 0)
    finally:
        conn.close()


def remove_db(db: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


def size_on_disk(db: Path) -> int:
    """db + -wal bytes after a TRUNCATE checkpoint through a fresh connection (the writer has closed)."""
    conn = sqlite3.connect(db)
    try:
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:
            print(f"  ! {db.name}: the checkpoint was blocked (another connection is open)", file=sys.stderr)
        wal = Path(f"{db}-wal")
        return db.stat().st_size + (wal.stat().st_size if wal.exists() else 0)
    finally:
        conn.close()


def proc_status(pid: int) -> dict[str, int]:
    """The kB fields of /proc/<pid>/status (VmRSS, VmHWM, ...); empty if it cannot be read."""
    fields = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if value.strip().endswith(" kB"):
                fields[key] = int(value.split()[0])
    except (OSError, ValueError):
        return {}
    return fields


def proc_cpu_ns(pid: int) -> int | None:
    """utime + stime of a process over its life, from /proc/<pid>/stat (None if it cannot be read)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) ": fields from the 3rd (state)
    return (int(fields[11]) + int(fields[12])) * 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def writer_process(processor: BlackboxSpanProcessor) -> tuple[str | None, int | None]:
    """(writer_mode, writer_pid): both None before the writer process landed (then "process" == "thread")."""
    return getattr(processor, "writer_mode", None), getattr(processor, "writer_pid", None)


def blackbox_config(db: Path, spans: int, *, redact: bool = True, writer: str = "process") -> BlackboxConfig:
    # Every start and every end is queued: room for all of them, so nothing is dropped.
    return BlackboxConfig(
        db_path=db, max_queue_size=max(20_000, 2 * spans + 1024), redact=redact, writer=writer
    )


def run_otel(contender: str, spans: int, workdir: Path, *, persist: bool) -> Sample:
    """One OpenTelemetry run; ``persist`` times up to force_flush(), otherwise only the loop."""
    pairs = spans // 2
    db = workdir / f"{contender}.db"
    remove_db(db)
    provider = TracerProvider(shutdown_on_exit=False)
    memory: InMemorySpanExporter | None = None
    noop: NoopExporter | None = None
    blackbox: BlackboxSpanProcessor | None = None
    queue_room = 2 * spans + 1024
    if contender == "batch":
        memory = InMemorySpanExporter()
        provider.add_span_processor(BatchSpanProcessor(memory, max_queue_size=queue_room))
    elif contender == "batch-noop":
        noop = NoopExporter()
        provider.add_span_processor(BatchSpanProcessor(noop, max_queue_size=queue_room))
    elif contender in BLACKBOX_CONTENDERS:
        redact = not contender.endswith("-noredact")
        writer = WRITERS.get(contender, "process")
        blackbox = BlackboxSpanProcessor(config=blackbox_config(db, spans, redact=redact, writer=writer))
        provider.add_span_processor(blackbox)
    elif contender != "bare-sdk":
        raise ValueError(contender)
    tracer = provider.get_tracer("bench_recorder")
    gc.collect()

    text = SECRET_TEXT if contender.startswith("blackbox-secrets") else INPUT_TEXT
    t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
    otel_pairs(tracer, pairs, text)
    flushed = provider.force_flush(FLUSH_TIMEOUT_MS) if persist else True
    t1, c1 = time.perf_counter_ns(), time.thread_time_ns()

    if not persist:
        flushed = provider.force_flush(FLUSH_TIMEOUT_MS)  # untimed: only to check nothing was dropped
    n = 2 * pairs
    rows, persisted, dropped = -1, n, 0
    mode: str | None = None
    pid: int | None = None
    memory_kb: dict[str, int] = {}
    if memory is not None:
        persisted = len(memory.get_finished_spans())
        memory.clear()
    elif noop is not None:
        persisted = noop.exported
    elif blackbox is not None:
        dropped = blackbox.dropped_count()
        if dropped:
            print(f"  ! {contender}: {dropped} spans dropped", file=sys.stderr)
        rows, persisted = count_rows(db, "count(end_ns)")
        mode, pid = writer_process(blackbox)
        if persist and pid is not None and pid != os.getpid():
            memory_kb = proc_status(pid)  # before shutdown: the writer process may end with it
    provider.shutdown()
    size = size_on_disk(db) if persist and blackbox is not None else -1
    remove_db(db)
    valid = flushed and persisted == n and rows in (-1, n) and not dropped
    return Sample(
        contender, n, t1 - t0, c1 - c0, persisted, rows, valid, size, mode, pid,
        memory_kb.get("VmRSS"), memory_kb.get("VmHWM"),
    )  # fmt: skip


def run_abr(spans: int, workdir: Path, *, persist: bool, batch_size: int) -> Sample:
    """One ai-blackbox-recorder run: a Tracer on a fresh file, record_open_spans on (its default)."""
    pairs = spans // 2
    db = workdir / "ai-blackbox-recorder.db"
    remove_db(db)
    tracer = abr.Tracer(abr.BlackBoxConfig(db_path=str(db), batch_size=batch_size, record_open_spans=True))
    gc.collect()

    t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
    abr_pairs(tracer, pairs)
    flushed = bool(tracer.flush(timeout=FLUSH_TIMEOUT_MS / 1000)) if persist else True
    t1, c1 = time.perf_counter_ns(), time.thread_time_ns()

    if not persist:
        flushed = bool(tracer.flush(timeout=FLUSH_TIMEOUT_MS / 1000))
    tracer.close()
    n = 2 * pairs
    rows, persisted = count_rows(db, "count(end_time)")
    size = size_on_disk(db) if persist else -1
    remove_db(db)
    valid = flushed and persisted == n and rows == n
    return Sample("ai-blackbox-recorder", n, t1 - t0, c1 - c0, persisted, rows, valid, size)


def run_one(contender: str, spans: int, workdir: Path, *, persist: bool, abr_batch_size: int) -> Sample:
    if contender == "ai-blackbox-recorder":
        sample = run_abr(spans, workdir, persist=persist, batch_size=abr_batch_size)
    else:
        sample = run_otel(contender, spans, workdir, persist=persist)
    gc.collect()
    return sample


# -- the whole benchmark ---------------------------------------------------------------------------


def rotated(items: Sequence[str], by: int) -> list[str]:
    k = by % len(items)
    return [*items[k:], *items[:k]]


def median_of(samples: list[Sample], key: Callable[[Sample], float]) -> float:
    values = [key(s) for s in samples if s.valid]
    return statistics.median(values) if values else float("nan")


def ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("nan")  # e.g. a baseline below the bare SDK at tiny N


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def machine_info() -> dict[str, Any]:
    def version(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "not installed"

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "loadavg_1m": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        "nproc": usable,
        "cpu_count": os.cpu_count(),
        "cpu": cpu,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "opentelemetry-sdk": version("opentelemetry-sdk"),
        "otel-blackbox": version("otel-blackbox"),
        "ai-blackbox-recorder": version("ai-blackbox-recorder"),
    }


def run_benchmark(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    spans = args.spans - args.spans % 2
    kw: dict[str, Any] = {"abr_batch_size": args.abr_batch_size}
    warm = min(spans, 2000)
    print(f"warming up ({warm} spans per contender)...", flush=True)
    for contender in CALLER_CONTENDERS:
        run_one(contender, warm, workdir, persist=False, **kw)
    for contender in PERSIST_CONTENDERS:
        run_one(contender, warm, workdir, persist=True, **kw)

    caller: dict[str, list[Sample]] = {c: [] for c in CALLER_CONTENDERS}
    persist: dict[str, list[Sample]] = {c: [] for c in PERSIST_CONTENDERS}
    for rep in range(args.repeat):
        print(f"repeat {rep + 1}/{args.repeat}", flush=True)
        for contender in rotated(CALLER_CONTENDERS, rep):
            s = run_one(contender, spans, workdir, persist=False, **kw)
            caller[contender].append(s)
            bad = "" if s.valid else "  INVALID: not all spans kept"
            print(
                f"  caller   {contender:<25} {s.us_per_span:7.2f} µs/span "
                f"(caller CPU {s.cpu_us_per_span:6.2f})  kept {s.persisted}/{s.spans}{bad}",
                flush=True,
            )
        for contender in rotated(PERSIST_CONTENDERS, rep):
            s = run_one(contender, spans, workdir, persist=True, **kw)
            persist[contender].append(s)
            if s.rows >= 0:
                where = f"rows on disk {s.rows} ({s.persisted} finished), {s.bytes_per_span:.0f} B/span"
            else:
                where = f"exported {s.persisted}"
            if s.writer_mode is not None or s.writer_pid is not None:
                where += f", writer {s.writer_mode} pid {s.writer_pid}"
            bad = "" if s.valid else "  INVALID: not counted"
            print(
                f"  persist  {contender:<25} {s.spans_per_s:9.0f} spans/s "
                f"({s.elapsed_ns / 1e9:6.3f} s)  {where}{bad}",
                flush=True,
            )

    us = {c: median_of(caller[c], lambda s: s.us_per_span) for c in CALLER_CONTENDERS}
    cpu = {c: median_of(caller[c], lambda s: s.cpu_us_per_span) for c in CALLER_CONTENDERS}
    rate = {c: median_of(persist[c], lambda s: s.spans_per_s) for c in PERSIST_CONTENDERS}
    per_span = {c: median_of(persist[c], lambda s: s.bytes_per_span) for c in ON_DISK}
    added = {c: us[c] - us["bare-sdk"] for c in OTEL_PROCESSORS}
    added_cpu = {c: cpu[c] - cpu["bare-sdk"] for c in OTEL_PROCESSORS}
    ratios: dict[str, float] = {}
    targets: list[tuple[str, float, str, bool]] = []
    for c, writer in WRITERS.items():
        suffix = "" if c == "blackbox" else f"_{writer}"  # the default keeps the historical key names
        caller_ratio = ratio(added[c], added["batch"])
        vs_abr = ratio(rate[c], rate["ai-blackbox-recorder"])
        vs_batch = ratio(rate[c], rate["batch-noop"])
        ratios[f"caller_added_blackbox{suffix}_over_batch"] = caller_ratio
        ratios[f"caller_added_cpu_blackbox{suffix}_over_batch"] = ratio(added_cpu[c], added_cpu["batch"])
        ratios[f"caller_added_blackbox{suffix}_over_batch_noop"] = ratio(added[c], added["batch-noop"])
        ratios[f"persisted_blackbox{suffix}_over_abr"] = vs_abr
        ratios[f"persisted_blackbox{suffix}_over_batch_noop"] = vs_batch
        who = f"Blackbox[{writer}]"
        targets += [
            (f"caller: added({who}) / added(Batch)", caller_ratio, f"<= {TARGET_CALLER_RATIO}",
             caller_ratio <= TARGET_CALLER_RATIO),
            (f"persisted: {who} / ai-blackbox-recorder", vs_abr, f">= {TARGET_VS_ABR}",
             vs_abr >= TARGET_VS_ABR),
            (f"persisted: {who} / Batch(no-op)", vs_batch, f">= {TARGET_VS_BATCH}",
             vs_batch >= TARGET_VS_BATCH),
            (f"on disk: {who} bytes per span", per_span[c], f"<= {TARGET_BYTES_PER_SPAN}",
             per_span[c] <= TARGET_BYTES_PER_SPAN),
        ]  # fmt: skip
    ratios["persisted_thread_over_process"] = ratio(rate["blackbox-thread"], rate["blackbox"])
    ratios["persisted_noredact_over_default"] = ratio(rate["blackbox-noredact"], rate["blackbox"])
    ratios["persisted_noredact_over_default_secrets"] = ratio(
        rate["blackbox-secrets-noredact"], rate["blackbox-secrets"]
    )
    redaction = ratios["persisted_noredact_over_default"]
    invalid = sum(not s.valid for group in (caller, persist) for samples in group.values() for s in samples)

    print()
    print(
        f"spans per run: {spans} ({spans // 2} parent/child pairs), repeats: {args.repeat}, medians"
        + ("" if gc.isenabled() else " -- cyclic GC DISABLED (diagnostic run)")
    )
    modes = sorted({str(s.writer_mode) for c in WRITERS for s in persist[c]})
    if modes == ["None"]:
        print(
            '(the processor has no writer_mode/writer_pid yet: writer="process" runs as "thread" until '
            "the writer process lands)"
        )
    else:
        for c in WRITERS:
            ran = sorted({str(s.writer_mode) for s in persist[c]})
            print(f"({c}: writer_mode seen {', '.join(ran)})")
    print()
    print("1. caller cost (span-creation loop only; 'added' = minus the bare SDK)")
    print(f"   {'contender':<50} {'µs/span':>8} {'added':>8} {'CPU µs':>8} {'added':>8}")
    for c in CALLER_CONTENDERS:
        if c in OTEL_PROCESSORS:
            extra = f"{added[c]:8.2f} {cpu[c]:8.2f} {added_cpu[c]:8.2f}"
        else:  # the bare SDK itself, and ai-blackbox-recorder, which replaces the SDK instead of adding to it
            extra = f"{'':>8} {cpu[c]:8.2f} {'':>8}"
        print(f"   {LABELS[c]:<50} {us[c]:8.2f} {extra}")
    for c, writer in WRITERS.items():
        suffix = "" if c == "blackbox" else f"_{writer}"
        print(
            f"   {writer:>7}: added(Blackbox)/added(Batch): wall "
            f"{ratios[f'caller_added_blackbox{suffix}_over_batch']:.2f}, caller-thread CPU "
            f"{ratios[f'caller_added_cpu_blackbox{suffix}_over_batch']:.2f}; vs Batch(no-op exporter): "
            f"wall {ratios[f'caller_added_blackbox{suffix}_over_batch_noop']:.2f}"
        )
    print()
    print("2./3. persisted spans/s (first span -> last row on disk, rows counted afterwards)")
    print(f"   {'contender':<50} {'spans/s':>9} {'µs/span':>8}")
    for c in PERSIST_CONTENDERS:
        print(f"   {LABELS[c]:<50} {rate[c]:9.0f} {1e6 / rate[c]:8.2f}")
    print(f"   thread writer / process writer: {ratios['persisted_thread_over_process']:.2f}x the rate")
    for workload, cost in (
        ("ordinary spans", redaction),
        ("secret-heavy spans", ratios["persisted_noredact_over_default_secrets"]),
    ):
        print(
            f"   redaction cost, {workload}: redact=False runs at {cost:.2f}x the default's rate "
            f"(redaction is {(1 - 1 / cost) * 100:.0f}% of the default run's time)"
        )
    print()
    print(
        "4. bytes per span on disk (db + -wal after shutdown and PRAGMA wal_checkpoint(TRUNCATE), "
        f"{spans} spans of the standard workload)"
    )
    for c in ON_DISK:
        total = median_of(persist[c], lambda s: s.bytes_on_disk)
        print(f"   {LABELS[c]:<50} {total / 1e6:8.2f} MB {per_span[c]:8.0f} B/span")
    memory = writer_memory(persist)
    startup = run_startup(workdir, max(5, args.repeat))
    print()
    print("targets")
    for name, value, want, ok in targets:
        print(f"   {name:<50} {value:7.2f}  (target {want:<7}) {verdict(ok)}")
    if invalid:
        print(f"   {invalid} run(s) did not keep/persist every span and were left out of the medians")

    return {
        "machine": machine_info(),
        "spans": spans,
        "repeat": args.repeat,
        "abr_batch_size": args.abr_batch_size,
        "gc_enabled": gc.isenabled(),
        "caller_us_per_span": us,
        "caller_cpu_us_per_span": cpu,
        "caller_added_us": added,
        "caller_added_cpu_us": added_cpu,
        "persisted_spans_per_s": rate,
        "bytes_per_span": per_span,
        "writer_memory_kb": memory,
        "writer_startup_ms": startup,
        "ratios": ratios,
        "targets": [{"name": n, "value": v, "target": w, "met": ok} for n, v, w, ok in targets],
        "invalid_runs": invalid,
        "samples": {
            "caller": {c: [asdict(s) for s in caller[c]] for c in CALLER_CONTENDERS},
            "persist": {c: [asdict(s) for s in persist[c]] for c in PERSIST_CONTENDERS},
        },
    }


def writer_memory(persist: dict[str, list[Sample]]) -> dict[str, dict[str, float] | None]:
    """VmRSS / VmHWM of the writer process after each persisted run (read before shutdown), medians."""
    print()
    print("5. the writer process's memory after a persisted run (/proc/<writer_pid>/status, medians)")
    own = proc_status(os.getpid())
    result: dict[str, dict[str, float] | None] = {}
    for c, writer in WRITERS.items():
        seen = [s for s in persist[c] if s.writer_rss_kb is not None and s.writer_hwm_kb is not None]
        if not seen:
            result[c] = None
            print(
                f"   {writer:>7}: skipped, no writer_pid (the writer runs in this process"
                + (", or the writer process has not landed yet)" if writer == "process" else ")")
            )
            continue
        rss = statistics.median(s.writer_rss_kb for s in seen if s.writer_rss_kb is not None)
        hwm = statistics.median(s.writer_hwm_kb for s in seen if s.writer_hwm_kb is not None)
        result[c] = {"vm_rss_kb": rss, "vm_hwm_kb": hwm, "runs": len(seen), "spans": seen[0].spans}
        print(
            f"   {writer:>7}: VmRSS {rss / 1024:6.1f} MiB, VmHWM {hwm / 1024:6.1f} MiB "
            f"(after {seen[0].spans} spans, {len(seen)} runs)"
        )
    print(
        f"   (this benchmark process, for scale: VmRSS {own.get('VmRSS', 0) / 1024:.1f} MiB, "
        f"VmHWM {own.get('VmHWM', 0) / 1024:.1f} MiB)"
    )
    return result


# -- writer start-up -------------------------------------------------------------------------------


def run_startup(workdir: Path, rounds: int) -> dict[str, dict[str, float]]:
    """Creating a processor, ending its first span and the first force_flush(), per writer.

    A fresh processor (and database) each time, the writers alternating, the first one rotating;
    medians of ``rounds``, after one untimed round. Shutdown is timed apart.
    """
    print(f"\n6. writer start-up: a new processor, its first span, its first force_flush() ({rounds} rounds)")
    writers = tuple(WRITERS.values())
    samples: dict[str, list[dict[str, float]]] = {w: [] for w in writers}
    for n in range(rounds + 1):
        for writer in rotated(writers, n):
            db = workdir / f"startup-{writer}.db"
            remove_db(db)
            provider = TracerProvider(shutdown_on_exit=False)
            tracer = provider.get_tracer("bench_recorder")
            gc.collect()
            t0 = time.perf_counter_ns()
            processor = BlackboxSpanProcessor(config=blackbox_config(db, 2, writer=writer))
            provider.add_span_processor(processor)
            t1 = time.perf_counter_ns()
            with tracer.start_as_current_span("startup", attributes={"openinference.span.kind": "AGENT"}):
                pass
            t2 = time.perf_counter_ns()
            flushed = processor.force_flush(FLUSH_TIMEOUT_MS)
            t3 = time.perf_counter_ns()
            rows, finished = count_rows(db, "count(end_ns)")
            mode, pid = writer_process(processor)
            provider.shutdown()
            t4 = time.perf_counter_ns()
            remove_db(db)
            if not (flushed and rows == finished == 1):
                print(f"  ! start-up {writer}: flushed={flushed}, {rows} rows, {finished} finished: left out")
                continue
            if n:  # round 0 warms up
                samples[writer].append(
                    {
                        "total_ms": (t3 - t0) / 1e6,
                        "create_ms": (t1 - t0) / 1e6,
                        "first_span_ms": (t2 - t1) / 1e6,
                        "first_flush_ms": (t3 - t2) / 1e6,
                        "shutdown_ms": (t4 - t3) / 1e6,
                        "separate_process": float(pid is not None and pid != os.getpid()),
                    }
                )
                if n == 1:
                    print(f"   ({writer}: writer_mode {mode}, writer_pid {pid})")
    result = {}
    print(f"   {'writer':<8} {'total ms':>9} {'create':>8} {'1st span':>9} {'1st flush':>10} {'shutdown':>9}")
    for writer in writers:
        if not samples[writer]:
            print(f"   {writer:<8} no valid round")
            continue
        med = {k: statistics.median(s[k] for s in samples[writer]) for k in samples[writer][0]}
        result[writer] = med
        print(
            f"   {writer:<8} {med['total_ms']:9.1f} {med['create_ms']:8.1f} {med['first_span_ms']:9.2f} "
            f"{med['first_flush_ms']:10.1f} {med['shutdown_ms']:9.1f}"
        )
    return result


# -- --profile ---------------------------------------------------------------------------------


class ThreadProfiler:
    """A cProfile of every thread started while installed (threading.setprofile): the recorder's own.

    Only the public API is used: the processor starts its threads as usual and they profile
    themselves. Read the profiles after the processor is shut down (its threads have ended).
    """

    def __init__(self) -> None:
        self.profiles: list[tuple[str, cProfile.Profile]] = []

    def _hook(self, *_: Any) -> None:
        sys.setprofile(None)
        profile = cProfile.Profile()
        self.profiles.append((threading.current_thread().name, profile))
        profile.enable()

    def __enter__(self) -> ThreadProfiler:
        threading.setprofile(self._hook)
        return self

    def __exit__(self, *_: object) -> None:
        threading.setprofile(None)


def print_stats(profile: cProfile.Profile, title: str, limit: int, *restrictions: str | int) -> None:
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.strip_dirs().sort_stats(pstats.SortKey.TIME).print_stats(*restrictions, limit)
    text = out.getvalue()
    body = text[text.find("   ncalls") :] if "   ncalls" in text else text
    print(f"\n--- {title} (sorted by own time, top {limit})")
    print(body.rstrip())


def profiled_run(spans: int, workdir: Path, writer: str) -> tuple[cProfile.Profile, ThreadProfiler]:
    """A persisted run with the caller's loop and the processor's own threads under cProfile."""
    db = workdir / f"profile-{writer}.db"
    remove_db(db)
    provider = TracerProvider(shutdown_on_exit=False)
    threads = ThreadProfiler()
    caller = cProfile.Profile()
    with threads:  # from before the processor exists until its threads have ended
        processor = BlackboxSpanProcessor(config=blackbox_config(db, spans, writer=writer))
        provider.add_span_processor(processor)
        gc.collect()
        caller.enable()
        otel_pairs(provider.get_tracer("bench_recorder"), spans // 2)
        caller.disable()
        processor.force_flush(FLUSH_TIMEOUT_MS)
        provider.shutdown()
    remove_db(db)
    return caller, threads


def writer_cpu(spans: int, workdir: Path, *, writer: str, redact: bool) -> tuple[float, float | None]:
    """CPU µs per span outside the caller's thread in a persisted run, no profiler.

    (this process's other threads: the thread writer, or what feeds the writer process; the writer
    process's own CPU over its life from /proc/<writer_pid>/stat, None without one)
    """
    db = workdir / f"cpu-{writer}.db"
    remove_db(db)
    provider = TracerProvider(shutdown_on_exit=False)
    processor = BlackboxSpanProcessor(config=blackbox_config(db, spans, redact=redact, writer=writer))
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("bench_recorder")
    gc.collect()
    p0, c0 = time.process_time_ns(), time.thread_time_ns()
    otel_pairs(tracer, spans // 2)
    processor.force_flush(FLUSH_TIMEOUT_MS)
    p1, c1 = time.process_time_ns(), time.thread_time_ns()
    _, pid = writer_process(processor)
    child = proc_cpu_ns(pid) if pid is not None and pid != os.getpid() else None
    provider.shutdown()
    remove_db(db)
    n = 2 * (spans // 2)
    return ((p1 - p0) - (c1 - c0)) / n / 1000, None if child is None else child / n / 1000


def run_profiles(spans: int, workdir: Path) -> dict[str, Any]:
    print("\n=== profiles (cProfile; its own overhead inflates the absolute times) ===")
    print(
        "(the writer is profiled in place, on the processor's own threads: the whole writer for "
        'writer="thread"; for writer="process" only what runs in this process, as the writer '
        "process cannot be profiled from here)"
    )
    for writer in WRITERS.values():
        caller, threads = profiled_run(spans, workdir, writer)
        print_stats(caller, f'caller thread, BlackboxSpanProcessor(writer="{writer}"), {spans} spans', 12)
        print_stats(caller, "the same, BlackboxSpanProcessor's own functions", 5, r"processor\.py")
        names = ", ".join(name for name, _ in threads.profiles) or "none"
        if not threads.profiles:
            print(f'\n--- writer="{writer}": no thread was started by the processor')
            continue
        out = io.StringIO()
        merged = pstats.Stats(threads.profiles[0][1], stream=out)
        for _, profile in threads.profiles[1:]:
            merged.add(profile)
        merged.strip_dirs().sort_stats(pstats.SortKey.TIME).print_stats(22)
        text = out.getvalue()
        print(f'\n--- the processor\'s threads in this process, writer="{writer}" ({names}), {spans} spans')
        print(text[text.find("   ncalls") :].rstrip() if "   ncalls" in text else text.rstrip())

    cpu: dict[str, Any] = {}
    print("\nBlackbox writer CPU in a persisted run, no profiler, median of 3 (µs per span):")
    print(f"   {'writer':<8} {'redact':<7} {'this process, other threads':>28} {'writer process':>15}")
    for writer in WRITERS.values():
        for redact in (True, False):
            runs = [writer_cpu(spans, workdir, writer=writer, redact=redact) for _ in range(3)]
            here = statistics.median(r[0] for r in runs)
            there = [r[1] for r in runs if r[1] is not None]
            child = statistics.median(there) if there else None
            cpu[f"{writer}, redact={redact}"] = {"this_process_other_threads": here, "writer_process": child}
            shown = "n/a" if child is None else f"{child:.2f}"
            print(f"   {writer:<8} {redact!s:<7} {here:28.2f} {shown:>15}")
    print("   (the writer process's figure is its whole life: start-up, the run and the idle ticks)")
    return cpu


# -- --phases ----------------------------------------------------------------------------------


def run_phases(spans: int, workdir: Path) -> list[dict[str, Any]]:
    """Where a persisted run's time goes: the loop, the rows written during it, the flush after it.

    Repeated at three GIL switch intervals: how much of the writer's work overlaps the agent's
    loop depends on how often the interpreter hands the GIL over (the default is 5 ms). Both
    writers, alternating; "rows written in the loop" is the processor's spans_written (n/a when it
    has none).
    """
    print("\n=== phases of a persisted Blackbox run (median of 3 per writer and switch interval) ===")
    print(
        "   writer   switch interval   loop s   caller CPU s   rows written in the loop   flush after s"
        "   spans/s"
    )
    default_interval = sys.getswitchinterval()
    writers = tuple(WRITERS.values())
    results = []
    try:
        for interval in (0.005, 0.001, 0.0002):
            sys.setswitchinterval(interval)
            samples: dict[str, list[tuple[float, ...]]] = {w: [] for w in writers}
            for n in range(3):
                for writer in rotated(writers, n):
                    db = workdir / f"phases-{writer}-{n}.db"
                    remove_db(db)
                    provider = TracerProvider(shutdown_on_exit=False)
                    processor = BlackboxSpanProcessor(config=blackbox_config(db, spans, writer=writer))
                    provider.add_span_processor(processor)
                    tracer = provider.get_tracer("bench_recorder")
                    gc.collect()
                    t0, c0 = time.perf_counter(), time.thread_time()
                    otel_pairs(tracer, spans // 2)
                    t1, c1 = time.perf_counter(), time.thread_time()
                    during = getattr(processor, "spans_written", None)
                    provider.force_flush(FLUSH_TIMEOUT_MS)
                    t2 = time.perf_counter()
                    provider.shutdown()
                    remove_db(db)
                    written = float("nan") if during is None else float(during)
                    samples[writer].append((t1 - t0, c1 - c0, written, t2 - t1, 2 * (spans // 2) / (t2 - t0)))
            keys = ("loop_s", "caller_cpu_s", "written_during_loop", "flush_after_s", "spans_per_s")
            for writer in writers:
                columns = zip(*samples[writer], strict=True)
                row = {key: statistics.median(column) for key, column in zip(keys, columns, strict=True)}
                print(
                    f"   {writer:<8} {interval * 1000:>12.1f} ms   {row['loop_s']:6.3f}   "
                    f"{row['caller_cpu_s']:12.3f}   {row['written_during_loop']:>24,.0f}   "
                    f"{row['flush_after_s']:13.3f}   {row['spans_per_s']:7,.0f}"
                )
                results.append({"writer": writer, "switch_interval_s": interval, **row})
    finally:
        sys.setswitchinterval(default_interval)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--spans", type=int, default=20_000, help="spans per run (even; default 20000)")
    parser.add_argument("--repeat", type=int, default=7, help="repeats per contender; medians (default 7)")
    parser.add_argument("--json", type=Path, help="also write every sample and the summary to this file")
    parser.add_argument(
        "--abr-batch-size", type=int, default=100, help="ai-blackbox-recorder batch_size (its default: 100)"
    )
    parser.add_argument("--profile", action="store_true", help="also print cProfile listings (module doc)")
    parser.add_argument(
        "--no-gc", action="store_true", help="diagnostic: cyclic GC off while timing (see module doc)"
    )
    parser.add_argument(
        "--phases", action="store_true", help="also time a persisted run's loop and flush apart (module doc)"
    )
    args = parser.parse_args(argv)
    if args.spans < 2 or args.repeat < 1:
        parser.error("--spans must be >= 2 and --repeat >= 1")

    workdir = Path(tempfile.mkdtemp(prefix="bench_recorder-"))
    info = machine_info()
    print(
        f"python {info['python']}, opentelemetry-sdk {info['opentelemetry-sdk']}, "
        f"ai-blackbox-recorder {info['ai-blackbox-recorder']}, sqlite {info['sqlite']}, "
        f"{info['nproc']} CPUs ({info['cpu']}), load {info['loadavg_1m']}"
    )
    started = time.perf_counter()
    if args.no_gc:
        gc.disable()  # explicit gc.collect() between runs still runs
    try:
        result = run_benchmark(args, workdir)
        if args.profile:
            result["writer_cpu_us_per_span"] = run_profiles(args.spans, workdir)
        if args.phases:
            result["phases"] = run_phases(args.spans, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result["wall_s"] = round(time.perf_counter() - started, 1)
    result["loadavg_1m_at_end"] = machine_info()["loadavg_1m"]
    print(f"\ntotal {result['wall_s']} s, load average at the end {result['loadavg_1m_at_end']}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
