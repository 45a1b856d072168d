"""``replace_tool_result``, a fork's rewrite, on the request bodies the real SDKs send.

Each request is recorded as a fork meets it: the real SDK talks to an httpx2.MockTransport that
answers with the provider's own ``wire_response`` (so the agent holds the neutral ``call-N`` ids, as
in replay), and the agent answers the calls, one result a string and one structured.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from anthropic.types import MessageParam, ToolParam
from google import genai
from google.genai import types as genai_types
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam
from openai.types.responses import FunctionToolParam, ResponseInputItemParam

from otel_blackbox._types import JsonObject
from otel_blackbox._wire.anthropic.translation import AnthropicMessages
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.gemini.translation import GeminiGenerateContent
from otel_blackbox._wire.openai_chat.translation import OpenAIChat
from otel_blackbox._wire.openai_responses.translation import OpenAIResponses
from otel_blackbox._wire.protocol import Provider
from otel_blackbox._wire.registry import provider_for

CHAT: Provider = OpenAIChat()  # mypy checks each implements the protocol
RESPONSES: Provider = OpenAIResponses()
ANTHROPIC: Provider = AnthropicMessages()
BASE_URL = "http://127.0.0.1:9"  # never dialled: the MockTransport answers
QUESTION = "What's the weather in Lisbon, and the 2 day forecast?"
SCHEMA: dict[str, object] = {"type": "object", "properties": {"city": {"type": "string"}}}
CALLS: JsonObject = {
    "type": "tool_calls",
    "calls": [
        {"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Lisbon"}},
        {"toolCallId": "call-1", "toolName": "get_forecast", "toolInput": {"city": "Lisbon", "days": 2}},
    ],
}
ANSWER: JsonObject = {"type": "final_answer", "text": "Sunny, then rain."}
STRING_RESULT = "18C, sunny"  # what the agent sent for call-0
PARTS_RESULT = "Sun, then rain"  # what the agent sent for call-1, as a list of one text part
REPLACEMENT = {"temp": "31°C", "sky": ["storm", None], "wind": 1.5}
REPLACEMENT_TEXT = '{"temp":"31°C","sky":["storm",null],"wind":1.5}'


class Server:
    """The MockTransport handler: each request body kept, answered by ``wire_response``."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self.outputs = [CALLS, ANSWER]
        self.requests: list[JsonObject] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body: JsonObject = json.loads(request.content)
        self.requests.append(body)
        wire = self.provider.wire_response(self.outputs.pop(0), body)
        return httpx2.Response(wire.status, headers=wire.headers, content=wire.body)

    def http(self) -> httpx2.Client:
        return httpx2.Client(transport=httpx2.MockTransport(self))


# --- the agents: one tool round each, recorded ----------------------------------------------------


def record_chat() -> list[JsonObject]:
    server = Server(CHAT)
    tools: list[ChatCompletionToolParam] = [
        {"type": "function", "function": {"name": name, "parameters": SCHEMA}}
        for name in ("get_weather", "get_forecast")
    ]
    with openai.OpenAI(base_url=f"{BASE_URL}/v1", api_key="sk-x", http_client=server.http()) as client:
        messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": QUESTION}]
        first = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
        message = first.choices[0].message
        assistant: Any = message.model_dump(exclude_none=True)  # as agents send it back
        messages.append(assistant)
        for call in message.tool_calls or []:
            if call.id == "call-0":
                messages.append({"role": "tool", "tool_call_id": call.id, "content": STRING_RESULT})
            else:
                parts: Any = [{"type": "text", "text": PARTS_RESULT}]
                messages.append({"role": "tool", "tool_call_id": call.id, "content": parts})
        client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
    return server.requests


def record_responses() -> list[JsonObject]:
    server = Server(RESPONSES)
    tools: list[FunctionToolParam] = [
        {"type": "function", "name": name, "parameters": SCHEMA, "strict": False}
        for name in ("get_weather", "get_forecast")
    ]
    with openai.OpenAI(base_url=f"{BASE_URL}/v1", api_key="sk-x", http_client=server.http()) as client:
        items: list[Any] = [{"role": "user", "content": QUESTION}]
        first = client.responses.create(model="gpt-4o-mini", input=items, tools=tools)
        items += first.output  # the SDK serializes its own output items back
        for call in first.output:
            if call.type != "function_call":
                continue
            output: Any = (
                STRING_RESULT if call.call_id == "call-0" else [{"type": "input_text", "text": PARTS_RESULT}]
            )
            result: ResponseInputItemParam = {
                "type": "function_call_output",
                "call_id": call.call_id,
                "output": output,
            }
            items.append(result)
        client.responses.create(model="gpt-4o-mini", input=items, tools=tools)
    return server.requests


