"""The OpenAI Responses translation's issue-18 features: every request field compared or named
transport, and stop reasons, refusals, reasoning items and hosted tool calls carried both ways.

Unit tests drive ``openai_responses`` directly (the synthesized responses parsed by the real SDK
with strict validation). The feature cells, ``test_feature[responses-<feature>-<sync|async>-<json|sse>]``,
drive the real ``openai`` client through two requests against a ``CannedProvider`` serving responses
written by hand in the API's wire shape (JSON, and the event stream with every event the API sends):
record, verify, replay offline, and a changed value that diverges naming both values.

The canned responses echo the settings the request set, as the API does, and leave out what only the
server knows (its defaults for settings the program left unset, the model snapshot name, annotations):
replay can reproduce only what the cassette and the request hold.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from helpers import CannedProvider, Raw, blocked_network
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.responses import Response, ResponseStreamEvent
from openai.types.responses.response_create_params import ResponseCreateParamsBase
from pydantic import TypeAdapter

import otel_blackbox
from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.output import sequence_of
from otel_blackbox._cassette.verify import verify_cassette
from otel_blackbox._cost.usage import without_usage
from otel_blackbox._types import JsonObject
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.openai_responses.fields import RESPONSES_FIELDS as REQUEST_FIELDS
from otel_blackbox._wire.openai_responses.translation import OpenAIResponses
from otel_blackbox.errors import ReplayDivergence

RESPONSES = OpenAIResponses()
KEY = "sk-fake-features-0123456789"
USAGE = {
    "input_tokens": 42,
    "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
    "output_tokens": 17,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 59,
}
# What a replay cannot give back as the live run had it: ids (the replay makes its own), timestamps,
# token counts.
UNCOMPARED = frozenset({"id", "call_id", "created_at", "completed_at", "usage"})


def tool_use(call_id: str, name: str, tool_input: Any) -> JsonObject:
    return {"type": "tool_use", "toolCallId": call_id, "toolName": name, "toolInput": tool_input}


def call(n: int, name: str, tool_input: Any) -> JsonObject:
    return {"toolCallId": f"call-{n}", "toolName": name, "toolInput": tool_input}


def model_input(request: JsonObject) -> JsonObject:
    return RESPONSES.model_input(request, CallIds())


def model_output(body: JsonObject | bytes, *, streamed: bool = False) -> JsonObject:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return RESPONSES.model_output(raw, streamed=streamed, ids=CallIds())


# --- hand-written wire: responses and the events the API streams --------------------------------------


def response(
    resp_id: str, model: str, output: list[JsonObject], *, tools: list[JsonObject] | None = None, **more: Any
) -> JsonObject:
    """A ``response`` object as the API sends it; ``more`` holds the status and what it echoes."""
    body: JsonObject = {
        "id": resp_id,
        "object": "response",
        "created_at": 1760000000,
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": tools or [],
        "temperature": None,
        "top_p": None,
        "max_output_tokens": None,
        "usage": USAGE,
    }
    return {**body, **more}


Event = tuple[str, JsonObject]


def sse(body: JsonObject, items: list[Event]) -> Raw:
    """The stream of ``body``: created, in_progress, the items' events, then the terminal event."""
    started = {**body, "status": "in_progress", "incomplete_details": None, "output": [], "usage": None}
    events: list[Event] = [
        ("response.created", {"response": started}),
        ("response.in_progress", {"response": started}),
        *items,
        (f"response.{body['status']}", {"response": body}),
    ]
    text = "".join(
        f"event: {kind}\ndata: {json.dumps({'type': kind, 'sequence_number': n, **data})}\n\n"
        for n, (kind, data) in enumerate(events)
    )
    return Raw("text/event-stream", text.encode())


def halves(text: str) -> list[str]:
    """A text in two deltas, as the API splits it into tokens."""
    return [text[: len(text) // 2], text[len(text) // 2 :]]


def opened(item: JsonObject) -> JsonObject:
    """A message as output_item.added carries it: in progress, no content yet."""
    return {**item, "status": "in_progress", "content": []}


def text_message_events(index: int, item: JsonObject) -> list[Event]:
    """A message with one output_text part: added, the part, its deltas, done."""
    where = {"item_id": item["id"], "output_index": index, "content_index": 0}
    part = item["content"][0]
    events: list[Event] = [
        ("response.output_item.added", {"output_index": index, "item": opened(item)}),
        ("response.content_part.added", {**where, "part": {**part, "text": ""}}),
    ]  # fmt: skip
    events += [
        ("response.output_text.delta", {**where, "delta": d, "logprobs": [], "obfuscation": "x9"})
        for d in halves(part["text"])
    ]
    events += [
        ("response.output_text.done", {**where, "text": part["text"], "logprobs": []}),
        ("response.content_part.done", {**where, "part": part}),
        ("response.output_item.done", {"output_index": index, "item": item}),
    ]
    return events


def message(msg_id: str, text: str, status: str = "completed") -> JsonObject:
    part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    return {"id": msg_id, "type": "message", "status": status, "role": "assistant", "content": [part]}


# stop_reason: a story cut short by max_output_tokens, then continued.
STORY_1 = message("msg_68a1f0c2d4e6b8a0c2e4f6a8", "Once upon a time, a lighthouse keeper", "incomplete")
STORY_2 = message("msg_68a1f0c2d4e6b8a0c2e4f6b9", " found a map in a bottle, and sailed.")
STOP_1 = response(
    "resp_68a1f0c2d4e6b8a0c2e4f6a8b0",
    "gpt-4.1",
    [STORY_1],
    status="incomplete",
    incomplete_details={"reason": "max_output_tokens"},
    max_output_tokens=16,
)
STOP_2 = response("resp_68a1f0c2d4e6b8a0c2e4f6a8b1", "gpt-4.1", [STORY_2], max_output_tokens=64)

# refusal: a refusal, sent back in the next request's history.
REFUSAL_TEXT = "I'm sorry, but I can't help with picking locks."
CHANGED_REFUSAL = "I can help with that."
REFUSED = {
    "id": "msg_68a1f0c2d4e6b8a0c2e4f6c0",
    "type": "message",
    "status": "completed",
    "role": "assistant",
    "content": [{"type": "refusal", "refusal": REFUSAL_TEXT}],
}
LOCKSMITH = message("msg_68a1f0c2d4e6b8a0c2e4f6c1", "A locksmith can open the door for you.")
REFUSAL_1 = response("resp_68a1f0c2d4e6b8a0c2e4f6c0b0", "gpt-4.1", [REFUSED])
REFUSAL_2 = response("resp_68a1f0c2d4e6b8a0c2e4f6c0b1", "gpt-4.1", [LOCKSMITH])


def refusal_events(index: int, item: JsonObject) -> list[Event]:
    where = {"item_id": item["id"], "output_index": index, "content_index": 0}
    part = item["content"][0]
    events: list[Event] = [
        ("response.output_item.added", {"output_index": index, "item": opened(item)}),
        ("response.content_part.added", {**where, "part": {"type": "refusal", "refusal": ""}}),
    ]  # fmt: skip
    events += [("response.refusal.delta", {**where, "delta": d}) for d in halves(part["refusal"])]
    events += [
        ("response.refusal.done", {**where, "refusal": part["refusal"]}),
        ("response.content_part.done", {**where, "part": part}),
        ("response.output_item.done", {"output_index": index, "item": item}),
    ]
    return events


# reasoning: a stateless (store=False) reasoning model calls a tool; its reasoning item goes back.
WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "strict": False,
}
REASONING_SETTING = {"effort": "low", "summary": "auto"}
ENCRYPTED_1 = "gAAAAABoX1f0-encrypted-reasoning-0001"
CHANGED_ENCRYPTED = "gAAAAABoX1f0-tampered-reasoning-0001"
SUMMARY_1 = "**Checking the weather**\n\nThe user wants Lisbon's weather; I'll call get_weather."
THOUGHT_1 = {
    "id": "rs_68a1f0c2d4e6b8a0c2e4f6d0",
    "type": "reasoning",
    "summary": [{"type": "summary_text", "text": SUMMARY_1}],
    "encrypted_content": ENCRYPTED_1,
}
WEATHER_CALL = {
    "id": "fc_68a1f0c2d4e6b8a0c2e4f6d1",
    "type": "function_call",
    "status": "completed",
    "arguments": '{"city":"Lisbon"}',
    "call_id": "call_Kf8dQmW2pX4rT6vY8zA1bC3d",
    "name": "get_weather",
}
LISBON_CALL = {"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Lisbon"}}
CHECKING = message("msg_68a1f0c2d4e6b8a0c2e4f6d4", "Checking the weather in Lisbon for you.")
THOUGHT_2 = {
    "id": "rs_68a1f0c2d4e6b8a0c2e4f6d2",
    "type": "reasoning",
    "summary": [],
    "encrypted_content": "gAAAAABoX1f0-encrypted-reasoning-0002",
}
WEATHER = message("msg_68a1f0c2d4e6b8a0c2e4f6d3", "It is 18°C and sunny in Lisbon.")
REASONING_ECHO = {"reasoning": REASONING_SETTING}
REASONING_1 = response(
    "resp_68a1f0c2d4e6b8a0c2e4f6d0b0",
    "o4-mini",
    [THOUGHT_1, WEATHER_CALL, CHECKING],  # the call before the text, as the API may send them
    tools=[WEATHER_TOOL],
    **REASONING_ECHO,
)
REASONING_2 = response(
    "resp_68a1f0c2d4e6b8a0c2e4f6d0b1", "o4-mini", [THOUGHT_2, WEATHER], tools=[WEATHER_TOOL], **REASONING_ECHO
)


