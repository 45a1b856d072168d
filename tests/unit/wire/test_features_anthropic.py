"""Anthropic Messages: the request field table, and the response features (stop reasons, refusals,
thinking, hosted tools) through the translation and through the real anthropic SDK.

Unit tests first (``REQUEST_FIELDS`` decisions, assistant turns, responses both ways, bad input).
Then the feature cells, ``test_feature[anthropic-<feature>-<sync|async>-<json|sse>]``: a
``CannedProvider`` serves messages written by hand in the API's wire shape (and their event
streams), a small program drives the real SDK through two requests, the second sending the first
answer back; record, verify, replay offline with every socket refused (the program receives what it
received live, ids and usage aside), and a replay where the program changes the value the feature
concerns diverges naming both values.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
from anthropic.types import Message
from anthropic.types.beta import message_create_params as beta_params
from anthropic.types.message_create_params import MessageCreateParamsBase
from helpers import CannedProvider, Raw, blocked_network

import otel_blackbox
from otel_blackbox._cassette.io import load_cassette, save_cassette
from otel_blackbox._cassette.model import Cassette
from otel_blackbox._cassette.verify import verify_cassette
from otel_blackbox._types import JsonObject
from otel_blackbox._wire.anthropic.fields import ANTHROPIC_FIELDS as REQUEST_FIELDS
from otel_blackbox._wire.anthropic.translation import AnthropicMessages
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox.errors import CassetteError, ReplayDivergence

PROVIDER = AnthropicMessages()
MODEL = "claude-sonnet-4-5"
KEY = "sk-ant-fake-features-0123456789"
REPLAY_URL = "http://127.0.0.1:9"  # never dialled: a MockTransport answers
WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Current weather for a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
WEB_SEARCH_TOOL = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}
BASE: JsonObject = {"model": MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": "Hi"}]}

# Opaque values as the API hands them out (base64), short enough to be shown whole in a divergence.
SIGNATURE = "EqQBCkYIBxgCKkBZ2lnbmF0dXJlIG9mIHRoaXMgdGhpbmtpbmc+/w=="
REDACTED = "EmwKAhgBEgy3va3pzix/LafPsn4aDHJlZGFjdGVkIHRoaW5raW5n"
ENCRYPTED = "Eo8BCioIAhgBIiQ3YTY2ZDZlZC1lbmNyeXB0ZWQtcGFnZQ=="
THINKING = "The user wants Lisbon's weather; get_weather answers that."
SEARCH_RESULT = {
    "type": "web_search_result",
    "url": "https://weather.example/lisbon",
    "title": "Lisbon weather today",
    "encrypted_content": ENCRYPTED,
    "page_age": "2 hours ago",
}


# --- wire data, written as the API sends it -------------------------------------------------------


def text(value: str) -> JsonObject:
    return {"type": "text", "text": value}


def message(
    msg_id: str,
    content: list[JsonObject],
    stop_reason: str,
    *,
    stop_sequence: str | None = None,
    stop_details: JsonObject | None = None,
) -> JsonObject:
    return {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": stop_sequence,
        "stop_details": stop_details,
        "usage": {"input_tokens": 120, "output_tokens": 48, "service_tier": "standard"},
    }


def halves(value: str) -> list[str]:
    middle = len(value) // 2
    return [piece for piece in (value[:middle], value[middle:]) if piece]


def event(kind: str, data: JsonObject) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


def block_events(index: int, block: JsonObject) -> list[bytes]:
    """One block as the API streams it: text, thinking and tool inputs opened empty and filled by
    deltas (each in two pieces); redacted thinking and server tool results whole in the start."""
    kind = block["type"]
    deltas: list[JsonObject] = []
    opened = block
    if kind == "text":
        opened = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": piece} for piece in halves(block["text"])]
        if "citations" in block:  # each citation its own delta, after the text
            opened["citations"] = []
            deltas += [{"type": "citations_delta", "citation": c} for c in block["citations"]]
    elif kind == "thinking":
        opened = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": piece} for piece in halves(block["thinking"])]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind in ("tool_use", "server_tool_use"):
        opened = {**block, "input": {}}
        pieces = halves(json.dumps(block["input"]))
        deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in pieces]
    return [
        event("content_block_start", {"index": index, "content_block": opened}),
        *(event("content_block_delta", {"index": index, "delta": delta}) for delta in deltas),
        event("content_block_stop", {"index": index}),
    ]


def stream_of(whole: JsonObject) -> Raw:
    """The event stream the API sends for ``whole``, every event included (ping too)."""
    start = {**whole, "content": [], "stop_reason": None, "stop_sequence": None, "stop_details": None}
    start["usage"] = {"input_tokens": 120, "output_tokens": 1}
    events = [event("message_start", {"message": start}), event("ping", {})]
    for index, block in enumerate(whole["content"]):
        events += block_events(index, block)
    delta = {k: whole.get(k) for k in ("stop_reason", "stop_sequence", "stop_details")}
    events.append(event("message_delta", {"delta": delta, "usage": {"output_tokens": 48}}))
    events.append(event("message_stop", {}))
    return Raw("text/event-stream", b"".join(events))


# --- the request field table ------------------------------------------------------------------------

TRANSPORT_SAMPLES: dict[str, Any] = {
    "stream": True,
    "metadata": {"user_id": "user-4f2a"},
    "service_tier": "standard_only",
    "container": "container_011CZkZaBF1tNoB5",
    "inference_geo": "eu",
    "cache_control": {"type": "ephemeral", "ttl": "1h"},
    "diagnostics": {"previous_message_id": "msg_01AbC2dEf"},
    "user_profile_id": "uprof_0123",
    "workspace_id": "wrkspc_011CZkZaBF1tNoB5wlCeusgy",
    "speed": "fast",
    "billing_policy": {"type": "billing_policy", "bill_to": "self"},
    "fallback_credit_token": "fct_0123456789",
    "thread": {"type": "continue", "previous_message_id": "msg_01AbC2dEf"},
}
BEHAVIOUR_SAMPLES: dict[str, Any] = {
    "thinking": {"type": "enabled", "budget_tokens": 2048},
    "top_k": 40,
    "mcp_servers": [{"type": "url", "url": "https://mcp.example/sse", "name": "docs"}],
    "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]},
    "compaction": {"type": "enabled"},
    "fallbacks": ["default"],
}


def params_of(request: JsonObject) -> JsonObject:
    params: JsonObject = PROVIDER.model_input(request, CallIds()).get("params", {})
    return params


def test_every_sdk_field_is_classified() -> None:
    """Each body field of the SDK's create params (beta included) is in the table; ``betas`` is the
    anthropic-beta header. This SDK has no temperature / top_p / top_k arguments; extra_body sends them."""
    table = (
        set(REQUEST_FIELDS.read)
        | set(REQUEST_FIELDS.neutral)
        | set(REQUEST_FIELDS.nested)
        | set(REQUEST_FIELDS.transport)
        | set(REQUEST_FIELDS.behaviour)
    )
    for params in (MessageCreateParamsBase, beta_params.MessageCreateParamsBase):
        fields = set(params.__required_keys__ | params.__optional_keys__) - {"betas"}
        assert fields <= table, fields - table
    assert {"temperature", "top_p", "top_k"} <= table
    assert set(TRANSPORT_SAMPLES) == set(REQUEST_FIELDS.transport)
    assert set(BEHAVIOUR_SAMPLES) == set(REQUEST_FIELDS.behaviour)
    assert all(reason.strip() for reason in REQUEST_FIELDS.transport.values())


def test_neutral_names_are_todays() -> None:
    request = {
        **BASE,
        "tool_choice": {"type": "any"},
        "stop_sequences": ["</done>"],
        "temperature": 0.2,
        "top_p": 0.9,
    }
    assert params_of(request) == {
        "maxTokens": 64,
        "toolChoice": {"type": "any"},
        "stop": ["</done>"],
        "temperature": 0.2,
        "topP": 0.9,
    }


def test_output_config_format_is_response_format_and_the_rest_its_own() -> None:
    schema = {"type": "json_schema", "schema": {"type": "object"}}
    assert params_of({**BASE, "output_config": {"format": schema}}) == {
        "maxTokens": 64,
        "responseFormat": schema,
    }
    assert params_of({**BASE, "output_config": {"effort": "high", "format": None}}) == {
        "maxTokens": 64,
        "output_config": {"effort": "high"},
    }


@pytest.mark.parametrize("field", sorted(TRANSPORT_SAMPLES))
def test_transport_fields_are_not_compared(field: str) -> None:
    assert PROVIDER.model_input({**BASE, field: TRANSPORT_SAMPLES[field]}, CallIds()) == PROVIDER.model_input(
        BASE, CallIds()
    )


@pytest.mark.parametrize("field", sorted(BEHAVIOUR_SAMPLES))
def test_behaviour_fields_keep_their_own_name(field: str) -> None:
    assert params_of({**BASE, field: BEHAVIOUR_SAMPLES[field]}) == {
        "maxTokens": 64,
        field: BEHAVIOUR_SAMPLES[field],
    }


def test_a_field_nobody_knows_is_compared_and_null_is_not_sent() -> None:
    assert params_of({**BASE, "reasoning_mode": {"depth": 3}}) == {
        "maxTokens": 64,
        "reasoning_mode": {"depth": 3},
    }
    assert params_of({**BASE, "thinking": None, "temperature": None, "output_config": None}) == {
        "maxTokens": 64
    }


def test_container_id_is_transport_its_skills_are_compared() -> None:
    skills = [{"type": "anthropic", "skill_id": "xlsx", "version": "latest"}]
    assert params_of({**BASE, "container": {"id": "container_011CZ", "skills": skills}}) == {
        "maxTokens": 64,
        "container": {"skills": skills},
    }
    assert params_of({**BASE, "container": {"id": "container_011CZ"}}) == {"maxTokens": 64}


# --- assistant turns sent back ------------------------------------------------------------------------


def assistant_input(content: list[JsonObject], ids: CallIds | None = None) -> list[JsonObject]:
    request = {**BASE, "messages": [*BASE["messages"], {"role": "assistant", "content": content}]}
    parts: list[JsonObject] = PROVIDER.model_input(request, ids or CallIds())["messages"][1]["content"]
    return parts


def test_assistant_turn_keeps_thinking_and_hosted_tools_in_canonical_order() -> None:
    content = [
        text("Let me search."),
        {"type": "server_tool_use", "id": "srvtoolu_01A", "name": "web_search", "input": {"query": "lisbon"}},
        {
            "type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_01A",
            "content": [SEARCH_RESULT],
            "cache_control": {"type": "ephemeral"},
        },
        {
            "type": "thinking",
            "thinking": THINKING,
            "signature": SIGNATURE,
            "cache_control": {"type": "ephemeral"},
        },
        {"type": "redacted_thinking", "data": REDACTED},
        {
            "type": "text",
            "text": " Lisbon: 18C.",
            "citations": [
                {"type": "web_search_result_location", "url": SEARCH_RESULT["url"], "cited_text": "18C"}
            ],
        },
        {"type": "tool_use", "id": "toolu_01B", "name": "get_weather", "input": {"city": "Lisbon"}},
    ]
    ids = CallIds()
    assert assistant_input(content, ids) == [
        {"type": "reasoning", "text": THINKING, "signature": SIGNATURE},
        {"type": "reasoning", "redacted": REDACTED},
        {
            "type": "hosted_tool",
            "toolName": "web_search",
            "toolInput": {"query": "lisbon"},
            "result": [SEARCH_RESULT],
            "resultType": "web_search_tool_result",
        },
        text("Let me search. Lisbon: 18C."),  # citations dropped
        {
            "type": "tool_use",
            "toolCallId": "call-0",
            "toolName": "get_weather",
            "toolInput": {"city": "Lisbon"},
        },
    ]
    assert ids.to_neutral == {"toolu_01B": "call-0"}  # a server tool's id is no call of the program's


def test_every_server_tool_result_answers_its_use() -> None:
    content = [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "code_execution", "input": {"code": "1+1"}},
        {
            "type": "server_tool_use",
            "id": "srvtoolu_2",
            "name": "web_fetch",
            "input": {"url": "https://a.example"},
        },
        {
            "type": "web_fetch_tool_result",
            "tool_use_id": "srvtoolu_2",
            "content": {"type": "web_fetch_result"},
        },
        {"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_1", "content": {"stdout": "2"}},
        {
            "type": "server_tool_use",
            "id": "srvtoolu_3",
            "name": "bash_code_execution",
            "input": {"command": "ls"},
        },
        {
            "type": "advisor_tool_result",
            "tool_use_id": "srvtoolu_4",
            "content": {"advice": "go"},
        },  # no use here
    ]
    assert assistant_input(content) == [
        {
            "type": "hosted_tool",
            "toolName": "code_execution",
            "toolInput": {"code": "1+1"},
            "result": {"stdout": "2"},
            "resultType": "code_execution_tool_result",
        },
        {
            "type": "hosted_tool",
            "toolName": "web_fetch",
            "toolInput": {"url": "https://a.example"},
            "result": {"type": "web_fetch_result"},
            "resultType": "web_fetch_tool_result",
        },
        {"type": "hosted_tool", "toolName": "bash_code_execution", "toolInput": {"command": "ls"}},
        {
            "type": "hosted_tool",
            "toolName": "advisor",
            "result": {"advice": "go"},
            "resultType": "advisor_tool_result",
        },
    ]


def test_mcp_calls_are_hosted_tools_named_by_server() -> None:
    content: list[JsonObject] = [
        {
            "type": "mcp_tool_use",
            "id": "mcptoolu_1",
            "name": "search_docs",
            "server_name": "docs",
            "input": {"q": "x"},
        },
        {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_1", "is_error": True, "content": [text("down")]},
        {"type": "container_upload", "file_id": "file_011CZ"},  # only a response holds it: dropped
    ]
    hosted = {
        "type": "hosted_tool",
        "toolName": "docs/search_docs",
        "toolInput": {"q": "x"},
        "result": [text("down")],
        "resultType": "mcp_tool_result",
        "status": "error",
    }
    assert assistant_input(content) == [hosted]
    output = {
        "type": "final_answer",
        "text": "",
        "hostedTools": [{k: v for k, v in hosted.items() if k != "type"}],
    }
    wire = json.loads(PROVIDER.wire_response(output, {"model": MODEL}).body)
    use, result = wire["content"]
    assert (use["type"], use["name"], use["server_name"]) == ("mcp_tool_use", "search_docs", "docs")
    assert result == {
        "type": "mcp_tool_result",
        "tool_use_id": use["id"],
        "content": [text("down")],
        "is_error": True,
    }
    assert PROVIDER.model_output(json.dumps(wire).encode(), streamed=False, ids=CallIds()) == output


def test_bad_blocks_in_a_request_are_value_errors() -> None:
    with pytest.raises(ValueError, match="signature"):
        assistant_input([{"type": "thinking", "thinking": "x", "signature": 7}])
    with pytest.raises(ValueError, match="not in the shape"):
        assistant_input(
            [{"type": "server_tool_use", "id": "s", "name": "web_search"}, {"type": "x", "tool_use_id": []}]
        )


# --- responses ----------------------------------------------------------------------------------------


def recorded(whole: JsonObject, streamed: bool) -> JsonObject:
    body = stream_of(whole).body if streamed else json.dumps(whole).encode()
    output: JsonObject = PROVIDER.model_output(body, streamed=streamed, ids=CallIds())
    return output


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize(
    ("stop", "extra", "expected"),
    [
        ("end_turn", {}, {}),
        ("max_tokens", {}, {"stopReason": "max_tokens"}),
        (
            "stop_sequence",
            {"stop_sequence": "</answer>"},
            {"stopReason": "stop_sequence", "stopSequence": "</answer>"},
        ),
        (
            "refusal",
            {
                "stop_details": {
                    "type": "refusal",
                    "category": "cyber",
                    "explanation": "Declined: cyber policy.",
                }
            },
            {"stopReason": "refusal", "refusal": "Declined: cyber policy."},
        ),
        ("refusal", {"stop_details": None}, {"stopReason": "refusal"}),
        ("pause_turn", {}, {"stopReason": "pause_turn"}),
        ("model_context_window_exceeded", {}, {"stopReason": "model_context_window_exceeded"}),
    ],
)
def test_stop_reasons(stop: str, extra: JsonObject, expected: JsonObject, streamed: bool) -> None:
    whole = {**message("msg_01S", [text("Lisbon is")], stop), **extra}
    output = recorded(whole, streamed)
    assert output == {"type": "final_answer", "text": "Lisbon is", **expected}
    assert recorded(json.loads(PROVIDER.wire_response(output, {"model": MODEL}).body), streamed) == output


def test_tool_use_is_a_default_stop() -> None:
    call = {"type": "tool_use", "id": "toolu_01C", "name": "get_weather", "input": {"city": "Lisbon"}}
    assert "stopReason" not in recorded(message("msg_01T", [call], "tool_use"), streamed=False)


THINKING_TURN = message(
    "msg_01Th",
    [
        {"type": "thinking", "thinking": THINKING, "signature": SIGNATURE},
        {"type": "redacted_thinking", "data": REDACTED},
        {"type": "tool_use", "id": "toolu_01W", "name": "get_weather", "input": {"city": "Lisbon"}},
    ],
    "tool_use",
)
CITATION = {
    "type": "web_search_result_location",
    "url": SEARCH_RESULT["url"],
    "title": SEARCH_RESULT["title"],
    "encrypted_index": "EpIBCioIAhgBIiQ0ZGJj",
    "cited_text": "Sunny, high of 18C.",
}
# As the API answers a web search: a word first, the search and its results, then the answer in
# pieces, the cited piece a block of its own.
SEARCH_TURN = message(
    "msg_01Se",
    [
        text("I'll search for Lisbon's weather today."),
        {
            "type": "server_tool_use",
            "id": "srvtoolu_01WYG3",
            "name": "web_search",
            "input": {"query": "Lisbon weather"},
        },
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01WYG3", "content": [SEARCH_RESULT]},
        text("Lisbon is "),
        {**text("18C and sunny"), "citations": [CITATION]},
        text(" today."),
    ],
    "end_turn",
)
SEARCH_PIECES = ["I'll search for Lisbon's weather today.", "Lisbon is ", "18C and sunny", " today."]
THINKING_OUTPUT: JsonObject = {
    "type": "tool_calls",
    "calls": [{"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Lisbon"}}],
    "reasoning": [{"text": THINKING, "signature": SIGNATURE}, {"redacted": REDACTED}],
}
SEARCH_OUTPUT: JsonObject = {
    "type": "final_answer",
    "text": "".join(SEARCH_PIECES),
    "sequence": ["text", "hosted", "text", "text", "text"],
    "textParts": SEARCH_PIECES,
    "hostedTools": [
        {
            "toolName": "web_search",
            "toolInput": {"query": "Lisbon weather"},
            "result": [SEARCH_RESULT],
            "resultType": "web_search_tool_result",
        }
    ],
}
FEATURE_OUTPUTS = [
    THINKING_OUTPUT,
    SEARCH_OUTPUT,
    {"type": "final_answer", "text": "Lisbon is", "stopReason": "max_tokens"},
    {"type": "final_answer", "text": "18C.", "stopReason": "stop_sequence", "stopSequence": "</answer>"},
    {"type": "final_answer", "text": "", "stopReason": "refusal", "refusal": "Declined."},
    {"type": "final_answer", "text": "", "stopReason": "refusal"},
    {
        "type": "final_answer",
        "text": "",
        "reasoning": [{"text": "", "signature": SIGNATURE}],
        "stopReason": "pause_turn",
    },
    {
        "type": "final_answer",
        "text": "",
        "hostedTools": [{"toolName": "web_search", "toolInput": {"query": "q"}}],
    },
]


# Interleaved thinking with a server tool: think, search, think again, say a word, call a tool.
INTERLEAVED_TURN = message(
    "msg_01In",
    [
        {"type": "thinking", "thinking": THINKING, "signature": SIGNATURE},
        SEARCH_TURN["content"][1],
        SEARCH_TURN["content"][2],
        {
            "type": "thinking",
            "thinking": "The search says 18C; confirm with the tool.",
            "signature": SIGNATURE,
        },
        text("Checking the station too."),
        {"type": "tool_use", "id": "toolu_01W", "name": "get_weather", "input": {"city": "Lisbon"}},
    ],
    "tool_use",
)


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "sse"])
def test_thinking_and_hosted_tools_are_recorded(streamed: bool) -> None:
    assert recorded(THINKING_TURN, streamed) == THINKING_OUTPUT  # the canonical order: no sequence
    assert recorded(SEARCH_TURN, streamed) == SEARCH_OUTPUT


def wire_blocks(output: JsonObject, streamed: bool) -> list[JsonObject]:
    """The content blocks of the response replay sends, from the JSON body or the stream's events
    (checking those give consecutive indexes, each block started, filled and stopped in turn)."""
    body = PROVIDER.wire_response(output, {"model": MODEL, "stream": streamed}).body
    if not streamed:
        content: list[JsonObject] = json.loads(body)["content"]
        return content
    events = [json.loads(chunk.split(b"data: ", 1)[1]) for chunk in body.split(b"\n\n") if chunk]
    blocks: list[JsonObject] = []
    for item in events:
        if item["type"] == "content_block_start":
            assert item["index"] == len(blocks)
            blocks.append(item["content_block"])
        elif item["type"] in ("content_block_delta", "content_block_stop"):
            assert item["index"] == len(blocks) - 1
    return blocks


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("whole", [SEARCH_TURN, INTERLEAVED_TURN], ids=["search", "thinking"])
def test_interleaved_parts_keep_their_order(whole: JsonObject, streamed: bool) -> None:
    output = recorded(whole, streamed)
    kinds = {"thinking": "reasoning", "server_tool_use": "hosted", "text": "text", "tool_use": "call"}
    assert output["sequence"] == [kinds[b["type"]] for b in whole["content"] if b["type"] in kinds]
    assert output.get("textParts") == (SEARCH_PIECES if whole is SEARCH_TURN else None)
    assert [b["type"] for b in wire_blocks(output, streamed)] == [b["type"] for b in whole["content"]]
    if not streamed:  # a stream's text is in its deltas: the read back below compares each piece
        texts = [b["text"] for b in wire_blocks(output, streamed) if b["type"] == "text"]
        assert texts == [b["text"] for b in whole["content"] if b["type"] == "text"]
    replayed = PROVIDER.wire_response(output, {"model": MODEL, "stream": streamed}).body
    assert PROVIDER.model_output(replayed, streamed=streamed, ids=CallIds()) == output


def test_citations_are_dropped() -> None:
    cited = {
        "type": "text",
        "text": "18C.",
        "citations": [
            {"type": "web_search_result_location", "url": "https://w.example", "cited_text": "18C"}
        ],
    }
    stream = stream_of(message("msg_01Ci", [cited], "end_turn")).body.replace(
        b"event: content_block_stop",
        b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {"type": '
        b'"citations_delta", "citation": {"type": "char_location", "cited_text": "18C"}}}\n\n'
        b"event: content_block_stop",
    )
    assert PROVIDER.model_output(stream, streamed=True, ids=CallIds()) == {
        "type": "final_answer",
        "text": "18C.",
    }
    assert recorded(message("msg_01Ci", [cited], "end_turn"), streamed=False) == {
        "type": "final_answer",
        "text": "18C.",
    }


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("output", FEATURE_OUTPUTS)
def test_feature_outputs_round_trip(output: JsonObject, streamed: bool) -> None:
    wire = PROVIDER.wire_response(output, {"model": MODEL, "stream": streamed})
    assert PROVIDER.model_output(wire.body, streamed=streamed, ids=CallIds()) == output


def test_wire_blocks_are_canonical_with_ids_of_our_making() -> None:
    output = {**THINKING_OUTPUT, "text": "Checking.", "hostedTools": SEARCH_OUTPUT["hostedTools"] * 2}
    wire = json.loads(PROVIDER.wire_response(output, {"model": MODEL}).body)
    assert [b["type"] for b in wire["content"]] == [
        "thinking",
        "redacted_thinking",
        "server_tool_use",
        "web_search_tool_result",
        "server_tool_use",
        "web_search_tool_result",
        "text",
        "tool_use",
    ]
    digest = wire["id"].removeprefix("msg_blackbox_")
    uses = [b for b in wire["content"] if b["type"] == "server_tool_use"]
    results = [b for b in wire["content"] if b["type"] == "web_search_tool_result"]
    assert [u["id"] for u in uses] == [f"srvtoolu_blackbox_{digest}_0", f"srvtoolu_blackbox_{digest}_1"]
    assert [r["tool_use_id"] for r in results] == [u["id"] for u in uses]
    assert wire["content"][-1]["id"] == "call-0" and wire["stop_reason"] == "tool_use"
    again = PROVIDER.wire_response(copy.deepcopy(output), {"model": MODEL}).body
    assert json.loads(again) == wire


def test_wire_stream_events() -> None:
    canonical = {k: v for k, v in SEARCH_OUTPUT.items() if k not in ("sequence", "textParts")}
    output = {**canonical, "reasoning": THINKING_OUTPUT["reasoning"], "stopReason": "stop_sequence"}
    output["stopSequence"] = "</answer>"
    body = PROVIDER.wire_response(output, {"model": MODEL, "stream": True}).body
    events = [json.loads(chunk.split(b"data: ", 1)[1]) for chunk in body.split(b"\n\n") if chunk]
    kinds = [(e["type"], (e.get("delta") or e.get("content_block") or {}).get("type")) for e in events]
    assert kinds == [
        ("message_start", None),
        ("content_block_start", "thinking"),
        ("content_block_delta", "thinking_delta"),
        ("content_block_delta", "signature_delta"),
        ("content_block_stop", None),
        ("content_block_start", "redacted_thinking"),
        ("content_block_stop", None),
        ("content_block_start", "server_tool_use"),
        ("content_block_delta", "input_json_delta"),
        ("content_block_stop", None),
        ("content_block_start", "web_search_tool_result"),
        ("content_block_stop", None),
        ("content_block_start", "text"),
        ("content_block_delta", "text_delta"),
        ("content_block_stop", None),
        ("message_delta", None),
        ("message_stop", None),
    ]
    assert events[5]["content_block"] == {"type": "redacted_thinking", "data": REDACTED}
    assert events[10]["content_block"]["content"] == [SEARCH_RESULT]
    assert events[-2]["delta"] == {"stop_reason": "stop_sequence", "stop_sequence": "</answer>"}


def test_outputs_of_other_providers_become_anthropic_blocks() -> None:
    """A fork's script may be written in another provider's terms."""
    filtered = json.loads(
        PROVIDER.wire_response({"type": "final_answer", "text": "", "stopReason": "content_filter"}, {}).body
    )
    assert (filtered["stop_reason"], filtered["content"]) == ("refusal", [])
    refused = json.loads(
        PROVIDER.wire_response({"type": "final_answer", "text": "", "refusal": "No."}, {}).body
    )
    assert refused["stop_reason"] == "refusal" and refused["stop_details"]["explanation"] == "No."
    summary = {"type": "final_answer", "text": "Hi", "reasoning": [{"summary": ["First.", "Then."]}]}
    block = json.loads(PROVIDER.wire_response(summary, {}).body)["content"][0]
    assert block == {"type": "thinking", "thinking": "First.\n\nThen.", "signature": ""}


def test_bad_output_fields_are_value_errors() -> None:
    with pytest.raises(ValueError, match="field reasoning must be a list"):
        PROVIDER.wire_response({"type": "final_answer", "text": "", "reasoning": "x"}, {})
    with pytest.raises(ValueError, match=r"hostedTools\[0\].toolName"):
        PROVIDER.wire_response({"type": "final_answer", "text": "", "hostedTools": [{"toolInput": {}}]}, {})
    bad = message("msg_01B", [{"type": "thinking", "thinking": "x", "signature": ["s"]}], "end_turn")
    with pytest.raises(ValueError, match="signature"):
        recorded(bad, streamed=False)
    with pytest.raises(ValueError, match="stop_sequence"):
        recorded({**message("msg_01B", [], "stop_sequence"), "stop_sequence": 3}, streamed=False)
    delta_first = event(
        "content_block_delta", {"index": 0, "delta": {"type": "thinking_delta", "thinking": "x"}}
    )
    with pytest.raises(ValueError, match="before its start"):
        PROVIDER.model_output(delta_first + event("message_stop", {}), streamed=True, ids=CallIds())


# --- the real SDK parses what replay sends, strictly, and a program's echo normalizes alike -------------


class Served:
    """Serves the translation's responses for a queue of neutral outputs, through a MockTransport."""

    def __init__(self, *outputs: JsonObject) -> None:
        self.outputs = list(outputs)

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        wire = PROVIDER.wire_response(self.outputs.pop(0), json.loads(request.content))
        return httpx2.Response(wire.status, headers=wire.headers, content=wire.body)

    def client(self) -> anthropic.Anthropic:
        transport = httpx2.MockTransport(self)
        return anthropic.Anthropic(
            base_url=REPLAY_URL,
            api_key=KEY,
            max_retries=0,
            http_client=httpx2.Client(transport=transport),
            _strict_response_validation=True,
        )

    def async_client(self) -> anthropic.AsyncAnthropic:
        transport = httpx2.MockTransport(self)
        return anthropic.AsyncAnthropic(
            base_url=REPLAY_URL,
            api_key=KEY,
            max_retries=0,
            http_client=httpx2.AsyncClient(transport=transport),
            _strict_response_validation=True,
        )


