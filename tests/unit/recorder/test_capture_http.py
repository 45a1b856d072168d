"""HTTP capture in the processor (OTEL_BLACKBOX_CAPTURE_HTTP): every exchange a blackbox.http span.

Real OTel SDK, real BlackboxSpanProcessor and SQLite file, the real openai and anthropic SDKs against
the fake provider (examples/fake_llm.py), and a real HTTP server on 127.0.0.1 standing in for the
API a tool calls, through httpx and httpx2, sync and async. The database is read back as the CLI
reads it (store.queries), and its bytes are searched for what must never be there.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import logging
import os
import shutil
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

import anthropic
import anthropic_agent  # examples/ is on sys.path (conftest.py)
import httpcore
import httpcore2
import httpx
import httpx2
import openai
import pytest
import weather_agent
from fake_llm import FAIL_MODEL, FakeLLMServer
from helpers import FRAMEWORK_INSTRUMENTORS_OFF, Recorder, blocked_network
from openai.types.responses import FunctionToolParam, Response, ResponseInputItemParam
from opentelemetry.instrumentation.utils import suppress_instrumentation
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NoOpTracer, Tracer

import otel_blackbox
from otel_blackbox import BlackboxConfig
from otel_blackbox._cassette.captured import captured_exchange, captured_model_call, captured_replayed
from otel_blackbox._cassette.from_spans.cassette import cassette_from_spans
from otel_blackbox._cassette.io import load_cassette, save_cassette
from otel_blackbox._cost.usage import without_usage
from otel_blackbox._playback.http import audience, hook
from otel_blackbox._playback.http.exchange import ExchangeWatch, HttpRequest, HttpResponse
from otel_blackbox._playback.http.hook import BlackboxHTTPInstrumentor
from otel_blackbox._recorder import capture
from otel_blackbox._spans.redact import TRUNCATION_KEY
from otel_blackbox._spans.semconv import (
    ATTR_HTTP_METHOD,
    ATTR_HTTP_REQUEST_BODY,
    ATTR_HTTP_REQUEST_BODY_ENCODING,
    ATTR_HTTP_RESPONSE_BODY,
    ATTR_HTTP_RESPONSE_BODY_ENCODING,
    ATTR_HTTP_RESPONSE_CONTENT_TYPE,
    ATTR_HTTP_STATUS,
    ATTR_HTTP_URL,
    ATTR_MODEL_INPUT,
    ATTR_MODEL_OUTPUT,
    ATTR_MODEL_PROVIDER,
    ATTR_SESSION_MODE,
    HTTP_SPAN_NAME,
)
from otel_blackbox._store.connection import connect_reader
from otel_blackbox._store.queries import SpanRecord, iter_spans
from otel_blackbox._wire.anthropic.translation import AnthropicMessages
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.openai_chat.translation import OpenAIChat
from otel_blackbox._wire.openai_responses.translation import OpenAIResponses
from otel_blackbox._wire.protocol import Provider
from otel_blackbox.errors import ConfigError

KEY = "sk-test-capture-0123456789abcdef"
QUESTION = "What's the weather in Lisbon, and the 2 day forecast? I need both."
CLIENTS = [("httpx", "sync"), ("httpx", "async"), ("httpx2", "sync"), ("httpx2", "async")]
MakeRecorder = Callable[..., Recorder]


# --- the API a tool calls -----------------------------------------------------------------------


class _ToolHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ToolAPI

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        self.server.hits.append(("GET", url.path))
        if url.path == "/weather":
            city = parse_qs(url.query)["city"][0]
            payload = {"city": city, "temperature_c": 8 + sum(map(ord, city)) % 17, "conditions": "fog"}
            self._send(200, json.dumps(payload).encode(), "application/json")
        elif url.path == "/big":
            self._send(200, b"x" * int(parse_qs(url.query)["n"][0]), "text/plain")
        else:
            self._send(404, b'{"error": "not found"}', "application/json")

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.hits.append(("POST", path))
        if path == "/notes":
            self._send(201, json.dumps({"saved": json.loads(body)}).encode(), "application/json")
        elif path == "/binary":
            self._send(200, body[::-1], "application/octet-stream")
        else:  # e.g. /v1/chat/completions: a "model" that answers with something that is not JSON
            self._send(200, b"this is not JSON", "text/plain")


class ToolAPI(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _ToolHandler)
        self.hits: list[tuple[str, str]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture(scope="module")
def tool_api() -> Iterator[ToolAPI]:
    server = ToolAPI()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


class HttpWeatherTools(weather_agent.WeatherTools):
    """The weather agent's tools, with get_weather answered by the tool API over httpx."""

    def __init__(self, base_url: str) -> None:
        super().__init__()
        self.weather_url = f"{base_url}/weather"

    def get_weather(self, city: str) -> str:
        return httpx.get(self.weather_url, params={"city": city}).text