def reasoning_events(index: int, item: JsonObject) -> list[Event]:
    where = {"item_id": item["id"], "output_index": index}
    added = {"id": item["id"], "type": "reasoning", "summary": []}
    events: list[Event] = [("response.output_item.added", {"output_index": index, "item": added})]
    for n, part in enumerate(item["summary"]):
        at = {**where, "summary_index": n}
        events.append(("response.reasoning_summary_part.added", {**at, "part": {**part, "text": ""}}))
        events += [
            ("response.reasoning_summary_text.delta", {**at, "delta": d, "obfuscation": "q2"})
            for d in halves(part["text"])
        ]
        events.append(("response.reasoning_summary_text.done", {**at, "text": part["text"]}))
        events.append(("response.reasoning_summary_part.done", {**at, "part": part}))
    events.append(("response.output_item.done", {"output_index": index, "item": item}))
    return events


def function_call_events(index: int, item: JsonObject) -> list[Event]:
    where = {"item_id": item["id"], "output_index": index}
    added = {**item, "status": "in_progress", "arguments": ""}
    events: list[Event] = [("response.output_item.added", {"output_index": index, "item": added})]
    events += [
        ("response.function_call_arguments.delta", {**where, "delta": d, "obfuscation": "k"})
        for d in halves(item["arguments"])
    ]
    events.append(("response.function_call_arguments.done", {**where, "arguments": item["arguments"]}))
    events.append(("response.output_item.done", {"output_index": index, "item": item}))
    return events


# hosted_tools: reasoning between two web searches, then the code interpreter, sent back with the
# follow-up question.
HOSTED_TOOLS: list[JsonObject] = [
    {"type": "web_search"},
    {"type": "code_interpreter", "container": {"type": "auto"}},
]
CONTAINER = "cntr_68a1f0c2d4e6b8a0c2e4f6e0a1b2c3d4"
SQUARED_LOGS = "298031921929\n"
CHANGED_LOGS = "298031921930\n"
SEARCH = {
    "id": "ws_68a1f0c2d4e6b8a0c2e4f6e0",
    "type": "web_search_call",
    "status": "completed",
    "action": {
        "type": "search",
        "query": "Lisbon population 2024",
        "sources": [{"type": "url", "url": "https://en.wikipedia.org/wiki/Lisbon"}],
    },
}
SEARCH_2 = {
    "id": "ws_68a1f0c2d4e6b8a0c2e4f6e5",
    "type": "web_search_call",
    "status": "completed",
    "action": {"type": "search", "query": "Lisbon municipality population census"},
}
THINK_SEARCH: JsonObject = {
    "id": "rs_68a1f0c2d4e6b8a0c2e4f6e6",
    "type": "reasoning",
    "summary": [{"type": "summary_text", "text": "**Finding the population**\n\nI'll search the web."}],
}
THINK_AGAIN: JsonObject = {
    "id": "rs_68a1f0c2d4e6b8a0c2e4f6e7",
    "type": "reasoning",
    "summary": [
        {"type": "summary_text", "text": "**Checking the figure**\n\nOne more source, then square it."}
    ],
}
SQUARE = {
    "id": "ci_68a1f0c2d4e6b8a0c2e4f6e1",
    "type": "code_interpreter_call",
    "status": "completed",
    "code": "print(545923 ** 2)",
    "container_id": CONTAINER,
    "outputs": [{"type": "logs", "logs": SQUARED_LOGS}],
}
POPULATION = message(
    "msg_68a1f0c2d4e6b8a0c2e4f6e2", "About 545,923 people live in Lisbon; squared, that is 298,031,921,929."
)
CUBE = {
    "id": "ci_68a1f0c2d4e6b8a0c2e4f6e3",
    "type": "code_interpreter_call",
    "status": "completed",
    "code": "print(545923 ** 3)",
    "container_id": CONTAINER,
    "outputs": [{"type": "logs", "logs": "162702480915245467\n"}],
}
CUBED = message("msg_68a1f0c2d4e6b8a0c2e4f6e4", "Cubed, it is 162,702,480,915,245,467.")
# A reasoning model thinks, searches, thinks again, searches again, runs code, then answers.
HOSTED_1 = response(
    "resp_68a1f0c2d4e6b8a0c2e4f6e0b0",
    "o4-mini",
    [THINK_SEARCH, SEARCH, THINK_AGAIN, SEARCH_2, SQUARE, POPULATION],
    tools=HOSTED_TOOLS,
    **REASONING_ECHO,
)
HOSTED_2 = response(
    "resp_68a1f0c2d4e6b8a0c2e4f6e0b1", "o4-mini", [CUBE, CUBED], tools=HOSTED_TOOLS, **REASONING_ECHO
)


def web_search_events(index: int, item: JsonObject) -> list[Event]:
    where = {"item_id": item["id"], "output_index": index}
    added = {
        "id": item["id"],
        "type": "web_search_call",
        "status": "in_progress",
        "action": {"type": "search"},
    }
    return [
        ("response.output_item.added", {"output_index": index, "item": added}),
        ("response.web_search_call.in_progress", where),
        ("response.web_search_call.searching", where),
        ("response.web_search_call.completed", where),
        ("response.output_item.done", {"output_index": index, "item": item}),
    ]


def code_interpreter_events(index: int, item: JsonObject) -> list[Event]:
    where = {"item_id": item["id"], "output_index": index}
    added = {**item, "status": "in_progress", "code": "", "outputs": None}
    events: list[Event] = [
        ("response.output_item.added", {"output_index": index, "item": added}),
        ("response.code_interpreter_call.in_progress", where),
    ]
    events += [
        ("response.code_interpreter_call_code.delta", {**where, "delta": d, "obfuscation": "z"})
        for d in halves(item["code"])
    ]
    events += [
        ("response.code_interpreter_call_code.done", {**where, "code": item["code"]}),
        ("response.code_interpreter_call.interpreting", where),
        ("response.code_interpreter_call.completed", where),
        ("response.output_item.done", {"output_index": index, "item": item}),
    ]
    return events


