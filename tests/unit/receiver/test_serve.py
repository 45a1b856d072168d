"""`otel-blackbox serve`: a real serve subprocess on 127.0.0.1, a real database, real exporters.

What goes in through the OpenTelemetry project's own OTLP/HTTP exporter (protobuf, gzip) or as
OTLP/JSON must come out of the ``spans`` view exactly as the recorder itself stores the same spans;
every error answer is the one the OTLP/HTTP specification gives, with a google.rpc.Status body, and
leaves the database as it was; the server keeps serving after anything a client sends. A request is
stored whole or refused whole (a full queue is a 503 the exporter retries), and the closing line
counts new rows, not spans sent again.
"""

from __future__ import annotations

import gzip
import http.client
import json
import os
import queue
import signal
import socket
import sqlite3
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import requests
from google.protobuf import json_format  # type: ignore[import-untyped]  # no types-protobuf here
from google.rpc.status_pb2 import Status  # type: ignore[import-untyped]
from helpers import run_cli
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanKind, StatusCode
from opentelemetry.trace import Status as SpanStatus

from otel_blackbox import BlackboxConfig, BlackboxSpanProcessor
from otel_blackbox._spans.otlp_out import otlp_json_lines

MIB = 1024 * 1024
PROTOBUF = "application/x-protobuf"
JSON_TYPE = "application/json"
# Every column of the spans view but those that name the writer (its row id, its pid, when it wrote).
COLUMNS = (
    "trace_id, span_id, parent_span_id, name, span_kind, oi_span_kind, status, status_message, start_ns, "
    "end_ns, duration_ns, session_id, user_id, model, prompt_tokens, completion_tokens, total_tokens, "
    "tool_name, attributes, events, links, resource, scope"
)


# -- the server and its clients --------------------------------------------------------------------


class Serve:
    """``otel-blackbox --db DB serve --port 0 ARGS`` in a subprocess, once it says where it listens."""

    def __init__(self, db: Path, *args: str, env: dict[str, str] | None = None) -> None:
        environment = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        environment.update(env or {})
        self.db = db
        self.argv = [
            sys.executable,
            "-m",
            "otel_blackbox.cli",
            "--db",
            str(db),
            "serve",
            "--port",
            "0",
            *args,
        ]
        self.proc = subprocess.Popen(
            self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment
        )
        self.lines: list[str] = []
        lines: queue.Queue[str | None] = queue.Queue()
        assert self.proc.stderr is not None
        stderr = self.proc.stderr

        def read() -> None:
            for line in stderr:
                self.lines.append(line)
                lines.put(line)
            lines.put(None)

        self._reader = threading.Thread(target=read, daemon=True)
        self._reader.start()
        first = lines.get(timeout=60)
        if first is None or "/v1/traces" not in first:
            self.proc.kill()
            raise AssertionError(f"serve did not start: {first!r} {self.lines}")
        self.banner = first
        self.url = first.split(" on ", 1)[1].split()[0]
        self.port = int(self.url.rsplit(":", 1)[1].split("/")[0])

    def stop(self, signum: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signum)
        code = self.proc.wait(60)
        self._reader.join(10)
        self._close()
        return code

    def _close(self) -> None:
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    def __enter__(self) -> Serve:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._reader.join(10)
        self._close()


class Reply:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    def status_message(self) -> str:
        """The google.rpc.Status of an error answer, in the encoding the answer says it is in."""
        if self.headers["content-type"] == JSON_TYPE:
            document = json.loads(self.body)
            assert set(document) <= {"code", "message", "details"}
            return str(document["message"])
        return str(Status.FromString(self.body).message)

    def export_response(self) -> ExportTraceServiceResponse:
        assert self.status == 200
        response = ExportTraceServiceResponse()
        if self.headers["content-type"] == JSON_TYPE:
            json_format.Parse(self.body, response)
        else:
            assert self.headers["content-type"] == PROTOBUF
            response.ParseFromString(self.body)
        return response


def post(
    port: int,
    body: bytes,
    content_type: str | None = PROTOBUF,
    *,
    method: str = "POST",
    path: str = "/v1/traces",
    headers: dict[str, str] | None = None,
) -> Reply:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        sent = dict(headers or {})
        if content_type is not None:
            sent["Content-Type"] = content_type
        conn.request(method, path, body=body, headers=sent)
        response = conn.getresponse()
        return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
    finally:
        conn.close()


