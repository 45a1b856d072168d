"""OpenAI Chat Completions: the request field table and the response features, unit by unit and
through the real openai SDK.

The features are the ones a Chat answer can carry besides text and function calls: a stop reason
other than the normal end (``length`` -> ``stopReason: max_tokens``, ``content_filter``, a legacy
``function_call``), a refusal, ``n`` > 1 choices, and a web-search answer's url_citation annotations
(``hostedTools``). Chat has no reasoning items and no other hosted tools.

Feature cells, ``test_feature[chat-<feature>-<sync|async>-<json|sse>]``: a CannedProvider serves
chat.completion bodies (or chunk streams) written by hand in the API's shape; a program on the real
``openai.OpenAI`` / ``AsyncOpenAI`` client makes two requests, the second echoing the first answer's
assistant message; record, verify, replay offline (what the program received is equal, less ids,
timestamps and usage), and a replay in which the program changes the value the feature concerns
diverges naming both values.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from helpers import CannedProvider, Raw, blocked_network
from openai.types.chat import completion_create_params

import otel_blackbox
from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.model import terminal_outcome
from otel_blackbox._cassette.output import check_output
from otel_blackbox._cassette.verify import verify_cassette
from otel_blackbox._cost.usage import without_usage
from otel_blackbox._types import JsonObject
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.openai_chat.fields import CHAT_FIELDS as REQUEST_FIELDS
from otel_blackbox._wire.openai_chat.read_request import text_of
from otel_blackbox._wire.openai_chat.translation import OpenAIChat
from otel_blackbox.errors import ReplayDivergence

CHAT = OpenAIChat()
MODEL = "gpt-4o-mini"
SEARCH_MODEL = "gpt-4o-search-preview"
KEY = "sk-fake-features-0123456789"
REFUSAL = "I'm sorry, I can't help with that."
CITATION: JsonObject = {
    "type": "url_citation",
    "url_citation": {
        "end_index": 62,
        "start_index": 0,
        "title": "Lisbon weather",
        "url": "https://weather.example/lisbon?utm_source=openai",
    },
}
SEARCHED = "Lisbon is sunny today, 21°C ([weather.example](https://weather.example/lisbon))."


def call(n: int, name: str, tool_input: Any) -> JsonObject:
    return {"toolCallId": f"call-{n}", "toolName": name, "toolInput": tool_input}


def sse(*payloads: JsonObject) -> bytes:
    return ("".join(f"data: {json.dumps(p)}\n\n" for p in payloads) + "data: [DONE]\n\n").encode()


def completion(*choices: JsonObject, model: str = MODEL) -> JsonObject:
    """A chat.completion as the API sends it."""
    return {
        "id": "chatcmpl-BhBSW7bUMLZhnV5YZZjZ8tSzV2Zgp",
        "object": "chat.completion",
        "created": 1749629936,
        "model": model,
        "choices": list(choices),
        "usage": {
            "prompt_tokens": 21,
            "completion_tokens": 9,
            "total_tokens": 30,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        },
        "system_fingerprint": "fp_34a54ae93c",
    }


def choice(
    index: int,
    content: str | None,
    finish: str = "stop",
    *,
    refusal: str | None = None,
    annotations: list[JsonObject] | None = None,
) -> JsonObject:
    message = {"role": "assistant", "content": content, "refusal": refusal, "annotations": annotations or []}
    return {"index": index, "message": message, "logprobs": None, "finish_reason": finish}


def chunk(index: int, delta: JsonObject, finish: str | None = None, model: str = MODEL) -> JsonObject:
    """One chat.completion.chunk as the API streams it."""
    return {
        "id": "chatcmpl-BhBSW7bUMLZhnV5YZZjZ8tSzV2Zgp",
        "object": "chat.completion.chunk",
        "created": 1749629936,
        "model": model,
        "system_fingerprint": "fp_34a54ae93c",
        "choices": [{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def role(index: int = 0, *, refusal: bool = False, model: str = MODEL) -> JsonObject:
    """A choice's first chunk: the API opens a refusal with content null, an answer with empty content."""
    content, opening = (None, "") if refusal else ("", None)
    return chunk(index, {"role": "assistant", "content": content, "refusal": opening}, model=model)


# --- the request field table ---------------------------------------------------------------------


def sdk_fields() -> set[str]:
    """Every top-level field the installed SDK's ``chat.completions.create`` can send."""
    base = completion_create_params.CompletionCreateParamsBase
    streaming = completion_create_params.CompletionCreateParamsStreaming
    return set(base.__required_keys__ | base.__optional_keys__ | streaming.__optional_keys__) | set(
        streaming.__required_keys__
    )


