"""Gemini generateContent: the translation (wire <-> neutral, ids), the real google-genai SDK against
what it synthesizes (httpx2.MockTransport), and record -> replay of google-genai agents against the
fake provider (examples/fake_llm.py) with the provider stopped and sockets blocked.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gemini_agent  # tests/ is on sys.path
import httpx
import httpx2
import pytest
from fake_llm import FakeLLMServer
from google import genai
from google.genai import errors, types
from helpers import Recorder, blocked_network, run_cli

import otel_blackbox
from otel_blackbox._cassette.captured import captured_model_call
from otel_blackbox._cassette.from_spans.cassette import cassette_from_spans
from otel_blackbox._cassette.io import load_cassette, save_cassette
from otel_blackbox._cassette.model import terminal_outcome, tool_call_sequence
from otel_blackbox._cassette.verify import verify_cassette
from otel_blackbox._playback.http.exchange import HttpRequest, HttpResponse, Rewrite
from otel_blackbox._playback.http.hook import BlackboxHTTPInstrumentor
from otel_blackbox._spans.semconv import ATTR_MODEL_PROVIDER, HTTP_SPAN_NAME
from otel_blackbox._store.connection import connect_reader
from otel_blackbox._store.queries import iter_spans
from otel_blackbox._types import JsonObject
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.gemini.translation import GeminiGenerateContent
from otel_blackbox._wire.protocol import Provider
from otel_blackbox._wire.registry import provider_for
from otel_blackbox.errors import CredentialLeak, ReplayDivergence

BASE = "http://127.0.0.1:9"  # never dialled: a MockTransport answers
JSON_URL = f"{BASE}/v1beta/models/gemini-2.5-flash:generateContent"
SSE_URL = f"{BASE}/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
ARRAY_URL = f"{BASE}/v1beta/models/gemini-2.5-flash:streamGenerateContent"
GEMINI: Provider = GeminiGenerateContent()  # mypy checks it implements the protocol
CALLS: JsonObject = {
    "type": "tool_calls",
    "calls": [
        {"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Oslo"}},
        {"toolCallId": "call-1", "toolName": "get_forecast", "toolInput": {"city": "Oslo", "days": 4}},
    ],
}
ANSWER: JsonObject = {"type": "final_answer", "text": "Sunny in Oslo, then rain for 4 days."}


def at(url: str) -> GeminiGenerateContent:
    provider = provider_for("POST", url)
    assert isinstance(provider, GeminiGenerateContent)
    return provider


def user(text: str) -> JsonObject:
    return {"role": "user", "parts": [{"text": text}]}


def call(name: str, args: JsonObject, call_id: str | None = None) -> JsonObject:
    return {"functionCall": {"name": name, "args": args, **({"id": call_id} if call_id else {})}}


def answer(name: str, response: Any, call_id: str | None = None) -> JsonObject:
    return {"functionResponse": {"name": name, "response": response, **({"id": call_id} if call_id else {})}}


def response(*parts: JsonObject, finish: str = "STOP") -> bytes:
    candidate = {"content": {"role": "model", "parts": list(parts)}, "finishReason": finish, "index": 0}
    return json.dumps({"candidates": [candidate], "usageMetadata": {"totalTokenCount": 9}}).encode()


def use(call_id: str, name: str, tool_input: JsonObject) -> JsonObject:
    return {"type": "tool_use", "toolCallId": call_id, "toolName": name, "toolInput": tool_input}


def request(*contents: JsonObject) -> JsonObject:
    return {"contents": list(contents)}


def neutral_ids(model_input: JsonObject, kind: str) -> list[str]:
    return [
        p["toolCallId"]
        for m in model_input["messages"]
        if isinstance(m["content"], list)
        for p in m["content"]
        if p["type"] == kind
    ]


# --- requests ---------------------------------------------------------------------------------------


def test_the_registry_binds_the_request_url_and_the_model_comes_from_it() -> None:
    assert provider_for("POST", JSON_URL) is not GEMINI
    for url, model in [
        (JSON_URL, "gemini-2.5-flash"),
        (f"{BASE}/v1/models/gemini-2.0-flash:streamGenerateContent?alt=sse", "gemini-2.0-flash"),
        (f"{BASE}/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-pro:generateContent",
         "gemini-2.5-pro"),
        (f"{BASE}/v1beta/tunedModels/my-tune:generateContent", "tunedModels/my-tune"),
    ]:  # fmt: skip
        assert at(url).model_input(request(user("hi")), CallIds())["model"] == model
    assert provider_for("GET", JSON_URL) is None
    assert provider_for("POST", f"{BASE}/v1beta/models/gemini-2.5-flash:countTokens") is None
    assert not at(JSON_URL).is_streaming({}) and at(SSE_URL).is_streaming({})


def test_a_request_in_neutral_terms() -> None:
    body = {
        "contents": [user("Weather in Oslo?"),
                     {"role": "model", "parts": [{"text": "Let me "}, {"text": "look."}]}],
        "systemInstruction": {"role": "user", "parts": [{"text": "Be brief."}, {"text": "Be kind."}]},
        "tools": [
            {"functionDeclarations": [
                {"name": "get_weather", "description": "Weather.", "parameters": {"type": "OBJECT"}},
                {"name": "get_time", "parameters_json_schema": {"type": "object"}},
                {"name": "ping"},
            ]},
            {"googleSearch": {}},
        ],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY"}},
        "generationConfig": {
            "temperature": 0.2, "topP": 0.9, "top_k": 40, "maxOutputTokens": 100, "stopSequences": ["END"],
            "responseMimeType": "application/json", "responseJsonSchema": {"type": "object"},
            "seed": 7, "responseLogprobs": True, "logprobs": 3, "candidateCount": None,
        },
        "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
    }  # fmt: skip
    assert at(JSON_URL).model_input(body, CallIds()) == {
        "messages": [
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": "Let me look."},
        ],
        "tools": [
            {"name": "get_weather", "description": "Weather.", "inputSchema": {"type": "OBJECT"}},
            {"name": "get_time", "description": "", "inputSchema": {"type": "object"}},
            {"name": "ping", "description": ""},
            {"name": "googleSearch", "description": ""},
        ],
        "systemPrompt": "Be brief.\n\nBe kind.",
        "model": "gemini-2.5-flash",
        "params": {
            "temperature": 0.2, "topP": 0.9, "topK": 40, "maxTokens": 100, "stop": ["END"], "seed": 7,
            "responseFormat": {"responseMimeType": "application/json",
                               "responseJsonSchema": {"type": "object"}},
            "toolChoice": {"functionCallingConfig": {"mode": "ANY"}},
            # issue 18: safety thresholds change what the model answers; they are compared now.
            "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
        },
    }  # fmt: skip


def test_top_level_settings_are_compared_and_transport_fields_are_not() -> None:
    """Beside generationConfig: safety thresholds and cached context change what the model answers,
    and so does a field nobody knows; billing labels, the tier, storage and a continuation do not."""
    body = {
        **request(user("hi")),
        "safety_settings": [{"category": "HARM_CATEGORY_HATE_SPEECH", "threshold": "BLOCK_LOW_AND_ABOVE"}],
        "cachedContent": "cachedContents/abc123",
        "someFutureSetting": {"on": True},
        "labels": {"team": "a"},
        "serviceTier": "flex",
        "store": False,
        "continuationToken": "tok",
    }
    params = at(JSON_URL).model_input(body, CallIds())["params"]
    assert params == {
        "safetySettings": [{"category": "HARM_CATEGORY_HATE_SPEECH", "threshold": "BLOCK_LOW_AND_ABOVE"}],
        "cachedContent": "cachedContents/abc123",
        "someFutureSetting": {"on": True},
    }
    plain = at(JSON_URL).model_input(request(user("hi")), CallIds())
    assert "params" not in plain  # a request with none of them normalizes as before


def test_parts_thoughts_and_other_kinds() -> None:
    image = {"inlineData": {"mimeType": "image/png", "data": "AAAA"}}
    body = request(
        {"role": "user", "parts": [{"text": "Look:"}, image]},
        {"role": "model", "parts": [{"text": "hmm", "thought": True}, {"thoughtSignature": "c2ln"},
                                    {"text": "A cat."}, {"executableCode": {"code": "1"}}]},
        {"parts": [{"text": "Thanks"}, {"text": "!"}]},
        {"role": "model", "parts": []},
    )  # fmt: skip
    # The thought, the code Gemini ran and the lone signature are kept (issue 18), in the canonical
    # order: thoughts, hosted tools, text (a lone signature is the text's), calls.
    assert at(JSON_URL).model_input(body, CallIds())["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Look:"}, {"type": "inlineData", **image}]},
        {
            "role": "assistant",
            "content": [
                {"type": "reasoning", "text": "hmm"},
                {"type": "hosted_tool", "toolName": "code_execution", "toolInput": {"code": "1"}},
                {"type": "text", "text": "A cat.", "signature": "c2ln"},
            ],
        },
        {"role": "user", "content": [{"type": "text", "text": "Thanks"}, {"type": "text", "text": "!"}]},
        {"role": "assistant", "content": ""},
    ]


def test_a_tool_round_and_the_shapes_of_results() -> None:
    body = request(
        user("Weather and forecast in Oslo, both"),
        {"role": "model", "parts": [{"text": "Checking."}, call("get_weather", {"city": "Oslo"}),
                                    call("get_forecast", {"city": "Oslo"}), call("get_time", {})]},
        {"role": "user", "parts": [answer("get_forecast", {"output": ["rain"]}),
                                   answer("get_weather", {"result": "18C"})]},
        {"role": "user", "parts": [answer("get_time", {"error": {"code": 1}})]},
    )  # fmt: skip
    messages = at(JSON_URL).model_input(body, CallIds())["messages"]
    assert messages[1:] == [
        {"role": "assistant", "content": [
            {"type": "text", "text": "Checking."},
            use("call-0", "get_weather", {"city": "Oslo"}),
            use("call-1", "get_forecast", {"city": "Oslo"}),
            use("call-2", "get_time", {}),
        ]},
        {"role": "user", "content": [  # the responses answer their calls by name, in any order
            {"type": "tool_result", "toolCallId": "call-1", "toolName": "get_forecast", "result": ["rain"]},
            {"type": "tool_result", "toolCallId": "call-0", "toolName": "get_weather", "result": "18C"},
            {"type": "tool_result", "toolCallId": "call-2", "toolName": "get_time", "error": '{"code":1}'},
        ]},
    ]  # fmt: skip


def test_a_streamed_chat_keeps_a_model_content_a_chunk_and_it_is_one_turn() -> None:
    one = request(user("q"), {"role": "model", "parts": [{"text": "Sunny "}, call("f", {"a": 1})]})
    chunked = request(
        user("q"),
        {"role": "model", "parts": [{"text": "Sun"}]},
        {"role": "model", "parts": [{"text": "ny "}]},
        {"role": "model", "parts": [call("f", {"a": 1})]},
    )
    assert at(JSON_URL).model_input(chunked, CallIds()) == at(JSON_URL).model_input(one, CallIds())


# --- ids --------------------------------------------------------------------------------------------


def test_calls_without_ids_are_numbered_as_the_model_made_them_and_their_results_follow() -> None:
    provider, ids = at(JSON_URL), CallIds()
    first = request(user("both"))
    assert provider.model_input(first, ids)["messages"] == [{"role": "user", "content": "both"}]
    made = [call("get_weather", {"city": "Oslo"}), call("get_forecast", {"city": "Oslo", "days": 4})]
    assert provider.model_output(response(*made), streamed=False, ids=ids) == CALLS
    second = request(
        user("both"),
        {"role": "model", "parts": made},
        {"role": "user", "parts": [answer("get_weather", {"result": "18C"}),
                                   answer("get_forecast", {"result": "rain"})]},
    )  # fmt: skip
    recorded = provider.model_input(second, ids)
    assert neutral_ids(recorded, "tool_use") == neutral_ids(recorded, "tool_result") == ["call-0", "call-1"]
    assert provider.model_input(second, ids) == recorded  # the same request, the same ids

    # Replay: the program is handed call-0 and call-1 and sends them back, or drops them again.
    echoed = copy.deepcopy(second)
    for part, call_id in zip(echoed["contents"][1]["parts"], ["call-0", "call-1"], strict=True):
        part["functionCall"]["id"] = call_id
    with_answers_by_id = copy.deepcopy(echoed)
    for part, call_id in zip(with_answers_by_id["contents"][2]["parts"], ["call-0", "call-1"], strict=True):
        part["functionResponse"]["id"] = call_id
    replayed = CallIds()
    replayed.learn(CALLS)
    for body in (echoed, with_answers_by_id, second):
        assert provider.model_input(body, CallIds()) == recorded
        assert provider.model_input(body, replayed) == recorded


def test_identical_calls_in_one_turn_and_in_later_turns() -> None:
    provider, ids = at(JSON_URL), CallIds()
    same = call("get_weather", {"city": "Oslo"})
    first = provider.model_output(response(same, same), streamed=False, ids=ids)
    assert [c["toolCallId"] for c in first["calls"]] == ["call-0", "call-1"]
    round_one = [
        user("twice"),
        {"role": "model", "parts": [same, same]},
        {"role": "user", "parts": [answer("get_weather", "a"), answer("get_weather", "b")]},
    ]
    model_input = provider.model_input(request(*round_one), ids)
    results = [p for p in model_input["messages"][2]["content"]]
    assert [(p["toolCallId"], p["result"]) for p in results] == [("call-0", "a"), ("call-1", "b")]
    again = provider.model_output(response(same), streamed=False, ids=ids)  # the model asks once more
    assert again["calls"][0]["toolCallId"] == "call-2"
    round_two = [
        *round_one,
        {"role": "model", "parts": [same]},
        {"role": "user", "parts": [answer("get_weather", "c")]},
    ]
    assert neutral_ids(provider.model_input(request(*round_two), ids), "tool_result") == [
        "call-0",
        "call-1",
        "call-2",
    ]
    # A program that keeps only its latest turns still sends call-2 as call-2.
    trimmed = [user("twice"), *round_two[3:]]
    assert neutral_ids(provider.model_input(request(*trimmed), ids), "tool_use") == ["call-2"]


def test_a_second_conversation_with_the_same_call_gets_its_own_id() -> None:
    provider, ids = at(JSON_URL), CallIds()
    same = call("get_weather", {"city": "Oslo"})
    for expected in ("call-0", "call-1"):
        output = provider.model_output(response(same), streamed=False, ids=ids)
        assert output["calls"][0]["toolCallId"] == expected
        body = request(
            user("q"),
            {"role": "model", "parts": [same]},
            {"role": "user", "parts": [answer("get_weather", 1)]},
        )
        assert neutral_ids(provider.model_input(body, ids), "tool_result") == [expected]


def test_a_fork_numbering_on_from_its_prefix_finds_the_prefix_calls_it_served() -> None:
    provider = at(JSON_URL)
    fork = CallIds(start=5)
    fork.learn(CALLS)  # what the fork's replay of the prefix served
    made = [call("get_weather", {"city": "Oslo"}), call("get_forecast", {"city": "Oslo", "days": 4})]
    body = request(user("q"), {"role": "model", "parts": made})
    assert neutral_ids(provider.model_input(body, fork), "tool_use") == ["call-0", "call-1"]
    new = provider.model_output(response(call("get_time", {})), streamed=False, ids=fork)
    assert new["calls"][0]["toolCallId"] == "call-5"


def test_provider_ids_answers_by_id_and_results_that_answer_nothing() -> None:
    provider, ids = at(JSON_URL), CallIds()
    output = provider.model_output(response(call("f", {}, "fc-abc")), streamed=False, ids=ids)
    assert output["calls"][0]["toolCallId"] == "call-0"
    body = request(
        user("q"),
        {"role": "model", "parts": [call("f", {}, "fc-abc")]},
        {"role": "user", "parts": [answer("f", 1, "fc-abc"), answer("g", 2), answer("g", 3)]},
    )
    first = provider.model_input(body, ids)
    assert neutral_ids(first, "tool_result") == ["call-0", "call-1", "call-2"]  # g answers no call
    assert provider.model_input(body, ids) == first  # and keeps its ids


# --- responses ----------------------------------------------------------------------------------------


def sse(*chunks: JsonObject) -> bytes:
    return "".join(f"data: {json.dumps(c)}\r\n\r\n" for c in chunks).encode()


def chunk(*parts: JsonObject, finish: str | None = None) -> JsonObject:
    candidate: JsonObject = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "modelVersion": "gemini-2.5-flash", "responseId": "r-1"}


def test_a_stream_is_read_whole_unknown_parts_and_metadata_dropped() -> None:
    body = sse(
        chunk({"text": "planning", "thought": True}),
        chunk({"text": "Sunny "}),
        chunk({"text": "today."}, {"someNewPart": {}}),
        chunk(call("get_weather", {"city": "Oslo"}), finish="STOP"),
        {"usageMetadata": {"totalTokenCount": 3}},
    )
    output = at(SSE_URL).model_output(body, streamed=True, ids=CallIds())
    assert output == {
        "type": "tool_calls",
        "text": "Sunny today.",
        "calls": [{"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Oslo"}}],
        "reasoning": [{"text": "planning"}],  # thoughts are kept (issue 18)
    }
    array = json.dumps([chunk({"text": "a"}), chunk({"text": "b"}, finish="MAX_TOKENS")]).encode()
    assert at(ARRAY_URL).model_output(array, streamed=True, ids=CallIds()) == {
        "type": "final_answer",
        "text": "ab",
        "stopReason": "max_tokens",  # a stop reason other than STOP is kept (issue 18)
    }
    assert at(JSON_URL).model_output(response(finish="STOP"), streamed=False, ids=CallIds()) == {
        "type": "final_answer",
        "text": "",
    }


@pytest.mark.parametrize(
    ("body", "streamed", "message"),
    [
        (b"<html>", False, "a Gemini generateContent response is not JSON"),
        (b'{"error": {"code": 400, "message": "API key not valid.", "status": "INVALID_ARGUMENT"}}', False,
         "the API reported an error: API key not valid."),
        # A blocked prompt and an answer blocked with no content are answers now (test_features_gemini.py).
        (b'{"usageMetadata": {"totalTokenCount": 3}}', False, "the model gave no answer (no candidates)"),
        (b'{"candidates": "no"}', False, "candidates is not a list"),
        (sse(chunk({"text": "cut sh"})), True, "the stream ended before a finishReason"),
        (sse(chunk({"text": "a"}), {"error": {"code": 500, "message": "Internal error"}}), True,
         "the API reported an error: Internal error"),
        (b"data: {not json\r\n\r\n", True, "is not JSON"),
    ],
)  # fmt: skip
def test_a_response_that_is_no_answer_is_a_clear_value_error(
    body: bytes, streamed: bool, message: str
) -> None:
    with pytest.raises(ValueError) as raised:
        at(SSE_URL if streamed else JSON_URL).model_output(body, streamed=streamed, ids=CallIds())
    assert message in str(raised.value)


@pytest.mark.parametrize(
    ("contents", "message"),
    [
        (
            [{"role": "user", "parts": [{"fooBar": {"x": 1}}]}],
            "a part of a kind Gemini does not have: fooBar",
        ),
        ([{"role": "user", "parts": [{}]}], "a part of a kind Gemini does not have: an empty part"),
        ([{"role": "model", "parts": [{"thought": True, "mystery": 1}]}], "does not have: mystery"),
        ("hello", "contents is not a list"),
        ([{"role": "user", "parts": "hello"}], "parts is not a list"),
        ([{"role": "user", "parts": [{"text": 42}]}], "a text part's text is not a string"),
        ([{"role": "model", "parts": [{"functionCall": "f"}]}], "a functionCall is not a JSON object"),
    ],
)
def test_a_malformed_request_is_a_clear_value_error(contents: Any, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        at(JSON_URL).model_input({"contents": contents}, CallIds())
    assert message in str(raised.value)
    with pytest.raises(ValueError, match=message):
        at(JSON_URL).replace_tool_result({"contents": contents}, "call-0", 1)


# --- synthesized responses -----------------------------------------------------------------------------


OUTPUTS = [
    ANSWER,
    {"type": "final_answer", "text": ""},
    CALLS,
    {**CALLS, "text": "Let me check both, " * 5},
    {"type": "tool_call", "toolCallId": "call-7", "toolName": "ping", "toolInput": {}},
]


@pytest.mark.parametrize("url", [JSON_URL, SSE_URL, ARRAY_URL])
@pytest.mark.parametrize("output", OUTPUTS)
def test_a_synthesized_response_reads_back_as_the_output_it_came_from(url: str, output: JsonObject) -> None:
    provider = at(url)
    wire = provider.wire_response(output, {})
    assert wire.status == 200
    assert dict(wire.headers)["content-type"] == (
        "text/event-stream" if "alt=sse" in url else "application/json"
    )
    expected = output
    if output["type"] == "tool_call":  # the single-call shape reads back as tool_calls
        call_ = {k: v for k, v in output.items() if k != "type"}
        expected = {"type": "tool_calls", "calls": [call_]}
    assert provider.model_output(wire.body, streamed=provider.is_streaming({}), ids=CallIds()) == expected
    assert provider.wire_response(output, {}).body == wire.body  # the same output, the same bytes
    text = wire.body.decode()
    assert "call-" not in text or '"id":"call-' in text  # the neutral ids, as the calls' ids


def test_a_stream_spreads_the_text_over_chunks_and_ends_with_the_calls() -> None:
    body = at(SSE_URL).wire_response({**CALLS, "text": "a long text " * 4}, {}).body.decode()
    events = [json.loads(e.removeprefix("data: ")) for e in body.split("\r\n\r\n") if e]
    assert len(events) > 3
    assert [bool(e["candidates"][0].get("finishReason")) for e in events] == [False] * (len(events) - 1) + [
        True
    ]
    assert [list(p) for p in events[-1]["candidates"][0]["content"]["parts"]] == [["functionCall"]] * 2


def test_a_tool_input_that_is_not_an_object_cannot_be_sent() -> None:
    output = {"type": "tool_call", "toolCallId": "call-0", "toolName": "f", "toolInput": "raw text"}
    with pytest.raises(ValueError, match="the toolInput of call-0 is not a JSON object"):
        at(JSON_URL).wire_response(output, {})


def test_url_with_model() -> None:
    assert at(SSE_URL).url_with_model("gemini-2.5-pro") == (
        f"{BASE}/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    )
    assert (
        at(JSON_URL)
        .url_with_model("models/gemini-2.0-flash")
        .endswith("/models/gemini-2.0-flash:generateContent")
    )


# --- the real SDK reads what is synthesized, in every mode ----------------------------------------------


class Scripted:
    """A MockTransport handler: each request kept, answered by the translation with the next output."""

    def __init__(self, *outputs: JsonObject) -> None:
        self.outputs = list(outputs)
        self.requests: list[tuple[str, JsonObject]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        provider = provider_for(request.method, str(request.url))
        assert provider is not None
        body = json.loads(request.content)
        self.requests.append((str(request.url), body))
        wire = provider.wire_response(self.outputs.pop(0), body)
        return httpx2.Response(wire.status, headers=wire.headers, content=wire.body)

    def client(self) -> genai.Client:
        transport = httpx2.MockTransport(self)
        options = types.HttpOptions(
            base_url=BASE,
            httpx_client=httpx2.Client(transport=transport),
            httpx_async_client=httpx2.AsyncClient(transport=transport),
        )
        return genai.Client(api_key="AIzaSy-test-0123456789", http_options=options)

    def second_request(self) -> JsonObject:
        url, body = self.requests[1]
        return at(url).model_input(body, CallIds())


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"18C in {city}"


def get_forecast(city: str, days: int) -> str:
    """The forecast for a city."""
    return f"{days} days of rain in {city}"


# Evaluated annotations: this module's are strings (`from __future__ import annotations`), and
# google-genai 2.x, the last release for Python 3.10, checks a call's arguments with isinstance
# against them.
get_weather.__annotations__ = {"city": str, "return": str}
get_forecast.__annotations__ = {"city": str, "days": int, "return": str}


DECLARED = types.Tool(
    function_declarations=[
        types.FunctionDeclaration.from_callable_with_api_option(callable=f)
        for f in (get_weather, get_forecast)
    ]
)


async def _agen(client: genai.Client, stream: bool, **kwargs: Any) -> list[types.GenerateContentResponse]:
    async with client.aio:  # its connections belong to this event loop
        if stream:
            return [c async for c in await client.aio.models.generate_content_stream(**kwargs)]
        return [await client.aio.models.generate_content(**kwargs)]


def generate(
    client: genai.Client, *, use_async: bool, stream: bool, **kwargs: Any
) -> list[types.GenerateContentResponse]:
    if use_async:
        return asyncio.run(_agen(client, stream, **kwargs))
    if stream:
        return list(client.models.generate_content_stream(**kwargs))
    return [client.models.generate_content(**kwargs)]


MODES = [(a, s) for a in (False, True) for s in (False, True)]


@pytest.mark.parametrize(
    ("use_async", "stream"), MODES, ids=["sync-json", "sync-sse", "async-json", "async-sse"]
)
def test_the_sdk_reads_synthesized_calls_and_answers_with_automatic_function_calling_off(
    use_async: bool, stream: bool
) -> None:
    server = Scripted({**CALLS, "text": "Checking both."}, ANSWER)
    with server.client() as client:
        check_calls_then_answer(server, client, use_async=use_async, stream=stream)


def check_calls_then_answer(server: Scripted, client: genai.Client, *, use_async: bool, stream: bool) -> None:
    config = types.GenerateContentConfig(
        tools=[DECLARED], automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True)
    )
    question = types.Content(role="user", parts=[types.Part(text="Weather and forecast in Oslo, both")])
    first = generate(
        client,
        use_async=use_async,
        stream=stream,
        model="gemini-2.5-flash",
        contents=[question],
        config=config,
    )
    calls = [fc for r in first for fc in r.function_calls or []]
    assert [(fc.id, fc.name, fc.args) for fc in calls] == [
        ("call-0", "get_weather", {"city": "Oslo"}),
        ("call-1", "get_forecast", {"city": "Oslo", "days": 4}),
    ]
    assert (
        "".join(r.text or "" for r in first if r.candidates and r.candidates[0].content) == "Checking both."
    )
    results = types.Content(role="user", parts=[
        types.Part.from_function_response(name=fc.name or "", response={"result": "ok"}) for fc in calls
    ])  # fmt: skip
    turn = [r.candidates[0].content for r in first if r.candidates and r.candidates[0].content]
    second = generate(client, use_async=use_async, stream=stream, model="gemini-2.5-flash",
                      contents=[question, *turn, results], config=config)  # fmt: skip
    assert "".join(r.text or "" for r in second) == ANSWER["text"]
    assert [r.usage_metadata and r.usage_metadata.total_token_count for r in second][-1] == 0
    model_input = server.second_request()
    assert (
        neutral_ids(model_input, "tool_use")
        == neutral_ids(model_input, "tool_result")
        == ["call-0", "call-1"]
    )
    assert model_input["messages"][1]["content"][0] == {"type": "text", "text": "Checking both."}


@pytest.mark.parametrize(
    ("use_async", "stream"), MODES, ids=["sync-json", "sync-sse", "async-json", "async-sse"]
)
def test_automatic_function_calling_runs_the_synthesized_calls(use_async: bool, stream: bool) -> None:
    server = Scripted(CALLS, ANSWER)
    config = types.GenerateContentConfig(tools=[get_weather, get_forecast])
    with server.client() as client:
        got = generate(client, use_async=use_async, stream=stream, model="gemini-2.5-flash",
                       contents="Weather and forecast in Oslo, both", config=config)  # fmt: skip
    assert "".join(r.text or "" for r in got) == ANSWER["text"]
    results = [p for p in server.second_request()["messages"][-1]["content"]]
    assert [(p["toolCallId"], p["result"]) for p in results] == [
        ("call-0", "18C in Oslo"),
        ("call-1", "4 days of rain in Oslo"),
    ]


# --- record -> replay with the fake provider stopped ---------------------------------------------------


@pytest.fixture
def fake() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


def record(path: Path, fake: FakeLLMServer, agent: Callable[[str], str]) -> str:
    with otel_blackbox.session(mode="record", cassette=path):
        answer_ = agent(fake.gemini_base_url)
    return answer_


def replay_offline(path: Path, base_url: str, agent: Callable[[str], str]) -> str:
    with blocked_network() as attempts, otel_blackbox.session(mode="replay", cassette=path):
        answer_ = agent(base_url)
    assert attempts == []
    return answer_


def stop(fake: FakeLLMServer) -> str:
    """Stop the provider; its URL, which the replayed program still uses."""
    base_url = fake.gemini_base_url
    fake.stop()
    return base_url


def checked(path: Path) -> None:
    """What every Gemini recording holds: verified (neutral), a success, both tools, no key."""
    cassette = load_cassette(path)
    report = verify_cassette(cassette)
    assert report.passed, report.to_json()
    assert terminal_outcome(cassette).status == "success"
    assert tool_call_sequence(cassette) == ["lookup_order", "get_eta"]
    first = next(s.payload for s in cassette.steps if s.type == "model_input")
    assert first["model"] == "gemini-2.5-flash" and first["systemPrompt"].startswith(
        "You are a support agent"
    )
    assert first["params"] == {"temperature": 0.0, "maxTokens": 256}
    text = path.read_text()
    assert gemini_agent.API_KEY not in text and "modelVersion" not in text and "usageMetadata" not in text


@pytest.mark.parametrize("drop_ids", [False, True], ids=["ids-sent-back", "ids-dropped"])
@pytest.mark.parametrize(
    ("use_async", "stream"), MODES, ids=["sync-json", "sync-sse", "async-json", "async-sse"]
)
def test_record_then_replay_offline(
    tmp_path: Path, fake: FakeLLMServer, use_async: bool, stream: bool, drop_ids: bool
) -> None:
    def agent(base_url: str) -> str:
        return gemini_agent.run(base_url, stream=stream, use_async=use_async, drop_ids=drop_ids)

    path = tmp_path / "run.json"
    recorded = record(path, fake, agent)
    assert "shipped" in recorded and "2 days" in recorded
    checked(path)
    assert replay_offline(path, stop(fake), agent) == recorded


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_automatic_function_calling_records_and_replays(
    tmp_path: Path, fake: FakeLLMServer, stream: bool
) -> None:
    def agent(base_url: str) -> str:
        config = types.GenerateContentConfig(tools=[get_weather, get_forecast])
        kwargs = {"model": "gemini-2.5-flash", "contents": "Weather and the 4 day forecast in Oslo, both"}
        with gemini_agent.client_for(base_url) as client:
            got = generate(client, use_async=False, stream=stream, config=config, **kwargs)
        return "".join(r.text or "" for r in got)

    path = tmp_path / "afc.json"
    recorded = record(path, fake, agent)
    assert recorded == "Final answer: 18C in Oslo | 4 days of rain in Oslo"
    cassette = load_cassette(path)
    assert verify_cassette(cassette).passed and terminal_outcome(cassette).status == "success"
    results = [s.payload for s in cassette.steps if s.type == "tool_result"]
    assert [(r["toolCallId"], r["result"]) for r in results] == [
        ("call-0", "18C in Oslo"),
        ("call-1", "4 days of rain in Oslo"),
    ]
    assert replay_offline(path, stop(fake), agent) == recorded


def test_httpx_when_the_sdk_is_told_to_use_it(
    tmp_path: Path, fake: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_GENAI_HTTP_CLIENT", "httpx")
    with gemini_agent.client_for(fake.gemini_base_url) as client:
        assert isinstance(client._api_client._httpx_client, httpx.Client)
    path = tmp_path / "run.json"
    recorded = record(path, fake, lambda url: gemini_agent.run(url, stream=True))
    checked(path)
    assert replay_offline(path, stop(fake), lambda url: gemini_agent.run(url, stream=True)) == recorded


def test_a_changed_prompt_or_model_diverges_naming_it(tmp_path: Path, fake: FakeLLMServer) -> None:
    path = tmp_path / "run.json"
    record(path, fake, gemini_agent.run)
    base_url = stop(fake)
    question = "What is the status of order 43?"
    with (
        pytest.raises(ReplayDivergence) as changed,
        blocked_network(),
        otel_blackbox.session(mode="replay", cassette=path),
    ):
        gemini_agent.run(base_url, question=question)
    assert str(changed.value).startswith("[blackbox] step 0 (model_input) differs at $.messages[0].content: ")
    assert f'got "{question}"' in str(changed.value)
    with (
        pytest.raises(ReplayDivergence) as renamed,
        blocked_network(),
        otel_blackbox.session(mode="replay", cassette=path),
    ):
        gemini_agent.run(base_url, model="gemini-2.5-pro")
    assert str(renamed.value) == (
        "[blackbox] step 0 (model_input) differs at $.model: "
        'recorded "gemini-2.5-flash", got "gemini-2.5-pro"'
    )


def test_a_request_the_translation_cannot_read_is_a_clear_divergence(
    tmp_path: Path, fake: FakeLLMServer
) -> None:
    path = tmp_path / "run.json"
    record(path, fake, gemini_agent.run)
    url = f"{fake.gemini_base_url}/v1beta/models/gemini-2.5-flash:generateContent"
    bad = {"contents": [{"role": "user", "parts": [{"fooBar": {"x": 1}}]}]}
    # Recording: the API (here the fake) refuses it; the SDK raises its own error, nothing is recorded.
    with (
        gemini_agent.client_for(fake.gemini_base_url) as client,
        pytest.raises(errors.ClientError, match="INVALID_ARGUMENT"),
    ):
        extra = types.HttpOptions(extra_body={"contents": bad["contents"]})
        client.models.generate_content(
            model="gemini-2.5-flash", contents="x", config=types.GenerateContentConfig(http_options=extra)
        )
    stop(fake)
    with (
        pytest.raises(ReplayDivergence) as raised,
        blocked_network(),
        otel_blackbox.session(mode="replay", cassette=path),
    ):
        sent = httpx2.post(url, json=bad)
        assert sent.status_code == 400
        assert sent.json()["error"]["message"].startswith("[blackbox] could not answer POST ")
        raise RuntimeError("the program gave up")
    assert str(raised.value) == (
        f"[blackbox] could not answer POST {url}: ValueError: a part of a kind Gemini does not have: fooBar"
    )


def test_no_key_reaches_a_cassette(
    tmp_path: Path, fake: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "run.json"
    key = "AIzaSyQ-query-key-0123456789"
    listing = f"{fake.gemini_base_url}/v1beta/models?key={key}"

    def agent(base_url: str) -> str:
        assert httpx.get(listing).status_code == 404  # a key in a URL: masked where the URL is kept
        return gemini_agent.run(base_url)

    recorded = record(path, fake, agent)
    text = path.read_text()
    assert key not in text and "models?key=[REDACTED:url-key]" in text
    checked(path)
    assert replay_offline(path, stop(fake), agent) == recorded
    # The x-goog-api-key header's value in the conversation: the recording is refused, not masked.
    with FakeLLMServer() as live, pytest.raises(CredentialLeak, match="AIzaSy…"):
        record(
            tmp_path / "leak.json",
            live,
            lambda url: gemini_agent.run(url, question=f"My key is {gemini_agent.API_KEY}"),
        )
    assert not (tmp_path / "leak.json").exists()


def test_http_capture_translates_gemini_calls_into_a_cassette_that_replays(
    tmp_path: Path, fake: FakeLLMServer
) -> None:
    rec = Recorder(tmp_path / "bb.db", capture_http=True)
    key = "AIzaSyQ-query-key-0123456789"
    try:
        with rec.tracer.start_as_current_span("support-agent"):
            httpx.get(f"{fake.gemini_base_url}/v1beta/models?key={key}")
            recorded = gemini_agent.run(fake.gemini_base_url, stream=True)
        rec.flush()
    finally:
        rec.provider.shutdown()
    conn = connect_reader(rec.db_path)
    try:
        spans = list(iter_spans(conn))
    finally:
        conn.close()
    calls = [s for s in spans if s.name == HTTP_SPAN_NAME]
    assert [s.attributes.get(ATTR_MODEL_PROVIDER) for s in calls] == [None, "gemini", "gemini"]
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("bb.db*"))  # with the WAL, if any
    assert key.encode() not in stored and gemini_agent.API_KEY.encode() not in stored
    model_call = captured_model_call(calls[1])
    assert model_call is not None and model_call[0]["model"] == "gemini-2.5-flash"
    path = tmp_path / "captured.json"
    save_cassette(cassette_from_spans(spans), path)
    checked(path)
    assert replay_offline(path, stop(fake), lambda url: gemini_agent.run(url, stream=True)) == recorded


def test_the_cli_reports_a_request_it_cannot_read_in_one_line(tmp_path: Path, fake: FakeLLMServer) -> None:
    path = tmp_path / "run.json"
    record(path, fake, gemini_agent.run)
    url = f"{stop(fake)}/v1beta/models/gemini-2.5-flash:generateContent"
    body = {"contents": [{"role": "user", "parts": [{"fooBar": 1}]}]}
    program = f"import httpx2; print(httpx2.post({url!r}, json={body!r}).status_code)"
    replayed = run_cli("replay", str(path), "--", sys.executable, "-c", program)
    assert replayed.returncode == 1 and replayed.stdout.strip() == "400"
    assert "Traceback" not in replayed.stderr
    reason = "ValueError: a part of a kind Gemini does not have: fooBar"
    assert (
        replayed.stderr.strip().splitlines()[-1].endswith(f"[blackbox] could not answer POST {url}: {reason}")
    )


# --- the hook's URL rewrite (rerun --model for Gemini) -------------------------------------------------


@dataclass
class Renaming:
    """An interceptor that asks the hook to send every request to ``url`` (and ``body``) instead."""

    change: Rewrite
    seen: list[tuple[str, bytes]] = field(default_factory=list)

    def rewrite(self, request: HttpRequest) -> Rewrite:
        return self.change

    def intercept(self, request: HttpRequest) -> HttpResponse | None:
        self.seen.append((request.url, request.body))
        return None

    def observe(self, request: HttpRequest, response: HttpResponse) -> None:
        pass


def test_the_hook_rewrites_a_requests_path_and_query_never_where_it_goes(fake: FakeLLMServer) -> None:
    base, path = fake.gemini_base_url, "/v1/models/gemini-2.0-flash:generateContent"
    renamed = f"{base}/v1/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    body = json.dumps({"contents": [user("Hi")]}).encode()
    cases = [
        (Rewrite(url=renamed), renamed, b"{}", "/v1/models/gemini-2.5-pro:streamGenerateContent"),
        (Rewrite(url=renamed, body=body), renamed, body, "/v1/models/gemini-2.5-pro:streamGenerateContent"),
        (Rewrite(url=f"http://10.0.0.1:9{path}"), f"{base}{path}", b"{}", path),  # another origin: not used
    ]
    for change, url, sent, received in cases:
        interceptor = Renaming(change)
        BlackboxHTTPInstrumentor().instrument(interceptor=interceptor)
        try:
            assert httpx2.post(f"{base}{path}", content=b"{}").status_code == 200
        finally:
            BlackboxHTTPInstrumentor().uninstrument()
        assert interceptor.seen == [(url, sent)]
        assert fake.requests[-1] == (received, json.loads(sent))


def test_an_offline_replay_gives_a_program_that_reads_its_key_from_the_environment_a_placeholder(
    tmp_path: Path, fake: FakeLLMServer
) -> None:
    """genai.Client() with no key argument reads GEMINI_API_KEY (or GOOGLE_API_KEY), as in production;
    a replay needs no key, so the launcher sets a placeholder where neither is set."""
    program = (
        "from google import genai; from google.genai import types; import sys\n"
        "client = genai.Client(http_options=types.HttpOptions(base_url=sys.argv[1]))\n"
        "print(client.models.generate_content(model='gemini-2.5-flash', contents='Say hi').text)\n"
    )
    path = tmp_path / "run.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GEMINI_", "GOOGLE_"))}
    command = [sys.executable, "-m", "otel_blackbox.cli"]
    argv = ["--", sys.executable, "-c", program, fake.gemini_base_url]
    recorded = subprocess.run(
        [*command, "record", "-o", str(path), *argv], env={**env, "GEMINI_API_KEY": "AIza-record-0123456789"},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert recorded.returncode == 0, recorded.stderr
    replayed = subprocess.run(
        [*command, "replay", str(path), *argv], env=env, capture_output=True, text=True, timeout=60
    )
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == recorded.stdout and "hi" in replayed.stdout