def raw(port: int, data: bytes, *, shut: bool = True) -> Reply:
    """Bytes written to the socket as they are; the answer read with http.client's parser."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    try:
        sock.sendall(data)
        if shut:
            sock.shutdown(socket.SHUT_WR)
        response = http.client.HTTPResponse(sock)
        response.begin()
        return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
    finally:
        sock.close()


def rows(
    db: Path, query: str = f"SELECT {COLUMNS} FROM spans ORDER BY trace_id, span_id"
) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(query).fetchall()
    except sqlite3.OperationalError:  # no file, no schema yet
        return []
    finally:
        conn.close()


def count(db: Path) -> int:
    found = rows(db, "SELECT count(*) FROM spans")
    return int(found[0][0]) if found else 0


def keys(db: Path) -> set[tuple[str, str]]:
    return {(t, s) for t, s in rows(db, "SELECT trace_id, span_id FROM spans")}


def span_keys(spans: Sequence[ReadableSpan]) -> set[tuple[str, str]]:
    keys = set()
    for span in spans:
        assert span.context is not None
        keys.add((format(span.context.trace_id, "032x"), format(span.context.span_id, "016x")))
    return keys


def made_spans(n: int, *, name: str = "work", resource: str = "load") -> list[ReadableSpan]:
    """``n`` ended SDK spans (pairs of parent and child), kept in memory."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource({"service.name": resource}), shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tests.serve")
    for i in range(n // 2):
        with (
            tracer.start_as_current_span(f"{name}-{i}", attributes={"i": i}),
            tracer.start_as_current_span(f"{name}-{i}.child"),
        ):
            pass
    if n % 2:
        with tracer.start_as_current_span(f"{name}-last"):
            pass
    provider.shutdown()
    return list(memory.get_finished_spans())


def protobuf_body(spans: Sequence[ReadableSpan]) -> bytes:
    return bytes(encode_spans(spans).SerializeToString())


def no_traceback(serve: Serve) -> None:
    assert "Traceback" not in serve.stderr, serve.stderr


# -- what a real SDK sends lands intact ------------------------------------------------------------


def _agent_spans(provider: TracerProvider) -> None:
    """A small agent's worth of spans: every kind of attribute value, events, links, an error."""
    tracer = provider.get_tracer("agent.scope", "2.1.0", schema_url="https://opentelemetry.io/schemas/1.26.0")
    other = provider.get_tracer("tools.scope")
    with tracer.start_as_current_span("linked-away") as away:
        pass
    with tracer.start_as_current_span(
        "agent.run",
        kind=SpanKind.SERVER,
        attributes={
            "openinference.span.kind": "AGENT",
            "session.id": "sess-1",
            "user.id": "u-7",
            "text": "héllo ✓ 日本",
            "count": 3,
            "ratio": 0.25,
            "flag": True,
            "tags": ("a", "b"),
            "numbers": (1, 2, 3),
            "big": "x" * 300_000,
            "api_key": "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH",
        },
        links=[Link(away.get_span_context(), {"why": "follows"})],
    ) as root:
        root.add_event("started", {"step": 1, "note": "go"})
        with tracer.start_as_current_span(
            "llm",
            kind=SpanKind.CLIENT,
            attributes={
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o-mini",
                "llm.token_count.prompt": 11,
                "llm.token_count.completion": 7,
                "llm.token_count.total": 18,
            },
        ):
            pass
        with other.start_as_current_span(
            "tool", attributes={"openinference.span.kind": "TOOL", "tool.name": "weather"}
        ) as tool:
            tool.record_exception(TimeoutError("the tool timed out"))
            tool.set_status(SpanStatus(StatusCode.ERROR, "the tool timed out"))
        for i in range(20):
            with tracer.start_as_current_span(f"step-{i}", kind=SpanKind.INTERNAL):
                pass


@pytest.mark.parametrize(
    "compression",
    [Compression.NoCompression, Compression.Gzip, Compression.Deflate],
    ids=["plain", "gzip", "deflate"],
)
def test_the_python_exporter_s_spans_land_as_the_recorder_stores_them(
    tmp_path: Path, compression: Compression
) -> None:
    """The same spans go to a BlackboxSpanProcessor and, through OTLPSpanExporter, to serve: the two
    databases hold the same rows (ids, parents, times, status, attributes redacted and bounded alike,
    events, links, resource, scope)."""
    direct, served = tmp_path / "direct.db", tmp_path / "served.db"
    with Serve(served) as serve:
        provider = TracerProvider(
            resource=Resource({"service.name": "agent", "deployment.environment": "test"}),
            shutdown_on_exit=False,
        )
        provider.add_span_processor(BlackboxSpanProcessor(config=BlackboxConfig(db_path=direct)))
        provider.add_span_processor(
            BatchSpanProcessor(OTLPSpanExporter(endpoint=serve.url, compression=compression))
        )
        _agent_spans(provider)
        provider.shutdown()  # the exporter's last request is answered: its spans are committed
        assert serve.stop() == 0
    expected, got = rows(direct), rows(served)
    assert len(expected) == 24
    assert got == expected
    by_name = {r[3]: r for r in got}
    assert by_name["llm"][2] == by_name["agent.run"][1]  # the parent
    assert by_name["tool"][6] == "error" and "exception" in by_name["tool"][19]
    assert "sk-proj" not in by_name["agent.run"][18]  # redacted as recorded spans are
    assert json.loads(by_name["tool"][22])["name"] == "tools.scope"
    assert json.loads(by_name["agent.run"][21])["service.name"] == "agent"
    # One run, named after the receiver, with every span.
    recorders = rows(served, "SELECT source, spans_written FROM recorders")
    assert recorders == [(f"serve 127.0.0.1:{serve.port}", 24)]
    runs = json.loads(run_cli("runs", "--json", db=served, check=True).stdout)
    assert [(r["source"], r["spans"]) for r in runs] == [(f"serve 127.0.0.1:{serve.port}", 24)]
    assert "receiving OTLP/HTTP traces on http://127.0.0.1:" in serve.banner
    no_traceback(serve)


def test_otlp_json_by_hand_is_stored_as_recorded_and_answered_in_json(tmp_path: Path) -> None:
    """OTLP/JSON as the Collector writes it (hex ids, integer enums), with a charset parameter and
    gzip; a span without an end is stored open."""
    direct, served = tmp_path / "direct.db", tmp_path / "served.db"
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource({"service.name": "json-agent"}), shutdown_on_exit=False)
    provider.add_span_processor(BlackboxSpanProcessor(config=BlackboxConfig(db_path=direct)))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    _agent_spans(provider)
    provider.shutdown()
    lines = list(otlp_json_lines(memory.get_finished_spans(), batch_size=10))
    assert len(lines) == 3
    open_span = {"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "5B8EFFF798038103D269B633813FC60C", "spanId": "EEE19B7EC3C1B174", "name": "still running",
        "kind": 1, "startTimeUnixNano": "1700000000000000000",
    }]}]}]}  # fmt: skip
    with Serve(served) as serve:
        replies = [
            post(serve.port, lines[0].encode(), f"{JSON_TYPE}; charset=utf-8"),
            post(
                serve.port, gzip.compress(lines[1].encode()), JSON_TYPE, headers={"Content-Encoding": "gzip"}
            ),
            post(serve.port, lines[2].encode(), JSON_TYPE),
        ]
        for reply in replies:
            assert reply.status == 200 and reply.headers["content-type"] == JSON_TYPE
            assert json.loads(reply.body) == {}  # full success: partialSuccess unset
        assert post(serve.port, json.dumps(open_span).encode(), JSON_TYPE).status == 200
        assert serve.stop() == 0
    got = rows(served)
    opened = [r for r in got if r[3] == "still running"]
    assert len(opened) == 1 and opened[0][6] == "open" and opened[0][9] is None
    assert [r for r in got if r[3] != "still running"] == rows(direct)
    no_traceback(serve)