# --- helpers --------------------------------------------------------------------------------------


def stored(rec: Recorder) -> list[SpanRecord]:
    """Every span on disk, captured exchanges in the order they completed."""
    rec.flush()
    conn = connect_reader(rec.db_path)
    try:
        return sorted(iter_spans(conn), key=lambda s: (s.end_ns or 0, s.start_ns))
    finally:
        conn.close()


def exchanges(rec: Recorder) -> list[SpanRecord]:
    return [s for s in stored(rec) if s.name == HTTP_SPAN_NAME]


def capturing(make_recorder: MakeRecorder, **config: Any) -> Recorder:
    return make_recorder(capture_http=True, **config)


def pool_patched() -> bool:
    """Whether the hook's wrapper sits on the httpcore / httpcore2 pools (functools.wraps marks it)."""
    pools = (httpcore.ConnectionPool, httpcore2.ConnectionPool)
    return any(hasattr(pool.__dict__["handle_request"], "__wrapped__") for pool in pools)


def get_and_post(flavour: str, mode: str, base: str) -> tuple[bytes, bytes]:
    """A GET and a POST, as a tool would make them, through one client of the given kind."""
    lib: Any = httpx if flavour == "httpx" else httpx2
    note = {"note": "café ☕ at 9", "tags": ["a", "b"]}
    if mode == "sync":
        with lib.Client() as client:
            got = client.get(f"{base}/weather", params={"city": "Lisbon"})
            posted = client.post(f"{base}/notes", json=note)
            return got.content, posted.content

    async def run() -> tuple[bytes, bytes]:
        async with lib.AsyncClient() as client:
            got = await client.get(f"{base}/weather", params={"city": "Lisbon"})
            posted = await client.post(f"{base}/notes", json=note)
            return got.content, posted.content

    return asyncio.run(run())


# --- the model calls of three APIs, JSON and streamed ------------------------------------------------

PROVIDERS: dict[str, Provider] = {
    "chat": OpenAIChat(),
    "responses": OpenAIResponses(),
    "anthropic": AnthropicMessages(),
}
RESPONSES_TOOLS: list[FunctionToolParam] = [
    {
        "type": "function",
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        "strict": False,
    },
    {
        "type": "function",
        "name": "get_forecast",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        },
        "strict": False,
    },
]


def _respond(client: openai.OpenAI, history: list[ResponseInputItemParam], stream: bool) -> Response:
    if not stream:
        return client.responses.create(model="gpt-4o-mini", input=history, tools=RESPONSES_TOOLS)
    with client.responses.stream(model="gpt-4o-mini", input=history, tools=RESPONSES_TOOLS) as events:
        return events.get_final_response()


def _responses_agent(client: openai.OpenAI, tracer: Tracer, stream: bool) -> str:
    """Two rounds of the Responses API: the model asks for tools, then answers with their results."""
    history: list[ResponseInputItemParam] = [{"role": "user", "content": QUESTION}]
    with tracer.start_as_current_span("responses-agent"):
        first = _respond(client, history, stream)
        history += [cast(ResponseInputItemParam, item.to_dict()) for item in first.output]
        for item in first.output:
            if item.type == "function_call":
                history.append({"type": "function_call_output", "call_id": item.call_id, "output": "mild"})
        return _respond(client, history, stream).output_text


def run_model_agent(api: str, port: int, tracer: Tracer, stream: bool, tools: Any = None) -> str:
    """The agent of one API against the fake provider on ``port`` (which may be gone in a replay)."""
    if api == "anthropic":
        with anthropic.Anthropic(
            base_url=f"http://127.0.0.1:{port}", api_key=KEY, max_retries=0, open_telemetry=False
        ) as claude:
            return anthropic_agent.run_agent(claude, tracer, QUESTION, stream=stream, tools=tools)[0]
    with openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY, max_retries=0) as client:
        if api == "responses":
            return _responses_agent(client, tracer, stream)
        return weather_agent.run_agent(client, tracer, QUESTION, stream=stream, tools=tools)[0]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("api", list(PROVIDERS))