STREAMS: dict[str, tuple[Raw, Raw]] = {
    "stop_reason": (
        sse(STOP_1, text_message_events(0, STORY_1)),
        sse(STOP_2, text_message_events(0, STORY_2)),
    ),
    "refusal": (
        sse(REFUSAL_1, refusal_events(0, REFUSED)),
        sse(REFUSAL_2, text_message_events(0, LOCKSMITH)),
    ),
    "reasoning": (
        sse(
            REASONING_1,
            reasoning_events(0, THOUGHT_1)
            + function_call_events(1, WEATHER_CALL)
            + text_message_events(2, CHECKING),
        ),
        sse(REASONING_2, reasoning_events(0, THOUGHT_2) + text_message_events(1, WEATHER)),
    ),
    "hosted_tools": (
        sse(
            HOSTED_1,
            reasoning_events(0, THINK_SEARCH)
            + web_search_events(1, SEARCH)
            + reasoning_events(2, THINK_AGAIN)
            + web_search_events(3, SEARCH_2)
            + code_interpreter_events(4, SQUARE)
            + text_message_events(5, POPULATION),
        ),
        sse(HOSTED_2, code_interpreter_events(0, CUBE) + text_message_events(1, CUBED)),
    ),
}
BODIES: dict[str, tuple[JsonObject, JsonObject]] = {
    "stop_reason": (STOP_1, STOP_2),
    "refusal": (REFUSAL_1, REFUSAL_2),
    "reasoning": (REASONING_1, REASONING_2),
    "hosted_tools": (HOSTED_1, HOSTED_2),
}


# --- requests: the field table ------------------------------------------------------------------------


def test_every_field_of_the_sdks_create_params_is_classified() -> None:
    """A field a newer SDK adds fails here until the table says what it is."""
    known = ResponseCreateParamsBase.__required_keys__ | ResponseCreateParamsBase.__optional_keys__
    table = (
        set(REQUEST_FIELDS.read)
        | set(REQUEST_FIELDS.neutral)
        | set(REQUEST_FIELDS.nested)
        | set(REQUEST_FIELDS.transport)
        | set(REQUEST_FIELDS.behaviour)
    )
    assert known | {"stream"} == table


def test_the_field_table() -> None:
    assert REQUEST_FIELDS.read == {"input", "instructions", "model", "tools"}
    assert dict(REQUEST_FIELDS.neutral) == {
        "max_output_tokens": "maxTokens",
        "temperature": "temperature",
        "top_p": "topP",
        "tool_choice": "toolChoice",
    }
    assert dict(REQUEST_FIELDS.nested) == {"text": ("format", "responseFormat")}
    assert set(REQUEST_FIELDS.transport) == {
        "stream", "stream_options", "metadata", "user", "safety_identifier", "service_tier",
        "prompt_cache_key", "prompt_cache_retention", "prompt_cache_options", "store", "include",
        "background", "background_options", "top_logprobs", "previous_response_id",
    }  # fmt: skip
    assert all(len(reason) > 20 for reason in REQUEST_FIELDS.transport.values())
    assert REQUEST_FIELDS.behaviour == (
        "reasoning", "parallel_tool_calls", "max_tool_calls", "truncation", "prompt", "conversation",
        "context_management", "moderation", "image", "access_programs",
    )  # fmt: skip


def test_params_keep_every_behaviour_field_and_no_transport_field() -> None:
    request: JsonObject = {
        "model": "o4-mini",
        "input": "Hi",
        "instructions": "Be brief.",
        "tools": [{"type": "web_search"}],
        "max_output_tokens": 256,
        "temperature": 0.2,
        "top_p": 0.9,
        "tool_choice": "required",
        "text": {"format": {"type": "json_object"}, "verbosity": "low"},
        "reasoning": {"effort": "high", "summary": "detailed"},
        "parallel_tool_calls": False,
        "max_tool_calls": 3,
        "truncation": "auto",
        "prompt": {"id": "pmpt_1", "variables": {"city": "Lisbon"}},
        "conversation": "conv_1",
        "context_management": [{"type": "compaction", "compact_threshold": 1000}],
        "moderation": {"model": "omni-moderation-latest"},
        "image": {"detail": "high"},
        "access_programs": {"cyber": "standard"},
        "blackbox_unknown": [1, 2],  # a field nobody knows is compared, never dropped
        "seed": None,  # null: not sent
        # transport only
        "stream": True,
        "stream_options": {"include_obfuscation": False},
        "metadata": {"run": "7"},
        "user": "u-1",
        "safety_identifier": "hash-1",
        "service_tier": "flex",
        "prompt_cache_key": "k",
        "prompt_cache_retention": "24h",
        "prompt_cache_options": {"ttl": "30m"},
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "background": False,
        "background_options": {"completion_window": "2h"},
        "top_logprobs": 5,
        "previous_response_id": "resp_68a1f0c2d4e6b8a0c2e4f6a8b0",
    }
    assert model_input(request)["params"] == {
        "maxTokens": 256,
        "temperature": 0.2,
        "topP": 0.9,
        "toolChoice": "required",
        "responseFormat": {"type": "json_object"},
        "text": {"verbosity": "low"},
        "reasoning": {"effort": "high", "summary": "detailed"},
        "parallel_tool_calls": False,
        "max_tool_calls": 3,
        "truncation": "auto",
        "prompt": {"id": "pmpt_1", "variables": {"city": "Lisbon"}},
        "conversation": "conv_1",
        "context_management": [{"type": "compaction", "compact_threshold": 1000}],
        "moderation": {"model": "omni-moderation-latest"},
        "image": {"detail": "high"},
        "access_programs": {"cyber": "standard"},
        "blackbox_unknown": [1, 2],
    }


def test_a_request_with_none_of_the_new_fields_normalizes_as_before() -> None:
    request: JsonObject = {
        "model": "gpt-4.1",
        "instructions": "Be brief.",
        "input": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}],
        "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
        "max_output_tokens": 5,
        "text": {"format": {"type": "text"}},
        "stream": True,
        "store": True,
    }
    assert model_input(request) == {
        "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}],
        "tools": [{"name": "f", "description": "", "inputSchema": {"type": "object"}}],
        "systemPrompt": "Be brief.",
        "model": "gpt-4.1",
        "params": {"maxTokens": 5, "responseFormat": {"type": "text"}},
    }


# --- requests: what the program sends back ------------------------------------------------------------


def test_an_assistant_turn_is_canonicalized_reasoning_hosted_text_refusal_calls() -> None:
    """Whatever order the items came in, ids and statuses dropped; item_reference and the calls the
    program runs itself (custom, client tool search) are not conversation."""
    items: list[JsonObject] = [
        {"role": "user", "content": "Go"},
        {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": [
            {"type": "output_text", "text": "Partly ", "annotations": []},
            {"type": "refusal", "refusal": "I won't say more."},
        ]},
        {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "f", "arguments": '{"x": 1}'},
        {"type": "item_reference", "id": "rs_0"},
        {"type": "reasoning", "id": "rs_1", "status": "completed", "summary": [
            {"type": "summary_text", "text": "one"}, {"type": "summary_text", "text": "two"},
        ], "encrypted_content": "enc-1"},
        {"type": "web_search_call", "id": "ws_1", "status": "completed",
         "action": {"type": "search", "query": "q"}},
        {"type": "custom_tool_call", "call_id": "call_c", "name": "grammar", "input": "x"},
        {"type": "tool_search_call", "id": "ts_1", "execution": "client", "arguments": {},
         "status": "completed"},
        {"type": "tool_search_call", "id": "ts_2", "execution": "server", "arguments": {"q": "w"},
         "status": "completed"},
        {"type": "reasoning", "id": "rs_2", "summary": [], "content": [
            {"type": "reasoning_text", "text": "think "}, {"type": "reasoning_text", "text": "more"},
        ], "encrypted_content": None},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done."}]},
        {"type": "function_call_output", "call_id": "call_a", "output": "ok"},
    ]  # fmt: skip
    assert model_input({"input": items})["messages"] == [
        {"role": "user", "content": "Go"},
        {"role": "assistant", "content": [
            {"type": "reasoning", "summary": ["one", "two"], "encryptedContent": "enc-1"},
            {"type": "reasoning", "summary": [], "text": "think more"},
            {"type": "hosted_tool", "toolName": "web_search", "toolInput": {"type": "search", "query": "q"},
             "status": "completed"},
            {"type": "hosted_tool", "toolName": "tool_search",
             "toolInput": {"execution": "server", "arguments": {"q": "w"}}, "status": "completed"},
            {"type": "text", "text": "Partly done."},
            {"type": "refusal", "refusal": "I won't say more."},
            tool_use("call-0", "f", {"x": 1}),
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "toolCallId": "call-0", "toolName": "f", "result": "ok"},
        ]},
    ]  # fmt: skip


