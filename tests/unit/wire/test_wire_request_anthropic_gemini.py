"""Neutral ``model_input`` -> request body for Anthropic Messages and Gemini generateContent
(``wire_request``), and the built-in agent's clients of their SDKs.

* Native round trips: requests as programs send them (the feature tests' tool rounds, thinking,
  hosted tools, tool errors, settings) read by ``model_input``, written back by ``wire_request``,
  read again: the same model_input, ids included, nothing dropped.
* Across providers: model_inputs read from real OpenAI Chat and Responses requests, and from each
  other's, written for Anthropic and Gemini: the conversation (texts, tool uses and results by id
  and name, results as text), the system prompt, the tools and the neutral settings read back the
  same, and what has no equivalent is named in ``dropped``.
* Through the real SDKs: ``AnthropicClient`` and ``GeminiClient`` send the body to a loopback
  provider (JSON and SSE answers), which receives exactly that body.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from google.genai import errors as genai_errors
from helpers import CannedProvider, LoopbackAPI, Raw

from otel_blackbox._playback.agent.sdk_anthropic import AnthropicClient
from otel_blackbox._playback.agent.sdk_gemini import GeminiClient
from otel_blackbox._types import JsonObject
from otel_blackbox._wire.anthropic.translation import AnthropicMessages
from otel_blackbox._wire.anthropic.write_request import DEFAULT_MAX_TOKENS
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.gemini.translation import GeminiGenerateContent
from otel_blackbox._wire.openai_chat.translation import OpenAIChat
from otel_blackbox._wire.openai_responses.translation import OpenAIResponses
from otel_blackbox._wire.settings import response_format_of, result_text, stop_list, tool_choice_of

ANTHROPIC = AnthropicMessages()
CLAUDE = "claude-sonnet-4-5"
GEMINI_MODEL = "gemini-2.5-flash"
GEMINI_URL = f"http://127.0.0.1:9/v1beta/models/{GEMINI_MODEL}:generateContent"
GEMINI = GeminiGenerateContent().at(GEMINI_URL)
ANTHROPIC_KEY = "sk-ant-fake-wire-request-0123456789"
GEMINI_KEY = "AIza-fake-wire-request-0123456789"

# Opaque values as the APIs hand them out (base64); one with + and /, which the google-genai SDK
# would write back URL-safe.
SIGNATURE = "EqQBCkYIBxgCKkBZ2lnbmF0dXJlIG9mIHRoaXMgdGhpbmtpbmc+/w=="
REDACTED = "EmwKAhgBEgy3va3pzix/LafPsn4aDHJlZGFjdGVkIHRoaW5raW5n"
THOUGHT_SIG = "CiQBR0FsbXN0aG91Z2h0c2lnbmF0dXJlMDAx"
CALL_SIG = "CiQBR0FsbWNhbGxzaWduYXR1cmUwMDE+/w=="
TEXT_SIG = "CiQBR0FsbXRleHRzaWduYXR1cmUwMDE="
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n tiny").decode()

WEATHER_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Current weather for a city.",
    "input_schema": WEATHER_SCHEMA,
}
WEB_SEARCH_TOOL = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}
SEARCH_RESULT = {
    "type": "web_search_result",
    "url": "https://weather.example/lisbon",
    "title": "Lisbon weather today",
    "encrypted_content": "Eo8BCioIAhgBIiQ3YTY2ZDZlZC1lbmNyeXB0ZWQtcGFnZQ==",
    "page_age": "2 hours ago",
}


def user(content: Any) -> JsonObject:
    return {"role": "user", "content": content}


def assistant(content: Any) -> JsonObject:
    return {"role": "assistant", "content": content}


def text(value: str) -> JsonObject:
    return {"type": "text", "text": value}


# --- Anthropic requests, as programs send them ---------------------------------------------------

THINKING_BLOCKS: list[JsonObject] = [
    {"type": "thinking", "thinking": "Lisbon's weather: get_weather answers that.", "signature": SIGNATURE},
    {"type": "redacted_thinking", "data": REDACTED},
    {"type": "tool_use", "id": "toolu_01W", "name": "get_weather", "input": {"city": "Lisbon"}},
]
SEARCH_BLOCKS: list[JsonObject] = [
    text("I'll search for Lisbon's weather today."),
    {
        "type": "server_tool_use",
        "id": "srvtoolu_01A",
        "name": "web_search",
        "input": {"query": "Lisbon weather"},
    },
    {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01A", "content": [SEARCH_RESULT]},
    text("Lisbon is "),
    {
        "type": "text",
        "text": "18C and sunny",
        "citations": [
            {"type": "web_search_result_location", "url": SEARCH_RESULT["url"], "cited_text": "18C"}
        ],
    },
]
ANTHROPIC_REQUESTS: dict[str, JsonObject] = {
    "thinking tool round": {
        "model": CLAUDE,
        "max_tokens": 4096,
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "tools": [WEATHER_TOOL],
        "messages": [
            user("What's the weather in Lisbon?"),
            assistant(THINKING_BLOCKS),
            user([{"type": "tool_result", "tool_use_id": "toolu_01W", "content": "18C, sunny"}]),
        ],
    },
    "hosted tools sent back": {
        "model": CLAUDE,
        "max_tokens": 1024,
        "tools": [WEB_SEARCH_TOOL],
        "messages": [user("Search the web: Lisbon today?"), assistant(SEARCH_BLOCKS), user("And tomorrow?")],
    },
    "interleaved thinking, search and a call": {
        "model": CLAUDE,
        "max_tokens": 4096,
        "tools": [WEATHER_TOOL, WEB_SEARCH_TOOL],
        "messages": [
            user("Weather in Lisbon?"),
            assistant(
                [
                    THINKING_BLOCKS[0],
                    *SEARCH_BLOCKS[1:3],
                    {**THINKING_BLOCKS[0], "thinking": "Confirm it."},
                    text("Checking the station too."),
                    THINKING_BLOCKS[2],
                ]
            ),
            user([{"type": "tool_result", "tool_use_id": "toolu_01W", "content": [text("18C")]}]),
        ],
    },
    "server tools, an orphan result, an MCP error": {
        "model": CLAUDE,
        "max_tokens": 512,
        "mcp_servers": [{"type": "url", "url": "https://mcp.example/sse", "name": "docs"}],
        "messages": [
            user("Run it."),
            assistant(
                [
                    {
                        "type": "server_tool_use",
                        "id": "srvtoolu_1",
                        "name": "code_execution",
                        "input": {"code": "1+1"},
                    },
                    {
                        "type": "code_execution_tool_result",
                        "tool_use_id": "srvtoolu_1",
                        "content": {"stdout": "2"},
                    },
                    {
                        "type": "server_tool_use",
                        "id": "srvtoolu_3",
                        "name": "bash_code_execution",
                        "input": {},
                    },
                    {"type": "advisor_tool_result", "tool_use_id": "srvtoolu_4", "content": {"advice": "go"}},
                    {
                        "type": "mcp_tool_use",
                        "id": "mcptoolu_1",
                        "name": "search",
                        "server_name": "docs",
                        "input": {},
                    },
                    {
                        "type": "mcp_tool_result",
                        "tool_use_id": "mcptoolu_1",
                        "is_error": True,
                        "content": [text("down")],
                    },
                    {
                        "type": "mcp_tool_use",
                        "id": "mcptoolu_2",
                        "name": "read",
                        "server_name": "docs",
                        "input": {},
                    },
                    {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_2", "content": [text("ok")]},
                ]
            ),
            user("Thanks."),
        ],
    },
    "tool errors and results of every shape": {
        "model": CLAUDE,
        "max_tokens": 256,
        "tools": [
            WEATHER_TOOL,
            {"name": "refund_order", "description": "Refund.", "input_schema": {"type": "object"}},
        ],
        "messages": [
            user("Refund order 7 and check Oslo."),
            assistant(
                [
                    text("On it."),
                    {
                        "type": "tool_use",
                        "id": "toolu_A",
                        "name": "refund_order",
                        "input": {"amount": "12.OO"},
                    },
                    {"type": "tool_use", "id": "toolu_B", "name": "get_weather", "input": {"city": "Oslo"}},
                    {"type": "tool_use", "id": "toolu_C", "name": "get_weather", "input": {"city": "Bergen"}},
                    {"type": "tool_use", "id": "toolu_D", "name": "get_weather", "input": {"city": "Molde"}},
                ]
            ),
            user(
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_A",
                        "is_error": True,
                        "content": "amount: not a number",
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_B",
                        "is_error": True,
                        "content": [text("timeout")],
                    },
                    {"type": "tool_result", "tool_use_id": "toolu_C"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_D",
                        "content": [text("3C"), text(" windy")],
                    },
                    {"type": "tool_result", "tool_use_id": "toolu_gone", "content": "an answer to no call"},
                    text("Go on."),
                ]
            ),
        ],
    },
    "blocks kept as sent, a system of blocks": {
        "model": CLAUDE,
        "max_tokens": 128,
        "system": [
            text("You are terse."),
            {**text("Answer in French."), "cache_control": {"type": "ephemeral"}},
        ],
        "messages": [
            user(
                [
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
                    {
                        "type": "document",
                        "source": {"type": "text", "media_type": "text/plain", "data": "Memo."},
                    },
                    {
                        "type": "search_result",
                        "source": "https://a.example",
                        "title": "A",
                        "content": [text("a")],
                    },
                    {**text("What do these say?"), "cache_control": {"type": "ephemeral"}},
                ]
            ),
            user("Twice in a row, as sent."),
        ],
    },
    "every kind of setting": {
        "model": CLAUDE,
        "max_tokens": 700,
        "system": "Be brief.",
        "temperature": 0.2,
        "top_p": 0.9,
        "top_k": 40,
        "stop_sequences": ["</done>"],
        "tool_choice": {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True},
        "output_config": {"format": {"type": "json_schema", "schema": WEATHER_SCHEMA}, "effort": "high"},
        "container": {"id": "container_011CZ", "skills": [{"type": "anthropic", "skill_id": "xlsx"}]},
        "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]},
        "compaction": {"type": "enabled"},
        "fallbacks": ["default"],
        "metadata": {"user_id": "u-1"},  # transport: not in the model_input, so not sent back
        "blackbox_unknown_setting": {"depth": 3},
        "tools": [
            {**WEATHER_TOOL, "strict": True, "cache_control": {"type": "ephemeral"}},
            {**WEB_SEARCH_TOOL, "allowed_domains": ["weather.example"]},
            {"name": "lookup", "input_schema": {"type": "object"}, "input_examples": [{"q": "x"}]},
        ],
        "messages": [user("Weather?")],
    },
    "tool choices": {
        "model": CLAUDE,
        "max_tokens": 64,
        "tool_choice": {"type": "any"},
        "tools": [WEATHER_TOOL],
        "messages": [user("Hi")],
    },
}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("name", list(ANTHROPIC_REQUESTS))
def test_anthropic_native_round_trip(name: str, stream: bool) -> None:
    request = ANTHROPIC_REQUESTS[name]
    model_input = ANTHROPIC.model_input(request, CallIds())
    wire = ANTHROPIC.wire_request(copy.deepcopy(model_input), stream=stream, native=True)
    assert ANTHROPIC.model_input(wire.body, CallIds()) == model_input
    assert wire.dropped == []
    assert wire.body.get("stream") is (True if stream else None)


def test_anthropic_native_body_is_the_request_again_where_the_neutral_form_tells() -> None:
    request = ANTHROPIC_REQUESTS["thinking tool round"]
    body = ANTHROPIC.wire_request(ANTHROPIC.model_input(request, CallIds()), stream=False, native=True).body
    thinking, redacted, call = body["messages"][1]["content"]
    assert thinking == THINKING_BLOCKS[0] and redacted == THINKING_BLOCKS[1]
    assert call == {**THINKING_BLOCKS[2], "id": "call-0"}  # the neutral id
    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "call-0", "content": "18C, sunny"}
    ]
    assert {k: body[k] for k in ("model", "max_tokens", "thinking", "tools")} == {
        k: request[k] for k in ("model", "max_tokens", "thinking", "tools")
    }
    settings = ANTHROPIC_REQUESTS["every kind of setting"]
    sent = ANTHROPIC.wire_request(ANTHROPIC.model_input(settings, CallIds()), stream=False, native=True).body
    assert sent["system"] == "Be brief." and sent["output_config"] == settings["output_config"]
    assert sent["container"] == {"skills": settings["container"]["skills"]}  # its id is transport
    assert sent["tools"][0] == {**WEATHER_TOOL, "strict": True}  # the cache marker is not kept
    errors = ANTHROPIC_REQUESTS["tool errors and results of every shape"]
    results = ANTHROPIC.wire_request(ANTHROPIC.model_input(errors, CallIds()), stream=False, native=True)
    assert results.body["messages"][2]["content"][:2] == [
        {"type": "tool_result", "tool_use_id": "call-0", "content": "amount: not a number", "is_error": True},
        {"type": "tool_result", "tool_use_id": "call-1", "content": "timeout", "is_error": True},
    ]


def test_anthropic_hosted_tools_get_ids_of_their_own_and_results_point_at_them() -> None:
    request = ANTHROPIC_REQUESTS["server tools, an orphan result, an MCP error"]
    body = ANTHROPIC.wire_request(ANTHROPIC.model_input(request, CallIds()), stream=False, native=True).body
    blocks = body["messages"][1]["content"]
    uses = [b["id"] for b in blocks if b["type"] in ("server_tool_use", "mcp_tool_use")]
    assert len(set(uses)) == len(uses) == 4
    answered = [b["tool_use_id"] for b in blocks if "tool_use_id" in b and b["type"] != "advisor_tool_result"]
    assert answered == [uses[0], uses[2], uses[3]]
    mcp = [b for b in blocks if b["type"] == "mcp_tool_use"]
    assert [(b["server_name"], b["name"]) for b in mcp] == [("docs", "search"), ("docs", "read")]


def test_anthropic_max_tokens_defaults_to_4096() -> None:
    bare = {"messages": [user("Hi")], "tools": []}
    for native in (True, False):
        assert (
            ANTHROPIC.wire_request(bare, stream=False, native=native).body["max_tokens"]
            == DEFAULT_MAX_TOKENS
            == 4096
        )


# --- Gemini requests, as programs send them ------------------------------------------------------

OPENAPI_AMOUNT = {"type": "OBJECT", "properties": {"amount": {"type": "NUMBER"}}}
WEATHER_DECLARATION = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "parametersJsonSchema": WEATHER_SCHEMA,
}


def gemini_user(*parts: JsonObject) -> JsonObject:
    return {"role": "user", "parts": list(parts)}


def model(*parts: JsonObject) -> JsonObject:
    return {"role": "model", "parts": list(parts)}


def call(name: str, args: JsonObject, *, call_id: str | None = None, **extra: Any) -> JsonObject:
    found: JsonObject = {"name": name, "args": args}
    if call_id is not None:
        found["id"] = call_id
    return {"functionCall": found, **extra}


def answer(name: str, response: Any, **extra: Any) -> JsonObject:
    found: JsonObject = {"name": name, **extra}
    if response is not None:
        found["response"] = response
    return {"functionResponse": found}


GEMINI_REQUESTS: dict[str, JsonObject] = {
    "thinking tool round": {
        "contents": [
            gemini_user({"text": "What's the weather in Paris?"}),
            model(
                {"text": "The user wants Paris weather.", "thought": True, "thoughtSignature": THOUGHT_SIG},
                {"text": "I will call the tool."},
                call("get_weather", {"city": "Paris"}, thoughtSignature=CALL_SIG),
                call("get_time", {"city": "Paris"}),
            ),
            gemini_user(
                answer("get_weather", {"result": "sunny, 24C"}), answer("get_time", {"output": "noon"})
            ),
            model({"text": "Sunny at noon.", "thoughtSignature": TEXT_SIG}),
            gemini_user({"text": "Thanks."}),
        ],
        "tools": [
            {"functionDeclarations": [WEATHER_DECLARATION, {"name": "get_time", "description": "Time."}]}
        ],
        "generationConfig": {"thinkingConfig": {"includeThoughts": True, "thinkingBudget": 512}},
    },
    "a stream's thoughts, one without a signature, and a signature alone": {
        "contents": [
            gemini_user({"text": "Plan."}),
            model({"text": "First ", "thought": True}, {"text": "idea.", "thought": True}),
            model({"text": "Step one."}),
            model(
                {"text": "Second idea.", "thought": True}, {"thought": True, "thoughtSignature": THOUGHT_SIG}
            ),
            model({"text": "Step two."}, {"thoughtSignature": TEXT_SIG}),
            gemini_user({"text": "Go."}),
        ],
    },
    "code execution and server-side tools": {
        "contents": [
            gemini_user({"text": "Sum 0 to 9, and search."}),
            model(
                {"text": "I will run some code."},
                {"executableCode": {"language": "PYTHON", "code": "print(sum(range(10)))", "id": "c1"}},
                {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "45\n", "id": "c1"}},
                {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "orphan\n"}},
                {"toolCall": {"toolType": "GOOGLE_SEARCH_WEB", "args": {"query": "sum"}, "id": "t1"}},
                {"toolResponse": {"toolType": "GOOGLE_SEARCH_WEB", "response": {"hits": 3}, "id": "t1"}},
                {"toolCall": {"toolType": "URL_CONTEXT"}},
                {"text": "The sum is 45."},
            ),
            gemini_user({"text": "Double it."}),
        ],
        "tools": [{"codeExecution": {}}, {"googleSearch": {}}, {"urlContext": {}}],
    },
    "function responses of every shape, ids, parallel calls": {
        "contents": [
            gemini_user({"text": "Refund 7, check three cities."}),
            model(
                call("refund_order", {"amount": "12.OO"}),
                call("get_weather", {"city": "Oslo"}),
                call("get_weather", {"city": "Bergen"}),
                call("get_weather", {"city": "Molde"}),
                call("get_weather", {"city": "Roma"}),
                call("get_weather", {"city": "Nice"}),
            ),
            gemini_user(
                answer("refund_order", {"error": "amount: not a number"}),
                answer("get_weather", {"error": {"code": 504, "message": "timeout"}}),
                answer("get_weather", {"temperature": 3, "wind": "strong"}),
                answer("get_weather", {"result": {"result": "nested"}}),
                answer("get_weather", {"x": 1}),
                answer("get_weather", None),
            ),
            model(call("get_weather", {"city": "Lyon"}, call_id="fc-gemini-3-id")),
            gemini_user(answer("get_weather", {"result": "mild"}, id="fc-gemini-3-id")),
            gemini_user(answer("lost_tool", {"result": "answers no call"})),
        ],
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "refund_order",
                        "description": "Refund.",
                        "parameters": OPENAPI_AMOUNT,
                    },
                    {**WEATHER_DECLARATION, "behavior": "NON_BLOCKING", "response": {"type": "OBJECT"}},
                ]
            }
        ],
    },
    "user parts kept as sent, a system instruction of parts": {
        "systemInstruction": {"parts": [{"text": "You are terse."}, {"text": "Answer in French."}]},
        "contents": [
            gemini_user({"text": "What is this?"}, {"inlineData": {"mimeType": "image/png", "data": PNG}}),
            model({"text": "A tiny PNG."}),
            gemini_user({"fileData": {"mimeType": "application/pdf", "fileUri": "gs://b/memo.pdf"}}),
            gemini_user({"text": "Twice in a row, as sent."}),
        ],
    },
    "every kind of setting": {
        "systemInstruction": "Be brief.",
        "contents": [gemini_user({"text": "Weather?"})],
        "tools": [
            {
                "googleSearchRetrieval": {
                    "dynamicRetrievalConfig": {"mode": "MODE_DYNAMIC", "dynamicThreshold": 0.3}
                }
            },
            {"functionDeclarations": [WEATHER_DECLARATION]},
        ],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}},
        "generationConfig": {
            "maxOutputTokens": 256,
            "temperature": 0.4,
            "topP": 0.95,
            "topK": 40,
            "stopSequences": ["</done>"],
            "candidateCount": 2,
            "seed": 7,
            "presencePenalty": 0.5,
            "frequencyPenalty": 0.25,
            "responseMimeType": "application/json",
            "responseJsonSchema": WEATHER_SCHEMA,
            "responseModalities": ["TEXT"],
            "mediaResolution": "MEDIA_RESOLUTION_LOW",
            "thinkingConfig": {"thinkingBudget": 0},
            "blackboxFutureSetting": {"depth": 3},
            "responseLogprobs": True,  # reporting, not kept: so not sent back
        },
        "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_ONLY_HIGH"}],
        "cachedContent": "cachedContents/abc123",
    },
    "snake_case, as the JSON also takes it": {
        "contents": [{"role": "user", "parts": [{"text": "Hi"}]}],
        "system_instruction": {"parts": [{"text": "Be kind."}]},
        "generation_config": {
            "max_output_tokens": 32,
            "response_mime_type": "text/plain",
            "response_schema": {"type": "STRING"},
        },
        "tool_config": {"function_calling_config": {"mode": "NONE"}},
    },
}


@pytest.mark.parametrize("name", list(GEMINI_REQUESTS))
def test_gemini_native_round_trip(name: str) -> None:
    model_input = GEMINI.model_input(GEMINI_REQUESTS[name], CallIds())
    wire = GEMINI.wire_request(copy.deepcopy(model_input), stream=False, native=True)
    assert GEMINI.model_input(wire.body, CallIds()) == model_input
    assert wire.dropped == []
    assert "model" not in wire.body  # the URL names it
    assert GEMINI.wire_request(model_input, stream=True, native=True).body == wire.body  # so does streaming


def test_gemini_calls_and_results_carry_the_neutral_ids() -> None:
    request = GEMINI_REQUESTS["function responses of every shape, ids, parallel calls"]
    body = GEMINI.wire_request(GEMINI.model_input(request, CallIds()), stream=False, native=True).body
    calls = [p["functionCall"] for c in body["contents"] for p in c["parts"] if "functionCall" in p]
    results = [p["functionResponse"] for c in body["contents"] for p in c["parts"] if "functionResponse" in p]
    assert [c["id"] for c in calls] == [f"call-{n}" for n in range(7)]
    assert [r["id"] for r in results] == [f"call-{n}" for n in range(8)]  # the lost answer numbered on
    assert [r["response"] for r in results[:6]] == [
        {"error": "amount: not a number"},
        {"error": '{"code":504,"message":"timeout"}'},  # the neutral error is text
        {"temperature": 3, "wind": "strong"},
        {"result": {"result": "nested"}},
        {"x": 1},
        {"result": None},
    ]


def test_gemini_two_thoughts_stay_two_when_the_first_has_no_signature() -> None:
    turn = model({"text": "A", "thought": True}, {"text": "said"}, {"text": "B", "thought": True})
    request = {"contents": [gemini_user({"text": "q"}), turn]}
    model_input = GEMINI.model_input(request, CallIds())
    assert [p.get("text") for p in model_input["messages"][1]["content"]] == ["A", "B", "said"]
    parts = GEMINI.wire_request(model_input, stream=False, native=True).body["contents"][1]["parts"]
    assert parts == [
        {"text": "A", "thought": True},
        {"text": ""},
        {"text": "B", "thought": True},
        {"text": "said"},
    ]
    assert GEMINI.model_input({"contents": [request["contents"][0], model(*parts)]}, CallIds()) == model_input


def test_gemini_settings_go_where_the_api_reads_them() -> None:
    request = GEMINI_REQUESTS["every kind of setting"]
    body = GEMINI.wire_request(GEMINI.model_input(request, CallIds()), stream=False, native=True).body
    config = {k: v for k, v in request["generationConfig"].items() if k != "responseLogprobs"}
    assert body["generationConfig"] == config
    assert {k: body[k] for k in ("toolConfig", "safetySettings", "cachedContent", "tools")} == {
        k: request[k] for k in ("toolConfig", "safetySettings", "cachedContent", "tools")
    }
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    declarations = GEMINI.wire_request(
        GEMINI.model_input(
            GEMINI_REQUESTS["function responses of every shape, ids, parallel calls"], CallIds()
        ),
        stream=False,
        native=True,
    ).body["tools"]
    # An OpenAPI schema goes back as parameters, JSON Schema as parametersJsonSchema.
    assert [sorted(d) for d in declarations[0]["functionDeclarations"]] == [
        ["description", "name", "parameters"],
        ["behavior", "description", "name", "parametersJsonSchema", "response"],
    ]


# --- across providers ----------------------------------------------------------------------------

CHAT_REQUEST: JsonObject = {
    "model": "gpt-4o-mini",
    "messages": [
        {"role": "system", "content": "You are a travel assistant."},
        {"role": "developer", "content": [{"type": "text", "text": "Use metric units."}]},
        {"role": "user", "content": "Weather in Oslo and Bergen, then refund order 7?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_Oslo1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
                },
                {
                    "id": "call_Berg2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Bergen"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_Oslo1", "content": "4C, rain"},
        {
            "role": "tool",
            "tool_call_id": "call_Berg2",
            "content": [{"type": "text", "text": "6C, "}, {"type": "text", "text": "wind"}],
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "And this photo?"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
            ],
        },
        {
            "role": "assistant",
            "content": "A harbour. Refunding now.",
            "tool_calls": [
                {
                    "id": "call_Ref3",
                    "type": "function",
                    "function": {"name": "refund_order", "arguments": "12.OO"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_Ref3", "content": "refund_order: amount is not a number"},
        {"role": "system", "content": "Apologize for errors."},
        {"role": "assistant", "content": None, "refusal": "I can't refund that."},
        {"role": "user", "content": "Why not?"},
    ],
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather.",
                "parameters": WEATHER_SCHEMA,
                "strict": True,
            },
        },
        {"type": "function", "function": {"name": "refund_order", "description": "Refund an order."}},
    ],
    "max_completion_tokens": 300,
    "temperature": 1.3,
    "top_p": 0.8,
    "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
    "response_format": {
        "type": "json_schema",
        "json_schema": {"name": "w", "schema": WEATHER_SCHEMA, "strict": True},
    },
    "stop": "END",
    "seed": 7,
    "parallel_tool_calls": False,
    "stream": True,
}
RESPONSES_REQUEST: JsonObject = {
    "model": "gpt-4.1",
    "instructions": "Be brief.",
    "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "Weather in Lisbon?"}]},
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Use the tool."}],
            "encrypted_content": "gAAAA-enc",
        },
        {
            "type": "web_search_call",
            "id": "ws_1",
            "status": "completed",
            "action": {"type": "search", "query": "lisbon"},
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_L1",
            "name": "get_weather",
            "arguments": '{"city":"Lisbon"}',
        },
        {
            "type": "function_call_output",
            "call_id": "call_L1",
            "output": [{"type": "input_text", "text": "18C"}],
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "18C in Lisbon."}],
        },
        {"role": "user", "content": "Thanks!"},
    ],
    "tools": [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Weather.",
            "parameters": WEATHER_SCHEMA,
            "strict": True,
        },
        {"type": "web_search", "search_context_size": "low"},
    ],
    "max_output_tokens": 500,
    "temperature": 0.5,
    "tool_choice": "required",
    "text": {"format": {"type": "json_object"}, "verbosity": "low"},
    "reasoning": {"effort": "low"},
    "truncation": "auto",
}
GEMINI_SOURCE: JsonObject = {
    "systemInstruction": {"parts": [{"text": "Be brief."}]},
    "contents": [
        *GEMINI_REQUESTS["thinking tool round"]["contents"][:3],
        model(call("refund_order", {"amount": "12.OO"})),
        gemini_user(answer("refund_order", {"error": "amount: not a number"})),
        gemini_user({"text": "Photo:"}, {"inlineData": {"mimeType": "image/png", "data": PNG}}),
    ],
    "tools": [
        {"functionDeclarations": [WEATHER_DECLARATION, {"name": "get_time", "description": "Time."},
                                  {"name": "refund_order", "parameters": OPENAPI_AMOUNT}]},
        {"googleSearch": {}},
    ],
    "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
    "generationConfig": {"maxOutputTokens": 200, "temperature": 1.5, "topK": 5, "stopSequences": ["x", "y"],
                         "responseMimeType": "text/plain", "thinkingConfig": {"thinkingBudget": 64}},
    "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
}  # fmt: skip
SOURCES = {
    "openai-chat": lambda: OpenAIChat().model_input(CHAT_REQUEST, CallIds()),
    "openai-responses": lambda: OpenAIResponses().model_input(RESPONSES_REQUEST, CallIds()),
    "anthropic": lambda: ANTHROPIC.model_input(
        ANTHROPIC_REQUESTS["tool errors and results of every shape"], CallIds()
    ),
    "anthropic-thinking": lambda: ANTHROPIC.model_input(
        ANTHROPIC_REQUESTS["interleaved thinking, search and a call"], CallIds()
    ),
    "gemini": lambda: GEMINI.model_input(GEMINI_SOURCE, CallIds()),
}
TARGETS: dict[str, AnthropicMessages | GeminiGenerateContent] = {"anthropic": ANTHROPIC, "gemini": GEMINI}
PAIRS = [(s, t) for s in SOURCES for t in TARGETS if not s.startswith(t)]


def _items(content: Any) -> Iterator[JsonObject]:
    yield from ([text(content)] if isinstance(content, str) else content or [])


def conversation(model_input: JsonObject) -> list[tuple[Any, ...]]:
    """What a conversation says, whatever API wrote it: each text (adjacent texts of one side joined),
    tool use (id, name, canonical input) and tool result (id, name, outcome, as text), in order."""
    said: list[tuple[Any, ...]] = []
    for message in model_input["messages"]:
        side = "assistant" if message["role"] == "assistant" else "user"
        for part in _items(message["content"]):
            if part["type"] == "text" and part["text"]:
                if said and said[-1][:2] == (side, "text"):
                    said[-1] = (side, "text", said[-1][2] + part["text"])
                else:
                    said.append((side, "text", part["text"]))
            elif part["type"] == "tool_use":
                said.append(
                    (
                        side,
                        "tool_use",
                        part["toolCallId"],
                        part["toolName"],
                        json.dumps(part["toolInput"], sort_keys=True),
                    )
                )
            elif part["type"] == "tool_result":
                outcome = "error" if "error" in part else "result"
                said.append(
                    (
                        side,
                        "tool_result",
                        part["toolCallId"],
                        part["toolName"],
                        outcome,
                        result_text(part[outcome]),
                    )
                )
    return said


def _lowered(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {
            k: v.lower() if k == "type" and isinstance(v, str) else _lowered(v) for k, v in schema.items()
        }
    return schema


def settings(model_input: JsonObject) -> JsonObject:
    """The neutral settings' meaning: the portable readers' view of each."""
    params = model_input.get("params") or {}
    form = response_format_of(params.get("responseFormat"))
    return {
        "maxTokens": params.get("maxTokens"),
        "temperature": params.get("temperature"),
        "topP": params.get("topP"),
        "toolChoice": tool_choice_of(params.get("toolChoice")),
        "responseFormat": None if form is None else (form.kind, form.schema),
        "stop": stop_list(params.get("stop")),
    }


# Everything the target has no way to say, named once each.
DROPPED: dict[tuple[str, str], list[str]] = {
    ("openai-chat", "anthropic"): [
        "the input of call-2 (not a JSON object)", "the system role of a message (sent as a user turn)",
        "a refusal part", "the settings of tool get_weather", "params.seed", "params.parallel_tool_calls",
        "params.temperature above 1 (sent as 1)",
    ],
    ("openai-chat", "gemini"): [
        "the input of call-2 (not a JSON object)", "the system role of a message (sent as a user turn)",
        "a refusal part", "the settings of tool get_weather", "params.seed", "params.parallel_tool_calls",
    ],
    ("openai-responses", "anthropic"): [
        "a reasoning part", "a hosted web_search call", "the settings of tool get_weather",
        "the settings of tool web_search", "params.text", "params.reasoning", "params.truncation",
        "params.responseFormat",  # JSON mode without a schema
    ],
    ("openai-responses", "gemini"): [
        "a reasoning part", "a hosted web_search call", "the settings of tool get_weather",
        "the settings of tool web_search", "params.text", "params.reasoning", "params.truncation",
    ],
    ("anthropic", "gemini"): [],
    ("anthropic-thinking", "gemini"): [
        "a reasoning part", "a hosted web_search call", "the settings of tool web_search",
    ],
    ("gemini", "anthropic"): [
        "a reasoning part", "a thought signature", "params.topK", "params.thinkingConfig",
        "params.safetySettings", "params.temperature above 1 (sent as 1)",
    ],
}  # fmt: skip


def as_sent(model_input: JsonObject) -> JsonObject:
    """The model_input with each tool input that is no JSON object as ``{}``, as both APIs take only
    objects (Chat's raw ``"12.OO"`` arguments)."""
    copied = copy.deepcopy(model_input)
    for message in copied["messages"]:
        for part in message["content"] if isinstance(message["content"], list) else []:
            if part["type"] == "tool_use" and not isinstance(part["toolInput"], dict):
                part["toolInput"] = {}
    return copied


@pytest.mark.parametrize(("source", "target"), PAIRS, ids=[f"{s}-to-{t}" for s, t in PAIRS])
def test_a_model_input_of_another_api_reads_back_the_same(source: str, target: str) -> None:
    model_input = SOURCES[source]()
    provider = TARGETS[target]
    wire = provider.wire_request(copy.deepcopy(model_input), stream=False, native=False)
    back = provider.model_input(wire.body, CallIds())
    assert conversation(back) == conversation(as_sent(model_input))
    assert back.get("systemPrompt") == model_input.get("systemPrompt")
    expected_tools = [
        (
            t["name"],
            t["description"],
            t.get("inputSchema", {"type": "object", "properties": {}} if target == "anthropic" else None),
        )
        for t in model_input["tools"]
    ]
    got_tools = [(t["name"], t["description"], t.get("inputSchema")) for t in back["tools"]]
    assert [(n, d, _lowered(s)) for n, d, s in got_tools] == [
        (n, d, _lowered(s)) for n, d, s in expected_tools
    ]
    assert all("settings" not in t for t in back["tools"])
    expected = settings(model_input)
    if target == "anthropic" and isinstance(expected["temperature"], float) and expected["temperature"] > 1:
        expected["temperature"] = 1  # this API's top
    if target == "anthropic" and expected["responseFormat"] in (("json_object", None), ("text", None)):
        expected["responseFormat"] = None  # text is the default; no JSON mode without a schema: dropped
    if target == "anthropic" and expected["maxTokens"] is None:
        expected["maxTokens"] = DEFAULT_MAX_TOKENS
    assert settings(back) == expected
    assert sorted(wire.dropped) == sorted(DROPPED[source, target])


def test_anthropic_takes_turns_merging_a_roles_messages_with_the_tool_results_first() -> None:
    body = ANTHROPIC.wire_request(SOURCES["openai-chat"](), stream=False, native=False).body
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user"]
    after_calls = body["messages"][2]["content"]
    assert [b["type"] for b in after_calls] == ["tool_result", "tool_result", "text", "image"]
    assert after_calls[1]["content"] == [text("6C, "), text("wind")]  # blocks this API takes too
    assert after_calls[3]["source"] == {"type": "base64", "media_type": "image/png", "data": PNG}
    last = body["messages"][4]["content"]  # the refusal said nothing else: that turn is left out
    assert [b.get("tool_use_id") or b.get("text") for b in last] == [
        "call-2",
        "Apologize for errors.",
        "Why not?",
    ]
    assert body["system"] == "You are a travel assistant.\n\nUse metric units."
    assert body["messages"][0]["content"] == "Weather in Oslo and Bergen, then refund order 7?"
    assert body["tool_choice"] == {"type": "tool", "name": "get_weather"}
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": WEATHER_SCHEMA}}
    assert (body["max_tokens"], body["temperature"], body["top_p"], body["stop_sequences"]) == (
        300,
        1,
        0.8,
        ["END"],
    )


def test_gemini_writes_another_apis_settings_and_parts_in_its_shape() -> None:
    body = GEMINI.wire_request(SOURCES["openai-chat"](), stream=False, native=False).body
    assert body["generationConfig"] == {
        "maxOutputTokens": 300,
        "temperature": 1.3,
        "topP": 0.8,
        "responseMimeType": "application/json",
        "responseJsonSchema": WEATHER_SCHEMA,
        "stopSequences": ["END"],
    }
    assert body["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}
    }
    assert body["tools"] == [
        {"functionDeclarations": [
            {"name": "get_weather", "description": "Weather.", "parametersJsonSchema": WEATHER_SCHEMA},
            {"name": "refund_order", "description": "Refund an order."},
        ]}
    ]  # fmt: skip
    photo = body["contents"][3]["parts"]
    assert photo == [{"text": "And this photo?"}, {"inlineData": {"mimeType": "image/png", "data": PNG}}]
    refund = body["contents"][4]["parts"][1]["functionCall"]
    assert refund == {"id": "call-2", "name": "refund_order", "args": {}}  # "12.OO" is no JSON object
    results = [p["functionResponse"] for c in body["contents"] for p in c["parts"] if "functionResponse" in p]
    assert [r["response"]["result"] for r in results] == [
        "4C, rain",
        "6C, wind",
        "refund_order: amount is not a number",
    ]
    from_responses = GEMINI.wire_request(SOURCES["openai-responses"](), stream=False, native=False).body
    assert from_responses["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}
    assert from_responses["generationConfig"]["responseMimeType"] == "application/json"
    errors = GEMINI.wire_request(SOURCES["anthropic"](), stream=False, native=False).body
    answered = [
        p["functionResponse"] for c in errors["contents"] for p in c["parts"] if "functionResponse" in p
    ]
    assert [r["response"] for r in answered[:2]] == [{"error": "amount: not a number"}, {"error": "timeout"}]
    assert "toolConfig" not in errors and "systemInstruction" not in errors


def test_anthropic_writes_a_gemini_conversation_in_its_shape() -> None:
    body = ANTHROPIC.wire_request(SOURCES["gemini"](), stream=False, native=False).body
    assert body["messages"][1]["content"] == [
        text("I will call the tool."),
        {"type": "tool_use", "id": "call-0", "name": "get_weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "call-1", "name": "get_time", "input": {"city": "Paris"}},
    ]
    refused = body["messages"][4]["content"]
    assert refused[0] == {
        "type": "tool_result",
        "tool_use_id": "call-2",
        "content": "amount: not a number",
        "is_error": True,
    }
    assert refused[2]["source"] == {"type": "base64", "media_type": "image/png", "data": PNG}
    assert body["tools"][2]["input_schema"] == {
        "type": "object",
        "properties": {"amount": {"type": "number"}},
    }
    assert body["tools"][3] == {"name": "googleSearch", "input_schema": {"type": "object", "properties": {}}}
    assert body["tool_choice"] == {"type": "auto"} and body["stop_sequences"] == ["x", "y"]


def test_a_tool_name_gemini_refuses_is_sent_as_it_is() -> None:
    """Renamed, the model's calls would not be those of the recorded tool: the API names it instead."""
    model_input = {"messages": [user("Hi")], "tools": [{"name": "1st-tool", "description": ""}]}
    body = GEMINI.wire_request(model_input, stream=False, native=False).body
    assert body["tools"] == [{"functionDeclarations": [{"name": "1st-tool"}]}]


# --- through the real SDKs -----------------------------------------------------------------------


@pytest.fixture
def sdk_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDKs' own variables: a fake key each, and no base URL but the one a test gives."""
    for name in ("ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL",
                 "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_API_VERSION"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)


def anthropic_answer(output: JsonObject, stream: bool) -> Raw:
    wire = ANTHROPIC.wire_response(output, {"stream": stream})
    return Raw(dict(wire.headers)["content-type"], wire.body)


EVERY_SETTING = {k: v for k, v in ANTHROPIC_REQUESTS["every kind of setting"].items() if k != "messages"}
ANTHROPIC_SDK_INPUTS = {
    "native": lambda: ANTHROPIC.model_input(
        {**EVERY_SETTING, **ANTHROPIC_REQUESTS["interleaved thinking, search and a call"]}, CallIds()
    ),
    "from openai-chat": SOURCES["openai-chat"],
}  # fmt: skip


@pytest.mark.usefixtures("sdk_env")
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("source", list(ANTHROPIC_SDK_INPUTS))
def test_anthropic_sdk_sends_the_body_as_built(source: str, stream: bool) -> None:
    model_input = ANTHROPIC_SDK_INPUTS[source]()
    native = source == "native"
    body = ANTHROPIC.wire_request(model_input, stream=stream, native=native).body
    output = {
        "type": "tool_calls",
        "calls": [{"toolCallId": "call-9", "toolName": "get_weather", "toolInput": {}}],
    }
    with CannedProvider([anthropic_answer(output, stream)]) as canned:
        client = AnthropicClient(base_url=canned.url)
        try:
            client.send(body, model=CLAUDE, stream=stream)
        finally:
            client.close()
    (received,) = canned.requests
    assert received == {**body, "model": CLAUDE}  # temperature, top_k... through extra_body
    if native:
        assert ANTHROPIC.model_input(received, CallIds()) == model_input
    else:
        assert conversation(ANTHROPIC.model_input(received, CallIds())) == conversation(as_sent(model_input))


@pytest.mark.usefixtures("sdk_env")
def test_anthropic_client_takes_the_sdks_base_url_variable_and_raises_its_errors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    body = ANTHROPIC.wire_request({"messages": [user("Hi")], "tools": []}, stream=False, native=False).body
    with CannedProvider([anthropic_answer({"type": "final_answer", "text": "Hello"}, False)]) as canned:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", canned.url)
        client = AnthropicClient(base_url=None)
        try:
            client.send(body, model=CLAUDE, stream=False)
        finally:
            client.close()
    assert canned.requests == [{**body, "model": CLAUDE}]
    refused = {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "max_tokens: too large"},
    }
    with LoopbackAPI(lambda method, path, sent: (400, refused)) as api:
        client = AnthropicClient(base_url=api.url)
        try:
            with pytest.raises(anthropic.BadRequestError, match="too large"):
                client.send(body, model=CLAUDE, stream=True)
        finally:
            client.close()


def gemini_answer(output: JsonObject, stream: bool) -> Raw:
    path = "streamGenerateContent?alt=sse" if stream else "generateContent"
    wire = (
        GeminiGenerateContent()
        .at(f"http://127.0.0.1:9/v1beta/models/{GEMINI_MODEL}:{path}")
        .wire_response(output, {})
    )
    return Raw(dict(wire.headers)["content-type"], wire.body)


GEMINI_SDK_SOURCE: JsonObject = {
    **GEMINI_REQUESTS["every kind of setting"],
    "contents": [
        *GEMINI_REQUESTS["thinking tool round"]["contents"],
        *GEMINI_REQUESTS["code execution and server-side tools"]["contents"][1:],
        *GEMINI_REQUESTS["user parts kept as sent, a system instruction of parts"]["contents"],
    ],
    "tools": [  # a function declaration before a built-in tool: the SDK alone would move it after
        {"functionDeclarations": [{"name": "refund", "parameters": OPENAPI_AMOUNT}, WEATHER_DECLARATION]},
        {"googleSearch": {}},
    ],
    "blackboxFutureField": {"a": 1},
}  # fmt: skip
GEMINI_SDK_INPUTS = {
    "native": lambda: GEMINI.model_input(GEMINI_SDK_SOURCE, CallIds()),
    "from anthropic": SOURCES["anthropic"],
}


@pytest.mark.usefixtures("sdk_env")
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("source", list(GEMINI_SDK_INPUTS))
def test_gemini_sdk_sends_the_body_as_built(source: str, stream: bool) -> None:
    model_input = GEMINI_SDK_INPUTS[source]()
    native = source == "native"
    body = GEMINI.wire_request(model_input, stream=stream, native=native).body
    output = {"type": "final_answer", "text": "It is sunny.", "textSignature": TEXT_SIG}
    with CannedProvider([gemini_answer(output, stream)]) as canned:
        client = GeminiClient(base_url=canned.url)
        try:
            client.send(body, model=GEMINI_MODEL, stream=stream)
        finally:
            client.close()
    (received,) = canned.requests
    ((_, path, _),) = canned.received
    assert path.endswith(
        f"/models/{GEMINI_MODEL}:" + ("streamGenerateContent?alt=sse" if stream else "generateContent")
    )
    # Byte for byte: the signatures with + and / too, the declarations before googleSearch, the
    # settings this SDK has no field for, ints as ints.
    assert received == body
    read = GeminiGenerateContent().at(canned.url + path).model_input(received, CallIds())
    if native:
        assert read == model_input
    else:
        assert conversation(read) == conversation(model_input)


@pytest.mark.usefixtures("sdk_env")
def test_gemini_client_takes_the_sdks_base_url_variable_and_raises_its_errors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    body = GEMINI.wire_request({"messages": [user("Hi")], "tools": []}, stream=False, native=False).body
    with CannedProvider([gemini_answer({"type": "final_answer", "text": "Hello"}, False)]) as canned:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", canned.url)
        client = GeminiClient(base_url=None)
        try:
            client.send(body, model=GEMINI_MODEL, stream=False)
        finally:
            client.close()
    assert canned.requests == [{**body, "generationConfig": {}}]  # the SDK's, empty: no setting
    refused = {"error": {"code": 400, "message": "Function name is invalid", "status": "INVALID_ARGUMENT"}}
    with LoopbackAPI(lambda method, path, sent: (400, refused)) as api:
        client = GeminiClient(base_url=api.url)
        try:
            with pytest.raises(genai_errors.ClientError, match="Function name is invalid"):
                client.send(body, model=GEMINI_MODEL, stream=True)
        finally:
            client.close()


# --- a tool result is the incident's, in any API's shape -------------------------------------------

IMAGE_URL = "https://a.example/x.png"
HITS = [{"title": "Lisbon", "text": "18C"}]
# (result, Anthropic's content for it, Gemini's response for it; None: the result itself, as a list)
RESULTS: list[tuple[Any, Any, Any]] = [
    ("18C", "18C", {"result": "18C"}),
    ([text("18C"), {"type": "image", "source": {"type": "url", "url": IMAGE_URL}}], None, None),
    ([{"type": "input_text", "text": "18"}, {"type": "output_text", "text": "C"}], "18C", {"result": "18C"}),
    ({"temperature": 18}, '{"temperature":18}', {"temperature": 18}),
    ({"result": "18C"}, '{"result":"18C"}', {"result": {"result": "18C"}}),
    (HITS, '[{"title":"Lisbon","text":"18C"}]', {"result": HITS}),  # not text parts: their fields kept
    (18, "18", {"result": 18}),
    (None, "null", {"result": None}),
]  # fmt: skip


@pytest.mark.parametrize(("result", "content", "response"), RESULTS)
def test_a_tool_result_is_sent_alike_whatever_the_mode(result: Any, content: Any, response: Any) -> None:
    """A rerun on another API writes the incident's results (not native); a replay of that rerun
    writes them again on this API (native): both must send the same thing."""
    use = {"type": "tool_use", "toolCallId": "call-0", "toolName": "get_weather", "toolInput": {}}
    answered = {"type": "tool_result", "toolCallId": "call-0", "toolName": "get_weather", "result": result}
    model_input = {"messages": [user("Weather?"), assistant([use]), user([answered])], "tools": []}
    sent = [ANTHROPIC.wire_request(model_input, stream=False, native=n).body for n in (True, False)]
    assert sent[0]["messages"] == sent[1]["messages"]
    assert sent[0]["messages"][2]["content"][0]["content"] == (result if content is None else content)
    bodies = [GEMINI.wire_request(model_input, stream=False, native=n).body for n in (True, False)]
    assert bodies[0]["contents"] == bodies[1]["contents"]
    expected = {"result": result} if response is None else response
    assert bodies[0]["contents"][2]["parts"][0]["functionResponse"]["response"] == expected


def test_what_gemini_metadata_found_is_not_sent_back_as_parts() -> None:
    """Grounding and URL context are candidate metadata, no part: a program sends back none, and a
    toolCall of type GOOGLE_SEARCH is no type the API has."""
    grounding = {
        "webSearchQueries": ["weather Paris"],
        "groundingChunks": [{"web": {"uri": "https://w.example"}}],
    }
    found = [
        {"type": "hosted_tool", "toolName": "google_search", "result": grounding},
        {"type": "hosted_tool", "toolName": "grounding", "result": {"groundingChunks": []}},
        {
            "type": "hosted_tool",
            "toolName": "url_context",
            "result": {"urlMetadata": [{"retrievedUrl": "u"}]},
        },
        text("Sunny."),
    ]
    model_input = {"messages": [user("Weather in Paris?"), assistant(found), user("All day?")], "tools": []}
    body = GEMINI.wire_request(model_input, stream=False, native=True).body
    assert body["contents"][1] == {"role": "model", "parts": [{"text": "Sunny."}]}