def live_message(whole: JsonObject) -> Message:
    return Message.model_validate(whole)


@pytest.mark.parametrize(
    "whole", [THINKING_TURN, SEARCH_TURN, INTERLEAVED_TURN], ids=["thinking", "hosted", "interleaved"]
)
def test_sdk_parses_replay_strictly_and_echoes_normalize_alike(whole: JsonObject) -> None:
    output = recorded(whole, streamed=False)
    kwargs: dict[str, Any] = {"model": MODEL, "max_tokens": 64, "messages": BASE["messages"]}
    with Served(output, output).client() as client:
        created = client.messages.create(**kwargs)
        with client.messages.stream(**kwargs) as stream:
            final = stream.get_final_message()

    async def run_async() -> Message:
        async with Served(output).async_client() as client, client.messages.stream(**kwargs) as stream:
            return await stream.get_final_message()

    streamed = asyncio.run(run_async())
    live = live_message(whole)
    for replayed in (created, final, streamed):
        assert [b.type for b in replayed.content] == [b.type for b in live.content]
        assert [getattr(b, "text", None) for b in replayed.content] == [
            getattr(b, "text", None) for b in live.content
        ]
        echo_replayed = {**kwargs, "messages": [*BASE["messages"], replayed.to_param()]}
        echo_live = {**kwargs, "messages": [*BASE["messages"], live.to_param()]}
        assert PROVIDER.model_input(_as_json(echo_replayed), CallIds()) == PROVIDER.model_input(
            _as_json(echo_live), CallIds()
        )


