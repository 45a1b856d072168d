"""The processor's bounds: count and memory (max_queue_size, max_queue_mb) and the shipper's share.

A span is either on disk or counted as dropped, whatever the load; the queue's memory stays near
max_queue_mb even when the writer cannot keep up; a long span still gets its open row while the
queue overflows or the shipper is held to a tiny share; a bad value is one line naming its variable.
Real SDK, real SQLite, real writer process; nothing timed (deadlines only guard against a hang).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from contextlib import closing
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, cast

import pytest
from helpers import Recorder, run_cli, sized
from opentelemetry.sdk.trace import Span, TracerProvider
from opentelemetry.trace import Tracer

from otel_blackbox import BlackboxConfig, BlackboxSpanProcessor
from otel_blackbox._recorder.span_queue import SpanQueue
from otel_blackbox._store.snapshot import SNAPSHOT_BYTES, Snapshotter, queued_bytes
from otel_blackbox._store.writer import _FINALS_CHUNK, SpanWriter
from otel_blackbox.errors import ConfigError

pytestmark = pytest.mark.reliability

DEADLINE_S = 10.0  # a failure guard for polling, never a measured duration
PROC_STATUS = Path("/proc/self/status")


def count(db: Path, query: str, *params: Any) -> int:
    with closing(sqlite3.connect(db)) as conn:
        return int(conn.execute(query, params).fetchone()[0])


def finished_rows(db: Path) -> int:
    return count(db, "SELECT count(*) FROM spans WHERE status != 'open'")


def wait_for_status(db: Path, name: str) -> str | None:
    """The status of the row named ``name`` once there is one (None if none by the deadline)."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        with contextlib.suppress(sqlite3.OperationalError), closing(sqlite3.connect(db)) as conn:
            row = conn.execute("SELECT status FROM spans WHERE name = ?", (name,)).fetchone()
            if row is not None:
                return str(row[0])
        time.sleep(0.02)
    return None


class Burst:
    """Threads making spans flat out until stopped; ``made`` counts them exactly."""

    def __init__(self, tracer: Tracer, threads: int = 3) -> None:
        self._tracer = tracer
        self._stop = threading.Event()
        self._made = [0] * threads
        self._threads = [threading.Thread(target=self._run, args=(i,)) for i in range(threads)]

    def _run(self, index: int) -> None:
        tracer, stop, made = self._tracer, self._stop, self._made
        while not stop.is_set():
            tracer.start_span("burst").end()
            made[index] += 1

    @property
    def made(self) -> int:
        return sum(self._made)

    def __enter__(self) -> Burst:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()


def wait_for_drops(processor: BlackboxSpanProcessor) -> int:
    deadline = time.monotonic() + DEADLINE_S
    while processor.dropped_count() == 0:
        assert time.monotonic() < deadline, "the burst never overflowed the queue"
        time.sleep(0.01)
    return processor.dropped_count()


# -- 1. exact counts under a burst ------------------------------------------------------------------


