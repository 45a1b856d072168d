"""The local web viewer (`otel-blackbox ui`): loopback only, read-only, live, filtered, escaped."""

from __future__ import annotations

import itertools
import json
import os
import random
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from helpers import Recorder, run_cli
from opentelemetry import trace

from otel_blackbox._store.connection import connect_reader
from otel_blackbox._web.filters import TraceFilter, parse_filter
from otel_blackbox._web.server import ViewerServer, make_server
from otel_blackbox._web.trace_list import find_traces


def _tid(span: trace.Span) -> str:
    return format(span.get_span_context().trace_id, "032x")


@pytest.fixture
def traces(recorder: Recorder) -> dict[str, str]:
    """A finished run with a failing tool (session s-1), an open run, and a hostile root name."""
    tracer = recorder.tracer
    with tracer.start_as_current_span("agent", attributes={"session.id": "s-1"}) as root:
        try:
            with tracer.start_as_current_span("get_weather", attributes={"openinference.span.kind": "TOOL"}):
                raise ValueError("weather service down")
        except ValueError:
            pass
    killed = tracer.start_span("killed-agent", attributes={"session.id": "s-2"})
    with tracer.start_as_current_span("<script>alert(1)</script>") as hostile:
        pass
    recorder.flush()
    return {"error": _tid(root), "open": _tid(killed), "hostile": _tid(hostile)}


@pytest.fixture
def server(traces: dict[str, str], recorder: Recorder) -> Iterator[ViewerServer]:
    srv = make_server(recorder.db_path, port=0)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(5)


def _get(srv: ViewerServer, path: str, method: str = "GET") -> tuple[int, str]:
    url = f"http://127.0.0.1:{srv.server_address[1]}{path}"
    data = b"x=1" if method in ("POST", "PUT") else None
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, method=method), timeout=10) as r:
            return int(r.status), r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _api(srv: ViewerServer, query: str = "") -> list[dict[str, Any]]:
    status, body = _get(srv, f"/api/traces{query}")
    assert status == 200, body
    result: list[dict[str, Any]] = json.loads(body)["traces"]
    return result


def _ids(srv: ViewerServer, query: str = "") -> set[str]:
    return {t["trace_id"] for t in _api(srv, query)}


def test_binds_to_loopback_unless_given_a_token(server: ViewerServer) -> None:
    assert server.server_address[0] == "127.0.0.1"
    with pytest.raises(ValueError, match=r"beyond 127\.0\.0\.1 needs --token"):
        make_server(Path("unused.db"), host="0.0.0.0")


def test_list_page_shows_traces_and_links(server: ViewerServer, traces: dict[str, str]) -> None:
    status, page = _get(server, "/")
    assert status == 200
    for trace_id in traces.values():
        assert f'href="/trace/{trace_id}"' in page
    assert "killed-agent" in page and "s-1" in page
    assert "/api/traces" in page  # the list refreshes itself


def test_hostile_root_name_is_escaped(server: ViewerServer) -> None:
    _, page = _get(server, "/")
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    _, page = _get(server, "/?q=%3Cscript%3E")
    assert "<script>alert(1)</script>" not in page


def test_trace_written_after_start_appears(server: ViewerServer, recorder: Recorder) -> None:
    with recorder.tracer.start_as_current_span("late-run") as late:
        pass
    recorder.flush()
    assert _tid(late) in _ids(server)
    assert "late-run" in _get(server, "/")[1]


def test_filters(server: ViewerServer, traces: dict[str, str]) -> None:
    assert _ids(server) == set(traces.values())
    assert _ids(server, "?errors=1") == {traces["error"]}
    assert _ids(server, "?open=1") == {traces["open"]}
    assert _ids(server, "?session=s-1") == {traces["error"]}
    assert _ids(server, "?q=KILLED") == {traces["open"]}
    assert _ids(server, f"?q={traces['hostile'][:10]}") == {traces["hostile"]}
    assert _ids(server, "?since=1h") == set(traces.values())
    assert _ids(server, "?errors=1&open=1") == set()
    assert len(_api(server, "?limit=1")) == 1
    row = next(t for t in _api(server) if t["trace_id"] == traces["error"])
    assert row["status"] == "error" and row["error_count"] == 1 and row["span_count"] == 2


def test_trace_report_and_unknown(server: ViewerServer, traces: dict[str, str]) -> None:
    status, page = _get(server, f"/trace/{traces['error']}")
    assert status == 200 and "blackbox-data" in page
    assert _get(server, f"/trace/{traces['open'][:12]}")[0] == 200  # a unique prefix is enough
    assert _get(server, "/trace/" + "f" * 32)[0] == 404
    assert _get(server, "/trace/not-hex")[0] == 404
    assert _get(server, "/nowhere")[0] == 404


def test_bad_filters_are_400(server: ViewerServer) -> None:
    for query in ("?limit=abc", "?limit=0", "?limit=-3", "?since=soon", "?errors=maybe"):
        status, body = _get(server, f"/api/traces{query}")
        assert status == 400, query
        assert "\n" not in json.loads(body)["error"]
        assert _get(server, f"/{query}")[0] == 400


def test_only_get(server: ViewerServer) -> None:
    for method in ("POST", "PUT", "DELETE"):
        assert _get(server, "/", method)[0] == 405
        assert _get(server, "/api/traces", method)[0] == 405


def test_foreign_host_header_refused(server: ViewerServer) -> None:
    url = f"http://127.0.0.1:{server.server_address[1]}/api/traces"
    request = urllib.request.Request(url, headers={"Host": "evil.example:80"})
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=10)
    info.value.close()
    assert info.value.code == 403


