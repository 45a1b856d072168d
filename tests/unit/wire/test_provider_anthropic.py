"""The Anthropic Messages translation against the real anthropic SDK, both ways.

Record: the SDK talks to the fake provider through a transport that keeps the raw bytes, and the
translation turns them into neutral payloads. Replay: the translation's synthesized responses are
served to the SDK (sync, async, raw stream, stream helper) with strict response validation on.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable
from typing import Any, Literal

import anthropic
import httpx2
import pytest
from anthropic.types import Message, MessageParam, ToolParam
from fake_llm import FakeLLMServer
from hypothesis import given
from hypothesis import strategies as st

from otel_blackbox._cassette.model import Cassette
from otel_blackbox._cassette.neutrality import audit_neutrality
from otel_blackbox._types import JsonObject
from otel_blackbox._wire.anthropic.translation import AnthropicMessages
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.protocol import Provider

PROVIDER: Provider = AnthropicMessages()  # mypy checks it implements the protocol
MODEL = "claude-haiku-4-5"
REPLAY_URL = "http://127.0.0.1:9"  # never dialled: a MockTransport answers
WEATHER_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
FORECAST_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city", "days"],
}
TOOLS: list[ToolParam] = [
    {"name": "get_weather", "description": "Current weather for a city.", "input_schema": WEATHER_SCHEMA},
    {"name": "get_forecast", "description": "Forecast for the coming days.", "input_schema": FORECAST_SCHEMA},
]
NEUTRAL_TOOLS = [
    {"name": "get_weather", "description": "Current weather for a city.", "inputSchema": WEATHER_SCHEMA},
    {"name": "get_forecast", "description": "Forecast for the coming days.", "inputSchema": FORECAST_SCHEMA},
]
SYSTEM: Any = [
    {"type": "text", "text": "You are a weather assistant.", "cache_control": {"type": "ephemeral"}},
    {"type": "text", "text": "Answer in one line."},
]
SETTINGS: dict[str, Any] = {
    "model": MODEL,
    "max_tokens": 256,
    "system": SYSTEM,
    "tools": TOOLS,
    "tool_choice": {"type": "auto"},
    "stop_sequences": ["</done>"],
    # This SDK has no sampling arguments any more; older SDKs and raw clients still send them.
    "extra_body": {"temperature": 0, "top_p": 0.5},
}
NEUTRAL_SETTINGS: JsonObject = {
    "tools": NEUTRAL_TOOLS,
    "systemPrompt": "You are a weather assistant.\n\nAnswer in one line.",
    "model": MODEL,
    "params": {
        "maxTokens": 256,
        "temperature": 0,
        "topP": 0.5,
        "toolChoice": {"type": "auto"},
        "stop": ["</done>"],
    },
}
ONE_TOOL = "What's the weather in Lisbon?"
BOTH_TOOLS = "What's the weather in Lisbon, and the 2 day forecast? I need both."
WEATHER = {"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Lisbon"}}
FORECAST = {"toolCallId": "call-1", "toolName": "get_forecast", "toolInput": {"city": "Lisbon", "days": 2}}


# --- transports -------------------------------------------------------------------------------


class Tap(httpx2.BaseTransport):
    """A real HTTP transport that keeps each exchange's raw request body and response bytes."""

    def __init__(self) -> None:
        self.inner = httpx2.HTTPTransport()
        self.exchanges: list[tuple[bytes, bytes]] = []

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        response = self.inner.handle_request(request)
        try:
            body = response.read()
        finally:
            response.close()
        self.exchanges.append((request.read(), body))
        # The body is whole and decoded now: drop the headers that described its transfer.
        headers = [
            (k, v)
            for k, v in response.headers.multi_items()
            if k.lower() not in ("content-length", "transfer-encoding", "content-encoding")
        ]
        return httpx2.Response(response.status_code, headers=headers, content=body, request=request)

    def close(self) -> None:
        self.inner.close()


