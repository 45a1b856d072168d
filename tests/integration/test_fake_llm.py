"""The fake LLM server, driven by the real openai, anthropic and google-genai SDKs (and, for the wire format,
urllib)."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any, cast

import anthropic
import openai
import pytest
from anthropic.types import MessageParam, ToolParam
from fake_llm import SLOW_SECONDS, FakeLLMServer  # examples/ is on sys.path (conftest.py)
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as gtypes
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam
from openai.types.responses import FunctionToolParam, ResponseInputItemParam

OPENAI_TOOLS: list[ChatCompletionToolParam] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_forecast",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            },
        },
    },
]
ANTHROPIC_TOOLS: list[ToolParam] = [
    {"name": t["function"]["name"], "input_schema": dict(t["function"].get("parameters", {}))}
    for t in OPENAI_TOOLS
]
QUESTION = "What's the weather in New York?"
BOTH = "Give me both the weather and the 4 day forecast for Oslo"
MODEL = "gpt-4o-mini"
CLAUDE = "claude-haiku-4-5"  # the SDK warns (an error under -W error) on deprecated model names


@pytest.fixture
def srv() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture
def oai(srv: FakeLLMServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=srv.openai_base_url, api_key="sk-fake", max_retries=0) as client:
        yield client


@pytest.fixture
def claude(srv: FakeLLMServer) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(base_url=srv.anthropic_base_url, api_key="sk-ant-fake", max_retries=0) as client:
        yield client


def user(text: str) -> list[ChatCompletionMessageParam]:
    return [{"role": "user", "content": text}]


def claude_user(text: str) -> list[MessageParam]:
    return [{"role": "user", "content": text}]


def post_raw(url: str, data: bytes) -> tuple[int, str, str]:
    """POST with urllib: (status, content type, body text), to see the bytes the SDKs parse."""
    request = urllib.request.Request(url, data, {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as err:
        with err:
            return err.code, err.headers["Content-Type"], err.read().decode()


def sse_events(text: str) -> list[tuple[str | None, str]]:
    """(event name, data) of each SSE event in a body."""
    events: list[tuple[str | None, str]] = []
    for block in filter(None, text.split("\n\n")):
        fields = dict(line.split(": ", 1) for line in block.split("\n"))
        events.append((fields.get("event"), fields["data"]))
    return events


# --- server basics ---------------------------------------------------------------------------


def test_start_stop_urls_and_recorded_requests() -> None:
    server = FakeLLMServer().start()
    try:
        assert server.openai_base_url == f"http://127.0.0.1:{server.port}/v1"
        assert server.anthropic_base_url == f"http://127.0.0.1:{server.port}"
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        status, _, _ = post_raw(server.openai_base_url + "/chat/completions", json.dumps(body).encode())
        assert status == 200
        assert server.requests == [("/v1/chat/completions", body)]
    finally:
        server.stop()
    assert len(server.requests) == 1, "requests are kept after stop()"
    with pytest.raises(RuntimeError):
        _ = server.port
    server.stop()  # stopping twice is harmless


def test_unknown_paths_and_bad_json_get_provider_shaped_errors(
    srv: FakeLLMServer, oai: openai.OpenAI
) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        oai.models.list()
    assert caught.value.body == {
        "message": "unknown path /v1/models",
        "type": "not_found_error",
        "param": None,
        "code": None,
    }
    status, ctype, text = post_raw(srv.openai_base_url + "/embeddings", b'{"input": "x"}')
    assert (status, ctype) == (404, "application/json")
    assert json.loads(text)["error"]["type"] == "not_found_error"

    status, _, text = post_raw(srv.anthropic_base_url + "/v1/messages", b"{not json")
    assert status == 400
    error = json.loads(text)
    assert (error["type"], error["error"]["type"]) == ("error", "invalid_request_error")
    assert error["error"]["message"].startswith("invalid JSON body")


# --- OpenAI Chat Completions -----------------------------------------------------------------


def test_openai_text_answer_without_tools(srv: FakeLLMServer, oai: openai.OpenAI) -> None:
    completion = oai.chat.completions.create(model=MODEL, messages=user("Hello there"))
    assert completion.id.startswith("chatcmpl-")
    assert completion.object == "chat.completion"
    assert completion.model == MODEL
    choice = completion.choices[0]
    assert choice.finish_reason == "stop"
    assert choice.message.role == "assistant"
    assert choice.message.content == "Final answer: you asked 'Hello there'"
    assert choice.message.tool_calls is None
    usage = completion.usage
    assert usage is not None
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert srv.requests[0][1]["messages"] == [{"role": "user", "content": "Hello there"}]


def test_openai_calls_first_tool_with_arguments_from_schema(oai: openai.OpenAI) -> None:
    completion = oai.chat.completions.create(model=MODEL, messages=user(QUESTION), tools=OPENAI_TOOLS)
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    calls = choice.message.tool_calls or []
    assert len(calls) == 1
    call = calls[0]
    assert call.type == "function"
    assert call.id.startswith("call_")
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "New York"}


def test_openai_parallel_tool_calls_when_user_says_both(oai: openai.OpenAI) -> None:
    completion = oai.chat.completions.create(model=MODEL, messages=user(BOTH), tools=OPENAI_TOOLS)
    calls = [c for c in completion.choices[0].message.tool_calls or [] if c.type == "function"]
    assert [c.function.name for c in calls] == ["get_weather", "get_forecast"]
    assert [json.loads(c.function.arguments) for c in calls] == [
        {"city": "Oslo"},
        {"city": "Oslo", "days": 4},
    ]
    assert len({c.id for c in calls}) == 2


def test_openai_final_answer_quotes_tool_results_then_new_question_calls_again(oai: openai.OpenAI) -> None:
    first = oai.chat.completions.create(model=MODEL, messages=user(QUESTION), tools=OPENAI_TOOLS)
    call = (first.choices[0].message.tool_calls or [])[0]
    assert call.type == "function"
    messages: list[ChatCompletionMessageParam] = [
        *user(QUESTION),
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call.id, "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": call.id, "content": "sunny, 21C"},
    ]
    final = oai.chat.completions.create(model=MODEL, messages=messages, tools=OPENAI_TOOLS)
    assert final.choices[0].finish_reason == "stop"
    assert final.choices[0].message.content == "Final answer: sunny, 21C"
    assert final.choices[0].message.tool_calls is None

    # A new user message starts a new round: tools are called again.
    messages += [{"role": "assistant", "content": "sunny"}, *user("And in Rome?")]
    again = oai.chat.completions.create(model=MODEL, messages=messages, tools=OPENAI_TOOLS)
    calls = again.choices[0].message.tool_calls or []
    assert calls and calls[0].type == "function"
    assert json.loads(calls[0].function.arguments) == {"city": "Rome"}


def test_openai_tool_choice_none_answers_in_text(oai: openai.OpenAI) -> None:
    completion = oai.chat.completions.create(
        model=MODEL, messages=user(QUESTION), tools=OPENAI_TOOLS, tool_choice="none"
    )
    assert completion.choices[0].message.tool_calls is None
    assert completion.choices[0].message.content == f"Final answer: you asked {QUESTION!r}"


def test_openai_stream_chunks_with_split_tool_call_deltas_and_usage(oai: openai.OpenAI) -> None:
    stream = oai.chat.completions.create(
        model=MODEL,
        messages=user(BOTH),
        tools=OPENAI_TOOLS,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert all(c.object == "chat.completion.chunk" and c.model == MODEL for c in chunks)
    assert len({c.id for c in chunks}) == 1 and chunks[0].id.startswith("chatcmpl-")
    assert chunks[0].choices[0].delta.role == "assistant"
    assert all(ch.delta.role is None for c in chunks[1:] for ch in c.choices)

    # Reassemble the tool calls as a client does: id/name once, arguments in pieces, keyed by index.
    ids: dict[int, str] = {}
    names: dict[int, str] = {}
    args: dict[int, list[str]] = {}
    for chunk in chunks:
        for choice in chunk.choices:
            for delta in choice.delta.tool_calls or []:
                if delta.id:
                    assert delta.index not in ids, "id is sent once per tool call"
                    ids[delta.index] = delta.id
                if delta.function and delta.function.name:
                    names[delta.index] = delta.function.name
                if delta.function and delta.function.arguments:
                    args.setdefault(delta.index, []).append(delta.function.arguments)
    assert names == {0: "get_weather", 1: "get_forecast"}
    assert all(i.startswith("call_") for i in ids.values()) and len(set(ids.values())) == 2
    assert all(len(pieces) >= 2 for pieces in args.values()), "arguments arrive split over several chunks"
    assert json.loads("".join(args[1])) == {"city": "Oslo", "days": 4}

    finish = [ch.finish_reason for c in chunks for ch in c.choices if ch.finish_reason]
    assert finish == ["tool_calls"]
    *body, last = chunks
    assert all(c.usage is None for c in body)
    assert last.choices == [] and last.usage is not None
    assert last.usage.total_tokens == last.usage.prompt_tokens + last.usage.completion_tokens > 0


def test_openai_stream_text_deltas_without_usage(oai: openai.OpenAI) -> None:
    with oai.chat.completions.create(model=MODEL, messages=user("Hello there"), stream=True) as stream:
        chunks = list(stream)
    pieces = [ch.delta.content for c in chunks for ch in c.choices if ch.delta.content]
    assert len(pieces) > 2
    assert "".join(pieces) == "Final answer: you asked 'Hello there'"
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert all(c.usage is None for c in chunks), "no usage chunk unless include_usage"


def test_openai_sse_wire_format(srv: FakeLLMServer) -> None:
    body = {"model": MODEL, "messages": user("Hi"), "stream": True, "stream_options": {"include_usage": True}}
    status, ctype, text = post_raw(srv.openai_base_url + "/chat/completions", json.dumps(body).encode())
    assert (status, ctype) == (200, "text/event-stream")
    events = sse_events(text)
    assert all(name is None for name, _ in events), "OpenAI events are unnamed"
    assert events[-1] == (None, "[DONE]")
    assert [json.loads(data)["object"] for _, data in events[:-1]] == ["chat.completion.chunk"] * (
        len(events) - 1
    )


def test_openai_stream_helper_text_events_and_final_completion(oai: openai.OpenAI) -> None:
    with oai.chat.completions.stream(
        model=MODEL, messages=user("Hello there"), stream_options={"include_usage": True}
    ) as stream:
        events = list(stream)
        final = stream.get_final_completion()
    types = [e.type for e in events]
    assert "content.delta" in types and types.count("content.done") == 1
    done = next(e for e in events if e.type == "content.done")
    assert done.content == "Final answer: you asked 'Hello there'"
    assert final.choices[0].message.content == done.content
    assert final.choices[0].finish_reason == "stop"
    assert final.usage is not None and final.usage.completion_tokens > 0


def test_openai_stream_helper_parallel_tool_calls(oai: openai.OpenAI) -> None:
    with oai.chat.completions.stream(model=MODEL, messages=user(BOTH), tools=OPENAI_TOOLS) as stream:
        done = [e for e in stream if e.type == "tool_calls.function.arguments.done"]
        final = stream.get_final_completion()
    assert [(e.index, e.name, json.loads(e.arguments)) for e in done] == [
        (0, "get_weather", {"city": "Oslo"}),
        (1, "get_forecast", {"city": "Oslo", "days": 4}),
    ]
    calls = final.choices[0].message.tool_calls or []
    assert [c.function.name for c in calls] == ["get_weather", "get_forecast"]
    assert all(c.id.startswith("call_") for c in calls)
    assert final.choices[0].finish_reason == "tool_calls"


def test_async_openai_create_stream_and_helper(srv: FakeLLMServer) -> None:
    async def run() -> tuple[str | None, str, str | None]:
        async with openai.AsyncOpenAI(
            base_url=srv.openai_base_url, api_key="sk-fake", max_retries=0
        ) as client:
            plain = await client.chat.completions.create(
                model=MODEL, messages=user(QUESTION), tools=OPENAI_TOOLS
            )
            stream = await client.chat.completions.create(model=MODEL, messages=user("Hi"), stream=True)
            text = "".join([ch.delta.content or "" async for c in stream for ch in c.choices])
            async with client.chat.completions.stream(model=MODEL, messages=user("Hey")) as helper:
                final = await helper.get_final_completion()
            calls = plain.choices[0].message.tool_calls or []
            name = calls[0].function.name if calls and calls[0].type == "function" else None
            return name, text, final.choices[0].message.content

    name, text, final = asyncio.run(run())
    assert name == "get_weather"
    assert text == "Final answer: you asked 'Hi'"
    assert final == "Final answer: you asked 'Hey'"
    assert [path for path, _ in srv.requests] == ["/v1/chat/completions"] * 3


def test_openai_fail_500_raises_internal_server_error(srv: FakeLLMServer, oai: openai.OpenAI) -> None:
    with pytest.raises(openai.InternalServerError) as caught:
        oai.chat.completions.create(model="fail-500", messages=user("Hi"))
    err = caught.value
    assert err.status_code == 500
    assert err.type == "server_error"
    assert "injected failure" in err.message
    assert len(srv.requests) == 1, "max_retries=0: no retry"


def test_openai_slow_model_waits_and_can_time_out(srv: FakeLLMServer, oai: openai.OpenAI) -> None:
    start = time.monotonic()
    completion = oai.chat.completions.create(model="slow", messages=user("Hi"))
    assert time.monotonic() - start >= SLOW_SECONDS
    assert completion.choices[0].message.content == "Final answer: you asked 'Hi'"
    with pytest.raises(openai.APITimeoutError):
        oai.chat.completions.create(model="slow", messages=user("Hi"), timeout=0.2)


# --- Anthropic Messages ----------------------------------------------------------------------


def test_anthropic_text_answer_without_tools(claude: anthropic.Anthropic) -> None:
    message = claude.messages.create(model=CLAUDE, max_tokens=256, messages=claude_user("Hello there"))
    assert message.id.startswith("msg_")
    assert (message.type, message.role, message.model) == ("message", "assistant", CLAUDE)
    assert message.stop_reason == "end_turn"
    assert [b.type for b in message.content] == ["text"]
    assert message.content[0].type == "text"
    assert message.content[0].text == "Final answer: you asked 'Hello there'"
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0


def test_anthropic_tool_use_after_a_text_block(claude: anthropic.Anthropic) -> None:
    message = claude.messages.create(
        model=CLAUDE, max_tokens=256, messages=claude_user(QUESTION), tools=ANTHROPIC_TOOLS
    )
    assert message.stop_reason == "tool_use"
    text, tool = message.content
    assert text.type == "text" and text.text == "Let me look that up."
    assert tool.type == "tool_use"
    assert tool.id.startswith("toolu_")
    assert (tool.name, tool.input) == ("get_weather", {"city": "New York"})


def test_anthropic_parallel_tool_use_and_tool_result_round_trip(
    srv: FakeLLMServer, claude: anthropic.Anthropic
) -> None:
    first = claude.messages.create(
        model=CLAUDE, max_tokens=256, messages=claude_user(BOTH), tools=ANTHROPIC_TOOLS
    )
    uses = [b for b in first.content if b.type == "tool_use"]
    assert [(u.name, u.input) for u in uses] == [
        ("get_weather", {"city": "Oslo"}),
        ("get_forecast", {"city": "Oslo", "days": 4}),
    ]
    assert len({u.id for u in uses}) == 2

    messages: list[MessageParam] = [
        *claude_user(BOTH),
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": u.id, "name": u.name, "input": u.input} for u in uses],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": uses[0].id, "content": "cold"},
                # tool_result content may also be a list of text blocks
                {
                    "type": "tool_result",
                    "tool_use_id": uses[1].id,
                    "content": [{"type": "text", "text": "colder"}],
                },
            ],
        },
    ]
    final = claude.messages.create(model=CLAUDE, max_tokens=256, messages=messages, tools=ANTHROPIC_TOOLS)
    assert final.stop_reason == "end_turn"
    assert [b.type for b in final.content] == ["text"]
    assert final.content[0].type == "text" and final.content[0].text == "Final answer: cold | colder"
    assert srv.requests[-1][0] == "/v1/messages"
    assert srv.requests[-1][1]["messages"][2]["content"][0]["tool_use_id"] == uses[0].id


def test_anthropic_raw_stream_event_sequence(claude: anthropic.Anthropic) -> None:
    stream = claude.messages.create(
        model=CLAUDE, max_tokens=256, messages=claude_user(QUESTION), tools=ANTHROPIC_TOOLS, stream=True
    )
    events = list(stream)
    types = [e.type for e in events]
    assert types[0] == "message_start" and types[-2:] == ["message_delta", "message_stop"]
    assert [t for t in types if t != "content_block_delta"] == [
        "message_start",
        "content_block_start",
        "content_block_stop",
        "content_block_start",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    start = events[0]
    assert (
        start.type == "message_start" and start.message.id.startswith("msg_") and start.message.content == []
    )
    partial = [
        e.delta.partial_json
        for e in events
        if e.type == "content_block_delta" and e.delta.type == "input_json_delta" and e.index == 1
    ]
    assert partial[0] == "", "the real API opens tool input with an empty partial_json"
    assert len(partial) > 2 and json.loads("".join(partial)) == {"city": "New York"}
    delta = events[-2]
    assert delta.type == "message_delta"
    assert delta.delta.stop_reason == "tool_use" and delta.usage.output_tokens > 0


def test_anthropic_sse_wire_format_names_every_event(srv: FakeLLMServer) -> None:
    body = {"model": CLAUDE, "max_tokens": 10, "messages": claude_user("Hi"), "stream": True}
    status, ctype, text = post_raw(srv.anthropic_base_url + "/v1/messages", json.dumps(body).encode())
    assert (status, ctype) == (200, "text/event-stream")
    events = sse_events(text)
    # The SDK drops unnamed events, so each must carry an event: line matching its type.
    assert all(name == json.loads(data)["type"] for name, data in events)
    assert [name for name, _ in events][:2] == ["message_start", "ping"]
    assert "[DONE]" not in text


def test_anthropic_stream_helper_final_message(claude: anthropic.Anthropic) -> None:
    with claude.messages.stream(
        model=CLAUDE, max_tokens=256, messages=claude_user(BOTH), tools=ANTHROPIC_TOOLS
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "Let me look that up."
    assert final.stop_reason == "tool_use"
    uses = [b for b in final.content if b.type == "tool_use"]
    assert [(u.name, u.input) for u in uses] == [
        ("get_weather", {"city": "Oslo"}),
        ("get_forecast", {"city": "Oslo", "days": 4}),
    ]
    assert all(u.id.startswith("toolu_") for u in uses)
    assert final.usage.input_tokens > 0 and final.usage.output_tokens > 1, "message_delta usage wins"


def test_async_anthropic_create_and_stream(srv: FakeLLMServer) -> None:
    async def run() -> tuple[str, str, str | None]:
        async with anthropic.AsyncAnthropic(
            base_url=srv.anthropic_base_url, api_key="sk-ant-fake", max_retries=0
        ) as client:
            plain = await client.messages.create(model=CLAUDE, max_tokens=64, messages=claude_user("Hi"))
            async with client.messages.stream(
                model=CLAUDE, max_tokens=64, messages=claude_user(QUESTION), tools=ANTHROPIC_TOOLS
            ) as stream:
                final = await stream.get_final_message()
            text = plain.content[0].text if plain.content[0].type == "text" else ""
            tool = final.content[-1]
            return text, tool.name if tool.type == "tool_use" else "", final.stop_reason

    text, tool, stop = asyncio.run(run())
    assert text == "Final answer: you asked 'Hi'"
    assert (tool, stop) == ("get_weather", "tool_use")
    assert [body.get("stream") for _, body in srv.requests] == [None, True]


def test_anthropic_fail_500_raises_internal_server_error(
    srv: FakeLLMServer, claude: anthropic.Anthropic
) -> None:
    with pytest.raises(anthropic.InternalServerError) as caught:
        claude.messages.create(model="fail-500", max_tokens=10, messages=claude_user("Hi"))
    err = caught.value
    assert err.status_code == 500
    assert isinstance(err.body, dict) and err.body["error"]["type"] == "api_error"
    assert "injected failure" in err.body["error"]["message"]
    assert len(srv.requests) == 1, "max_retries=0: no retry"


# --- OpenAI Responses ------------------------------------------------------------------------

RESPONSES_TOOLS: list[FunctionToolParam] = [
    {
        "type": "function",
        "name": t["function"]["name"],
        "parameters": dict(t["function"].get("parameters", {})),
        "strict": False,
    }
    for t in OPENAI_TOOLS
]


def responses_user(text: str) -> list[ResponseInputItemParam]:
    return [{"role": "user", "content": text}]


def test_responses_text_answer_with_instructions(srv: FakeLLMServer, oai: openai.OpenAI) -> None:
    response = oai.responses.create(model=MODEL, input="Hello there", instructions="Be brief.")
    assert response.id.startswith("resp_")
    assert (response.object, response.status, response.model) == ("response", "completed", MODEL)
    assert response.output_text == "Final answer: you asked 'Hello there'"
    [message] = response.output
    assert message.type == "message" and message.id.startswith("msg_") and message.role == "assistant"
    usage = response.usage
    assert usage is not None and usage.input_tokens > 0 and usage.output_tokens > 0
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    assert srv.requests == [
        ("/v1/responses", {"model": MODEL, "input": "Hello there", "instructions": "Be brief."})
    ]


def test_responses_parallel_calls_then_answer_quoting_outputs_then_new_question(oai: openai.OpenAI) -> None:
    history = responses_user(BOTH)
    first = oai.responses.create(model=MODEL, input=history, tools=RESPONSES_TOOLS)
    calls = [item for item in first.output if item.type == "function_call"]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("get_weather", {"city": "Oslo"}),
        ("get_forecast", {"city": "Oslo", "days": 4}),
    ]
    assert all(c.call_id.startswith("call_") and (c.id or "").startswith("fc_") for c in calls)
    assert len({c.call_id for c in calls}) == 2 and first.output_text == ""

    # The documented loop: the output items go back as input, each followed by its result.
    history += [cast(ResponseInputItemParam, item.to_dict()) for item in first.output]
    history += [
        {"type": "function_call_output", "call_id": calls[0].call_id, "output": "cold"},
        # an output may also be a list of content parts
        {
            "type": "function_call_output",
            "call_id": calls[1].call_id,
            "output": [{"type": "input_text", "text": "colder"}],
        },
    ]
    final = oai.responses.create(model=MODEL, input=history, tools=RESPONSES_TOOLS)
    assert [item.type for item in final.output] == ["message"]
    assert final.output_text == "Final answer: cold | colder"

    history += responses_user(QUESTION)
    again = oai.responses.create(model=MODEL, input=history, tools=RESPONSES_TOOLS)
    assert [(i.name, i.arguments) for i in again.output if i.type == "function_call"] == [
        ("get_weather", '{"city": "New York"}')
    ]
    none = oai.responses.create(model=MODEL, input=QUESTION, tools=RESPONSES_TOOLS, tool_choice="none")
    assert none.output_text == f"Final answer: you asked {QUESTION!r}"


def test_responses_raw_stream_event_sequence(oai: openai.OpenAI) -> None:
    stream = oai.responses.create(model=MODEL, input=QUESTION, tools=RESPONSES_TOOLS, stream=True)
    events = list(stream)
    types = [e.type for e in events]
    assert [t for t in types if not t.endswith(".delta")] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    created, completed = events[0], events[-1]
    assert created.type == "response.created" and created.response.output == []
    assert completed.type == "response.completed" and created.response.id == completed.response.id
    added = events[2]
    assert added.type == "response.output_item.added" and added.item.type == "function_call"
    assert added.item.arguments == "", "arguments arrive as deltas"
    pieces = [e.delta for e in events if e.type == "response.function_call_arguments.delta"]
    assert len(pieces) >= 2 and json.loads("".join(pieces)) == {"city": "New York"}
    [call] = completed.response.output
    assert call.type == "function_call" and call.call_id == added.item.call_id
    assert call.arguments == "".join(pieces)
    assert completed.response.usage is not None and completed.response.usage.output_tokens > 0


def test_responses_sse_wire_format_names_every_event(srv: FakeLLMServer) -> None:
    body = {"model": MODEL, "input": "Hi", "stream": True}
    status, ctype, text = post_raw(srv.openai_base_url + "/responses", json.dumps(body).encode())
    assert (status, ctype) == (200, "text/event-stream")
    events = sse_events(text)
    assert all(name == json.loads(data)["type"] for name, data in events)
    assert [name for name, _ in events][:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert "[DONE]" not in text


def test_responses_stream_helper_text_and_function_calls(srv: FakeLLMServer) -> None:
    # Strict validation: every event and the final response match the SDK's models exactly.
    with openai.OpenAI(
        base_url=srv.openai_base_url, api_key="sk-fake", max_retries=0, _strict_response_validation=True
    ) as client:
        with client.responses.stream(model=MODEL, input="Hello there") as stream:
            deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
            text = stream.get_final_response()
        with client.responses.stream(model=MODEL, input=BOTH, tools=RESPONSES_TOOLS) as stream:
            done = [e for e in stream if e.type == "response.function_call_arguments.done"]
            calls = stream.get_final_response()
    assert len(deltas) > 2 and "".join(deltas) == text.output_text == "Final answer: you asked 'Hello there'"
    assert [json.loads(e.arguments) for e in done] == [{"city": "Oslo"}, {"city": "Oslo", "days": 4}]
    names = [i.name for i in calls.output if i.type == "function_call"]
    assert names == ["get_weather", "get_forecast"]


def test_async_responses_create_and_stream(srv: FakeLLMServer) -> None:
    async def run() -> tuple[str, str, list[str]]:
        async with openai.AsyncOpenAI(
            base_url=srv.openai_base_url, api_key="sk-fake", max_retries=0
        ) as client:
            plain = await client.responses.create(model=MODEL, input="Hi")
            raw = await client.responses.create(model=MODEL, input="Hey", stream=True)
            text = "".join([e.delta async for e in raw if e.type == "response.output_text.delta"])
            async with client.responses.stream(model=MODEL, input=QUESTION, tools=RESPONSES_TOOLS) as helper:
                final = await helper.get_final_response()
            return plain.output_text, text, [i.type for i in final.output]

    plain, text, types = asyncio.run(run())
    assert (plain, text) == ("Final answer: you asked 'Hi'", "Final answer: you asked 'Hey'")
    assert types == ["function_call"]
    assert [body.get("stream") for _, body in srv.requests] == [None, True, True]


def test_responses_fail_500_raises_internal_server_error(srv: FakeLLMServer, oai: openai.OpenAI) -> None:
    with pytest.raises(openai.InternalServerError) as caught:
        oai.responses.create(model="fail-500", input="Hi")
    assert caught.value.status_code == 500 and caught.value.type == "server_error"
    assert len(srv.requests) == 1, "max_retries=0: no retry"


# --- Gemini generateContent ------------------------------------------------------------------

GEMINI = "gemini-2.5-flash"
GEMINI_TOOLS = [
    gtypes.Tool(
        function_declarations=[
            gtypes.FunctionDeclaration(
                name=t["function"]["name"], parameters_json_schema=t["function"].get("parameters")
            )
            for t in OPENAI_TOOLS
        ]
    )
]


@pytest.fixture
def gemini(srv: FakeLLMServer) -> Iterator[genai.Client]:
    options = gtypes.HttpOptions(base_url=srv.gemini_base_url)
    with genai.Client(api_key="AIzaSy-fake-0123456789", http_options=options) as client:
        yield client


def gemini_config(**settings: Any) -> gtypes.GenerateContentConfig:
    return gtypes.GenerateContentConfig(
        automatic_function_calling=gtypes.AutomaticFunctionCallingConfig(disable=True), **settings
    )


def test_gemini_text_answer_model_in_the_path(srv: FakeLLMServer, gemini: genai.Client) -> None:
    assert srv.gemini_base_url == f"http://127.0.0.1:{srv.port}"
    config = gemini_config(system_instruction="Be brief.", temperature=0.3)
    response = gemini.models.generate_content(model=GEMINI, contents="Hello there", config=config)
    assert response.text == "Final answer: you asked 'Hello there'"
    assert response.model_version == GEMINI
    assert response.candidates and response.candidates[0].finish_reason == gtypes.FinishReason.STOP
    usage = response.usage_metadata
    assert usage and usage.prompt_token_count and usage.total_token_count
    [(path, body)] = srv.requests
    assert path.endswith(f"/models/{GEMINI}:generateContent")
    assert body["systemInstruction"]["parts"] == [{"text": "Be brief."}]


def test_gemini_function_calls_then_an_answer_quoting_the_responses(gemini: genai.Client) -> None:
    config = gemini_config(tools=GEMINI_TOOLS)
    question = gtypes.Content(role="user", parts=[gtypes.Part(text=BOTH)])
    first = gemini.models.generate_content(model=GEMINI, contents=[question], config=config)
    calls = first.function_calls or []
    assert [(c.name, c.args, c.id) for c in calls] == [
        ("get_weather", {"city": "Oslo"}, None),  # the API gives no ids: results follow by name and order
        ("get_forecast", {"city": "Oslo", "days": 4}, None),
    ]
    assert first.candidates and first.candidates[0].content
    responses = [
        gtypes.Part.from_function_response(name="get_weather", response={"result": "sunny, 21C"}),
        gtypes.Part.from_function_response(name="get_forecast", response={"days": ["rain"]}),
    ]
    contents = [question, first.candidates[0].content, gtypes.Content(role="user", parts=responses)]
    final = gemini.models.generate_content(model=GEMINI, contents=contents, config=config)
    assert final.text == 'Final answer: sunny, 21C | {"days":["rain"]}'
    careless = gemini.models.generate_content(model="careless", contents=contents, config=config)
    assert careless.text == "Final answer: I could not find that out."
    mode = gtypes.FunctionCallingConfig(mode=gtypes.FunctionCallingConfigMode.NONE)
    none = gemini_config(tools=GEMINI_TOOLS, tool_config=gtypes.ToolConfig(function_calling_config=mode))
    assert gemini.models.generate_content(model=GEMINI, contents=BOTH, config=none).function_calls is None


def test_gemini_stream_text_over_chunks_and_calls_in_one(srv: FakeLLMServer, gemini: genai.Client) -> None:
    chunks = list(gemini.models.generate_content_stream(model=GEMINI, contents="Hello there"))
    assert (
        len(chunks) > 2 and "".join(c.text or "" for c in chunks) == "Final answer: you asked 'Hello there'"
    )
    finishes = [c.candidates[0].finish_reason for c in chunks if c.candidates]
    assert finishes[-1] == gtypes.FinishReason.STOP and not any(finishes[:-1])
    calls = list(
        gemini.models.generate_content_stream(
            model=GEMINI, contents=BOTH, config=gemini_config(tools=GEMINI_TOOLS)
        )
    )
    assert [[fc.name for fc in c.function_calls or []] for c in calls] == [["get_weather", "get_forecast"]]
    # The wire: unnamed events ending in CRLF CRLF; without alt=sse, one JSON array.
    url = f"{srv.gemini_base_url}/v1beta/models/{GEMINI}:streamGenerateContent"
    body = json.dumps({"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]}).encode()
    status, ctype, text = post_raw(f"{url}?alt=sse", body)
    assert (status, ctype) == (200, "text/event-stream")
    events = [e for e in text.split("\r\n\r\n") if e]
    assert len(events) > 2 and all(e.startswith("data: {") for e in events)
    status, ctype, text = post_raw(url, body)
    assert (status, ctype) == (200, "application/json") and len(json.loads(text)) == len(events)


def test_async_gemini_create_and_stream(srv: FakeLLMServer, gemini: genai.Client) -> None:
    async def run() -> tuple[str | None, str]:
        async with gemini.aio as client:
            plain = await client.models.generate_content(model=GEMINI, contents="Hi")
            stream = await client.models.generate_content_stream(model=GEMINI, contents="Hey")
            return plain.text, "".join([c.text or "" async for c in stream])

    assert asyncio.run(run()) == ("Final answer: you asked 'Hi'", "Final answer: you asked 'Hey'")
    assert [path.rsplit(":", 1)[1] for path, _ in srv.requests] == [
        "generateContent",
        "streamGenerateContent",
    ]


def test_gemini_errors_in_the_apis_shape(srv: FakeLLMServer, gemini: genai.Client) -> None:
    with pytest.raises(genai_errors.ServerError) as failed:
        gemini.models.generate_content(model="fail-500", contents="Hi")
    assert (failed.value.code, failed.value.status) == (500, "INTERNAL")
    assert "injected failure" in (failed.value.message or "")
    assert len(srv.requests) == 1, "no retry"
    unknown = {"contents": [{"role": "user", "parts": [{"fooBar": 1}]}]}
    status, _, text = post_raw(
        f"{srv.gemini_base_url}/v1beta/models/{GEMINI}:generateContent", json.dumps(unknown).encode()
    )
    assert status == 400 and json.loads(text)["error"]["status"] == "INVALID_ARGUMENT"