def test_the_table_classifies_every_field_of_the_sdk_once() -> None:
    groups = [
        set(REQUEST_FIELDS.read),
        set(REQUEST_FIELDS.neutral),
        set(REQUEST_FIELDS.transport),
        set(REQUEST_FIELDS.behaviour),
    ]
    known = set().union(*groups)
    assert sum(len(g) for g in groups) == len(known), "no field is in two groups"
    assert sdk_fields() - known == set(), "a field of the SDK the table does not classify"
    assert all(reason and "\n" not in reason for reason in REQUEST_FIELDS.transport.values())


def test_neutral_names_are_todays() -> None:
    """So that the cassettes recorded before the table hash the same."""
    assert dict(REQUEST_FIELDS.neutral) == {
        "max_tokens": "maxTokens",
        "max_completion_tokens": "maxTokens",
        "temperature": "temperature",
        "top_p": "topP",
        "tool_choice": "toolChoice",
        "response_format": "responseFormat",
        "stop": "stop",
    }
    assert REQUEST_FIELDS.read == {"messages", "model", "tools"} and not REQUEST_FIELDS.nested


def test_params_keep_behaviour_and_unknown_fields_and_drop_transport() -> None:
    behaviour = {name: {"value": name} for name in REQUEST_FIELDS.behaviour}
    transport = {name: {"value": name} for name in REQUEST_FIELDS.transport}
    request: JsonObject = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "Hi"}],
        "max_completion_tokens": 64,
        "top_p": 0.5,
        **behaviour,
        **transport,
        "blackbox_unknown": [1, 2],
        "seed": None,  # null is not sent
    }
    params = CHAT.model_input(request, CallIds())["params"]
    assert params == {
        "maxTokens": 64,
        "topP": 0.5,
        **{k: v for k, v in behaviour.items() if k != "seed"},
        "blackbox_unknown": [1, 2],
    }
    assert not set(params) & set(REQUEST_FIELDS.transport)


def test_a_request_of_transport_fields_only_has_no_params() -> None:
    request = {"model": MODEL, "messages": [], "stream": True, "stream_options": {"include_usage": True},
               "user": "u-1", "metadata": {"run": "7"}, "service_tier": "flex", "logprobs": True}  # fmt: skip
    assert CHAT.model_input(request, CallIds()) == {"messages": [], "tools": [], "model": MODEL}


# --- the assistant message a program sends back ----------------------------------------------------


def assistant_input(message: JsonObject) -> Any:
    request = {"model": MODEL, "messages": [{"role": "user", "content": "Hi"}, message]}
    return CHAT.model_input(request, CallIds())["messages"][1]


@pytest.mark.parametrize(
    "message",
    [
        {"role": "assistant", "content": None, "refusal": REFUSAL},
        {"role": "assistant", "content": None, "refusal": REFUSAL, "annotations": [], "tool_calls": None},
        {"role": "assistant", "content": [{"type": "refusal", "refusal": REFUSAL}]},
        {"role": "assistant", "content": "", "refusal": REFUSAL},
    ],
    ids=["message-field", "sdk-dump", "refusal-part", "empty-content"],
)
def test_a_refusal_sent_back_stays_apart_from_the_text(message: JsonObject) -> None:
    assert assistant_input(message) == {
        "role": "assistant",
        "content": [{"type": "refusal", "refusal": REFUSAL}],
    }


def test_text_and_refusal_parts_each_join_and_text_of_still_folds_them() -> None:
    content = [
        {"type": "text", "text": "Part "},
        {"type": "refusal", "refusal": "I can't "},
        {"type": "text", "text": "one."},
        {"type": "refusal", "refusal": "do that."},
    ]
    assert assistant_input({"role": "assistant", "content": content}) == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Part one."},
            {"type": "refusal", "refusal": "I can't do that."},
        ],
    }
    assert text_of(content) == "Part I can't one.do that.", "the Responses module's helper is unchanged"


def test_a_changed_refusal_is_a_changed_input() -> None:
    sent = assistant_input({"role": "assistant", "content": None, "refusal": REFUSAL})
    edited = assistant_input({"role": "assistant", "content": None, "refusal": REFUSAL + "!"})
    assert sent != edited


def test_annotations_sent_back_are_a_hosted_web_search_before_the_text() -> None:
    message = {"role": "assistant", "content": SEARCHED, "refusal": None, "annotations": [CITATION]}
    assert assistant_input(message) == {
        "role": "assistant",
        "content": [
            {"type": "hosted_tool", "toolName": "web_search", "result": [CITATION]},
            {"type": "text", "text": SEARCHED},
        ],
    }
    # No annotations (the API sends an empty list): a plain message stays a string, as before.
    plain: JsonObject = {"role": "assistant", "content": "Hello", "refusal": None, "annotations": []}
    assert assistant_input(plain) == {"role": "assistant", "content": "Hello"}