class Replay:
    """Serves the translation's responses for a queue of neutral outputs, keeping the requests."""

    def __init__(self, *outputs: JsonObject) -> None:
        self.outputs = list(outputs)
        self.requests: list[JsonObject] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        assert request.url.path == "/v1/messages" and PROVIDER.handles(request.method, request.url.path)
        body: JsonObject = json.loads(request.content)
        self.requests.append(body)
        wire = PROVIDER.wire_response(self.outputs.pop(0), body)
        return httpx2.Response(wire.status, headers=wire.headers, content=wire.body)

    def client(self) -> anthropic.Anthropic:
        return anthropic.Anthropic(
            base_url=REPLAY_URL,
            api_key="sk-ant-fake",
            max_retries=0,
            open_telemetry=False,
            http_client=httpx2.Client(transport=httpx2.MockTransport(self)),
            _strict_response_validation=True,  # the SDK's models check every field we send
        )

    def async_client(self) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(
            base_url=REPLAY_URL,
            api_key="sk-ant-fake",
            max_retries=0,
            open_telemetry=False,
            http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(self)),
            _strict_response_validation=True,
        )


def recording_client(server: FakeLLMServer, tap: Tap) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=server.anthropic_base_url,
        api_key="sk-ant-fake",
        max_retries=0,
        open_telemetry=False,
        http_client=httpx2.Client(transport=tap),
    )


# --- an agent's tool round, the same code recorded and replayed --------------------------------

Mode = Literal["create", "helper"]


def ask(client: anthropic.Anthropic, messages: list[MessageParam], mode: Mode) -> Message:
    if mode == "create":
        message: Message = client.messages.create(messages=messages, **SETTINGS)
        return message
    with client.messages.stream(messages=messages, **SETTINGS) as stream:
        return stream.get_final_message()


def run_tool_round(client: anthropic.Anthropic, mode: Mode) -> tuple[Message, Message]:
    """Ask for both tools, answer them (one result a string, one a list of blocks), ask again."""
    messages: list[MessageParam] = [{"role": "user", "content": BOTH_TOOLS}]
    first = ask(client, messages, mode)
    results: list[Any] = []
    for block in first.content:
        if block.type == "tool_use" and block.name == "get_weather":
            results.append({"type": "tool_result", "tool_use_id": block.id, "content": "18C, sunny"})
        elif block.type == "tool_use":
            content = [{"type": "text", "text": "Sun, then rain"}]
            results.append({"type": "tool_result", "tool_use_id": block.id, "content": content})
    messages = [*messages, first.to_param(), {"role": "user", "content": results}]
    return first, ask(client, messages, mode)


def assert_neutral(*steps: tuple[str, JsonObject]) -> None:
    dumped = json.dumps([payload for _, payload in steps])
    for marker in ("toolu_", "msg_", '"usage"', "stop_reason", "input_tokens"):
        assert marker not in dumped
    cassette = Cassette(id="anthropic-provider-test", created_at=0)
    for step_type, payload in steps:
        cassette.append(step_type, payload, 0)
    assert audit_neutrality(cassette) == []


def text_of(message: Message) -> str:
    return "".join(block.text for block in message.content if block.type == "text")


# --- record: real SDK -> fake provider -> neutral ------------------------------------------------


def test_record_plain_create(fake_llm: FakeLLMServer) -> None:
    tap, ids = Tap(), CallIds()
    with recording_client(fake_llm, tap) as client:
        message = client.messages.create(messages=[{"role": "user", "content": ONE_TOOL}], **SETTINGS)
    request, body = tap.exchanges[0]
    assert b"toolu_" in body and b'"usage"' in body  # the raw response has what the payloads must not

    model_input = PROVIDER.model_input(json.loads(request), ids)
    model_output = PROVIDER.model_output(body, streamed=False, ids=ids)

    assert not PROVIDER.is_streaming(json.loads(request))
    assert model_input == {"messages": [{"role": "user", "content": ONE_TOOL}], **NEUTRAL_SETTINGS}
    assert model_output == {"type": "tool_calls", "calls": [WEATHER], "text": text_of(message)}
    provider_ids = [block.id for block in message.content if block.type == "tool_use"]
    assert ids.to_neutral == {provider_ids[0]: "call-0"} and len(provider_ids) == 1
    assert_neutral(("model_input", model_input), ("model_output", model_output))


