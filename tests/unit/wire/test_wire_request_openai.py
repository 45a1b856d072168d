"""``wire_request`` for OpenAI Chat Completions and Responses (a neutral ``model_input`` back to a
request body, the other direction of ``model_input``) and the built-in agent's clients of both APIs.

* Native round trips: requests in each API's own shape (tool rounds, results as text and as parts,
  refusals, web-search annotations, reasoning and hosted-call items, images, custom and built-in
  tools with their settings, every field of the request table, a field no table knows) go through
  ``model_input``, ``wire_request(native=True)`` and ``model_input`` again: the same model_input,
  JSON and streamed, nothing dropped.
* Across providers: the model_inputs Anthropic's and Gemini's translations read from real request
  bodies, and Chat's and Responses' each into the other, go through ``wire_request(native=False)``:
  the messages, calls and results (as text) with their ids and names, the system prompt, the tools
  and what the neutral settings mean come back; what cannot is named in ``dropped``.
* Through the real ``openai`` SDK: ``sdk_openai``'s clients send the body to a CannedProvider on
  127.0.0.1 (JSON and SSE answers), and the request it received reads back as the model_input the
  body was built from.
"""

from __future__ import annotations

import copy
import json
import sys
from typing import Any

import openai
import pytest
from helpers import CannedProvider, LoopbackAPI, Raw

from otel_blackbox._playback.agent.sdk import make_client
from otel_blackbox._playback.agent.sdk_openai import ChatClient, ResponsesClient
from otel_blackbox._types import JsonObject
from otel_blackbox._wire.anthropic.translation import AnthropicMessages
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.gemini.translation import GeminiGenerateContent
from otel_blackbox._wire.openai_chat.fields import CHAT_FIELDS
from otel_blackbox._wire.openai_chat.translation import OpenAIChat
from otel_blackbox._wire.openai_responses.fields import RESPONSES_FIELDS
from otel_blackbox._wire.openai_responses.translation import OpenAIResponses
from otel_blackbox._wire.protocol import Provider
from otel_blackbox._wire.settings import response_format_of, result_text, stop_list, tool_choice_of

CHAT = OpenAIChat()
RESPONSES = OpenAIResponses()
ANTHROPIC = AnthropicMessages()
GEMINI = GeminiGenerateContent().at(
    "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
)
MODEL = "gpt-4o-mini"
OTHER_MODEL = "gpt-5-mini"  # the agent's --model: it overrides the body's
KEY = "sk-fake-wire-request-0123456789"
UNKNOWN = "blackbox_unknown_setting"  # a field no table knows: sent through the SDK's extra_body
STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])

LOOKUP_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {"order_id": {"type": "integer"}},
    "required": ["order_id"],
    "additionalProperties": False,
}
REFUND_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {"order_id": {"type": "integer"}, "amount": {"type": "number"}},
}
CITATION: JsonObject = {
    "type": "url_citation",
    "url_citation": {
        "end_index": 12,
        "start_index": 0,
        "title": "Weather",
        "url": "https://weather.example/",
    },
}


def every_setting(fields: Any) -> JsonObject:
    """Every behaviour field of a table set (to a value of its own), and one no table knows."""
    return {**{name: {"value": name} for name in fields.behaviour}, UNKNOWN: [1, 2]}


# --- requests as programs send them ----------------------------------------------------------------