def test_legacy_function_call_round_trips_with_ids_known_by_name_and_arguments() -> None:
    ids = CallIds()
    body = completion(
        {
            "index": 0,
            "message": {"role": "assistant", "content": None, "function_call": {"name": "get_weather",
                        "arguments": '{"city": "Oslo"}'}},
            "logprobs": None,
            "finish_reason": "function_call",
        }
    )  # fmt: skip
    output = CHAT.model_output(json.dumps(body).encode(), streamed=False, ids=ids)
    assert output == {"type": "tool_calls", "calls": [call(0, "get_weather", {"city": "Oslo"})],
                      "stopReason": "function_call"}  # fmt: skip
    request = {
        "model": MODEL,
        "functions": [{"name": "get_weather", "parameters": {"type": "object"}}],
        "messages": [
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": None, "function_call": {"name": "get_weather",
             "arguments": '{"city":"Oslo"}'}},
            {"role": "function", "name": "get_weather", "content": "cold"},
        ],
    }  # fmt: skip
    model_input = CHAT.model_input(request, ids)
    assert model_input["messages"][1:] == [
        {"role": "assistant", "content": [{"type": "tool_use", **call(0, "get_weather", {"city": "Oslo"})}]},
        {"role": "user", "content": [
            {"type": "tool_result", "toolCallId": "call-0", "toolName": "get_weather", "result": "cold"}
        ]},
    ]  # fmt: skip
    assert model_input["params"] == {"functions": request["functions"]}
    for stream in (False, True):  # replay sends the call back in the legacy shape
        wire = CHAT.wire_response(output, {"model": MODEL, "stream": stream})
        assert CHAT.model_output(wire.body, streamed=stream, ids=CallIds()) == output
        assert b'"function_call"' in wire.body and b'"tool_calls"' not in wire.body


# --- model_output: what the answer said -------------------------------------------------------------


def read(body: JsonObject | bytes, *, ids: CallIds | None = None) -> JsonObject:
    streamed = isinstance(body, bytes)
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    output = CHAT.model_output(raw, streamed=streamed, ids=ids or CallIds())
    check_output(output)
    return output


def stream_of(text: str, finish: str | None) -> bytes:
    return sse(role(), chunk(0, {"content": text}), chunk(0, {}, finish))


@pytest.mark.parametrize(
    ("finish", "stop_reason"),
    [
        ("stop", None),
        ("length", "max_tokens"),
        ("content_filter", "content_filter"),
        ("eos_token", "eos_token"),  # a compatible server's own reason, kept as is
    ],
)
def test_finish_reasons(finish: str, stop_reason: str | None) -> None:
    expected: JsonObject = {"type": "final_answer", "text": "Part"}
    if stop_reason:
        expected["stopReason"] = stop_reason
    assert read(completion(choice(0, "Part", finish))) == expected
    assert read(stream_of("Part", finish)) == expected


def test_tool_calls_is_the_default_finish_of_calls() -> None:
    message = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_Q1w2E3r4T5y6U7i8O9p0A1s2", "type": "function",
         "function": {"name": "get_weather", "arguments": "{}"}}
    ]}  # fmt: skip
    body = completion({"index": 0, "message": message, "logprobs": None, "finish_reason": "tool_calls"})
    assert read(body) == {"type": "tool_calls", "calls": [call(0, "get_weather", {})]}


def test_a_refusal_is_apart_from_the_text() -> None:
    expected = {"type": "final_answer", "text": "", "refusal": REFUSAL}
    assert read(completion(choice(0, None, refusal=REFUSAL))) == expected
    pieces = [chunk(0, {"refusal": REFUSAL[:9]}), chunk(0, {"refusal": REFUSAL[9:]})]
    assert read(sse(role(refusal=True), *pieces, chunk(0, {}, "stop"))) == expected
    # Refusal parts in list content (some compatible servers) are the refusal too.
    parts = {"role": "assistant", "content": [{"type": "refusal", "refusal": REFUSAL}]}
    assert (
        read(completion({"index": 0, "message": parts, "logprobs": None, "finish_reason": "stop"}))
        == expected
    )