def test_record_raw_stream(fake_llm: FakeLLMServer) -> None:
    tap, ids = Tap(), CallIds()
    with recording_client(fake_llm, tap) as client:
        stream = client.messages.create(
            messages=[{"role": "user", "content": ONE_TOOL}], stream=True, **SETTINGS
        )
        with stream:
            events = list(stream)
    request, body = tap.exchanges[0]
    text = "".join(
        e.delta.text for e in events if e.type == "content_block_delta" and e.delta.type == "text_delta"
    )
    assert body.startswith(b"event: message_start") and b"input_json_delta" in body and b"toolu_" in body

    assert PROVIDER.is_streaming(json.loads(request))
    model_output = PROVIDER.model_output(body, streamed=True, ids=ids)
    assert model_output == {"type": "tool_calls", "calls": [WEATHER], "text": text}
    assert_neutral(("model_output", model_output))


@pytest.mark.parametrize("mode", ["create", "helper"])
def test_record_parallel_tool_round(fake_llm: FakeLLMServer, mode: Mode) -> None:
    tap, ids = Tap(), CallIds()
    with recording_client(fake_llm, tap) as client:
        first, second = run_tool_round(client, mode)
    (request_1, body_1), (request_2, body_2) = tap.exchanges
    streamed = mode == "helper"
    assert PROVIDER.is_streaming(json.loads(request_1)) is streamed

    input_1 = PROVIDER.model_input(json.loads(request_1), ids)
    output_1 = PROVIDER.model_output(body_1, streamed=streamed, ids=ids)
    input_2 = PROVIDER.model_input(json.loads(request_2), ids)
    output_2 = PROVIDER.model_output(body_2, streamed=streamed, ids=ids)

    assert input_1 == {"messages": [{"role": "user", "content": BOTH_TOOLS}], **NEUTRAL_SETTINGS}
    assert output_1 == {"type": "tool_calls", "calls": [WEATHER, FORECAST], "text": text_of(first)}
    provider_ids = [block.id for block in first.content if block.type == "tool_use"]
    assert ids.to_neutral == dict(zip(provider_ids, ["call-0", "call-1"], strict=True))
    assert input_2 == {
        "messages": [
            {"role": "user", "content": BOTH_TOOLS},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": text_of(first)},
                    {"type": "tool_use", **WEATHER},
                    {"type": "tool_use", **FORECAST},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "toolCallId": "call-0",
                        "toolName": "get_weather",
                        "result": "18C, sunny",
                    },
                    {
                        "type": "tool_result",
                        "toolCallId": "call-1",
                        "toolName": "get_forecast",
                        "result": [{"type": "text", "text": "Sun, then rain"}],
                    },
                ],
            },
        ],
        **NEUTRAL_SETTINGS,
    }
    assert output_2 == {"type": "final_answer", "text": text_of(second)}
    assert "18C, sunny" in output_2["text"] and "Sun, then rain" in output_2["text"]
    assert_neutral(
        ("model_input", input_1),
        ("model_output", output_1),
        ("model_input", input_2),
        ("model_output", output_2),
    )


# --- replay: neutral -> synthesized response -> real SDK ------------------------------------------

TOOL_TURN: JsonObject = {"type": "tool_calls", "calls": [WEATHER, FORECAST], "text": "Let me check both."}
ANSWER: JsonObject = {"type": "final_answer", "text": "Lisbon: 18C, sunny — then rain. ☀️"}
USER: list[MessageParam] = [{"role": "user", "content": BOTH_TOOLS}]


def assert_tool_turn(message: Message) -> None:
    assert [block.type for block in message.content] == ["text", "tool_use", "tool_use"]
    text, weather, forecast = message.content
    assert text.type == "text" and text.text == "Let me check both."
    assert weather.type == "tool_use" and (weather.id, weather.name, weather.input) == (
        "call-0",
        "get_weather",
        {"city": "Lisbon"},
    )
    assert forecast.type == "tool_use" and (forecast.id, forecast.name, forecast.input) == (
        "call-1",
        "get_forecast",
        {"city": "Lisbon", "days": 2},
    )
    assert message.stop_reason == "tool_use" and message.model == MODEL and message.role == "assistant"
    assert message.id.startswith("msg_blackbox_")
    assert (message.usage.input_tokens, message.usage.output_tokens) == (0, 0)