@pytest.mark.parametrize("writer", ["process", "thread"])
def test_a_burst_puts_every_span_on_disk_or_in_the_drop_count(
    make_recorder: Callable[..., Recorder], db_path: Path, writer: str
) -> None:
    """Drops are the price of never blocking the agent: each must be counted, none lost silently."""
    per_thread = sized(20_000, 100_000)
    rec = make_recorder(max_queue_size=2_000, writer=writer)

    def make_spans() -> None:
        for _ in range(per_thread):
            rec.tracer.start_span("burst").end()

    threads = [threading.Thread(target=make_spans) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    rec.flush()
    dropped = rec.processor.dropped_count()
    assert dropped > 0  # the queue really overflowed
    finished = finished_rows(db_path)
    assert finished + dropped == 4 * per_thread
    assert rec.processor.spans_written == finished and rec.processor.write_errors == 0
    stats = json.loads(run_cli("stats", "--json", db=db_path, check=True).stdout)
    assert (stats["spans_dropped"], stats["write_errors"]) == (dropped, 0)


# -- 2. the memory bound ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    ["x" * 200_000, "é" * 200_000, "€" * 100_000, "🙂" * 50_000, ("€" * 50_000, "🙂" * 25_000)],
    ids=["ascii", "latin-1", "2-byte", "4-byte", "tuple"],
)
def test_queued_bytes_counts_large_text_at_its_real_size(value: str | tuple[str, ...]) -> None:
    """The estimate is what bounds the queue's memory: a large value must count at what it costs
    (CPython stores '€' in 2 bytes and '🙂' in 4; 'é' fits Latin-1, 1 byte)."""
    real = sum(map(sys.getsizeof, value)) if isinstance(value, tuple) else sys.getsizeof(value)
    assert real >= 200_000
    tracer = TracerProvider(shutdown_on_exit=False).get_tracer("tests")
    span = tracer.start_span("big", attributes={"output.value": value})
    span.end()
    estimate = queued_bytes(Snapshotter().snapshot(span, is_open=False))  # type: ignore[arg-type]
    assert real <= estimate < real + SNAPSHOT_BYTES + 1_000  # counted once, not a guess


# Run as its own process, so that its peak memory is the burst's alone. The values are made inside
# the loop and no reference to them is kept: only the recorder could hold on to them.
MEMORY_AGENT = textwrap.dedent(
    """
    import json, sqlite3, sys, time
    from opentelemetry.sdk.trace import TracerProvider
    from otel_blackbox import BlackboxConfig, BlackboxSpanProcessor
    from otel_blackbox._store.snapshot import Snapshotter, queued_bytes

    args = json.loads(sys.argv[1])

    def memory(key):
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024

    config = BlackboxConfig(db_path=args["db"], max_queue_mb=args["max_queue_mb"], writer=args["writer"],
                            busy_timeout_ms=args["busy_timeout_ms"])
    processor = BlackboxSpanProcessor(config=config)
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("memory-agent")
    tracer.start_span("warmup").end()
    assert processor.force_flush(10_000)
    locker = sqlite3.connect(args["db"], isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")  # the writer cannot write until the burst is over
    estimate = Snapshotter()
    before = memory("VmRSS")
    peak_queued = largest = 0
    for i in range(args["spans"]):
        span = tracer.start_span(f"big-{i}")
        span.set_attribute("output.value", ("%06d" % i) * 34000)  # 204,000 bytes, distinct per span
        span.end()
        peak_queued = max(peak_queued, processor._queue.bytes)
        largest = max(largest, queued_bytes(estimate.snapshot(span, is_open=False)))
        span = None
        time.sleep(args["pause_s"])
    peak = max(memory("VmHWM"), memory("VmRSS"))
    locker.execute("ROLLBACK")
    locker.close()
    flushed = processor.force_flush(60_000)
    conn = sqlite3.connect(args["db"])
    query = "SELECT count(*) FROM spans WHERE name LIKE 'big-%' AND status != 'open'"
    kept = conn.execute(query).fetchone()[0]
    conn.close()
    print(json.dumps({"growth": peak - before, "peak_queued": peak_queued, "largest": largest,
                      "max_bytes": processor._queue._max_bytes, "flushed": flushed, "kept": kept,
                      "dropped": processor.dropped_count(), "write_errors": processor.write_errors}))
    provider.shutdown()
    """
)
BIG_SPANS = 400  # ~82 MB of values, were they all kept
MEMORY_BOUND = 40 * 2**20  # ten times max_queue_mb=4: room for a batch in hand, far from keeping them all
RETRY_MEMORY_BOUND = 56 * 2**20  # with a retry buffer as well: see the test


def run_memory_agent(tmp_path: Path, **args: Any) -> dict[str, Any]:
    script = tmp_path / "memory_agent.py"
    script.write_text(MEMORY_AGENT, encoding="utf-8")
    params = {"db": str(tmp_path / "memory.db"), "max_queue_mb": 4, "spans": BIG_SPANS, **args}
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, str(script), json.dumps(params)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