def test_n_choices_each_a_whole_output_numbered_in_order() -> None:
    def calls_message(*names: str) -> JsonObject:
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{name}AAAAAAAAAAAAAAAAAAAAAA", "type": "function",
             "function": {"name": name, "arguments": "{}"}} for name in names
        ]}  # fmt: skip

    body = completion(
        {"index": 2, "message": calls_message("c"), "logprobs": None, "finish_reason": "tool_calls"},
        choice(1, None, refusal=REFUSAL),
        {"index": 0, "message": calls_message("a", "b"), "logprobs": None, "finish_reason": "tool_calls"},
        choice(3, "Cut", "length"),
    )
    expected = {
        "type": "tool_calls",
        "calls": [call(0, "a", {}), call(1, "b", {})],
        "choices": [
            {"type": "final_answer", "text": "", "refusal": REFUSAL},
            {"type": "tool_calls", "calls": [call(2, "c", {})]},
            {"type": "final_answer", "text": "Cut", "stopReason": "max_tokens"},
        ],
    }
    assert read(body) == expected
    for stream in (False, True):  # replay's wire gives the same back, JSON and SSE
        wire = CHAT.wire_response(expected, {"model": MODEL, "stream": stream})
        assert read(wire.body if stream else json.loads(wire.body)) == expected


def test_a_stream_of_interleaved_choices_is_reassembled_per_index() -> None:
    body = sse(
        role(0),
        role(1),
        chunk(1, {"content": "Second "}),
        chunk(0, {"content": "First "}),
        chunk(1, {"content": "answer."}),
        chunk(0, {"content": "answer."}),
        chunk(0, {}, "stop"),
        chunk(1, {}, "length"),
    )
    assert read(body) == {
        "type": "final_answer",
        "text": "First answer.",
        "choices": [{"type": "final_answer", "text": "Second answer.", "stopReason": "max_tokens"}],
    }


def test_web_search_annotations_are_a_hosted_tool_with_the_annotations_as_sent() -> None:
    expected = {"type": "final_answer", "text": SEARCHED, "hostedTools": [{"toolName": "web_search",
                "result": [CITATION]}]}  # fmt: skip
    assert read(completion(choice(0, SEARCHED, annotations=[CITATION]), model=SEARCH_MODEL)) == expected
    streamed = sse(
        role(), chunk(0, {"content": SEARCHED}), chunk(0, {"annotations": [CITATION]}), chunk(0, {}, "stop")
    )
    assert read(streamed) == expected
    # Annotations spread over two deltas are kept in order.
    second = copy.deepcopy(CITATION)
    second["url_citation"]["title"] = "Second"
    split = sse(
        role(),
        chunk(0, {"content": SEARCHED, "annotations": [CITATION]}),
        chunk(0, {"annotations": [second]}, "stop"),
    )
    assert read(split)["hostedTools"] == [{"toolName": "web_search", "result": [CITATION, second]}]


@pytest.mark.parametrize(
    ("body", "streamed", "message"),
    [
        (
            {"choices": [{"index": 0, "message": {"content": "x", "annotations": "a url"}}]},
            False,
            "annotations",
        ),
        ({"choices": [{"index": 0, "message": {"content": "x"}}, "not a choice"]}, False, "shape"),
        ({"choices": []}, False, "not a chat completion"),
        (sse(role(0), role(1), chunk(0, {}, "stop")), True, "finish_reason"),
        (sse(role(), chunk(0, {"annotations": {"url": "x"}}, "stop")), True, "annotations"),
    ],
    ids=[
        "annotations-not-a-list",
        "choice-not-an-object",
        "no-choices",
        "a-choice-unfinished",
        "stream-annotations",
    ],
)
def test_bad_responses_raise_value_error(body: JsonObject | bytes, streamed: bool, message: str) -> None:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    with pytest.raises(ValueError, match=message):
        CHAT.model_output(raw, streamed=streamed, ids=CallIds())


# --- wire_response: what replay hands back ----------------------------------------------------------

FEATURE_OUTPUTS: dict[str, JsonObject] = {
    "max-tokens": {"type": "final_answer", "text": "The capital of", "stopReason": "max_tokens"},
    "content-filter": {"type": "final_answer", "text": "", "stopReason": "content_filter"},
    "own-reason": {"type": "final_answer", "text": "x", "stopReason": "eos_token"},
    "calls-cut": {"type": "tool_calls", "calls": [call(0, "f", {"a": 1})], "stopReason": "max_tokens"},
    "refusal": {"type": "final_answer", "text": "", "refusal": REFUSAL},
    "text-and-refusal": {"type": "final_answer", "text": "Partly", "refusal": REFUSAL},
    "web-search": {
        "type": "final_answer",
        "text": SEARCHED,
        "hostedTools": [{"toolName": "web_search", "result": [CITATION]}],
    },
    "legacy-function": {"type": "tool_calls", "calls": [call(0, "f", {})], "stopReason": "function_call"},
    "choices": {
        "type": "final_answer",
        "text": "One",
        "choices": [
            {"type": "final_answer", "text": "", "refusal": REFUSAL},
            {"type": "tool_calls", "calls": [call(0, "f", {"x": [1]})], "text": "Calling."},
            {
                "type": "final_answer",
                "text": "Three",
                "stopReason": "max_tokens",
                "hostedTools": [{"toolName": "web_search", "result": [CITATION]}],
            },
        ],
    },
}
# What the SDK's strict validation accepts: the finish reasons OpenAI documents.
SDK_OUTPUTS = {k: v for k, v in FEATURE_OUTPUTS.items() if k != "own-reason"}
STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])