def _as_json(request: dict[str, Any]) -> JsonObject:
    """The body the SDK sends: content blocks given as models are dumped as it dumps them."""

    def plain(value: Any) -> Any:
        if hasattr(value, "model_dump"):
            return value.model_dump(mode="json", exclude_unset=True)
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value

    result: JsonObject = plain(request)
    return result


def test_refusal_category_is_not_carried() -> None:
    """No neutral field holds it: replay hands back the explanation, the category as None."""
    details = {"type": "refusal", "category": "cyber", "explanation": "Declined."}
    output = recorded(message("msg_01R", [], "refusal", stop_details=details), streamed=False)
    with Served(output).client() as client:
        replayed = client.messages.create(model=MODEL, max_tokens=64, messages=BASE["messages"])
    assert replayed.stop_reason == "refusal" and replayed.content == []
    assert replayed.stop_details is not None and replayed.stop_details.explanation == "Declined."
    assert replayed.stop_details.category is None


# --- the feature cells ----------------------------------------------------------------------------------

Send = Callable[[dict[str, Any]], Awaitable[Message]]
Program = Callable[[Send, str | None], Awaitable[list[Message]]]


def user(content: Any) -> JsonObject:
    return {"role": "user", "content": content}


def echoed(reply: Message, change: Callable[[list[JsonObject]], None] | None) -> Any:
    """The assistant turn a program sends back: the SDK's own param, or its blocks with one changed."""
    if change is None:
        return reply.to_param()
    blocks = [block.to_dict() for block in reply.content]
    change(blocks)
    return {"role": "assistant", "content": blocks}