def test_model_calls_are_stored_with_their_bodies_and_neutral_payloads(
    api: str, stream: bool, make_recorder: MakeRecorder, fake_llm: FakeLLMServer
) -> None:
    rec = capturing(make_recorder)
    first_request = len(fake_llm.requests)
    answer = run_model_agent(api, fake_llm.port, rec.tracer, stream)
    received = fake_llm.requests[first_request:]  # (path, JSON body) as the provider received them
    spans = stored(rec)
    (agent,) = [s for s in spans if s.name.endswith("agent")]
    calls = [s for s in spans if s.name == HTTP_SPAN_NAME]
    assert len(calls) == len(received) >= 2  # a tool round, then the answer

    provider, ids = PROVIDERS[api], CallIds()
    for span, (path, body) in zip(calls, received, strict=True):
        attributes = span.attributes
        assert attributes[ATTR_HTTP_METHOD] == "POST"
        assert attributes[ATTR_HTTP_URL] == f"http://127.0.0.1:{fake_llm.port}{path}"
        assert attributes[ATTR_HTTP_STATUS] == 200
        assert json.loads(attributes[ATTR_HTTP_REQUEST_BODY]) == body  # what went on the wire
        expected_type = "text/event-stream" if stream else "application/json"
        assert attributes[ATTR_HTTP_RESPONSE_CONTENT_TYPE].startswith(expected_type)
        assert ATTR_HTTP_REQUEST_BODY_ENCODING not in attributes
        assert ATTR_HTTP_RESPONSE_BODY_ENCODING not in attributes
        assert attributes[ATTR_MODEL_PROVIDER] == provider.name
        # The neutral payloads are the translation of those very bytes, ids numbered across the run.
        model_call = captured_model_call(span)
        assert model_call is not None
        response_body = attributes[ATTR_HTTP_RESPONSE_BODY].encode()
        assert model_call[0] == provider.model_input(body, ids)
        output = provider.model_output(response_body, streamed=stream, ids=ids)
        usage = provider.usage(response_body, streamed=stream)
        assert usage is not None and model_call[1] == {**output, "tokenUsage": usage}
        # A child of the span current when the request was sent, in its trace; kind CLIENT, no status.
        assert (span.trace_id, span.parent_span_id) == (agent.trace_id, agent.span_id)
        assert (span.span_kind, span.status) == ("CLIENT", "unset")
        assert span.start_ns <= (span.end_ns or 0)

    first_output, last_output = (captured_model_call(s)[1] for s in (calls[0], calls[-1]))  # type: ignore[index]
    assert first_output["type"] == "tool_calls"
    assert first_output["calls"][0]["toolCallId"] == "call-0"
    assert without_usage(last_output) == {"type": "final_answer", "text": answer}
    for span in calls:  # provider ids never reach the neutral payloads
        assert (
            "call_" not in span.attributes[ATTR_MODEL_OUTPUT]
            and "toolu_" not in span.attributes[ATTR_MODEL_INPUT]
        )