@STREAMS
@pytest.mark.parametrize("include_usage", [False, True], ids=["", "usage"])
@pytest.mark.parametrize("output", FEATURE_OUTPUTS.values(), ids=FEATURE_OUTPUTS.keys())
def test_round_trip(output: JsonObject, stream: bool, include_usage: bool) -> None:
    request: JsonObject = {"model": MODEL, "stream": stream}
    if include_usage:
        request["stream_options"] = {"include_usage": True}
    wire = CHAT.wire_response(output, request)
    assert CHAT.model_output(wire.body, streamed=stream, ids=CallIds()) == output
    again = CHAT.wire_response(copy.deepcopy(output), dict(reversed(list(request.items()))))
    assert again.body == wire.body, "the same output, the same bytes"


def test_neutral_reasons_chat_has_no_value_for_are_stop() -> None:
    for reason in ("refusal", "stop_sequence"):
        output = {"type": "final_answer", "text": "x", "stopReason": reason}
        body = json.loads(CHAT.wire_response(output, {"model": MODEL}).body)
        assert body["choices"][0]["finish_reason"] == "stop"


def test_hosted_tools_other_than_web_search_are_not_sent() -> None:
    output = {"type": "final_answer", "text": "4", "hostedTools": [{"toolName": "code_execution",
              "toolInput": {"code": "2+2"}, "result": "4"}]}  # fmt: skip
    body = json.loads(CHAT.wire_response(output, {"model": MODEL}).body)
    assert body["choices"][0]["message"]["annotations"] == []


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ({"type": "final_answer", "text": "x", "stopReason": 3}, "stopReason"),
        ({"type": "final_answer", "text": "x", "refusal": ["no"]}, "refusal"),
        ({"type": "final_answer", "text": "x", "hostedTools": {"toolName": "web_search"}}, "hostedTools"),
        ({"type": "final_answer", "text": "x", "hostedTools": [{"toolName": "web_search", "result": "u"}]},
         "web_search"),
        ({"type": "final_answer", "text": "x", "choices": [{"type": "final_answer", "refusal": 1}]},
         r"choices\[0\]"),
        ({"type": "final_answer", "text": "x", "choices": "two"}, "choices"),
    ],
    ids=["stop-reason", "refusal", "hosted-not-a-list", "web-search-result", "choice-field", "choices"],
)  # fmt: skip
@STREAMS
def test_a_malformed_output_is_one_value_error(output: JsonObject, message: str, stream: bool) -> None:
    with pytest.raises(ValueError, match=message):
        CHAT.wire_response(output, {"model": MODEL, "stream": stream})


# --- the real SDK parses what replay sends, with strict validation ----------------------------------


def serving(output: JsonObject) -> Callable[[httpx2.Request], httpx2.Response]:
    def answer(request: httpx2.Request) -> httpx2.Response:
        wire = CHAT.wire_response(output, json.loads(request.content))
        return httpx2.Response(wire.status, headers=wire.headers, content=wire.body)

    return answer


def strict_client(output: JsonObject) -> openai.OpenAI:
    http = httpx2.Client(transport=httpx2.MockTransport(serving(output)))
    return openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key=KEY, max_retries=0, http_client=http,
                         _strict_response_validation=True)  # fmt: skip


def strict_async_client(output: JsonObject) -> openai.AsyncOpenAI:
    http = httpx2.AsyncClient(transport=httpx2.MockTransport(serving(output)))
    return openai.AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key=KEY, max_retries=0, http_client=http,
                              _strict_response_validation=True)  # fmt: skip


@dataclass(frozen=True)
class Seen:
    """What a program reads of each choice."""

    finish_reason: str | None
    content: str | None
    refusal: str | None
    annotations: list[JsonObject]
    calls: list[tuple[str, str, str]]


