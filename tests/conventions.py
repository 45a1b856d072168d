"""The committed fixtures of real instrumentations (tests/data/conventions/), read as the house reads
them: stored through the real OTLP import path, loaded back as ``SpanRecord``s, and viewed.

A fixture is what a conformance agent (tests/conformance/agents/) wrote with ``--otlp-out``:
``{"traces": ExportTraceServiceRequest, "logs": ExportLogsServiceRequest?}`` in OTLP/JSON.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from otel_blackbox import BlackboxConfig
from otel_blackbox._spans.view.model import SpanView
from otel_blackbox._spans.view.registry import view_of
from otel_blackbox._spans.view.trace import read_trace
from otel_blackbox._store.ingest import Importer
from otel_blackbox._store.log_writer import LogWriter
from otel_blackbox._store.otlp_logs import log_snapshots
from otel_blackbox._store.queries import SpanRecord, span_records
from otel_blackbox._store.trace_logs import attach_logs

FIXTURES = Path(__file__).resolve().parent / "data" / "conventions"


def fixture_path(family: str, name: str) -> Path:
    return FIXTURES / family / f"{name}.json"


def stored_spans(path: Path, db: Path) -> list[SpanRecord]:
    """The fixture's spans as the store gives them back (redaction and columns as on import), each
    with the fixture's log records of it (``logs``, stored through the log recorder's writer)."""
    document = json.loads(path.read_text())
    config = BlackboxConfig(db_path=db)
    importer = Importer(config, f"fixture {path.name}")
    try:
        importer.store(path.name, [(None, document["traces"])])
    finally:
        importer.close()
    if document.get("logs"):
        writer = LogWriter(config)
        try:
            writer.receive(log_snapshots(document["logs"]))
            assert writer.write_pending(), f"could not store the log records of {path.name}"
        finally:
            writer.close()
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        rows = conn.execute("SELECT * FROM spans ORDER BY start_ns, id").fetchall()
        spans = span_records(conn, rows)
        attach_logs(conn, spans)
    finally:
        conn.close()
    return spans


def views(path: Path, db: Path) -> list[tuple[SpanRecord, SpanView]]:
    """Each span with its view, read with its trace as every command reads it (a call two spans
    describe is marked on the one not counted)."""
    return [(span, view_of(span)) for span in read_trace(stored_spans(path, db))]
