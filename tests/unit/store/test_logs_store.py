"""The ``logs`` table (schema version 5): older files upgraded in place, records read back by span in
time order, deleted with their trace by retention and the size cap, and fixture documents' records
stored and attached as the recorder stores them."""

from __future__ import annotations

import base64
import json
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

from conventions import stored_spans
from helpers import TESTS

from otel_blackbox import BlackboxConfig
from otel_blackbox._store import retention
from otel_blackbox._store.connection import connect_reader, connect_writer
from otel_blackbox._store.log_writer import LogWriter
from otel_blackbox._store.schema import MIGRATIONS, SCHEMA_VERSION, _statements
from otel_blackbox._store.trace_logs import logs_of_trace

TRACE, OTHER = 0xAB << 64 | 1, 0xCD << 64 | 2
SPAN, SIBLING = 0x11, 0x22


def _objects(conn: sqlite3.Connection) -> set[str]:
    return {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}


def _log(trace: int, span: int, at: int, body: Any = "hi", name: str | None = "ev") -> tuple[Any, ...]:
    return (trace, span, at, name, None, body, {})


def _write(db: Path, *snapshots: tuple[Any, ...]) -> None:
    writer = LogWriter(BlackboxConfig(db_path=db))
    try:
        writer.receive(snapshots)
        assert writer.write_pending()
    finally:
        writer.close()


def _span(conn: sqlite3.Connection, trace: int, span: int, start_ns: int) -> None:
    conn.execute(
        "INSERT INTO span_rows (trace_id, span_id, name, span_kind, status, start_ns, end_ns, written_ns) "
        "VALUES (?, ?, 'call', 'CLIENT', 'ok', ?, ?, ?)",
        (format(trace, "032x"), format(span, "016x"), start_ns, start_ns + 1, start_ns + 1),
    )


def test_a_version_2_recording_is_upgraded_and_gets_the_logs_table(tmp_path: Path) -> None:
    db = tmp_path / "v2.db"
    shutil.copyfile(TESTS / "data" / "schema_v2.db", db)
    conn = connect_writer(db)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 6
        assert {"logs", "logs_by_span"} <= _objects(conn)
        columns = [r[1] for r in conn.execute("PRAGMA table_info(recorders)")]
        assert columns[-4:] == ["logs_written", "logs_dropped", "logs_skipped", "logs_write_errors"]
        assert conn.execute("SELECT sum(logs_written), count(*) FROM recorders").fetchone() == (0, 2)
        (plan,) = [
            r[3] for r in conn.execute("EXPLAIN QUERY PLAN SELECT * FROM logs WHERE trace_id = ?", ("x",))
        ]
        assert "logs_by_span" in plan
    finally:
        conn.close()


def test_a_version_4_file_is_upgraded_keeping_its_spans(tmp_path: Path) -> None:
    db = tmp_path / "v4.db"
    raw = sqlite3.connect(db, isolation_level=None)
    try:
        for version in range(4):
            for statement in _statements(MIGRATIONS[version]):
                raw.execute(statement)
        raw.execute("PRAGMA user_version = 4")
        _span(raw, TRACE, SPAN, 1000)
    finally:
        raw.close()
    with connect_reader(db) as reader:  # read-only, not upgraded: no logs, no failure
        assert logs_of_trace(reader, format(TRACE, "032x")) == {}
    reader.close()
    _write(db, _log(TRACE, SPAN, 5))
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("SELECT count(*) FROM spans").fetchone()[0] == 1
        assert conn.execute("SELECT count(*) FROM logs").fetchone()[0] == 1
    finally:
        conn.close()


def test_records_come_back_by_span_in_time_order(tmp_path: Path) -> None:
    db = tmp_path / "read.db"
    _write(
        db,
        _log(TRACE, SPAN, 30, body={"b": [1, 2]}),
        _log(TRACE, SIBLING, 20, body=None, name=None),
        _log(TRACE, SPAN, 10, body="first"),
        _log(OTHER, SPAN, 5),
    )
    raw = sqlite3.connect(db, isolation_level=None)
    raw.execute(
        "INSERT INTO logs (trace_id, span_id, timestamp_ns, body, written_ns) "
        "VALUES (?, ?, 40, 'not json', 1)",
        (format(TRACE, "032x"), format(SPAN, "016x")),
    )
    raw.close()
    conn = connect_reader(db)
    try:
        found = logs_of_trace(conn, format(TRACE, "032x"))
    finally:
        conn.close()
    assert set(found) == {format(SPAN, "016x"), format(SIBLING, "016x")}
    assert [r["body"] for r in found[format(SPAN, "016x")]] == ["first", {"b": [1, 2]}, "not json"]
    assert found[format(SIBLING, "016x")] == [
        {"timestamp_ns": 20, "event_name": None, "severity": None, "body": None, "attributes": {}}
    ]


def test_retention_and_the_size_cap_delete_a_traces_records_with_it(tmp_path: Path) -> None:
    db = tmp_path / "retention.db"
    _write(db, _log(TRACE, SPAN, 1), _log(OTHER, SPAN, 2))
    conn = connect_writer(db)
    try:
        now = time.time_ns()
        _span(conn, TRACE, SPAN, now - 10 * 86_400 * 10**9)  # old
        _span(conn, OTHER, SPAN, now)
        assert retention.apply_retention(conn, 86_400, now_ns=now) == 1
        assert [r[0] for r in conn.execute("SELECT trace_id FROM logs")] == [format(OTHER, "032x")]
        assert retention.evict_oldest(conn, 0)[0] == 1
        assert conn.execute("SELECT count(*) FROM logs").fetchone()[0] == 0
    finally:
        conn.close()


def _b64(value: int, size: int) -> str:
    return base64.b64encode(value.to_bytes(size, "big")).decode()


def test_a_fixtures_log_records_are_attached_to_its_spans(tmp_path: Path) -> None:
    trace, span = 0x5B8EFFF798038103D269B633813FC60C, 0xEEE19B7EC3C1B174
    kv = {"key": "gen_ai.input.messages", "value": {"arrayValue": {"values": [{"kvlistValue": {"values": [
        {"key": "role", "value": {"stringValue": "user"}},
        {"key": "api_key", "value": {"stringValue": "sk-proj-" + "x" * 30}},
    ]}}]}}}  # fmt: skip
    document = {
        "traces": {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "t"}, "spans": [{
            "traceId": _b64(trace, 16), "spanId": _b64(span, 8), "name": "chat", "kind": "SPAN_KIND_CLIENT",
            "startTimeUnixNano": "1000", "endTimeUnixNano": "2000", "status": {},
        }]}]}]},
        "logs": {"resourceLogs": [{"scopeLogs": [{"logRecords": [
            {"traceId": _b64(trace, 16), "spanId": _b64(span, 8), "timeUnixNano": "1500",
             "eventName": "gen_ai.client.inference.operation.details",
             "severityNumber": "SEVERITY_NUMBER_INFO", "attributes": [kv], "body": {"stringValue": "hello"}},
            {"observedTimeUnixNano": "1600", "body": {"stringValue": "no span"}},
        ]}]}]},
    }  # fmt: skip
    path = tmp_path / "fixture.json"
    path.write_text(json.dumps(document))
    (chat,) = stored_spans(path, tmp_path / "fixture.db")
    assert chat.logs == [
        {
            "timestamp_ns": 1500,
            "event_name": "gen_ai.client.inference.operation.details",
            "severity": "INFO",
            "body": "hello",
            "attributes": {"gen_ai.input.messages": [{"role": "user", "api_key": "[REDACTED]"}]},
        }
    ]