def test_a_refusal_alone_is_a_refusal_part_and_a_lone_string_message_stays_a_string() -> None:
    items: list[JsonObject] = [
        {"role": "user", "content": "Pick the lock"},
        {"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "No."}]},
        {"role": "user", "content": "Fine"},
        {"role": "assistant", "content": "OK."},
    ]
    assert model_input({"input": items})["messages"] == [
        {"role": "user", "content": "Pick the lock"},
        {"role": "assistant", "content": [{"type": "refusal", "refusal": "No."}]},
        {"role": "user", "content": "Fine"},
        {"role": "assistant", "content": "OK."},
    ]


HOSTED_ITEMS: list[tuple[JsonObject, JsonObject]] = [
    (SEARCH, {"toolName": "web_search", "toolInput": SEARCH["action"], "status": "completed"}),
    (
        {"id": "fs_1", "type": "file_search_call", "status": "completed", "queries": ["refund policy"],
         "results": [{"file_id": "file-1", "filename": "policy.md", "score": 0.9, "text": "30 days"}]},
        {"toolName": "file_search", "toolInput": ["refund policy"],
         "result": [{"file_id": "file-1", "filename": "policy.md", "score": 0.9, "text": "30 days"}],
         "status": "completed"},
    ),
    (
        {"id": "fs_2", "type": "file_search_call", "status": "completed", "queries": ["q"], "results": None},
        {"toolName": "file_search", "toolInput": ["q"], "status": "completed"},
    ),
    (
        SQUARE,
        {"toolName": "code_interpreter", "toolInput": {"code": SQUARE["code"], "container_id": CONTAINER},
         "result": SQUARE["outputs"], "status": "completed"},
    ),
    (
        {"id": "ig_1", "type": "image_generation_call", "status": "completed", "result": "iVBORw0KGgo=",
         "revised_prompt": "a cat", "size": "1024x1024", "error": None},
        {"toolName": "image_generation",
         "toolInput": {"result": "iVBORw0KGgo=", "revised_prompt": "a cat", "size": "1024x1024"},
         "status": "completed"},
    ),
    (
        {"id": "mcp_1", "type": "mcp_call", "status": "failed", "name": "lookup", "server_label": "crm",
         "arguments": '{"id": 4}', "output": None,
         "error": {"type": "http_error", "code": 500, "message": "x"}},
        {"toolName": "mcp",
         "toolInput": {"name": "lookup", "server_label": "crm", "arguments": '{"id": 4}',
                       "error": {"type": "http_error", "code": 500, "message": "x"}},
         "status": "failed"},
    ),
]  # fmt: skip


@pytest.mark.parametrize(("item", "entry"), HOSTED_ITEMS, ids=[i["type"] + i["id"] for i, _ in HOSTED_ITEMS])
def test_a_hosted_call_is_the_same_entry_in_the_output_and_sent_back(
    item: JsonObject, entry: JsonObject
) -> None:
    output = model_output(response("resp_68a1f0c2d4e6b8a0c2e4f6f0b0", "gpt-4.1", [item]))
    assert output == {"type": "final_answer", "text": "", "hostedTools": [entry]}
    sent = model_input({"input": [{"role": "user", "content": "Go"}, item]})
    assert sent["messages"][1] == {"role": "assistant", "content": [{"type": "hosted_tool", **entry}]}
    # Rebuilt: the same item (a made-up id), which reads back as the same entry.
    wire = RESPONSES.wire_response(output, {"model": "gpt-4.1", "input": "Go"})
    rebuilt = json.loads(wire.body)["output"]
    assert [i["type"] for i in rebuilt] == [item["type"]]
    assert {k: v for k, v in rebuilt[0].items() if k != "id"} == {
        k: v for k, v in item.items() if k != "id" and (v is not None or k in ("results", "outputs"))
    }
    assert model_output(wire.body) == output


# --- responses: reading the features ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("details", "stop_reason"),
    [
        ({"reason": "max_output_tokens"}, "max_tokens"),
        ({"reason": "content_filter"}, "content_filter"),
        ({"reason": "max_messages"}, "max_messages"),  # a reason with no neutral name: kept as sent
        (None, "incomplete"),
    ],
)
def test_an_incomplete_response_has_its_stop_reason(details: JsonObject | None, stop_reason: str) -> None:
    body = {**STOP_1, "incomplete_details": details}
    assert model_output(body) == {
        "type": "final_answer",
        "text": STORY_1["content"][0]["text"],
        "stopReason": stop_reason,
    }
    wire = json.loads(RESPONSES.wire_response(model_output(body), {"model": "gpt-4.1", "input": "Hi"}).body)
    assert (wire["status"], wire["incomplete_details"]) == ("incomplete", details)
    assert wire["output"][0]["status"] == "incomplete"  # the message the limit cut short


@pytest.mark.parametrize("reason", ["refusal", "stop_sequence"])
def test_neutral_reasons_this_api_has_not_leave_the_response_completed(reason: str) -> None:
    wire = RESPONSES.wire_response(
        {"type": "final_answer", "text": "a", "stopReason": reason}, {"input": "Hi"}
    )
    body = json.loads(wire.body)
    assert (body["status"], body["incomplete_details"], body["output"][0]["status"]) == (
        "completed",
        None,
        "completed",
    )


def test_the_features_read_from_json_and_from_the_stream_alike() -> None:
    expected = {
        "stop_reason": [
            {"type": "final_answer", "text": STORY_1["content"][0]["text"], "stopReason": "max_tokens"},
            {"type": "final_answer", "text": " found a map in a bottle, and sailed."},
        ],
        "refusal": [
            {"type": "final_answer", "text": "", "refusal": REFUSAL_TEXT},
            {"type": "final_answer", "text": LOCKSMITH["content"][0]["text"]},
        ],
        "reasoning": [
            {
                "type": "tool_calls",
                "text": CHECKING["content"][0]["text"],
                "calls": [LISBON_CALL],
                "reasoning": [{"summary": [SUMMARY_1], "encryptedContent": ENCRYPTED_1}],
                "sequence": ["reasoning", "call", "text"],
            },
            {
                "type": "final_answer",
                "text": WEATHER["content"][0]["text"],
                "reasoning": [{"summary": [], "encryptedContent": THOUGHT_2["encrypted_content"]}],
            },
        ],
        "hosted_tools": [
            {
                "type": "final_answer",
                "text": POPULATION["content"][0]["text"],
                "reasoning": [{"summary": [THINK_SEARCH["summary"][0]["text"]]},
                              {"summary": [THINK_AGAIN["summary"][0]["text"]]}],
                "hostedTools": [HOSTED_ITEMS[0][1],
                                {"toolName": "web_search", "toolInput": SEARCH_2["action"],
                                 "status": "completed"},
                                HOSTED_ITEMS[3][1]],
                "sequence": ["reasoning", "hosted", "reasoning", "hosted", "hosted", "text"],
            },
            {
                "type": "final_answer",
                "text": CUBED["content"][0]["text"],
                "hostedTools": [
                    {"toolName": "code_interpreter",
                     "toolInput": {"code": CUBE["code"], "container_id": CONTAINER},
                     "result": CUBE["outputs"], "status": "completed"},
                ],
            },
        ],
    }  # fmt: skip
    for feature, outputs in expected.items():
        assert [model_output(b) for b in BODIES[feature]] == outputs, feature
        assert [model_output(s.body, streamed=True) for s in STREAMS[feature]] == outputs, feature


def _events_of(raw: Raw) -> list[JsonObject]:
    return [json.loads(line[6:]) for line in raw.body.decode().splitlines() if line.startswith("data: ")]


def _sse(events: list[JsonObject]) -> bytes:
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode()


@pytest.mark.parametrize("feature", list(STREAMS))
def test_a_stream_without_final_output_is_rebuilt_from_its_events(feature: str) -> None:
    """As the SDK does: the output_item.done items, or what the added items and deltas built."""
    for raw, body in zip(STREAMS[feature], BODIES[feature], strict=True):
        events = _events_of(raw)
        events[-1]["response"]["output"] = None
        assert model_output(_sse(events), streamed=True) == model_output(body)
        deltas_only = [e for e in events if e["type"] != "response.output_item.done"]
        rebuilt = model_output(_sse(deltas_only), streamed=True)
        # Only the done items carry a hosted call's result, its status, and encrypted content.
        assert rebuilt.get("text") == model_output(body).get("text")
        assert rebuilt.get("refusal") == model_output(body).get("refusal")
        assert [r.get("summary") for r in rebuilt.get("reasoning", [])] == [
            r.get("summary") for r in model_output(body).get("reasoning", [])
        ]