def record_anthropic() -> list[JsonObject]:
    server = Server(ANTHROPIC)
    tools: list[ToolParam] = [{"name": n, "input_schema": SCHEMA} for n in ("get_weather", "get_forecast")]
    with anthropic.Anthropic(
        base_url=BASE_URL, api_key="sk-ant-x", open_telemetry=False, http_client=server.http()
    ) as client:
        messages: list[MessageParam] = [{"role": "user", "content": QUESTION}]
        first = client.messages.create(
            model="claude-haiku-4-5", max_tokens=256, messages=messages, tools=tools
        )
        results: list[Any] = []
        for block in first.content:
            if block.type == "tool_use" and block.id == "call-0":
                # A failed call: the fork's replacement must turn it into a success.
                results.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": block.id,
                        "content": STRING_RESULT,
                        "is_error": True,
                    }
                )
            elif block.type == "tool_use":
                content = [{"type": "text", "text": PARTS_RESULT, "cache_control": {"type": "ephemeral"}}]
                results.append({"type": "tool_result", "tool_use_id": block.id, "content": content})
        messages += [first.to_param(), {"role": "user", "content": results}]
        client.messages.create(model="claude-haiku-4-5", max_tokens=256, messages=messages, tools=tools)
    return server.requests


# --- where each API puts a result -----------------------------------------------------------------


def chat_result(request: JsonObject, call_id: str) -> JsonObject:
    return next(m for m in request["messages"] if m["role"] == "tool" and m["tool_call_id"] == call_id)


def responses_result(request: JsonObject, call_id: str) -> JsonObject:
    return next(
        i for i in request["input"] if i.get("type") == "function_call_output" and i["call_id"] == call_id
    )


def anthropic_result(request: JsonObject, call_id: str) -> JsonObject:
    blocks = [b for m in request["messages"] if isinstance(m["content"], list) for b in m["content"]]
    return next(b for b in blocks if b["type"] == "tool_result" and b["tool_use_id"] == call_id)


@dataclass(frozen=True)
class Api:
    provider: Provider
    record: Callable[[], list[JsonObject]]
    holder: Callable[[JsonObject, str], JsonObject]  # the object that carries a result
    key: str  # the field of the holder that is the result
    text_type: str  # the type of a text part in a result's structured content

    def expected(self, request: JsonObject, call_id: str, content: Any) -> JsonObject:
        """``request`` as the rewrite should leave it: only that result changed (and a success)."""
        expected = copy.deepcopy(request)
        holder = self.holder(expected, call_id)
        holder[self.key] = content
        holder.pop("is_error", None)
        return expected


APIS = {
    "chat": Api(CHAT, record_chat, chat_result, "content", "text"),
    "responses": Api(RESPONSES, record_responses, responses_result, "output", "input_text"),
    "anthropic": Api(ANTHROPIC, record_anthropic, anthropic_result, "content", "text"),
}


@pytest.fixture(params=list(APIS), scope="module")
def api(request: pytest.FixtureRequest) -> Api:
    return APIS[request.param]


@pytest.fixture(scope="module")
def recorded(api: Api) -> list[JsonObject]:
    return api.record()


@pytest.fixture
def second(recorded: list[JsonObject]) -> JsonObject:
    """The request with the results: a fresh copy, so a test that mutated it cannot leak."""
    return copy.deepcopy(recorded[1])


def neutral_result(api: Api, request: JsonObject, call_id: str) -> JsonObject:
    """The neutral ``tool_result`` part for ``call_id``: what replay compares."""
    messages = api.provider.model_input(request, CallIds())["messages"]
    parts = [p for m in messages if isinstance(m["content"], list) for p in m["content"]]
    return next(p for p in parts if p["type"] == "tool_result" and p["toolCallId"] == call_id)


# --- the recordings are what the agents sent --------------------------------------------------------


def test_the_recorded_request_carries_both_results_with_neutral_ids(api: Api, second: JsonObject) -> None:
    assert api.holder(second, "call-0")[api.key] == STRING_RESULT
    [part] = api.holder(second, "call-1")[api.key]
    assert part["type"] == api.text_type and part["text"] == PARTS_RESULT


# --- the rewrite ----------------------------------------------------------------------------------


def test_a_string_result_becomes_compact_json_text(api: Api, second: JsonObject) -> None:
    new = api.provider.replace_tool_result(second, "call-0", REPLACEMENT)
    assert new == api.expected(second, "call-0", REPLACEMENT_TEXT)  # only that result changed
    part = neutral_result(api, new, "call-0")
    assert part["result"] == REPLACEMENT_TEXT and "error" not in part
    assert neutral_result(api, new, "call-1") == neutral_result(api, second, "call-1")