def test_replay_create() -> None:
    replay = Replay(TOOL_TURN, ANSWER)
    with replay.client() as client:
        assert_tool_turn(client.messages.create(messages=USER, **SETTINGS))
        answer = client.messages.create(messages=USER, **SETTINGS)
    assert [block.type for block in answer.content] == ["text"]
    assert text_of(answer) == ANSWER["text"] and answer.stop_reason == "end_turn"


def test_replay_raw_stream_events() -> None:
    replay = Replay(TOOL_TURN)
    with replay.client() as client, client.messages.create(messages=USER, stream=True, **SETTINGS) as stream:
        events = list(stream)
    assert [e.type for e in events] == [
        "message_start",
        *["content_block_start", "content_block_delta", "content_block_stop"] * 3,
        "message_delta",
        "message_stop",
    ]
    starts = [e.content_block for e in events if e.type == "content_block_start"]
    assert [(b.type, getattr(b, "id", None)) for b in starts] == [
        ("text", None),
        ("tool_use", "call-0"),
        ("tool_use", "call-1"),
    ]
    deltas = [e.delta for e in events if e.type == "content_block_delta"]
    assert deltas[0].type == "text_delta" and deltas[0].text == "Let me check both."
    inputs = [json.loads(d.partial_json) for d in deltas[1:] if d.type == "input_json_delta"]
    assert inputs == [{"city": "Lisbon"}, {"city": "Lisbon", "days": 2}]
    last = events[-2]
    assert last.type == "message_delta" and last.delta.stop_reason == "tool_use"


def test_replay_stream_helper() -> None:
    replay = Replay(TOOL_TURN, ANSWER)
    with replay.client() as client:
        with client.messages.stream(messages=USER, **SETTINGS) as stream:
            assert_tool_turn(stream.get_final_message())
        with client.messages.stream(messages=USER, **SETTINGS) as stream:
            pieces = list(stream.text_stream)
            final = stream.get_final_message()
    assert "".join(pieces) == ANSWER["text"] and text_of(final) == ANSWER["text"]
    assert final.stop_reason == "end_turn"
    assert all(request["stream"] is True for request in replay.requests)


def test_replay_async_client() -> None:
    replay = Replay(TOOL_TURN, ANSWER, ANSWER)

    async def run() -> tuple[Message, Message, list[str]]:
        async with replay.async_client() as client:
            tool_turn = await client.messages.create(messages=USER, **SETTINGS)
            async with client.messages.stream(messages=USER, **SETTINGS) as stream:
                final = await stream.get_final_message()
            raw = await client.messages.create(messages=USER, stream=True, **SETTINGS)
            texts = [
                e.delta.text
                async for e in raw
                if e.type == "content_block_delta" and e.delta.type == "text_delta"
            ]
        return tool_turn, final, texts

    tool_turn, final, texts = asyncio.run(run())
    assert_tool_turn(tool_turn)
    assert text_of(final) == ANSWER["text"] and "".join(texts) == ANSWER["text"]


@pytest.mark.parametrize("mode", ["create", "helper"])
def test_replayed_run_sends_the_recorded_requests(fake_llm: FakeLLMServer, mode: Mode) -> None:
    """The same agent code, recorded then replayed: every request normalizes to the recorded one."""
    tap, recorded_ids = Tap(), CallIds()
    with recording_client(fake_llm, tap) as client:
        _, recorded_answer = run_tool_round(client, mode)
    recorded = [
        (
            PROVIDER.model_input(json.loads(request), recorded_ids),
            PROVIDER.model_output(body, streamed=mode == "helper", ids=recorded_ids),
        )
        for request, body in tap.exchanges
    ]

    replay, replay_ids = Replay(*(output for _, output in recorded)), CallIds()
    with replay.client() as client:
        first, replayed_answer = run_tool_round(client, mode)
    assert [PROVIDER.model_input(r, replay_ids) for r in replay.requests] == [i for i, _ in recorded]
    assert replay.outputs == []  # every recorded response was served
    assert [b.id for b in first.content if b.type == "tool_use"] == ["call-0", "call-1"]
    assert text_of(replayed_answer) == text_of(recorded_answer)


