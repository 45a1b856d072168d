"""BlackboxSpanExporter: the end-only variant behind a BatchSpanProcessor."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult

from otel_blackbox import BlackboxConfig, BlackboxSpanExporter


def test_batch_processor_writes_finished_spans_only(db_path: Path) -> None:
    exporter = BlackboxSpanExporter(db_path)
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("root", attributes={"openinference.span.kind": "CHAIN"}):
        with tracer.start_as_current_span("llm", attributes={"llm.model_name": "m", "api_key": "plain"}):
            pass
        never = tracer.start_span("never-ended")
    assert provider.force_flush()
    query = "SELECT name, status, attributes FROM spans ORDER BY name"
    with closing(sqlite3.connect(db_path)) as conn:
        rows = conn.execute(query).fetchall()
    assert [r[:2] for r in rows] == [("llm", "unset"), ("root", "unset")]
    assert json.loads(rows[0][2])["api_key"] == "[REDACTED]"  # same redaction as the processor
    never.end()
    provider.shutdown()


def test_export_failure_is_reported_not_raised(tmp_path: Path) -> None:
    exporter = BlackboxSpanExporter(config=BlackboxConfig(db_path=tmp_path / "no-such-dir" / "x.db"))
    provider = TracerProvider(shutdown_on_exit=False)
    tracer = provider.get_tracer("t")
    span = tracer.start_span("s")
    span.end()
    assert exporter.export([span]) is SpanExportResult.FAILURE  # type: ignore[list-item]
    exporter.shutdown()
    assert exporter.export([span]) is SpanExportResult.FAILURE  # type: ignore[list-item]
