"""An agent in another language, recorded: the JavaScript agent (examples/node/agent.mjs) into `serve`.

The agent is the official `openai` npm package, OpenInference's JS instrumentation and the
OpenTelemetry JS SDK's OTLP exporters, talking to examples/fake_llm.py. It exports to `otel-blackbox
serve` through a byte-for-byte relay that keeps a copy of every request (the JS exporter streams its
bodies chunked, so the relay changes nothing of what `serve` is sent).

1. What `serve` stored is a trace like a Python agent's: `show -v` shows the LLM and TOOL spans' content,
   `cassette` makes a cassette `verify` accepts, holding the tool calls and results, and the built-in
   rerun of it against the fake provider completes with the incident's tool results.
2. The same spans sent again by the real Python OTLP exporter (the relay's copy decoded, turned into SDK
   spans, exported with opentelemetry-exporter-otlp-proto-http) into another `serve`: the same rows.
3. The JS OTLP/JSON exporter (`OTEL_EXPORTER_OTLP_PROTOCOL=http/json`) into `serve`: the same rows as
   those spans through the Python exporter, and the same trace, span for span, as the protobuf run's.

Skipped only when `node` is missing; `make node` installs it and examples/node/node_modules.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import queue
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fake_llm import FakeLLMServer
from google.protobuf import json_format  # type: ignore[import-untyped]
from helpers import EXAMPLES, run_cli
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.util.types import AttributeValue

from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.model import Cassette, terminal_outcome
from otel_blackbox._cassette.verify import verify_cassette

NODE = shutil.which("node")
NODE_DIR = EXAMPLES / "node"
AGENT = NODE_DIR / "agent.mjs"
INSTALLED = NODE_DIR / "node_modules" / ".installed"  # the stamp `make node` writes after `npm ci`
QUESTION = "What's the weather in Lisbon, and the 2 day forecast? I need both."
TOOL_ARGS = {"get_weather": {"city": "Lisbon"}, "get_forecast": {"city": "Lisbon", "days": 2}}
API_KEY = "sk-node-agent-test-0123456789"
# The columns of the spans view that say what a span is; not id, written_ns or pid (the writer's own).
COLUMNS = (
    "trace_id, span_id, parent_span_id, name, span_kind, oi_span_kind, status, status_message, start_ns,"
    " end_ns, duration_ns, session_id, user_id, model, prompt_tokens, completion_tokens, total_tokens,"
    " tool_name, attributes, events, links, resource, scope"
)

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed (`make node` installs it)")


# --- serve, and a relay in front of it ---------------------------------------------------------------


class Serve:
    """`otel-blackbox --db DB serve --port 0`, until stop(): SIGTERM, which must exit 0."""

    def __init__(self, db: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        argv = [sys.executable, "-m", "otel_blackbox.cli", "--db", str(db), "serve", "--port", "0"]
        self.process = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env)
        self.lines: queue.Queue[str] = queue.Queue()
        self.stderr: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.url = self._listening()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr.append(line)
            self.lines.put(line)
        self.lines.put("")  # the end

    def _listening(self) -> str:
        while True:
            try:
                line = self.lines.get(timeout=60)  # a guard against a hang, not a measurement
            except queue.Empty:
                self.process.kill()
                self._ended()
                raise AssertionError("serve printed nothing in 60 s") from None
            if match := re.search(r"http://127\.0\.0\.1:\d+/v1/traces", line):
                return match.group(0)
            if not line:
                code = self._ended()
                raise AssertionError(f"serve exited {code}: {''.join(self.stderr)}")

    def _ended(self) -> int:
        code = self.process.wait(timeout=60)
        self.reader.join()
        assert self.process.stderr is not None
        self.process.stderr.close()
        return code

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.url.removeprefix("http://").removesuffix("/v1/traces").split(":")
        return host, int(port)

    def stop(self) -> str:
        self.process.send_signal(signal.SIGTERM)
        code = self._ended()
        assert code == 0, f"serve exited {code} on SIGTERM: {''.join(self.stderr)}"
        return "".join(self.stderr)


@dataclass
class Request:
    head: str  # request line and headers, as sent
    headers: dict[str, str]  # lower-case names
    body: bytes  # de-chunked


class Relay:
    """Forwards every byte between a client and ``upstream`` unchanged, keeping a copy of what the
    client sent; ``requests()`` parses that copy (HTTP/1.1, keep-alive, Content-Length or chunked)."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.sent: list[bytearray] = []  # per connection, client to upstream
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.threads: list[threading.Thread] = []
        self.accepting = threading.Thread(target=self._accept, daemon=True)
        self.accepting.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            copy = bytearray()
            self.sent.append(copy)
            thread = threading.Thread(target=self._connection, args=(client, copy), daemon=True)
            thread.start()
            self.threads.append(thread)

    def _connection(self, client: socket.socket, copy: bytearray) -> None:
        with client, socket.create_connection(self.upstream) as server:
            back = threading.Thread(target=self._pump, args=(server, client, None), daemon=True)
            back.start()
            self._pump(client, server, copy)
            back.join()

    @staticmethod
    def _pump(source: socket.socket, target: socket.socket, keep: bytearray | None) -> None:
        """Until the source's end: then the target's, for writing (a half close, as TCP allows)."""
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                if keep is not None:
                    keep.extend(data)
                target.sendall(data)
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        with contextlib.suppress(OSError):  # wakes the accept() (close alone does not, on Linux)
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        self.accepting.join()
        for thread in self.threads:
            thread.join(timeout=60)

    def requests(self) -> list[Request]:
        return [request for copy in self.sent for request in _parse(bytes(copy))]