@pytest.mark.skipif(not PROC_STATUS.exists(), reason="reads the process's memory from /proc")
@pytest.mark.parametrize("writer", ["process", "thread"])
def test_large_spans_while_the_writer_is_stuck_keep_the_agent_memory_bounded(
    tmp_path: Path, writer: str
) -> None:
    """max_queue_mb is a promise about the agent's memory: a writer that cannot keep up must cost
    drops, not the whole burst held in memory."""
    result = run_memory_agent(tmp_path, writer=writer, busy_timeout_ms=30_000, pause_s=0)
    assert result["dropped"] > 0  # the bound was reached
    assert result["peak_queued"] <= result["max_bytes"] + result["largest"]  # past it by one span at most
    assert result["growth"] < MEMORY_BOUND, f"grew {result['growth'] / 2**20:.0f} MB"
    assert result["flushed"] and result["write_errors"] == 0
    assert result["kept"] + result["dropped"] == BIG_SPANS


@pytest.mark.skipif(not PROC_STATUS.exists(), reason="reads the process's memory from /proc")
def test_spans_held_for_a_retry_stay_within_the_memory_bound(tmp_path: Path) -> None:
    """A short busy timeout makes each write fail fast: the shipper keeps emptying the queue into the
    writer's retry buffer, which max_queue_mb bounds too (the oldest held spans are lost, counted
    as write errors)."""
    result = run_memory_agent(tmp_path, writer="thread", busy_timeout_ms=50, pause_s=0.002)
    assert result["write_errors"] > 0  # the retry buffer reached the bound
    assert result["flushed"] and result["kept"] + result["dropped"] + result["write_errors"] == BIG_SPANS
    # Here the queue (4 MB) and the retry buffer (4 MB) both hold spans in the agent's process, and
    # every retry builds the held rows again (200 KB strings the allocator keeps some of): 42 MB
    # measured, against 69-78 MB when the retry buffer had no byte bound and 82 MB to keep them all.
    assert result["growth"] < RETRY_MEMORY_BOUND, f"grew {result['growth'] / 2**20:.0f} MB"


# -- 3. durability ----------------------------------------------------------------------------------


@pytest.mark.parametrize("writer", ["process", "thread"])
def test_a_long_span_is_on_disk_while_a_burst_overflows_the_queue(
    make_recorder: Callable[..., Recorder], db_path: Path, writer: str
) -> None:
    """Open rows come from the registry, not the ended queue: a full queue must not hide a running span."""
    rec = make_recorder(flush_interval_ms=100, max_queue_size=200, writer=writer)
    with Burst(rec.tracer) as burst:
        dropped_at_start = wait_for_drops(rec.processor)
        long_span = rec.tracer.start_span("long-tool")
        assert wait_for_status(db_path, "long-tool") == "open"
        assert rec.processor.dropped_count() > dropped_at_start  # still overflowing meanwhile
    rec.flush()  # the queue drained: the end is not dropped
    long_span.end()
    rec.flush()
    assert rec.rows("SELECT status FROM spans WHERE name = 'long-tool'")[0]["status"] == "unset"
    assert finished_rows(db_path) + rec.processor.dropped_count() == burst.made + 1


@pytest.mark.parametrize("writer", ["process", "thread"])
def test_a_tiny_shipper_share_still_writes_open_rows_and_flushes(
    make_recorder: Callable[..., Recorder], db_path: Path, writer: str
) -> None:
    """The share sheds throughput, never durability: open rows go on while resting, flushes do not wait."""
    rec = make_recorder(flush_interval_ms=100, max_queue_size=500, shipper_share=0.01, writer=writer)
    with Burst(rec.tracer) as burst:
        wait_for_drops(rec.processor)
        share = rec.processor._writer._share
        deadline = time.monotonic() + DEADLINE_S
        while share.rested_s == 0:  # the share has held the shipper back: the case under test
            assert time.monotonic() < deadline, "the shipper never rested on its share"
            time.sleep(0.01)
        long_span = rec.tracer.start_span("long-tool")
        assert wait_for_status(db_path, "long-tool") == "open"
        assert rec.processor.force_flush(int(DEADLINE_S * 1000)) is True  # during the burst
    rec.flush()
    long_span.end()
    rec.flush()
    assert rec.rows("SELECT status FROM spans WHERE name = 'long-tool'")[0]["status"] == "unset"
    assert finished_rows(db_path) + rec.processor.dropped_count() == burst.made + 1