CHAT_REQUESTS: dict[str, JsonObject] = {
    "plain": {
        "model": MODEL,
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
    },
    "parts-images-late-system": {
        "model": MODEL,
        "messages": [
            {"role": "developer", "content": "Be kind."},
            {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
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
        "tools": [{"type": "custom", "custom": {"name": "grammar", "description": "free text",
                                                "format": {"type": "text"}}}],
        "tool_choice": {"type": "function", "function": {"name": "look"}},
        "response_format": {"type": "json_object"},
        "stop": ["END"],
        "max_tokens": 10,
        "seed": 7,
        "stream_options": {"include_usage": True},
    },
    "tool-round-with-a-tool-error": {
        "model": MODEL,
        "messages": [
            {"role": "system", "content": "You are a refund agent."},
            {"role": "user", "content": "Refund order 7"},
            {"role": "assistant", "content": "Checking.", "tool_calls": [
                {"id": "call_Ab1", "type": "function",
                 "function": {"name": "lookup", "arguments": '{"order_id": 7}'}},
                {"id": "call_Ab2", "type": "function",
                 "function": {"name": "refund_order", "arguments": '{"order_id":7,"amount":"12.OO"}'}},
            ]},
            {"role": "tool", "tool_call_id": "call_Ab1", "content": '{"total": 12}'},
            {"role": "tool", "tool_call_id": "call_Ab2",
             "content": [{"type": "text", "text": "amount must be a number"}]},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_Ab3", "type": "function",
                 "function": {"name": "refund_order", "arguments": '{"order_id":7,"amount":12.0}'}},
            ]},
            {"role": "tool", "tool_call_id": "call_Ab3", "content": "refunded"},
            {"role": "assistant", "content": "Refunded 12.00."},
            {"role": "user", "content": "Thanks"},
        ],
        "tools": [
            {"type": "function", "function": {"name": "lookup", "description": "Look up an order",
                                              "parameters": LOOKUP_SCHEMA, "strict": True}},
            {"type": "function", "function": {"name": "refund_order", "description": "Refund an order",
                                              "parameters": REFUND_SCHEMA}},
        ],
        "tool_choice": "required",
        "parallel_tool_calls": False,
        "temperature": 0.2,
        "top_p": 0.9,
        "max_completion_tokens": 300,
        "reasoning_effort": "low",
        "stop": "END",
    },
    "refusals-and-citations": {
        "model": "gpt-4o-search-preview",
        "messages": [
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": "Sunny today.", "refusal": None, "annotations": [CITATION]},
            {"role": "user", "content": "Now something forbidden"},
            {"role": "assistant", "content": None, "refusal": "I can't help with that."},
            {"role": "user", "content": "Again"},
            {"role": "assistant", "content": [{"type": "refusal", "refusal": "Still no."}]},
            {"role": "user", "content": "Fine"},
        ],
        "web_search_options": {"search_context_size": "low"},
    },
    "legacy-functions": {
        "model": MODEL,
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": None,
             "function_call": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
            {"role": "function", "name": "get_weather", "content": "sunny"},
        ],
        "functions": [{"name": "get_weather", "parameters": {"type": "object"}}],
        "function_call": "auto",
    },
    "every-setting": {
        "model": MODEL,
        "messages": [{"role": "user", "content": "Hi"}],
        "tools": [{"type": "function", "function": {"name": "lookup", "parameters": LOOKUP_SCHEMA}}],
        "max_tokens": 64,
        "temperature": 1.5,
        "top_p": 0.5,
        "tool_choice": "none",
        "response_format": {"type": "json_schema",
                            "json_schema": {"name": "answer", "schema": {"type": "object"}, "strict": True}},
        "stop": ["a", "b"],
        **every_setting(CHAT_FIELDS),
        "user": "u-1",  # transport: not in the model_input, so not sent again
    },
    "empty-and-listed-assistant-turns": {
        "model": MODEL,
        "messages": [
            {"role": "user", "content": "One"},
            {"role": "assistant", "content": []},
            {"role": "user", "content": "Two"},
            {"role": "assistant", "content": [{"type": "text", "text": "listed"}]},
            {"role": "user", "content": "Three"},
            {"role": "assistant", "content": ""},
            {"role": "user", "content": [
                {"type": "text", "text": "Four"}, {"type": "file", "file": {"file_id": "f"}},
            ]},
        ],
    },
}  # fmt: skip

