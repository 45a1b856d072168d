"""The store: schema versions, readers' errors, retention by age, the size cap."""

from __future__ import annotations

import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest
from helpers import Recorder

from otel_blackbox._store.connection import connect_reader, connect_writer
from otel_blackbox._store.retention import (
    apply_retention,
    cleanup,
    database_bytes,
    evict_oldest,
    oldest_complete_traces,
)
from otel_blackbox._store.schema import SCHEMA_VERSION
from otel_blackbox.errors import DatabaseLocked, DatabaseNotFound, NotABlackboxDatabase

DAY_NS = 86_400 * 10**9


def _trace_at(rec: Recorder, name: str, start_ns: int, children: int = 2, payload: str = "") -> None:
    root = rec.tracer.start_span(name, start_time=start_ns)
    ctx = __import__("opentelemetry.trace", fromlist=["set_span_in_context"]).set_span_in_context(root)
    for i in range(children):
        rec.tracer.start_span(f"{name}-child{i}", context=ctx, start_time=start_ns + 1000,
                              attributes={"input.value": payload}).end(end_time=start_ns + 2000)  # fmt: skip
    root.end(end_time=start_ns + 3000)


def test_new_database_is_wal_versioned_and_incremental(db_path: Path) -> None:
    with closing(connect_writer(db_path)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2  # incremental
        assert conn.execute("PRAGMA page_size").fetchone()[0] == 8192
        indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert {"spans_by_start", "spans_by_session", "spans_by_kind", "spans_not_ok"} <= indexes
    connect_writer(db_path).close()  # reopening an up-to-date file is a no-op


def test_writers_opening_a_new_file_at_the_same_moment_all_succeed(tmp_path: Path) -> None:
    # A CI run once failed here: a writer read user_version 0, another created the schema, and
    # the first then saw tables and refused the file as foreign. Unfixed, ~80% of rounds fail.
    def open_once(path: Path, start: threading.Barrier, errors: list[str]) -> None:
        start.wait()
        try:
            connect_writer(path).close()
        except Exception as exc:  # collected, so a failure names the message
            errors.append(str(exc))

    for round_ in range(25):
        path = tmp_path / f"race{round_}.db"
        start = threading.Barrier(8)
        errors: list[str] = []
        threads = [threading.Thread(target=open_once, args=(path, start, errors)) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == [], f"round {round_}: {errors[0]}"
        with closing(connect_reader(path)) as reader:
            assert reader.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_newer_schema_is_refused(db_path: Path) -> None:
    connect_writer(db_path).close()
    with closing(sqlite3.connect(db_path)) as raw:
        raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    for connect in (connect_writer, connect_reader):
        with pytest.raises(NotABlackboxDatabase, match="newer than this otel-blackbox supports"):
            connect(db_path)


def test_foreign_sqlite_database_is_refused_and_untouched(db_path: Path) -> None:
    with closing(sqlite3.connect(db_path)) as raw:
        raw.execute("CREATE TABLE notes (t TEXT)")
        raw.commit()
    before = db_path.read_bytes()
    with pytest.raises(NotABlackboxDatabase, match="not an otel-blackbox database"):
        connect_writer(db_path)
    with pytest.raises(NotABlackboxDatabase):
        connect_reader(db_path)
    with closing(sqlite3.connect(db_path)) as raw:
        assert raw.execute("SELECT name FROM sqlite_master").fetchall() == [("notes",)]
    assert len(db_path.read_bytes()) == len(before)


def test_reader_errors(tmp_path: Path) -> None:
    with pytest.raises(DatabaseNotFound):
        connect_reader(tmp_path / "nope.db")
    text = tmp_path / "notes.txt"
    text.write_text("hello, not a database\n" * 100)
    with pytest.raises(NotABlackboxDatabase, match="not a SQLite database"):
        connect_reader(text)
    assert text.read_text().startswith("hello")


def test_locked_database_is_one_clear_error(db_path: Path) -> None:
    connect_writer(db_path).close()
    locker = sqlite3.connect(db_path, isolation_level=None)
    locker.execute("PRAGMA locking_mode = EXCLUSIVE")
    locker.execute("BEGIN EXCLUSIVE")
    locker.execute("INSERT INTO recorders (pid, started_ns, last_seen_ns) VALUES (1, 1, 1)")
    try:
        with (
            pytest.raises(DatabaseLocked, match="locked by another process"),
            closing(connect_reader(db_path, busy_timeout_ms=100)) as reader,
        ):
            reader.execute("SELECT count(*) FROM spans").fetchone()
    finally:
        locker.execute("COMMIT")
        locker.close()


def test_retention_removes_exactly_the_old_traces(make_recorder: Callable[..., Recorder]) -> None:
    rec = make_recorder(retention=None, max_db_mb=0)
    now = time.time_ns()
    _trace_at(rec, "ancient", now - 40 * DAY_NS)
    _trace_at(rec, "old", now - 8 * DAY_NS)
    _trace_at(rec, "recent", now - 6 * DAY_NS)
    # A trace that started long ago but still had a span ending yesterday is kept whole.
    straddling = rec.tracer.start_span("straddling", start_time=now - 20 * DAY_NS)
    straddling.end(end_time=now - 1 * DAY_NS)
    rec.flush()
    with closing(connect_writer(rec.db_path)) as conn:
        assert apply_retention(conn, 7 * 86_400) == 2
        roots = {r[0] for r in conn.execute("SELECT name FROM spans WHERE parent_span_id IS NULL")}
        assert roots == {"recent", "straddling"}
        assert conn.execute("SELECT count(*) FROM spans").fetchone()[0] == 4  # recent (3) + straddling (1)


def test_size_cap_evicts_oldest_complete_traces_and_shrinks_file(
    make_recorder: Callable[..., Recorder],
) -> None:
    rec = make_recorder(retention=None, max_db_mb=0)
    now = time.time_ns()
    for i in range(300):  # content is stored once by its hash: each trace's own, incompressible
        _trace_at(rec, f"t{i:03d}", now - (300 - i) * 10**9, children=3, payload=os.urandom(16000).hex())
    still_running = rec.tracer.start_span("still-running", start_time=now - 10**12)  # oldest, but open
    rec.flush()
    with closing(connect_writer(rec.db_path)) as conn:
        before = database_bytes(conn)
        cap = 1024 * 1024
        assert before > 3 * cap
        result = cleanup(conn, max_age_s=None, max_bytes=cap)
        assert result.traces_evicted > 0
        assert database_bytes(conn) <= cap
        assert os.path.getsize(rec.db_path) <= cap * 1.1  # the space went back to the filesystem
        names = sorted(r[0] for r in conn.execute("SELECT name FROM spans WHERE parent_span_id IS NULL"))
        assert "still-running" in names  # an open trace is never evicted
        kept = [n for n in names if n != "still-running"]
        assert kept == [f"t{i:03d}" for i in range(300 - len(kept), 300)]  # the newest survive
        still_running.end()


def test_eviction_reads_only_the_oldest_end_and_keeps_to_its_budget(
    make_recorder: Callable[..., Recorder],
) -> None:
    rec = make_recorder(retention=None, max_db_mb=0)
    now = time.time_ns()
    for i in range(600):
        _trace_at(rec, f"t{i:03d}", now - (600 - i) * 10**9, children=3, payload="x" * 4000)
    running = rec.tracer.start_span("running", start_time=now - 10**12)  # the oldest, but open
    rec.flush()
    with closing(connect_writer(rec.db_path)) as conn:

        def root_names(trace_ids: list[str]) -> list[str]:
            marks = ",".join("?" * len(trace_ids))
            rows = conn.execute(
                f"SELECT name FROM spans WHERE parent_span_id IS NULL AND trace_id IN ({marks})", trace_ids
            )
            return sorted(r[0] for r in rows)

        assert root_names(oldest_complete_traces(conn, 3)) == [
            "t000",
            "t001",
            "t002",
        ]  # the open one is skipped
        plan = " ".join(
            r[3] for r in conn.execute("EXPLAIN QUERY PLAN SELECT trace_id FROM spans ORDER BY start_ns")
        )
        assert "spans_by_start" in plan  # a walk of the start index, stopped early: not a scan of the table

        target = database_bytes(conn) // 2
        assert evict_oldest(conn, target, budget_s=0) == (0, False)  # no time left this tick: nothing done
        evicted, done = evict_oldest(conn, target)
        assert done and evicted > 200 and database_bytes(conn) <= target  # more than one chunk
        names = sorted(r[0] for r in conn.execute("SELECT name FROM spans WHERE parent_span_id IS NULL"))
        assert names == ["running"] + [f"t{i:03d}" for i in range(evicted, 600)]  # the newest stay
        running.end()


def test_writer_applies_size_cap_while_recording(make_recorder: Callable[..., Recorder]) -> None:
    rec = make_recorder(retention=None, max_db_mb=1, max_batch_size=200)
    payload = "y" * 8000
    for i in range(600):
        with rec.tracer.start_as_current_span(f"t{i}", attributes={"input.value": payload}):
            pass
        if i % 100 == 99:
            rec.flush()
            time.sleep(1.1)  # the writer checks the size at most once a second
    rec.flush()
    time.sleep(1.2)
    with rec.tracer.start_as_current_span("last"):
        pass
    rec.flush()
    deadline = time.monotonic() + 10
    with closing(connect_writer(rec.db_path)) as conn:
        while database_bytes(conn) > 1024 * 1024 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert database_bytes(conn) <= 1024 * 1024
        assert conn.execute("SELECT count(*) FROM spans WHERE name = 'last'").fetchone()[0] == 1


def test_error_queries_use_the_partial_index(db_path: Path) -> None:
    from otel_blackbox._store import queries

    with closing(connect_writer(db_path)) as conn:
        plan = conn.execute(
            f"EXPLAIN QUERY PLAN SELECT * FROM spans WHERE {queries._ERRORS} ORDER BY start_ns"
        ).fetchall()
        assert "spans_not_ok" in " ".join(str(row[-1]) for row in plan)  # not a scan of every row


def test_stats_reads_no_statement_over_the_whole_table(make_recorder: Callable[..., Recorder]) -> None:
    # At a million spans one statement scanning the table took 0.6 s of `stats`' 1 s: every count
    # now comes from an index. (Tokens by model still reads the LLM rows, through the kind index.)
    from otel_blackbox._store import queries

    rec = make_recorder()
    _trace_at(rec, "agent", time.time_ns())
    rec.flush()
    with closing(connect_reader(rec.db_path)) as conn:
        statements: list[str] = []
        conn.set_trace_callback(statements.append)
        result = queries.stats(conn, rec.db_path)
        conn.set_trace_callback(None)
        assert (result["spans"], result["traces"], result["open_spans"]) == (3, 1, 0)
        spans_statements = [s for s in statements if "FROM spans" in s]
        assert len(spans_statements) >= 5
        for statement in spans_statements:
            plan = " ".join(str(row[-1]) for row in conn.execute(f"EXPLAIN QUERY PLAN {statement}"))
            full_scan = re.search(r"SCAN (spans|span_rows)\b(?! USING)", plan)  # the view reads span_rows
            assert "INDEX" in plan and not full_scan, (statement, plan)