def test_a_long_span_started_after_a_flushed_burst_is_on_disk_within_the_interval(
    make_recorder: Callable[..., Recorder],
) -> None:
    """A flush ships without the share, so the shipper ends it in debt; the next span's open row must
    not wait for the debt to be paid (here ~20 s against a 100 ms flush interval)."""
    rec = make_recorder(flush_interval_ms=100, shipper_share=0.01, writer="thread")
    for _ in range(4_000):
        rec.tracer.start_span("burst", attributes={"input.value": "x" * 500}).end()
    rec.flush()
    long_span = rec.tracer.start_span("long-tool")
    deadline = time.monotonic() + 3.0  # 30 flush intervals
    while not rec.rows("SELECT 1 FROM spans WHERE name = 'long-tool'") and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        assert [r["status"] for r in rec.rows("SELECT status FROM spans WHERE name = 'long-tool'")] == [
            "open"
        ]
    finally:
        long_span.end()


def test_a_span_whose_start_was_not_registered_still_gets_its_final_row(
    make_recorder: Callable[..., Recorder], db_path: Path
) -> None:
    """A full registry costs an open row, never the span: its final row comes from on_end."""
    # A long interval: the shipper looks at the registry only when a flush wakes it, so the count is
    # exact. It also looks once its writer is ready (what started meanwhile is overdue): one span
    # first, flushed, so that look is over before the 50 starts.
    rec = make_recorder(max_queue_size=10, flush_interval_ms=60_000)
    rec.tracer.start_span("first").end()
    rec.flush()
    spans = [rec.tracer.start_span(f"started-{i}") for i in range(50)]
    assert rec.processor.open_rows_dropped == 40
    rec.flush()
    assert count(db_path, "SELECT count(*) FROM spans WHERE status = 'open'") == 10  # the registered ones
    for i, span in enumerate(spans):
        span.end()
        if i % 5 == 4:  # never more ended than the queue holds: this test is about starts
            rec.flush()
    assert rec.processor.dropped_count() == 0
    names = {r["name"] for r in rec.rows("SELECT name FROM spans WHERE status != 'open'")}
    assert names == {"first"} | {f"started-{i}" for i in range(50)}
    assert count(db_path, "SELECT count(*) FROM spans WHERE status = 'open'") == 0


@pytest.mark.parametrize("writer", ["process", "thread"])
def test_open_rows_are_written_within_the_interval_while_the_shipper_rests_on_a_near_zero_share(
    make_recorder: Callable[..., Recorder], db_path: Path, writer: str
) -> None:
    """Open rows are the promise, not load to shed: held to 0.1 % of the interpreter, the shipper
    rests for seconds after each batch of the burst, and each long span started meanwhile is still
    written within one flush interval of its start (the row's written_ns against the span's
    start_ns: the recorder's own clock; the interval is the promise, not a speed target)."""
    interval_ms = 1000
    rec = make_recorder(flush_interval_ms=interval_ms, max_queue_size=500, shipper_share=0.001, writer=writer)
    names = [f"long-{i}" for i in range(5)]
    spans = []
    with Burst(rec.tracer):
        wait_for_drops(rec.processor)
        share = rec.processor._writer._share
        deadline = time.monotonic() + DEADLINE_S
        while share.rested_s < 3 * interval_ms / 1000:  # the budget alone holds it back for intervals
            assert time.monotonic() < deadline, f"the shipper rested only {share.rested_s:.2f} s"
            time.sleep(0.01)
        for name in names:
            spans.append(rec.tracer.start_span(name))
            time.sleep(0.2)
        assert [wait_for_status(db_path, name) for name in names] == ["open"] * len(names)
        rows = rec.rows("SELECT name, start_ns, written_ns FROM spans WHERE name LIKE 'long-%'")
    for span in spans:
        span.end()
    waited_ms = {r["name"]: (r["written_ns"] - r["start_ns"]) / 1e6 for r in rows}
    assert sorted(waited_ms) == names
    assert {n: ms for n, ms in waited_ms.items() if ms > interval_ms} == {}, waited_ms