RESPONSES_REQUESTS: dict[str, JsonObject] = {
    "string-input": {"model": MODEL, "instructions": "Be brief.", "input": "Hi"},
    "leading-developer-items": {
        "model": MODEL,
        "input": [
            {"role": "developer", "content": "Be kind."},
            {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "Use tools."}]},
            {"role": "user", "content": "Hi"},
            {"role": "developer", "content": "Later advice stays a message."},
        ],
    },
    "items-turns-and-dropped-items": {
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
    },
    "reasoning-hosted-calls-and-refusal": {
        "model": "o4-mini",
        "input": [
            {"role": "user", "content": "Research this"},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Plan"}],
             "content": [{"type": "reasoning_text", "text": "I should search."}],
             "encrypted_content": "gAAAAB-opaque"},
            {"type": "web_search_call", "id": "ws_1", "status": "completed",
             "action": {"type": "search", "query": "lisbon weather"}},
            {"type": "file_search_call", "id": "fs_1", "status": "completed", "queries": ["q"],
             "results": [{"file_id": "f", "text": "t"}]},
            {"type": "file_search_call", "id": "fs_2", "queries": ["r"], "results": None},
            {"type": "code_interpreter_call", "id": "ci_1", "status": "completed", "code": "print(1)",
             "container_id": "cntr_1", "outputs": [{"type": "logs", "logs": "1"}]},
            {"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": "aGk="},
            {"type": "mcp_call", "id": "mcp_1", "server_label": "docs", "name": "search",
             "arguments": "{}", "output": "found", "error": None},
            {"type": "message", "id": "msg_1", "role": "assistant", "content": [
                {"type": "output_text", "text": "Partly.", "annotations": []},
                {"type": "refusal", "refusal": "The rest I can't share."},
            ]},
            {"role": "user", "content": "OK"},
        ],
        "tools": [
            {"type": "web_search", "search_context_size": "low"},
            {"type": "file_search", "vector_store_ids": ["vs_1"]},
            {"type": "code_interpreter", "container": {"type": "auto"}},
            {"type": "mcp", "server_label": "docs", "server_url": "https://mcp.example/",
             "require_approval": "never"},
        ],
        "reasoning": {"effort": "high", "summary": "auto"},
        "include": ["reasoning.encrypted_content"],
    },
    "tool-round-with-a-tool-error": {
        "model": MODEL,
        "instructions": "You are a refund agent.",
        "input": [
            {"role": "user", "content": "Refund order 7"},
            {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
             "content": [{"type": "output_text", "text": "Checking.", "annotations": []}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_Ab1", "name": "lookup",
             "arguments": '{"order_id": 7}', "status": "completed"},
            {"type": "function_call", "id": "fc_2", "call_id": "call_Ab2", "name": "refund_order",
             "arguments": '{"order_id":7,"amount":"12.OO"}', "status": "completed"},
            {"type": "function_call_output", "call_id": "call_Ab1", "output": '{"total": 12}'},
            {"type": "function_call_output", "call_id": "call_Ab2",
             "output": [{"type": "input_text", "text": "amount must be a number"}]},
            {"type": "function_call", "call_id": "call_Ab3", "name": "refund_order",
             "arguments": '{"order_id":7,"amount":12.0}'},
            {"type": "function_call_output", "call_id": "call_Ab3", "output": "refunded"},
            {"role": "assistant", "content": "Refunded 12.00."},
            {"role": "user", "content": "Thanks"},
        ],
        "tools": [
            {"type": "function", "name": "lookup", "description": "Look up an order",
             "parameters": LOOKUP_SCHEMA, "strict": True},
            {"type": "function", "name": "refund_order", "description": "Refund an order",
             "parameters": REFUND_SCHEMA, "strict": False},
            # A function named like a built-in tool: its strict tells it apart.
            {"type": "function", "name": "web_search", "parameters": None, "strict": True},
            {"type": "custom", "name": "grammar", "description": "free text", "format": {"type": "text"}},
        ],
        "tool_choice": {"type": "function", "name": "lookup"},
        "parallel_tool_calls": False,
        "temperature": 0.2,
        "top_p": 0.9,
        "max_output_tokens": 300,
        "reasoning": {"effort": "low", "summary": "auto"},
        "text": {"verbosity": "low", "format": {"type": "json_schema", "name": "answer",
                                                 "schema": {"type": "object"}, "strict": True}},
    },
    "every-setting": {
        "model": MODEL,
        "input": [{"role": "user", "content": "Hi"}],
        "max_output_tokens": 64,
        "temperature": 1.5,
        "top_p": 0.5,
        "tool_choice": "auto",
        "text": {"format": {"type": "json_object"}, "verbosity": "high"},
        **every_setting(RESPONSES_FIELDS),
        "stop": ["x"],  # not a Responses field: kept under its own name, and sent back so
        "metadata": {"run": "7"},  # transport
    },
}  # fmt: skip

NATIVE = [(CHAT, name, request) for name, request in CHAT_REQUESTS.items()] + [
    (RESPONSES, name, request) for name, request in RESPONSES_REQUESTS.items()
]


def native_input(provider: Provider, request: JsonObject) -> JsonObject:
    return provider.model_input(request, CallIds())


# --- native: the exact inverse of model_input ----------------------------------------------------------


@STREAMS
@pytest.mark.parametrize(
    ("provider", "name", "request_body"), NATIVE, ids=[f"{p.name}-{n}" for p, n, _ in NATIVE]
)
def test_native_round_trip(provider: Provider, name: str, request_body: JsonObject, stream: bool) -> None:
    recorded = native_input(provider, request_body)
    before = copy.deepcopy(recorded)
    sent = provider.wire_request(recorded, stream=stream, native=True)
    assert sent.dropped == []
    assert provider.is_streaming(sent.body) is stream
    assert provider.model_input(sent.body, CallIds()) == recorded
    assert recorded == before, "wire_request does not touch the model_input"