def test_tool_call_ids_number_on_across_a_long_life_with_bounded_memory(
    make_recorder: MakeRecorder, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(capture, "_MAX_REMEMBERED_IDS", 2)
    rec = capturing(make_recorder)
    with openai.OpenAI(base_url=fake_llm.openai_base_url, api_key=KEY, max_retries=0) as client:
        for _ in range(3):  # each answer asks for two tools: six provider ids in all
            client.chat.completions.create(
                model="gpt-4o-mini",
                messages=[{"role": "user", "content": QUESTION}],
                tools=weather_agent.TOOLS,
            )
    outputs = [captured_model_call(s)[1] for s in exchanges(rec)]  # type: ignore[index]
    numbered = [call["toolCallId"] for output in outputs for call in output["calls"]]
    assert numbered == [f"call-{i}" for i in range(6)]  # never reused, though the oldest were forgotten
    assert rec.processor._capture is not None and len(rec.processor._capture._ids.to_neutral) == 2


# --- tool calls over HTTP -------------------------------------------------------------------------


@pytest.mark.parametrize(("flavour", "mode"), CLIENTS)
def test_tool_calls_over_http_are_stored_with_their_bodies(
    flavour: str, mode: str, make_recorder: MakeRecorder, tool_api: ToolAPI
) -> None:
    rec = capturing(make_recorder)
    with rec.tracer.start_as_current_span("tool"):
        got, posted = get_and_post(flavour, mode, tool_api.url)
    spans = stored(rec)
    (tool,) = [s for s in spans if s.name == "tool"]
    get_span, post_span = [s for s in spans if s.name == HTTP_SPAN_NAME]
    for span in (get_span, post_span):
        assert (span.trace_id, span.parent_span_id, span.span_kind) == (tool.trace_id, tool.span_id, "CLIENT")
        assert ATTR_MODEL_INPUT not in span.attributes  # not a model call

    assert captured_exchange(get_span) == {
        "event": "http_exchange",
        "request": {"method": "GET", "url": f"{tool_api.url}/weather?city=Lisbon", "body": ""},
        "response": {"status": 200, "contentType": "application/json", "body": got.decode()},
    }
    post = captured_exchange(post_span)
    assert post is not None
    assert json.loads(post["request"]["body"]) == {"note": "café ☕ at 9", "tags": ["a", "b"]}
    assert post["request"]["method"] == "POST" and post["request"]["url"] == f"{tool_api.url}/notes"
    assert post["response"] == {"status": 201, "contentType": "application/json", "body": posted.decode()}
    assert captured_model_call(get_span) is None and not captured_replayed(get_span)


def test_a_request_outside_any_span_starts_a_trace_of_its_own(
    make_recorder: MakeRecorder, tool_api: ToolAPI
) -> None:
    rec = capturing(make_recorder)
    httpx2.get(f"{tool_api.url}/missing")
    (span,) = exchanges(rec)
    assert span.parent_span_id is None and int(span.trace_id, 16) != 0
    # A 404 is the tool API's answer, recorded as such; the span itself did not fail.
    assert span.attributes[ATTR_HTTP_STATUS] == 404 and span.status == "unset"


def test_a_binary_body_is_stored_as_base64_and_read_back(
    make_recorder: MakeRecorder, tool_api: ToolAPI
) -> None:
    rec = capturing(make_recorder)
    data = bytes(range(256))
    assert httpx.post(f"{tool_api.url}/binary", content=data).content == data[::-1]
    (span,) = exchanges(rec)
    assert span.attributes[ATTR_HTTP_REQUEST_BODY_ENCODING] == "base64"
    assert span.attributes[ATTR_HTTP_RESPONSE_BODY_ENCODING] == "base64"
    exchange = captured_exchange(span)
    assert exchange is not None
    assert base64.b64decode(exchange["request"]["body"]["base64"]) == data
    assert base64.b64decode(exchange["response"]["body"]["base64"]) == data[::-1]
    assert exchange["response"]["contentType"] == "application/octet-stream"


def test_a_body_past_max_attribute_bytes_is_a_truncation_marker(
    make_recorder: MakeRecorder, tool_api: ToolAPI
) -> None:
    rec = capturing(make_recorder, max_attribute_bytes=1024)
    assert len(httpx.get(f"{tool_api.url}/big", params={"n": 5000}).content) == 5000
    assert httpx2.post(f"{tool_api.url}/notes", json={"text": "y" * 3000}).status_code == 201
    got, posted = exchanges(rec)
    marker = json.loads(got.attributes[ATTR_HTTP_RESPONSE_BODY])
    assert (
        marker[TRUNCATION_KEY] is True and marker["original_bytes"] == 5000 and marker["head"] == "x" * 1024
    )
    assert json.loads(posted.attributes[ATTR_HTTP_REQUEST_BODY])["original_bytes"] > 3000
    # A truncated body cannot be served again: no replayable exchange is made of it.
    assert captured_exchange(got) is None and captured_exchange(posted) is None


def test_a_model_call_that_cannot_be_translated_keeps_its_raw_bodies(
    make_recorder: MakeRecorder, tool_api: ToolAPI
) -> None:
    rec = capturing(make_recorder)
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    assert httpx2.post(f"{tool_api.url}/v1/chat/completions", json=request).text == "this is not JSON"
    (span,) = exchanges(rec)
    assert span.attributes[ATTR_HTTP_RESPONSE_BODY] == "this is not JSON"
    assert json.loads(span.attributes[ATTR_HTTP_REQUEST_BODY]) == request
    assert not {ATTR_MODEL_INPUT, ATTR_MODEL_OUTPUT} & set(span.attributes)
    assert span.attributes[ATTR_MODEL_PROVIDER] == "openai-chat"  # a model endpoint's, all the same
    assert captured_model_call(span) is None and captured_exchange(span) is not None
    # Neither a model step nor an exchange a replay would serve back for a model request.
    assert [s.type for s in cassette_from_spans([span]).steps] == ["metadata"]


def test_a_model_call_the_provider_refused_is_named_and_is_not_a_cassette_step(
    make_recorder: MakeRecorder, fake_llm: FakeLLMServer
) -> None:
    rec = capturing(make_recorder)
    client = openai.OpenAI(base_url=fake_llm.openai_base_url, api_key="sk-fake", max_retries=0)
    with client, pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model=FAIL_MODEL, messages=[{"role": "user", "content": "hi"}])
    (span,) = exchanges(rec)
    assert span.attributes[ATTR_HTTP_STATUS] == 500
    assert span.attributes[ATTR_MODEL_PROVIDER] == "openai-chat"
    assert captured_model_call(span) is None
    assert [s.type for s in cassette_from_spans([span]).steps] == ["metadata"]


