"""Schema version 3 on real older files: resources and scopes stored once, ``spans`` a view.

``tests/data/schema_v2.db`` was recorded by the version-2 code (commit fce0610) through the real
BlackboxSpanProcessor and OpenTelemetry SDK (``tests/data/make_v2_db.py``): two processes with a
resource each, three scopes, an OK trace, a failed tool with an exception event, a link, non-ASCII
text and two spans left open by a killed process. Every test works on a copy of it.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import click.testing
import pytest
from helpers import TESTS, Receiver, Recorder, run_cli
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from otel_blackbox import BlackboxConfig, BlackboxSpanProcessor
from otel_blackbox._cli import common
from otel_blackbox._store import queries, retention, runs
from otel_blackbox._store.connection import connect_reader, connect_writer
from otel_blackbox._store.inserts import SpanInserter
from otel_blackbox._store.queries import CUT_BY_SDK
from otel_blackbox._store.rows import dumps
from otel_blackbox._store.schema import MIGRATIONS, SCHEMA_VERSION, SPAN_COLUMNS, _statements
from otel_blackbox._web import filters, trace_list
from otel_blackbox.cli import main
from otel_blackbox.errors import NotABlackboxDatabase

DATA = TESTS / "data" / "schema_v2.db"
OK_TRACE = "cd613e30d8f16adf91b7584a2265b1f5"
ERROR_TRACE = "612e7696a6cecc1b78e510617311d8a3"
OPEN_TRACE = "da94e3e8ab73738fcf1822ffbc688778"
SESSION = "sess-ü-1"
INDEXES = {"spans_by_start", "spans_by_session", "spans_by_kind", "spans_not_ok"}
TABLES = {"content_sweeps", "contents", "logs", "recorders", "resources", "scopes", "span_rows"}


def _version(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()


def _dump(db: Path) -> dict[str, Any]:
    """What a reader of ``spans`` sees: its columns in order (version 2's; version 6 adds two, NULL
    for a row written before: checked below), and every row and value as stored."""
    conn = sqlite3.connect(db)
    try:
        cursor = conn.execute(f"SELECT id, {', '.join(SPAN_COLUMNS)} FROM spans ORDER BY id")
        return {
            "columns": [d[0] for d in cursor.description],
            "spans": cursor.fetchall(),
            "types": conn.execute(
                "SELECT "
                + ", ".join(f"typeof({c})" for c in ("id", *SPAN_COLUMNS))
                + " FROM spans ORDER BY id"
            ).fetchall(),
            # Version 2's columns (version 4 adds `source`, NULL for a recording: checked below).
            "recorders": conn.execute(
                "SELECT id, pid, started_ns, last_seen_ns, spans_written, spans_dropped, write_errors, "
                "run_id "
                "FROM recorders ORDER BY id"
            ).fetchall(),
        }
    finally:
        conn.close()


def _objects(db: Path) -> dict[str, set[str]]:
    conn = sqlite3.connect(db)
    try:
        found: dict[str, set[str]] = {}
        for kind, name in conn.execute("SELECT type, name FROM sqlite_master"):
            found.setdefault(kind, set()).add(name)
        return found
    finally:
        conn.close()


@pytest.fixture
def v2(tmp_path: Path) -> Path:
    db = tmp_path / "v2.db"
    shutil.copyfile(DATA, db)
    assert _version(db) == 2 and SCHEMA_VERSION == 6
    return db


@pytest.fixture
def as_is(tmp_path: Path) -> Path:
    """A second copy, read as version 2 (as a file this user cannot write would be)."""
    db = tmp_path / "as-is.db"
    shutil.copyfile(DATA, db)
    return db


def test_the_test_file_is_a_real_version_2_recording(v2: Path) -> None:
    before = _dump(v2)
    assert before["columns"] == ["id", *SPAN_COLUMNS]
    rows = [dict(zip(before["columns"], r, strict=True)) for r in before["spans"]]
    assert len(rows) == 12 and len({r["trace_id"] for r in rows}) == 5
    assert len({r["resource"] for r in rows}) == 2 and len({r["scope"] for r in rows}) == 3
    assert sorted(r["status"] for r in rows).count("open") == 2
    (failed,) = [r for r in rows if r["status"] == "error"]
    assert "exception" in failed["events"] and "503" in failed["status_message"]
    assert any(OK_TRACE in r["links"] for r in rows)
    assert any("日本語" in r["name"] for r in rows) and any("🚀" in r["resource"] for r in rows)
    assert len(before["recorders"]) == 2
    assert "spans" in _objects(v2)["table"]


def test_the_writer_upgrades_a_version_2_file_and_every_row_reads_the_same(v2: Path) -> None:
    before = _dump(v2)
    connect_writer(v2, create=False).close()
    assert _version(v2) == SCHEMA_VERSION
    assert _dump(v2) == before  # every row, column, value and type, through the view
    with contextlib.closing(sqlite3.connect(v2)) as conn:
        assert conn.execute("SELECT count(*) FROM recorders WHERE source IS NOT NULL").fetchone() == (0,)

    objects = _objects(v2)
    assert objects["table"] == TABLES
    assert objects["view"] == {"spans"}
    conn = sqlite3.connect(v2)
    try:
        columns = [r[1] for r in conn.execute("PRAGMA table_info(span_rows)")]
        stored = ["resource_id", "scope_id", "attributes_content", "events_content"]
        assert columns == ["id", *SPAN_COLUMNS[:-2], *stored]
        indexes = {r[1]: r[2] for r in conn.execute("PRAGMA index_list(span_rows)")}
        assert set(indexes) >= INDEXES and len(indexes) == 8
        assert [name for name, unique in indexes.items() if unique] == ["sqlite_autoindex_span_rows_1"]
        # Each distinct text once, and the rows point at theirs.
        resources = dict(conn.execute("SELECT json, id FROM resources"))
        scopes = dict(conn.execute("SELECT json, id FROM scopes"))
        old = [dict(zip(before["columns"], r, strict=True)) for r in before["spans"]]
        assert set(resources) == {r["resource"] for r in old} and len(resources) == 2
        assert set(scopes) == {r["scope"] for r in old} and len(scopes) == 3
        ids = {r[0]: (r[1], r[2]) for r in conn.execute("SELECT id, resource_id, scope_id FROM span_rows")}
        assert ids == {r["id"]: (resources[r["resource"]], scopes[r["scope"]]) for r in old}
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        # Rows written before version 6 keep their text: nothing of theirs is stored apart.
        apart = "SELECT count(*) FROM spans WHERE coalesce(attributes_content, events_content) IS NOT NULL"
        assert conn.execute(apart).fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM contents").fetchone() == (0,)
    finally:
        conn.close()
    connect_writer(v2, create=False).close()  # an up-to-date file: nothing happens
    assert _dump(v2) == before


RUNNER = click.testing.CliRunner()


def _cli(*argv: str) -> tuple[int, str, str]:
    """`otel-blackbox ARGV` in this process, through main(): exit code, stdout, stderr."""
    with RUNNER.isolation() as (out, err, _):
        code = 0
        try:
            main(list(argv))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        return code, out.getvalue().decode(), err.getvalue().decode()


def test_the_cli_upgrades_a_version_2_file_when_it_reads_it(v2: Path, as_is: Path) -> None:
    listed = run_cli("list", "--json", db=v2, check=True)  # the console script, as a user runs it
    assert _version(v2) == SCHEMA_VERSION
    assert _version(as_is) == 2
    assert _dump(v2) == _dump(as_is)
    as_read = json.loads(listed.stdout)
    assert [t["trace_id"] for t in as_read][-1] == OK_TRACE and len(as_read) == 5
    code, out, _ = _cli("--db", str(as_is), "list", "--json")  # upgrades the second copy in-process
    assert code == 0 and json.loads(out) == as_read and _version(as_is) == SCHEMA_VERSION


def _read_commands(run_id: str, out: Path) -> list[list[str]]:
    commands = [
        ["list"],
        ["list", "--json"],
        ["list", "--errors-only"],
        ["list", "--session", SESSION],
        ["errors"],
        ["errors", "--json"],
        ["stats"],
        ["stats", "--json"],
        ["runs"],
        ["runs", "--json"],
        ["export"],
        ["export", "--format", "otlp"],
        ["export", "--trace", OPEN_TRACE[:8]],
        # The file's traces hold tool spans and no model call: cassettes verify refuses, written
        # anyway, the same from either file.
        ["cassette", OK_TRACE[:8], "--force", "-o", str(out / "trace.json")],
        ["cassette", OPEN_TRACE[:8], "--force", "-o", str(out / "killed.json")],
        ["cassette", "--run", run_id[:6], "--force", "-o", str(out / "run.json")],
        ["cassette", "--session", SESSION, "--force", "-o", str(out / "session.json")],
        ["report", ERROR_TRACE[:8], "-o", str(out / "trace.html")],
        ["report", "--run", run_id, "-o", str(out / "run.html")],
        ["report", "--session", SESSION, "-o", str(out / "session.html")],
    ]
    for trace_id in (OK_TRACE, ERROR_TRACE, OPEN_TRACE):
        commands += [["show", trace_id[:6]], ["show", trace_id, "-v"]]
    return commands


def test_every_read_command_reads_the_migrated_file_as_it_read_the_old_one(
    v2: Path, as_is: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _cli("--db", str(v2), "list")[0] == 0 and _version(v2) == SCHEMA_VERSION  # upgraded by reading
    # From here the second copy stays at version 2: the commands read its `spans` table.
    monkeypatch.setattr(common, "_upgrade_older", lambda path, conn: None)
    code, out, _ = _cli("--db", str(v2), "runs", "--json")
    assert code == 0
    killed_run = next(r for r in json.loads(out) if r["status"] == "open")
    assert killed_run["spans"] == 5
    seen: dict[str, dict[str, str]] = {}
    for db in (as_is, v2):
        outputs = tmp_path / db.stem
        outputs.mkdir()
        results: dict[str, str] = {}
        for command in _read_commands(killed_run["run_id"], outputs):
            code, stdout, stderr = _cli("--db", str(db), *command)
            assert code == 0, (db.name, command, stderr)
            results[" ".join(command[:3])] = stdout.replace(str(db), "DB").replace(str(outputs), "OUT")
        for path in sorted(outputs.iterdir()):  # the cassettes and reports, byte for byte
            results[path.name] = path.read_bytes().hex()
        with Receiver() as receiver:  # push: what an OTLP receiver on 127.0.0.1 is sent
            code, stdout, stderr = _cli(
                "--db", str(db), "push", "--endpoint", receiver.url, "--batch-size", "5"
            )
            assert code == 0, stderr
            results["push"] = stdout.replace(receiver.url, "URL")
            sent = [r.SerializeToString(deterministic=True) for r in receiver.accepted()]
            assert len(sent) == 3  # 12 spans in batches of 5
            results["push: received"] = b"\n".join(sent).hex()
        seen[db.name] = results
    assert _version(as_is) == 2
    old, new = seen[as_is.name], seen[v2.name]
    assert list(old) == list(new) and len(new) == 35
    # The file's own size differs (and the free disk space moves); every count must not.
    stats_old, stats_new = json.loads(old.pop("stats --json")), json.loads(new.pop("stats --json"))
    for volatile in ("size_bytes", "disk_free_bytes"):
        del stats_old[volatile], stats_new[volatile]
    assert stats_old == stats_new
    sizes = re.compile(r"[\d.,]+ MB")
    old["stats"], new["stats"] = sizes.sub("N MB", old["stats"]), sizes.sub("N MB", new["stats"])
    assert (stats_new["spans"], stats_new["open_spans"], stats_new["error_spans"]) == (12, 2, 1)
    for label, text in old.items():
        assert new[label] == text, label
    assert len(new["export"].splitlines()) == 12
    assert "order service unreachable" in new["errors"]
    for text in (
        "checkout-agent",
        "planificateur-é",
        "équipe-日本",
        "checkout.agent",
        "planner",
        "retriever",
    ):
        assert text in new["export --format otlp"]
        assert text.encode().hex() in new["push: received"]


def test_new_spans_after_the_upgrade_share_the_stored_resources_and_scopes(v2: Path) -> None:
    before = _dump(v2)
    connect_writer(v2, create=False).close()
    conn = sqlite3.connect(v2)
    (old_resource,) = conn.execute("SELECT json FROM resources WHERE json LIKE '%checkout-agent%'").fetchone()
    old_ids = conn.execute(
        "SELECT resource_id, scope_id FROM span_rows WHERE trace_id = ? LIMIT 1", (OK_TRACE,)
    ).fetchone()
    conn.close()

    def provider(resource: Resource) -> TracerProvider:
        made = TracerProvider(resource=resource, shutdown_on_exit=False)
        made.add_span_processor(BlackboxSpanProcessor(config=BlackboxConfig(db_path=v2, retention="off")))
        return made

    # The resource and scope of the first recording, again: the rows written before the upgrade's.
    same = provider(Resource(json.loads(old_resource)))
    tracer = same.get_tracer("checkout.agent", "1.2.0")
    with tracer.start_as_current_span("after-upgrade-1"):
        pass
    same.force_flush()
    with tracer.start_as_current_span("after-upgrade-2"), tracer.start_as_current_span("child"):
        pass
    same.shutdown()
    # A new resource: stored once, however many spans, batches and processes write it.
    new_resource = Resource.create({"service.name": "after-upgrade"})
    for _ in range(2):
        other = provider(new_resource)
        for i in range(3):
            with other.get_tracer("after.upgrade").start_as_current_span(f"new-{i}"):
                pass
            other.force_flush()
        other.shutdown()

    conn = sqlite3.connect(v2)
    try:
        assert conn.execute("SELECT count(*) FROM resources").fetchone()[0] == 3
        assert conn.execute("SELECT count(*) FROM scopes").fetchone()[0] == 4
        rows = conn.execute(
            "SELECT name, resource_id, scope_id FROM span_rows WHERE id > 12 ORDER BY id"
        ).fetchall()
        assert [r[0] for r in rows[:3]] == ["after-upgrade-1", "child", "after-upgrade-2"]
        assert {(r[1], r[2]) for r in rows[:3]} == {old_ids}
        assert len(rows) == 9 and len({(r[1], r[2]) for r in rows[3:]}) == 1
        expected = dumps(dict(new_resource.attributes))
        assert conn.execute("SELECT count(*) FROM resources WHERE json = ?", (expected,)).fetchone()[0] == 1
        assert {r[0] for r in conn.execute("SELECT resource FROM spans WHERE name LIKE 'new-%'")} == {
            expected
        }
        assert {r[0] for r in conn.execute("SELECT scope FROM spans WHERE name LIKE 'new-%'")} == {
            '{"name":"after.upgrade","version":"","schema_url":""}'
        }
    finally:
        conn.close()
    after = _dump(v2)
    assert after["spans"][:12] == before["spans"]  # the old rows are untouched
    reader = connect_reader(v2)
    try:
        (span,) = [s for s in queries.trace_spans(reader, after["spans"][12][1])]
        assert span.resource == json.loads(old_resource) and span.scope["name"] == "checkout.agent"
    finally:
        reader.close()


def test_an_empty_version_1_file_is_upgraded_to_the_current_schema(tmp_path: Path) -> None:
    db = tmp_path / "v1.db"
    with closing(sqlite3.connect(db, isolation_level=None)) as conn:
        conn.execute("PRAGMA journal_mode = WAL")
        for statement in _statements(MIGRATIONS[0]):
            conn.execute(statement)
        conn.execute("PRAGMA user_version = 1")
    connect_writer(db, create=False).close()
    assert _version(db) == SCHEMA_VERSION
    objects = _objects(db)
    assert objects["table"] == TABLES and objects["view"] == {"spans"}
    assert INDEXES | {"recorders_by_run_id", "recorders_by_pid"} <= objects["index"]
    rec = Recorder(db, retention="off")
    try:
        with rec.tracer.start_as_current_span("root"), rec.tracer.start_as_current_span("child"):
            pass
        rec.flush()
        assert [r["name"] for r in rec.rows()] == ["root", "child"]
        assert {r["resource"] for r in rec.rows()} == {dumps(dict(rec.provider.resource.attributes))}
    finally:
        rec.provider.shutdown()
    assert run_cli("list", db=db, check=True).stdout.count("root") == 1


def test_a_file_newer_than_this_version_is_refused_in_one_line(v2: Path) -> None:
    connect_writer(v2, create=False).close()
    with closing(sqlite3.connect(v2)) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    before = v2.read_bytes()
    result = run_cli("list", db=v2)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    (line,) = result.stderr.splitlines()
    assert f"schema version {SCHEMA_VERSION + 1}, newer than this otel-blackbox supports" in line
    for connect in (connect_writer, connect_reader):
        with pytest.raises(NotABlackboxDatabase, match="newer than this otel-blackbox supports"):
            connect(v2)
    assert v2.read_bytes() == before


# -- query plans through the view ------------------------------------------------------------------


def _every_read(conn: sqlite3.Connection) -> None:
    """Each read query the CLI, the viewer and retention make."""
    queries.recent_traces(conn)
    queries.recent_traces(conn, session=SESSION)
    queries.recent_traces(conn, errors_only=True)
    queries.resolve_trace_id(conn, OK_TRACE[:6])
    queries.trace_spans(conn, OK_TRACE)
    queries.error_spans(conn)
    queries.stats(conn, DATA)
    list(queries.iter_spans(conn))
    list(queries.iter_spans(conn, OPEN_TRACE))
    queries.last_seen_by_trace(conn)
    queries.last_seen_by_trace(conn, OPEN_TRACE)
    queries.select_traces(conn, since_ns=0)
    queries.select_traces(conn, trace_id=OK_TRACE)
    queries.count_spans(conn)
    queries.count_spans(conn, OK_TRACE)
    listed = runs.recent_runs(conn)
    runs.run_spans(conn, listed[0].run_id)
    runs.session_spans(conn, SESSION)
    for flt in (
        filters.TraceFilter(errors=True, since_ns=1),  # before every span: the one-scan path
        filters.TraceFilter(open=True),
        filters.TraceFilter(q="agent", session=SESSION),
    ):
        trace_list.find_traces(conn, flt)
    retention.oldest_complete_traces(conn, 10)
    assert retention.apply_retention(conn, 1.0, now_ns=1) == 0  # reads only: nothing that old


def _plans(db: Path, read: Callable[[sqlite3.Connection], None]) -> list[tuple[str, list[str]]]:
    conn = connect_reader(db)
    statements: list[str] = []
    try:
        conn.set_trace_callback(statements.append)
        read(conn)
        conn.set_trace_callback(None)
        plans = []
        for statement in statements:
            if "spans" not in statement or statement.lstrip().upper().startswith(("PRAGMA", "BEGIN")):
                continue
            plan = [str(r[-1]) for r in conn.execute(f"EXPLAIN QUERY PLAN {statement}")]
            plans.append((statement, plan))
        return plans
    finally:
        conn.close()


def _normalized(plan: list[str]) -> list[str]:
    text = "\n".join(plan)
    text = re.sub(r"\b(SCAN|SEARCH) (spans|parent_row)\b", r"\1 span_rows", text)  # parent_row: an alias
    text = text.replace("sqlite_autoindex_spans_1", "sqlite_autoindex_span_rows_1")
    text = re.sub(r"(SUBQUERY |subquery-)\d+", r"\1N", text)
    return text.splitlines()


_LOOKUP = re.compile(
    r"CORRELATED SCALAR SUBQUERY N\nSEARCH (resources|scopes) USING INTEGER PRIMARY KEY \(rowid=\?\)\n?"
)


def test_reads_through_the_view_keep_their_plans(v2: Path, as_is: Path) -> None:
    # The view is flattened into each query: the same indexes as on version 2's table (covering
    # ones too), and resources / scopes are looked up only by a query that reads those columns.
    connect_writer(v2, create=False).close()
    old, new = _plans(as_is, _every_read), _plans(v2, _every_read)
    assert [s for s, _ in old] == [s for s, _ in new] and len(new) >= 30
    assert _version(as_is) == 2
    for (statement, before), (_, after) in zip(old, new, strict=True):
        reads_them = re.search(r"SELECT \*|\bresource\b|\bscope\b", statement) is not None
        text = "\n".join(_normalized(after)) + "\n"
        without_lookups = _LOOKUP.sub("", text)
        assert (without_lookups != text) == reads_them, (statement, after)
        if CUT_BY_SDK in statement:  # version 6's partial index serves it: no longer a scan of the table
            assert without_lookups.splitlines() == ["SCAN span_rows USING INDEX spans_cut_by_sdk"], after
            continue
        assert without_lookups.splitlines() == _normalized(before), (statement, before, after)
    covering = [p for _, p in new if any("COVERING INDEX" in line for line in p)]
    assert len(covering) >= 5  # count(*), DISTINCT trace_id, the partial indexes: still index-only


# -- the inserter ----------------------------------------------------------------------------------


def _row(span_id: int, resource: str, scope: str = '{"name":"s"}', start_ns: int = 1) -> tuple[Any, ...]:
    values: dict[str, Any] = {c: None for c in SPAN_COLUMNS}
    values.update(
        trace_id="ab" * 16, span_id=format(span_id, "016x"), name=f"span-{span_id}", span_kind="INTERNAL",
        status="ok", start_ns=start_ns, end_ns=start_ns + 1, duration_ns=1, written_ns=start_ns + 1,
        attributes="{}", events="[]", links="[]", resource=resource, scope=scope,
    )  # fmt: skip
    return tuple(values[c] for c in SPAN_COLUMNS)


@pytest.fixture
def writer_conn(db_path: Path) -> Iterator[sqlite3.Connection]:
    conn = connect_writer(db_path)
    yield conn
    conn.close()


def _write(
    conn: sqlite3.Connection, inserter: SpanInserter, rows: list[tuple[Any, ...]], final: bool
) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        inserter.insert(rows, final=final)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def test_the_inserter_maps_every_row_of_every_chunk_to_its_own_texts(writer_conn: sqlite3.Connection) -> None:
    resources = [dumps({"service.name": f"svc-{i}", "ü": "日本"}) for i in range(3)]
    scopes = [dumps({"name": f"scope-{i}", "version": None, "schema_url": ""}) for i in range(5)]
    rows = [
        _row(i + 1, resources[i % 3], scopes[i % 5], start_ns=i + 1) for i in range(700)
    ]  # 256+256+128+...
    _write(writer_conn, SpanInserter(writer_conn), rows, final=True)
    stored = writer_conn.execute("SELECT span_id, resource, scope FROM spans ORDER BY start_ns").fetchall()
    assert stored == [(r[1], r[-2], r[-1]) for r in rows]
    assert writer_conn.execute("SELECT count(*) FROM resources").fetchone()[0] == 3
    assert writer_conn.execute("SELECT count(*) FROM scopes").fetchone()[0] == 5


def test_an_open_row_never_replaces_a_final_one_and_a_final_row_replaces_an_open_one(
    writer_conn: sqlite3.Connection,
) -> None:
    inserter = SpanInserter(writer_conn)
    _write(writer_conn, inserter, [_row(1, '{"r":1}')], final=True)
    _write(writer_conn, inserter, [_row(1, '{"r":2}'), _row(2, '{"r":2}')], final=False)
    _write(writer_conn, inserter, [_row(2, '{"r":3}', scope='{"name":"t"}')], final=True)
    stored = writer_conn.execute("SELECT span_id, resource, scope FROM spans ORDER BY span_id").fetchall()
    assert stored == [
        (format(1, "016x"), '{"r":1}', '{"name":"s"}'),
        (format(2, "016x"), '{"r":3}', '{"name":"t"}'),
    ]


def test_the_inserter_forgets_the_ids_of_a_transaction_that_failed(writer_conn: sqlite3.Connection) -> None:
    inserter = SpanInserter(writer_conn)
    new = '{"service.name":"only-in-the-failed-transaction"}'
    with pytest.raises(OverflowError):  # a value SQLite cannot hold: the batch fails after the lookup
        _write(writer_conn, inserter, [_row(1, new), _row(2, new, start_ns=2**70)], final=True)
    assert writer_conn.execute("SELECT count(*) FROM resources").fetchone()[0] == 0  # rolled back
    _write(writer_conn, inserter, [_row(3, new)], final=True)  # the same connection carries on
    assert writer_conn.execute("SELECT resource FROM spans").fetchall() == [(new,)]
    assert writer_conn.execute("SELECT count(*) FROM span_rows WHERE resource_id IS NULL").fetchone()[0] == 0


def test_inserters_of_two_connections_share_the_stored_texts(db_path: Path) -> None:
    first, second = connect_writer(db_path), connect_writer(db_path)
    try:
        text = '{"service.name":"shared"}'
        _write(first, SpanInserter(first), [_row(1, text)], final=True)
        _write(second, SpanInserter(second), [_row(2, text)], final=True)
        assert first.execute("SELECT count(*), min(json) FROM resources").fetchone() == (1, text)
        assert [r[0] for r in first.execute("SELECT resource FROM spans")] == [text, text]
    finally:
        first.close()
        second.close()