def test_chat_sends_the_system_prompt_as_one_system_message_and_max_completion_tokens() -> None:
    """The leading developer and system messages were joined; what comes back is one system message.
    max_tokens and max_completion_tokens both read as maxTokens; max_completion_tokens is sent."""
    recorded = native_input(CHAT, CHAT_REQUESTS["parts-images-late-system"])
    body = CHAT.wire_request(recorded, stream=False, native=True).body
    assert body["messages"][0] == {"role": "system", "content": "Be kind.\n\nBe brief."}
    assert [m["role"] for m in body["messages"]].count("system") == 2  # the late one stays
    assert body["max_completion_tokens"] == 10 and "max_tokens" not in body
    assert "stream" not in body


def test_chat_sends_calls_and_results_with_the_neutral_ids() -> None:
    recorded = native_input(CHAT, CHAT_REQUESTS["tool-round-with-a-tool-error"])
    messages = CHAT.wire_request(recorded, stream=False, native=True).body["messages"]
    assert messages[2] == {
        "role": "assistant",
        "content": "Checking.",
        "tool_calls": [
            {"id": "call-0", "type": "function",
             "function": {"name": "lookup", "arguments": '{"order_id":7}'}},
            {"id": "call-1", "type": "function",
             "function": {"name": "refund_order", "arguments": '{"order_id":7,"amount":"12.OO"}'}},
        ],
    }  # fmt: skip
    assert messages[3:5] == [
        {"role": "tool", "tool_call_id": "call-0", "content": '{"total": 12}'},
        {"role": "tool", "tool_call_id": "call-1",
         "content": [{"type": "text", "text": "amount must be a number"}]},
    ]  # fmt: skip


def test_responses_sends_instructions_and_items_without_ids() -> None:
    recorded = native_input(RESPONSES, RESPONSES_REQUESTS["tool-round-with-a-tool-error"])
    body = RESPONSES.wire_request(recorded, stream=True, native=True).body
    assert body["instructions"] == "You are a refund agent."
    assert body["input"][1:4] == [
        {"role": "assistant", "content": [{"type": "output_text", "text": "Checking.", "annotations": []}]},
        {"type": "function_call", "call_id": "call-0", "name": "lookup", "arguments": '{"order_id":7}'},
        {"type": "function_call", "call_id": "call-1", "name": "refund_order",
         "arguments": '{"order_id":7,"amount":"12.OO"}'},
    ]  # fmt: skip
    assert not any("id" in item for item in body["input"])
    assert body["text"] == {"verbosity": "low", "format": recorded["params"]["responseFormat"]}
    assert body["stream"] is True


def test_responses_tells_a_built_in_tool_from_a_function_of_its_name() -> None:
    built_in = native_input(RESPONSES, RESPONSES_REQUESTS["reasoning-hosted-calls-and-refusal"])
    assert RESPONSES.wire_request(built_in, stream=False, native=True).body["tools"][0] == {
        "type": "web_search",
        "search_context_size": "low",
    }
    function = native_input(RESPONSES, RESPONSES_REQUESTS["tool-round-with-a-tool-error"])
    tools = RESPONSES.wire_request(function, stream=False, native=True).body["tools"]
    assert tools[2] == {"type": "function", "name": "web_search", "strict": True}
    assert tools[3] == {
        "type": "custom",
        "name": "grammar",
        "description": "free text",
        "format": {"type": "text"},
    }


def test_a_hosted_call_carries_a_status_only_where_one_was_recorded() -> None:
    recorded = native_input(RESPONSES, RESPONSES_REQUESTS["reasoning-hosted-calls-and-refusal"])
    items = RESPONSES.wire_request(recorded, stream=False, native=True).body["input"]
    searches = [i for i in items if i.get("type") == "file_search_call"]
    assert [s.get("status") for s in searches] == ["completed", None]


# --- across providers ---------------------------------------------------------------------------------

ANTHROPIC_REQUEST: JsonObject = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 1024,
    "system": [{"type": "text", "text": "You are a refund agent."}, {"type": "text", "text": "Be exact."}],
    "messages": [
        {"role": "user", "content": [
            {"type": "text", "text": "Refund order 7"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/AA"}},
        ]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Look it up first.", "signature": "c2ln"},
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_01", "name": "lookup", "input": {"order_id": 7}},
            {"type": "tool_use", "id": "toolu_02", "name": "refund_order",
             "input": {"order_id": 7, "amount": "12.OO"}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01",
             "content": [{"type": "text", "text": '{"total": 12}'}]},
            {"type": "tool_result", "tool_use_id": "toolu_02", "content": "amount must be a number",
             "is_error": True},
            {"type": "text", "text": "Please retry."},
        ]},
    ],
    "tools": [
        {"name": "lookup", "description": "Look up an order", "input_schema": LOOKUP_SCHEMA, "strict": True},
        {"name": "refund_order", "description": "Refund an order", "input_schema": REFUND_SCHEMA},
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
    ],
    "temperature": 0.3,
    "top_p": 0.9,
    "top_k": 5,
    "stop_sequences": ["DONE"],
    "tool_choice": {"type": "tool", "name": "refund_order"},
    "thinking": {"type": "enabled", "budget_tokens": 512},
    "output_config": {"format": {"type": "json_schema", "schema": {"type": "object"}}},
}  # fmt: skip

