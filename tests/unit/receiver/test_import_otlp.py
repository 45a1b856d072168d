"""`otel-blackbox import`: OTLP/JSON back into a black box, from our export and from fleet backends.

* Round trip: a recording made by the real BlackboxSpanProcessor (a resource, two scopes with
  version and schema URL, every attribute type, events, links, an error, a remote parent, spans left
  open by a killed run) goes through `export --format otlp`, then `import` into a new file: every
  column of the `spans` view but the writer's own (id, written_ns, pid) is identical.
* Backend bodies, pretty-printed as the APIs return them: Jaeger's /api/v3/traces
  (`{"result": ...}`, enums as names), Tempo's /api/traces/<id> (`batches`, base64 ids, the older
  `instrumentationLibrarySpans`) and /api/v2/traces/<id> (`{"trace": ...}`). Shapes from the OTLP
  proto's JSON mapping (opentelemetry-proto docs/specification.md, "JSON Protobuf Encoding"), the
  Jaeger api_v3 gateway (query_service.proto: GetTrace streams `{"result": TracesData}`) and Tempo's
  API docs (`/api/traces/<traceid>` returns `batches`; `/api/v2/traces/<traceid>` wraps it in `trace`).
* Bad input: one line naming the file, the line and the field, exit 2, and nothing of that file
  stored (the file before it is).
"""

from __future__ import annotations

import base64
import json
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import Recorder, run_cli
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

COLUMNS = (
    "trace_id, span_id, parent_span_id, name, span_kind, oi_span_kind, status, status_message, start_ns, "
    "end_ns, duration_ns, session_id, user_id, model, prompt_tokens, completion_tokens, total_tokens, "
    "tool_name, attributes, events, links, resource, scope"
)
EVERY_TYPE: dict[str, Any] = {
    "str": "héllo", "bool": True, "int": 42, "big.int": 2**62 + 1, "neg.int": -7, "float": 2.5,
    "whole.float": 1.0, "list.str": ["a", "b"], "list.int": [1, 2**40], "list.float": [0.5, 1.0],
}  # fmt: skip
TRACE_HEX = "5b8efff798038103d269b633813fc60c"
NAMES = ("old", "handle", "plan", "call", "child of remote", "killed root", "killed child")
ROOT_HEX, CHILD_HEX = "eee19b7ec3c1b174", "0102030405060708"