def test_the_run_takes_spans_that_started_before_serve_did(tmp_path: Path) -> None:
    """An agent started before `serve`, or on a host whose clock is behind: its spans are in the run,
    which starts at the earliest of them (the run's pid is its own, so no process's spans join it)."""
    db = tmp_path / "served.db"
    now = time.time_ns()
    spans = [
        {"traceId": f"{i + 1:032x}", "spanId": f"{i + 1:016x}", "name": name, "kind": 1,
         "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 1000)}
        for i, (name, start) in enumerate((("a day ago", now - 86_400 * 10**9), ("now", now)))
    ]  # fmt: skip
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode()
    with Serve(db) as serve:
        assert post(serve.port, body, JSON_TYPE).status == 200
        assert serve.stop() == 0
    (run,) = json.loads(run_cli("runs", "--json", db=db, check=True).stdout)
    assert run["spans"] == 2 and run["traces"] == 2 and run["pid"] < 0
    assert run["started_ns"] == now - 86_400 * 10**9 and run["source"].startswith("serve 127.0.0.1:")
    shown = run_cli("show", "--run", run["run_id"], db=db, check=True).stdout
    assert "a day ago" in shown and "now" in shown


def test_the_run_starts_at_its_earliest_span_not_when_serve_started(tmp_path: Path) -> None:
    """Spans that all started after `serve` did: the run starts at the earliest of them, as
    documented, not at the moment the receiver started (the old code's start)."""
    db = tmp_path / "served.db"
    with Serve(db) as serve:
        first = time.time_ns()  # serve's writer was made before it printed where it listens
        spans = [
            {"traceId": f"{i + 1:032x}", "spanId": f"{i + 1:016x}", "name": f"step-{i}", "kind": 1,
             "startTimeUnixNano": str(first + i * 1000), "endTimeUnixNano": str(first + i * 1000 + 500)}
            for i in range(3)
        ]  # fmt: skip
        body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode()
        assert post(serve.port, body, JSON_TYPE).status == 200
        assert serve.stop() == 0
    (run,) = json.loads(run_cli("runs", "--json", db=db, check=True).stdout)
    assert run["started_ns"] == first and run["spans"] == 3


# -- the error answers -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    """One server for the error answers and hostile bodies: a 1 MiB limit."""
    db = tmp_path_factory.mktemp("serve") / "shared.db"
    with Serve(db, "--max-body-mb", "1") as serve:
        yield serve
        assert serve.stop() == 0
    no_traceback(serve)


def _still_serving(serve: Serve) -> None:
    """A good request after the bad one is stored, and nothing else was."""
    before = count(serve.db)
    spans = made_spans(2, name="after")
    reply = post(serve.port, protobuf_body(spans))
    assert reply.status == 200 and not reply.export_response().HasField("partial_success")
    assert count(serve.db) == before + 2
    assert span_keys(spans) <= keys(serve.db)


def _ld(field: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _deep_protobuf(depth: int) -> bytes:
    """One span whose attribute is a kvlist in a kvlist ... ``depth`` deep, encoded by hand."""
    value = _ld(1, b"x")  # AnyValue.string_value
    for _ in range(depth):
        key_value = _ld(1, b"k") + _ld(2, value)  # KeyValue
        value = _ld(6, _ld(1, key_value))  # AnyValue.kvlist_value: KeyValueList.values
    span = (
        _ld(1, bytes(range(1, 17))) + _ld(2, bytes(range(1, 9))) + _ld(5, b"deep")
        + b"\x39" + struct.pack("<Q", 1_700_000_000_000_000_000)  # start_time_unix_nano (fixed64)
        + b"\x41" + struct.pack("<Q", 1_700_000_000_000_000_001)  # end_time_unix_nano
        + _ld(9, _ld(1, b"deep") + _ld(2, value))  # attributes
    )  # fmt: skip
    return _ld(1, _ld(2, _ld(2, span)))  # resource_spans / scope_spans / spans


def _deep_json(depth: int) -> bytes:
    value = '{"stringValue":"x"}'
    nested = '{"kvlistValue":{"values":[{"key":"k","value":' * depth + value + "}]}}" * depth
    span = (
        '{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"deep",'
        f'"startTimeUnixNano":"1700000000000000000","attributes":[{{"key":"deep","value":{nested}}}]}}'
    )
    return ('{"resourceSpans":[{"scopeSpans":[{"spans":[' + span + "]}]}]}").encode()


_GOOD_SPANS = made_spans(4, name="cut")
_GOOD = protobuf_body(_GOOD_SPANS)
_GZIP = {"Content-Encoding": "gzip"}

# (id, request kwargs for post(), status, what the message says)
_REFUSED: list[tuple[str, dict[str, Any], int, str]] = [
    ("protobuf-garbage", {"body": b"\xff\xff\xff\xff not protobuf"}, 400, "not an OTLP"),
    ("protobuf-truncated", {"body": _GOOD[: len(_GOOD) - 7]}, 400, "not an OTLP"),
    ("protobuf-deep-10000", {"body": _deep_protobuf(10_000)}, 400, "not an OTLP"),
    ("json-not-json", {"body": b'{"resourceSpans": [', "content_type": JSON_TYPE}, 400, "not JSON"),
    ("json-not-utf8", {"body": b'{"a": "\xff\xfe"}', "content_type": JSON_TYPE}, 400, "not UTF-8"),
    ("json-deep-10000", {"body": _deep_json(10_000), "content_type": JSON_TYPE}, 400, "nested too deeply"),
    ("json-a-list", {"body": b"[1, 2]", "content_type": JSON_TYPE}, 400, "expected a JSON object"),
    ("json-resource-spans-a-string", {"body": b'{"resourceSpans": "x"}', "content_type": JSON_TYPE}, 400,
     "resourceSpans: expected a list"),
    ("json-attributes-an-object", {"body": b'{"resourceSpans": [{"resource": {"attributes": {"a": 1}}}]}',
     "content_type": JSON_TYPE}, 400, "resourceSpans[0].resource.attributes"),
    ("gzip-broken", {"body": gzip.compress(b"x")[:10] + b"\xff" * 9, "headers": _GZIP}, 400, "valid gzip"),
    ("gzip-truncated", {"body": gzip.compress(_GOOD)[:-12], "headers": {"Content-Encoding": "gzip"}}, 400,
     "cut short"),
    ("body-over-limit", {"body": b"\0" * (MIB + 1)}, 413, "over the limit"),
    ("gzip-bomb", {"body": gzip.compress(b"\0" * (64 * MIB), 9), "headers": {"Content-Encoding": "gzip"}},
     413, "decompressed is over the limit"),
    ("json-over-limit", {"body": b" " * (2 * MIB), "content_type": JSON_TYPE}, 413, "over the limit"),
    ("content-type-text", {"body": _GOOD, "content_type": "text/plain"}, 415, "unsupported Content-Type"),
    ("content-type-none", {"body": _GOOD, "content_type": None}, 415, "(none)"),
    ("content-encoding-br", {"body": _GOOD, "headers": {"Content-Encoding": "br"}}, 415, "Content-Encoding"),
    ("method-get", {"body": b"", "method": "GET"}, 405, "POST only"),
    ("method-put", {"body": _GOOD, "method": "PUT"}, 405, "POST only"),
    ("method-delete", {"body": b"", "method": "DELETE"}, 405, "POST only"),
    ("path-metrics", {"body": _GOOD, "path": "/v1/metrics"}, 404, "no such path"),
    ("path-root", {"body": b"", "method": "GET", "path": "/"}, 404, "no such path"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("kwargs", "status", "says"), [c[1:] for c in _REFUSED], ids=[c[0] for c in _REFUSED]
)
def test_every_refusal_is_the_spec_s_answer_and_stores_nothing(
    shared: Serve, kwargs: dict[str, Any], status: int, says: str
) -> None:
    before = rows(shared.db)
    reply = post(shared.port, **kwargs)
    assert reply.status == status, reply.body
    json_request = kwargs.get("content_type") == JSON_TYPE
    assert reply.headers["content-type"] == (JSON_TYPE if json_request else PROTOBUF)
    assert says in reply.status_message()
    if status == 405:
        assert reply.headers["allow"] == "POST"
    assert rows(shared.db) == before
    _still_serving(shared)


@pytest.mark.parametrize("encoding", ["protobuf", "json"])
def test_bad_spans_in_a_valid_request_are_a_partial_success_with_their_count(
    shared: Serve, encoding: str
) -> None:
    good = made_spans(3, name=f"partial-{encoding}")
    request = encode_spans(good)
    scope_spans = request.resource_spans[0].scope_spans[0]
    bad_id = scope_spans.spans.add(trace_id=bytes(16 * [7]), span_id=b"\x01\x02\x03", name="bad id",
                                   start_time_unix_nano=1, end_time_unix_nano=2)  # fmt: skip
    scope_spans.spans.add(
        trace_id=bytes(16), span_id=bytes(8 * [1]), name="zero trace", start_time_unix_nano=1
    )
    assert bad_id.name == "bad id"
    before = keys(shared.db)
    if encoding == "protobuf":
        reply = post(shared.port, request.SerializeToString())
    else:
        document = json_format.MessageToDict(request, use_integers_for_enums=True)  # ids in base64
        reply = post(shared.port, json.dumps(document).encode(), JSON_TYPE)
    response = reply.export_response()
    assert response.partial_success.rejected_spans == 2
    assert "spans rejected as malformed: 2" in response.partial_success.error_message
    assert "spans[3].spanId" in response.partial_success.error_message
    assert keys(shared.db) == before | span_keys(good)


def test_json_nested_past_the_decoder_s_depth_rejects_that_span_only(shared: Serve) -> None:
    before = count(shared.db)
    reply = post(shared.port, _deep_json(100), JSON_TYPE)
    response = reply.export_response()
    assert response.partial_success.rejected_spans == 1
    assert "nested deeper" in response.partial_success.error_message
    assert count(shared.db) == before
    _still_serving(shared)


def test_an_empty_request_gets_the_same_answer_in_either_encoding(shared: Serve) -> None:
    """An ExportTraceServiceRequest with no spans is valid: an empty protobuf body, ``{}``, no
    resourceSpans (OTLP/JSON receivers ignore unknown fields), or resources without spans. Each is
    answered 200 with a warning (0 rejected), in its own encoding, and nothing is stored."""
    with_a_resource = ExportTraceServiceRequest()
    with_a_resource.resource_spans.add().resource.attributes.add(key="service.name").value.string_value = "x"
    requests_sent = [
        (b"", PROTOBUF),
        (with_a_resource.SerializeToString(), PROTOBUF),
        (b"{}", JSON_TYPE),
        (b'{"resourceSpans": []}', JSON_TYPE),
        (b'{"spans": []}', JSON_TYPE),
        (json_format.MessageToJson(with_a_resource).encode(), JSON_TYPE),
    ]
    before = rows(shared.db)
    replies = [post(shared.port, body, content_type) for body, content_type in requests_sent]
    assert [(r.status, r.headers["content-type"]) for r in replies] == [(200, t) for _, t in requests_sent]
    responses = [r.export_response() for r in replies]
    assert all(response == responses[0] for response in responses)
    assert responses[0].partial_success.rejected_spans == 0
    assert responses[0].partial_success.error_message == "the request holds no spans: nothing was stored"
    assert rows(shared.db) == before
    _still_serving(shared)


_POST = b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
_CHUNKED = _POST + b"Transfer-Encoding: chunked\r\n\r\n"
_RAW: list[tuple[str, bytes, int]] = [
    ("no-length", _POST + b"\r\n", 411),
    ("bad-length", _POST + b"Content-Length: 1e3\r\n\r\n", 400),
    ("huge-length-claimed", _POST + b"Content-Length: 99999999999\r\n\r\n", 413),
    ("bad-chunk-size", _CHUNKED + b"zz\r\nabc\r\n0\r\n\r\n", 400),
    ("chunk-longer-than-its-size", _CHUNKED + b"2\r\nabcdef\r\n0\r\n\r\n", 400),
    ("transfer-encoding-gzip", _POST + b"Transfer-Encoding: gzip\r\n\r\n", 400),
    ("chunked-over-limit", _CHUNKED + (b"100000\r\n" + b"\0" * 0x100000 + b"\r\n") * 2 + b"0\r\n\r\n", 413),
    ("garbage-request-line", b"\x00\x01garbage\r\n\r\n", 400),
    ("http-0.9", b"GET /v1/traces\r\n\r\n", 400),
]


@pytest.mark.parametrize(("data", "status"), [c[1:] for c in _RAW], ids=[c[0] for c in _RAW])
def test_hostile_framing_gets_its_status_and_stores_nothing(shared: Serve, data: bytes, status: int) -> None:
    before = rows(shared.db)
    reply = raw(shared.port, data)
    assert reply.status == status
    assert reply.status_message()
    assert rows(shared.db) == before
    _still_serving(shared)


def test_a_chunked_body_is_read(shared: Serve) -> None:
    """As the JavaScript exporter sends a gzip body (piped through zlib: no Content-Length)."""
    spans = made_spans(6, name="chunked")
    body = gzip.compress(protobuf_body(spans))
    chunks = b"".join(
        b"%x\r\n%s\r\n" % (len(body[i : i + 100]), body[i : i + 100]) for i in range(0, len(body), 100)
    )
    head = (
        b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
        b"Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    reply = raw(shared.port, head + chunks + b"0\r\nX-Trailer: y\r\n\r\n")
    assert reply.status == 200
    assert span_keys(spans) <= keys(shared.db)


def test_keep_alive_survives_a_refused_request(shared: Serve) -> None:
    """A refused body is read and thrown away: the next request on the same connection is answered."""
    spans = made_spans(2, name="keep-alive")
    conn = http.client.HTTPConnection("127.0.0.1", shared.port, timeout=60)
    try:
        conn.request("POST", "/v1/traces", body=_GOOD, headers={"Content-Type": "text/plain"})
        first = conn.getresponse()
        first.read()
        conn.request("POST", "/v1/traces", body=protobuf_body(spans), headers={"Content-Type": PROTOBUF})
        second = conn.getresponse()
        second.read()
    finally:
        conn.close()
    assert (first.status, second.status) == (415, 200)
    assert span_keys(spans) <= keys(shared.db)


def test_expect_100_continue_is_refused_before_the_body(shared: Serve) -> None:
    data = (
        b"POST /v1/traces HTTP/1.1\r\nContent-Type: application/x-protobuf\r\n"
        b"Content-Length: 104857600\r\nExpect: 100-continue\r\n\r\n"
    )
    reply = raw(shared.port, data, shut=False)  # the 100 MiB body is never sent
    assert reply.status == 413


# -- the token -------------------------------------------------------------------------------------


def test_the_token_is_checked_on_every_request(tmp_path: Path) -> None:
    token = "t0k3n-for-the-test"
    db = tmp_path / "token.db"
    spans = made_spans(4, name="with-token")
    with Serve(db, env={"OTEL_BLACKBOX_SERVE_TOKEN": token}) as serve:
        assert token not in " ".join(serve.argv)  # from the environment, not the command line
        refused = [
            post(serve.port, _GOOD),
            post(serve.port, _GOOD, headers={"Authorization": "Bearer wrong-token-of-any-length"}),
            post(serve.port, _GOOD, headers={"Authorization": f"Bearer {token}x"}),
            post(serve.port, _GOOD, headers={"Authorization": f"Basic {token}"}),
            post(serve.port, _GOOD, headers={"Authorization": token}),
            post(serve.port, b"", method="GET", path="/elsewhere"),  # checked before anything else
        ]
        assert [r.status for r in refused] == [401] * 6
        assert all("token" in r.status_message() for r in refused)
        assert refused[0].headers["www-authenticate"].startswith("Bearer")
        assert count(db) == 0
        exporter = OTLPSpanExporter(endpoint=serve.url, headers={"Authorization": f"Bearer {token}"})
        assert exporter.export(spans) == SpanExportResult.SUCCESS
        assert OTLPSpanExporter(endpoint=serve.url).export(spans) == SpanExportResult.FAILURE
        assert post(serve.port, _GOOD, headers={"Authorization": f"bearer {token}"}).status == 200
        assert serve.stop() == 0
    assert keys(db) == span_keys(spans) | span_keys(_GOOD_SPANS)
    no_traceback(serve)


def test_a_token_on_the_command_line_works_too(tmp_path: Path) -> None:
    with Serve(tmp_path / "t.db", "--token", "abc") as serve:
        assert post(serve.port, _GOOD).status == 401
        assert post(serve.port, _GOOD, headers={"Authorization": "Bearer abc"}).status == 200
        assert serve.stop() == 0


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.1", ""])
def test_beyond_loopback_without_a_token_is_refused(tmp_path: Path, host: str) -> None:
    result = run_cli("serve", "--host", host, "--port", "0", db=tmp_path / "x.db")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs --token" in lines[0]
    assert not (tmp_path / "x.db").exists()


@pytest.mark.parametrize(
    ("args", "says"),
    [(["--token", ""], "token"), (["--token", "has space"], "token"), (["--max-body-mb", "0"], "max-body-mb"),
     (["--host", "a b"], "host")],
    ids=["empty-token", "token-with-space", "zero-limit", "bad-host"],
)  # fmt: skip
def test_bad_options_are_one_line_and_exit_2(tmp_path: Path, args: list[str], says: str) -> None:
    result = run_cli("serve", "--port", "0", *args, db=tmp_path / "x.db")
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and says in result.stderr


def test_a_port_in_use_and_a_bad_database_are_one_line_and_exit_2(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli("serve", "--port", str(port), db=tmp_path / "x.db")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    (tmp_path / "not.db").write_text("not a database " * 100)
    result = run_cli("serve", "--port", "0", db=tmp_path / "not.db")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr


# -- load, the queue, shutdown ---------------------------------------------------------------------


def test_concurrent_exporters_store_exactly_what_they_sent(tmp_path: Path) -> None:
    db = tmp_path / "load.db"
    batches = [[made_spans(500, name=f"t{t}b{b}", resource=f"svc-{t}") for b in range(5)] for t in range(4)]
    json_spans = made_spans(1000, name="json")
    results: list[SpanExportResult] = []
    json_statuses: list[int] = []
    with Serve(db) as serve:

        def export(mine: list[list[ReadableSpan]]) -> None:
            exporter = OTLPSpanExporter(endpoint=serve.url, compression=Compression.Gzip)
            for batch in mine:
                results.append(exporter.export(batch))

        def send_json() -> None:
            for line in otlp_json_lines(json_spans, batch_size=100):
                json_statuses.append(post(serve.port, line.encode(), JSON_TYPE).status)

        threads = [threading.Thread(target=export, args=(mine,)) for mine in batches]
        threads.append(threading.Thread(target=send_json))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert serve.stop() == 0
    assert results == [SpanExportResult.SUCCESS] * 20 and json_statuses == [200] * 10
    sent = span_keys(json_spans).union(*(span_keys(b) for mine in batches for b in mine))
    assert len(sent) == 11_000
    assert count(db) == 11_000 and keys(db) == sent
    assert rows(db, "SELECT count(*), sum(spans_written), sum(spans_dropped) FROM recorders") == [
        (1, 11_000, 0)
    ]
    no_traceback(serve)


def test_a_request_is_stored_whole_or_refused_whole(tmp_path: Path) -> None:
    """A request larger than the whole queue is a 413; under load, each request is either stored
    whole (200) or, the queue full, refused whole with 503 and Retry-After: never a partial success
    that an exporter would not send again, never half a request stored."""
    db = tmp_path / "queue.db"
    with Serve(db, env={"OTEL_BLACKBOX_MAX_QUEUE_SIZE": "100"}) as serve:
        big = made_spans(250, name="big")
        reply = post(serve.port, protobuf_body(big))
        assert reply.status == 413 and "more than the whole queue" in reply.status_message()
        assert count(db) == 0
        bodies = [[made_spans(60, name=f"q{t}r{r}") for r in range(5)] for t in range(8)]
        outcomes: list[tuple[list[ReadableSpan], Reply]] = []

        def send(mine: list[list[ReadableSpan]]) -> None:
            for spans in mine:
                outcomes.append((spans, post(serve.port, protobuf_body(spans))))

        threads = [threading.Thread(target=send, args=(mine,)) for mine in bodies]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert serve.stop() == 0
    assert len(outcomes) == 40
    stored = keys(db)
    refused = 0
    for spans, reply in outcomes:
        if reply.status == 200:
            assert not reply.export_response().HasField("partial_success")
            assert span_keys(spans) <= stored
        else:
            assert reply.status == 503 and int(reply.headers["retry-after"]) > 0
            assert "the queue is full" in reply.status_message()
            assert not span_keys(spans) & stored
            refused += 1
    assert count(db) == 60 * (40 - refused)
    stats = json.loads(run_cli("stats", "--json", db=db, check=True).stdout)
    assert stats["spans_dropped"] == 0 and stats["spans"] == count(db)
    assert f"requests: {40 - refused} answered, {refused} refused while the queue was full" in serve.stderr
    no_traceback(serve)


def _agent_trace(calls: int) -> list[ReadableSpan]:
    """One agent run as the SDK ends it: ``calls`` LLM calls, a tool that fails, the root last."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource({"service.name": "agent"}), shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tests.serve")
    with tracer.start_as_current_span("agent.run"):
        for i in range(calls):
            with tracer.start_as_current_span(f"llm-call-{i}"):
                pass
        with tracer.start_as_current_span("tool") as tool:
            tool.set_status(SpanStatus(StatusCode.ERROR, "the tool failed"))
    provider.shutdown()
    return list(memory.get_finished_spans())


def _wait_for(serve: Serve, text: str) -> None:
    """Until serve's stderr says ``text`` (a minute at most: a bound, not a measure)."""
    deadline = time.monotonic() + 60
    while text not in serve.stderr:
        assert time.monotonic() < deadline and serve.proc.poll() is None, serve.stderr
        time.sleep(0.01)


def test_a_full_queue_is_a_503_the_official_exporter_retries_until_every_span_is_stored(
    tmp_path: Path,
) -> None:
    """The queue full (the database locked, 20 spans waiting), a 17-span agent run is refused whole
    with 503 and Retry-After; OTLPSpanExporter sends it again, and once the lock is gone every span is
    stored: `list` shows the trace with its real root and its error. (A partial success, which
    exporters never retry, lost the root and the error span, and the trace showed `ok`.)"""
    db = tmp_path / "full.db"
    trace = _agent_trace(15)
    assert len(trace) == 17 and trace[-1].name == "agent.run"
    filler = made_spans(20, name="filler")
    answers: list[tuple[int, str | None]] = []
    refused = threading.Event()

    def seen(response: requests.Response, *args: object, **kwargs: object) -> None:
        answers.append((response.status_code, response.headers.get("Retry-After")))
        if response.status_code == 503:
            refused.set()

    session = requests.Session()
    session.hooks["response"].append(seen)
    results: list[SpanExportResult] = []
    with Serve(db, env={"OTEL_BLACKBOX_MAX_QUEUE_SIZE": "20"}) as serve:
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # the writer can commit nothing: what it takes stays queued
        try:
            sender = threading.Thread(target=post, args=(serve.port, protobuf_body(filler)))
            sender.start()
            _wait_for(serve, "could not write to")  # the writer holds the filler's 20 spans: full
            exporter = OTLPSpanExporter(endpoint=serve.url, session=session)
            exporting = threading.Thread(target=lambda: results.append(exporter.export(trace)))
            exporting.start()
            assert refused.wait(60), answers
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        exporting.join(60)
        sender.join(60)
        assert serve.stop() == 0
    assert results == [SpanExportResult.SUCCESS]
    assert answers[0] == (503, "2") and answers[-1] == (200, None)
    assert keys(db) == span_keys(trace) | span_keys(filler)
    listed = json.loads(run_cli("list", "--json", db=db, check=True).stdout)
    (agent,) = [t for t in listed if t["trace_id"] == format(trace[-1].context.trace_id, "032x")]
    assert (agent["root_name"], agent["status"], agent["span_count"]) == ("agent.run", "error", 17)
    assert "spans: 37 stored, 0 already stored, 0 malformed" in serve.stderr
    no_traceback(serve)


def test_the_closing_line_counts_new_rows_not_spans_sent_again(tmp_path: Path) -> None:
    """The same request sent twice (as a retrying exporter may): one row a span, and the closing
    line says so."""
    db = tmp_path / "again.db"
    spans = made_spans(17, name="again")
    with Serve(db) as serve:
        exporter = OTLPSpanExporter(endpoint=serve.url)
        assert exporter.export(spans) == SpanExportResult.SUCCESS
        assert exporter.export(spans) == SpanExportResult.SUCCESS
        assert serve.stop() == 0
    assert count(db) == 17
    closing = serve.stderr.strip().splitlines()[-1]
    assert closing == (
        "otel-blackbox: stopped (spans: 17 stored, 17 already stored, 0 malformed; "
        "requests: 2 answered, 0 refused while the queue was full)"
    )


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "ctrl-c"])
def test_a_signal_while_exporters_send_answers_in_flight_and_keeps_every_span_answered_200(
    tmp_path: Path, signum: int
) -> None:
    db = tmp_path / "stop.db"
    per_thread = [[made_spans(200, name=f"s{t}b{b}") for b in range(20)] for t in range(3)]
    answered: list[ReadableSpan] = []
    enough = threading.Event()
    with Serve(db) as serve:

        def export(mine: list[list[ReadableSpan]]) -> None:
            exporter = OTLPSpanExporter(endpoint=serve.url, timeout=3)
            for batch in mine:
                if serve.proc.poll() is not None:
                    return
                if exporter.export(batch) == SpanExportResult.SUCCESS:
                    answered.extend(batch)
                    if len(answered) >= 6 * 200:
                        enough.set()

        threads = [threading.Thread(target=export, args=(mine,)) for mine in per_thread]
        for thread in threads:
            thread.start()
        assert enough.wait(120)
        code = serve.stop(signum)
        for thread in threads:
            thread.join(120)
    assert code == 0
    assert span_keys(answered) <= keys(db)
    assert "otel-blackbox: stopped (spans: " in serve.stderr
    no_traceback(serve)


def test_a_locked_database_is_answered_503_and_the_spans_follow(tmp_path: Path) -> None:
    """Not committed within the wait (another process holds the write lock): 503 with Retry-After;
    the writer keeps the batch and writes it once the lock goes, and sending it again adds nothing."""
    db = tmp_path / "locked.db"
    spans = made_spans(10, name="locked")
    with Serve(db) as serve:
        first = made_spans(2, name="first")
        assert post(serve.port, protobuf_body(first)).status == 200  # the file and its run exist
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            reply = post(serve.port, protobuf_body(spans))
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert reply.status == 503 and int(reply.headers["retry-after"]) > 0
        assert "not committed" in reply.status_message()
        again = post(serve.port, protobuf_body(spans))  # as the exporter retries
        assert again.status == 200
        assert serve.stop() == 0
    assert keys(db) == span_keys(spans) | span_keys(first)
    assert count(db) == 12
    no_traceback(serve)