GEMINI_REQUEST: JsonObject = {
    "systemInstruction": {"parts": [{"text": "You are terse."}]},
    "contents": [
        {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
        {"role": "model", "parts": [
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "c2ln"}
        ]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "get_weather", "response": {"error": "service down"}}}
        ]},
        {"role": "model", "parts": [
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris", "retry": True}}}
        ]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "get_weather", "response": {"result": {"temp": 21}}}}
        ]},
        {"role": "user", "parts": [
            {"text": "And this?"}, {"inlineData": {"mimeType": "image/png", "data": "iVBORw0"}},
            {"fileData": {"fileUri": "https://generativelanguage.googleapis.com/v1beta/files/x",
                          "mimeType": "application/pdf"}},
        ]},
    ],
    "tools": [{"functionDeclarations": [{
        "name": "get_weather", "description": "Weather in a city",
        "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}, "days": {
            "type": "ARRAY", "items": {"type": "INTEGER"}}}, "required": ["city"]},
    }]}],
    "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}},
    "generationConfig": {"maxOutputTokens": 256, "temperature": 0.5, "topP": 0.8, "topK": 20,
                         "stopSequences": ["END"], "seed": 3, "responseMimeType": "application/json"},
}  # fmt: skip
# What the Gemini schema is to OpenAI: JSON Schema's lower-case type names.
GEMINI_SCHEMA_AS_JSON_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "array", "items": {"type": "integer"}}},
    "required": ["city"],
}


def conversation(model_input: JsonObject) -> list[tuple[Any, ...]]:
    """What the messages say, flat, in order: each turn's results (id, name, text: an error is its
    text), its text, its refusal, its calls (id, name, input). Turns split or joined differently by two
    APIs (Chat's tool messages before a user's text, a user turn of one text part or a string) say the
    same."""
    said: list[tuple[Any, ...]] = []
    for message in model_input["messages"]:
        content = message["content"]
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for p in parts:
            if p["type"] == "tool_result":
                text = p["error"] if "error" in p else result_text(p["result"])
                said.append(("result", p["toolCallId"], p["toolName"], text))
        text = "".join(p["text"] for p in parts if p["type"] == "text")
        if text:
            said.append(("text", message["role"], text))
        said += [("refusal", p["refusal"]) for p in parts if p["type"] == "refusal"]
        said += [
            ("call", p["toolCallId"], p["toolName"], p["toolInput"]) for p in parts if p["type"] == "tool_use"
        ]
    return said


def tools_of(model_input: JsonObject) -> list[tuple[Any, ...]]:
    return [(t["name"], t["description"], t.get("inputSchema")) for t in model_input["tools"]]


def meaning(params: JsonObject) -> JsonObject:
    """What the neutral settings mean, whatever API's shape they are in."""
    out: JsonObject = {key: params[key] for key in ("maxTokens", "temperature", "topP") if key in params}
    if "toolChoice" in params:
        out["toolChoice"] = tool_choice_of(params["toolChoice"])
    if "stop" in params:
        out["stop"] = stop_list(params["stop"])
    if "responseFormat" in params:
        answer = response_format_of(params["responseFormat"])
        out["responseFormat"] = (answer.kind, answer.schema) if answer else None
    return out


def across(provider: Provider, recorded: JsonObject) -> tuple[JsonObject, list[str], JsonObject]:
    sent = provider.wire_request(recorded, stream=False, native=False)
    return provider.model_input(sent.body, CallIds()), sent.dropped, sent.body


def without(params: JsonObject, *keys: str) -> JsonObject:
    return {k: v for k, v in params.items() if k not in keys}


OPENAI_APIS = pytest.mark.parametrize("provider", [CHAT, RESPONSES], ids=["chat", "responses"])