def test_an_open_row_that_arrives_during_a_big_batch_commits_before_the_batch_ends(db_path: Path) -> None:
    """The writer under a big batch of final rows: they go in chunks, and an open row received
    between two of them (as the writer process takes in its pipe) commits then, with the chunks
    before it, ahead of the rest; no other chunk ends a transaction (each commit costs WAL writes)."""
    tracer = TracerProvider().get_tracer("t")
    snapshotter = Snapshotter()
    finals = []
    for i in range(2_000):
        span = cast(Span, tracer.start_span(f"burst-{i}"))
        span.end()
        finals.append(snapshotter.snapshot(span, is_open=False))
    writer = SpanWriter(BlackboxConfig(db_path=db_path), started_ns=time.time_ns(), dropped=lambda: 0)
    writer.receive(snapshotter.take_definitions(), finals, [])
    long_span = cast(Span, tracer.start_span("long-tool"))
    seen: list[tuple[int, int]] = []  # (final rows, open rows) committed, at each call

    def between() -> None:
        seen.append(
            (
                count(db_path, "SELECT count(*) FROM spans WHERE status != 'open'"),
                count(db_path, "SELECT count(*) FROM spans WHERE status = 'open'"),
            )
        )
        if len(seen) == 2:
            writer.receive(
                snapshotter.take_definitions(), (), [snapshotter.snapshot(long_span, is_open=True)]
            )
            writer.write_opens()  # inside the write: it commits them as between returns

    try:
        assert writer.write_pending(between) is None
    finally:
        writer.close()
    chunks = -(-2_000 // _FINALS_CHUNK)
    assert len(seen) == chunks - 1  # after each chunk but the last
    # Nothing committed during the first two chunks; then the open row, with those two chunks.
    assert seen[:3] == [(0, 0), (0, 0), (2 * _FINALS_CHUNK, 1)]
    assert set(seen[3:]) <= {(2 * _FINALS_CHUNK, 1)}  # the rest in one transaction, at the end
    assert count(db_path, "SELECT count(*) FROM spans WHERE name = 'long-tool' AND status = 'open'") == 1
    assert finished_rows(db_path) == 2_000


def test_an_open_row_commits_between_two_steps_of_eviction(db_path: Path) -> None:
    """The writer past its size cap evicts in short transactions: an open row received meanwhile
    commits between two of them, and eviction goes on after it (the running trace is not evicted)."""
    tracer = TracerProvider().get_tracer("t")
    snapshotter = Snapshotter()
    config = BlackboxConfig(db_path=db_path, max_db_mb=1)
    writer = SpanWriter(config, started_ns=time.time_ns(), dropped=lambda: 0)
    for batch in range(6):  # about 3 MB of complete traces, one span each
        finals = []
        for i in range(500):
            span = cast(Span, tracer.start_span(f"old-{batch}-{i}", attributes={"input.value": "x" * 1000}))
            span.end()
            finals.append(snapshotter.snapshot(span, is_open=False))
        writer.receive(snapshotter.take_definitions(), finals, [])
        assert writer.write_pending() is None
    before = finished_rows(db_path)
    long_span = cast(Span, tracer.start_span("long-tool"))
    rows_at_open: list[int] = []

    def between() -> None:
        if not rows_at_open:
            writer.receive(
                snapshotter.take_definitions(), (), [snapshotter.snapshot(long_span, is_open=True)]
            )
            writer.write_opens()
            rows_at_open.append(finished_rows(db_path))

    try:
        deadline = time.monotonic() + DEADLINE_S
        writer.maintain(between)  # the size check is due at the first call: eviction starts
        while writer.maintenance.evicting or writer.maintenance.freed:
            assert time.monotonic() < deadline, "eviction never finished"
            writer.maintain(between)
    finally:
        writer.close()
    assert len(rows_at_open) == 1 and before > rows_at_open[0], (before, rows_at_open)  # evicting already
    assert finished_rows(db_path) < rows_at_open[0]  # and eviction went on after the open row
    assert count(db_path, "SELECT count(*) FROM spans WHERE name = 'long-tool' AND status = 'open'") == 1


def test_open_rows_commit_before_a_big_batch_of_final_rows(db_path: Path) -> None:
    """A long span's open row does not wait for a burst's final rows to be built and written: when the
    finals' transaction begins, the open row is already committed (seen from another connection)."""
    tracer = TracerProvider().get_tracer("t")
    snapshotter = Snapshotter()
    long_span = cast(Span, tracer.start_span("long-tool"))  # the SDK's span, as the processor sees it
    finals = []
    for i in range(500):
        span = cast(Span, tracer.start_span(f"burst-{i}"))
        span.end()
        finals.append(snapshotter.snapshot(span, is_open=False))
    writer = SpanWriter(BlackboxConfig(db_path=db_path), started_ns=time.time_ns(), dropped=lambda: 0)
    writer.receive(snapshotter.take_definitions(), finals, [snapshotter.snapshot(long_span, is_open=True)])
    seen_at_begin: list[list[tuple[str, str]]] = []

    def on_statement(sql: str) -> None:
        if sql.startswith("BEGIN"):
            with closing(sqlite3.connect(db_path)) as other:
                seen_at_begin.append(other.execute("SELECT name, status FROM spans ORDER BY name").fetchall())

    try:
        writer._connection().set_trace_callback(on_statement)
        assert writer.write_pending() is None
    finally:
        writer.close()
    assert seen_at_begin[:2] == [[], [("long-tool", "open")]]
    assert count(db_path, "SELECT count(*) FROM spans") == 501


# -- 4. settings ------------------------------------------------------------------------------------

BAD_ENV = [("OTEL_BLACKBOX_MAX_QUEUE_MB", v) for v in ("0", "-1", "abc", "inf", "nan")] + [
    ("OTEL_BLACKBOX_SHIPPER_SHARE", v) for v in ("0", "1.5", "-0.1", "abc", "nan")
]


@pytest.mark.parametrize(("var", "value"), BAD_ENV)
def test_a_bad_queue_setting_from_env_is_one_line_naming_the_variable(var: str, value: str) -> None:
    with pytest.raises(ConfigError) as info:
        BlackboxConfig.from_env({var: value})
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{var}: ")


@pytest.mark.parametrize(
    ("field", "value"),
    [("max_queue_mb", 0), ("max_queue_mb", -1.0), ("max_queue_mb", float("nan")), ("max_queue_mb", "8"),
     ("max_queue_mb", True), ("shipper_share", 2), ("shipper_share", 0), ("shipper_share", True),
     ("shipper_share", float("nan")), ("shipper_share", "0.5")],
)  # fmt: skip
def test_a_bad_queue_setting_in_code_names_the_field(field: str, value: Any) -> None:
    with pytest.raises(ConfigError) as info:
        BlackboxConfig(**{field: value})
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{field}: ")


@pytest.mark.parametrize(
    ("var", "value", "field", "expected"),
    [("OTEL_BLACKBOX_SHIPPER_SHARE", "0.5", "shipper_share", 0.5),
     ("OTEL_BLACKBOX_SHIPPER_SHARE", "1", "shipper_share", 1.0),
     ("OTEL_BLACKBOX_MAX_QUEUE_MB", "8", "max_queue_mb", 8.0),
     ("OTEL_BLACKBOX_MAX_QUEUE_MB", "0.5", "max_queue_mb", 0.5)],
)  # fmt: skip
def test_good_queue_settings_are_accepted(var: str, value: str, field: str, expected: float) -> None:
    config = BlackboxConfig.from_env({var: value})
    assert getattr(config, field) == expected
    if field == "max_queue_mb":  # what the processor bounds its queue with
        assert BlackboxSpanProcessor(config=config)._queue._max_bytes == int(expected * 2**20)


def env_without_blackbox(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_") and k != "PYTHONPATH"}
    env.update(extra)
    return env


@pytest.mark.parametrize(
    ("var", "value"), [("OTEL_BLACKBOX_MAX_QUEUE_MB", "0"), ("OTEL_BLACKBOX_SHIPPER_SHARE", "abc")]
)
def test_a_bad_queue_setting_stops_the_cli_with_one_line(tmp_path: Path, var: str, value: str) -> None:
    """`cleanup` builds its settings from OTEL_BLACKBOX_* (as `import` and `serve` do): a bad one
    is exit 2 and one line, before the database is touched."""
    db = tmp_path / "blackbox.db"
    done = subprocess.run(
        [sys.executable, "-m", "otel_blackbox.cli", "--db", str(db), "cleanup"],
        capture_output=True, text=True, env=env_without_blackbox(**{var: value}), timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"otel-blackbox: error: {var}: ") and "Traceback" not in done.stderr
    assert not db.exists()


ZERO_CODE_AGENT = textwrap.dedent(
    """
    from opentelemetry import trace
    with trace.get_tracer("agent").start_as_current_span("step"):
        pass
    print("agent done")
    """
)


@pytest.mark.parametrize(
    ("var", "value"), [("OTEL_BLACKBOX_MAX_QUEUE_MB", "-1"), ("OTEL_BLACKBOX_SHIPPER_SHARE", "1.5")]
)
def test_a_bad_queue_setting_under_opentelemetry_instrument_is_one_warning(
    tmp_path: Path, var: str, value: str
) -> None:
    """Zero-code setup is where these settings are met most: the agent runs, unrecorded, and one
    line says why."""
    instrument = shutil.which("opentelemetry-instrument", path=os.path.dirname(sys.executable))
    assert instrument, "opentelemetry-instrument is not installed next to this Python"
    (tmp_path / "agent.py").write_text(ZERO_CODE_AGENT, encoding="utf-8")
    db = tmp_path / "blackbox.db"
    # Every instrumentor off: they are not what this is about, and each costs start-up time.
    disabled = ",".join(sorted({e.name for e in entry_points(group="opentelemetry_instrumentor")}))
    env = env_without_blackbox(
        OTEL_TRACES_EXPORTER="none", OTEL_METRICS_EXPORTER="none", OTEL_LOGS_EXPORTER="none",
        OTEL_PYTHON_DISABLED_INSTRUMENTATIONS=disabled, OTEL_BLACKBOX_DB=str(db), **{var: value},
    )  # fmt: skip
    argv = [instrument, sys.executable, "agent.py"]
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "agent done\n", done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"otel-blackbox: not recording: {var}: ")
    assert not db.exists()


def test_the_end_of_a_span_on_disk_as_open_is_queued_past_a_full_queue(db_path: Path) -> None:
    """A dropped end would leave a row saying "open" of a span that ended: that end is kept, counted."""
    queue = SpanQueue(BlackboxConfig(db_path=db_path, max_queue_size=2), Snapshotter(), threading.Event())
    tracer = TracerProvider().get_tracer("t")  # no processor: the queue is driven by hand
    long_span = cast(Span, tracer.start_span("long"))
    queue.started(long_span)
    assert len(queue.take_opens(failed=lambda span: None)) == 1  # its open row goes to disk
    for i in range(3):
        short = cast(Span, tracer.start_span(f"s{i}"))
        queue.started(short)
        short.end()
        queue.ended(short._readable_span())  # what the SDK hands on_end
    assert (len(queue.queued), queue.dropped, queue.kept_past_bounds) == (2, 1, 0)
    long_span.end()
    queue.ended(long_span._readable_span())
    assert (len(queue.queued), queue.dropped, queue.kept_past_bounds) == (3, 1, 1)
    assert queue.queued[-1][1][3] == "long"  # its final snapshot, queued past the bound