STOP_QUESTION = "Describe Lisbon's weather in one sentence."


async def stop_reason_program(send: Send, change: str | None) -> list[Message]:
    """A short max_tokens cuts the answer; the program sends it back and asks for the rest, up to a
    stop sequence."""
    first = await send(
        {
            "model": MODEL,
            "max_tokens": 32 if change == "max_tokens" else 16,
            "messages": [user(STOP_QUESTION)],
        }
    )
    messages = [user(STOP_QUESTION), first.to_param(), user("Go on, and close with </answer>.")]
    stops = ["</end>"] if change == "stop_sequences" else ["</answer>"]
    second = await send({"model": MODEL, "max_tokens": 256, "stop_sequences": stops, "messages": messages})
    return [first, second]


REFUSAL_QUESTION = "How do pin tumbler locks work, and how do I open my neighbour's?"
REFUSED_TEXT = "Pin tumbler locks align spring-loaded pins at the shear line. As for your neighbour's"


def change_refused_text(blocks: list[JsonObject]) -> None:
    blocks[0]["text"] = REFUSED_TEXT.replace("neighbour's", "own")


async def refusal_program(send: Send, change: str | None) -> list[Message]:
    """The model stops with a refusal; the program keeps what it said and asks for the safe part."""
    first = await send({"model": MODEL, "max_tokens": 512, "messages": [user(REFUSAL_QUESTION)]})
    turn = echoed(first, change_refused_text if change == "text" else None)
    messages = [user(REFUSAL_QUESTION), turn, user("Then only how they work, please.")]
    second = await send({"model": MODEL, "max_tokens": 512, "messages": messages})
    return [first, second]