@OPENAI_APIS
def test_an_anthropic_incident_on_an_openai_api(provider: Provider) -> None:
    recorded = ANTHROPIC.model_input(ANTHROPIC_REQUEST, CallIds())
    back, dropped, _ = across(provider, recorded)
    assert conversation(back) == conversation(recorded)
    assert ("result", "call-1", "refund_order", "amount must be a number") in conversation(back)
    assert back["systemPrompt"] == "You are a refund agent.\n\nBe exact."
    # The server-run web search is no function to offer; the others keep their schemas.
    assert tools_of(back) == [t for t in tools_of(recorded) if t[0] != "web_search"]
    image = back["messages"][0]["content"][1]
    assert image["type"] == "image" and image["url"] == "data:image/jpeg;base64,/9j/AA"
    no_stop = provider is RESPONSES  # the Responses API has no stop sequences
    assert meaning(back["params"]) == meaning(without(recorded["params"], *(["stop"] if no_stop else [])))
    assert meaning(back["params"])["toolChoice"] == tool_choice_of({"type": "tool", "name": "refund_order"})
    assert dropped == [
        "a reasoning part",
        "the settings of tool lookup",
        "tool web_search (a web_search_20250305 tool)",
        *(["params.stop"] if no_stop else []),
        "params.top_k",
        "params.thinking",
    ]


@OPENAI_APIS
def test_a_gemini_incident_on_an_openai_api(provider: Provider) -> None:
    recorded = GEMINI.model_input(GEMINI_REQUEST, CallIds())
    back, dropped, _ = across(provider, recorded)
    assert conversation(back) == conversation(recorded)
    assert ("result", "call-0", "get_weather", "service down") in conversation(back)
    assert ("result", "call-1", "get_weather", '{"temp":21}') in conversation(back)
    assert back["systemPrompt"] == "You are terse."
    assert tools_of(back) == [("get_weather", "Weather in a city", GEMINI_SCHEMA_AS_JSON_SCHEMA)]
    assert back["messages"][-1]["content"][1]["url"] == "data:image/png;base64,iVBORw0"
    no_stop = provider is RESPONSES
    assert meaning(back["params"]) == meaning(without(recorded["params"], *(["stop"] if no_stop else [])))
    assert meaning(back["params"])["responseFormat"] == ("json_object", None)
    # Gemini's seed is Chat's seed, under the same name; Responses has none.
    assert back["params"].get("seed") == (None if no_stop else 3)
    assert dropped == [
        "a tool call signature",
        "a fileData part",
        *(["params.stop"] if no_stop else []),
        "params.topK",
        *(["params.seed"] if no_stop else []),
    ]


@pytest.mark.parametrize(
    ("source", "target", "name"),
    [(CHAT, RESPONSES, "tool-round-with-a-tool-error"), (RESPONSES, CHAT, "tool-round-with-a-tool-error"),
     (RESPONSES, CHAT, "reasoning-hosted-calls-and-refusal"), (CHAT, RESPONSES, "refusals-and-citations")],
    ids=["chat-on-responses", "responses-on-chat", "responses-hosted-on-chat", "chat-refusals-on-responses"],
)  # fmt: skip
def test_chat_and_responses_incidents_on_each_other(source: Provider, target: Provider, name: str) -> None:
    requests = CHAT_REQUESTS if source is CHAT else RESPONSES_REQUESTS
    recorded = native_input(source, requests[name])
    back, _, _ = across(target, recorded)
    assert conversation(back) == conversation(recorded)
    assert back.get("systemPrompt") == recorded.get("systemPrompt")
    sent_tools = [t for t in tools_of(recorded) if t[0] != "grammar"]  # a custom tool is no function
    assert tools_of(back) == sent_tools
    no_stop = target is RESPONSES
    recorded_params = recorded.get("params", {})
    assert meaning(back.get("params", {})) == meaning(
        without(recorded_params, *(["stop"] if no_stop else []))
    )


def test_chat_and_responses_carry_each_others_reasoning_effort_and_verbosity() -> None:
    chat = native_input(CHAT, CHAT_REQUESTS["tool-round-with-a-tool-error"])
    on_responses, dropped, body = across(RESPONSES, chat)
    assert body["reasoning"] == {"effort": "low"} and body["parallel_tool_calls"] is False
    assert on_responses["params"]["reasoning"] == {"effort": "low"}
    assert dropped == ["the settings of tool lookup", "params.stop"]
    assert body["tools"][0] == {"type": "function", "name": "lookup", "description": "Look up an order",
                                "parameters": LOOKUP_SCHEMA, "strict": False}  # fmt: skip

    responses = native_input(RESPONSES, RESPONSES_REQUESTS["tool-round-with-a-tool-error"])
    _, dropped, body = across(CHAT, responses)
    assert body["reasoning_effort"] == "low" and body["verbosity"] == "low"
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": {"type": "object"}, "strict": True},
    }
    assert body["tool_choice"] == {"type": "function", "function": {"name": "lookup"}}
    assert dropped == [
        "the settings of tool lookup",
        "the settings of tool refund_order",
        "the settings of tool web_search",
        "tool grammar (a custom tool)",
        "params.reasoning.summary",
    ]