@pytest.mark.parametrize("feature", list(STREAMS))
def test_the_canned_wire_is_in_the_sdks_own_shape(feature: str) -> None:
    """The hand-written responses and every event of their streams pass the SDK's strict validation."""
    events = TypeAdapter(ResponseStreamEvent)
    for raw, body in zip(STREAMS[feature], BODIES[feature], strict=True):
        Response.model_validate(body)
        parsed = [events.validate_python(e) for e in _events_of(raw)]
        assert [e.sequence_number for e in parsed] == list(range(len(parsed)))


def test_a_plain_response_has_none_of_the_new_fields() -> None:
    """So a run that uses none of them hashes as before."""
    plain = response(
        "resp_68a1f0c2d4e6b8a0c2e4f6f0b1", "gpt-4.1", [message("msg_68a1f0c2d4e6b8a0c2e4f6f1", "Hi")]
    )
    assert model_output(plain) == {"type": "final_answer", "text": "Hi"}


# --- synthesized responses: the real SDK reads them back ----------------------------------------------


FEATURE_OUTPUTS: list[JsonObject] = [
    {"type": "final_answer", "text": "Once upon", "stopReason": "max_tokens"},
    {"type": "final_answer", "text": "", "stopReason": "content_filter"},
    {"type": "final_answer", "text": "", "stopReason": "incomplete"},
    {"type": "final_answer", "text": "", "refusal": REFUSAL_TEXT},
    {"type": "final_answer", "text": "Partly.", "refusal": "No more."},
    {
        "type": "tool_calls",
        "calls": [{"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Lisbon"}}],
        "reasoning": [
            {"summary": [SUMMARY_1, "second"], "encryptedContent": ENCRYPTED_1},
            {"summary": [], "text": "a visible chain of thought"},
        ],
    },
    # Reasoning cut short: the response is only the reasoning item, and no message.
    {"type": "final_answer", "text": "", "reasoning": [{"summary": []}], "stopReason": "max_tokens"},
    {"type": "final_answer", "text": "Cubed.", "hostedTools": [e for _, e in HOSTED_ITEMS]},
    {
        "type": "tool_calls",
        "text": "Searching first.",
        "calls": [{"toolCallId": "call-3", "toolName": "get_weather", "toolInput": {"city": "Porto"}}],
        "reasoning": [{"summary": ["s"], "encryptedContent": "e"}],
        "hostedTools": [HOSTED_ITEMS[0][1]],
        "refusal": "",
    },
]
MODES = [(m, w) for m in ("sync", "async") for w in ("json", "sse")]


def _strict_client(mode: str, wire_for: Callable[[JsonObject], Any]) -> Any:
    def answer(request: httpx2.Request) -> httpx2.Response:
        wire = wire_for(json.loads(request.content))
        return httpx2.Response(wire.status, headers=wire.headers, content=wire.body)

    kwargs: dict[str, Any] = {
        "base_url": "http://127.0.0.1:9/v1",
        "api_key": KEY,
        "max_retries": 0,
        "_strict_response_validation": True,
    }
    if mode == "sync":
        return openai.OpenAI(http_client=httpx2.Client(transport=httpx2.MockTransport(answer)), **kwargs)
    return openai.AsyncOpenAI(
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(answer)), **kwargs
    )


@pytest.mark.parametrize(("mode", "wire"), MODES, ids=["-".join(m) for m in MODES])
@pytest.mark.parametrize("output", FEATURE_OUTPUTS, ids=[str(n) for n in range(len(FEATURE_OUTPUTS))])
def test_synthesized_responses_round_trip_through_the_sdk(output: JsonObject, mode: str, wire: str) -> None:
    bodies: list[bytes] = []

    def wire_for(request: JsonObject) -> Any:
        answer = RESPONSES.wire_response(output, request)
        bodies.append(answer.body)
        return answer

    kwargs: dict[str, Any] = {"model": "o4-mini", "input": "Hi", "reasoning": REASONING_SETTING}
    client = _strict_client(mode, wire_for)
    got, final_error = asyncio.run(send_once(client, mode, wire, kwargs))
    assert RESPONSES.model_output(bodies[0], streamed=wire == "sse", ids=CallIds()) == output
    status = (
        "incomplete"
        if output.get("stopReason") in ("max_tokens", "content_filter", "incomplete")
        else "completed"
    )
    assert got.status == status
    assert (final_error is not None) == (wire == "sse" and status == "incomplete")
    assert got.reasoning is not None and got.reasoning.effort == "low"  # the request's setting, echoed
    reasoning = [i for i in got.output if i.type == "reasoning"]
    assert [[s.text for s in r.summary] for r in reasoning] == [
        r.get("summary", []) for r in output.get("reasoning", [])
    ]
    assert [r.encrypted_content for r in reasoning] == [
        r.get("encryptedContent") for r in output.get("reasoning", [])
    ]
    refusals = [
        p.refusal for i in got.output if i.type == "message" for p in i.content if p.type == "refusal"
    ]
    assert refusals == ([output["refusal"]] if "refusal" in output else [])
    kinds = [i.type for i in got.output]
    hosted = [h["toolName"] + "_call" for h in output.get("hostedTools", [])]
    assert kinds[: len(reasoning) + len(hosted)] == ["reasoning"] * len(reasoning) + hosted
    assert all(i.id.split("_")[1] == "blackbox" for i in got.output if i.type != "message")


def test_synthesized_ids_are_deterministic_and_named_by_kind() -> None:
    output = FEATURE_OUTPUTS[-1]
    first = RESPONSES.wire_response(output, {"input": "Hi"})
    assert first.body == RESPONSES.wire_response(copy.deepcopy(output), {"input": "Hi"}).body
    ids = [i["id"].split("_blackbox_")[0] for i in json.loads(first.body)["output"]]
    assert ids == ["rs", "ws", "msg", "fc"]


def test_an_incomplete_stream_ends_with_response_incomplete() -> None:
    wire = RESPONSES.wire_response(FEATURE_OUTPUTS[0], {"input": "Hi", "stream": True})
    events = [e["type"] for e in _events_of(Raw("text/event-stream", wire.body))]
    assert events[-1] == "response.incomplete" and "response.completed" not in events


# --- the order of the parts: sequence and textParts ----------------------------------------------------


def two_parts(msg_id: str, first: str, second: str) -> JsonObject:
    """A message whose text came in two output_text parts."""
    item = message(msg_id, first)
    return {**item, "content": [*item["content"], {**item["content"][0], "text": second}]}


# Reasoning, a message in two parts, a web search, reasoning, a message, a call: every kind out of the
# canonical order, and three text pieces in two messages.
INTERLEAVED_ITEMS: list[JsonObject] = [
    THINK_SEARCH,
    two_parts("msg_68a1f0c2d4e6b8a0c2e4f6f2", "Let me look ", "that up."),
    SEARCH,
    THINK_AGAIN,
    message("msg_68a1f0c2d4e6b8a0c2e4f6f3", " Found it; now the weather."),
    WEATHER_CALL,
]
INTERLEAVED = response("resp_68a1f0c2d4e6b8a0c2e4f6f2b0", "o4-mini", INTERLEAVED_ITEMS, tools=[WEATHER_TOOL])
INTERLEAVED_OUTPUT: JsonObject = {
    "type": "tool_calls",
    "text": "Let me look that up. Found it; now the weather.",
    "calls": [LISBON_CALL],
    "reasoning": [{"summary": [THINK_SEARCH["summary"][0]["text"]]},
                  {"summary": [THINK_AGAIN["summary"][0]["text"]]}],
    "hostedTools": [HOSTED_ITEMS[0][1]],
    "sequence": ["reasoning", "text", "text", "hosted", "reasoning", "text", "call"],
    "textParts": ["Let me look ", "that up.", " Found it; now the weather."],
}  # fmt: skip
# The search pattern of a reasoning model: reasoning, search, reasoning, search, the answer.
SEARCHED = response(
    "resp_68a1f0c2d4e6b8a0c2e4f6f3b0",
    "o4-mini",
    [THINK_SEARCH, SEARCH, THINK_AGAIN, SEARCH_2, POPULATION],
    tools=HOSTED_TOOLS,
)