WEATHER_QUESTION = "What's the weather in Lisbon?"


def change_signature(blocks: list[JsonObject]) -> None:
    blocks[0]["signature"] = SIGNATURE.replace("BZ2", "BZ3")


def change_redacted(blocks: list[JsonObject]) -> None:
    blocks[1]["data"] = REDACTED.replace("Egy3", "Egy4")


async def thinking_program(send: Send, change: str | None) -> list[Message]:
    """Extended thinking with a tool: the whole assistant turn, thinking blocks included, goes back
    with the tool result, as the API requires."""
    settings = {
        "model": MODEL,
        "max_tokens": 4096,
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "tools": [WEATHER_TOOL],
    }
    first = await send({**settings, "messages": [user(WEATHER_QUESTION)]})
    turn = echoed(first, {"signature": change_signature, "redacted": change_redacted}.get(change or ""))
    call = next(block for block in first.content if block.type == "tool_use")
    result = {"type": "tool_result", "tool_use_id": call.id, "content": "18C, sunny"}
    second = await send({**settings, "messages": [user(WEATHER_QUESTION), turn, user([result])]})
    return [first, second]


def change_search_result(blocks: list[JsonObject]) -> None:
    blocks[2]["content"][0]["title"] = "Porto weather today"


async def hosted_tools_program(send: Send, change: str | None) -> list[Message]:
    """The API searches the web itself; the program sends the search and its results back."""
    settings = {"model": MODEL, "max_tokens": 1024, "tools": [WEB_SEARCH_TOOL]}
    question = "Search the web: what's the weather in Lisbon today?"
    first = await send({**settings, "messages": [user(question)]})
    turn = echoed(first, change_search_result if change == "result" else None)
    second = await send({**settings, "messages": [user(question), turn, user("And tomorrow?")]})
    return [first, second]


