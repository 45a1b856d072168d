"""`otel-blackbox import` of the OpenTelemetry SDK's own span JSON (`ReadableSpan.to_json()`).

Spans are made by the real SDK: a TracerProvider with ConsoleSpanExporter (its stream of indented
objects, no array) and an InMemorySpanExporter (the same spans as ReadableSpans, the truth the
stored rows are checked against). Three traces: an OpenInference agent (AGENT root, two LLM spans
with `llm.input_messages.*` / `llm.output_messages.*`, a TOOL span), a SERVER root with every
attribute type and list values over a CLIENT child that failed (ERROR, an exception event) and a
span with a link, and a span under a remote parent with a trace state; plus one span never ended.
They are written as the exporter's stream, as a JSON array and as JSON Lines, and imported with the
CLI as a user runs it, with `--from otel-sdk-json` and recognized without it.
"""

from __future__ import annotations

import datetime
import io
import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers import run_cli
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from test_import_otlp import dump, rows

from otel_blackbox._cassette.io import load_cassette

RESOURCE: dict[str, str | int] = {
    "service.name": "sdk-json-agent",
    "deployment.environment": "ci",
    "replicas": 3,
}
QUESTION, ANSWER = "Weather in Paris?", "Sunny, 21 C in Paris."
ARGUMENTS, RESULT = '{"city": "Paris"}', '{"temp_c": 21, "sky": "sunny"}'
EVERY_TYPE: dict[str, Any] = {
    "str": "héllo", "bool": True, "int": 42, "big.int": 2**62 + 1, "neg.int": -7, "float": 2.5,
    "whole.float": 1.0, "list.str": ["a", "b"], "list.int": [1, 2**40], "list.float": [0.5, 1.0],
    "list.bool": [True, False], "list.empty": [],
}  # fmt: skip
REMOTE_TRACE, REMOTE_SPAN = "5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174"
SDK = ("--from", "otel-sdk-json")


@dataclass
class Made:
    console: str  # what ConsoleSpanExporter printed, then the unended span's to_json()
    finished: list[ReadableSpan]  # the ended spans, in the order they ended
    unended: ReadableSpan
    agent_trace: str  # the OpenInference trace's id

    def objects(self) -> list[Any]:
        return [json.loads(s.to_json()) for s in [*self.finished, self.unended]]


def _message(prefix: str, role: str, content: str | None = None, **more: str) -> dict[str, str]:
    out = {f"{prefix}.message.role": role, **{f"{prefix}.message.{k}": v for k, v in more.items()}}
    if content is not None:
        out[f"{prefix}.message.content"] = content
    return out


CALL = {
    "tool_calls.0.tool_call.id": "call_1",
    "tool_calls.0.tool_call.function.name": "get_weather",
    "tool_calls.0.tool_call.function.arguments": ARGUMENTS,
}


def _llm(turn: int) -> dict[str, Any]:
    """An OpenInference LLM span's attributes: the first turn calls get_weather, the second answers."""
    attributes: dict[str, Any] = {
        "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o", "llm.provider": "openai",
        "llm.system": "openai", "llm.token_count.prompt": 20 + turn, "llm.token_count.completion": 10,
        "llm.token_count.total": 30 + turn, **_message("llm.input_messages.0", "user", QUESTION),
    }  # fmt: skip
    if turn == 0:
        return {**attributes, **_message("llm.output_messages.0", "assistant", **CALL)}
    return {
        **attributes,
        **_message("llm.input_messages.1", "assistant", **CALL),
        **_message("llm.input_messages.2", "tool", RESULT, tool_call_id="call_1", name="get_weather"),
        **_message("llm.output_messages.0", "assistant", ANSWER),
    }