def test_structured_content_becomes_one_text_part(api: Api, second: JsonObject) -> None:
    new = api.provider.replace_tool_result(second, "call-1", REPLACEMENT)
    replaced = [{"type": api.text_type, "text": REPLACEMENT_TEXT}]
    assert new == api.expected(second, "call-1", replaced)
    assert neutral_result(api, new, "call-1")["result"] == replaced
    assert neutral_result(api, new, "call-0") == neutral_result(api, second, "call-0")


@pytest.mark.parametrize("call_id", ["call-0", "call-1"])
def test_a_string_replacement_is_sent_as_itself(api: Api, second: JsonObject, call_id: str) -> None:
    text = 'déjà "vu"\n{not json'
    new = api.provider.replace_tool_result(second, call_id, text)
    assert new is not None
    sent = api.holder(new, call_id)[api.key]
    assert sent == (text if call_id == "call-0" else [{"type": api.text_type, "text": text}])


@pytest.mark.parametrize("value", [None, 0, True, [], "", {"a": {"b": [1, 2.5]}}])
def test_any_json_value_becomes_its_compact_text(api: Api, second: JsonObject, value: Any) -> None:
    new = api.provider.replace_tool_result(second, "call-0", value)
    assert new is not None
    expected = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    assert api.holder(new, "call-0")[api.key] == expected
    assert neutral_result(api, new, "call-0")["result"] == expected


def test_the_input_is_not_mutated_and_the_copy_shares_nothing(api: Api, second: JsonObject) -> None:
    before = copy.deepcopy(second)
    new = api.provider.replace_tool_result(second, "call-1", REPLACEMENT)
    assert second == before
    assert new is not None
    json.loads(json.dumps(new))  # still a JSON body
    for holder in (api.holder(new, "call-0"), api.holder(new, "call-1")):
        holder.clear()  # the copy's results, the one replaced and the one not
    new["tools"][0].clear()
    new["model"] = "other"
    assert second == before


def test_an_id_with_no_result_gives_none(api: Api, recorded: list[JsonObject]) -> None:
    first, second = recorded
    assert api.provider.replace_tool_result(second, "call-2", REPLACEMENT) is None
    assert api.provider.replace_tool_result(second, "call-", REPLACEMENT) is None
    assert api.provider.replace_tool_result(first, "call-0", REPLACEMENT) is None  # no results yet


def test_a_call_is_not_its_result(api: Api, second: JsonObject) -> None:
    """The assistant's call carries the same id; only the result is rewritten."""
    new = api.provider.replace_tool_result(second, "call-0", "x")
    assert new is not None
    uses = [
        p
        for m in api.provider.model_input(new, CallIds())["messages"]
        if isinstance(m["content"], list)
        for p in m["content"]
        if p["type"] == "tool_use"
    ]
    assert [u["toolCallId"] for u in uses] == ["call-0", "call-1"]
    assert uses[0]["toolInput"] == {"city": "Lisbon"}


def test_rewriting_both_results_one_after_the_other(api: Api, second: JsonObject) -> None:
    once = api.provider.replace_tool_result(second, "call-0", 1)
    assert once is not None
    twice = api.provider.replace_tool_result(once, "call-1", 2)
    assert twice is not None
    assert neutral_result(api, twice, "call-0")["result"] == "1"
    assert neutral_result(api, twice, "call-1")["result"] == [{"type": api.text_type, "text": "2"}]


# --- edge shapes, written by hand in the shape the SDKs send ----------------------------------------


def test_chat_null_content_is_the_string_shape() -> None:
    request = {"model": "m", "messages": [{"role": "tool", "tool_call_id": "call-0", "content": None}]}
    new = CHAT.replace_tool_result(request, "call-0", {"ok": True})
    assert new == {
        "model": "m",
        "messages": [{"role": "tool", "tool_call_id": "call-0", "content": '{"ok":true}'}],
    }


def test_responses_string_input_holds_no_results() -> None:
    assert RESPONSES.replace_tool_result({"model": "m", "input": "hi"}, "call-0", 1) is None
    assert RESPONSES.replace_tool_result({"model": "m"}, "call-0", 1) is None


def test_responses_an_image_output_becomes_one_text_part() -> None:
    image = {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "auto"}
    item = {"type": "function_call_output", "call_id": "call-3", "output": [image]}
    new = RESPONSES.replace_tool_result({"model": "m", "input": [item]}, "call-3", "plain")
    assert new == {"model": "m", "input": [{**item, "output": [{"type": "input_text", "text": "plain"}]}]}


