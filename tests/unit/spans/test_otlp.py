"""OTLP out: `export --format otlp` (OTLP/JSON lines) and `push` (OTLP/HTTP protobuf), on real spans.

The JSON is read back the way the Collector reads it: its OTLP/JSON unmarshaller takes trace and
span ids as hex, while protobuf's own json_format takes bytes as base64, so ``collector_parse``
turns the hex ids into base64 and hands everything else to ``json_format`` unchanged. The push is
received by a real OTLP/HTTP server on 127.0.0.1 that decodes every body as an
``ExportTraceServiceRequest``.
"""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format  # type: ignore[import-untyped]
from helpers import Receiver, Recorder, run_cli
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from otel_blackbox._spans.openinference import OPEN_SPAN_MESSAGE
from otel_blackbox._spans.semconv import ATTR_SPAN_OPEN

HOUR_NS = 3600 * 10**9
EVERY_TYPE: dict[str, Any] = {
    "str": "héllo",
    "bool": True,
    "int": 42,
    "big.int": 2**62 + 1,  # past a double's precision: only an int64 round trip keeps it
    "neg.int": -7,
    "float": 2.5,
    "whole.float": 1.0,  # stays a double, not an int
    "list.str": ["a", "b"],
    "list.bool": [True, False],
    "list.int": [1, 2**40],
    "list.float": [0.5, 1.0],
}
SCHEMA_URL = "https://opentelemetry.io/schemas/1.26.0"
HAS_IS_REMOTE, IS_REMOTE = 0x100, 0x200  # SpanFlags in trace.proto