def test_what_chat_cannot_say_of_a_responses_turn_is_named() -> None:
    recorded = native_input(RESPONSES, RESPONSES_REQUESTS["reasoning-hosted-calls-and-refusal"])
    back, dropped, body = across(CHAT, recorded)
    assert body["messages"][1] == {
        "role": "assistant",
        "content": "Partly.",
        "refusal": "The rest I can't share.",
    }
    assert conversation(back) == conversation(recorded)
    assert dropped[:6] == [
        "a reasoning part",
        "a hosted web_search call",
        "a hosted file_search call",
        "a hosted code_interpreter call",
        "a hosted image_generation call",
        "a hosted mcp call",
    ]
    assert "params.reasoning.summary" in dropped
    assert body["reasoning_effort"] == "high"


def test_an_image_by_file_id_is_named_on_chat_and_kept_on_responses() -> None:
    recorded = native_input(RESPONSES, RESPONSES_REQUESTS["items-turns-and-dropped-items"])
    on_chat, dropped, _ = across(CHAT, recorded)
    assert "an image part" in dropped and "an input_file part" in dropped
    assert [p["type"] for p in on_chat["messages"][0]["content"]] == ["text", "image"]
    chat = native_input(CHAT, CHAT_REQUESTS["parts-images-late-system"])
    on_responses, dropped, _ = across(RESPONSES, chat)
    assert on_responses["messages"][0]["content"][1] == {
        "type": "image",
        "url": "data:image/png;base64,AAAA",
        "detail": "low",
    }
    assert "an input_audio part" in dropped


def test_a_tool_choice_with_no_tools_is_not_sent() -> None:
    recorded = {"messages": [{"role": "user", "content": "Hi"}], "tools": [],
                "params": {"toolChoice": {"type": "any"}, "parallel_tool_calls": True}}  # fmt: skip
    for provider in (CHAT, RESPONSES):
        sent = provider.wire_request(recorded, stream=False, native=False)
        assert "tool_choice" not in sent.body and "parallel_tool_calls" not in sent.body
        assert sent.dropped == ["params.toolChoice", "params.parallel_tool_calls"]


def test_chat_takes_four_stop_sequences_and_names_the_rest() -> None:
    recorded = {"messages": [], "tools": [], "params": {"stop": ["1", "2", "3", "4", "5"]}}
    sent = CHAT.wire_request(recorded, stream=False, native=False)
    assert sent.body["stop"] == ["1", "2", "3", "4"]
    assert sent.dropped == ["params.stop beyond 4 sequences"]


def test_a_setting_no_api_has_reads_as_not_sent() -> None:
    params = {"toolChoice": {"type": "whatever"}, "responseFormat": {"type": "xml"}, "stop": 3}
    recorded = {"messages": [], "tools": [{"name": "f", "description": ""}], "params": params}
    chat = CHAT.wire_request(recorded, stream=False, native=False)
    assert chat.dropped == ["params.toolChoice", "params.responseFormat", "params.stop"]
    responses = RESPONSES.wire_request(recorded, stream=False, native=False)
    assert responses.dropped == ["params.stop", "params.toolChoice", "params.responseFormat"]


def test_an_assistant_turn_with_nothing_to_send_is_left_out_across_providers() -> None:
    recorded = {"tools": [], "messages": [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": [{"type": "reasoning", "text": "hm", "signature": "s"}]},
        {"role": "user", "content": "Well?"},
    ]}  # fmt: skip
    assert CHAT.wire_request(recorded, stream=False, native=False).body["messages"] == [
        {"role": "user", "content": "Hi"},
        {"role": "user", "content": "Well?"},
    ]
    assert RESPONSES.wire_request(recorded, stream=False, native=False).body["input"] == [
        {"role": "user", "content": "Hi"},
        {"role": "user", "content": "Well?"},
    ]


@OPENAI_APIS
def test_a_model_input_nested_too_deeply_is_one_value_error(provider: Provider) -> None:
    schema: JsonObject = {"type": "OBJECT"}
    for _ in range(sys.getrecursionlimit() + 10):
        schema = {"type": "ARRAY", "items": schema}
    recorded = {"messages": [], "tools": [{"name": "f", "description": "", "inputSchema": schema}]}
    with pytest.raises(ValueError, match=r"model_input to send .* nested too deeply"):
        provider.wire_request(recorded, stream=False, native=False)