# --- what is never stored ------------------------------------------------------------------------


def test_no_header_value_reaches_the_database_even_with_redaction_off(
    make_recorder: MakeRecorder, tool_api: ToolAPI, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    """With nothing masked, only the absence of headers keeps these out of the file."""
    rec = capturing(make_recorder, redact=False)
    secrets = {
        "Authorization": "Bearer tok-authorization-0000111122223333",
        "x-api-key": "key-x-api-key-4444555566667777",
        "Cookie": "session=cookie-88889999aaaabbbb",
        "X-Custom-Header": "header-marker-ccccddddeeeeffff",
    }
    with rec.tracer.start_as_current_span("run"):
        httpx.get(f"{tool_api.url}/weather", params={"city": "Porto"}, headers=secrets)
        httpx2.post(f"{tool_api.url}/notes", json={"note": "body-marker-visible"}, headers=secrets)
        with openai.OpenAI(base_url=fake_llm.openai_base_url, api_key=KEY, max_retries=0) as client:
            client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}])
        with anthropic.Anthropic(
            base_url=fake_llm.anthropic_base_url,
            api_key=KEY + "-anthropic",
            max_retries=0,
            open_telemetry=False,
        ) as claude:
            claude.messages.create(model="m", max_tokens=64, messages=[{"role": "user", "content": "Hi"}])
    assert len(exchanges(rec)) == 4
    files = [p for p in tmp_path.iterdir() if p.name.startswith(rec.db_path.name)]
    data = b"".join(p.read_bytes() for p in files)
    assert b"body-marker-visible" in data  # the control: the bodies are there, unmasked
    for value in [*secrets.values(), KEY, "Bearer"]:
        assert value.encode() not in data, value


def test_capture_is_off_by_default_and_stores_nothing_extra(
    make_recorder: MakeRecorder, tool_api: ToolAPI
) -> None:
    assert BlackboxConfig().capture_http is False
    rec = make_recorder()
    with rec.tracer.start_as_current_span("tool"):
        get_and_post("httpx2", "sync", tool_api.url)
    assert [s.name for s in stored(rec)] == ["tool"]


PROGRAM = """
import json, sys
from opentelemetry.sdk.trace import TracerProvider
from otel_blackbox import BlackboxSpanProcessor

provider = TracerProvider()
provider.add_span_processor(BlackboxSpanProcessor(sys.argv[1]))
watched = ("otel_blackbox._playback.http", "otel_blackbox._recorder.capture", "otel_blackbox._wire",
           "httpcore", "httpx")
before = sorted(m for m in sys.modules if m.startswith(watched))
import httpcore, httpx
patched = hasattr(httpcore.ConnectionPool.__dict__["handle_request"], "__wrapped__")
with provider.get_tracer("t").start_as_current_span("tool"):
    httpx.get(sys.argv[2]).raise_for_status()
provider.shutdown()
print(json.dumps({"before": before, "patched": patched}))
"""