def interleaved_events(body: JsonObject) -> Raw:
    """The stream of ``body``, each item's events in its order, two-part messages included."""
    makers = {
        "reasoning": reasoning_events,
        "web_search_call": web_search_events,
        "function_call": function_call_events,
    }
    events: list[Event] = []
    for index, item in enumerate(body["output"]):
        if item["type"] != "message":
            events += makers[item["type"]](index, item)
            continue
        one = text_message_events(index, {**item, "content": item["content"][:1]})
        for n, part in enumerate(item["content"][1:], 1):
            where = {"item_id": item["id"], "output_index": index, "content_index": n}
            one[-1:-1] = [
                ("response.content_part.added", {**where, "part": {**part, "text": ""}}),
                ("response.output_text.delta", {**where, "delta": part["text"], "logprobs": []}),
                ("response.output_text.done", {**where, "text": part["text"], "logprobs": []}),
                ("response.content_part.done", {**where, "part": part}),
            ]
        one[-1] = ("response.output_item.done", {"output_index": index, "item": item})
        events += one
    return sse(body, events)


def test_an_interleaved_response_reads_its_order_from_json_and_from_the_stream() -> None:
    TypeAdapter(list[ResponseStreamEvent]).validate_python(_events_of(interleaved_events(INTERLEAVED)))
    assert model_output(INTERLEAVED) == INTERLEAVED_OUTPUT
    assert model_output(interleaved_events(INTERLEAVED).body, streamed=True) == INTERLEAVED_OUTPUT
    searched = model_output(SEARCHED)
    assert searched["sequence"] == ["reasoning", "hosted", "reasoning", "hosted", "text"]
    assert "textParts" not in searched  # one piece of text
    assert model_output(interleaved_events(SEARCHED).body, streamed=True) == searched


@pytest.mark.parametrize("body", [INTERLEAVED, SEARCHED], ids=["interleaved", "searched"])
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_an_interleaved_response_is_written_back_in_its_order(body: JsonObject, stream: bool) -> None:
    """The items in the recorded order (adjacent text pieces as the parts of one message), the events
    following them with consecutive output_index values, and read back identically."""
    output = model_output(body)
    wire = RESPONSES.wire_response(output, {"model": "o4-mini", "input": "Go", "stream": stream})
    assert RESPONSES.model_output(wire.body, streamed=stream, ids=CallIds()) == output
    if not stream:
        items = json.loads(wire.body)["output"]
    else:
        events = _events_of(Raw("text/event-stream", wire.body))
        added = [e for e in events if e["type"] == "response.output_item.added"]
        assert [e["output_index"] for e in added] == list(range(len(body["output"])))
        for event in events:  # every event of an item comes between its added and its done
            if "output_index" in event:
                opened = [e["output_index"] for e in events[: events.index(event) + 1] if e in added]
                assert opened[-1] == event["output_index"]
        items = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert [i["type"] for i in items] == [i["type"] for i in body["output"]]
    assert [[p["text"] for p in i["content"]] for i in items if i["type"] == "message"] == [
        [p["text"] for p in i["content"]] for i in body["output"] if i["type"] == "message"
    ]


@pytest.mark.parametrize(("mode", "wire"), MODES, ids=["-".join(m) for m in MODES])
def test_the_sdk_gets_the_interleaved_parts_in_their_order(mode: str, wire: str) -> None:
    client = _strict_client(mode, lambda request: RESPONSES.wire_response(INTERLEAVED_OUTPUT, request))
    got, _ = asyncio.run(send_once(client, mode, wire, {"model": "o4-mini", "input": "Hi"}))
    live = Response.model_validate(INTERLEAVED)
    assert [i.type for i in got.output] == [i.type for i in live.output]
    assert got.output_text == live.output_text


def test_a_canonical_response_carries_no_order() -> None:
    """Reasoning, hosted calls, one message with one part, calls: the payload is as before."""
    canonical = response(
        "resp_68a1f0c2d4e6b8a0c2e4f6f4b0",
        "o4-mini",
        [THINK_SEARCH, SEARCH, message("msg_68a1f0c2d4e6b8a0c2e4f6f4", "Checking."), WEATHER_CALL],
    )
    output = model_output(canonical)
    assert "sequence" not in output and "textParts" not in output
    wire = json.loads(RESPONSES.wire_response(output, {"input": "Hi"}).body)
    assert [i["type"] for i in wire["output"]] == ["reasoning", "web_search_call", "message", "function_call"]


def test_sending_back_an_interleaved_answer_replays_exactly() -> None:
    """The program echoes the replayed items, in their order, after the live ones were recorded."""
    for body in (INTERLEAVED, SEARCHED):
        live = Response.model_validate(body)
        wire = RESPONSES.wire_response(model_output(body), {"model": "o4-mini", "input": "Go"})
        replayed = Response.model_validate_json(wire.body)
        echo = [{"role": "user", "content": "Go"}]
        assert model_input({"input": [*echo, *[i.to_dict() for i in replayed.output]]}) == model_input(
            {"input": [*echo, *[i.to_dict() for i in live.output]]}
        )


@pytest.mark.parametrize("feature", list(BODIES))
def test_sending_back_the_replayed_response_normalizes_as_sending_back_the_live_one(feature: str) -> None:
    """The round trip's second half: model_input(echo of wire_response(model_output(live))) equals
    model_input(echo of live), for each feature's first response, as the SDK echoes items."""
    live = Response.model_validate(BODIES[feature][0])
    wire = RESPONSES.wire_response(model_output(BODIES[feature][0]), {"model": live.model, "input": "Go"})
    replayed = Response.model_validate_json(wire.body)

    def sent_back(got: Any) -> JsonObject:
        items = [{"role": "user", "content": "Go"}, *[i.to_dict() for i in got.output]]
        return RESPONSES.model_input({"input": items}, CallIds())

    assert sent_back(replayed) == sent_back(live)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
some = json_values.filter(lambda v: v is not None)  # a value the API would not send as null
objects = st.dictionaries(
    st.text(min_size=1, max_size=6).filter(lambda k: k not in ("id", "type", "status")), some, max_size=3
)


HOSTED_KINDS = ["web_search", "file_search", "code_interpreter", "image_generation", "mcp"]
STATUSES = ["completed", "failed", "searching"]


@st.composite
def hosted_entries(draw: st.DrawFn) -> JsonObject:
    """A hostedTools entry as this API reads one, for each row of the table."""
    kind = draw(st.sampled_from(HOSTED_KINDS))
    entry: JsonObject = {"toolName": kind, "status": draw(st.sampled_from(STATUSES))}
    if kind in ("web_search", "file_search"):
        entry["toolInput"] = draw(json_values)
    elif kind == "code_interpreter":
        code = {"code": draw(st.text(max_size=10))} if draw(st.booleans()) else {}
        entry["toolInput"] = {"container_id": "cntr_1", **code}
    else:
        entry["toolInput"] = draw(objects)
        if draw(st.booleans()):
            del entry["status"]  # optional on these items
    if kind in ("file_search", "code_interpreter") and draw(st.booleans()):
        entry["result"] = draw(some)
    return entry