# --- through the real openai SDK ----------------------------------------------------------------------

ANSWER: JsonObject = {"type": "final_answer", "text": "Done."}
CLIENTS = {CHAT.name: ChatClient, RESPONSES.name: ResponsesClient}
PATHS = {CHAT.name: "/v1/chat/completions", RESPONSES.name: "/v1/responses"}


def canned_answer(provider: Provider, body: JsonObject) -> Any:
    """The answer the API gives that request: a JSON body, or the SSE stream when it asked for one."""
    wire = provider.wire_response(ANSWER, body)
    return Raw("text/event-stream", wire.body) if provider.is_streaming(body) else json.loads(wire.body)


def with_unknown_setting(provider: Provider, name: str) -> JsonObject:
    requests = CHAT_REQUESTS if provider is CHAT else RESPONSES_REQUESTS
    return {**requests[name], UNKNOWN: {"nested": [1, "two"]}}


SDK_CASES: list[tuple[Provider, str]] = [
    (CHAT, "tool-round-with-a-tool-error"),
    (CHAT, "refusals-and-citations"),
    (RESPONSES, "tool-round-with-a-tool-error"),
    (RESPONSES, "reasoning-hosted-calls-and-refusal"),
]


@STREAMS
@pytest.mark.parametrize(("provider", "name"), SDK_CASES, ids=[f"{p.name}-{n}" for p, n in SDK_CASES])
def test_the_sdk_sends_the_native_body_as_built(
    monkeypatch: pytest.MonkeyPatch, provider: Provider, name: str, stream: bool
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    recorded = native_input(provider, with_unknown_setting(provider, name))
    body = provider.wire_request(recorded, stream=stream, native=True).body
    with CannedProvider([canned_answer(provider, body)]) as server:
        CLIENTS[provider.name](base_url=f"{server.url}/v1").send(body, model=OTHER_MODEL, stream=stream)
    (received,) = server.requests
    assert server.received[0][1] == PATHS[provider.name]
    assert provider.is_streaming(received) is stream
    assert provider.model_input(received, CallIds()) == {**recorded, "model": OTHER_MODEL}
    assert received[UNKNOWN] == {"nested": [1, "two"]}  # not a create() argument: sent in extra_body


@STREAMS
@OPENAI_APIS
def test_the_sdk_sends_an_anthropic_incident_as_built(
    monkeypatch: pytest.MonkeyPatch, provider: Provider, stream: bool
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    recorded = ANTHROPIC.model_input(ANTHROPIC_REQUEST, CallIds())
    body = provider.wire_request(recorded, stream=stream, native=False).body
    with CannedProvider([canned_answer(provider, body)]) as server:
        CLIENTS[provider.name](base_url=f"{server.url}/v1").send(body, model=OTHER_MODEL, stream=stream)
    (received,) = server.requests
    assert provider.model_input(received, CallIds()) == {
        **provider.model_input(body, CallIds()),
        "model": OTHER_MODEL,
    }
    assert conversation(provider.model_input(received, CallIds())) == conversation(recorded)


def test_the_base_url_and_key_come_from_the_sdks_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    recorded = native_input(CHAT, CHAT_REQUESTS["plain"])
    body = CHAT.wire_request(recorded, stream=False, native=True).body
    seen: list[str] = []

    def answer(method: str, path: str, sent: bytes) -> tuple[int, Any]:
        return 200, canned_answer(CHAT, json.loads(sent))

    with LoopbackAPI(answer) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        client = make_client("openai-chat", base_url=None)
        assert isinstance(client, ChatClient)
        client.send(body, model=MODEL, stream=False)
        seen = [path for _, path, _ in server.received]
    assert seen == ["/v1/chat/completions"]


def test_an_error_response_raises_the_sdks_own_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    body = RESPONSES.wire_request(native_input(RESPONSES, RESPONSES_REQUESTS["string-input"]), stream=True,
                                  native=True).body  # fmt: skip
    refusal = {"error": {"message": "Unsupported parameter: 'temperature'", "type": "invalid_request_error"}}
    with LoopbackAPI(lambda method, path, sent: (400, refusal)) as server:
        client = make_client("openai-responses", base_url=f"{server.url}/v1")
        with pytest.raises(openai.BadRequestError, match="Unsupported parameter"):
            client.send(body, model=MODEL, stream=True)
    assert len(server.received) == 1, "a 4xx is not retried"
