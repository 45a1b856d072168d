"""BlackboxLogRecordProcessor and the ``blackbox`` log exporter: log records that carry a span's
content, stored beside the span (real SDK, real SQLite), and the zero-code path under
``opentelemetry-instrument`` with openai-v2 in EVENT_ONLY mode against the fake provider."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_llm import FakeLLMServer
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.trace import TracerProvider
from test_auto_instrument import rows, run_instrumented

from otel_blackbox import BlackboxConfig, BlackboxLogRecordProcessor, BlackboxSpanProcessor
from otel_blackbox._store.connection import connect_reader
from otel_blackbox._store.log_writer import LogWriter
from otel_blackbox._store.trace_logs import load_trace

OPENAI_KEY = "sk-proj-" + "Q7x" * 10  # shaped like a real key: redacted by the built-in pattern
PASSWORD = "hunter2-correct-horse"


class Recording:
    def __init__(self, db: Path, **settings: Any) -> None:
        config = BlackboxConfig(db_path=db, **{"writer": "thread", "flush_interval_ms": 50, **settings})
        self.db = db
        self.tracers = TracerProvider()
        self.spans = BlackboxSpanProcessor(config=config)
        self.tracers.add_span_processor(self.spans)
        self.loggers = LoggerProvider()
        self.processor = BlackboxLogRecordProcessor(config=config)
        self.loggers.add_log_record_processor(self.processor)
        self.tracer = self.tracers.get_tracer("test")
        self.logger = self.loggers.get_logger("test")

    def close(self) -> None:
        self.tracers.shutdown()
        self.loggers.shutdown()


@pytest.fixture
def recording(tmp_path: Path) -> Iterator[Recording]:
    found = Recording(tmp_path / "logs.db")
    yield found
    found.close()


def _query(db: Path, sql: str, *params: Any) -> list[sqlite3.Row]:
    return rows(db, sql, *params)


def test_records_inside_a_span_are_read_back_attached_to_it(recording: Recording) -> None:
    with recording.tracer.start_as_current_span("chat gpt-4o") as span:
        recording.logger.emit(body={"role": "user", "content": "2 + 2?"}, event_name="gen_ai.user.message")
        recording.logger.emit(
            event_name="gen_ai.client.inference.operation.details",
            attributes={"gen_ai.output.messages": ({"role": "assistant", "parts": ["4"]},)},
            severity_text="INFO",
        )
        context = span.get_span_context()
    with recording.tracer.start_as_current_span("other"):
        pass
    recording.close()
    with connect_reader(recording.db) as conn:
        spans = {s.name: s for s in load_trace(conn, format(context.trace_id, "032x"))}
    conn.close()
    call = spans["chat gpt-4o"]
    assert call.span_id == format(context.span_id, "016x")
    assert [log["event_name"] for log in call.logs] == [
        "gen_ai.user.message",
        "gen_ai.client.inference.operation.details",
    ]
    first, second = call.logs
    assert first["body"] == {"role": "user", "content": "2 + 2?"} and first["attributes"] == {}
    assert second["severity"] == "INFO" and second["body"] is None
    assert second["attributes"] == {"gen_ai.output.messages": [{"role": "assistant", "parts": ["4"]}]}
    assert first["timestamp_ns"] <= second["timestamp_ns"]
    (stored,) = _query(recording.db, "SELECT * FROM logs WHERE event_name = 'gen_ai.user.message'")
    assert stored["trace_id"] == call.trace_id and stored["pid"] > 0 and stored["written_ns"] > 0
    # One run for the process: the log counts are on the span recorder's row.
    (run,) = _query(recording.db, "SELECT * FROM recorders")
    assert run["spans_written"] == 2 and run["logs_written"] == 2 and run["logs_skipped"] == 0


def test_a_secret_in_a_body_is_redacted_as_in_span_attributes(recording: Recording) -> None:
    text = f"use {OPENAI_KEY} please"
    with recording.tracer.start_as_current_span("call") as span:
        span.set_attribute("input.value", text)
        span.set_attribute("password", PASSWORD)
        recording.logger.emit(body=text, event_name="plain")
        recording.logger.emit(
            body={"content": text, "password": PASSWORD, "nested": [{"api_key": PASSWORD}]},
            attributes={"password": PASSWORD, "note": text},
            event_name="structured",
        )
    recording.close()
    (span_row,) = _query(recording.db, "SELECT attributes FROM spans")
    assert OPENAI_KEY not in span_row["attributes"]
    with connect_reader(recording.db) as conn:
        (call,) = load_trace(conn, conn.execute("SELECT trace_id FROM spans").fetchone()[0])
    conn.close()
    plain, structured = call.logs
    assert plain["body"] == call.attributes["input.value"] == "use [REDACTED:openai-key] please"
    assert structured["body"] == {
        "content": call.attributes["input.value"],
        "password": call.attributes["password"],
        "nested": [{"api_key": "[REDACTED]"}],
    }
    assert structured["attributes"] == {"password": "[REDACTED]", "note": call.attributes["input.value"]}
    for path in recording.db.parent.glob("logs.db*"):
        data = path.read_bytes()
        assert OPENAI_KEY.encode() not in data and PASSWORD.encode() not in data, path.name


def test_a_record_with_no_span_context_is_counted_not_stored(recording: Recording) -> None:
    recording.logger.emit(body="outside any span")
    with recording.tracer.start_as_current_span("call"):
        recording.logger.emit(body="inside")
    assert recording.processor.force_flush()
    assert recording.processor.logs_skipped == 1
    recording.close()
    assert [r["body"] for r in _query(recording.db, "SELECT body FROM logs")] == ['"inside"']
    (run,) = _query(recording.db, "SELECT logs_written, logs_skipped FROM recorders")
    assert tuple(run) == (1, 1)


def test_shutdown_writes_what_is_queued(tmp_path: Path) -> None:
    db = tmp_path / "flush.db"
    recording = Recording(db, flush_interval_ms=60_000)  # no tick before the shutdown
    with recording.tracer.start_as_current_span("call"):
        for n in range(50):
            recording.logger.emit(body=f"message {n}")
    recording.loggers.shutdown()  # nothing else writes them
    assert len(_query(db, "SELECT * FROM logs")) == 50
    assert recording.processor.logs_written == 50
    recording.tracers.shutdown()


def test_a_full_queue_drops_and_counts_without_blocking(tmp_path: Path) -> None:
    db = tmp_path / "full.db"
    recording = Recording(db, max_queue_size=10, max_batch_size=5, busy_timeout_ms=10_000)
    with recording.tracer.start_as_current_span("warm-up"):
        recording.logger.emit(body="first")  # the file exists, the writer thread runs
    assert recording.processor.force_flush()
    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")  # the writer is stuck in its next transaction
    try:
        started = time.perf_counter()
        with recording.tracer.start_as_current_span("burst"):
            for n in range(1000):
                recording.logger.emit(body=f"burst {n}")
        elapsed = time.perf_counter() - started
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert elapsed < 2.0, elapsed  # never waited for the writer
    dropped = recording.processor.logs_dropped
    assert dropped >= 1000 - 10 - 5 - 5
    recording.close()
    written = len(_query(db, "SELECT * FROM logs")) - 1
    assert written + dropped == 1000
    (run,) = _query(db, "SELECT logs_dropped, logs_write_errors FROM recorders")
    assert tuple(run) == (dropped, 0)


def test_a_raising_writer_never_raises_into_on_emit(
    recording: Recording, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = threading.Event()

    def broken(self: LogWriter) -> bool:
        calls.set()
        raise RuntimeError("the writer broke")

    monkeypatch.setattr(LogWriter, "write_pending", broken)
    with recording.tracer.start_as_current_span("call"):
        for n in range(20):
            recording.logger.emit(body=f"message {n}")  # returns, whatever the writer does
        recording.logger.emit(body=object())  # type: ignore[call-overload]  # not a JSON value
    assert recording.processor.force_flush(2000) is False
    assert calls.is_set() and recording.processor._writer.thread.is_alive()
    monkeypatch.undo()
    # The thread survived: what comes next is written.
    with recording.tracer.start_as_current_span("later"):
        recording.logger.emit(body="after the fault")
    assert recording.processor.force_flush()
    recording.close()
    assert '"after the fault"' in [r["body"] for r in _query(recording.db, "SELECT body FROM logs")]


def test_an_unreadable_record_is_counted_and_on_emit_returns(recording: Recording) -> None:
    class Broken:
        @property
        def log_record(self) -> Any:
            raise ValueError("no")

    recording.processor.on_emit(Broken())
    assert recording.processor.write_errors == 1


def test_zero_code_logs_exporter_stores_openai_v2_event_only_records(
    tmp_path: Path, fake_llm: FakeLLMServer
) -> None:
    db = tmp_path / "zero.db"
    done = run_instrumented(
        tmp_path,
        fake_llm,
        OTEL_TRACES_EXPORTER="blackbox",
        OTEL_LOGS_EXPORTER="blackbox",
        OTEL_BLACKBOX_DB=str(db),
        OTEL_SEMCONV_STABILITY_OPT_IN="gen_ai_latest_experimental",
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="EVENT_ONLY",
    )
    assert done.returncode == 0, done.stderr
    logs = _query(db, "SELECT * FROM logs")
    assert logs, done.stderr
    (details,) = [r for r in logs if r["event_name"] == "gen_ai.client.inference.operation.details"]
    (span,) = _query(db, "SELECT * FROM spans WHERE span_id = ?", details["span_id"])
    assert span["trace_id"] == details["trace_id"]
    assert "What is 2 + 2?" in details["attributes"]
    with connect_reader(db) as conn:
        loaded = {s.span_id: s for s in load_trace(conn, span["trace_id"])}
    conn.close()
    assert [log["event_name"] for log in loaded[span["span_id"]].logs] == [details["event_name"]]
    (run,) = _query(db, "SELECT * FROM recorders")  # one run: the span exporter's
    assert run["logs_written"] == len(logs) and run["spans_written"] > 0