@pytest.mark.parametrize("setting", ["", "false", "true"])
def test_a_fresh_process_loads_the_hook_only_when_capture_is_on(
    setting: str, tmp_path: Path, tool_api: ToolAPI
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    if setting:
        env["OTEL_BLACKBOX_CAPTURE_HTTP"] = setting
    db = tmp_path / "fresh.db"
    argv = [sys.executable, "-c", PROGRAM, str(db), f"{tool_api.url}/weather?city=Faro"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=True)
    report = json.loads(done.stdout)
    conn = connect_reader(db)
    try:
        names = sorted(s.name for s in iter_spans(conn))
    finally:
        conn.close()
    if setting == "true":
        assert "otel_blackbox._playback.http.hook" in report["before"] and report["patched"]
        assert names == [HTTP_SPAN_NAME, "tool"]
    else:
        assert report == {"before": [], "patched": False}
        assert names == ["tool"]


def test_the_setting_is_read_from_the_environment() -> None:
    assert BlackboxConfig.from_env({"OTEL_BLACKBOX_CAPTURE_HTTP": "true"}).capture_http is True
    assert BlackboxConfig.from_env({"OTEL_BLACKBOX_CAPTURE_HTTP": "off"}).capture_http is False
    with pytest.raises(ConfigError, match="OTEL_BLACKBOX_CAPTURE_HTTP: expected true or false"):
        BlackboxConfig.from_env({"OTEL_BLACKBOX_CAPTURE_HTTP": "sometimes"})
    with pytest.raises(ConfigError, match="capture_http"):
        BlackboxConfig(capture_http=cast(bool, "yes"))


INSTRUMENTED_AGENT = """
import os

import httpx
from openai import OpenAI
from opentelemetry import trace

client = OpenAI(base_url=os.environ["FAKE_LLM_URL"], api_key="sk-fake-instrumented-0123456789")
with trace.get_tracer("tiny-agent").start_as_current_span("agent-run"):
    client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "2 + 2?"}])
    httpx.get(os.environ["TOOL_URL"]).raise_for_status()
"""


def test_capture_under_opentelemetry_instrument(
    tmp_path: Path, fake_llm: FakeLLMServer, tool_api: ToolAPI
) -> None:
    """Zero code: the processor the pre-instrument hook adds captures when the environment says so."""
    script, db = tmp_path / "agent.py", tmp_path / "traces.db"
    script.write_text(INSTRUMENTED_AGENT, encoding="utf-8")
    command = shutil.which("opentelemetry-instrument", path=os.path.dirname(sys.executable))
    assert command, "opentelemetry-instrument is not installed next to this Python"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_") and k != "PYTHONPATH"}
    env.update(
        FAKE_LLM_URL=fake_llm.openai_base_url,
        TOOL_URL=f"{tool_api.url}/weather?city=Aveiro",
        OTEL_TRACES_EXPORTER="none",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        OTEL_BLACKBOX_DB=str(db),
        OTEL_BLACKBOX_CAPTURE_HTTP="true",
        **FRAMEWORK_INSTRUMENTORS_OFF,
    )
    done = subprocess.run(
        [command, sys.executable, str(script)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    conn = connect_reader(db)
    try:
        spans = list(iter_spans(conn))
    finally:
        conn.close()
    (root,) = [s for s in spans if s.name == "agent-run"]
    model, tool = sorted((s for s in spans if s.name == HTTP_SPAN_NAME), key=lambda s: s.start_ns)
    span_ids = {s.span_id for s in spans}
    for span in (model, tool):  # in the run's trace, under the span current at the request (HTTP or LLM)
        assert span.trace_id == root.trace_id and span.parent_span_id in span_ids
    model_call = captured_model_call(model)
    assert model_call is not None and model_call[0]["messages"] == [{"role": "user", "content": "2 + 2?"}]
    assert captured_exchange(tool) is not None and tool.attributes[ATTR_HTTP_URL] == env["TOOL_URL"]
    assert b"sk-fake-instrumented" not in db.read_bytes()


# --- only the black box, only while alive ---------------------------------------------------------


def test_exchange_spans_go_to_the_black_box_only(make_recorder: MakeRecorder, tool_api: ToolAPI) -> None:
    rec = capturing(make_recorder)
    exported = InMemorySpanExporter()
    rec.provider.add_span_processor(SimpleSpanProcessor(exported))
    with rec.tracer.start_as_current_span("tool"):
        httpx.get(f"{tool_api.url}/weather", params={"city": "Braga"})
    assert [s.name for s in exported.get_finished_spans()] == ["tool"]
    assert [s.name for s in stored(rec)] == [HTTP_SPAN_NAME, "tool"]


def test_requests_made_with_instrumentation_suppressed_are_not_captured(
    make_recorder: MakeRecorder, tool_api: ToolAPI
) -> None:
    """An exporter's own requests (the SDK suppresses instrumentation around export) stay unrecorded."""
    rec = capturing(make_recorder)
    with suppress_instrumentation():
        httpx.get(f"{tool_api.url}/weather", params={"city": "Tavira"})
    httpx.get(f"{tool_api.url}/weather", params={"city": "Lagos"})
    assert [s.attributes[ATTR_HTTP_URL].rsplit("=", 1)[1] for s in exchanges(rec)] == ["Lagos"]


def test_each_processor_captures_while_it_is_alive(
    make_recorder: MakeRecorder, tool_api: ToolAPI, tmp_path: Path
) -> None:
    first = capturing(make_recorder)
    second = capturing(make_recorder, path=tmp_path / "second.db")
    url = f"{tool_api.url}/weather?city=Evora"
    httpx.get(url)
    second.provider.shutdown()
    httpx2.get(url)
    assert (len(exchanges(first)), len(exchanges(second))) == (2, 1)
    assert pool_patched()
    first.provider.shutdown()
    assert not pool_patched() and audience.observers() == ()  # the last one out put the pools back
    httpx.get(url)
    assert len(exchanges(first)) == 2


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_a_forked_child_captures_into_its_own_writer(make_recorder: MakeRecorder, tool_api: ToolAPI) -> None:
    rec = capturing(make_recorder)
    with warnings.catch_warnings():  # fork() with threads running: on purpose, as in test_processor
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # child
        code = 1
        try:
            httpx.get(f"{tool_api.url}/weather", params={"city": "child"})
            code = 0 if rec.processor.force_flush(10_000) else 3
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    httpx.get(f"{tool_api.url}/weather", params={"city": "parent"})
    by_city = {s.attributes[ATTR_HTTP_URL].rsplit("=", 1)[1]: s.pid for s in exchanges(rec)}
    assert by_city == {"child": pid, "parent": os.getpid()}


# --- beside a session's interceptor, and faults ---------------------------------------------------


def test_record_and_replay_sessions_work_with_capture_on(
    make_recorder: MakeRecorder, tool_api: ToolAPI, tmp_path: Path
) -> None:
    """`otel-blackbox record` / `replay` of a program whose processor captures: the session decides,
    capture sees every exchange, and what it stored is what the session recorded."""
    rec = capturing(make_recorder)
    cassette = tmp_path / "run.json"
    tools = HttpWeatherTools(tool_api.url)
    with FakeLLMServer() as server, otel_blackbox.session(mode="record", cassette=cassette):
        port = server.port
        live = run_model_agent("chat", port, rec.tracer, False, tools)
    recorded = load_cassette(cassette).steps
    live_spans = exchanges(rec)
    model_steps = [
        (step.payload, after.payload)
        for step, after in itertools.pairwise(recorded)
        if step.type == "model_input" and after.type == "model_output"
    ]
    exchange_steps = [
        s.payload for s in recorded if s.type == "metadata" and s.payload["event"] == "http_exchange"
    ]
    assert len(model_steps) >= 2 and len(exchange_steps) == 1  # get_weather called the tool API
    assert [captured_model_call(s) for s in live_spans if ATTR_MODEL_INPUT in s.attributes] == model_steps
    assert [
        captured_exchange(s) for s in live_spans if ATTR_MODEL_INPUT not in s.attributes
    ] == exchange_steps
    assert not any(captured_replayed(s) for s in live_spans)
    assert {s.attributes[ATTR_SESSION_MODE] for s in live_spans} == {"record"}

    hits = len(tool_api.hits)
    with blocked_network() as attempts, otel_blackbox.session(mode="replay", cassette=cassette):
        replayed = run_model_agent("chat", port, rec.tracer, False, tools)
    assert replayed == live and attempts == [] and len(tool_api.hits) == hits
    replay_spans = exchanges(rec)[len(live_spans) :]
    # Served, not sent: marked so, and holding the same exchanges and model calls as the wire did.
    assert len(replay_spans) == len(live_spans) and all(captured_replayed(s) for s in replay_spans)
    assert {s.attributes[ATTR_SESSION_MODE] for s in replay_spans} == {"replay"}
    assert [
        captured_exchange(s) for s in replay_spans if ATTR_MODEL_INPUT not in s.attributes
    ] == exchange_steps
    served = [captured_model_call(s) for s in replay_spans if ATTR_MODEL_INPUT in s.attributes]
    assert served == [(i, without_usage(o)) for i, o in model_steps]  # a replay serves no token counts
    assert pool_patched()  # the session is gone; the capture keeps the pools patched while it lives


class BrokenInterceptor:
    def intercept(self, request: HttpRequest) -> HttpResponse | None:
        raise RuntimeError("a bug in intercept")

    def observe(self, request: HttpRequest, response: HttpResponse) -> None:
        raise RuntimeError("a bug in observe")


class BrokenObserver:
    def __init__(self, where: str) -> None:
        self.where = where

    def begin(self) -> ExchangeWatch | None:
        if self.where == "begin":
            raise RuntimeError("a bug in begin")

        def watch(request: HttpRequest, response: HttpResponse, *, served: bool) -> None:
            raise RuntimeError("a bug in the watch")

        return watch


def test_faults_beside_the_capture_never_reach_the_host(
    make_recorder: MakeRecorder, tool_api: ToolAPI, caplog: pytest.LogCaptureFixture
) -> None:
    rec = capturing(make_recorder)
    broken = [BrokenObserver("begin"), BrokenObserver("watch")]
    BlackboxHTTPInstrumentor().instrument(interceptor=BrokenInterceptor())
    for observer in broken:
        hook.add_observer(observer)
    try:
        with caplog.at_level(logging.WARNING):
            for flavour, mode in CLIENTS:
                got, _ = get_and_post(flavour, mode, tool_api.url)
                assert json.loads(got)["city"] == "Lisbon"
    finally:
        for observer in broken:
            hook.remove_observer(observer)
        BlackboxHTTPInstrumentor().uninstrument()
    # The capture saw all eight, and each fault was logged once.
    assert len(exchanges(rec)) == 8
    assert [r.getMessage().split(" raised")[0] for r in caplog.records] == [
        "BrokenObserver.begin",
        "BrokenInterceptor.intercept",
        "BrokenInterceptor.observe",
        "function.watch",
    ]
    # The interceptor is gone; the capture still watches through the patches it keeps.
    assert pool_patched()
    httpx.get(f"{tool_api.url}/weather", params={"city": "Sintra"})
    assert len(exchanges(rec)) == 9


def test_captured_readers_ignore_other_spans(make_recorder: MakeRecorder) -> None:
    rec = make_recorder()
    with rec.tracer.start_as_current_span("plain", attributes={ATTR_MODEL_INPUT: "{}", ATTR_HTTP_URL: "x"}):
        pass
    (span,) = stored(rec)
    assert captured_exchange(span) is None and captured_model_call(span) is None


def test_a_later_traces_cassette_numbers_its_calls_from_zero_and_replays(
    make_recorder: MakeRecorder, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    """The capture numbers calls over the process's life; a cassette of its second run starts over."""
    rec = capturing(make_recorder)
    run_model_agent("chat", fake_llm.port, rec.tracer, False)
    answer = run_model_agent("chat", fake_llm.port, rec.tracer, False)
    spans = stored(rec)
    second = max((s for s in spans if s.name.endswith("agent")), key=lambda s: s.start_ns).trace_id
    ids_seen = [c["toolCallId"] for s in exchanges(rec) if s.trace_id == second
                for c in (captured_model_call(s) or ({}, {}))[1].get("calls", [])]  # fmt: skip
    assert ids_seen == ["call-2", "call-3"]  # as captured: after the first run's two
    cassette = cassette_from_spans([s for s in spans if s.trace_id == second])
    output = next(cassette.steps_of("model_output")).payload
    assert [c["toolCallId"] for c in output["calls"]] == ["call-0", "call-1"]
    path = tmp_path / "second.json"
    save_cassette(cassette, path)
    with blocked_network() as attempts, otel_blackbox.session(mode="replay", cassette=path):
        assert run_model_agent("chat", fake_llm.port, NoOpTracer(), False) == answer
    assert attempts == []