def rows(db: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return sorted(conn.execute(f"SELECT {COLUMNS} FROM spans"))
    finally:
        conn.close()


def dump(db: Path) -> tuple[list[Any], list[Any]]:
    conn = sqlite3.connect(db)
    try:
        return (
            conn.execute("SELECT * FROM spans ORDER BY id").fetchall(),
            conn.execute("SELECT * FROM recorders ORDER BY id").fetchall(),
        )
    finally:
        conn.close()


@pytest.fixture
def recorded(recorder: Recorder) -> Path:
    provider = TracerProvider(
        resource=Resource({"service.name": "import-test", "deployment.environment": "ci"}),
        shutdown_on_exit=False,
    )
    provider.add_span_processor(recorder.processor)
    agent = provider.get_tracer("agent.scope", "1.2.3", schema_url="https://opentelemetry.io/schemas/1.26.0")
    http_scope = provider.get_tracer("http.scope")
    now = time.time_ns()
    old = agent.start_span("old", start_time=now - 3600 * 10**9)
    old.end(end_time=now - 3600 * 10**9 + 10**9)
    with agent.start_as_current_span("handle", kind=trace.SpanKind.SERVER, attributes=EVERY_TYPE) as root:
        root.set_status(trace.StatusCode.OK)
        link = trace.Link(old.get_span_context(), {"link.reason": "retry of"})
        llm = {"openinference.span.kind": "LLM"}
        with (
            agent.start_as_current_span("plan", links=[link], attributes=llm),
            http_scope.start_as_current_span("call", kind=trace.SpanKind.CLIENT) as call,
        ):
            call.add_event("chunk", EVERY_TYPE, timestamp=now + 5)
            try:
                raise TimeoutError("upstream took too long")
            except TimeoutError as exc:
                call.record_exception(exc)
            call.set_status(trace.StatusCode.ERROR, "upstream timeout")
    sampled = trace.TraceFlags(trace.TraceFlags.SAMPLED)
    remote = trace.SpanContext(int(TRACE_HEX, 16), int(ROOT_HEX, 16), is_remote=True, trace_flags=sampled)
    agent.start_span(
        "child of remote", context=trace.set_span_in_context(trace.NonRecordingSpan(remote))
    ).end()
    killed = agent.start_span("killed root")
    agent.start_span("killed child", context=trace.set_span_in_context(killed))
    recorder.flush()  # the open spans are on disk as open rows
    return recorder.db_path


def test_export_then_import_gives_back_every_span_and_a_second_import_adds_nothing(
    recorded: Path, tmp_path: Path
) -> None:
    exported = tmp_path / "spans.jsonl"
    run_cli("export", "--format", "otlp", "-o", str(exported), db=recorded, check=True)
    copy = tmp_path / "copy.db"
    summary = json.loads(run_cli("import", str(exported), "--json", db=copy, check=True).stdout)
    original = rows(recorded)
    assert rows(copy) == original and sorted(r[3] for r in original) == sorted(NAMES)
    assert sum(r[6] == "open" for r in rows(copy)) == 2  # still open, end NULL
    assert all(r[9] is None for r in rows(copy) if r[6] == "open")
    assert summary["spans"] == 7 and summary["traces"] == 4 and summary["duplicates"] == 0
    (run,) = json.loads(run_cli("runs", "--json", db=copy, check=True).stdout)
    assert run["run_id"] == summary["run_id"] and run["source"] == f"import {exported}"
    assert run["spans"] == 7 and run["traces"] == 4 and run["pid"] < 0 and run["status"] == "open"
    report = tmp_path / "run.html"
    run_cli("report", "--run", run["run_id"], "-o", str(report), db=copy, check=True)
    assert "killed child" in report.read_text()

    before = dump(copy)
    again = run_cli("import", str(exported), db=copy, check=True)
    assert again.stdout.strip() == "nothing new: 7 spans already stored, no run added"
    assert dump(copy) == before


def test_a_later_import_completes_an_open_span_and_counts_the_rest_as_duplicates(tmp_path: Path) -> None:
    def document(end: str | None) -> dict[str, Any]:
        span = {
            "traceId": TRACE_HEX,
            "spanId": ROOT_HEX,
            "name": "root",
            "startTimeUnixNano": "1700000000000000000",
        }
        other = {**span, "spanId": CHILD_HEX, "name": "done", "endTimeUnixNano": "1700000000000000100"}
        if end is not None:
            span["endTimeUnixNano"] = end
        return {"resourceSpans": [{"scopeSpans": [{"spans": [span, other]}]}]}

    first, second, db = tmp_path / "first.json", tmp_path / "second.json", tmp_path / "x.db"
    first.write_text(json.dumps(document(None)))
    second.write_text(json.dumps(document("1700000000000000900")))
    run_cli("import", str(first), db=db, check=True)
    assert sorted((r[3], r[6]) for r in rows(db)) == [("done", "unset"), ("root", "open")]
    summary = json.loads(run_cli("import", str(second), "--json", db=db, check=True).stdout)
    assert (summary["spans"], summary["duplicates"]) == (1, 1)
    assert sorted((r[3], r[6], r[9]) for r in rows(db)) == [
        ("done", "unset", 1700000000000000100),
        ("root", "unset", 1700000000000000900),
    ]
    assert len(json.loads(run_cli("runs", "--json", db=db, check=True).stdout)) == 2


def _attributes(pairs: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": v} for k, v in pairs.items()]


def _b64(hex_id: str) -> str:
    return base64.b64encode(bytes.fromhex(hex_id)).decode()


def _resource_spans(ids: Any, kind: Any, status: Any, scope_key: str = "scopeSpans") -> dict[str, Any]:
    """One resource, one scope, a SERVER root and an errored CLIENT child with an event and a link."""
    scope = "scope" if scope_key == "scopeSpans" else "instrumentationLibrary"
    return {
        "resource": {"attributes": _attributes({"service.name": {"stringValue": "checkout"}})},
        scope_key: [{
            scope: {"name": "shop.tracer", "version": "2.0"},
            "spans": [
                {"traceId": ids(TRACE_HEX), "spanId": ids(ROOT_HEX), "name": "POST /checkout",
                 "kind": kind[0], "startTimeUnixNano": "1700000000000000000",
                 "endTimeUnixNano": 1700000000500000000,
                 "attributes": _attributes({
                     "http.status_code": {"intValue": "200"}, "retries": {"intValue": 3},
                     "ratio": {"doubleValue": 0.25}, "cached": {"boolValue": False},
                     "tags": {"arrayValue": {"values": [{"stringValue": "a"}, {"stringValue": "b"}]}},
                     "user": {"kvlistValue": {"values": [{"key": "id", "value": {"intValue": "7"}}]}},
                 }),
                 "status": {"code": status[0]}},
                {"traceId": ids(TRACE_HEX), "spanId": ids(CHILD_HEX), "parentSpanId": ids(ROOT_HEX),
                 "name": "charge", "kind": kind[1], "startTimeUnixNano": "1700000000100000000",
                 "endTimeUnixNano": "1700000000400000000",
                 "events": [{"timeUnixNano": "1700000000300000000", "name": "exception",
                             "attributes": _attributes({"exception.type": {"stringValue": "CardDeclined"}})}],
                 "links": [{"traceId": ids("0" * 31 + "1"), "spanId": ids("0" * 15 + "2")}],
                 "status": {"code": status[1], "message": "card declined"}},
            ],
        }],
    }  # fmt: skip


BODIES: dict[str, Callable[[], dict[str, Any]]] = {
    # Jaeger's /api/v3/traces/<id>: the gRPC gateway's JSON, enums by name, ids in hex.
    "jaeger-v3": lambda: {"result": {"resourceSpans": [_resource_spans(
        str, ("SPAN_KIND_SERVER", "SPAN_KIND_CLIENT"), ("STATUS_CODE_OK", "STATUS_CODE_ERROR"))]}},
    # Tempo's /api/traces/<id> of older releases: batches, base64 ids, instrumentationLibrarySpans.
    "tempo-v1-old": lambda: {"batches": [
        _resource_spans(_b64, (2, 3), (1, 2), "instrumentationLibrarySpans")]},
    # Tempo's /api/traces/<id>: batches with scopeSpans, base64 ids, enums by name.
    "tempo-v1": lambda: {"batches": [_resource_spans(
        _b64, ("SPAN_KIND_SERVER", "SPAN_KIND_CLIENT"), ("STATUS_CODE_OK", "STATUS_CODE_ERROR"))]},
    # Tempo's /api/v2/traces/<id>: {"trace": TracesData}.
    "tempo-v2": lambda: {"trace": {"resourceSpans": [_resource_spans(_b64, (2, 3), (1, 2))]}},
}  # fmt: skip


@pytest.mark.parametrize("backend", sorted(BODIES))
def test_a_backend_s_trace_body_is_imported_whole(backend: str, tmp_path: Path) -> None:
    body = tmp_path / f"{backend}.json"
    body.write_text(json.dumps(BODIES[backend](), indent=2))  # pretty-printed, as the APIs answer
    db = tmp_path / "x.db"
    run_cli("import", str(body), db=db, check=True)
    root, child = sorted(rows(db), key=lambda r: r[8])
    assert root[:5] == (TRACE_HEX, ROOT_HEX, None, "POST /checkout", "SERVER") and root[6] == "ok"
    assert (root[8], root[9]) == (1700000000000000000, 1700000000500000000)
    assert json.loads(root[18]) == {
        "http.status_code": 200, "retries": 3, "ratio": 0.25, "cached": False, "tags": ["a", "b"],
        "user": {"id": 7},
    }  # fmt: skip
    assert child[:5] == (TRACE_HEX, CHILD_HEX, ROOT_HEX, "charge", "CLIENT")
    assert (child[6], child[7]) == ("error", "card declined")
    assert json.loads(child[19]) == [
        {
            "name": "exception",
            "timestamp_ns": 1700000000300000000,
            "attributes": {"exception.type": "CardDeclined"},
        }
    ]
    assert json.loads(child[20]) == [
        {"trace_id": "0" * 31 + "1", "span_id": "0" * 15 + "2", "attributes": {}}
    ]
    assert json.loads(child[21]) == {"service.name": "checkout"}
    assert json.loads(child[22]) == {"name": "shop.tracer", "version": "2.0", "schema_url": ""}


def test_standard_input_and_a_span_with_no_end(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    line = {"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": TRACE_HEX, "spanId": ROOT_HEX, "name": "still running",
         "startTimeUnixNano": str(time.time_ns())}
    ]}]}]}  # fmt: skip
    argv = [sys.executable, "-m", "otel_blackbox.cli", "--db", str(db), "import", "-"]
    done = subprocess.run(argv, input=json.dumps(line) + "\n", capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "imported 1 span of 1 trace" in done.stdout
    (row,) = rows(db)
    assert row[6] == "open" and row[9] is None
    assert "open" in run_cli("list", db=db, check=True).stdout


def test_a_secret_is_masked_and_a_huge_value_bounded_as_the_recorder_does(tmp_path: Path) -> None:
    key = "sk-proj-" + "A1b2C3d4" * 6
    line = {"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": TRACE_HEX, "spanId": ROOT_HEX, "name": "llm",
        "startTimeUnixNano": "1", "endTimeUnixNano": "2",
        "attributes": _attributes({"input.value": {"stringValue": f"my key is {key}"},
                                   "huge": {"stringValue": "x" * 50_000}}),
    }]}]}]}  # fmt: skip
    source, db = tmp_path / "s.jsonl", tmp_path / "x.db"
    source.write_text(json.dumps(line) + "\n")
    result = subprocess.run(
        [sys.executable, "-m", "otel_blackbox.cli", "--db", str(db), "import", str(source)],
        capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin", "OTEL_BLACKBOX_MAX_ATTRIBUTE_BYTES": "4096"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (row,) = rows(db)
    attributes = json.loads(row[18])
    assert key not in row[18] and "[REDACTED:openai-key]" in attributes["input.value"]
    assert "blackbox.truncated" in attributes["huge"] and len(attributes["huge"]) < 4096 * 2
    assert key.encode() not in db.read_bytes()


NOW = time.time_ns()  # within the retention: no warning beside the error line
GOOD = {"traceId": TRACE_HEX, "spanId": ROOT_HEX, "name": "ok", "startTimeUnixNano": str(NOW)}
GOOD["endTimeUnixNano"] = str(NOW + 10)


def _line(**span: Any) -> str:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{**GOOD, **span}]}]}]})