def seen(completion: Any) -> list[Seen]:
    return [
        Seen(
            c.finish_reason,
            c.message.content,
            c.message.refusal,
            [a.to_dict() for a in c.message.annotations or []],
            [(t.id, t.function.name, t.function.arguments) for t in c.message.tool_calls or []]
            + ([("", c.message.function_call.name, c.message.function_call.arguments)]
               if c.message.function_call else []),
        )
        for c in completion.choices
    ]  # fmt: skip


def final_of_stream(stream: Any) -> Any:
    try:
        return stream.get_final_completion()
    except openai.LengthFinishReasonError as exc:  # the helper refuses a cut answer: it carries it
        return exc.completion
    except openai.ContentFilterFinishReasonError as exc:
        return exc.completion


async def async_final_of_stream(stream: Any) -> Any:
    try:
        return await stream.get_final_completion()
    except openai.LengthFinishReasonError as exc:
        return exc.completion
    except openai.ContentFilterFinishReasonError as exc:
        return exc.completion


def chunks_seen(chunks: list[Any]) -> dict[int, tuple[str | None, str, str]]:
    """(finish reason, text, refusal) per choice index, as a program iterating the stream adds them up."""
    found: dict[int, tuple[str | None, str, str]] = {}
    for c in chunks:
        for ch in c.choices:
            finish, text, refusal = found.get(ch.index, (None, "", ""))
            found[ch.index] = (ch.finish_reason or finish, text + (ch.delta.content or ""),
                               refusal + (ch.delta.refusal or ""))  # fmt: skip
    return found


def expected_seen(output: JsonObject) -> list[Seen]:
    return seen(
        openai.types.chat.ChatCompletion.model_validate(json.loads(CHAT.wire_response(output, {}).body))
    )


@pytest.mark.parametrize("output", SDK_OUTPUTS.values(), ids=SDK_OUTPUTS.keys())
def test_the_sdk_reads_every_feature_sync(output: JsonObject) -> None:
    messages: Any = [{"role": "user", "content": "Hi"}]
    with strict_client(output) as client:
        created = client.chat.completions.create(model=MODEL, messages=messages)
        chunks = list(client.chat.completions.create(model=MODEL, messages=messages, stream=True))
        with client.chat.completions.stream(model=MODEL, messages=messages) as stream:
            final = final_of_stream(stream)
    expected = expected_seen(output)
    assert seen(created) == expected and seen(final) == expected
    assert [c.index for c in created.choices] == list(range(1 + len(output.get("choices", []))))
    assert chunks_seen(chunks) == {
        n: (s.finish_reason, s.content or "", s.refusal or "") for n, s in enumerate(expected)
    }
    back = CHAT.model_output(json.dumps(created.to_dict()).encode(), streamed=False, ids=CallIds())
    assert back == output, "what the program got reads back as the output"


@pytest.mark.parametrize("output", SDK_OUTPUTS.values(), ids=SDK_OUTPUTS.keys())
def test_the_sdk_reads_every_feature_async(output: JsonObject) -> None:
    async def run() -> tuple[Any, Any]:
        messages: Any = [{"role": "user", "content": "Hi"}]
        async with strict_async_client(output) as client:
            created = await client.chat.completions.create(model=MODEL, messages=messages)
            async with client.chat.completions.stream(model=MODEL, messages=messages) as stream:
                final = await async_final_of_stream(stream)
        return created, final

    created, final = asyncio.run(run())
    assert seen(created) == seen(final) == expected_seen(output)


def test_a_compatible_servers_own_reason_reaches_the_program_as_is() -> None:
    """Outside OpenAI's documented values: the default (lenient) client passes it through."""
    http = httpx2.Client(transport=httpx2.MockTransport(serving(FEATURE_OUTPUTS["own-reason"])))
    with openai.OpenAI(
        base_url="http://127.0.0.1:9/v1", api_key=KEY, max_retries=0, http_client=http
    ) as client:
        created = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hi"}])
    reason: str = created.choices[0].finish_reason  # typed as OpenAI's documented values only
    assert reason == "eos_token"


def test_the_sdk_sees_each_feature_as_sent() -> None:
    """The values themselves, not only their agreement."""
    with strict_client(FEATURE_OUTPUTS["choices"]) as client:
        created = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hi"}])
    assert seen(created) == [
        Seen("stop", "One", None, [], []),
        Seen("stop", None, REFUSAL, [], []),
        Seen("tool_calls", "Calling.", None, [], [("call-0", "f", '{"x":[1]}')]),
        Seen("length", "Three", None, [CITATION], []),
    ]


# --- feature cells: the real SDK against a canned provider, recorded, replayed --------------------------


