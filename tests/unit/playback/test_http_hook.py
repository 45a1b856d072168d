"""The HTTP hook beneath httpx and httpx2, against a real server on 127.0.0.1.

Every behaviour runs for httpx and httpx2, sync and async clients (the ``client`` fixture).
"""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import socket
import threading
import zlib
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, Protocol

import httpcore
import httpcore2
import httpx
import httpx2
import openai
import pytest
from fake_llm import FakeLLMServer
from opentelemetry.instrumentation.httpx import HTTPX2ClientInstrumentor, HTTPXClientInstrumentor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from otel_blackbox._playback.http.audience import current_interceptor, suspended
from otel_blackbox._playback.http.exchange import HttpRequest, HttpResponse, InterceptError, decode_body
from otel_blackbox._playback.http.hook import BlackboxHTTPInstrumentor
from otel_blackbox._playback.http.transport import (
    AsyncBlackboxTransport,
    AsyncHttpx2BlackboxTransport,
    BlackboxTransport,
    Httpx2BlackboxTransport,
)

Flavour = Literal["httpx", "httpx2"]
Mode = Literal["sync", "async"]
CLIENTS = [("httpx", "sync"), ("httpx", "async"), ("httpx2", "sync"), ("httpx2", "async")]

JSON_BODY = json.dumps({"hello": "world", "n": list(range(50))}).encode()
SSE_EVENTS = [b'data: {"i": 0}\n\n', b'data: {"i": 1}\n\n', b'data: {"i": 2}\n\n', b"data: [DONE]\n\n"]


# --- the server -------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, body: bytes, content_type: str, *extra: tuple[str, str]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.server.hits.append(("GET", self.path, b""))
        if self.path == "/json":
            self._send(JSON_BODY, "application/json")
        elif self.path == "/gzip":
            self._send(gzip.compress(JSON_BODY), "application/json", ("Content-Encoding", "gzip"))
        elif self.path == "/sse":
            self._sse()
        else:
            self.send_error(404)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.hits.append(("POST", self.path, body))
        self._send(b"echo:" + body, "application/octet-stream")

    def _sse(self) -> None:
        # The first event, then nothing until the test releases the rest: proof the client streams.
        release = self.server.release
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for index, event in enumerate(SSE_EVENTS):
                if index == 1:
                    release.wait(5)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except ConnectionError:
            pass  # the client closed the stream early


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.hits: list[tuple[str, str, bytes]] = []
        self.release = threading.Event()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{path}"


@pytest.fixture(scope="module")
def module_server() -> Iterator[_Server]:
    server = _Server()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def server(module_server: _Server) -> Iterator[_Server]:
    module_server.hits.clear()
    module_server.release = threading.Event()
    yield module_server
    module_server.release.set()  # never leave an SSE handler waiting


# --- the interceptor, the hook, the socket guard ----------------------------------------------


@dataclass
class Script:
    """An interceptor that serves or refuses as told and remembers what it saw."""

    serve: HttpResponse | None = None
    refuse: HttpResponse | None = None
    broken: bool = False
    intercepted: list[HttpRequest] = field(default_factory=list)
    observed: list[tuple[HttpRequest, HttpResponse]] = field(default_factory=list)

    def intercept(self, request: HttpRequest) -> HttpResponse | None:
        self.intercepted.append(request)
        if self.refuse is not None:
            raise InterceptError(self.refuse)
        if self.broken:
            raise ValueError("a bug in intercept")
        return self.serve

    def observe(self, request: HttpRequest, response: HttpResponse) -> None:
        self.observed.append((request, response))
        if self.broken:
            raise ValueError("a bug in observe")


@pytest.fixture
def script() -> Script:
    return Script()


