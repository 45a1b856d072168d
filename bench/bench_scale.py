"""One SQLite file at scale: fill it with N realistic agent spans, then time the size and the reads.

Run it as a script (it is not a test and asserts nothing about timing)::

    python bench/bench_scale.py [--spans 1000000] [--procs 2] [--repeat 5] [--json out.json]
    python bench/bench_scale.py --db big.db                 # fill big.db (a new file) and keep it
    python bench/bench_scale.py --db big.db --skip-fill     # measure an existing database again
    python bench/bench_scale.py --procs 1 --error-every 0   # one process; no failed span at all

1. **Fill.** ``--procs`` processes (spawned) each run their own ``TracerProvider`` +
   ``BlackboxSpanProcessor`` on the same file, as several agents on one machine would, and produce
   traces of 10 spans: an AGENT root, 5 LLM calls (model, token counts, a 250-410-character
   ``input.value``, input/output messages, ``output.value``) and 4 TOOL calls; one trace in
   ``--error-every`` (50) has a failing tool (status ERROR, an exception event). Redaction is on
   (the default); retention and the size cap are off so that nothing is evicted while filling.
   Every 1,000 traces each process calls ``force_flush()``, which bounds its memory and makes sure
   nothing is dropped. Reported: persisted spans/s from the moment the processes start producing
   (a barrier) until the last ``force_flush()`` returns, and over the first and the last tenth of
   the spans; the peak size of the ``-wal`` file; rows are counted afterwards and must equal N.
2. **Size.** ``PRAGMA wal_checkpoint(TRUNCATE)``, then file + ``-wal`` + ``-shm`` bytes, per
   million spans, with the split between the table and each index and how full the table's pages
   are (``dbstat``). ``--page-size-check`` also writes copies with 4, 8 and 16 KiB pages
   (``VACUUM INTO``) and compares their size.
3. **Reads.** The median of ``--repeat`` runs of ``show <id>`` (a random trace near the start, the
   middle and the end of the file), ``list``, ``list --errors-only``, ``errors`` and ``stats``: each
   as the real CLI in a subprocess (including interpreter start-up, also shown on its own as
   ``--version``) and as the in-process query functions on a fresh read-only connection. The
   statements behind ``stats`` and ``errors`` are then timed one by one, with SQLite's query
   plans, to show what scans the table.
4. **The size cap** (destructive, so only on a database filled by this run unless ``--cap-check``):
   one ``otel-blackbox cleanup --retention off --max-db-mb <90% of the data>``, as the writer would
   run it when the file passes ``OTEL_BLACKBOX_MAX_DB_MB``.

docs/scaling.md has the results and what they mean.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import platform
import queue
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from importlib import metadata
from multiprocessing.queues import Queue as MPQueue
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Status, StatusCode, Tracer

from otel_blackbox import BlackboxConfig, BlackboxSpanProcessor
from otel_blackbox._store import queries
from otel_blackbox._store.connection import connect_reader

SPANS_PER_TRACE = 10
TOOL_STEPS = 4  # AGENT + TOOL_STEPS x (LLM + TOOL) + a final LLM = 10 spans
ERROR_EVERY = 50  # default: one trace in 50 has a failing tool
FLUSH_EVERY_TRACES = 1_000
FLUSH_TIMEOUT_MS = 600_000
MODELS = ("gpt-4o-mini", "claude-3-5-haiku", "gpt-4.1")
TOOLS = ("search_docs", "get_weather", "run_sql", "read_file")

SYSTEM_PROMPT = (
    "You are a support agent for an online bookshop. Use the tools to look up orders, stock and "
    "shipping; never guess an order status. Answer in two sentences at most, and cite the tool you used."
)
QUESTION = (
    "Order {n}: I ordered three paperbacks last Tuesday and the tracking page still says 'label created'. "
    "Can you check whether it has shipped and when it should arrive in Lyon?{extra}"
)
# Prompts differ in length from one run to the next: 0-155 characters more; input.value is 252-409
# characters, 332 on average.
EXTRA = (
    " Context: the customer wrote twice before, prefers e-mail, and asked for a gift wrap on the second "
    "book; the invoice address differs from the delivery one."
)
ANSWER = (
    "Order {n} left the Paris warehouse yesterday with Colissimo (tracking FR{n:09d}); delivery to Lyon "
    "is expected on Thursday. Source: get_order_status."
)
TOOL_RESULT = '{{"order": {n}, "status": "shipped", "carrier": "colissimo", "eta_days": 2, "step": {s}}}'


class ToolFailed(RuntimeError):
    pass


def question_for(n: int) -> str:
    return QUESTION.format(n=n, extra=EXTRA[: (n * 7919) % (len(EXTRA) + 1)])


def input_value(model: str, question: str, step: int) -> str:
    """The request as an LLM instrumentor records it (JSON of the messages)."""
    return json.dumps({"model": model, "step": step, "messages": [{"role": "user", "content": question}]})


def one_trace(tracer: Tracer, n: int, session: str, error_every: int) -> None:
    """One agent run: 10 spans, shaped like an OpenInference-instrumented tool-using agent."""
    model = MODELS[n % len(MODELS)]
    question = question_for(n)
    fail_at = n % TOOL_STEPS if error_every and n % error_every == 0 else -1
    with tracer.start_as_current_span(
        "support-agent",
        attributes={"openinference.span.kind": "AGENT", "input.value": question, "session.id": session},
    ) as root:
        for step in range(TOOL_STEPS + 1):
            with tracer.start_as_current_span(
                "ChatCompletion",
                attributes={
                    "openinference.span.kind": "LLM",
                    "llm.system": "openai",
                    "llm.model_name": model,
                    "input.value": input_value(model, question, step),
                    "input.mime_type": "application/json",
                    "llm.invocation_parameters": '{"temperature": 0.2, "max_tokens": 512}',
                    "llm.input_messages.0.message.role": "system",
                    "llm.input_messages.0.message.content": SYSTEM_PROMPT,
                    "llm.input_messages.1.message.role": "user",
                    "llm.input_messages.1.message.content": question,
                    "session.id": session,
                },
            ) as llm:
                answer = ANSWER.format(n=n) if step == TOOL_STEPS else f"calling {TOOLS[step % len(TOOLS)]}"
                prompt = 180 + 60 * step + n % 40
                llm.set_attributes(
                    {
                        "output.value": answer,
                        "llm.output_messages.0.message.role": "assistant",
                        "llm.output_messages.0.message.content": answer,
                        "llm.token_count.prompt": prompt,
                        "llm.token_count.completion": 42,
                        "llm.token_count.total": prompt + 42,
                    }
                )
                llm.set_status(Status(StatusCode.OK))
            if step == TOOL_STEPS:
                break
            tool = TOOLS[step % len(TOOLS)]
            try:
                with tracer.start_as_current_span(
                    tool,
                    attributes={
                        "openinference.span.kind": "TOOL",
                        "tool.name": tool,
                        "tool.parameters": f'{{"order": {n}}}',
                        "input.value": f'{{"order": {n}}}',
                        "session.id": session,
                    },
                ) as span:
                    if step == fail_at:
                        raise ToolFailed(f"{tool}: upstream timed out after 30s (order {n})")
                    span.set_attribute("output.value", TOOL_RESULT.format(n=n, s=step))
            except ToolFailed:
                pass  # the agent carries on: the tool span holds status ERROR and the exception
        root.set_attribute("output.value", ANSWER.format(n=n))


# -- 1. fill -----------------------------------------------------------------------------------


def fill_worker(
    db: str, worker: int, traces: int, error_every: int, barrier: Barrier, results: MPQueue[dict[str, Any]]
) -> None:
    """One recording process (spawned): its own provider and BlackboxSpanProcessor on the shared file."""
    config = BlackboxConfig(
        db_path=db,
        retention="off",
        max_db_mb=0,
        max_queue_size=2 * SPANS_PER_TRACE * FLUSH_EVERY_TRACES + 1024,
    )
    processor = BlackboxSpanProcessor(config=config)
    resource = Resource.create({"service.name": "bench-scale", "service.instance.id": f"worker-{worker}"})
    provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("bench_scale", "1.0")
    one_trace(tracer, -1 - worker, "warm-up", 0)  # opens the database before the clock starts
    flushed = processor.force_flush(FLUSH_TIMEOUT_MS)
    barrier.wait()
    t0 = time.time()
    first = worker * traces
    marks = []  # when each flush returned: FLUSH_EVERY_TRACES more traces on disk
    for i in range(traces):
        n = first + i
        one_trace(tracer, n, f"session-{n // 20:07d}", error_every)  # 20 traces a session
        if (i + 1) % FLUSH_EVERY_TRACES == 0:
            flushed = processor.force_flush(FLUSH_TIMEOUT_MS) and flushed
            marks.append(time.time())
    flushed = processor.force_flush(FLUSH_TIMEOUT_MS) and flushed
    t1 = time.time()
    results.put(
        {
            "worker": worker,
            "spans": traces * SPANS_PER_TRACE,
            "t0": t0,
            "t1": t1,
            "flushed": flushed,
            "dropped": processor.dropped_count(),
            "written": processor.spans_written,
            "marks": marks,
        }
    )
    provider.shutdown()


def first_and_last_tenth(done: list[dict[str, Any]], start: float, end: float) -> list[float] | None:
    """Persisted spans/s over the first and the last tenth of the spans (all processes together)."""
    step = FLUSH_EVERY_TRACES * SPANS_PER_TRACE
    marks = sorted(t for r in done for t in r["marks"])
    total = len(marks) * step
    if len(marks) < 20:
        return None
    tenth = total // 10
    reached_tenth = marks[tenth // step - 1]  # the flush that completed the first tenth
    reached_nine_tenths = marks[(total - tenth) // step - 1]
    return [tenth / (reached_tenth - start), tenth / (marks[-1] - reached_nine_tenths)]


def fill(db: Path, spans: int, procs: int, error_every: int) -> dict[str, Any]:
    traces = spans // SPANS_PER_TRACE
    per_worker = [traces // procs + (1 if w < traces % procs else 0) for w in range(procs)]
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(procs)
    results: MPQueue[dict[str, Any]] = ctx.Queue()
    workers = [
        ctx.Process(
            target=fill_worker,
            args=(str(db), w, per_worker[w], error_every, barrier, results),
            name=f"fill-{w}",
        )
        for w in range(procs)
    ]
    started = time.perf_counter()
    for p in workers:
        p.start()
    done: list[dict[str, Any]] = []
    wal = Path(f"{db}-wal")
    wal_peak = 0
    deadline = time.monotonic() + 3600
    while len(done) < len(workers) and time.monotonic() < deadline:
        with contextlib.suppress(OSError):  # the -wal file comes and goes
            wal_peak = max(wal_peak, wal.stat().st_size)
        with contextlib.suppress(queue.Empty):
            done.append(results.get(timeout=0.25))
    if len(done) < len(workers):
        raise SystemExit("the fill processes did not finish within an hour")
    for p in workers:
        p.join()
    wall = time.perf_counter() - started
    if any(p.exitcode != 0 for p in workers):
        raise SystemExit(f"a fill process failed: exit codes {[p.exitcode for p in workers]}")
    start, end = min(r["t0"] for r in done), max(r["t1"] for r in done)
    elapsed = end - start
    produced = sum(r["spans"] for r in done)
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows, final = conn.execute("SELECT count(*), sum(status != 'open') FROM spans").fetchone()
    finally:
        conn.close()
    warm_up = procs * SPANS_PER_TRACE
    return {
        "procs": procs,
        "spans": produced,
        "elapsed_s": elapsed,
        "wall_s_with_startup": wall,
        "spans_per_s": produced / elapsed,
        "per_process_spans_per_s": [
            r["spans"] / (r["t1"] - r["t0"]) for r in sorted(done, key=lambda r: r["worker"])
        ],
        "dropped": sum(r["dropped"] for r in done),
        "all_flushed": all(r["flushed"] for r in done),
        "rows": rows,
        "final_rows": final,
        "spans_per_s_first_tenth_last_tenth": first_and_last_tenth(done, start, end),
        "wal_peak_bytes": wal_peak,
        "loadavg_1m_after_fill": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        "valid": rows == final == produced + warm_up and all(r["flushed"] and not r["dropped"] for r in done),
    }


# -- 2. size -----------------------------------------------------------------------------------


def file_bytes(db: Path) -> dict[str, int]:
    return {
        s or "db": Path(f"{db}{s}").stat().st_size if Path(f"{db}{s}").exists() else 0
        for s in ("", "-wal", "-shm")
    }


def measure_size(db: Path) -> dict[str, Any]:
    before = file_bytes(db)
    conn = sqlite3.connect(str(db), isolation_level=None)
    try:
        t0 = time.perf_counter()
        busy, wal_pages, moved = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        checkpoint_s = time.perf_counter() - t0
        after = file_bytes(db)
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        freelist = conn.execute("PRAGMA freelist_count").fetchone()[0]
        (spans,) = conn.execute("SELECT count(*) FROM spans").fetchone()
        t0 = time.perf_counter()
        objects = {
            name: int(size)
            for name, size in conn.execute(
                "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
            )
        }
        # The rows' table: span_rows since schema version 3 (spans is a view over it), spans before.
        table = "span_rows" if "span_rows" in objects else "spans"
        pages, cells, payload, leaf_bytes = conn.execute(
            "SELECT count(*), sum(ncell), sum(payload), sum(pgsize) FROM dbstat "
            "WHERE name = ? AND pagetype = 'leaf'",
            (table,),
        ).fetchone()
        (overflow,) = conn.execute(
            "SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name = ? AND pagetype = 'overflow'", (table,)
        ).fetchone()
        dbstat_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        by_kind = {
            str(kind): {
                "spans": int(count),
                "avg_attributes_bytes": round(attrs or 0),
                "avg_row_text_bytes": round(texts or 0),
            }
            for kind, count, attrs, texts in conn.execute(
                "SELECT coalesce(oi_span_kind, '-'), count(*), avg(length(CAST(attributes AS BLOB))), "
                "avg(length(CAST(attributes AS BLOB)) + length(CAST(events AS BLOB)) "
                "+ length(CAST(resource AS BLOB)) + length(CAST(scope AS BLOB))) "
                "FROM spans GROUP BY 1 ORDER BY 2 DESC"
            )
        }
        by_kind_s = time.perf_counter() - t0
    finally:
        conn.close()
    total = sum(after.values())
    return {
        "before_checkpoint": before,
        "after_checkpoint": after,
        "checkpoint": {"busy": busy, "wal_pages": wal_pages, "moved": moved, "seconds": checkpoint_s},
        "total_bytes": total,
        "spans": spans,
        "bytes_per_span": total / spans if spans else float("nan"),
        "mb_per_million_spans": total / spans if spans else float("nan"),  # bytes/span = MB per 10^6 spans
        "page_size": page_size,
        "freelist_pages": freelist,
        "objects": objects,
        "table_leaves": {
            "pages": pages,
            "cells_per_page": cells / pages if pages else 0.0,
            "payload": payload or 0,
            "bytes": leaf_bytes or 0,
            "overflow": overflow,
        },
        "dbstat_s": dbstat_s,
        "by_kind": by_kind,
        "by_kind_scan_s": by_kind_s,
    }


def measure_page_sizes(db: Path, page_sizes: Sequence[int]) -> dict[int, dict[str, float]]:
    """The same rows with other page sizes: VACUUM INTO a copy next to the file (removed afterwards)."""
    out: dict[int, dict[str, float]] = {}
    for page_size in page_sizes:
        copy = db.with_name(f"{db.name}.page{page_size}")
        remove_db(copy)
        conn = sqlite3.connect(str(db), isolation_level=None)
        try:
            conn.execute(f"PRAGMA page_size = {int(page_size)}")  # VACUUM INTO writes the copy with it
            t0 = time.perf_counter()
            conn.execute("VACUUM INTO ?", (str(copy),))
            seconds = time.perf_counter() - t0
        finally:
            conn.close()
        try:
            check = sqlite3.connect(f"file:{copy}?mode=ro", uri=True)
            try:
                (actual,) = check.execute("PRAGMA page_size").fetchone()
                (spans,) = check.execute("SELECT count(*) FROM spans").fetchone()
            finally:
                check.close()
            size = copy.stat().st_size
        finally:
            remove_db(copy)
        out[page_size] = {
            "page_size": actual,
            "bytes": size,
            "bytes_per_span": size / spans,
            "vacuum_s": seconds,
        }
        print(
            f"   page_size {actual:>6}: {mb(size):>12}, {size / spans:,.0f} bytes/span "
            f"(VACUUM INTO {seconds:.1f} s)",
            flush=True,
        )
    return out


# -- 3. reads ----------------------------------------------------------------------------------


def pick_traces(db: Path, seed: int) -> dict[str, str]:
    """A random trace id near the start (first 1%), the middle (49-51%) and the end (last 1%) of the file."""
    rng = random.Random(seed)
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        lo, hi = conn.execute("SELECT min(id), max(id) FROM spans").fetchone()
        span = hi - lo
        picks = {"start": (0.0, 0.01), "middle": (0.49, 0.51), "end": (0.99, 1.0)}
        out = {}
        for where, (a, b) in picks.items():
            rowid = lo + int(span * rng.uniform(a, b))
            (trace_id,) = conn.execute(
                "SELECT trace_id FROM spans WHERE id >= ? ORDER BY id LIMIT 1", (min(rowid, hi),)
            ).fetchone()
            out[where] = trace_id
        return out
    finally:
        conn.close()


def timed(action: Callable[[], object], repeat: int) -> dict[str, float]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        action()
        times.append(time.perf_counter() - t0)
    return {
        "median_ms": statistics.median(times) * 1000,
        "min_ms": min(times) * 1000,
        "max_ms": max(times) * 1000,
    }


def cli_command() -> list[str]:
    exe = shutil.which("otel-blackbox", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "otel_blackbox.cli"]


def run_cli(db: Path, args: Sequence[str]) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_BLACKBOX")}
    proc = subprocess.run([*cli_command(), "--db", str(db), *args], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"otel-blackbox {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()}")


def in_process(db: Path, work: Callable[[sqlite3.Connection], object]) -> Callable[[], object]:
    """What the CLI command does minus start-up and printing: open a reader, run the queries, close."""

    def run() -> object:
        conn = connect_reader(db)
        try:
            return work(conn)
        finally:
            conn.close()

    return run


def show_queries(trace_id: str) -> Callable[[sqlite3.Connection], object]:
    def work(conn: sqlite3.Connection) -> object:
        full = queries.resolve_trace_id(conn, trace_id[:12])
        return queries.trace_spans(conn, full), queries.summarize(conn, [full])

    return work


def measure_reads(db: Path, repeat: int, seed: int) -> dict[str, Any]:
    picks = pick_traces(db, seed)
    operations: list[tuple[str, list[str] | None, Callable[[sqlite3.Connection], object] | None]] = [
        ("--version (CLI start-up only)", ["--version"], None),
    ]
    for where, trace_id in picks.items():
        operations.append((f"show <id> ({where})", ["show", trace_id[:12]], show_queries(trace_id)))
    operations += [
        ("list", ["list"], lambda c: queries.recent_traces(c, limit=20)),
        (
            "list --errors-only",
            ["list", "--errors-only"],
            lambda c: queries.recent_traces(c, limit=20, errors_only=True),
        ),
        ("errors", ["errors"], lambda c: queries.error_spans(c, limit=20)),
        ("stats", ["stats"], lambda c: queries.stats(c, db)),
    ]
    results: dict[str, Any] = {"traces": picks}
    for name, args, work in operations:
        row: dict[str, Any] = {}
        if args is not None:
            run_cli(db, args)  # one untimed run: the same warm page cache for every command
            row["cli"] = timed(partial(run_cli, db, args), repeat)
        if work is not None:
            row["in_process"] = timed(in_process(db, work), repeat)
        results[name] = row
        cli_ms = f"{row['cli']['median_ms']:9.1f}" if "cli" in row else f"{'':>9}"
        proc_ms = f"{row['in_process']['median_ms']:9.1f}" if "in_process" in row else f"{'':>9}"
        print(f"   {name:<32} {cli_ms} {proc_ms}", flush=True)
    return results


# The statements behind `stats` and `errors` (copied from store/queries.py), timed one by one with
# SQLite's plan: what scans the whole table and what walks an index.
STATEMENTS = {
    "stats: count(*)": "SELECT count(*) FROM spans",
    "stats: distinct traces": "SELECT count(*) FROM (SELECT DISTINCT trace_id FROM spans)",
    "stats: open and error spans": (
        "SELECT status, count(*) FROM spans WHERE status IN ('error', 'open') GROUP BY status"
    ),
    "stats: recorders": (
        "SELECT coalesce(sum(spans_dropped), 0), coalesce(sum(write_errors), 0), count(*) FROM recorders"
    ),
    "stats: min(start_ns)": "SELECT min(start_ns) FROM spans",
    "stats: max(start_ns)": "SELECT max(start_ns) FROM spans",
    "stats, as it was: count, count(DISTINCT trace_id), open, error [not the product's]": (
        "SELECT count(*), count(DISTINCT trace_id), coalesce(sum(status = 'open'), 0), "
        "coalesce(sum(status = 'error'), 0) FROM spans"
    ),
    "stats: tokens by model": (
        "SELECT model, count(*), coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0), "
        "coalesce(sum(total_tokens), 0) FROM spans WHERE model IS NOT NULL AND oi_span_kind = 'LLM' "
        "GROUP BY model ORDER BY sum(total_tokens) DESC"
    ),
    "errors: newest 20 failed spans": (
        "SELECT * FROM spans WHERE status = 'error' ORDER BY start_ns DESC LIMIT 20"
    ),
    # Not what the product runs: the same query with the partial index's own term added, for comparison.
    "errors, + status IN ('error','open') [not the product's]": (
        "SELECT * FROM spans WHERE status IN ('error', 'open') AND status = 'error' "
        "ORDER BY start_ns DESC LIMIT 20"
    ),
}


def measure_statements(db: Path, repeat: int) -> dict[str, Any]:
    conn = connect_reader(db)
    out: dict[str, Any] = {}
    try:
        for name, sql in STATEMENTS.items():
            plan = [str(r[3]) for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}")]
            out[name] = {**timed(partial(_fetch_all, conn, sql), repeat), "plan": plan, "sql": sql}
            print(f"   {name:<56} {out[name]['median_ms']:9.1f}   {'; '.join(plan)}", flush=True)
    finally:
        conn.close()
    return out


def _fetch_all(conn: sqlite3.Connection, sql: str) -> list[Any]:
    return conn.execute(sql).fetchall()


# -- 4. the size cap -----------------------------------------------------------------------------


def measure_cap(db: Path) -> dict[str, Any]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        used = (
            conn.execute("PRAGMA page_count").fetchone()[0]
            - conn.execute("PRAGMA freelist_count").fetchone()[0]
        ) * page_size
        spans_before = conn.execute("SELECT count(*) FROM spans").fetchone()[0]
    finally:
        conn.close()
    cap_mb = round(used * 0.9 / (1024 * 1024), 1)
    t0 = time.perf_counter()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_BLACKBOX")}
    proc = subprocess.run(
        [*cli_command(), "--db", str(db), "cleanup", "--retention", "off", "--max-db-mb", str(cap_mb)],
        capture_output=True,
        text=True,
        env=env,
    )
    seconds = time.perf_counter() - t0
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        spans_after = conn.execute("SELECT count(*) FROM spans").fetchone()[0]
    finally:
        conn.close()
    return {
        "cap_mb": cap_mb,
        "data_mb_before": used / (1024 * 1024),
        "seconds": seconds,
        "returncode": proc.returncode,
        "output": (proc.stdout + proc.stderr).strip(),
        "spans_before": spans_before,
        "spans_after": spans_after,
        "files_after": file_bytes(db),
    }


# -- the whole benchmark ---------------------------------------------------------------------------


def machine_info() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "cpu": cpu,
        "loadavg_1m": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "opentelemetry-sdk": metadata.version("opentelemetry-sdk"),
        "otel-blackbox": metadata.version("otel-blackbox"),
    }


def remove_db(db: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


def mb(n: float) -> str:
    return f"{n / 1e6:,.1f} MB"


def report_fill(filled: dict[str, Any]) -> None:
    per_proc = ", ".join(f"{r:,.0f}" for r in filled["per_process_spans_per_s"])
    print(
        f"   persisted {filled['spans']:,} spans in {filled['elapsed_s']:.1f} s: "
        f"{filled['spans_per_s']:,.0f} spans/s (per process: {per_proc}); "
        f"{filled['wall_s_with_startup']:.1f} s with process start-up; "
        f"load average after the fill {filled['loadavg_1m_after_fill']}"
    )
    tenths = filled["spans_per_s_first_tenth_last_tenth"]
    if tenths:
        print(
            f"   spans/s over the first tenth of the spans {tenths[0]:,.0f}, "
            f"over the last tenth {tenths[1]:,.0f}"
        )
    print(f"   the -wal file peaked at {mb(filled['wal_peak_bytes'])} while filling (sampled every 0.25 s)")
    verdict = "OK" if filled["valid"] else "INVALID: not every span persisted"
    print(
        f"   rows {filled['rows']:,} ({filled['final_rows']:,} final, with one warm-up trace a process), "
        f"dropped {filled['dropped']}: {verdict}",
        flush=True,
    )


def report_size(size: dict[str, Any]) -> None:
    for label, files in (
        ("before checkpoint", size["before_checkpoint"]),
        ("after", size["after_checkpoint"]),
    ):
        print(f"   {label:<18} db {mb(files['db'])}, -wal {mb(files['-wal'])}, -shm {mb(files['-shm'])}")
    print(
        f"   {size['spans']:,} spans: {size['bytes_per_span']:,.0f} bytes/span, "
        f"{size['mb_per_million_spans']:,.0f} MB per million spans "
        f"(checkpoint {size['checkpoint']['seconds']:.2f} s, {size['freelist_pages']} free pages)"
    )
    leaf = size["table_leaves"]
    print(
        f"   table leaf pages: {leaf['cells_per_page']:.2f} rows a page, payload {mb(leaf['payload'])} "
        f"in {mb(leaf['bytes'])} ({leaf['payload'] / leaf['bytes']:.0%} full); "
        f"overflow pages {mb(leaf['overflow'])}"
    )
    print(f"   by object (dbstat, {size['dbstat_s']:.1f} s):")
    for name, nbytes in size["objects"].items():
        print(f"     {name:<28} {mb(nbytes):>12}  {nbytes / size['total_bytes']:6.1%}")
    print(f"   by span kind (a full scan, {size['by_kind_scan_s']:.1f} s): average bytes of")
    for kind, row in size["by_kind"].items():
        print(
            f"     {kind:<8} {row['spans']:>10,} spans: attributes {row['avg_attributes_bytes']:>6,}, "
            f"all JSON columns {row['avg_row_text_bytes']:>6,}"
        )
    print(flush=True)


def report_cap(cap: dict[str, Any]) -> None:
    print(
        f"   cap {cap['cap_mb']:,.1f} MiB on {cap['data_mb_before']:,.1f} MiB of data: "
        f"{cap['seconds']:.1f} s; spans {cap['spans_before']:,} -> {cap['spans_after']:,}"
    )
    print(f"   exit {cap['returncode']}: {cap['output']}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--spans", type=int, default=1_000_000, help="spans to write (a multiple of 10; 1000000)"
    )
    parser.add_argument("--procs", type=int, default=2, help="recording processes writing the file (2)")
    parser.add_argument(
        "--db", type=Path, help="database to fill (a new file) and keep; default: a temp file"
    )
    parser.add_argument(
        "--skip-fill", action="store_true", help="measure --db as it is (an existing database)"
    )
    parser.add_argument(
        "--error-every", type=int, default=ERROR_EVERY, help="one trace in N has a failing tool; 0: none (50)"
    )
    parser.add_argument("--repeat", type=int, default=5, help="runs per read measurement; medians (5)")
    parser.add_argument("--seed", type=int, default=1, help="seed for the traces picked for show (1)")
    parser.add_argument(
        "--cap-check",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run the size-cap cleanup at the end (destructive: evicts ~19%% of the traces); "
        "default: only on a database this run filled",
    )
    parser.add_argument(
        "--page-size-check",
        action="store_true",
        help="also VACUUM INTO copies with 4, 8 and 16 KiB pages and compare sizes (needs the disk space)",
    )
    parser.add_argument("--json", type=Path, help="also write every figure to this file")
    args = parser.parse_args(argv)
    if args.skip_fill and args.db is None:
        parser.error("--skip-fill needs --db PATH")
    if args.skip_fill and not args.db.exists():
        parser.error(f"--skip-fill: {args.db} does not exist")
    if not args.skip_fill and args.db is not None and args.db.exists():
        parser.error(f"{args.db} exists: pass --skip-fill to measure it, or remove it to fill it anew")
    if args.spans < SPANS_PER_TRACE or args.procs < 1 or args.repeat < 1:
        parser.error("--spans must be >= 10, --procs and --repeat >= 1")

    info = machine_info()
    print(
        f"python {info['python']}, sqlite {info['sqlite']}, opentelemetry-sdk {info['opentelemetry-sdk']}, "
        f"{info['nproc']} CPUs ({info['cpu']}), load {info['loadavg_1m']}",
        flush=True,
    )
    workdir = None if args.db is not None else Path(tempfile.mkdtemp(prefix="bench_scale-"))
    db: Path = args.db if args.db is not None else Path(workdir or ".") / "scale.db"
    started = time.perf_counter()
    result: dict[str, Any] = {"machine": info, "db": str(db)}
    try:
        if not args.skip_fill:
            spans = args.spans - args.spans % SPANS_PER_TRACE
            print(
                f"\n1. fill: {spans:,} spans ({spans // SPANS_PER_TRACE:,} traces), {args.procs} process(es)"
            )
            result["fill"] = fill(db, spans, args.procs, args.error_every)
            report_fill(result["fill"])
        print("\n2. size (after PRAGMA wal_checkpoint(TRUNCATE))", flush=True)
        result["size"] = measure_size(db)
        report_size(result["size"])
        if args.page_size_check:
            print("   the same rows with larger pages (VACUUM INTO a copy):", flush=True)
            result["page_sizes"] = measure_page_sizes(db, (4096, 8192, 16384))
        print(f"\n3. reads at {result['size']['spans']:,} spans, median of {args.repeat} (ms)", flush=True)
        print(f"   {'command':<32} {'CLI':>9} {'in-proc':>9}")
        result["reads"] = measure_reads(db, args.repeat, args.seed)
        print(
            f"\n   statement by statement (in-process, median of {args.repeat}, ms; query plan)", flush=True
        )
        result["statements"] = measure_statements(db, args.repeat)
        if args.cap_check if args.cap_check is not None else not args.skip_fill:
            print("\n4. the size cap: otel-blackbox cleanup --max-db-mb <90% of the data> (destructive)")
            result["cap"] = measure_cap(db)
            report_cap(result["cap"])
    finally:
        if workdir is not None:
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