def _deep(depth: int) -> str:
    """A kvlist nested ``depth`` levels, written as text (json.dumps would recurse too deep)."""
    value = (
        '{"kvlistValue": {"values": [{"key": "k", "value": ' * depth
        + '{"stringValue": "leaf"}'
        + "}]}}" * depth
    )
    return _line(attributes="ATTRIBUTES").replace('"ATTRIBUTES"', f'[{{"key": "deep", "value": {value}}}]')


FIELD = "resourceSpans[0].scopeSpans[0].spans[0]"
BAD: dict[str, tuple[bytes, str]] = {
    "not JSON, a line": (f"{_line()}\nnot json\n".encode(), "line 3: not JSON"),
    "not JSON, a document": (b'{\n  "resourceSpans": [\n', "line 3: not JSON"),
    "not UTF-8": (b'{"resourceSpans": []}\n\xff\xfe\n', "not UTF-8"),
    "a list": (b"[1, 2]\n", "line 2: expected a JSON object with resourceSpans, got a list"),
    "no resourceSpans": (b'{"spans": []}\n', "line 2: not OTLP: no resourceSpans"),
    "resourceSpans not a list": (b'{"resourceSpans": {}}\n', "line 2: resourceSpans: expected a list"),
    "trace id length": (_line(traceId="abc").encode(), f"{FIELD}.traceId: not a trace id"),
    "trace id not hex": (_line(traceId="z" * 32).encode(), f"{FIELD}.traceId: not a trace id"),
    "trace id zero": (_line(traceId="0" * 32).encode(), f"{FIELD}.traceId: an all-zero trace id"),
    "span id": (_line(spanId="12345").encode(), f"{FIELD}.spanId: not a span id"),
    "bad int": (_line(startTimeUnixNano="12x").encode(), f"{FIELD}.startTimeUnixNano: expected an integer"),
    "unknown enum": (_line(kind="SPAN_KIND_SIDEWAYS").encode(), f"{FIELD}.kind: unknown value"),
    "no start": (_line(startTimeUnixNano=None).encode(), f"{FIELD}.startTimeUnixNano: missing"),
    "end before start": (_line(endTimeUnixNano=str(NOW - 5)).encode(), f"{FIELD}.endTimeUnixNano: before"),
    "deep value": (_deep(10_000).encode(), "line 2: nested too deeply to read"),
    "deep but readable": (_deep(100).encode(), "nested deeper than 64 levels"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line_exit_2_and_nothing_of_that_file_is_stored(case: str, tmp_path: Path) -> None:
    data, says = BAD[case]
    good, bad, db = tmp_path / "good.jsonl", tmp_path / "bad.jsonl", tmp_path / "x.db"
    good.write_text(_line(spanId=CHILD_HEX, name="from the good file") + "\n")
    # A good span first, so that "nothing of it" is seen (a whole-file document stands alone).
    first = b"" if case == "not JSON, a document" else f"{_line(spanId='1111111111111111')}\n".encode()
    bad.write_bytes(first + data)
    result = run_cli("import", str(good), str(bad), db=db)
    assert result.returncode == 2, result.stdout + result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"otel-blackbox: error: {bad}") and says in line, line
    assert [r[3] for r in rows(db)] == ["from the good file"]  # the good file, and none of the bad one
    assert "imported 1 span" in result.stdout
    (run,) = json.loads(run_cli("runs", "--json", db=db, check=True).stdout)
    assert run["spans"] == 1


def test_the_bad_last_span_of_two_thousand_leaves_the_database_as_it_was(tmp_path: Path) -> None:
    db, source = tmp_path / "x.db", tmp_path / "big.jsonl"
    run_cli("import", str(_write(tmp_path / "first.jsonl", _line())), db=db, check=True)
    before = dump(db)
    lines = [_line(spanId=f"{i + 1:016x}", traceId=f"{i + 1:032x}") for i in range(2000)]
    lines[-1] = _line(spanId="nope")
    source.write_text("\n".join(lines) + "\n")
    result = run_cli("import", str(source), db=db)
    assert result.returncode == 2 and "line 2000" in result.stderr
    assert dump(db) == before


def _write(path: Path, text: str) -> Path:
    path.write_text(text + "\n")
    return path


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ((), "name a file to import"),
        (("x.jsonl", "--project", "p"), "--project goes with --from-phoenix"),
        (("-", "-"), "- (standard input) can be named once"),
        (("x.jsonl", "--from-phoenix", "http://127.0.0.1:9"), "name no file with it"),
        (("missing.jsonl",), "No such file or directory"),
        ((".",), "is a directory"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(args: tuple[str, ...], says: str, tmp_path: Path) -> None:
    result = run_cli("import", *args, db=tmp_path / "x.db")
    assert result.returncode == 2 and says in result.stderr, result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_an_empty_file_imports_nothing(tmp_path: Path) -> None:
    result = run_cli("import", str(_write(tmp_path / "empty.jsonl", "")), db=tmp_path / "x.db", check=True)
    assert result.stdout.strip() == "nothing to import: the input holds no spans"