@dataclass(frozen=True)
class Feature:
    """A cell: the first answer (JSON and SSE) and the first request's settings, what the cassette
    records of that answer, which choice the program sends back, and the change that must diverge
    (settings of the first request, or an edit of the echoed message) with where it shows and both
    values."""

    first_json: JsonObject
    first_sse: bytes
    request: JsonObject
    recorded: JsonObject
    path: str
    values: tuple[Any, Any]
    echo_choice: int = 0
    changed_request: JsonObject = field(default_factory=dict)
    change_echo: Callable[[JsonObject], None] | None = None


def _change_refusal(message: JsonObject) -> None:
    message["refusal"] = REFUSAL + " Really."


def _change_citation(message: JsonObject) -> None:
    message["annotations"][0]["url_citation"]["url"] = "https://weather.example/porto"


CUT = "The capital of Portugal is"
FEATURES: dict[str, Feature] = {
    "stop_reason": Feature(
        first_json=completion(choice(0, CUT, "length")),
        first_sse=sse(role(), chunk(0, {"content": CUT[:12]}), chunk(0, {"content": CUT[12:]}),
                      chunk(0, {}, "length")),
        request={"max_tokens": 6},
        recorded={"type": "final_answer", "text": CUT, "stopReason": "max_tokens"},
        changed_request={"max_tokens": 7},
        path="$.params.maxTokens",
        values=(6, 7),
    ),
    "refusal": Feature(
        first_json=completion(choice(0, None, refusal=REFUSAL)),
        first_sse=sse(role(refusal=True), chunk(0, {"refusal": REFUSAL[:12]}),
                      chunk(0, {"refusal": REFUSAL[12:]}), chunk(0, {}, "stop")),
        request={},
        recorded={"type": "final_answer", "text": "", "refusal": REFUSAL},
        change_echo=_change_refusal,
        path="$.messages[1].content[0].refusal",
        values=(REFUSAL, REFUSAL + " Really."),
    ),
    "choices": Feature(
        first_json=completion(choice(0, "Lisbon."), choice(1, None, refusal=REFUSAL),
                              choice(2, "It is Lisbon.")),
        # The API interleaves the choices' chunks and ends them in any order.
        first_sse=sse(role(0), role(1, refusal=True), role(2), chunk(0, {"content": "Lisbon."}),
                      chunk(1, {"refusal": REFUSAL}), chunk(2, {"content": "It is Lisbon."}),
                      chunk(0, {}, "stop"), chunk(2, {}, "stop"), chunk(1, {}, "stop")),
        request={"n": 3},
        recorded={"type": "final_answer", "text": "Lisbon.", "choices": [
            {"type": "final_answer", "text": "", "refusal": REFUSAL},
            {"type": "final_answer", "text": "It is Lisbon."},
        ]},
        echo_choice=2,  # the program picks the last choice
        changed_request={"n": 2},
        path="$.params.n",
        values=(3, 2),
    ),
    "web_search": Feature(
        first_json=completion(choice(0, SEARCHED, annotations=[CITATION]), model=SEARCH_MODEL),
        # The search models send the annotations in a delta of their own, after the text.
        first_sse=sse(role(model=SEARCH_MODEL), chunk(0, {"content": SEARCHED[:30]}, model=SEARCH_MODEL),
                      chunk(0, {"content": SEARCHED[30:]}, model=SEARCH_MODEL),
                      chunk(0, {"annotations": [CITATION]}, model=SEARCH_MODEL),
                      chunk(0, {}, "stop", model=SEARCH_MODEL)),
        request={"model": SEARCH_MODEL, "web_search_options": {"search_context_size": "low"}},
        recorded={"type": "final_answer", "text": SEARCHED,
                  "hostedTools": [{"toolName": "web_search", "result": [CITATION]}]},
        change_echo=_change_citation,
        path="$.messages[1].content[0].result[0].url_citation.url",
        values=("https://weather.example/lisbon?utm_source=openai", "https://weather.example/porto"),
    ),
}  # fmt: skip
FINAL = "Thanks, noted."
FINAL_JSON = completion(choice(0, FINAL))
FINAL_SSE = sse(
    role(), chunk(0, {"content": FINAL[:7]}), chunk(0, {"content": FINAL[7:]}), chunk(0, {}, "stop")
)
CELLS = [(f, m, w) for f in FEATURES for m in ("sync", "async") for w in ("json", "sse")]
# What the program receives that a replay cannot give back: ids, timestamps, token counts, fingerprints.
NOT_REPLAYED = ("id", "created", "usage", "system_fingerprint")

Send = Callable[[JsonObject], Awaitable[Any]]


