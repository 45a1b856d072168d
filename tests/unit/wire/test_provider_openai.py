"""The OpenAI Chat Completions and Responses translations, driven by the real openai SDK both ways.

Record: the SDK talks to the fake provider (examples/fake_llm.py) through a transport that keeps the
raw request and response bytes, and the translations turn them into neutral payloads. Replay: the
synthesized responses are served to the SDK through httpx2.MockTransport, with the SDK's strict
response validation on, so every field the SDK's models require must be there.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Iterator
from typing import Any, cast

import httpx2
import openai
import pytest
from fake_llm import FakeLLMServer  # examples/ is on sys.path (conftest.py)
from hypothesis import given
from hypothesis import strategies as st
from openai.types.chat import (
    ChatCompletionMessageFunctionToolCallParam,
    ChatCompletionMessageParam,
    ChatCompletionToolParam,
)
from openai.types.responses import FunctionToolParam, ResponseInputItemParam

from otel_blackbox._types import JsonObject
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.openai_chat.translation import OpenAIChat
from otel_blackbox._wire.openai_responses.translation import OpenAIResponses
from otel_blackbox._wire.protocol import Provider

CHAT = OpenAIChat()
RESPONSES = OpenAIResponses()
MODEL = "gpt-4o-mini"
QUESTION = "What's the weather in New York?"
BOTH = "Give me both the weather and the 4 day forecast for Oslo"
WEATHER_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
FORECAST_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
}
CHAT_TOOLS: list[ChatCompletionToolParam] = [
    {
        "type": "function",
        "function": {"name": "get_weather", "description": "Current weather", "parameters": WEATHER_SCHEMA},
    },
    {"type": "function", "function": {"name": "get_forecast", "parameters": FORECAST_SCHEMA}},
]
RESPONSES_TOOLS: list[FunctionToolParam] = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "Current weather",
        "parameters": WEATHER_SCHEMA,
        "strict": False,
    },
    {"type": "function", "name": "get_forecast", "parameters": FORECAST_SCHEMA, "strict": False},
]
NEUTRAL_TOOLS = [
    {"name": "get_weather", "description": "Current weather", "inputSchema": WEATHER_SCHEMA},
    {"name": "get_forecast", "description": "", "inputSchema": FORECAST_SCHEMA},
]
# The Responses tools say strict: false, a setting that changes what the model does (issue 18).
RESPONSES_NEUTRAL_TOOLS = [{**tool, "settings": {"strict": False}} for tool in NEUTRAL_TOOLS]
TOOL_RESULTS = {"get_weather": "cold", "get_forecast": "colder"}
# What a provider's response carries and a neutral payload never may.
PROVIDER_MARKERS = ("chatcmpl-", "call_", "resp_", "fc_", "msg_", '"usage"')

ANSWER: JsonObject = {"type": "final_answer", "text": "It is 21°C in Oslo ☀"}
CALLS: JsonObject = {
    "type": "tool_calls",
    "calls": [
        {"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Oslo"}},
        {
            "toolCallId": "call-1",
            "toolName": "get_forecast",
            "toolInput": {"city": "Oslo", "days": 4, "hours": [6, 12], "units": {"temp": "C"}},
        },
    ],
    "text": "Checking both.",
}
FORECAST_ARGUMENTS = '{"city":"Oslo","days":4,"hours":[6,12],"units":{"temp":"C"}}'


# --- the two directions: a recording transport and a replaying one ----------------------------


class Capture(httpx2.BaseTransport):
    """The real HTTP transport, keeping each request body and the raw bytes of its response."""

    def __init__(self) -> None:
        self.inner = httpx2.HTTPTransport()
        self.exchanges: list[tuple[JsonObject, bytes]] = []

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        sent = json.loads(request.read())
        response = self.inner.handle_request(request)
        body = response.read()
        self.exchanges.append((sent, body))
        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            stream=httpx2.ByteStream(body),
            extensions=response.extensions,
        )

    def close(self) -> None:
        self.inner.close()


class Replayer:
    """Answers each request with ``wire_response`` of the next output, as a replay session does."""

    def __init__(self, provider: Provider, *outputs: JsonObject) -> None:
        self.provider = provider
        self.outputs = outputs
        self.requests: list[JsonObject] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        output = self.outputs[min(len(self.requests), len(self.outputs)) - 1]
        wire = self.provider.wire_response(output, body)
        return httpx2.Response(wire.status, headers=wire.headers, content=wire.body)


def recording_client(server: FakeLLMServer, capture: Capture) -> openai.OpenAI:
    http = httpx2.Client(transport=capture)
    return openai.OpenAI(base_url=server.openai_base_url, api_key="sk-fake", max_retries=0, http_client=http)


def replay_client(replayer: Replayer) -> openai.OpenAI:
    http = httpx2.Client(transport=httpx2.MockTransport(replayer))
    return openai.OpenAI(
        base_url="http://127.0.0.1:9/v1",
        api_key="sk-fake",
        max_retries=0,
        http_client=http,
        _strict_response_validation=True,
    )


def async_replay_client(replayer: Replayer) -> openai.AsyncOpenAI:
    http = httpx2.AsyncClient(transport=httpx2.MockTransport(replayer))
    return openai.AsyncOpenAI(
        base_url="http://127.0.0.1:9/v1",
        api_key="sk-fake",
        max_retries=0,
        http_client=http,
        _strict_response_validation=True,
    )


@pytest.fixture
def capture() -> Iterator[Capture]:
    transport = Capture()
    yield transport
    transport.close()


def neutral(
    provider: Provider, exchange: tuple[JsonObject, bytes], ids: CallIds
) -> tuple[JsonObject, JsonObject]:
    """(model_input, model_output) of one recorded exchange, checked free of provider traces."""
    request, body = exchange
    model_input = provider.model_input(request, ids)
    output = provider.model_output(body, streamed=provider.is_streaming(request), ids=ids)
    dumped = json.dumps([model_input, output])
    assert not [m for m in PROVIDER_MARKERS if m in dumped], dumped
    return model_input, output


def tool_use(call_id: str, name: str, tool_input: Any) -> JsonObject:
    return {"type": "tool_use", "toolCallId": call_id, "toolName": name, "toolInput": tool_input}


def tool_result(call_id: str, name: str, result: Any) -> JsonObject:
    return {"type": "tool_result", "toolCallId": call_id, "toolName": name, "result": result}


OSLO_CALLS: JsonObject = {
    "type": "tool_calls",
    "calls": [
        {"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Oslo"}},
        {"toolCallId": "call-1", "toolName": "get_forecast", "toolInput": {"city": "Oslo", "days": 4}},
    ],
}
OSLO_ROUND = [
    {"role": "user", "content": BOTH},
    {
        "role": "assistant",
        "content": [
            tool_use("call-0", "get_weather", {"city": "Oslo"}),
            tool_use("call-1", "get_forecast", {"city": "Oslo", "days": 4}),
        ],
    },
]


# --- recording Chat Completions ----------------------------------------------------------------


def test_record_chat_plain_answer_with_system_prompt_and_params(
    fake_llm: FakeLLMServer, capture: Capture
) -> None:
    with recording_client(fake_llm, capture) as client:
        client.chat.completions.create(
            model=MODEL,
            messages=[
                {"role": "system", "content": "Be brief."},
                {"role": "developer", "content": [{"type": "text", "text": "Answer in English."}]},
                {"role": "user", "content": "Hello there"},
            ],
            temperature=0,
            max_completion_tokens=50,
        )
    model_input, output = neutral(CHAT, capture.exchanges[0], CallIds())
    assert model_input == {
        "messages": [{"role": "user", "content": "Hello there"}],
        "tools": [],
        "systemPrompt": "Be brief.\n\nAnswer in English.",
        "model": MODEL,
        "params": {"temperature": 0, "maxTokens": 50},
    }
    assert output == {"type": "final_answer", "text": "Final answer: you asked 'Hello there'"}


def test_record_chat_stream_with_usage_chunk(fake_llm: FakeLLMServer, capture: Capture) -> None:
    with recording_client(fake_llm, capture) as client:
        stream = client.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": QUESTION}],
            tools=CHAT_TOOLS,
            stream=True,
            stream_options={"include_usage": True},
        )
        assert len(list(stream)) > 3
    body = capture.exchanges[0][1]
    assert b'"usage":' in body
    assert b"call_" in body and b"chatcmpl-" in body and body.endswith(b"data: [DONE]\n\n")
    model_input, output = neutral(CHAT, capture.exchanges[0], CallIds())
    assert model_input["tools"] == NEUTRAL_TOOLS
    assert output == {
        "type": "tool_calls",
        "calls": [{"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "New York"}}],
    }


def test_record_chat_parallel_calls_and_their_tool_round(fake_llm: FakeLLMServer, capture: Capture) -> None:
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": BOTH}]
    with recording_client(fake_llm, capture) as client:
        first = client.chat.completions.create(model=MODEL, messages=messages, tools=CHAT_TOOLS)
        message = first.choices[0].message
        calls = [c for c in message.tool_calls or [] if c.type == "function"]
        # The model's own message goes back as the SDK returned it (content null, refusal null ...).
        messages.append(cast(ChatCompletionMessageParam, message.to_dict()))
        messages += [
            {"role": "tool", "tool_call_id": calls[0].id, "content": "cold"},
            {"role": "tool", "tool_call_id": calls[1].id, "content": [{"type": "text", "text": "colder"}]},
        ]
        stream = client.chat.completions.create(model=MODEL, messages=messages, tools=CHAT_TOOLS, stream=True)
        assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices)

    ids = CallIds()
    first_input, first_output = neutral(CHAT, capture.exchanges[0], ids)
    assert first_input == {
        "messages": [{"role": "user", "content": BOTH}],
        "tools": NEUTRAL_TOOLS,
        "model": MODEL,
    }
    assert first_output == OSLO_CALLS
    second_input, second_output = neutral(CHAT, capture.exchanges[1], ids)
    assert second_input["messages"] == [
        *OSLO_ROUND,
        {
            "role": "user",
            "content": [
                tool_result("call-0", "get_weather", "cold"),
                tool_result("call-1", "get_forecast", [{"type": "text", "text": "colder"}]),
            ],
        },
    ]
    assert second_output == {"type": "final_answer", "text": "Final answer: cold | colder"}
    assert ids.to_neutral == {calls[0].id: "call-0", calls[1].id: "call-1"}


# --- recording Responses -------------------------------------------------------------------------


def test_record_responses_plain_answer_with_instructions(fake_llm: FakeLLMServer, capture: Capture) -> None:
    with recording_client(fake_llm, capture) as client:
        client.responses.create(
            model=MODEL, input="Hello there", instructions="Be brief.", max_output_tokens=64
        )
    model_input, output = neutral(RESPONSES, capture.exchanges[0], CallIds())
    assert model_input == {
        "messages": [{"role": "user", "content": "Hello there"}],
        "tools": [],
        "systemPrompt": "Be brief.",
        "model": MODEL,
        "params": {"maxTokens": 64},
    }
    assert output == {"type": "final_answer", "text": "Final answer: you asked 'Hello there'"}


def test_record_responses_stream(fake_llm: FakeLLMServer, capture: Capture) -> None:
    with recording_client(fake_llm, capture) as client:
        events = list(
            client.responses.create(model=MODEL, input=QUESTION, tools=RESPONSES_TOOLS, stream=True)
        )
        assert events[-1].type == "response.completed"
    body = capture.exchanges[0][1]
    assert b"resp_" in body and b"fc_" in body and b"usage" in body
    model_input, output = neutral(RESPONSES, capture.exchanges[0], CallIds())
    assert model_input["messages"] == [{"role": "user", "content": QUESTION}]
    assert model_input["tools"] == RESPONSES_NEUTRAL_TOOLS
    assert output == {
        "type": "tool_calls",
        "calls": [{"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "New York"}}],
    }


def test_record_responses_function_call_round(fake_llm: FakeLLMServer, capture: Capture) -> None:
    history: list[ResponseInputItemParam] = [
        {"role": "developer", "content": "Use the tools."},
        {"role": "user", "content": BOTH},
    ]
    with recording_client(fake_llm, capture) as client:
        first = client.responses.create(model=MODEL, input=history, tools=RESPONSES_TOOLS)
        calls = [i for i in first.output if i.type == "function_call"]
        # The output items go back whole: their fc_ ids and statuses must not reach the cassette.
        history += [cast(ResponseInputItemParam, i.to_dict()) for i in first.output]
        history += [
            {"type": "function_call_output", "call_id": calls[0].call_id, "output": "cold"},
            {
                "type": "function_call_output",
                "call_id": calls[1].call_id,
                "output": [{"type": "input_text", "text": "colder"}],
            },
        ]
        with client.responses.stream(model=MODEL, input=history, tools=RESPONSES_TOOLS) as stream:
            assert stream.get_final_response().output_text == "Final answer: cold | colder"

    ids = CallIds()
    first_input, first_output = neutral(RESPONSES, capture.exchanges[0], ids)
    assert first_input == {
        "messages": [{"role": "user", "content": BOTH}],
        "tools": RESPONSES_NEUTRAL_TOOLS,
        "systemPrompt": "Use the tools.",
        "model": MODEL,
    }
    assert first_output == OSLO_CALLS
    second_input, second_output = neutral(RESPONSES, capture.exchanges[1], ids)
    assert second_input["messages"] == [
        *OSLO_ROUND,
        {
            "role": "user",
            "content": [
                tool_result("call-0", "get_weather", "cold"),
                tool_result("call-1", "get_forecast", [{"type": "input_text", "text": "colder"}]),
            ],
        },
    ]
    assert second_output == {"type": "final_answer", "text": "Final answer: cold | colder"}


# --- replaying Chat Completions ------------------------------------------------------------------


def test_replay_chat_create() -> None:
    with replay_client(Replayer(CHAT, CALLS, ANSWER)) as client:
        calls = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": BOTH}])
        answer = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hi"}])
    choice = calls.choices[0]
    assert (choice.finish_reason, choice.message.content) == ("tool_calls", "Checking both.")
    tool_calls = [c for c in choice.message.tool_calls or [] if c.type == "function"]
    assert [(c.id, c.function.name, c.function.arguments) for c in tool_calls] == [
        ("call-0", "get_weather", '{"city":"Oslo"}'),
        ("call-1", "get_forecast", FORECAST_ARGUMENTS),
    ]
    assert calls.id.startswith("chatcmpl-blackbox-") and calls.model == MODEL and calls.created == 0
    assert calls.usage is not None and calls.usage.total_tokens == 0
    message = answer.choices[0].message
    assert (message.content, message.tool_calls, answer.choices[0].finish_reason) == (
        ANSWER["text"],
        None,
        "stop",
    )
    assert answer.id != calls.id


def test_replay_chat_single_call_shape() -> None:
    single = {
        "type": "tool_call",
        "toolCallId": "call-3",
        "toolName": "get_weather",
        "toolInput": {"city": "Oslo"},
    }
    with replay_client(Replayer(CHAT, single)) as client:
        completion = client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": QUESTION}]
        )
    [call] = completion.choices[0].message.tool_calls or []
    assert call.type == "function" and (call.id, call.function.name) == ("call-3", "get_weather")
    assert completion.choices[0].message.content is None


def test_replay_chat_stream_iteration_accumulates_text_and_calls() -> None:
    with replay_client(Replayer(CHAT, CALLS)) as client:
        stream = client.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": BOTH}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
    text = ""
    ids: dict[int, str] = {}
    names: dict[int, str] = {}
    arguments: dict[int, list[str]] = {}
    for chunk in chunks:
        for choice in chunk.choices:
            text += choice.delta.content or ""
            for delta in choice.delta.tool_calls or []:
                if delta.id:
                    assert delta.index not in ids, "an id is sent once per call"
                    ids[delta.index] = delta.id
                if delta.function and delta.function.name:
                    names[delta.index] = delta.function.name
                if delta.function and delta.function.arguments:
                    arguments.setdefault(delta.index, []).append(delta.function.arguments)
    assert text == "Checking both."
    assert ids == {0: "call-0", 1: "call-1"} and names == {0: "get_weather", 1: "get_forecast"}
    assert len(arguments[1]) > 1, "arguments arrive in pieces"
    assert ["".join(arguments[0]), "".join(arguments[1])] == ['{"city":"Oslo"}', FORECAST_ARGUMENTS]
    assert [ch.finish_reason for c in chunks for ch in c.choices if ch.finish_reason] == ["tool_calls"]
    *body, last = chunks
    assert all(c.usage is None for c in body)
    assert last.choices == [] and last.usage is not None and last.usage.total_tokens == 0


def test_replay_chat_stream_without_usage_has_no_usage_chunk() -> None:
    with replay_client(Replayer(CHAT, ANSWER)) as client:
        stream = client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "Hi"}], stream=True
        )
        chunks = list(stream)
    assert all(c.usage is None and len(c.choices) == 1 for c in chunks)
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == ANSWER["text"]


def test_replay_chat_stream_helper_final_completion() -> None:
    with (
        replay_client(Replayer(CHAT, CALLS)) as client,
        client.chat.completions.stream(
            model=MODEL, messages=[{"role": "user", "content": BOTH}], tools=CHAT_TOOLS
        ) as stream,
    ):
        events = list(stream)
        final = stream.get_final_completion()
    content_done = [e.content for e in events if e.type == "content.done"]
    arguments_done = [
        (e.index, e.name, e.arguments) for e in events if e.type == "tool_calls.function.arguments.done"
    ]
    assert content_done == ["Checking both."]
    assert arguments_done == [(0, "get_weather", '{"city":"Oslo"}'), (1, "get_forecast", FORECAST_ARGUMENTS)]
    message = final.choices[0].message
    assert message.content == "Checking both." and final.choices[0].finish_reason == "tool_calls"
    assert [(c.id, c.function.name) for c in message.tool_calls or []] == [
        ("call-0", "get_weather"),
        ("call-1", "get_forecast"),
    ]


def test_replay_chat_async_create_stream_and_helper() -> None:
    async def run() -> tuple[list[str], str, str | None]:
        async with async_replay_client(Replayer(CHAT, CALLS, ANSWER, ANSWER)) as client:
            plain = await client.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": BOTH}]
            )
            stream = await client.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "Hi"}], stream=True
            )
            text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
            async with client.chat.completions.stream(
                model=MODEL, messages=[{"role": "user", "content": "Hi"}]
            ) as helper:
                final = await helper.get_final_completion()
        return (
            [c.id for c in plain.choices[0].message.tool_calls or []],
            text,
            final.choices[0].message.content,
        )

    ids, text, final = asyncio.run(run())
    assert ids == ["call-0", "call-1"]
    assert text == final == ANSWER["text"]


# --- replaying Responses ---------------------------------------------------------------------------


def test_replay_responses_create() -> None:
    with replay_client(Replayer(RESPONSES, CALLS, ANSWER)) as client:
        calls = client.responses.create(
            model=MODEL, input=BOTH, tools=RESPONSES_TOOLS, instructions="Be brief."
        )
        answer = client.responses.create(model=MODEL, input="Hi")
    assert [i.type for i in calls.output] == ["message", "function_call", "function_call"]
    assert calls.output_text == "Checking both."
    assert [(i.call_id, i.name, i.arguments) for i in calls.output if i.type == "function_call"] == [
        ("call-0", "get_weather", '{"city":"Oslo"}'),
        ("call-1", "get_forecast", FORECAST_ARGUMENTS),
    ]
    assert calls.id.startswith("resp_blackbox_") and calls.status == "completed"
    assert calls.instructions == "Be brief." and [t.type for t in calls.tools] == ["function", "function"]
    assert calls.usage is not None and calls.usage.total_tokens == 0
    assert answer.output_text == ANSWER["text"] and [i.type for i in answer.output] == ["message"]


def test_replay_responses_raw_stream_events() -> None:
    with replay_client(Replayer(RESPONSES, CALLS)) as client:
        events = list(client.responses.create(model=MODEL, input=BOTH, stream=True))
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert (events[0].type, events[1].type, events[-1].type) == (
        "response.created",
        "response.in_progress",
        "response.completed",
    )
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    arguments: dict[int, str] = {}
    for event in events:
        if event.type == "response.function_call_arguments.delta":
            arguments[event.output_index] = arguments.get(event.output_index, "") + event.delta
    assert text == "Checking both."
    assert arguments == {1: '{"city":"Oslo"}', 2: FORECAST_ARGUMENTS}
    added = [e.item for e in events if e.type == "response.output_item.added"]
    assert [getattr(i, "call_id", None) for i in added] == [None, "call-0", "call-1"]
    first, last = events[0], events[-1]
    assert first.type == "response.created" and last.type == "response.completed"
    assert last.response.id == first.response.id


def test_replay_responses_stream_helper_final_response() -> None:
    with (
        replay_client(Replayer(RESPONSES, CALLS)) as client,
        client.responses.stream(model=MODEL, input=BOTH, tools=RESPONSES_TOOLS) as stream,
    ):
        events = list(stream)
        final = stream.get_final_response()
    assert [e.text for e in events if e.type == "response.output_text.done"] == ["Checking both."]
    assert [e.arguments for e in events if e.type == "response.function_call_arguments.done"] == [
        '{"city":"Oslo"}',
        FORECAST_ARGUMENTS,
    ]
    assert final.output_text == "Checking both."
    assert [(i.call_id, i.name) for i in final.output if i.type == "function_call"] == [
        ("call-0", "get_weather"),
        ("call-1", "get_forecast"),
    ]


def test_replay_responses_async_create_and_stream() -> None:
    async def run() -> tuple[list[str], str, str]:
        async with async_replay_client(Replayer(RESPONSES, CALLS, ANSWER, ANSWER)) as client:
            plain = await client.responses.create(model=MODEL, input=BOTH)
            raw = await client.responses.create(model=MODEL, input="Hi", stream=True)
            text = "".join([e.delta async for e in raw if e.type == "response.output_text.delta"])
            async with client.responses.stream(model=MODEL, input="Hi") as helper:
                final = await helper.get_final_response()
        return [i.call_id for i in plain.output if i.type == "function_call"], text, final.output_text

    call_ids, text, final = asyncio.run(run())
    assert call_ids == ["call-0", "call-1"]
    assert text == final == ANSWER["text"]


# --- a whole agent: recorded, then replayed, sends the same neutral requests -------------------


def chat_agent(client: openai.OpenAI, *, stream: bool) -> str:
    """Ask, run the tools the model calls, answer: the usual loop, streamed or not."""
    messages: list[ChatCompletionMessageParam] = [
        {"role": "system", "content": "Use the tools."},
        {"role": "user", "content": BOTH},
    ]
    for _ in range(3):
        if stream:
            with client.chat.completions.stream(model=MODEL, messages=messages, tools=CHAT_TOOLS) as events:
                message: Any = events.get_final_completion().choices[0].message
        else:
            message = client.chat.completions.create(model=MODEL, messages=messages, tools=CHAT_TOOLS)
            message = message.choices[0].message
        calls = [c for c in message.tool_calls or [] if c.type == "function"]
        if not calls:
            return str(message.content)
        wire_calls: list[ChatCompletionMessageFunctionToolCallParam] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.function.name, "arguments": c.function.arguments},
            }
            for c in calls
        ]
        messages.append({"role": "assistant", "content": message.content, "tool_calls": wire_calls})
        messages += [
            {"role": "tool", "tool_call_id": c.id, "content": TOOL_RESULTS[c.function.name]} for c in calls
        ]
    raise AssertionError("no final answer")


def responses_agent(client: openai.OpenAI, *, stream: bool) -> str:
    history: list[ResponseInputItemParam] = [{"role": "user", "content": BOTH}]
    for _ in range(3):
        if stream:
            with client.responses.stream(model=MODEL, input=history, tools=RESPONSES_TOOLS) as events:
                response: Any = events.get_final_response()
        else:
            response = client.responses.create(model=MODEL, input=history, tools=RESPONSES_TOOLS)
        calls = [i for i in response.output if i.type == "function_call"]
        if not calls:
            return str(response.output_text)
        history += [cast(ResponseInputItemParam, i.to_dict()) for i in response.output]
        history += [
            {"type": "function_call_output", "call_id": c.call_id, "output": TOOL_RESULTS[c.name]}
            for c in calls
        ]
    raise AssertionError("no final answer")


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("provider", [CHAT, RESPONSES], ids=["chat", "responses"])
def test_recorded_agent_replays_with_identical_model_inputs(
    fake_llm: FakeLLMServer, capture: Capture, provider: Provider, stream: bool
) -> None:
    agent = chat_agent if provider is CHAT else responses_agent
    with recording_client(fake_llm, capture) as client:
        answer = agent(client, stream=stream)
    ids = CallIds()
    recorded = [neutral(provider, exchange, ids) for exchange in capture.exchanges]
    assert [o["type"] for _, o in recorded] == ["tool_calls", "final_answer"]

    replayer = Replayer(provider, *(output for _, output in recorded))
    with replay_client(replayer) as client:
        replayed = agent(client, stream=stream)
    replay_ids = CallIds()  # replay hands out neutral ids, which map to themselves
    assert [provider.model_input(r, replay_ids) for r in replayer.requests] == [i for i, _ in recorded]
    assert replayed == answer == "Final answer: cold | colder"
    assert replay_ids.to_neutral == {}


# --- round trip and determinism ----------------------------------------------------------------------


def call(n: int, name: str, tool_input: Any) -> JsonObject:
    return {"toolCallId": f"call-{n}", "toolName": name, "toolInput": tool_input}


OUTPUTS: list[JsonObject] = [
    {"type": "final_answer", "text": "Final answer: 42"},
    {"type": "final_answer", "text": ""},
    {"type": "tool_calls", "calls": [call(0, "get_weather", {"city": "Oslo"})]},
    {"type": "tool_calls", "calls": [call(0, "a", {}), call(1, "b", {"x": 1}), call(2, "c", [1, 2])]},
    CALLS,
    {"type": "final_answer", "text": 'naïve — 日本語 😀 \u2028 line\nbreak "quoted" \\ \x00 \ud83d'},
    {
        "type": "tool_calls",
        "calls": [call(7, "lookup_ü", {"city": "Zürich", "note": "😀\u2028\ud800"})],
        "text": "é",
    },
    {
        "type": "tool_calls",
        "calls": [
            call(
                4,
                "search",
                {
                    "filter": {"and": [{"field": "a", "value": [1, 2.5, None, True, -0.0, 1e-7]}]},
                    "raw": '{"no": 1}',
                },
            )
        ],
    },
    # Arguments that are not a JSON object: raw text, JSON text inside a string, a bare value.
    {
        "type": "tool_calls",
        "calls": [call(0, "shell", "ls -la | grep x"), call(1, "echo", "42"), call(2, "n", 42)],
    },
    {"type": "tool_calls", "calls": [call(0, "empty", ""), call(1, "nan", "NaN"), call(2, "space", " ")]},
]


def request_for(provider: Provider, stream: bool, *, include_usage: bool = True) -> JsonObject:
    if provider is CHAT:
        request: JsonObject = {"model": MODEL, "messages": [{"role": "user", "content": "Hi"}]}
        if include_usage:
            request["stream_options"] = {"include_usage": True}
    else:
        request = {"model": MODEL, "input": "Hi"}
    return {**request, "stream": stream}


PROVIDERS = pytest.mark.parametrize("provider", [CHAT, RESPONSES], ids=["chat", "responses"])
STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])


@PROVIDERS
@STREAMS
@pytest.mark.parametrize("output", OUTPUTS)
def test_round_trip(provider: Provider, stream: bool, output: JsonObject) -> None:
    wire = provider.wire_response(output, request_for(provider, stream))
    assert provider.model_output(wire.body, streamed=stream, ids=CallIds()) == output


def json_values() -> st.SearchStrategy[Any]:
    scalars = (
        st.none()
        | st.booleans()
        | st.integers(-(2**53), 2**53)
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=12)
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
        max_leaves=8,
    )


@st.composite
def outputs(draw: st.DrawFn) -> JsonObject:
    text = draw(st.text(max_size=40))
    names = st.text(min_size=1, max_size=12)
    calls = [call(n, draw(names), draw(json_values())) for n in range(draw(st.integers(0, 3)))]
    if not calls:
        return {"type": "final_answer", "text": text}
    return {"type": "tool_calls", "calls": calls, **({"text": text} if text else {})}


@given(output=outputs(), stream=st.booleans(), chat=st.booleans(), include_usage=st.booleans())
def test_round_trip_property(output: JsonObject, stream: bool, chat: bool, include_usage: bool) -> None:
    provider: Provider = CHAT if chat else RESPONSES
    wire = provider.wire_response(output, request_for(provider, stream, include_usage=include_usage))
    assert provider.model_output(wire.body, streamed=stream, ids=CallIds()) == output


@PROVIDERS
def test_single_call_shape_reads_back_as_tool_calls(provider: Provider) -> None:
    single = {"type": "tool_call", **call(2, "get_weather", {"city": "Oslo"})}
    for stream in (False, True):
        wire = provider.wire_response(single, request_for(provider, stream))
        read = provider.model_output(wire.body, streamed=stream, ids=CallIds())
        assert read == {"type": "tool_calls", "calls": [call(2, "get_weather", {"city": "Oslo"})]}


@PROVIDERS
@STREAMS
def test_wire_responses_are_deterministic(provider: Provider, stream: bool) -> None:
    for output in OUTPUTS:
        request = request_for(provider, stream)
        first = provider.wire_response(output, request)
        again = provider.wire_response(copy.deepcopy(output), dict(reversed(list(request.items()))))
        assert (first.status, first.headers, first.body) == (again.status, again.headers, again.body)
    bodies = {provider.wire_response(o, request_for(provider, stream)).body for o in OUTPUTS}
    assert len(bodies) == len(OUTPUTS), "different outputs, different bytes (ids included)"
    content_type = "text/event-stream" if stream else "application/json"
    assert ("content-type", content_type) in first.headers


# --- requests in detail ------------------------------------------------------------------------------


def test_handles_only_its_endpoint() -> None:
    assert CHAT.handles("POST", "/v1/chat/completions") and CHAT.handles("post", "/chat/completions/")
    assert CHAT.handles("POST", "/openai/deployments/gpt/chat/completions?api-version=2024-10-21")
    assert not CHAT.handles("GET", "/v1/chat/completions") and not CHAT.handles("POST", "/v1/responses")
    assert RESPONSES.handles("POST", "/v1/responses") and RESPONSES.handles(
        "POST", "/openai/v1/responses?x=1"
    )
    assert not RESPONSES.handles("POST", "/v1/responses/resp_1/cancel")
    assert not RESPONSES.handles("POST", "/v1/chat/completions")
    assert CHAT.is_streaming({"stream": True}) and not CHAT.is_streaming({"stream": False})
    assert RESPONSES.is_streaming({"stream": True}) and not RESPONSES.is_streaming({})


def test_chat_request_parts_images_late_system_and_unknown_ids() -> None:
    request: JsonObject = {
        "model": MODEL,
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA", "detail": "low"}},
                {"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}},
            ]},
            {"role": "assistant", "content": [{"type": "text", "text": "A cat."}]},
            {"role": "system", "content": "Now be terse."},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_abc", "type": "function", "function": {"name": "look", "arguments": "not json"}}
            ]},
            {"role": "tool", "tool_call_id": "call_abc", "content": "a tabby"},
            {"role": "tool", "tool_call_id": "call_unseen", "name": "legacy", "content": None},
            {"role": "user", "content": "Thanks"},
        ],
        "tools": [{"type": "custom", "custom": {"name": "grammar", "description": "free text"}}],
        "tool_choice": {"type": "function", "function": {"name": "look"}},
        "response_format": {"type": "json_object"},
        "stop": ["END"],
        "max_tokens": 10,
        "seed": 7,
        "stream_options": {"include_usage": True},
    }  # fmt: skip
    before = copy.deepcopy(request)
    ids = CallIds()
    assert CHAT.model_input(request, ids) == {
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image", "url": "data:image/png;base64,AAAA", "detail": "low"},
                {"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}},
            ]},
            {"role": "assistant", "content": [{"type": "text", "text": "A cat."}]},
            {"role": "system", "content": "Now be terse."},
            {"role": "assistant", "content": [tool_use("call-0", "look", "not json")]},
            {"role": "user", "content": [
                tool_result("call-0", "look", "a tabby"),
                tool_result("call-1", "legacy", ""),
            ]},
            {"role": "user", "content": "Thanks"},
        ],
        # A custom tool (free text, not a JSON schema): its type is a setting (issue 18).
        "tools": [{"name": "grammar", "description": "free text", "settings": {"type": "custom"}}],
        "model": MODEL,
        "params": {
            "toolChoice": {"type": "function", "function": {"name": "look"}},
            "responseFormat": {"type": "json_object"},
            "stop": ["END"],
            "maxTokens": 10,
            "seed": 7,  # a behaviour setting: compared under its own name; stream_options is not
        },
    }  # fmt: skip
    assert request == before, "model_input does not touch the request"
    assert CHAT.model_input(request, ids) == CHAT.model_input(request, CallIds()), "same ids, same payload"


def test_responses_request_items_turns_and_dropped_items() -> None:
    request: JsonObject = {
        "model": MODEL,
        "instructions": "Be brief.",
        "previous_response_id": "resp_0123456789abcdef0123",
        "store": True,
        "input": [
            {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "Use tools."}]},
            {"role": "user", "content": [
                {"type": "input_text", "text": "Compare"},
                {"type": "input_image", "image_url": "https://x.test/a.png", "detail": "high"},
                {"type": "input_image", "file_id": "file-1", "detail": "auto"},
                {"type": "input_file", "file_id": "file-2"},
            ]},
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "Let me ", "annotations": []}]},
            {"type": "reasoning", "id": "rs_2", "summary": []},
            {"type": "message", "id": "msg_2", "role": "assistant",
             "content": [{"type": "output_text", "text": "look.", "annotations": []}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_x", "name": "look",
             "arguments": '{"a": 1}'},
            {"type": "item_reference", "id": "fc_2"},
            {"type": "function_call_output", "call_id": "call_x", "output": "seen"},
            {"type": "function_call_output", "call_id": "call_y", "name": "other", "output": [
                {"type": "input_text", "text": "two"}
            ]},
            {"role": "assistant", "content": "Done."},
        ],
        "tools": [{"type": "web_search"}, {"type": "function", "name": "look", "parameters": None}],
        "text": {"format": {"type": "json_schema", "name": "x", "schema": {}}},
        "max_output_tokens": 5,
        "top_p": 0.5,
    }  # fmt: skip
    assert RESPONSES.model_input(request, CallIds()) == {
        "systemPrompt": "Be brief.\n\nUse tools.",
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "Compare"},
                {"type": "image", "url": "https://x.test/a.png", "detail": "high"},
                {"type": "image", "fileId": "file-1", "detail": "auto"},
                {"type": "input_file", "file_id": "file-2"},
            ]},
            # The reasoning items the program sent back are kept (issue 18), first in the turn.
            {"role": "assistant", "content": [
                {"type": "reasoning", "summary": []},
                {"type": "reasoning", "summary": []},
                {"type": "text", "text": "Let me look."},
                tool_use("call-0", "look", {"a": 1}),
            ]},
            {"role": "user", "content": [
                tool_result("call-0", "look", "seen"),
                tool_result("call-1", "other", [{"type": "input_text", "text": "two"}]),
            ]},
            {"role": "assistant", "content": "Done."},
        ],
        "tools": [{"name": "web_search", "description": ""}, {"name": "look", "description": ""}],
        "model": MODEL,
        "params": {
            "maxTokens": 5,
            "topP": 0.5,
            "responseFormat": {"type": "json_schema", "name": "x", "schema": {}},
        },
    }  # fmt: skip


# --- responses that are not answers ---------------------------------------------------------------


def sse(*payloads: JsonObject | str) -> bytes:
    return "".join(f"data: {p if isinstance(p, str) else json.dumps(p)}\n\n" for p in payloads).encode()


@pytest.mark.parametrize(
    ("provider", "body", "streamed", "message"),
    [
        (CHAT, b'{"error": {"message": "quota", "type": "x"}}', False, "quota"),
        (CHAT, sse({"error": {"message": "overloaded"}}), True, "overloaded"),
        (CHAT, sse({"choices": [{"index": 0, "delta": {"content": "Hel"}}]}), True, "finish_reason"),
        (RESPONSES, b'{"error": {"message": "bad", "code": "x"}}', False, "bad"),
        (RESPONSES, sse({"type": "error", "message": "rate limited"}), True, "rate limited"),
        (
            RESPONSES,
            sse({"type": "response.failed", "response": {"error": {"message": "boom"}}}),
            True,
            "boom",
        ),
        (RESPONSES, sse({"type": "response.created", "response": {"id": "r"}}), True, "response.completed"),
    ],
    ids=[
        "chat-error",
        "chat-stream-error",
        "chat-cut-short",
        "resp-error",
        "resp-error-event",
        "resp-failed",
        "resp-cut",
    ],
)
def test_errors_and_cut_streams_raise(provider: Provider, body: bytes, streamed: bool, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        provider.model_output(body, streamed=streamed, ids=CallIds())


def test_responses_stream_without_completed_output_is_rebuilt_from_events() -> None:
    """The SDK accepts a response.completed without output and uses the finished items instead."""
    wire = RESPONSES.wire_response(CALLS, {"model": MODEL, "input": "Hi", "stream": True})
    events = [json.loads(line[6:]) for line in wire.body.decode().splitlines() if line.startswith("data: ")]
    assert events[-1]["type"] == "response.completed"
    events[-1]["response"]["output"] = None
    assert RESPONSES.model_output(sse(*events), streamed=True, ids=CallIds()) == CALLS
    # With no output_item.done either, the items are what the added events and the deltas built.
    deltas_only = [e for e in events if e["type"] != "response.output_item.done"]
    assert RESPONSES.model_output(sse(*deltas_only), streamed=True, ids=CallIds()) == CALLS