def test_anthropic_a_result_without_content_is_the_string_shape() -> None:
    block = {
        "type": "tool_result",
        "tool_use_id": "call-0",
        "is_error": False,
        "cache_control": {"type": "ephemeral"},
    }
    request = {"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [block]}]}
    new = ANTHROPIC.replace_tool_result(request, "call-0", [1])
    replaced = {
        "type": "tool_result",
        "tool_use_id": "call-0",
        "cache_control": {"type": "ephemeral"},
        "content": "[1]",
    }
    assert new == {**request, "messages": [{"role": "user", "content": [replaced]}]}


def test_anthropic_an_error_result_becomes_a_success() -> None:
    requests = record_anthropic()
    assert neutral_result(APIS["anthropic"], requests[1], "call-0") == {
        "type": "tool_result",
        "toolCallId": "call-0",
        "toolName": "get_weather",
        "error": STRING_RESULT,
    }
    new = ANTHROPIC.replace_tool_result(requests[1], "call-0", "fine")
    assert new is not None and "is_error" not in anthropic_result(new, "call-0")
    assert neutral_result(APIS["anthropic"], new, "call-0") == {
        "type": "tool_result",
        "toolCallId": "call-0",
        "toolName": "get_weather",
        "result": "fine",
    }


# --- Gemini: a functionResponse's response is an object -------------------------------------------

GEMINI_URL = f"{BASE_URL}/v1beta/models/gemini-2.5-flash:generateContent"
ERROR_RESULT = "the forecast service timed out"  # what the agent sent for call-1, as a failed call


def gemini_at(url: str = GEMINI_URL) -> GeminiGenerateContent:
    provider = provider_for("POST", url)
    assert isinstance(provider, GeminiGenerateContent)
    return provider


def record_gemini(drop_ids: bool) -> list[JsonObject]:
    """One tool round with google-genai: call-0 answered ``{result}``, call-1 ``{error}`` (as the SDK's
    automatic function calling sends a failed call); the model's turn sent back as the SDK returned
    it (with the ids it was handed), or rebuilt without them."""
    requests: list[JsonObject] = []
    outputs = [CALLS, ANSWER]

    def serve(request: httpx2.Request) -> httpx2.Response:
        requests.append(json.loads(request.content))
        wire = gemini_at(str(request.url)).wire_response(outputs.pop(0), requests[-1])
        return httpx2.Response(wire.status, headers=wire.headers, content=wire.body)

    options = genai_types.HttpOptions(
        base_url=BASE_URL, httpx_client=httpx2.Client(transport=httpx2.MockTransport(serve))
    )
    declarations = [
        genai_types.FunctionDeclaration(name=n, parameters_json_schema=SCHEMA)
        for n in ("get_weather", "get_forecast")
    ]
    config = genai_types.GenerateContentConfig(
        tools=[genai_types.Tool(function_declarations=declarations)],
        automatic_function_calling=genai_types.AutomaticFunctionCallingConfig(disable=True),
    )  # fmt: skip
    with genai.Client(api_key="AIzaSy-x-0123456789", http_options=options) as client:
        contents = [genai_types.Content(role="user", parts=[genai_types.Part(text=QUESTION)])]
        first = client.models.generate_content(model="gemini-2.5-flash", contents=contents, config=config)
        calls = first.function_calls or []
        assert first.candidates and first.candidates[0].content
        turn = first.candidates[0].content
        if drop_ids:
            parts = [genai_types.Part.from_function_call(name=c.name or "", args=c.args or {}) for c in calls]
            turn = genai_types.Content(role="model", parts=parts)
        results = [
            genai_types.Part.from_function_response(
                name=c.name or "",
                response={"result": STRING_RESULT} if c.id == "call-0" else {"error": ERROR_RESULT},
            )
            for c in calls
        ]
        contents += [turn, genai_types.Content(role="user", parts=results)]
        client.models.generate_content(model="gemini-2.5-flash", contents=contents, config=config)
    return requests


def gemini_response(request: JsonObject, index: int) -> JsonObject:
    """The ``index``-th functionResponse of the request (the agent sent them in the calls' order)."""
    responses: list[JsonObject] = [
        p["functionResponse"] for c in request["contents"] for p in c["parts"] if "functionResponse" in p
    ]
    return responses[index]


def gemini_neutral(request: JsonObject, call_id: str) -> JsonObject:
    messages = gemini_at().model_input(request, CallIds())["messages"]
    parts = [p for m in messages if isinstance(m["content"], list) for p in m["content"]]
    return next(p for p in parts if p["type"] == "tool_result" and p["toolCallId"] == call_id)


@pytest.fixture(params=[False, True], ids=["ids-sent-back", "ids-dropped"], scope="module")
def gemini_recorded(request: pytest.FixtureRequest) -> list[JsonObject]:
    return record_gemini(request.param)


@pytest.fixture
def gemini_second(gemini_recorded: list[JsonObject]) -> JsonObject:
    return copy.deepcopy(gemini_recorded[1])


def test_gemini_the_recorded_request_links_each_response_to_its_call(gemini_second: JsonObject) -> None:
    assert gemini_neutral(gemini_second, "call-0")["result"] == STRING_RESULT
    assert gemini_neutral(gemini_second, "call-1") == {
        "type": "tool_result",
        "toolCallId": "call-1",
        "toolName": "get_forecast",
        "error": ERROR_RESULT,
    }


def test_gemini_a_result_is_replaced_under_the_field_the_agent_used(gemini_second: JsonObject) -> None:
    new = gemini_at().replace_tool_result(gemini_second, "call-0", REPLACEMENT)
    expected = copy.deepcopy(gemini_second)
    gemini_response(expected, 0)["response"] = {"result": REPLACEMENT}
    assert new == expected  # only that response changed
    assert gemini_neutral(new, "call-0")["result"] == REPLACEMENT
    assert gemini_neutral(new, "call-1") == gemini_neutral(gemini_second, "call-1")


def test_gemini_an_error_becomes_a_success(gemini_second: JsonObject) -> None:
    new = gemini_at().replace_tool_result(gemini_second, "call-1", "fine")
    assert new is not None and gemini_response(new, 1)["response"] == {"result": "fine"}
    assert gemini_neutral(new, "call-1") == {
        "type": "tool_result",
        "toolCallId": "call-1",
        "toolName": "get_forecast",
        "result": "fine",
    }


@pytest.mark.parametrize("value", [None, 0, True, [], "", 'déjà "vu"\n{not json', {"a": {"b": [1, 2.5]}}])
def test_gemini_any_json_value_is_sent_as_itself(gemini_second: JsonObject, value: Any) -> None:
    new = gemini_at().replace_tool_result(gemini_second, "call-0", value)
    assert new is not None and gemini_response(new, 0)["response"] == {"result": value}
    assert gemini_neutral(new, "call-0")["result"] == value


def test_gemini_the_input_is_not_mutated_and_nothing_is_shared(gemini_second: JsonObject) -> None:
    before = copy.deepcopy(gemini_second)
    new = gemini_at().replace_tool_result(gemini_second, "call-0", REPLACEMENT)
    assert gemini_second == before and new is not None
    gemini_response(new, 0)["response"]["result"]["temp"] = "changed"
    gemini_response(new, 1).clear()
    new["contents"][1]["parts"].clear()
    assert gemini_second == before
    assert REPLACEMENT["temp"] == "31°C"


def test_gemini_ids_with_no_result_and_calls_are_left_alone(gemini_recorded: list[JsonObject]) -> None:
    first, second = gemini_recorded
    provider = gemini_at()
    assert provider.replace_tool_result(second, "call-2", REPLACEMENT) is None
    assert provider.replace_tool_result(first, "call-0", REPLACEMENT) is None  # no results yet
    new = provider.replace_tool_result(second, "call-0", "x")
    assert new is not None and new["contents"][1] == second["contents"][1]  # the call is not its result
    twice = provider.replace_tool_result(new, "call-1", 2)
    assert twice is not None
    assert (gemini_neutral(twice, "call-0")["result"], gemini_neutral(twice, "call-1")["result"]) == ("x", 2)


def test_gemini_other_response_shapes_by_hand() -> None:
    def request(response: Any, key: str = "functionResponse") -> JsonObject:
        return {
            "contents": [
                {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
                {"role": "user", "parts": [{key: {"name": "f", "response": response}}]},
            ]
        }

    provider = gemini_at()
    assert provider.replace_tool_result(request({"output": "a"}), "call-0", 1) == request({"output": 1})
    assert provider.replace_tool_result(request({"temp": 18, "sky": "sun"}), "call-0", {"t": 1}) == request(
        {"t": 1}
    )
    assert provider.replace_tool_result(request({"temp": 18, "sky": "sun"}), "call-0", [1]) == request(
        {"result": [1]}
    )
    snake = provider.replace_tool_result(request({"result": "a"}, "function_response"), "call-0", "b")
    assert snake == request({"result": "b"}, "function_response")