@pytest.fixture
def hooked(script: Script) -> Iterator[Script]:
    BlackboxHTTPInstrumentor().instrument(interceptor=script)
    yield script
    BlackboxHTTPInstrumentor().uninstrument()


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every attempt to connect a socket fails, and is listed."""
    attempts: list[object] = []

    def refuse(*args: object, **kwargs: object) -> None:
        attempts.append(args)
        raise OSError("the test forbids network access")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    return attempts


# --- clients: one driver interface over httpx/httpx2, sync/async -------------------------------


@dataclass
class Got:
    status: int
    headers: dict[str, str]
    body: bytes  # as the caller reads it (decoded)


class Streamed(Protocol):
    def next(self) -> bytes | None: ...
    def close(self) -> None: ...


class Driver(Protocol):
    def send(self, method: str, url: str, body: bytes | None = None) -> Got: ...
    def stream(self, url: str) -> Streamed: ...
    def close(self) -> None: ...


SyncClient = httpx.Client | httpx2.Client
AsyncClient = httpx.AsyncClient | httpx2.AsyncClient
AnyResponse = httpx.Response | httpx2.Response


class SyncStreamed:
    def __init__(self, context: AbstractContextManager[AnyResponse]) -> None:
        self._context = context
        self._chunks = context.__enter__().iter_raw()

    def next(self) -> bytes | None:
        return next(self._chunks, None)

    def close(self) -> None:
        self._context.__exit__(None, None, None)


class SyncDriver:
    def __init__(self, client: SyncClient) -> None:
        self.client = client

    def send(self, method: str, url: str, body: bytes | None = None) -> Got:
        response = self.client.request(method, url, content=body)
        return Got(response.status_code, dict(response.headers), response.content)

    def stream(self, url: str) -> Streamed:
        return SyncStreamed(self.client.stream("GET", url))

    def close(self) -> None:
        self.client.close()


class AsyncStreamed:
    def __init__(self, loop: asyncio.AbstractEventLoop, context: AbstractAsyncContextManager[AnyResponse]):
        self._loop = loop
        self._context = context
        self._chunks: AsyncIterator[bytes] = loop.run_until_complete(context.__aenter__()).aiter_raw()

    def next(self) -> bytes | None:
        return self._loop.run_until_complete(anext(self._chunks, None))

    def close(self) -> None:
        self._loop.run_until_complete(getattr(self._chunks, "aclose")())  # noqa: B009 - typed as an iterator
        self._loop.run_until_complete(self._context.__aexit__(None, None, None))


class AsyncDriver:
    """An async client driven step by step from sync test code, on its own event loop."""

    def __init__(self, client: AsyncClient) -> None:
        self.client = client
        self.loop = asyncio.new_event_loop()

    async def _send(self, method: str, url: str, body: bytes | None) -> Got:
        response = await self.client.request(method, url, content=body)
        return Got(response.status_code, dict(response.headers), response.content)

    def send(self, method: str, url: str, body: bytes | None = None) -> Got:
        return self.loop.run_until_complete(self._send(method, url, body))

    def stream(self, url: str) -> Streamed:
        return AsyncStreamed(self.loop, self.client.stream("GET", url))

    def close(self) -> None:
        self.loop.run_until_complete(self.client.aclose())
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()


def make_driver(flavour: Flavour, mode: Mode) -> Driver:
    module = httpx if flavour == "httpx" else httpx2
    if mode == "sync":
        return SyncDriver(module.Client(trust_env=False))
    return AsyncDriver(module.AsyncClient(trust_env=False))


@pytest.fixture(params=CLIENTS, ids=["-".join(c) for c in CLIENTS])
def client(request: pytest.FixtureRequest) -> Iterator[Driver]:
    driver = make_driver(*request.param)
    yield driver
    driver.close()


def headers_of(response: HttpResponse) -> dict[str, str]:
    return {k.lower(): v for k, v in response.headers}


def json_response(status: int, payload: object) -> HttpResponse:
    return HttpResponse(status, [("Content-Type", "application/json")], json.dumps(payload).encode())


# --- pass-through -----------------------------------------------------------------------------


def test_pass_through_sends_the_body_and_observes_the_exchange(
    hooked: Script, server: _Server, client: Driver
) -> None:
    got = client.send("POST", server.url("/echo"), b'{"q": 1}')

    assert got.status == 200 and got.body == b'echo:{"q": 1}'
    assert server.hits == [("POST", "/echo", b'{"q": 1}')]  # the body was read and still sent
    [seen] = hooked.intercepted
    assert (seen.method, seen.url, seen.body) == ("POST", server.url("/echo"), b'{"q": 1}')
    [(request, response)] = hooked.observed
    assert request is seen
    assert response.status == 200 and response.body == b'echo:{"q": 1}'
    assert headers_of(response)["content-type"] == "application/octet-stream"


def test_pass_through_observes_a_gzip_body_decoded(hooked: Script, server: _Server, client: Driver) -> None:
    got = client.send("GET", server.url("/gzip"))

    assert got.body == JSON_BODY and got.headers["content-encoding"] == "gzip"  # the caller sees the wire
    [(_, response)] = hooked.observed
    assert response.body == JSON_BODY
    headers = headers_of(response)
    assert "content-encoding" not in headers and headers["content-length"] == str(len(JSON_BODY))


def test_an_sse_stream_streams_and_is_observed_after_its_last_chunk(
    hooked: Script, server: _Server, client: Driver
) -> None:
    stream = client.stream(server.url("/sse"))
    first = stream.next()
    assert first == SSE_EVENTS[0]  # arrived while the server still holds the rest back
    assert hooked.observed == []
    server.release.set()
    rest = []
    while (chunk := stream.next()) is not None:
        assert hooked.observed == []  # not before the end
        rest.append(chunk)
    assert b"".join([first, *rest]) == b"".join(SSE_EVENTS)
    [(_, response)] = hooked.observed
    assert response.body == b"".join(SSE_EVENTS)
    stream.close()
    assert len(hooked.observed) == 1


def test_an_sse_stream_closed_early_is_observed_once_with_what_was_read(
    hooked: Script, server: _Server, client: Driver
) -> None:
    stream = client.stream(server.url("/sse"))
    assert stream.next() == SSE_EVENTS[0]
    stream.close()

    [(_, response)] = hooked.observed
    assert response.status == 200 and response.body == SSE_EVENTS[0]


# --- serving ----------------------------------------------------------------------------------


def test_the_socket_guard_catches_a_real_request(no_network: list[object], client: Driver) -> None:
    with pytest.raises((httpx.ConnectError, httpx2.ConnectError)):
        client.send("GET", "http://127.0.0.1:9/json")
    assert no_network


def test_a_served_response_opens_no_socket(hooked: Script, no_network: list[object], client: Driver) -> None:
    hooked.serve = json_response(201, {"served": True})

    got = client.send("POST", "http://127.0.0.1:9/v1/chat", b"{}")

    assert got.status == 201 and json.loads(got.body) == {"served": True}
    assert got.headers["content-length"] == str(len(got.body))
    assert no_network == []
    assert [r.body for r in hooked.intercepted] == [b"{}"]
    assert hooked.observed == []  # observe is for what went out


def test_a_served_sse_body_arrives_in_chunks(
    hooked: Script, no_network: list[object], client: Driver
) -> None:
    hooked.serve = HttpResponse(200, [("content-type", "text/event-stream")], b"".join(SSE_EVENTS))

    stream = client.stream("http://127.0.0.1:9/sse")
    chunks = []
    while (chunk := stream.next()) is not None:
        chunks.append(chunk)
    stream.close()

    assert chunks == SSE_EVENTS
    assert no_network == []


def test_an_intercept_error_is_served(hooked: Script, no_network: list[object], client: Driver) -> None:
    hooked.refuse = json_response(400, {"error": {"message": "not recorded"}})

    got = client.send("GET", "http://127.0.0.1:9/anything")

    assert got.status == 400 and json.loads(got.body) == {"error": {"message": "not recorded"}}
    assert no_network == []


def test_a_broken_interceptor_never_breaks_the_host(
    hooked: Script, server: _Server, client: Driver, caplog: pytest.LogCaptureFixture
) -> None:
    hooked.broken = True
    caplog.set_level(logging.WARNING, logger="otel_blackbox._playback.http.hook")

    first = client.send("GET", server.url("/json"))
    second = client.send("GET", server.url("/json"))

    assert first.body == second.body == JSON_BODY  # intercept failed: the requests went out
    assert len(hooked.observed) == 2
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2  # once for intercept, once for observe, not once a request
    assert any("intercept" in m for m in messages) and any("observe" in m for m in messages)


# --- OpenTelemetry's httpx instrumentors, before and after the hook -----------------------------


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


def _instrument_otel(exporter: InMemorySpanExporter) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    HTTPXClientInstrumentor().instrument(tracer_provider=provider)
    HTTPX2ClientInstrumentor().instrument(tracer_provider=provider)


@pytest.fixture(params=["otel-first", "hook-first"])
def otel_and_hook(
    request: pytest.FixtureRequest, script: Script, exporter: InMemorySpanExporter
) -> Iterator[Script]:
    if request.param == "otel-first":
        _instrument_otel(exporter)
    BlackboxHTTPInstrumentor().instrument(interceptor=script)
    if request.param == "hook-first":
        _instrument_otel(exporter)
    yield script
    BlackboxHTTPInstrumentor().uninstrument()
    HTTPXClientInstrumentor().uninstrument()
    HTTPX2ClientInstrumentor().uninstrument()


def _client_span(exporter: InMemorySpanExporter) -> ReadableSpan:
    [span] = [s for s in exporter.get_finished_spans() if s.kind is SpanKind.CLIENT]
    return span


def _status_code(span: ReadableSpan) -> object:
    attributes = span.attributes or {}
    return attributes.get("http.response.status_code", attributes.get("http.status_code"))


def test_the_otel_client_span_wraps_a_pass_through(
    otel_and_hook: Script, exporter: InMemorySpanExporter, server: _Server, client: Driver
) -> None:
    assert client.send("GET", server.url("/json")).body == JSON_BODY

    assert _status_code(_client_span(exporter)) == 200
    assert len(otel_and_hook.observed) == 1


def test_the_otel_client_span_wraps_a_served_response(
    otel_and_hook: Script, exporter: InMemorySpanExporter, no_network: list[object], client: Driver
) -> None:
    otel_and_hook.serve = json_response(203, {"served": True})

    assert client.send("GET", "http://127.0.0.1:9/json").status == 203

    assert _status_code(_client_span(exporter)) == 203
    assert no_network == []
    # The OTel span is outside the hook: the interceptor sees the trace context it propagates.
    assert otel_and_hook.intercepted[0].header("traceparent")


# --- install / uninstall ------------------------------------------------------------------------

POOL_METHODS = [
    (httpcore.ConnectionPool, "handle_request"),
    (httpcore.AsyncConnectionPool, "handle_async_request"),
    (httpcore2.ConnectionPool, "handle_request"),
    (httpcore2.AsyncConnectionPool, "handle_async_request"),
]


def test_uninstrument_restores_the_pool_methods_and_instrument_twice_is_harmless(
    server: _Server, client: Driver
) -> None:
    originals = [owner.__dict__[name] for owner, name in POOL_METHODS]
    first, second = Script(), Script()

    BlackboxHTTPInstrumentor().instrument(interceptor=first)
    patched = [owner.__dict__[name] for owner, name in POOL_METHODS]
    assert all(p is not o and p.__wrapped__ is o for p, o in zip(patched, originals, strict=True))
    BlackboxHTTPInstrumentor().instrument(interceptor=second)  # swaps the interceptor, patches nothing
    assert [owner.__dict__[name] for owner, name in POOL_METHODS] == patched
    assert current_interceptor() is second
    client.send("GET", server.url("/json"))
    assert len(second.observed) == 1 and first.observed == []

    BlackboxHTTPInstrumentor().uninstrument()
    assert [owner.__dict__[name] for owner, name in POOL_METHODS] == originals
    assert current_interceptor() is None
    client.send("GET", server.url("/json"))
    assert len(second.observed) == 1


def test_instrument_needs_an_interceptor() -> None:
    with pytest.raises(TypeError, match="interceptor"):
        BlackboxHTTPInstrumentor().instrument()
    assert current_interceptor() is None and not BlackboxHTTPInstrumentor().is_instrumented_by_opentelemetry


def test_requests_made_while_suspended_are_not_seen(hooked: Script, server: _Server, client: Driver) -> None:
    with suspended():
        client.send("GET", server.url("/json"))
    assert hooked.intercepted == [] and hooked.observed == []


# --- custom transports ------------------------------------------------------------------------


def _httpx_mock(request: httpx.Request) -> httpx.Response:
    return httpx.Response(
        200, headers={"Content-Encoding": "gzip"}, content=gzip.compress(b"mock:" + request.read())
    )


def _httpx2_mock(request: httpx2.Request) -> httpx2.Response:
    body = gzip.compress(b"mock:" + request.read())
    return httpx2.Response(200, headers={"Content-Encoding": "gzip"}, content=body)


def make_mock_driver(flavour: Flavour, mode: Mode, script: Script) -> Driver:
    if flavour == "httpx":
        mock = httpx.MockTransport(_httpx_mock)
        if mode == "sync":
            return SyncDriver(httpx.Client(transport=BlackboxTransport(mock, script)))
        return AsyncDriver(httpx.AsyncClient(transport=AsyncBlackboxTransport(mock, script)))
    mock2 = httpx2.MockTransport(_httpx2_mock)
    if mode == "sync":
        return SyncDriver(httpx2.Client(transport=Httpx2BlackboxTransport(mock2, script)))
    return AsyncDriver(httpx2.AsyncClient(transport=AsyncHttpx2BlackboxTransport(mock2, script)))


@pytest.mark.parametrize(("flavour", "mode"), CLIENTS, ids=["-".join(c) for c in CLIENTS])
def test_a_wrapped_mock_transport_is_intercepted(flavour: Flavour, mode: Mode, script: Script) -> None:
    driver = make_mock_driver(flavour, mode, script)
    try:
        got = driver.send("POST", "http://mock.test/x", b"ping")
        assert got.body == b"mock:ping"
        [(request, response)] = script.observed
        assert request.body == b"ping" and response.body == b"mock:ping"
        assert "content-encoding" not in headers_of(response)

        script.serve = HttpResponse(200, [("content-type", "text/event-stream")], b"".join(SSE_EVENTS))
        stream = driver.stream("http://mock.test/sse")
        chunks = []
        while (chunk := stream.next()) is not None:
            chunks.append(chunk)
        stream.close()
        assert chunks == SSE_EVENTS and len(script.observed) == 1
    finally:
        driver.close()


def test_a_wrapped_transport_uses_the_hooks_interceptor_and_no_second_layer(
    hooked: Script, server: _Server
) -> None:
    # A real transport under the wrapper: its pool must not intercept the same request again.
    with httpx.Client(transport=BlackboxTransport(httpx.HTTPTransport())) as wrapped:
        assert wrapped.get(server.url("/json")).content == JSON_BODY
    assert len(hooked.intercepted) == 1 and len(hooked.observed) == 1


# --- the real openai SDK ----------------------------------------------------------------------

CANNED = {
    "id": "chatcmpl-canned",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "canned answer", "refusal": None},
            "logprobs": None,
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
}
MESSAGES: Any = [{"role": "user", "content": "Hello there"}]


def test_openai_sdk_pass_through_is_observed(hooked: Script, fake_llm: FakeLLMServer) -> None:
    with openai.OpenAI(base_url=fake_llm.openai_base_url, api_key="sk-fake", max_retries=0) as sdk:
        completion = sdk.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
        chunks = list(sdk.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True))

    [(request, response), (stream_request, stream_response)] = hooked.observed
    assert request.url == fake_llm.openai_base_url + "/chat/completions"
    assert json.loads(request.body)["messages"] == MESSAGES
    body = json.loads(response.body)
    assert body["object"] == "chat.completion" and body["id"] == completion.id
    assert body["choices"][0]["message"]["content"] == completion.choices[0].message.content
    assert json.loads(stream_request.body)["stream"] is True
    assert stream_response.body.endswith(b"data: [DONE]\n\n")
    assert stream_response.body.count(b"data: {") == len(chunks)


def test_openai_sdk_is_served_with_the_server_stopped(hooked: Script, no_network: list[object]) -> None:
    with FakeLLMServer() as stopped:
        base_url = stopped.openai_base_url
    hooked.serve = json_response(200, CANNED)

    with openai.OpenAI(base_url=base_url, api_key="sk-fake", max_retries=0) as sdk:
        completion = sdk.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)

    assert completion.id == "chatcmpl-canned" and completion.choices[0].message.content == "canned answer"
    assert no_network == []
    assert json.loads(hooked.intercepted[0].body)["messages"] == MESSAGES


# --- decoding -----------------------------------------------------------------------------------


def test_decode_body_undoes_gzip_and_both_deflate_framings() -> None:
    for coding, encoded in [
        ("gzip", gzip.compress(b"abc")),
        ("deflate", zlib.compress(b"abc")),
        ("deflate", zlib.compress(b"abc")[2:-4]),  # raw deflate, as some servers send it
    ]:
        headers, body = decode_body([("Content-Encoding", coding), ("Content-Length", "99")], encoded)
        assert (headers, body) == ([("content-length", "3")], b"abc")


def test_decode_body_keeps_what_it_cannot_decode() -> None:
    brotli = [("content-encoding", "br")]
    assert decode_body(brotli, b"\x8b\x00") == (brotli, b"\x8b\x00")
    # Only the outer coding is known: it is removed, the inner one stays, named.
    headers, body = decode_body([("content-encoding", "br, gzip")], gzip.compress(b"brotli bytes"))
    assert (headers, body) == ([("content-encoding", "br")], b"brotli bytes")
    # A truncated gzip body (a stream closed early) decodes as far as it goes.
    _, partial = decode_body([("content-encoding", "gzip")], gzip.compress(JSON_BODY)[:-20])
    assert JSON_BODY.startswith(partial) and len(partial) > len(JSON_BODY) // 2