def test_database_untouched(server: ViewerServer, recorder: Recorder, traces: dict[str, str]) -> None:
    db = recorder.db_path
    wal = Path(f"{db}-wal")

    def snapshot() -> tuple[bytes, int, int]:
        return db.read_bytes(), os.stat(db).st_mtime_ns, wal.stat().st_size if wal.exists() else 0

    recorder.provider.shutdown()  # its heartbeat would change the file: only the viewer may not
    before = snapshot()
    for path in (
        "/",
        "/?errors=1&open=1&q=a&since=2h",
        "/api/traces?session=s-1",
        f"/trace/{traces['error']}",
    ):
        assert _get(server, path)[0] == 200
    _get(server, "/", "POST")
    assert snapshot() == before


def test_cli_refuses_other_host_and_missing_db(tmp_path: Path) -> None:
    result = run_cli("ui", "--host", "0.0.0.0", db=tmp_path / "x.db")
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "beyond 127.0.0.1 needs --token" in result.stderr
    result = run_cli("ui", "--host", "example.com", db=tmp_path / "x.db")
    assert result.returncode == 2 and "beyond 127.0.0.1 needs --token" in result.stderr
    result = run_cli("ui", "--port", "0", db=tmp_path / "missing.db")
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "not found" in result.stderr
    (tmp_path / "junk.db").write_text("not sqlite at all, " * 100)
    result = run_cli("ui", "--port", "0", db=tmp_path / "junk.db")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1


def test_cli_takes_localhost_for_the_loopback_address(traces: dict[str, str], recorder: Recorder) -> None:
    argv = [sys.executable, "-m", "otel_blackbox.cli", "--db", str(recorder.db_path), "ui", "--host",
            "localhost", "--port", "0"]  # fmt: skip
    with subprocess.Popen(argv, stderr=subprocess.PIPE, text=True) as viewer:
        try:
            assert viewer.stderr is not None
            line = viewer.stderr.readline()
            assert "workbench on http://127.0.0.1:" in line, line
            url = line.split(" on ")[1].split()[0]
            with urllib.request.urlopen(url, timeout=10) as answer:
                assert answer.status == 200
        finally:
            viewer.terminate()


def test_cli_port_in_use(server: ViewerServer, recorder: Recorder) -> None:
    result = run_cli("ui", "--port", str(server.server_address[1]), db=recorder.db_path)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "cannot listen" in result.stderr


def test_filtered_lists_match_a_plain_reading_of_the_rows(recorder: Recorder) -> None:
    """find_traces narrows some filters through indexes first; whatever path it takes, the list
    must be what the filters say, read straight off the rows."""
    rng = random.Random(5)
    now = time.time_ns()
    tracer = recorder.tracer
    for n in range(120):  # 10 hours of traces, a few spans each, some failed, some still open
        start = now - (10 * 3600 - n * 300) * 10**9
        name = rng.choice(["agent", "Planner", "booking-agent", "chat"])
        root = tracer.start_span(name, start_time=start, attributes={"session.id": f"s-{n % 3}"})
        context = trace.set_span_in_context(root)
        for k in range(rng.randint(0, 3)):
            child = tracer.start_span(f"step {k}", context=context, start_time=start + (k + 1) * 10**9)
            if rng.random() < 0.15:
                child.set_status(trace.Status(trace.StatusCode.ERROR, "failed"))
            child.end(end_time=start + (k + 2) * 10**9)
        if rng.random() > 0.1:
            root.end(end_time=start + 60 * 10**9)
    recorder.flush()
    rows = recorder.rows()
    by_trace: dict[str, list[Any]] = {}
    for row in rows:
        by_trace.setdefault(row["trace_id"], []).append(row)

    def expected(flt: TraceFilter) -> list[str]:
        kept = []
        for trace_id, spans in by_trace.items():
            mine = [s for s in spans if flt.session is None or s["session_id"] == flt.session]
            if not mine:
                continue
            roots = [s["name"] for s in mine if s["parent_span_id"] is None]
            if (
                (not flt.errors or any(s["status"] == "error" for s in mine))
                and (not flt.open or any(s["status"] == "open" for s in mine))
                and (flt.since_ns is None or min(s["start_ns"] for s in mine) >= flt.since_ns)
                and (not flt.q or flt.q.lower() in trace_id or any(flt.q.lower() in r.lower() for r in roots))
            ):
                kept.append((min(s["start_ns"] for s in mine), trace_id))
        return [trace_id for _, trace_id in sorted(kept, reverse=True)[: flt.limit]]

    conn = connect_reader(recorder.db_path)
    checked = 0
    try:
        flags, sessions, texts = (False, True), (None, "s-1"), (None, "agent", "PLAN")
        windows = (None, "30m", "2h", "8h", "1d")  # a share of the 10 hours under half or over it
        filters = itertools.product(flags, flags, sessions, texts, windows)
        for errors, open_, session, q, since in filters:
            query = {"errors": "1" if errors else "", "open": "1" if open_ else "", "session": session or "",
                     "q": q or "", "since": since or "", "limit": "7"}  # fmt: skip
            flt = parse_filter(urlencode(query), now_ns=now)
            found = [t.trace_id for t in find_traces(conn, flt)]
            assert found == expected(flt), query
            checked += bool(found)
    finally:
        conn.close()
    assert checked > 40  # most combinations match something: the comparison is not of empty lists