@st.composite
def feature_outputs(draw: st.DrawFn) -> JsonObject:
    names = st.text(min_size=1, max_size=6)
    count = draw(st.integers(0, 2))
    calls = [
        {"toolCallId": f"call-{n}", "toolName": draw(names), "toolInput": draw(some)} for n in range(count)
    ]
    text = draw(st.text(max_size=20))
    output: JsonObject = {"type": "final_answer", "text": text}
    if calls:
        output = {"type": "tool_calls", "calls": calls, **({"text": text} if text else {})}
    reasons = st.sampled_from(["max_tokens", "content_filter", "incomplete", "max_messages", "steered"])
    reasoning = st.fixed_dictionaries(
        {"summary": st.lists(st.text(max_size=10), max_size=2)},
        optional={"text": st.text(max_size=10), "encryptedContent": st.text(min_size=1, max_size=10)},
    )
    extras = {
        "stopReason": reasons,
        "refusal": st.text(max_size=10),
        "reasoning": st.lists(reasoning, min_size=1, max_size=2),
        "hostedTools": st.lists(hosted_entries(), min_size=1, max_size=3),
    }
    for key, values in extras.items():
        if draw(st.booleans()):
            output[key] = draw(values)
    if draw(st.booleans()):
        _reorder(draw, output)
    return output


def _reorder(draw: st.DrawFn, output: JsonObject) -> None:
    """The output's parts in a drawn order, its text in drawn (non-empty) pieces."""
    pieces = draw(st.lists(st.text(min_size=1, max_size=6), max_size=3))
    if output["type"] == "final_answer" or pieces:
        output["text"] = "".join(pieces)
    else:
        output.pop("text", None)
    kinds = ["reasoning"] * len(output.get("reasoning", [])) + ["hosted"] * len(output.get("hostedTools", []))
    kinds += ["text"] * len(pieces) + ["call"] * len(output.get("calls", []))
    sequence, parts = sequence_of(draw(st.permutations(kinds)), pieces)
    if sequence is not None:
        output["sequence"] = sequence
    if parts is not None:
        output["textParts"] = parts


@settings(max_examples=300, deadline=None)
@given(output=feature_outputs(), stream=st.booleans())
def test_round_trip_property(output: JsonObject, stream: bool) -> None:
    wire = RESPONSES.wire_response(output, {"model": "m", "input": "Hi", "stream": stream})
    assert RESPONSES.model_output(wire.body, streamed=stream, ids=CallIds()) == output


@st.composite
def damaged(draw: st.DrawFn, value: Any) -> Any:
    """A copy of a JSON value with one node replaced by another value, or one key removed."""
    value = copy.deepcopy(value)
    paths = list(_paths(value))
    path = draw(st.sampled_from(paths))
    if not path:
        return draw(json_values)
    parent = value
    for key in path[:-1]:
        parent = parent[key]
    if isinstance(parent, dict) and draw(st.booleans()):
        del parent[path[-1]]
    else:
        parent[path[-1]] = draw(json_values)
    return value


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield from _paths(child, (*path, key))


def _value_error_only(call: Callable[[], Any]) -> None:
    with contextlib.suppress(ValueError):  # the documented refusal; anything else fails the test
        call()


JSON_BODIES = [body for pair in BODIES.values() for body in pair]
STREAM_EVENTS = [(raw, n) for pair in STREAMS.values() for raw in pair for n in range(len(_events_of(raw)))]


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_damaged_feature_wire_raises_value_error_only(data: st.DataObject) -> None:
    """A feature's response, or one event of its stream, with one node damaged: read, or ValueError."""
    if data.draw(st.booleans()):
        body = json.dumps(data.draw(damaged(data.draw(st.sampled_from(JSON_BODIES))))).encode()
        _value_error_only(lambda: model_output(body))
        return
    raw, n = data.draw(st.sampled_from(STREAM_EVENTS))
    events = _events_of(raw)
    events[n] = data.draw(damaged(events[n]))
    _value_error_only(lambda: model_output(_sse(events), streamed=True))


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_damaged_outputs_and_echoes_raise_value_error_only(data: st.DataObject) -> None:
    """A cassette's output with a field damaged, and a request echoing damaged items."""
    output = data.draw(damaged(data.draw(feature_outputs())))
    stream = data.draw(st.booleans())
    if isinstance(output, dict):
        _value_error_only(lambda: RESPONSES.wire_response(output, {"input": "Hi", "stream": stream}))
    items = [{"role": "user", "content": "Go"}, *[i for b in BODIES.values() for i in b[0]["output"]]]
    request = data.draw(damaged({"model": "m", "input": items, "reasoning": REASONING_SETTING}))
    if isinstance(request, dict):
        _value_error_only(lambda: RESPONSES.model_input(request, CallIds()))


# --- bad input ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ({"type": "final_answer", "text": "a", "reasoning": "thinking"}, "field reasoning must be a list"),
        ({"type": "final_answer", "text": "a", "refusal": 3}, "field refusal must be a string"),
        (
            {"type": "final_answer", "text": "a", "hostedTools": [{"toolInput": 1}]},
            "toolName must be a string",
        ),
        ({"type": "final_answer", "text": "a", "stopReason": ["x"]}, "field stopReason must be a string"),
        (
            {"type": "final_answer", "text": "a", "hostedTools": [{"toolName": "mcp", "toolInput": "x"}]},
            "toolInput of a hosted mcp call must be an object",
        ),
        (
            {"type": "final_answer", "text": "a", "hostedTools": [{"toolName": "function", "toolInput": {}}]},
            "a hosted tool cannot be named 'function'",
        ),
    ],
)
def test_a_malformed_output_is_a_value_error_naming_the_field(output: JsonObject, message: str) -> None:
    for stream in (False, True):
        with pytest.raises(ValueError, match=message):
            RESPONSES.wire_response(output, {"input": "Hi", "stream": stream})


def dumped(output: list[JsonObject], **more: Any) -> bytes:
    return json.dumps(response("resp_odd", "gpt-4.1", output, **more)).encode()


ODD_WIRE: list[tuple[bytes, bool, str]] = [
    (dumped([{"type": "reasoning", "summary": [7]}], status="incomplete"), False, ""),
    (dumped([{"type": "web_search_call"}], status="incomplete", incomplete_details=4), False, ""),
    (_sse([{"type": "response.reasoning_summary_text.delta", "output_index": 0}]), True, "before"),
    (
        _sse([
            {"type": "response.created", "response": {"id": "r"}},
            {"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning"}},
            {"type": "response.reasoning_summary_text.delta", "output_index": 0, "delta": "x"},
        ]),
        True,
        "shape",
    ),
    (_sse([{"type": "response.incomplete", "response": {"error": {"message": "boom"}}}]), True, "boom"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("body", "streamed", "message"),
    ODD_WIRE,
    ids=["summary-not-objects", "details-not-an-object", "delta-before-item", "delta-before-part", "error"],
)
def test_odd_wire_is_read_leniently_or_refused_with_a_value_error(
    body: bytes, streamed: bool, message: str
) -> None:
    if not message:
        model_output(body, streamed=streamed)  # read as far as it makes sense, no traceback
        return
    with pytest.raises(ValueError, match=message):
        model_output(body, streamed=streamed)


# --- the feature cells: the real SDK, recorded, replayed offline, and a change that diverges ----------


async def send_once(client: Any, mode: str, wire: str, kwargs: JsonObject) -> tuple[Any, str | None]:
    """One request as a program makes it: ``create`` for JSON; for SSE ``stream`` and
    ``get_final_response()``, or the ``response.incomplete`` event when the helper has no final
    response to give (it requires response.completed: its RuntimeError is part of what the program
    got, and recorded as such)."""
    if wire == "json":
        got = client.responses.create(**kwargs)
        return (await got if mode == "async" else got), None
    terminal: Any = None
    if mode == "sync":
        with client.responses.stream(**kwargs) as stream:
            for event in stream:
                if event.type in ("response.completed", "response.incomplete"):
                    terminal = event.response
            try:
                return stream.get_final_response(), None
            except RuntimeError as exc:
                return terminal, str(exc)
    async with client.responses.stream(**kwargs) as astream:
        async for event in astream:
            if event.type in ("response.completed", "response.incomplete"):
                terminal = event.response
        try:
            return await astream.get_final_response(), None
        except RuntimeError as exc:
            return terminal, str(exc)


def comparable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if k not in UNCOMPARED}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


def sent_back(got: Any) -> list[JsonObject]:
    """The response's output items, as a stateless program sends them back."""
    return [item.to_dict() for item in got.output]


@dataclass(frozen=True)
class Feature:
    """Two requests: ``first(changed)``, then ``second(first response, changed)``; ``changed`` makes
    the change that must diverge at ``path`` of step ``step``, from ``recorded`` to ``changed``."""

    first: Callable[[bool], JsonObject]
    second: Callable[[Any, bool], JsonObject]
    step: int
    path: str
    recorded: Any
    changed: Any


