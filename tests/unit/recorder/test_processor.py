"""BlackboxSpanProcessor: open rows, final rows, flush, bounds, faults, fork, exit paths."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from helpers import Recorder
from opentelemetry.instrumentation.utils import is_instrumentation_enabled
from opentelemetry.trace import Status, StatusCode

from otel_blackbox import BlackboxConfig, BlackboxSpanProcessor
from otel_blackbox._store.connection import connect_reader
from otel_blackbox._store.queries import last_seen_by_trace, trace_spans


def test_open_row_then_final_row(recorder: Recorder) -> None:
    span = recorder.tracer.start_span(
        "tool", attributes={"openinference.span.kind": "TOOL", "input.value": '{"city": "Paris"}'}
    )
    recorder.flush()
    (row,) = recorder.rows()
    assert row["status"] == "open" and row["end_ns"] is None and row["duration_ns"] is None
    assert row["oi_span_kind"] == "TOOL"
    assert json.loads(row["attributes"])["input.value"] == '{"city": "Paris"}'

    span.set_attribute("output.value", "sunny")
    span.set_status(Status(StatusCode.ERROR, "boom"))
    span.end()
    recorder.flush()
    (row,) = recorder.rows()  # replaced, not added
    assert row["status"] == "error" and row["status_message"] == "boom"
    assert row["end_ns"] >= row["start_ns"] and row["duration_ns"] == row["end_ns"] - row["start_ns"]
    assert json.loads(row["attributes"])["output.value"] == "sunny"


def test_span_open_longer_than_flush_interval_is_on_disk_without_flush(
    make_recorder: Callable[..., Recorder],
) -> None:
    rec = make_recorder(flush_interval_ms=100)
    span = rec.tracer.start_span("long", attributes={"input.value": "question"})
    deadline = time.monotonic() + 5
    rows: list[sqlite3.Row] = []
    while time.monotonic() < deadline and not rows:
        time.sleep(0.05)
        with contextlib.suppress(sqlite3.OperationalError):  # the schema may not be there yet
            rows = rec.rows()
    assert rows and rows[0]["status"] == "open"
    span.end()


def test_short_span_gets_only_its_final_row(make_recorder: Callable[..., Recorder]) -> None:
    # A long flush interval: the span starts and ends before any drain, so no open row is written.
    rec = make_recorder(flush_interval_ms=60_000)
    with rec.tracer.start_as_current_span("parent"), rec.tracer.start_as_current_span("child"):
        pass
    rec.flush()
    rows = rec.rows()
    assert [r["name"] for r in rows] == ["parent", "child"]
    assert {r["status"] for r in rows} == {"unset"}
    (recorder_row,) = rec.rows("SELECT * FROM recorders")
    assert recorder_row["spans_written"] == 2 and recorder_row["pid"] == os.getpid()


def test_late_open_row_never_overwrites_final_row(recorder: Recorder) -> None:
    span = recorder.tracer.start_span("x")
    span.end()
    recorder.flush()
    # Replay the start event after the end was written: insert-if-absent keeps the final row.
    recorder.processor.on_start(span)  # type: ignore[arg-type]
    recorder.flush()
    (row,) = recorder.rows()
    assert row["status"] == "unset" and row["end_ns"] is not None


def test_columns_from_openinference_and_gen_ai(recorder: Recorder) -> None:
    with recorder.tracer.start_as_current_span(
        "chat",
        attributes={
            "openinference.span.kind": "llm",
            "llm.model_name": "gpt-test",
            "llm.token_count.prompt": 11,
            "llm.token_count.completion": 7,
            "session.id": "s-1",
            "user.id": "u-1",
        },
    ):
        pass
    with recorder.tracer.start_as_current_span(
        "anthropic.messages.create",
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "claude-test",
            "gen_ai.usage.input_tokens": 5,
            "gen_ai.usage.output_tokens": 3,
        },
    ):
        pass
    with recorder.tracer.start_as_current_span("lookup", attributes={"tool.name": "lookup"}):
        pass
    recorder.flush()
    rows = {r["name"]: r for r in recorder.rows()}
    chat = rows["chat"]
    assert (chat["oi_span_kind"], chat["model"], chat["session_id"], chat["user_id"]) == (
        "LLM",
        "gpt-test",
        "s-1",
        "u-1",
    )
    assert (chat["prompt_tokens"], chat["completion_tokens"], chat["total_tokens"]) == (11, 7, 18)
    gen_ai = rows["anthropic.messages.create"]
    assert (gen_ai["oi_span_kind"], gen_ai["model"], gen_ai["total_tokens"]) == ("LLM", "claude-test", 8)
    assert rows["lookup"]["tool_name"] == "lookup"


def test_events_links_resource_scope_and_exception(recorder: Recorder) -> None:
    with pytest.raises(ValueError), recorder.tracer.start_as_current_span("fails"):
        raise ValueError("bad argument")
    recorder.flush()
    (row,) = recorder.rows()
    assert row["status"] == "error" and "bad argument" in row["status_message"]
    (event,) = json.loads(row["events"])
    assert event["name"] == "exception"
    assert event["attributes"]["exception.type"] == "ValueError"
    assert "Traceback" in event["attributes"]["exception.stacktrace"]
    assert json.loads(row["scope"])["name"] == "tests"
    assert "service.name" in json.loads(row["resource"])


def test_force_flush_returns_false_on_timeout(make_recorder: Callable[..., Recorder], db_path: Path) -> None:
    rec = make_recorder(busy_timeout_ms=3_000)
    with rec.tracer.start_as_current_span("first"):
        pass
    rec.flush()
    locker = sqlite3.connect(db_path, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")  # the writer now waits on the busy timeout
    try:
        with rec.tracer.start_as_current_span("second"):
            pass
        started = time.monotonic()
        assert rec.processor.force_flush(timeout_millis=200) is False
        assert time.monotonic() - started < 2
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    rec.flush()
    assert [r["name"] for r in rec.rows()] == ["first", "second"]


def test_full_queue_drops_and_counts_without_blocking(
    make_recorder: Callable[..., Recorder], db_path: Path
) -> None:
    rec = make_recorder(max_queue_size=50, max_batch_size=10, busy_timeout_ms=5_000)
    with rec.tracer.start_as_current_span("warmup"):
        pass
    rec.flush()
    locker = sqlite3.connect(db_path, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    try:
        time.sleep(0.2)  # let the writer pick up nothing and block on the next batch
        started = time.perf_counter()
        for i in range(1_000):
            with rec.tracer.start_as_current_span(f"s{i}"):
                pass
        elapsed = time.perf_counter() - started
        queue = rec.processor._queue
        # Bounded: max_queue_size at most, but for the ends of spans the shipper had already put on
        # disk as open (the shipper may look while one of these spans runs): those are never dropped.
        assert len(queue.queued) <= 50 + queue.kept_past_bounds
        assert queue.kept_past_bounds <= 50  # one per open row, and open rows are bounded too
        assert rec.processor.dropped_count() > 0
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert elapsed < 5  # the agent's loop never waited on the 5 s busy timeout per span
    rec.flush()
    dropped = rec.processor.dropped_count()
    written = rec.rows("SELECT count(*) AS n FROM spans")[0]["n"]
    assert written + dropped == 1_001  # every span is either on disk or counted as dropped
    # The drop count reaches the recorder row without waiting for another span.
    deadline = time.monotonic() + 5
    while rec.rows("SELECT sum(spans_dropped) AS n FROM recorders")[0]["n"] != dropped:
        assert time.monotonic() < deadline, "drop count never reached the database"
        time.sleep(0.05)


def test_a_passing_write_failure_loses_nothing_and_keeps_one_recorder_row(
    make_recorder: Callable[..., Recorder], db_path: Path
) -> None:
    rec = make_recorder(busy_timeout_ms=100)
    with rec.tracer.start_as_current_span("before"):
        pass
    rec.flush()
    locker = sqlite3.connect(db_path, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    try:
        with rec.tracer.start_as_current_span("held-while-locked"):
            pass
        assert rec.processor.force_flush(5_000) is False  # the batch failed: reported, not raised
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    with rec.tracer.start_as_current_span("after"):
        pass
    rec.flush()  # the held batch goes first, then the new span
    assert [r["name"] for r in rec.rows()] == ["before", "held-while-locked", "after"]
    (recorder_row,) = rec.rows("SELECT * FROM recorders")
    assert (recorder_row["spans_written"], recorder_row["write_errors"]) == (3, 0)


def test_a_lasting_write_failure_keeps_the_newest_spans_and_counts_the_rest(
    make_recorder: Callable[..., Recorder], db_path: Path
) -> None:
    rec = make_recorder(busy_timeout_ms=50, max_queue_size=10, max_batch_size=4)
    rec.flush()
    locker = sqlite3.connect(db_path, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    try:
        for i in range(25):  # flushing after each one keeps the queue short: nothing is dropped
            with rec.tracer.start_as_current_span(f"span-{i}"):
                pass
            assert rec.processor.force_flush(5_000) is False
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    rec.flush()
    assert [r["name"] for r in rec.rows()] == [f"span-{i}" for i in range(15, 25)]  # the newest 10
    (recorder_row,) = rec.rows("SELECT * FROM recorders")
    counts = (recorder_row["spans_written"], recorder_row["write_errors"], recorder_row["spans_dropped"])
    assert counts == (10, 15, 0)
    assert rec.processor.write_errors == 15


def test_unwritable_database_never_raises_into_the_agent(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    target = tmp_path / "missing-dir" / "blackbox.db"
    processor = BlackboxSpanProcessor(config=BlackboxConfig(db_path=target))
    from opentelemetry.sdk.trace import TracerProvider

    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("t")
    with caplog.at_level(logging.WARNING, logger="otel_blackbox"):
        for _ in range(3):
            with tracer.start_as_current_span("agent-step"):
                pass
            assert processor.force_flush(5_000) is False
        provider.shutdown()
    warnings = [r for r in caplog.records if "could not write" in r.getMessage()]
    assert len(warnings) == 1  # warned once, not per batch
    assert processor.write_errors == 3  # held for a retry that never came, counted at shutdown


@pytest.mark.parametrize("writer", ["thread", "process"])
def test_writer_runs_with_instrumentation_suppressed(
    writer: str, monkeypatch: pytest.MonkeyPatch, db_path: Path
) -> None:
    seen: list[bool] = []
    real_connect = sqlite3.connect

    def spying_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        # What an instrumentation (e.g. opentelemetry-instrumentation-sqlite3) checks before tracing.
        seen.append(is_instrumentation_enabled())
        conn: sqlite3.Connection = real_connect(*args, **kwargs)
        return conn

    monkeypatch.setattr(sqlite3, "connect", spying_connect)
    rec = Recorder(db_path, writer=writer)
    with rec.tracer.start_as_current_span("x"):
        pass
    rec.flush()
    rec.provider.shutdown()
    monkeypatch.undo()
    assert [r["name"] for r in rec.rows()] == ["x"]
    # In-thread, the one connection is opened with instrumentation suppressed; with the writer
    # process, the agent's interpreter opens no SQLite connection at all.
    assert seen == ([False] if writer == "thread" else [])


def test_otel_sdk_disabled(monkeypatch: pytest.MonkeyPatch, db_path: Path) -> None:
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    rec = Recorder(db_path)
    with rec.tracer.start_as_current_span("x"):
        pass
    rec.processor.force_flush()
    rec.provider.shutdown()
    assert not db_path.exists()


def test_env_db_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OTEL_BLACKBOX_DB", str(tmp_path / "from-env.db"))
    processor = BlackboxSpanProcessor()
    assert Path(processor.config.db_path) == tmp_path / "from-env.db"
    processor.shutdown()
    assert BlackboxSpanProcessor(tmp_path / "explicit.db").config.db_path == tmp_path / "explicit.db"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_fork_child_gets_its_own_writer(recorder: Recorder) -> None:
    with recorder.tracer.start_as_current_span("parent-before-fork"):
        pass
    recorder.flush()
    # Python 3.12+ warns that fork() with threads is risky; this test does exactly that on purpose.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # child
        code = 1
        try:
            with recorder.tracer.start_as_current_span("in-child"):
                pass
            code = 0 if recorder.processor.force_flush(10_000) else 3
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    rows = {r["name"]: r["pid"] for r in recorder.rows()}
    assert rows == {"parent-before-fork": os.getpid(), "in-child": pid}


def _run_script(code: str, db: Path, *, check: bool = True) -> subprocess.CompletedProcess[str]:
    script = textwrap.dedent(
        f"""
        from opentelemetry.sdk.trace import TracerProvider
        from otel_blackbox import BlackboxSpanProcessor
        provider = TracerProvider()
        provider.add_span_processor(BlackboxSpanProcessor({str(db)!r}))
        tracer = provider.get_tracer("script")
        """
    ) + textwrap.dedent(code)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    if check:
        assert result.returncode == 0, result.stderr
    return result


@pytest.mark.parametrize("shutdown_on_exit", [True, False])
def test_clean_exit_without_shutdown_loses_nothing(db_path: Path, shutdown_on_exit: bool) -> None:
    code = (
        "for i in range(500):\n    tracer.start_span(f's{i}').end()\n"
        "open_span = tracer.start_span('never-ended')\n"
    )
    if not shutdown_on_exit:
        code = "import atexit\natexit.unregister(provider.shutdown)\n" + code
    _run_script(code, db_path)
    with closing(sqlite3.connect(db_path)) as conn:
        counts = dict(conn.execute("SELECT status, count(*) FROM spans GROUP BY status").fetchall())
    assert counts == {"unset": 500, "open": 1}


def test_unhandled_exception_loses_nothing(db_path: Path) -> None:
    result = _run_script(
        "with tracer.start_as_current_span('agent'):\n    raise RuntimeError('agent crashed')\n",
        db_path,
        check=False,
    )
    assert result.returncode == 1 and "agent crashed" in result.stderr
    with closing(sqlite3.connect(db_path)) as conn:
        assert conn.execute("SELECT name, status FROM spans").fetchall() == [("agent", "error")]


def test_import_creates_no_file_and_starts_no_thread(tmp_path: Path) -> None:
    code = "import threading, os, otel_blackbox; print(threading.active_count(), sorted(os.listdir('.')))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "1 []"


def test_four_processes_share_one_database(db_path: Path) -> None:
    code = """
    import os
    for t in range(50):
        with tracer.start_as_current_span(f"root-{os.getpid()}-{t}"):
            for c in range(9):
                with tracer.start_as_current_span("child"):
                    pass
    """
    procs = [threading.Thread(target=_run_script, args=(code, db_path)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    with closing(sqlite3.connect(db_path)) as conn:
        total, distinct, traces = conn.execute(
            "SELECT count(*), count(DISTINCT trace_id || span_id), count(DISTINCT trace_id) FROM spans"
        ).fetchone()
        assert (total, distinct, traces) == (2000, 2000, 200)
        assert conn.execute("SELECT count(DISTINCT pid) FROM spans").fetchone()[0] == 4
        assert conn.execute("SELECT count(*) FROM spans WHERE status = 'open'").fetchone()[0] == 0


def test_killed_process_open_spans_end_at_its_last_heartbeat(db_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import time
        from opentelemetry.sdk.trace import TracerProvider
        from otel_blackbox import BlackboxSpanProcessor
        provider = TracerProvider()
        provider.add_span_processor(BlackboxSpanProcessor({str(db_path)!r}))
        span = provider.get_tracer("script").start_span("stuck-tool", attributes={{"input.value": "x"}})
        print("READY", flush=True)
        time.sleep(600)
        """
    )
    with subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None and proc.stdout.readline() == "READY\n"
        time.sleep(1.2)
        proc.kill()
    with closing(connect_reader(db_path)) as conn:
        (span,) = trace_spans(conn, conn.execute("SELECT trace_id FROM spans").fetchone()[0])
        (last_seen,) = last_seen_by_trace(conn).values()
    assert span.status == "open"
    # Alive for 1.2 s after the start; heartbeats every 200 ms while open rows are on disk.
    assert 0.6e9 < last_seen - span.start_ns < 1.5e9


def test_a_span_that_cannot_be_serialized_costs_only_itself(recorder: Recorder) -> None:
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.trace import SpanContext

    no_context = ReadableSpan(name="no-context", context=None, end_time=2)
    bad_kind = ReadableSpan(name="bad-kind", context=SpanContext(1, 2, False), kind=None, end_time=2)  # type: ignore[arg-type]
    with recorder.tracer.start_as_current_span("good-before"):
        pass
    recorder.processor.on_end(no_context)
    recorder.processor.on_end(bad_kind)
    with recorder.tracer.start_as_current_span("good-after"):
        pass
    recorder.flush()
    assert [r["name"] for r in recorder.rows()] == ["good-before", "good-after"]
    assert recorder.processor._writer.write_errors == 2