def sender(base_url: str, mode: str, wire: str) -> tuple[Send, Callable[[], Awaitable[None]]]:
    """``chat.completions.create`` for JSON, ``.stream()`` and ``get_final_completion()`` for SSE."""
    if mode == "sync":
        client = openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0)

        async def send(kwargs: JsonObject) -> Any:
            if wire == "json":
                return client.chat.completions.create(**kwargs)
            with client.chat.completions.stream(**kwargs) as stream:
                return final_of_stream(stream)

        async def close() -> None:
            client.close()

        return send, close
    aclient = openai.AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=0)

    async def asend(kwargs: JsonObject) -> Any:
        if wire == "json":
            return await aclient.chat.completions.create(**kwargs)
        async with aclient.chat.completions.stream(**kwargs) as stream:
            return await async_final_of_stream(stream)

    return asend, aclient.close


def echoed(message: Any) -> JsonObject:
    """The assistant message as a program sends it back: its content, refusal and annotations."""
    echo: JsonObject = {"role": "assistant", "content": message.content}
    if message.refusal is not None:
        echo["refusal"] = message.refusal
    if message.annotations:
        echo["annotations"] = [a.to_dict() for a in message.annotations]
    return echo


def program(
    feature: Feature, base_url: str, mode: str, wire: str, *, changed: bool = False
) -> list[JsonObject]:
    """Two requests, the second sending the first answer back; what the program received, dumped."""

    async def go() -> list[JsonObject]:
        send, close = sender(base_url, mode, wire)
        question: JsonObject = {"role": "user", "content": "What is the capital of Portugal?"}
        first_request = {"model": MODEL, "messages": [question], **feature.request}
        if changed:
            first_request.update(feature.changed_request)
        try:
            first = await send(first_request)
            echo = echoed(first.choices[feature.echo_choice].message)
            if changed and feature.change_echo is not None:
                feature.change_echo(echo)
            follow_up = {"role": "user", "content": "Thanks."}
            second = await send({"model": MODEL, "messages": [question, echo, follow_up]})
        finally:
            await close()
        return [r.model_dump(exclude=set(NOT_REPLAYED)) for r in (first, second)]

    return asyncio.run(go())


@pytest.mark.parametrize(("feature", "mode", "wire"), CELLS, ids=[f"chat-{'-'.join(c)}" for c in CELLS])
def test_feature(tmp_path: Path, feature: str, mode: str, wire: str) -> None:
    spec = FEATURES[feature]
    cassette_path = tmp_path / "feature.json"
    bodies: list[Any] = (
        [spec.first_json, FINAL_JSON]
        if wire == "json"
        else [Raw("text/event-stream", spec.first_sse), Raw("text/event-stream", FINAL_SSE)]
    )
    with CannedProvider(bodies) as canned:
        base_url = canned.url + "/v1"
        with otel_blackbox.session(mode="record", cassette=cassette_path):
            live = program(spec, base_url, mode, wire)
        assert len(canned.requests) == 2
        assert canned.requests[1]["messages"][1] == echoed_dict(live[0], spec.echo_choice)

    assert KEY not in cassette_path.read_text()
    cassette = load_cassette(cassette_path)
    report = verify_cassette(cassette)
    assert report.passed, report.first_failure
    assert terminal_outcome(cassette).final_answer == FINAL
    outputs = [without_usage(step.payload) for step in cassette.steps if step.type == "model_output"]
    assert outputs == [spec.recorded, {"type": "final_answer", "text": FINAL}]

    # The provider is stopped and no socket may open: every answer comes from the cassette.
    with blocked_network() as attempts, otel_blackbox.session(mode="replay", cassette=cassette_path):
        assert program(spec, base_url, mode, wire) == live
    assert attempts == []

    with (
        pytest.raises(ReplayDivergence, match=r"step \d \(model_input\) differs at ") as diverged,
        blocked_network(),
        otel_blackbox.session(mode="replay", cassette=cassette_path),
    ):
        program(spec, base_url, mode, wire, changed=True)
    recorded, changed = (json.dumps(v, ensure_ascii=False) for v in spec.values)
    assert f"differs at {spec.path}: recorded {recorded}, got {changed}" in str(diverged.value)


def echoed_dict(dumped: JsonObject, index: int) -> JsonObject:
    """What ``echoed`` sent, from the dumped completion: the wire request the provider received."""
    message = dumped["choices"][index]["message"]
    echo: JsonObject = {"role": "assistant", "content": message["content"]}
    if message["refusal"] is not None:
        echo["refusal"] = message["refusal"]
    if message["annotations"]:
        echo["annotations"] = message["annotations"]
    return echo