def _stop_first(changed: bool) -> JsonObject:
    return {"model": "gpt-4.1", "input": "Tell me a story.", "max_output_tokens": 32 if changed else 16}


def _stop_second(first: Any, changed: bool) -> JsonObject:
    items = [
        {"role": "user", "content": "Tell me a story."},
        *sent_back(first),
        {"role": "user", "content": "Go on."},
    ]
    return {"model": "gpt-4.1", "input": items, "max_output_tokens": 64}


def _refusal_first(changed: bool) -> JsonObject:
    return {"model": "gpt-4.1", "input": "How do I pick the lock of my neighbour's door?"}


def _refusal_second(first: Any, changed: bool) -> JsonObject:
    echoed = sent_back(first)
    if changed:
        echoed[0]["content"][0]["refusal"] = CHANGED_REFUSAL
    items = [
        {"role": "user", "content": "How do I pick the lock of my neighbour's door?"},
        *echoed,
        {"role": "user", "content": "It is my own door. Who can help?"},
    ]
    return {"model": "gpt-4.1", "input": items}


def _reasoning_request(items: list[Any]) -> JsonObject:
    return {
        "model": "o4-mini",
        "input": items,
        "tools": [WEATHER_TOOL],
        "reasoning": REASONING_SETTING,
        "store": False,
        "include": ["reasoning.encrypted_content"],
    }


def _reasoning_first(changed: bool) -> JsonObject:
    return _reasoning_request([{"role": "user", "content": "What's the weather in Lisbon?"}])


def _reasoning_second(first: Any, changed: bool) -> JsonObject:
    echoed = sent_back(first)
    if changed:
        next(i for i in echoed if i["type"] == "reasoning")["encrypted_content"] = CHANGED_ENCRYPTED
    calls = [i for i in first.output if i.type == "function_call"]
    results = [
        {"type": "function_call_output", "call_id": c.call_id, "output": '{"temperature_c": 18}'}
        for c in calls
    ]
    return _reasoning_request(
        [{"role": "user", "content": "What's the weather in Lisbon?"}, *echoed, *results]
    )


def _hosted_request(items: Any) -> JsonObject:
    return {
        "model": "o4-mini",
        "input": items,
        "tools": HOSTED_TOOLS,
        "reasoning": REASONING_SETTING,
        "include": ["code_interpreter_call.outputs"],
    }


def _hosted_first(changed: bool) -> JsonObject:
    return _hosted_request("How many people live in Lisbon, and what is that number squared?")


def _hosted_second(first: Any, changed: bool) -> JsonObject:
    echoed = sent_back(first)
    if changed:
        next(i for i in echoed if i["type"] == "code_interpreter_call")["outputs"][0]["logs"] = CHANGED_LOGS
    question = {"role": "user", "content": "How many people live in Lisbon, and what is that number squared?"}
    return _hosted_request([question, *echoed, {"role": "user", "content": "And cubed?"}])


FEATURES: dict[str, Feature] = {
    "stop_reason": Feature(_stop_first, _stop_second, 0, "$.params.maxTokens", 16, 32),
    "refusal": Feature(
        _refusal_first, _refusal_second, 2, "$.messages[1].content[0].refusal", REFUSAL_TEXT, CHANGED_REFUSAL
    ),
    "reasoning": Feature(
        _reasoning_first,
        _reasoning_second,
        4,  # steps 2 and 3 are the tool round
        "$.messages[1].content[0].encryptedContent",
        ENCRYPTED_1,
        CHANGED_ENCRYPTED,
    ),
    "hosted_tools": Feature(
        _hosted_first,
        _hosted_second,
        2,
        "$.messages[1].content[4].result[0].logs",  # after 2 reasoning parts and 2 searches
        SQUARED_LOGS,
        CHANGED_LOGS,
    ),
}
CELLS = [(f, m, w) for f in FEATURES for m in ("sync", "async") for w in ("json", "sse")]


def program(feature: str, mode: str, wire: str, base_url: str, *, changed: bool = False) -> list[Any]:
    """The program: two requests through the real client; what it received, comparable."""
    spec = FEATURES[feature]
    client: Any = (openai.OpenAI if mode == "sync" else openai.AsyncOpenAI)(
        base_url=base_url + "/v1", api_key=KEY, max_retries=0
    )

    async def run() -> list[Any]:
        try:
            first, first_error = await send_once(client, mode, wire, spec.first(changed))
            second, second_error = await send_once(client, mode, wire, spec.second(first, changed))
        finally:
            closed = client.close()
            if mode == "async":
                await closed
        return [comparable(first.model_dump()), first_error, comparable(second.model_dump()), second_error]

    return asyncio.run(run())


def _check_recording(feature: str, path: Path, canned: CannedProvider) -> None:
    text = path.read_text()
    assert KEY not in text
    report = verify_cassette(load_cassette(path))
    assert report.passed, report.first_failure
    steps = json.loads(text)["steps"]
    outputs = [without_usage(s["payload"]) for s in steps if s["type"] == "model_output"]
    inputs = [s["payload"] for s in steps if s["type"] == "model_input"]
    assert outputs == [model_output(b) for b in BODIES[feature]]
    second = canned.requests[1]
    assert inputs[1] == model_input(second)
    if feature == "stop_reason":
        assert outputs[0]["stopReason"] == "max_tokens" and inputs[0]["params"] == {"maxTokens": 16}
    elif feature == "refusal":
        assert inputs[1]["messages"][1] == {
            "role": "assistant",
            "content": [{"type": "refusal", "refusal": REFUSAL_TEXT}],
        }
    elif feature == "reasoning":
        assert inputs[1]["messages"][1]["content"][0] == {
            "type": "reasoning",
            "summary": [SUMMARY_1],
            "encryptedContent": ENCRYPTED_1,
        }
        assert inputs[0]["params"] == {"reasoning": REASONING_SETTING}  # store and include are transport
    else:
        # Sent back in the canonical order, whatever order the items came in.
        assert [p.get("toolName", p["type"]) for p in inputs[1]["messages"][1]["content"]] == [
            "reasoning",
            "reasoning",
            "web_search",
            "web_search",
            "code_interpreter",
            "text",
        ]


@pytest.mark.parametrize(("feature", "mode", "wire"), CELLS, ids=["responses-" + "-".join(c) for c in CELLS])
def test_feature(tmp_path: Path, feature: str, mode: str, wire: str) -> None:
    path = tmp_path / "cell.json"
    bodies: tuple[Any, Any] = STREAMS[feature] if wire == "sse" else BODIES[feature]
    with CannedProvider(list(bodies)) as canned:
        with otel_blackbox.session(mode="record", cassette=path):
            live = program(feature, mode, wire, canned.url)
        assert len(canned.requests) == 2
    _check_recording(feature, path, canned)
    if feature == "stop_reason":
        assert live[0]["status"] == "incomplete" and live[0]["incomplete_details"] == {
            "reason": "max_output_tokens"
        }
        assert (live[1] is not None) == (wire == "sse")  # the stream helper has no final response to give

    # The provider is stopped and no socket may open: every answer comes from the cassette.
    with blocked_network() as attempts, otel_blackbox.session(mode="replay", cassette=path):
        replayed = program(feature, mode, wire, canned.url)
    assert attempts == []
    assert replayed == live

    spec = FEATURES[feature]
    with (
        pytest.raises(ReplayDivergence) as diverged,
        blocked_network(),
        otel_blackbox.session(mode="replay", cassette=path),
    ):
        program(feature, mode, wire, canned.url, changed=True)
    message = str(diverged.value)
    assert f"step {spec.step} (model_input) differs at {spec.path}: " in message, message
    assert f"recorded {json.dumps(spec.recorded)}, got {json.dumps(spec.changed)}" in message, message


def test_the_cells_cover_every_feature_mode_and_wire() -> None:
    assert len(CELLS) == 16 and {c[0] for c in CELLS} == {
        "stop_reason",
        "refusal",
        "reasoning",
        "hosted_tools",
    }