@pytest.fixture(scope="module")
def made() -> Made:
    out, memory = io.StringIO(), InMemorySpanExporter()
    provider = TracerProvider(resource=Resource(RESOURCE), shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=out)))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("sdk.json.test", "1.0")
    us = 1000
    t0 = (time.time_ns() // us) * us - 60 * 10**9  # a minute ago, on a microsecond: to_json's unit
    agent = {"openinference.span.kind": "AGENT", "input.value": QUESTION, "output.value": ANSWER}
    with tracer.start_as_current_span(
        "weather agent", attributes=agent, start_time=t0, end_on_exit=False
    ) as root:
        tracer.start_span("chat gpt-4o", attributes=_llm(0), start_time=t0 + 10 * us).end(t0 + 20 * us)
        tool = {"openinference.span.kind": "TOOL", "tool.name": "get_weather", "input.value": ARGUMENTS,
                "output.value": RESULT}  # fmt: skip
        tracer.start_span("get_weather", attributes=tool, start_time=t0 + 30 * us).end(t0 + 40 * us)
        tracer.start_span("chat gpt-4o", attributes=_llm(1), start_time=t0 + 50 * us).end(t0 + 60 * us)
    root.end(t0 + 70 * us)
    server = trace.SpanKind.SERVER
    with tracer.start_as_current_span("handle", kind=server, attributes=EVERY_TYPE, start_time=t0 + 100 * us,
                                      end_on_exit=False) as handle:  # fmt: skip
        handle.set_status(trace.StatusCode.OK)
        call = tracer.start_span("call", kind=trace.SpanKind.CLIENT, start_time=t0 + 110 * us)
        try:
            raise TimeoutError("upstream took too long")
        except TimeoutError as exc:
            call.record_exception(exc, timestamp=t0 + 115 * us)
        call.add_event("retry", {"attempt": 2, "delays": [0.5, 1.0]}, timestamp=t0 + 116 * us)
        call.set_status(trace.StatusCode.ERROR, "upstream timeout")
        call.end(t0 + 120 * us)
        link = trace.Link(root.get_span_context(), {"link.reason": "answers the same question"})
        tracer.start_span("retry", links=[link], start_time=t0 + 130 * us).end(t0 + 140 * us)
    handle.end(t0 + 150 * us)
    state = trace.TraceState([("vendor", "v1"), ("other", "x2")])
    sampled = trace.TraceFlags(trace.TraceFlags.SAMPLED)
    remote = trace.SpanContext(
        int(REMOTE_TRACE, 16), int(REMOTE_SPAN, 16), is_remote=True, trace_flags=sampled, trace_state=state
    )
    context = trace.set_span_in_context(trace.NonRecordingSpan(remote))
    tracer.start_span("child of remote", context=context, start_time=t0 + 200 * us).end(t0 + 210 * us + 7)
    unended = tracer.start_span("still running", start_time=t0 + 300 * us)
    assert isinstance(unended, ReadableSpan)
    finished = list(memory.get_finished_spans())
    assert len(finished) == 8 and out.getvalue().count('"trace_id"') == 9  # spans and the link
    console = out.getvalue() + unended.to_json() + "\n"
    return Made(console, finished, unended, format(root.get_span_context().trace_id, "032x"))


WRITERS: dict[str, Callable[[Made], str]] = {
    "console": lambda m: m.console,  # ConsoleSpanExporter's stream: indented objects, no array
    "array": lambda m: json.dumps(m.objects(), indent=2),
    "jsonl": lambda m: "".join(json.dumps(o) + "\n" for o in m.objects()),
}


def _typed(value: Any) -> Any:
    """A value with the type of every part, so that 1.0 and 1, True and 1 differ."""
    if isinstance(value, (list, tuple)):
        return ["list", [_typed(v) for v in value]]
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    return [type(value).__name__, value]


def _iso_ns(text: str) -> int:
    """A to_json time (microseconds, Z) in Unix nanoseconds, in integers."""
    moment = datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    return (
        (moment - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc))
        // datetime.timedelta(microseconds=1)
        * 1000
    )