@dataclass
class Recorded:
    db: Path
    main_trace: int
    open_trace: int
    old_trace: int
    event_ns: int
    spans: dict[str, trace.Span] = field(default_factory=dict)  # by name

    def ids(self, name: str) -> tuple[int, int]:
        ctx = self.spans[name].get_span_context()
        return ctx.trace_id, ctx.span_id

    @property
    def span_count(self) -> int:
        return len(self.spans)


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy between the CLI and the local receiver, no OTEL_EXPORTER_OTLP_* from the developer."""
    for name in list(os.environ):
        if name.startswith("OTEL_EXPORTER_OTLP"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


@pytest.fixture
def recorded(recorder: Recorder) -> Recorded:
    """Three traces through the recorder's processor, with a resource and two instrumentation scopes:

    * main: SERVER root (ok, every attribute type) > INTERNAL plan (unset, a link) > CLIENT call
      (error, an exception event and an event with every attribute type); plus a span whose parent is
      remote (in a process that recorded nothing here);
    * open: a root and a child never ended (the process was killed);
    * old: one span three hours ago (for --since).
    """
    provider = TracerProvider(
        resource=Resource({"service.name": "otlp-test", "deployment.environment": "ci"}),
        shutdown_on_exit=False,
    )
    provider.add_span_processor(recorder.processor)  # shut down with the recorder fixture's provider
    agent = provider.get_tracer("agent.scope", "1.2.3", schema_url=SCHEMA_URL)
    http_scope = provider.get_tracer("http.scope")
    spans: dict[str, trace.Span] = {}
    now = time.time_ns()

    old = agent.start_span("old", start_time=now - 3 * HOUR_NS)
    old.end(end_time=now - 3 * HOUR_NS + 10**9)
    spans["old"] = old

    with agent.start_as_current_span("handle", kind=trace.SpanKind.SERVER, attributes=EVERY_TYPE) as root:
        spans["handle"] = root
        root.set_status(trace.StatusCode.OK)
        link = trace.Link(old.get_span_context(), {"link.reason": "retry of", "link.n": 2})
        with agent.start_as_current_span("plan", links=[link]) as plan:
            spans["plan"] = plan
            with http_scope.start_as_current_span("call", kind=trace.SpanKind.CLIENT) as call:
                spans["call"] = call
                call.add_event("chunk", EVERY_TYPE, timestamp=now + 5)
                try:
                    raise TimeoutError("upstream took too long")
                except TimeoutError as exc:
                    call.record_exception(exc)
                call.set_status(trace.StatusCode.ERROR, "upstream timeout")
    remote = trace.SpanContext(
        root.get_span_context().trace_id, 0xABCDEF0123456789, is_remote=True, trace_flags=trace.TraceFlags(1)
    )
    with agent.start_as_current_span(
        "from-remote", context=trace.set_span_in_context(trace.NonRecordingSpan(remote))
    ) as child_of_remote:
        spans["from-remote"] = child_of_remote

    killed = agent.start_span("killed", kind=trace.SpanKind.SERVER)
    spans["killed"] = killed
    spans["stuck"] = http_scope.start_span(
        "stuck", context=trace.set_span_in_context(killed), kind=trace.SpanKind.CLIENT, attributes={"n": 1}
    )
    recorder.flush()
    return Recorded(
        db=recorder.db_path,
        main_trace=root.get_span_context().trace_id,
        open_trace=killed.get_span_context().trace_id,
        old_trace=old.get_span_context().trace_id,
        event_ns=now + 5,
        spans=spans,
    )


# -- reading OTLP as the Collector does -------------------------------------------------------------

_HEX32 = re.compile(r"^[0-9a-f]{32}$")
_HEX16 = re.compile(r"^[0-9a-f]{16}$")


def _hex_to_base64(holder: dict[str, Any], key: str, pattern: re.Pattern[str]) -> None:
    if key in holder:
        assert pattern.match(holder[key]), f"{key} is not lowercase hex: {holder[key]!r}"
        holder[key] = base64.b64encode(bytes.fromhex(holder[key])).decode()


def collector_parse(line: str) -> ExportTraceServiceRequest:
    """One OTLP/JSON line as the Collector reads it: ids as hex (checked), the rest ProtoJSON."""
    request = json.loads(line)
    for resource_spans in request["resourceSpans"]:
        for scope_spans in resource_spans["scopeSpans"]:
            for span in scope_spans["spans"]:
                _hex_to_base64(span, "traceId", _HEX32)
                _hex_to_base64(span, "spanId", _HEX16)
                _hex_to_base64(span, "parentSpanId", _HEX16)
                for link in span.get("links", ()):
                    _hex_to_base64(link, "traceId", _HEX32)
                    _hex_to_base64(link, "spanId", _HEX16)
    message = ExportTraceServiceRequest()
    json_format.ParseDict(request, message)
    return message


def value(any_value: AnyValue) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [value(v) for v in any_value.array_value.values]
    return getattr(any_value, kind) if kind else None


def typed(values: dict[str, Any]) -> dict[str, Any]:
    """Values with their types: 1.0 == 1 == True in Python, but not in OTLP."""

    def one(v: Any) -> Any:
        return [one(x) for x in v] if isinstance(v, list) else (type(v).__name__, v)

    return {k: one(v) for k, v in values.items()}


def attributes(pairs: Any) -> dict[str, Any]:
    items: list[KeyValue] = list(pairs)
    return {kv.key: value(kv.value) for kv in items}


@dataclass
class Flat:
    """A received span with the resource and scope it was grouped under."""

    span: Span
    resource: dict[str, Any]
    scope_name: str
    scope_version: str
    scope_schema_url: str


def flatten(requests: list[ExportTraceServiceRequest]) -> list[Flat]:
    return [
        Flat(span, attributes(rs.resource.attributes), ss.scope.name, ss.scope.version, ss.schema_url)
        for request in requests
        for rs in request.resource_spans
        for ss in rs.scope_spans
        for span in ss.spans
    ]


def by_name(flat: list[Flat]) -> dict[str, Flat]:
    found = {f.span.name: f for f in flat}
    assert len(found) == len(flat), "a span name arrived twice"
    return found


def assert_round_trip(rec: Recorded, flat: list[Flat]) -> None:
    """Everything recorded about the spans is in what was exported / received."""
    spans = by_name(flat)
    assert set(spans) == set(rec.spans)
    for name, original in rec.spans.items():
        got = spans[name].span
        trace_id, span_id = rec.ids(name)
        assert got.trace_id == trace_id.to_bytes(16, "big") and got.span_id == span_id.to_bytes(8, "big")
        assert spans[name].resource == {"service.name": "otlp-test", "deployment.environment": "ci"}
        parent = getattr(original, "parent", None)
        assert got.parent_span_id == (parent.span_id.to_bytes(8, "big") if parent else b"")
        assert got.flags & HAS_IS_REMOTE
        assert bool(got.flags & IS_REMOTE) == (name == "from-remote")  # its parent is not in the store

    handle, plan, call = spans["handle"], spans["plan"], spans["call"]
    assert handle.span.kind == Span.SPAN_KIND_SERVER and handle.span.status.code == Status.STATUS_CODE_OK
    assert typed(attributes(handle.span.attributes)) == typed(EVERY_TYPE)
    assert (handle.scope_name, handle.scope_version, handle.scope_schema_url) == (
        "agent.scope",
        "1.2.3",
        SCHEMA_URL,
    )
    assert handle.span.end_time_unix_nano > handle.span.start_time_unix_nano > 0

    assert plan.span.kind == Span.SPAN_KIND_INTERNAL and plan.span.status.code == Status.STATUS_CODE_UNSET
    (link,) = plan.span.links
    old_trace, old_span = rec.ids("old")
    assert link.trace_id == old_trace.to_bytes(16, "big") and link.span_id == old_span.to_bytes(8, "big")
    assert attributes(link.attributes) == {"link.reason": "retry of", "link.n": 2}

    assert call.span.kind == Span.SPAN_KIND_CLIENT and (call.scope_name, call.scope_version) == (
        "http.scope",
        "",
    )
    assert (
        call.span.status.code == Status.STATUS_CODE_ERROR and call.span.status.message == "upstream timeout"
    )
    chunk, exception = call.span.events
    assert chunk.name == "chunk" and chunk.time_unix_nano == rec.event_ns
    assert typed(attributes(chunk.attributes)) == typed(EVERY_TYPE)
    exc = attributes(exception.attributes)
    assert exception.name == "exception" and exc["exception.type"] == "TimeoutError"
    assert exc["exception.message"] == "upstream took too long" and "Traceback" in exc["exception.stacktrace"]

    for name in ("killed", "stuck"):  # never ended: ERROR, marked, ending when last seen
        got = spans[name].span
        assert got.status.code == Status.STATUS_CODE_ERROR and got.status.message == OPEN_SPAN_MESSAGE
        assert attributes(got.attributes)[ATTR_SPAN_OPEN] is True
        assert got.start_time_unix_nano <= got.end_time_unix_nano <= time.time_ns()
    assert spans["stuck"].span.kind == Span.SPAN_KIND_CLIENT and attributes(
        spans["stuck"].span.attributes
    ) == {
        "n": 1,
        ATTR_SPAN_OPEN: True,
    }
    for name in set(rec.spans) - {"killed", "stuck"}:
        assert ATTR_SPAN_OPEN not in attributes(spans[name].span.attributes)


# -- export --format otlp ---------------------------------------------------------------------------


def test_export_otlp_round_trips_every_field(recorded: Recorded, tmp_path: Path) -> None:
    out = tmp_path / "traces.jsonl"
    result = run_cli("export", "--format", "otlp", "-o", str(out), db=recorded.db, check=True)
    assert result.stderr.strip() == f"wrote {recorded.span_count} spans to {out}"
    lines = out.read_text().splitlines()
    assert len(lines) == 1  # 7 spans: one request
    raw = json.loads(lines[0])
    span_json = raw["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    # OTLP/JSON, not ProtoJSON defaults: camelCase, hex ids, int64 as strings, enums as integers.
    assert {"traceId", "spanId", "startTimeUnixNano", "kind"} <= set(span_json)
    assert isinstance(span_json["startTimeUnixNano"], str) and isinstance(span_json["kind"], int)
    assert _HEX32.match(span_json["traceId"]) and _HEX16.match(span_json["spanId"])

    request = collector_parse(lines[0])
    # The encoder groups by resource, then scope: one resource, each scope once.
    (resource_spans,) = request.resource_spans
    assert sorted(ss.scope.name for ss in resource_spans.scope_spans) == ["agent.scope", "http.scope"]
    assert_round_trip(recorded, flatten([request]))

    # Stdout gives the same spans (an open span's end may move on: the recorder's heartbeat runs on);
    # --trace keeps one trace.
    stdout = run_cli("export", "--format", "otlp", db=recorded.db, check=True).stdout.splitlines()
    assert [(f.span.span_id, f.span.name) for line in stdout for f in flatten([collector_parse(line)])] == [
        (f.span.span_id, f.span.name) for f in flatten([request])
    ]
    one = run_cli("export", "--format", "otlp", "--trace", f"{recorded.open_trace:032x}"[:10], db=recorded.db)
    assert one.returncode == 0
    names = sorted(f.span.name for line in one.stdout.splitlines() for f in flatten([collector_parse(line)]))
    assert names == ["killed", "stuck"]


def test_export_otlp_batches_lines_of_512_spans(recorder: Recorder, tmp_path: Path) -> None:
    with recorder.tracer.start_as_current_span("root"):
        for i in range(600):
            with recorder.tracer.start_as_current_span(f"step-{i}"):
                pass
    recorder.flush()
    lines = run_cli("export", "--format", "otlp", db=recorder.db_path, check=True).stdout.splitlines()
    per_line = [len(flatten([collector_parse(line)])) for line in lines]
    assert per_line == [512, 89]
    names = [f.span.name for line in lines for f in flatten([collector_parse(line)])]
    assert sorted(names) == sorted(["root", *(f"step-{i}" for i in range(600))])


def test_export_default_format_is_still_openinference(recorded: Recorded) -> None:
    first = json.loads(run_cli("export", db=recorded.db, check=True).stdout.splitlines()[0])
    assert "context" in first and "resourceSpans" not in first


# -- push: a real OTLP/HTTP receiver (helpers.Receiver) ---------------------------------------------


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as r:
        yield r


def test_push_delivers_every_span_once(recorded: Recorded, receiver: Receiver) -> None:
    result = run_cli(
        "push", "--endpoint", receiver.url, "--header", "x-api-key=abc", "--batch-size", "3", db=recorded.db
    )
    assert result.returncode == 0, result.stderr
    endpoint = f"{receiver.url}/v1/traces"  # a URL without a path gets the traces path
    assert result.stdout == (f"pushed 7 spans in 3 traces to {endpoint} (2 open spans marked incomplete)\n")
    assert result.stderr == ""  # no progress bar off a terminal, no exporter log lines
    assert len(receiver.received) == 3  # 7 spans, 3 a request
    for got in receiver.received:
        assert got.path == "/v1/traces" and got.headers["x-api-key"] == "abc"
        assert got.headers["content-type"] == "application/x-protobuf"
    assert_round_trip(recorded, flatten(receiver.accepted()))


def test_push_trace_and_since_limit_what_is_sent(recorded: Recorded, receiver: Receiver) -> None:
    only = run_cli(
        "push", "--endpoint", receiver.url, "--trace", f"{recorded.open_trace:032x}"[:8], db=recorded.db
    )
    assert only.returncode == 0, only.stderr
    assert only.stdout.startswith("pushed 2 spans in 1 trace to ")
    assert sorted(f.span.name for f in flatten(receiver.accepted())) == ["killed", "stuck"]

    receiver.received.clear()
    recent = run_cli("push", "--endpoint", receiver.url, "--since", "1h", db=recorded.db)
    assert recent.returncode == 0, recent.stderr
    assert recent.stdout.startswith("pushed 6 spans in 2 traces to ")
    sent = by_name(flatten(receiver.accepted()))
    assert "old" not in sent and {"handle", "killed"} <= set(sent)

    receiver.received.clear()
    both = run_cli(
        "push",
        "--endpoint",
        receiver.url,
        "--since",
        "1h",
        "--trace",
        f"{recorded.old_trace:032x}",
        db=recorded.db,
    )
    assert (both.returncode, both.stdout) == (0, "nothing to push: no traces recorded in that window\n")
    assert receiver.received == []


def test_push_retries_a_transient_failure(recorded: Recorded) -> None:
    with Receiver(statuses=[503]) as receiver:
        result = run_cli("push", "--endpoint", f"{receiver.url}/v1/traces", db=recorded.db)
    assert result.returncode == 0, result.stderr
    assert [r.status for r in receiver.received] == [503, 200]  # the exporter's backoff, then success
    assert len(flatten(receiver.accepted())) == recorded.span_count


def test_push_rejected_batch_exits_1_with_the_count(recorded: Recorded) -> None:
    with Receiver(statuses=[200, 400]) as receiver:
        result = run_cli("push", "--endpoint", receiver.url, "--batch-size", "3", db=recorded.db)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (
        f"otel-blackbox: error: 4 of 7 spans not pushed: {receiver.url}/v1/traces did not accept batch 2 "
        "(3 spans: HTTP 400 Bad Request); 3 pushed before it\n"
    )
    assert [r.status for r in receiver.received] == [200, 400]  # 400 is not retried; the rest not sent
    assert len(flatten(receiver.accepted())) == 3


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_push_to_a_closed_port_fails_fast_with_one_line(recorded: Recorded) -> None:
    port = _closed_port()
    started = time.monotonic()
    result = run_cli("push", "--endpoint", f"http://127.0.0.1:{port}/v1/traces", db=recorded.db)
    assert time.monotonic() - started < 5  # the exporter alone backs off for ~7 s of its 10 s timeout
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (
        f"otel-blackbox: error: cannot reach http://127.0.0.1:{port}/v1/traces: connection refused\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--endpoint", "localhost:4318"], "Invalid value for '--endpoint'"),
        (["--endpoint", "ftp://example.com/v1/traces"], "Invalid value for '--endpoint'"),
        (["--endpoint", "http:///v1/traces"], "Invalid value for '--endpoint'"),
        (["--endpoint", "http://127.0.0.1:99999"], "Invalid value for '--endpoint'"),
        (["--endpoint", "http://127.0.0.1:4318", "--header", "x-api-key"], "Invalid value for '--header'"),
        (["--endpoint", "http://127.0.0.1:4318", "--header", "=abc"], "Invalid value for '--header'"),
        (["--endpoint", "http://127.0.0.1:4318", "--since", "soon"], "Invalid value for '--since'"),
        (["--endpoint", "http://127.0.0.1:4318", "--batch-size", "0"], "Invalid value for '--batch-size'"),
        ([], "Missing option '--endpoint'"),
    ],
)
def test_push_bad_input_exits_2_with_one_line(recorded: Recorded, args: list[str], message: str) -> None:
    result = run_cli("push", *args, db=recorded.db)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(f"otel-blackbox: error: {message}") and result.stderr.count("\n") == 1


def test_push_unknown_trace_exits_1(recorded: Recorded, receiver: Receiver) -> None:
    result = run_cli("push", "--endpoint", receiver.url, "--trace", "ffff0000", db=recorded.db)
    assert result.returncode == 1 and "no trace with id" in result.stderr
    assert receiver.received == []