# --- request details ----------------------------------------------------------------------------


def test_model_input_block_kinds() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    request: JsonObject = {
        "model": MODEL,
        "max_tokens": 64,
        "system": "Be brief.",
        "output_config": {"effort": "low", "format": {"type": "json_schema", "schema": WEATHER_SCHEMA}},
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is this?"},
                    {**image, "cache_control": {"type": "ephemeral"}},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Look closer.", "signature": "c2lnbmF0dXJl"},
                    {"type": "text", "text": "Let me ", "citations": None},
                    {"type": "tool_use", "id": "toolu_01A2b3C4d5", "name": "zoom", "input": {"level": 2}},
                    {"type": "text", "text": "zoom in."},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_01A2b3C4d5",
                        "is_error": True,
                        "content": [{"type": "text", "text": "zoom failed"}],
                    },
                    {"type": "tool_result", "tool_use_id": "toolu_09Unknown9"},
                ],
            },
        ],
    }
    ids = CallIds()
    assert PROVIDER.model_input(request, ids) == {
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "What is this?"}, image]},
            {
                "role": "assistant",
                "content": [
                    {"type": "reasoning", "text": "Look closer.", "signature": "c2lnbmF0dXJl"},
                    {"type": "text", "text": "Let me zoom in."},
                    {
                        "type": "tool_use",
                        "toolCallId": "call-0",
                        "toolName": "zoom",
                        "toolInput": {"level": 2},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "toolCallId": "call-0",
                        "toolName": "zoom",
                        "error": "zoom failed",
                    },
                    {"type": "tool_result", "toolCallId": "call-1", "toolName": "unknown", "result": ""},
                ],
            },
        ],
        "tools": [],
        "systemPrompt": "Be brief.",
        "model": MODEL,
        "params": {
            "maxTokens": 64,
            "responseFormat": {"type": "json_schema", "schema": WEATHER_SCHEMA},
            "output_config": {"effort": "low"},
        },
    }
    assert "stream" not in json.dumps(PROVIDER.model_input({**request, "stream": True}, CallIds()))


def test_model_output_keeps_thinking_and_the_text_pieces() -> None:
    body = {
        "id": "msg_01XyZ",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [
            {"type": "thinking", "thinking": "The user wants a greeting.", "signature": "c2ln"},
            {"type": "text", "text": "Hello, "},
            {"type": "text", "text": "world."},
        ],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 3},
    }
    output = PROVIDER.model_output(json.dumps(body).encode(), streamed=False, ids=CallIds())
    assert output == {
        "type": "final_answer",
        "text": "Hello, world.",
        "reasoning": [{"text": "The user wants a greeting.", "signature": "c2ln"}],
        "sequence": ["reasoning", "text", "text"],
        "textParts": ["Hello, ", "world."],
    }
    wire = json.loads(PROVIDER.wire_response(output, {"model": MODEL}).body)
    assert [b["type"] for b in wire["content"]] == ["thinking", "text", "text"]
    assert [b.get("text") for b in wire["content"][1:]] == ["Hello, ", "world."]


def test_model_output_refuses_what_is_not_a_message() -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    with pytest.raises(ValueError, match="Overloaded"):
        PROVIDER.model_output(json.dumps(error).encode(), streamed=False, ids=CallIds())
    with pytest.raises(ValueError, match="Overloaded"):
        PROVIDER.model_output(
            f"event: error\ndata: {json.dumps(error)}\n\n".encode(), streamed=True, ids=CallIds()
        )
    cut = PROVIDER.wire_response(ANSWER, {"model": MODEL, "stream": True}).body.split(
        b"event: message_delta"
    )[0]
    with pytest.raises(ValueError, match="message_stop"):
        PROVIDER.model_output(cut, streamed=True, ids=CallIds())


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("POST", "/v1/messages", True),
        ("post", "/anthropic/v1/messages?beta=true", True),
        ("POST", "/v1/messages/count_tokens", False),
        ("POST", "/v1/messages/batches", False),
        ("GET", "/v1/messages", False),
        ("POST", "/v1/chat/completions", False),
    ],
)
def test_handles(method: str, path: str, expected: bool) -> None:
    assert PROVIDER.handles(method, path) is expected