def _expected(span: ReadableSpan) -> dict[str, Any]:
    """What the stored row of a span of the SDK holds: the `spans` view's columns, parsed."""
    context, parent = span.get_span_context(), span.parent
    assert context is not None
    attributes = dict(span.attributes or {})
    if context.trace_state:
        attributes["blackbox.otlp.trace_state"] = context.trace_state.to_header()
    status = span.status.status_code.name.lower() if span.end_time else "open"
    end = span.end_time
    return {
        "trace_id": format(context.trace_id, "032x"),
        "span_id": format(context.span_id, "016x"),
        "parent_span_id": None if parent is None else format(parent.span_id, "016x"),
        "name": span.name,
        "span_kind": span.kind.name,
        "status": status,
        "status_message": span.status.description if end else None,
        "start_ns": span.start_time,
        "end_ns": None if end is None else (end // 1000) * 1000,  # to_json keeps microseconds
        "attributes": _typed(attributes),
        "events": [
            {"name": e.name, "timestamp_ns": e.timestamp, "attributes": _typed(dict(e.attributes or {}))}
            for e in span.events
        ],
        "links": [
            {
                "trace_id": format(k.context.trace_id, "032x"),
                "span_id": format(k.context.span_id, "016x"),
                "attributes": dict(k.attributes or {}),
            }
            for k in span.links
        ],
        "resource": RESOURCE,
    }


def _stored(db: Path) -> dict[tuple[str, str], dict[str, Any]]:
    names = ("trace_id", "span_id", "parent_span_id", "name", "span_kind", "oi_span_kind", "status",
             "status_message", "start_ns", "end_ns")  # fmt: skip
    found = {}
    for row in rows(db):
        stored = dict(zip(names, row[:10], strict=True))
        del stored["oi_span_kind"]
        stored["attributes"] = _typed(json.loads(row[18]))
        stored["events"] = [{**e, "attributes": _typed(e["attributes"])} for e in json.loads(row[19] or "[]")]
        stored["links"] = json.loads(row[20] or "[]")
        stored["resource"] = json.loads(row[21])
        assert json.loads(row[22] or "{}") == {}, row[22]  # to_json writes no instrumentation scope
        found[(stored["trace_id"], stored["span_id"])] = stored
    return found


@pytest.mark.parametrize("how", ["from", "recognized"])
@pytest.mark.parametrize("shape", sorted(WRITERS))
def test_each_shape_stores_every_span_as_the_sdk_held_it_and_once(
    made: Made, shape: str, how: str, tmp_path: Path
) -> None:
    path, db = tmp_path / f"spans.{shape}", tmp_path / "x.db"
    path.write_text(WRITERS[shape](made))
    args = (*SDK, str(path)) if how == "from" else (str(path),)
    summary = json.loads(run_cli("import", *args, "--json", db=db, check=True).stdout)
    assert (summary["spans"], summary["traces"], summary["duplicates"]) == (9, 4, 0)
    stored = _stored(db)
    expected = {(e["trace_id"], e["span_id"]): e for e in map(_expected, [*made.finished, made.unended])}
    assert stored.keys() == expected.keys()
    for key, span in expected.items():
        assert stored[key] == span, span["name"]
    # Spot checks of what the comparison above covers, as a reader would look for them.
    by_name = {s["name"]: s for s in stored.values()}
    call, handle = by_name["call"], by_name["handle"]
    assert (call["span_kind"], call["status"], call["status_message"]) == (
        "CLIENT",
        "error",
        "upstream timeout",
    )
    assert call["parent_span_id"] == handle["span_id"] and handle["parent_span_id"] is None
    assert [e["name"] for e in call["events"]] == ["exception", "retry"]
    assert call["events"][0]["attributes"]["exception.type"] == ["str", "TimeoutError"]
    assert handle["attributes"]["whole.float"] == ["float", 1.0] and handle["attributes"]["int"] == [
        "int",
        42,
    ]
    assert handle["attributes"]["list.int"] == ["list", [["int", 1], ["int", 2**40]]]
    assert by_name["retry"]["links"][0]["trace_id"] == made.agent_trace
    remote = by_name["child of remote"]
    assert (remote["trace_id"], remote["parent_span_id"]) == (REMOTE_TRACE, REMOTE_SPAN)
    assert remote["attributes"]["blackbox.otlp.trace_state"] == ["str", "vendor=v1,other=x2"]
    written = next(o for o in made.objects() if o["name"] == "child of remote")
    assert (
        remote["end_ns"] == _iso_ns(written["end_time"]) == (made.finished[7].end_time or 0) - 7
    )  # microseconds
    running = by_name["still running"]
    assert (running["status"], running["end_ns"]) == ("open", None)
    llm = [s for s in stored.values() if s["name"] == "chat gpt-4o"]
    assert {s["attributes"]["llm.input_messages.0.message.content"][1] for s in llm} == {QUESTION}
    (run,) = json.loads(run_cli("runs", "--json", db=db, check=True).stdout)
    assert run["source"] == f"import {path}" and run["spans"] == 9

    before = dump(db)
    again = run_cli("import", *args, db=db, check=True)
    assert again.stdout.strip() == "nothing new: 9 spans already stored, no run added"
    assert dump(db) == before


def test_the_three_shapes_and_standard_input_store_the_same_rows(made: Made, tmp_path: Path) -> None:
    stored = []
    for shape, write in sorted(WRITERS.items()):
        db = tmp_path / f"{shape}.db"
        done = _stdin(("import", "-"), write(made), db)
        assert done.returncode == 0 and "imported 9 spans of 4 traces" in done.stdout, done.stderr
        stored.append(rows(db))
    assert stored[0] == stored[1] == stored[2]


def _stdin(args: tuple[str, ...], text: str, db: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "otel_blackbox.cli", "--db", str(db), *args]
    return subprocess.run(argv, input=text, capture_output=True, text=True, timeout=60)


def test_an_imported_openinference_trace_shows_and_makes_a_cassette_that_verifies(
    made: Made, tmp_path: Path
) -> None:
    path, db = tmp_path / "console.txt", tmp_path / "x.db"
    path.write_text(made.console)
    run_cli("import", str(path), db=db, check=True)
    shown = run_cli("show", made.agent_trace, db=db, check=True).stdout
    assert "weather agent" in shown and "get_weather" in shown and "chat gpt-4o" in shown
    assert "AGENT" in shown and "LLM" in shown and "TOOL" in shown
    cassette = tmp_path / "x.json"
    run_cli("cassette", made.agent_trace, "-o", str(cassette), db=db, check=True)
    verified = run_cli("verify", str(cassette), check=True).stdout
    assert "PASS  replayability" in verified and "FAIL" not in verified
    steps = load_cassette(cassette).steps
    calls = [s.payload for s in steps if s.type == "tool_call"]
    assert [(c["toolName"], c["toolInput"]) for c in calls] == [("get_weather", {"city": "Paris"})]
    assert [s.payload["result"] for s in steps if s.type == "tool_result"] == [RESULT]
    assert steps[-1].payload["status"] == "success" and steps[-1].payload["result"] == ANSWER


def test_ids_without_0x_a_bare_resource_and_the_hint_when_the_start_does_not_tell(
    made: Made, tmp_path: Path
) -> None:
    # SDK 1.0 wrote parent_id without 0x (opentelemetry-python#1833), SDKs before 1.12 the resource
    # as its attributes alone (#2784); other tools write ids in upper case.
    span = json.loads(made.finished[0].to_json())
    span["context"]["trace_id"] = span["context"]["trace_id"].removeprefix("0x").upper()
    span["parent_id"] = span["parent_id"].removeprefix("0x")
    span["resource"] = {"service.name": "old-sdk"}
    old, db = tmp_path / "old.json", tmp_path / "x.db"
    old.write_text(json.dumps(span, indent=4))
    run_cli("import", str(old), db=db, check=True)
    ((trace_id, _, parent, *_),) = rows(db)
    assert trace_id == span["context"]["trace_id"].lower() and parent == span["parent_id"]
    assert json.loads(rows(db)[0][21]) == {"service.name": "old-sdk"}
    # A first span too long for the first bytes: told by its start, as to_json orders its keys.
    huge = json.loads(made.finished[1].to_json())
    huge["attributes"]["input.value"] = "x" * 200_000
    long_first = tmp_path / "long.txt"
    long_first.write_text(json.dumps(huge, indent=4) + "\n")
    assert json.loads(run_cli("import", str(long_first), "--json", db=db, check=True).stdout)["spans"] == 1
    # Keys sorted (attributes first), the start tells nothing: refused as OTLP, with the --from.
    huge["context"]["span_id"] = "0x" + "1" * 16
    sorted_keys = tmp_path / "sorted.jsonl"
    sorted_keys.write_text(json.dumps(huge, sort_keys=True) + "\n")
    done = run_cli("import", str(sorted_keys), db=db)
    (line,) = done.stderr.splitlines()
    assert done.returncode == 2 and "not OTLP" in line
    assert line.endswith(
        "it looks like the OpenTelemetry SDK's span JSON: import it with --from otel-sdk-json"
    )
    assert (
        json.loads(run_cli("import", *SDK, str(sorted_keys), "--json", db=db, check=True).stdout)["spans"]
        == 1
    )


def _span_text(made: Made, **changes: Any) -> str:
    span = json.loads(made.finished[2].to_json())
    for path, value in changes.items():
        where, *rest = path.split("__")
        if rest:
            span[where][rest[0]] = value
        else:
            span[where] = value
    return json.dumps(span, indent=4)


BAD: dict[str, tuple[Callable[[Made], bytes], str]] = {
    "not JSON": (lambda m: b"{\n  oops\n}\n", "not JSON (Expecting property name"),
    "no trace id": (
        lambda m: _span_text(m, context={"span_id": "0x" + "2" * 16}).encode(),
        "context.trace_id: missing: a span has a trace id",
    ),
    "no context": (
        lambda m: b'{"name": "x", "kind": "SpanKind.INTERNAL"}',
        "context: missing: expected a span",
    ),
    "trace id not hex": (
        lambda m: _span_text(m, context__trace_id="0x" + "z" * 32).encode(),
        "context.trace_id: expected a trace id of 32 hex digits (0x or not), got '0xzzzz",
    ),
    "short span id": (
        lambda m: _span_text(m, context__span_id="0x123").encode(),
        "context.span_id: expected a span id of 16 hex digits",
    ),
    "zero parent": (lambda m: _span_text(m, parent_id="0x" + "0" * 16).encode(), "parent_id: an all-zero"),
    "bad time": (
        lambda m: _span_text(m, start_time="yesterday at noon").encode(),
        "start_time: expected an ISO 8601 time like 2025-01-02T03:04:05.123456Z, got 'yesterday at noon'",
    ),
    "no start": (lambda m: _span_text(m, start_time=None).encode(), "start_time: missing"),
    "end before start": (
        lambda m: _span_text(m, end_time="1999-01-01T00:00:00.000000Z").encode(),
        "end_time: before start_time",
    ),
    "bad kind": (
        lambda m: _span_text(m, kind="SpanKind.SIDEWAYS").encode(),
        "kind: expected one of SpanKind.",
    ),
    "bad status": (
        lambda m: _span_text(m, status__status_code="FINE").encode(),
        "status.status_code: expected one of UNSET, OK, ERROR, got 'FINE'",
    ),
    "bad attribute": (
        lambda m: _span_text(m, attributes={"n": 2**64}).encode(),
        "attributes.n: out of range",
    ),
    "not a span": (lambda m: b"42\n", "expected a span"),
    "not UTF-8": (lambda m: b'{"name": "\xff"}', "not UTF-8"),
    "a broken array": (
        lambda m: f"[{_span_text(m)} {_span_text(m)}]".encode(),
        "not JSON (expected , or ] after a span)",
    ),
}


@pytest.mark.parametrize("how", ["from", "recognized"])
@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line_exit_2_and_the_database_is_unchanged(
    made: Made, case: str, how: str, tmp_path: Path
) -> None:
    make, says = BAD[case]
    db, good, bad = tmp_path / "x.db", tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(made.console)
    run_cli("import", str(good), db=db, check=True)
    before = dump(db)
    # A good span first: nothing of the file is stored, and without --from it is recognized by it
    # (a broken array is one value: its start is read as a span too).
    first = made.finished[2].to_json()
    data = make(made)
    bad.write_bytes(data if case == "a broken array" else first.encode() + b"\n" + data)
    args = (*SDK, str(bad)) if how == "from" else (str(bad),)
    done = run_cli("import", *args, db=db)
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"otel-blackbox: error: {bad}") and says in line, line
    if case not in ("not JSON", "not UTF-8", "a broken array"):
        assert f"{bad}, span 2 (line {first.count(chr(10)) + 2}): " in line, line
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert dump(db) == before


def test_the_help_and_the_usage_errors_name_otel_sdk_json(tmp_path: Path) -> None:
    shown = run_cli("import", "--help", check=True).stdout
    assert "otel-sdk-json" in shown and "--from otel-sdk-json" in shown and "ConsoleSpanExporter" in shown
    done = run_cli("import", "--from", "sdk", "x.json", db=tmp_path / "x.db")
    assert done.returncode == 2 and "or otel-sdk-json (the OpenTelemetry SDK's span JSON)" in done.stderr
    done = run_cli("import", *SDK, "--from-phoenix", "http://127.0.0.1:9", db=tmp_path / "x.db")
    assert done.returncode == 2 and "--from otel-sdk-json reads files" in done.stderr
    done = run_cli("import", *SDK, "--format", "anthropic", "x.json", db=tmp_path / "x.db")
    assert done.returncode == 2 and "--format goes with --from chat" in done.stderr
    assert not (tmp_path / "x.db").exists()