@dataclass(frozen=True)
class Change:
    """A replay in which the program sends another value: the step and both values it must name."""

    name: str
    step: int
    recorded: Any
    changed: Any


@dataclass(frozen=True)
class Feature:
    program: Program
    responses: list[JsonObject]
    changes: list[Change]
    recorded_marker: str  # what the cassette's first model_output must hold


FEATURES: dict[str, Feature] = {
    "stop_reason": Feature(
        stop_reason_program,
        [
            message("msg_01Sr1", [text("Lisbon is sunny today, with a light")], "max_tokens"),
            message(
                "msg_01Sr2",
                [text(" breeze off the Atlantic and a high of 18C.")],
                "stop_sequence",
                stop_sequence="</answer>",
            ),
        ],
        [Change("max_tokens", 0, 16, 32), Change("stop_sequences", 2, "</answer>", "</end>")],
        '"stopReason": "max_tokens"',
    ),
    "refusal": Feature(
        refusal_program,
        [
            message(
                "msg_01Rf1",
                [text(REFUSED_TEXT)],
                "refusal",
                stop_details={
                    "type": "refusal",
                    "category": "general_harms",
                    "explanation": "This request may facilitate entering someone else's home.",
                },
            ),
            message(
                "msg_01Rf2",
                [text("The key lifts each pin to the shear line, so the plug turns.")],
                "end_turn",
            ),
        ],
        [Change("text", 2, REFUSED_TEXT, REFUSED_TEXT.replace("neighbour's", "own"))],
        '"stopReason": "refusal"',
    ),
    "thinking": Feature(
        thinking_program,
        [THINKING_TURN, message("msg_01Th2", [text("It is 18C and sunny in Lisbon.")], "end_turn")],
        [
            # steps 2 and 3 are the tool round's tool_call and tool_result
            Change("signature", 4, SIGNATURE, SIGNATURE.replace("BZ2", "BZ3")),
            Change("redacted", 4, REDACTED, REDACTED.replace("Egy3", "Egy4")),
        ],
        '"reasoning"',
    ),
    "hosted_tools": Feature(
        hosted_tools_program,
        [SEARCH_TURN, message("msg_01Se2", [text("Tomorrow: 17C with showers.")], "end_turn")],
        [Change("result", 2, "Lisbon weather today", "Porto weather today")],
        '"hostedTools"',
    ),
}
CELLS = [(f, m, w) for f in FEATURES for m in ("sync", "async") for w in ("json", "sse")]