# --- round trip and determinism -------------------------------------------------------------------

OUTPUTS: list[JsonObject] = [
    {"type": "final_answer", "text": "It is 18C in Lisbon."},
    {"type": "final_answer", "text": ""},
    {"type": "tool_calls", "calls": [WEATHER]},
    {"type": "tool_calls", "calls": [WEATHER, FORECAST]},
    {"type": "tool_calls", "calls": [WEATHER, FORECAST], "text": "Checking both."},
    {
        "type": "tool_calls",
        "calls": [
            {"toolCallId": "call-7", "toolName": "translate", "toolInput": {"text": "Zürich — 東京 😀"}}
        ],
        "text": 'Ünïcödé \u2028 line separator, lone surrogate \ud83d, "quotes" and \\ and \n newline',
    },
    {
        "type": "tool_calls",
        "calls": [
            {
                "toolCallId": "call-2",
                "toolName": "query",
                "toolInput": {
                    "filter": {"and": [{"age": {"gt": 1.5}}, {"tags": ["a", None, True, -3]}]},
                    "empty": {},
                },
            },
            {"toolCallId": "call-3", "toolName": "noop", "toolInput": {}},
        ],
    },
]


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("output", OUTPUTS)
def test_round_trip(output: JsonObject, streamed: bool) -> None:
    wire = PROVIDER.wire_response(output, {"model": MODEL, "stream": streamed})
    assert wire.status == 200
    assert dict(wire.headers)["content-type"] == ("text/event-stream" if streamed else "application/json")
    assert PROVIDER.model_output(wire.body, streamed=streamed, ids=CallIds()) == output


_json_leaf = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
)
_json = st.recursive(
    _json_leaf, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4)
)


@st.composite
def _outputs(draw: Callable[..., Any]) -> JsonObject:
    inputs = draw(st.lists(st.dictionaries(st.text(), _json, max_size=4), max_size=3))
    text = draw(st.text())
    if not inputs:
        return {"type": "final_answer", "text": text}
    calls = [
        {"toolCallId": f"call-{i}", "toolName": draw(st.text(min_size=1)), "toolInput": x}
        for i, x in enumerate(inputs)
    ]
    return {"type": "tool_calls", "calls": calls, **({"text": text} if text else {})}


@given(output=_outputs(), streamed=st.booleans())
def test_round_trip_any_output(output: JsonObject, streamed: bool) -> None:
    wire = PROVIDER.wire_response(output, {"model": MODEL, "stream": streamed})
    assert PROVIDER.model_output(wire.body, streamed=streamed, ids=CallIds()) == output


@pytest.mark.parametrize("streamed", [False, True])
def test_wire_response_is_deterministic(streamed: bool) -> None:
    request = {"model": MODEL, "stream": streamed, "messages": USER}
    for output in OUTPUTS:
        first = PROVIDER.wire_response(output, request)
        again = PROVIDER.wire_response(copy.deepcopy(output), copy.deepcopy(request))
        assert (first.status, first.headers, first.body) == (again.status, again.headers, again.body)
    ids = {json.loads(PROVIDER.wire_response(o, {"model": MODEL}).body)["id"] for o in OUTPUTS}
    assert len(ids) == len(OUTPUTS)  # the message id follows the content


def test_wire_response_accepts_the_single_call_shape() -> None:
    single = {"type": "tool_call", **WEATHER}
    wire = PROVIDER.wire_response(single, {"model": MODEL})
    assert PROVIDER.model_output(wire.body, streamed=False, ids=CallIds()) == {
        "type": "tool_calls",
        "calls": [WEATHER],
    }
