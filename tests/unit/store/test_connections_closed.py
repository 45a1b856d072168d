"""Every SQLite connection the product opens is closed once its owner is done, on every Python.

Python 3.13 warns about a connection collected while still open (a ResourceWarning: an error under
this suite's filterwarnings); 3.10 to 3.12 close it silently. These tests look at what this process
holds instead: after each reader, writer, the exporter, the in-thread writer, the viewer and the CLI
are done with a database, no file of it (the database, its -wal, its -shm) is open here.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import urllib.error
import urllib.request
from contextlib import closing
from pathlib import Path

import click.testing
import pytest
from helpers import Recorder
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult

from otel_blackbox import BlackboxSpanExporter
from otel_blackbox._store.connection import connect_reader, connect_writer
from otel_blackbox._store.schema import SCHEMA_VERSION
from otel_blackbox._web.server import make_server
from otel_blackbox.cli import main
from otel_blackbox.errors import NotABlackboxDatabase

FDS = Path("/proc/self/fd")
pytestmark = pytest.mark.skipif(not FDS.is_dir(), reason="reads this process's open files from /proc")


def held(db: Path) -> list[str]:
    """The files of ``db`` this process has open (a deleted one still counts)."""
    prefix = os.path.realpath(db)
    found = []
    for fd in FDS.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # closed since the listing (the listing's own descriptor)
            continue
        if target.startswith(prefix):
            found.append(target)
    return found


def _record(rec: Recorder, names: list[str]) -> list[str]:
    """Finished traces named ``names``, flushed; their trace ids."""
    ids = []
    for name in names:
        with rec.tracer.start_as_current_span(name) as span:
            ids.append(format(span.get_span_context().trace_id, "032x"))
    rec.flush()
    return ids


def test_readers_and_writers_close_on_success_and_on_refusal(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    connect_writer(db).close()
    connect_reader(db).close()
    assert held(db) == []
    with closing(sqlite3.connect(db)) as raw:
        raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    for connect in (connect_writer, connect_reader):
        with pytest.raises(NotABlackboxDatabase):
            connect(db)
    foreign = tmp_path / "foreign.db"
    with closing(sqlite3.connect(foreign)) as raw:
        raw.execute("CREATE TABLE notes (t TEXT)")
    for connect in (connect_writer, connect_reader):
        with pytest.raises(NotABlackboxDatabase):
            connect(foreign)
    assert held(db) == [] and held(foreign) == []


def test_the_in_thread_writer_closes_at_shutdown_also_after_its_file_was_replaced(db_path: Path) -> None:
    rec = Recorder(db_path, writer="thread")
    try:
        _record(rec, ["before"])
        assert held(db_path)  # the writer's connection, open while recording
        db_path.unlink()  # the writer lets go of the deleted file and records into a new one
        _record(rec, ["after"])
    finally:
        rec.provider.shutdown()
    assert [r["name"] for r in rec.rows()] == ["after"]
    assert held(db_path) == []


def test_the_exporter_closes_at_shutdown_and_opens_nothing_after(db_path: Path) -> None:
    exporter = BlackboxSpanExporter(db_path)
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    provider.get_tracer("t").start_span("exported").end()
    assert held(db_path)
    provider.shutdown()
    assert held(db_path) == []
    tracer = TracerProvider(shutdown_on_exit=False).get_tracer("t")
    late = tracer.start_span("late")
    late.end()
    assert isinstance(late, ReadableSpan)
    assert exporter.export([late]) is SpanExportResult.FAILURE
    assert held(db_path) == []


def test_the_viewer_closes_its_connection_after_each_request(recorder: Recorder) -> None:
    (trace_id,) = _record(recorder, ["agent"])
    server = make_server(recorder.db_path, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        for path, status in [
            ("/", 200),
            ("/api/traces", 200),
            (f"/trace/{trace_id}", 200),
            ("/trace/ffff", 404),
        ]:
            try:
                with urllib.request.urlopen(base + path, timeout=10) as response:
                    got = response.status
            except urllib.error.HTTPError as exc:
                got = exc.code
                exc.close()
            assert got == status, path
            assert held(recorder.db_path) == [], path
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_the_cli_closes_its_connection_after_each_command(recorder: Recorder, tmp_path: Path) -> None:
    (trace_id,) = _record(recorder, ["agent"])
    db = str(recorder.db_path)
    runner = click.testing.CliRunner()
    for argv, code in [
        (["list"], 0),
        (["show", trace_id[:8]], 0),
        (["show", "ffff"], 1),  # not found: an error path
        (["stats"], 0),
        (["errors"], 0),
        (["runs"], 0),
        (["export", "-o", str(tmp_path / "out.jsonl")], 0),
        (["cleanup", "--retention", "1d"], 0),
    ]:
        with runner.isolation():
            try:
                main(["--db", db, *argv])
                exited = 0
            except SystemExit as exc:
                exited = exc.code if isinstance(exc.code, int) else 1
        assert exited == code, argv
        assert held(recorder.db_path) == [], argv