def run(program: Program, mode: str, wire: str, base_url: str, change: str | None = None) -> list[Message]:
    async def go() -> list[Message]:
        if mode == "sync":
            with anthropic.Anthropic(base_url=base_url, api_key=KEY, max_retries=0) as client:

                async def send(kwargs: dict[str, Any]) -> Message:
                    if wire == "json":
                        created: Message = client.messages.create(**kwargs)
                        return created
                    with client.messages.stream(**kwargs) as stream:
                        return stream.get_final_message()

                return await program(send, change)
        async with anthropic.AsyncAnthropic(base_url=base_url, api_key=KEY, max_retries=0) as aclient:

            async def asend(kwargs: dict[str, Any]) -> Message:
                if wire == "json":
                    created: Message = await aclient.messages.create(**kwargs)
                    return created
                async with aclient.messages.stream(**kwargs) as stream:
                    return await stream.get_final_message()

            return await program(asend, change)

    return asyncio.run(go())


def received(messages: list[Message]) -> list[JsonObject]:
    """What the program got, less what replay makes up: ids, usage; and what no neutral field holds, a
    refusal's category (test_refusal_category_is_not_carried) and citations (test_citations_are_dropped).
    The blocks, their order and each text piece are compared whole."""
    seen = []
    for reply in messages:
        dump = reply.model_dump()
        del dump["id"], dump["usage"]
        for block in dump["content"]:
            block.pop("id", None)
            block.pop("tool_use_id", None)
            if block["type"] == "text":
                block["citations"] = None
        if dump.get("stop_details"):
            dump["stop_details"]["category"] = None
        seen.append(dump)
    return seen