def _parse(stream: bytes) -> Iterator[Request]:
    while stream:
        head, _, rest = stream.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = bytearray()
            while True:
                size_line, _, rest = rest.partition(b"\r\n")
                size = int(size_line.split(b";")[0], 16)
                body += rest[:size]
                rest = rest[size + 2 :]
                if size == 0:
                    break  # no trailers from these clients: the last chunk's CRLF ended the body
            yield Request(head.decode("latin-1"), headers, bytes(body))
        else:
            length = int(headers.get("content-length", "0"))
            yield Request(head.decode("latin-1"), headers, rest[:length])
            rest = rest[length:]
        stream = rest


# --- the agent, recorded ----------------------------------------------------------------------------


@dataclass
class Recorded:
    db: Path
    trace_id: str
    answer: str
    requests: list[Request] = field(default_factory=list)


def require_node_modules() -> None:
    if not INSTALLED.exists():
        pytest.fail(f"{NODE_DIR / 'node_modules'} is missing or was not installed: run `make node`")


def run_agent(llm: FakeLLMServer, endpoint: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
    env.update(OPENAI_BASE_URL=llm.openai_base_url, OPENAI_API_KEY=API_KEY, **endpoint)
    assert NODE is not None
    done = subprocess.run([NODE, str(AGENT), QUESTION], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def record(llm: FakeLLMServer, db: Path, protocol: str) -> Recorded:
    """One run of the agent into `serve` on ``db``, through a relay; serve stopped with SIGTERM."""
    require_node_modules()
    serve = Serve(db)
    relay = Relay(serve.address)
    try:
        if protocol == "http/json":  # the base URL: the exporter adds /v1/traces itself
            endpoint = {"OTEL_EXPORTER_OTLP_ENDPOINT": relay.url, "OTEL_EXPORTER_OTLP_PROTOCOL": protocol}
        else:
            endpoint = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{relay.url}/v1/traces"}
        done = run_agent(llm, endpoint)
    finally:
        relay.close()
        serve.stop()
    first, *rest = done.stdout.splitlines()
    assert first.startswith("TRACE "), done.stdout
    return Recorded(db, first.removeprefix("TRACE "), "\n".join(rest), relay.requests())


@pytest.fixture(scope="module")
def protobuf_run(fake_llm: FakeLLMServer, tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return record(fake_llm, tmp_path_factory.mktemp("node-protobuf") / "blackbox.db", "http/protobuf")


@pytest.fixture
def _provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def rows(db: Path) -> list[dict[str, Any]]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        found = conn.execute(f"SELECT {COLUMNS} FROM spans ORDER BY trace_id, span_id").fetchall()
    finally:
        conn.close()
    return [dict(row) for row in found]


# --- the Python OTLP exporter, sending the same spans --------------------------------------------------


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(v) for v in value.array_value.values)
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind) if kind else None


def _attributes(values: Sequence[KeyValue]) -> dict[str, AttributeValue]:
    return {kv.key: _value(kv.value) for kv in values}


def _context(trace_id: bytes, span_id: bytes, flags: int) -> SpanContext:
    return SpanContext(
        int.from_bytes(trace_id, "big"),
        int.from_bytes(span_id, "big"),
        is_remote=bool(flags & 0x200),  # SPAN_FLAGS_CONTEXT_IS_REMOTE
        trace_flags=TraceFlags(flags & 0xFF),
    )


def sdk_spans(request: ExportTraceServiceRequest) -> list[ReadableSpan]:
    """The request's spans as the Python SDK's finished spans, for its exporter to send again."""
    spans = []
    for resource_spans in request.resource_spans:
        resource = Resource(_attributes(resource_spans.resource.attributes), resource_spans.schema_url)
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope
            instrumentation = InstrumentationScope(
                scope.name,
                scope.version or None,
                scope_spans.schema_url or None,
                _attributes(scope.attributes),
            )
            for span in scope_spans.spans:
                code = StatusCode(span.status.code)
                status = (
                    Status(code, span.status.message or None) if code is StatusCode.ERROR else Status(code)
                )
                spans.append(
                    ReadableSpan(
                        name=span.name,
                        context=_context(span.trace_id, span.span_id, span.flags),
                        parent=_context(span.trace_id, span.parent_span_id, span.flags)
                        if span.parent_span_id
                        else None,
                        resource=resource,
                        attributes=_attributes(span.attributes),
                        events=[
                            Event(e.name, _attributes(e.attributes), e.time_unix_nano) for e in span.events
                        ],
                        links=[
                            Link(
                                _context(link.trace_id, link.span_id, link.flags),
                                _attributes(link.attributes),
                            )
                            for link in span.links
                        ],
                        kind=SpanKind(max(span.kind - 1, 0)),  # the proto's 0 is UNSPECIFIED
                        instrumentation_scope=instrumentation,
                        status=status,
                        start_time=span.start_time_unix_nano,
                        end_time=span.end_time_unix_nano,
                    )
                )
    return spans


def through_python_exporter(requests: list[ExportTraceServiceRequest], db: Path) -> None:
    """Each request's spans exported by opentelemetry-exporter-otlp-proto-http into `serve` on db."""
    serve = Serve(db)
    try:
        exporter = OTLPSpanExporter(endpoint=serve.url, timeout=30)
        for request in requests:
            assert exporter.export(sdk_spans(request)) is SpanExportResult.SUCCESS
        exporter.shutdown()  # type: ignore[no-untyped-call]
    finally:
        serve.stop()


def json_to_protobuf(document: dict[str, Any]) -> ExportTraceServiceRequest:
    """OTLP/JSON to the protobuf message: protobuf's own JSON parser, once the ids are base64.

    OTLP/JSON differs from protobuf's JSON mapping in its ids only (hex, not base64), as the
    specification says; everything else (enums as numbers, 64-bit integers as strings) it parses.
    """

    def ids(obj: Any) -> Any:
        if isinstance(obj, list):
            return [ids(item) for item in obj]
        if not isinstance(obj, dict):
            return obj
        return {
            key: base64.b64encode(bytes.fromhex(value)).decode()
            if key in ("traceId", "spanId", "parentSpanId") and isinstance(value, str)
            else ids(value)
            for key, value in obj.items()
        }

    request = ExportTraceServiceRequest()
    json_format.ParseDict(ids(document), request)
    return request


# --- the tests --------------------------------------------------------------------------------------


def tool_steps(cassette: Cassette, kind: str) -> list[dict[str, Any]]:
    """In the cassette's order: the order the model asked for the calls (TOOL_ARGS'), though the JS
    SDK's millisecond clock gives both tool spans one start time."""
    return [s.payload for s in cassette.steps if s.type == kind]


def test_the_js_agent_recorded_by_serve_shows_makes_a_cassette_and_reruns(
    protobuf_run: Recorded, fake_llm: FakeLLMServer, tmp_path: Path, _provider_env: None
) -> None:
    run = protobuf_run
    assert run.requests and all(r.head.startswith("POST /v1/traces ") for r in run.requests)
    assert {r.headers["content-type"] for r in run.requests} == {"application/x-protobuf"}

    stored = rows(run.db)
    assert {r["trace_id"] for r in stored} == {run.trace_id}
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for row in stored:
        by_kind.setdefault(row["oi_span_kind"], []).append(row)
    assert sorted((k, len(v)) for k, v in by_kind.items()) == [("AGENT", 1), ("LLM", 2), ("TOOL", 2)]
    (root,) = by_kind["AGENT"]
    assert root["name"] == "weather-agent" and root["parent_span_id"] is None and root["status"] == "ok"
    assert json.loads(root["resource"]) == {"service.name": "node-weather-agent"}
    assert {json.loads(r["scope"])["name"] for r in by_kind["LLM"]} == {
        "@arizeai/openinference-instrumentation-openai"
    }
    assert all(r["parent_span_id"] == root["span_id"] for r in stored if r is not root)
    assert {r["session_id"] for r in stored} == {root["session_id"]} != {None}
    results = {}
    for tool in by_kind["TOOL"]:
        attributes = json.loads(tool["attributes"])
        assert json.loads(attributes["input.value"]) == TOOL_ARGS[tool["tool_name"]]
        results[tool["tool_name"]] = attributes["output.value"]
        assert results[tool["tool_name"]] in run.answer  # the model quoted what the tool returned
    assert set(results) == set(TOOL_ARGS)

    shown = run_cli("show", "-v", run.trace_id, db=run.db, check=True).stdout
    for text in (
        "weather-agent  [AGENT]",
        "OpenAI Chat Completions  [LLM]",
        "get_weather  [TOOL]",
        "get_forecast  [TOOL]",
        "tools offered: get_weather, get_forecast",
        f"[user] {QUESTION}",
        '→ get_weather({"city": "Lisbon"})',
        f"output: {results['get_forecast']}",
        f"[assistant] {run.answer}",
    ):
        assert text in shown, f"{text!r} not in:\n{shown}"

    incident = tmp_path / "incident.json"
    run_cli("cassette", run.trace_id, "-o", str(incident), db=run.db, check=True)
    verified = run_cli("verify", str(incident))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    cassette = load_cassette(incident)
    assert [(p["toolName"], p["toolInput"]) for p in tool_steps(cassette, "tool_call")] == list(
        TOOL_ARGS.items()
    )
    assert [(p["toolName"], p["result"]) for p in tool_steps(cassette, "tool_result")] == [
        (name, results[name]) for name in TOOL_ARGS
    ]
    assert terminal_outcome(cassette).status == "success"

    child = tmp_path / "child.json"
    rerun = run_cli("rerun", str(incident), "-o", str(child), "--base-url", fake_llm.openai_base_url)
    assert rerun.returncode == 0, rerun.stderr
    verdict = rerun.stderr.splitlines()[-1]
    assert verdict.startswith(
        f"[blackbox] rerun of {cassette.id} by the built-in agent on openai-chat (model gpt-4o-mini): "
        "completed in 2 model calls, 2 tool results from the incident -> "
    ), verdict
    rerun_cassette = load_cassette(child)
    assert verify_cassette(rerun_cassette).passed
    assert rerun_cassette.parent_id == cassette.id
    assert terminal_outcome(rerun_cassette).status == "success"
    assert tool_steps(rerun_cassette, "tool_result") == tool_steps(cassette, "tool_result")
    same = run_cli("diff", str(incident), str(child))
    assert "outcome: no behavioural change: same status, result and tool path" in same.stdout, same.stdout


def test_the_same_spans_through_the_python_exporter_store_the_same_rows(
    protobuf_run: Recorded, tmp_path: Path
) -> None:
    # The JS exporter streams its bodies (chunked): serve read them as they were sent.
    assert all(r.headers.get("transfer-encoding") == "chunked" for r in protobuf_run.requests)
    requests = []
    for sent in protobuf_run.requests:
        request = ExportTraceServiceRequest()
        request.ParseFromString(sent.body)
        requests.append(request)
    assert sum(len(s.spans) for r in requests for rs in r.resource_spans for s in rs.scope_spans) == 5

    db = tmp_path / "python.db"
    through_python_exporter(requests, db)
    assert rows(db) == rows(protobuf_run.db)


def test_the_js_json_exporter_into_serve_stores_the_same_rows(
    protobuf_run: Recorded, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    run = record(fake_llm, tmp_path / "json.db", "http/json")
    assert run.requests and {r.headers["content-type"] for r in run.requests} == {"application/json"}
    stored = rows(run.db)
    assert {r["trace_id"] for r in stored} == {run.trace_id}

    # The same spans as protobuf, through the Python exporter: the same rows.
    requests = [json_to_protobuf(json.loads(r.body)) for r in run.requests]
    db = tmp_path / "python.db"
    through_python_exporter(requests, db)
    assert rows(db) == stored

    # And the same trace as the protobuf run's, span for span, but for what differs from run to run.
    assert shape(stored) == shape(rows(protobuf_run.db))


def shape(stored: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What two runs of the agent share: each span's name, kinds, status, parent's name, attribute
    names (values hold ids and times), resource and scope."""
    names = {r["span_id"]: r["name"] for r in stored}
    found = [
        (
            r["name"],
            r["span_kind"],
            r["oi_span_kind"],
            r["status"],
            names.get(r["parent_span_id"]),
            r["tool_name"],
            r["model"],
            sorted(json.loads(r["attributes"])),
            r["resource"],
            r["scope"],
        )
        for r in stored
    ]
    return sorted(found, key=repr)