@pytest.mark.parametrize(("feature", "mode", "wire"), CELLS, ids=[f"anthropic-{'-'.join(c)}" for c in CELLS])
def test_feature(tmp_path: Path, feature: str, mode: str, wire: str) -> None:
    spec = FEATURES[feature]
    cassette_path = tmp_path / "feature.json"
    bodies = [stream_of(r) if wire == "sse" else r for r in spec.responses]
    with CannedProvider(bodies) as canned:
        with otel_blackbox.session(mode="record", cassette=cassette_path):
            live = run(spec.program, mode, wire, canned.url)
        assert len(canned.requests) == 2 and canned.bodies == []
    assert [r.stop_reason for r in live] == [r["stop_reason"] for r in spec.responses]

    text_file = cassette_path.read_text()
    assert KEY not in text_file
    cassette = load_cassette(cassette_path)
    report = verify_cassette(cassette)
    assert report.passed, report.first_failure
    outputs = [s.payload for s in cassette.steps if s.type == "model_output"]
    assert spec.recorded_marker in json.dumps(outputs[0])

    # The provider is stopped and no socket may open: every answer comes from the cassette.
    with blocked_network() as attempts, otel_blackbox.session(mode="replay", cassette=cassette_path):
        replayed = run(spec.program, mode, wire, canned.url)
    assert attempts == []
    assert received(replayed) == received(live)

    for change in spec.changes:
        with (
            pytest.raises(
                ReplayDivergence, match=rf"step {change.step} \(model_input\) differs at "
            ) as diverged,
            blocked_network(),
            otel_blackbox.session(mode="replay", cassette=cassette_path),
        ):
            run(spec.program, mode, wire, canned.url, change.name)
        message_text = str(diverged.value)
        assert json.dumps(change.recorded) in message_text and json.dumps(change.changed) in message_text


def test_a_malformed_feature_field_is_one_cassette_error(tmp_path: Path) -> None:
    spec = FEATURES["thinking"]
    path = tmp_path / "thinking.json"
    with CannedProvider(list(spec.responses)) as canned, otel_blackbox.session(mode="record", cassette=path):
        run(spec.program, "sync", "json", canned.url)
    good = load_cassette(path)
    bad = Cassette(id=good.id, created_at=good.created_at)
    for step in good.steps:
        payload = step.payload
        if step.type == "model_output" and "reasoning" in payload:
            payload = {**payload, "reasoning": [{"signature": 42}]}
        bad.append(step.type, payload, step.timestamp)
    save_cassette(bad, path)
    with (
        pytest.raises(
            CassetteError, match=r"step 1 \(model_output\): field reasoning\[0\].signature must be a string"
        ),
        otel_blackbox.session(mode="replay", cassette=path),
    ):
        pass
