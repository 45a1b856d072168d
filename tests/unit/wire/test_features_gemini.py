"""Gemini generateContent's response features (issue 18): stop reasons, thoughts and signatures, code
execution and grounding, several candidates, a blocked prompt.

Unit tests of the translation (gemini.py, gemini_contents.py) for each feature, both ways, with bad
input; then the feature cells, `test_feature[gemini-<feature>-<sync|async>-<json|sse>]`: a loopback
provider serves responses written by hand in the API's wire shape, a small program drives the real
google-genai SDK through two or three requests (the later ones send the model's content back, as
Gemini 3 requires of thoughts), recorded; the cassette verifies; replayed with the provider stopped
and every socket refused, the program receives what it received live; and a program that changes the
value the feature concerns diverges naming both values.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from google import genai
from google.genai import types
from helpers import CannedProvider, Raw, blocked_network

import otel_blackbox
from otel_blackbox._cassette.io import load_cassette, save_cassette
from otel_blackbox._cassette.trusted import resealed
from otel_blackbox._cassette.verify import verify_cassette
from otel_blackbox._types import JsonObject
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.gemini.translation import GeminiGenerateContent
from otel_blackbox._wire.registry import provider_for
from otel_blackbox.errors import CassetteError, ReplayDivergence

BASE = "http://127.0.0.1:9"  # never dialled: the translation alone
JSON_URL = f"{BASE}/v1beta/models/gemini-2.5-flash:generateContent"
SSE_URL = f"{BASE}/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
ARRAY_URL = f"{BASE}/v1beta/models/gemini-2.5-flash:streamGenerateContent"
URLS = [JSON_URL, SSE_URL, ARRAY_URL]
KEY = "AIza-fake-features-0123456789"
MODEL = "gemini-2.5-flash"
# Base64, as the API sends a thoughtSignature; one with + and /, which the SDK sends back URL-safe.
THOUGHT_SIG = "CiQBR0FsbXN0aG91Z2h0c2lnbmF0dXJlMDAx"
CALL_SIG = "CiQBR0FsbWNhbGxzaWduYXR1cmUwMDE+/w=="
TEXT_SIG = "CiQBR0FsbXRleHRzaWduYXR1cmUwMDE="


def at(url: str) -> GeminiGenerateContent:
    provider = provider_for("POST", url)
    assert isinstance(provider, GeminiGenerateContent)
    return provider


def candidate(*parts: JsonObject, finish: str | None = "STOP", index: Any = 0, **extra: Any) -> JsonObject:
    found: JsonObject = {"content": {"role": "model", "parts": list(parts)}} if parts else {}
    if finish is not None:
        found["finishReason"] = finish
    if index is not None:
        found["index"] = index
    return {**found, **extra}


def response(*candidates: JsonObject, **extra: Any) -> JsonObject:
    return {"candidates": list(candidates), "usageMetadata": {"totalTokenCount": 9}, "modelVersion": MODEL,
            "responseId": "live-response-id", **extra}  # fmt: skip


def sse(*chunks: JsonObject) -> bytes:
    return "".join(f"data: {json.dumps(c)}\r\n\r\n" for c in chunks).encode()


def read(body: JsonObject | list[JsonObject], url: str = JSON_URL, ids: CallIds | None = None) -> JsonObject:
    """model_output of a JSON response, or of a stream's chunks (a list) in the URL's stream form."""
    provider = at(url)
    if isinstance(body, list):
        wire = sse(*body) if "alt=sse" in url else json.dumps(body).encode()
        return provider.model_output(wire, streamed=True, ids=ids or CallIds())
    return provider.model_output(json.dumps(body).encode(), streamed=False, ids=ids or CallIds())


def round_trip(output: JsonObject, url: str) -> JsonObject:
    provider = at(url)
    wire = provider.wire_response(output, {})
    return provider.model_output(wire.body, streamed=provider.is_streaming({}), ids=CallIds())


def wire_chunks(output: JsonObject, url: str) -> list[JsonObject]:
    body = at(url).wire_response(output, {}).body.decode()
    if url == JSON_URL:
        return [json.loads(body)]
    if url == ARRAY_URL:
        return list(json.loads(body))
    return [json.loads(e.removeprefix("data: ")) for e in body.split("\r\n\r\n") if e]


def user(text: str) -> JsonObject:
    return {"role": "user", "parts": [{"text": text}]}


def model_turn(body: JsonObject, *, chunks: list[JsonObject] | None = None) -> list[JsonObject]:
    """The model contents a program sends back: the candidate's content, or one a stream's chunk."""
    return [c["candidates"][0]["content"] for c in chunks or [body] if c["candidates"][0].get("content")]


def messages(*contents: JsonObject) -> list[JsonObject]:
    result: list[JsonObject] = at(JSON_URL).model_input({"contents": list(contents)}, CallIds())["messages"]
    return result


# --- requests: settings ------------------------------------------------------------------------


def test_candidate_count_and_thinking_config_are_params_under_their_own_names() -> None:
    config = {"candidateCount": 2, "thinkingConfig": {"include_thoughts": True, "thinkingBudget": 512},
              "maxOutputTokens": 64}  # fmt: skip
    body = {"contents": [user("hi")], "generationConfig": config}
    assert at(JSON_URL).model_input(body, CallIds())["params"] == {
        "candidateCount": 2,
        "thinkingConfig": {"include_thoughts": True, "thinkingBudget": 512},  # as sent, the SDK's spelling
        "maxTokens": 64,
    }
    snake = {"contents": [user("hi")], "generation_config": {"candidate_count": 2, "thinking_config": {}}}
    assert at(JSON_URL).model_input(snake, CallIds())["params"] == {"candidateCount": 2, "thinkingConfig": {}}


# --- stop reasons --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("finish", "stop"),
    [("STOP", None), ("MAX_TOKENS", "max_tokens"), ("SAFETY", "content_filter"), ("RECITATION", "RECITATION"),
     ("BLOCKLIST", "BLOCKLIST"), ("PROHIBITED_CONTENT", "PROHIBITED_CONTENT"), ("SPII", "SPII"),
     ("MALFORMED_FUNCTION_CALL", "MALFORMED_FUNCTION_CALL"), ("OTHER", "OTHER"),
     ("LANGUAGE", "LANGUAGE")],
)  # fmt: skip
@pytest.mark.parametrize("url", URLS)
def test_a_finish_reason_other_than_stop_is_the_stop_reason_and_is_sent_back(
    url: str, finish: str, stop: str | None
) -> None:
    live = response(candidate({"text": "Roses are"}, finish=finish))
    output = read(live if url == JSON_URL else [live], url)
    expected: JsonObject = {"type": "final_answer", "text": "Roses are"}
    assert output == (expected if stop is None else {**expected, "stopReason": stop})
    assert wire_chunks(output, url)[-1]["candidates"][0]["finishReason"] == finish
    assert round_trip(output, url) == output


@pytest.mark.parametrize("url", URLS)
def test_an_answer_blocked_with_no_content_is_an_empty_answer_with_its_stop_reason(url: str) -> None:
    ratings = [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}]
    live = response(candidate(finish="SAFETY", safetyRatings=ratings))
    output = read(live if url == JSON_URL else [live], url)
    assert output == {"type": "final_answer", "text": "", "stopReason": "content_filter"}  # no ratings kept
    # Sent back as the API sends it: the candidate has no content, only why it stopped.
    assert [c["candidates"] for c in wire_chunks(output, url)] == [[{"index": 0, "finishReason": "SAFETY"}]]
    assert round_trip(output, url) == output
    # An empty answer that stopped normally still has its one empty text part.
    plain = wire_chunks({"type": "final_answer", "text": ""}, url)[-1]["candidates"][0]
    assert plain["content"]["parts"] == [{"text": ""}] and plain["finishReason"] == "STOP"


def test_stop_reasons_gemini_has_no_name_for_are_sent_as_it_reports_them() -> None:
    for stop, finish in [("stop_sequence", "STOP"), ("refusal", "STOP"), ("pause_turn", "pause_turn")]:
        chunk = wire_chunks({"type": "final_answer", "text": "x", "stopReason": stop}, JSON_URL)[0]
        assert chunk["candidates"][0]["finishReason"] == finish


@pytest.mark.parametrize("url", URLS)
def test_a_prompt_blocked_outright_is_recorded_and_sent_back_as_blocked(url: str) -> None:
    ratings = [{"category": "HARM_CATEGORY_HARASSMENT", "probability": "HIGH"}]
    live = {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT", "safetyRatings": ratings},
            "usageMetadata": {"promptTokenCount": 5}, "modelVersion": MODEL}  # fmt: skip
    output = read(live if url == JSON_URL else [live], url)  # a stream of it has no finishReason
    assert output == {"type": "final_answer", "text": "", "stopReason": "prompt_blocked:PROHIBITED_CONTENT"}
    (chunk,) = wire_chunks(output, url)
    assert chunk["promptFeedback"] == {"blockReason": "PROHIBITED_CONTENT"} and "candidates" not in chunk
    assert round_trip(output, url) == output


# --- thoughts and signatures ---------------------------------------------------------------------


THINKING_PARTS: list[JsonObject] = [
    {"text": "The user wants Paris weather.", "thought": True, "thoughtSignature": THOUGHT_SIG},
    {"text": "I will call the tool."},
    {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": CALL_SIG},
    {"functionCall": {"name": "get_time", "args": {"city": "Paris"}}},
]
THINKING_OUTPUT: JsonObject = {
    "type": "tool_calls",
    "text": "I will call the tool.",
    "calls": [
        {
            "toolCallId": "call-0",
            "toolName": "get_weather",
            "toolInput": {"city": "Paris"},
            "signature": CALL_SIG,
        },
        {"toolCallId": "call-1", "toolName": "get_time", "toolInput": {"city": "Paris"}},
    ],
    "reasoning": [{"text": "The user wants Paris weather.", "signature": THOUGHT_SIG}],
}


@pytest.mark.parametrize("url", URLS)
def test_thoughts_and_signatures_are_kept_and_sent_back_in_the_canonical_order(url: str) -> None:
    live = response(candidate(*THINKING_PARTS))
    assert read(live if url == JSON_URL else [live], url) == THINKING_OUTPUT
    assert round_trip(THINKING_OUTPUT, url) == THINKING_OUTPUT
    parts = [p for c in wire_chunks(THINKING_OUTPUT, url) for p in c["candidates"][0]["content"]["parts"]]
    assert parts[0] == {
        "text": "The user wants Paris weather.",
        "thought": True,
        "thoughtSignature": THOUGHT_SIG,
    }
    assert "".join(p.get("text", "") for p in parts[1:-2]) == "I will call the tool."
    assert parts[-2] == {"functionCall": {"id": "call-0", "name": "get_weather", "args": {"city": "Paris"}},
                         "thoughtSignature": CALL_SIG}  # fmt: skip
    assert "thoughtSignature" not in parts[-1]


def test_a_streamed_thought_is_joined_until_a_signature_ends_it() -> None:
    chunks = [
        response(candidate({"text": "First, ", "thought": True}, finish=None)),
        response(candidate({"text": "the city.", "thought": True}, finish=None)),
        response(
            candidate({"thought": True, "thoughtSignature": THOUGHT_SIG}, finish=None)
        ),  # the signature alone
        response(candidate({"text": "Then ", "thought": True}, finish=None)),
        response(candidate({"text": "Sunny."}, finish=None)),
        response(candidate({"text": "", "thoughtSignature": TEXT_SIG})),  # the text's, sent last
    ]
    expected = {
        "type": "final_answer",
        "text": "Sunny.",
        "reasoning": [{"text": "First, the city.", "signature": THOUGHT_SIG}, {"text": "Then "}],
        "textSignature": TEXT_SIG,
    }
    for url in (SSE_URL, ARRAY_URL):
        assert read(chunks, url) == expected
        assert round_trip(expected, url) == expected
    last = wire_chunks(expected, SSE_URL)[-1]["candidates"][0]
    assert last["content"]["parts"] == [{"text": "Sunny.", "thoughtSignature": TEXT_SIG}]
    only_signed = {"type": "final_answer", "text": "", "reasoning": [{"signature": THOUGHT_SIG}],
                   "textSignature": TEXT_SIG}  # fmt: skip
    for url in URLS:
        assert round_trip(only_signed, url) == only_signed
    assert wire_chunks(only_signed, JSON_URL)[0]["candidates"][0]["content"]["parts"] == [
        {"thought": True, "thoughtSignature": THOUGHT_SIG},
        {"text": "", "thoughtSignature": TEXT_SIG},
    ]


def test_a_lone_signature_part_is_the_texts_and_thought_flags_on_other_parts_are_not_thoughts() -> None:
    live = response(candidate({"text": "Hi."}, {"thoughtSignature": TEXT_SIG}, {"thought": True}))
    assert read(live) == {"type": "final_answer", "text": "Hi.", "textSignature": TEXT_SIG}


def test_a_model_turn_sent_back_keeps_its_thoughts_and_signatures() -> None:
    live = response(candidate(*THINKING_PARTS))
    results = {"role": "user", "parts": [
        {"functionResponse": {"name": "get_weather", "response": {"result": "sunny"}}},
        {"functionResponse": {"name": "get_time", "response": {"result": "noon"}}},
    ]}  # fmt: skip
    sent = messages(user("Weather in Paris?"), *model_turn(live), results)
    assert sent[1] == {"role": "assistant", "content": [
        {"type": "reasoning", "text": "The user wants Paris weather.", "signature": THOUGHT_SIG},
        {"type": "text", "text": "I will call the tool."},
        {"type": "tool_use", "toolCallId": "call-0", "toolName": "get_weather",
         "toolInput": {"city": "Paris"}, "signature": CALL_SIG},
        {"type": "tool_use", "toolCallId": "call-1", "toolName": "get_time", "toolInput": {"city": "Paris"}},
    ]}  # fmt: skip
    # What replay hands back, sent back the same way (as one content, or one a chunk), normalizes alike.
    for url in URLS:
        replayed = wire_chunks(THINKING_OUTPUT, url)
        echoed = model_turn(replayed[0], chunks=replayed)
        assert messages(user("Weather in Paris?"), *echoed, results) == sent
    # The SDK sends a signature back URL-safe: the program's own base64, compared as sent.
    altered = copy.deepcopy(model_turn(live))
    altered[0]["parts"][2]["thoughtSignature"] = CALL_SIG.replace("+/", "-_")
    assert messages(user("Weather in Paris?"), *altered, results)[1]["content"][2]["signature"] == (
        CALL_SIG.replace("+/", "-_")
    )


def test_a_turn_with_none_of_the_features_reads_as_before() -> None:
    plain = {"role": "model", "parts": [{"text": "Let me "}, {"text": "look."}]}
    assert messages(user("q"), plain)[1] == {"role": "assistant", "content": "Let me look."}
    signed_text = {"role": "model", "parts": [{"text": "Done.", "thoughtSignature": TEXT_SIG}]}
    assert messages(user("q"), signed_text)[1]["content"] == [
        {"type": "text", "text": "Done.", "signature": TEXT_SIG}
    ]
    thoughts_in_a_user_turn = {"role": "user", "parts": [{"text": "x", "thought": True}, {"text": "y"}]}
    assert messages(thoughts_in_a_user_turn) == [{"role": "user", "content": "y"}]


# --- hosted tools: code execution, server-side tool calls, grounding --------------------------------


CODE = {"language": "PYTHON", "code": "print(sum(range(10)))"}
RAN = {"outcome": "OUTCOME_OK", "output": "45\n"}
CODE_OUTPUT: JsonObject = {
    "type": "final_answer",
    "text": "The sum is 45.",
    "hostedTools": [{"toolName": "code_execution", "toolInput": CODE, "result": RAN}],
}


@pytest.mark.parametrize("url", URLS)
def test_code_execution_is_a_hosted_tool_and_is_sent_back_as_its_parts(url: str) -> None:
    live = response(candidate({"executableCode": {**CODE, "id": "ec-1"}},
                              {"codeExecutionResult": {**RAN, "id": "ec-1"}},
                              {"text": "The sum is 45."}))  # fmt: skip
    assert read(live if url == JSON_URL else [live], url) == CODE_OUTPUT  # the ids are not kept
    assert round_trip(CODE_OUTPUT, url) == CODE_OUTPUT
    parts = [p for c in wire_chunks(CODE_OUTPUT, url) for p in c["candidates"][0]["content"]["parts"]]
    assert parts[:2] == [{"executableCode": CODE}, {"codeExecutionResult": RAN}]


def test_code_results_pair_with_their_code_by_id_else_with_the_last_code_waiting() -> None:
    second = {"language": "PYTHON", "code": "print(2)"}
    two = {"outcome": "OUTCOME_OK", "output": "2\n"}
    by_id = response(candidate({"executableCode": {**CODE, "id": "a"}},
                               {"executableCode": {**second, "id": "b"}},
                               {"codeExecutionResult": {**RAN, "id": "a"}},
                               {"codeExecutionResult": {**two, "id": "b"}}))  # fmt: skip
    assert read(by_id)["hostedTools"] == [
        {"toolName": "code_execution", "toolInput": CODE, "result": RAN},
        {"toolName": "code_execution", "toolInput": second, "result": two},
    ]
    alone = response(candidate({"codeExecutionResult": RAN}, {"executableCode": CODE}, finish="MAX_TOKENS"))
    output = read(alone)
    assert output["hostedTools"] == [
        {"toolName": "code_execution", "result": RAN},  # a result with no code before it
        {"toolName": "code_execution", "toolInput": CODE},  # code cut short before its result
    ]
    assert round_trip(output, JSON_URL) == output


def test_a_server_side_tool_call_is_a_hosted_tool_under_its_tool_type() -> None:
    live = response(candidate(
        {"toolCall": {"id": "t1", "toolType": "GOOGLE_SEARCH_WEB", "args": {"query": "Paris weather"}}},
        {"toolResponse": {"id": "t1", "toolType": "GOOGLE_SEARCH_WEB", "response": {"results": ["sunny"]}}},
        {"text": "Sunny."},
    ))  # fmt: skip
    output = read(live)
    assert output["hostedTools"] == [
        {
            "toolName": "google_search_web",
            "toolInput": {"query": "Paris weather"},
            "result": {"results": ["sunny"]},
        }
    ]
    for url in URLS:
        assert round_trip(output, url) == output
    parts = wire_chunks(output, JSON_URL)[0]["candidates"][0]["content"]["parts"]
    assert parts[:2] == [
        {"toolCall": {"toolType": "GOOGLE_SEARCH_WEB", "args": {"query": "Paris weather"}}},
        {"toolResponse": {"toolType": "GOOGLE_SEARCH_WEB", "response": {"results": ["sunny"]}}},
    ]


GROUNDING = {
    "webSearchQueries": ["weather Paris today"],
    "searchEntryPoint": {"renderedContent": "<div>Paris weather</div>"},
    "groundingChunks": [{"web": {"uri": "https://example.com/paris", "title": "example.com"}}],
    "groundingSupports": [{"segment": {"endIndex": 6, "text": "Sunny."}, "groundingChunkIndices": [0]}],
}


@pytest.mark.parametrize("url", URLS)
def test_grounding_is_a_hosted_tool_sent_back_on_the_candidate(url: str) -> None:
    live = response(candidate({"text": "Sunny."}, groundingMetadata=GROUNDING))
    output = read(live if url == JSON_URL else [live], url)
    assert output == {"type": "final_answer", "text": "Sunny.",
                      "hostedTools": [{"toolName": "google_search", "result": GROUNDING}]}  # fmt: skip
    assert wire_chunks(output, url)[-1]["candidates"][0]["groundingMetadata"] == GROUNDING
    assert round_trip(output, url) == output
    maps = {"groundingChunks": [{"maps": {"uri": "https://maps.example.com/x", "title": "A cafe"}}]}
    urls = {
        "urlMetadata": [
            {"retrievedUrl": "https://example.com", "urlRetrievalStatus": "URL_RETRIEVAL_STATUS_SUCCESS"}
        ]
    }
    other = read(response(candidate({"text": "Here."}, groundingMetadata=maps, urlContextMetadata=urls)))
    assert other["hostedTools"] == [{"toolName": "grounding", "result": maps},
                                    {"toolName": "url_context", "result": urls}]  # fmt: skip
    assert round_trip(other, url) == other


def test_hosted_parts_sent_back_are_kept_in_the_canonical_order() -> None:
    live = response(candidate({"text": "Computing."}, {"executableCode": {**CODE, "id": "x"}},
                              {"codeExecutionResult": {**RAN, "id": "x"}}, {"text": " 45."}))  # fmt: skip
    sent = messages(user("Sum 0..9"), *model_turn(live))
    assert sent[1]["content"] == [
        {"type": "hosted_tool", "toolName": "code_execution", "toolInput": CODE, "result": RAN},
        {"type": "text", "text": "Computing. 45."},
    ]
    output = read(live)
    for url in URLS:
        replayed = wire_chunks(output, url)
        assert messages(user("Sum 0..9"), *model_turn(replayed[0], chunks=replayed)) == sent
    changed = copy.deepcopy(model_turn(live))
    changed[0]["parts"][2]["codeExecutionResult"]["output"] = "46\n"
    assert messages(user("Sum 0..9"), *changed)[1]["content"][0]["result"]["output"] == "46\n"


# --- the order of the parts ----------------------------------------------------------------------


def chunked(*parts: JsonObject) -> list[JsonObject]:
    """A stream of one part a chunk, the last with the finishReason."""
    return [
        response(candidate(p, finish=None if n < len(parts) - 1 else "STOP")) for n, p in enumerate(parts)
    ]


def wire_parts(output: JsonObject, url: str) -> list[JsonObject]:
    """The parts replay sends, over all chunks, with the text a stream spread over several joined."""
    return joined([p for c in wire_chunks(output, url) for p in c["candidates"][0]["content"]["parts"]],
                  "thoughtSignature")  # fmt: skip


INTERLEAVED_CODE = (
    {"text": "Let me "}, {"text": "compute it."}, {"executableCode": {**CODE, "id": "x"}},
    {"codeExecutionResult": {**RAN, "id": "x"}}, {"text": "The sum "}, {"text": "is 45."},
)  # fmt: skip
INTERLEAVED_CODE_OUTPUT: JsonObject = {
    "type": "final_answer",
    "text": "Let me compute it.The sum is 45.",
    "hostedTools": [{"toolName": "code_execution", "toolInput": CODE, "result": RAN}],
    "sequence": ["text", "hosted", "text"],
    "textParts": ["Let me compute it.", "The sum is 45."],  # a piece in two parts is one piece
}
INTERLEAVED_CALL = (
    {"text": "Paris, so ", "thought": True},
    {"text": "the tool.", "thought": True, "thoughtSignature": THOUGHT_SIG},
    {"text": "I will check."},
    {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": CALL_SIG},
    {"text": "One "}, {"text": "moment.", "thoughtSignature": TEXT_SIG},
)  # fmt: skip
INTERLEAVED_CALL_OUTPUT: JsonObject = {
    "type": "tool_calls",
    "calls": [{"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Paris"},
               "signature": CALL_SIG}],
    "text": "I will check.One moment.",
    "reasoning": [{"text": "Paris, so the tool.", "signature": THOUGHT_SIG}],
    "textSignature": TEXT_SIG,
    "sequence": ["reasoning", "text", "call", "text"],
    "textParts": ["I will check.", "One moment."],
}  # fmt: skip


@pytest.mark.parametrize("url", URLS)
@pytest.mark.parametrize(("parts", "expected"), [(INTERLEAVED_CODE, INTERLEAVED_CODE_OUTPUT),
                                                 (INTERLEAVED_CALL, INTERLEAVED_CALL_OUTPUT)])  # fmt: skip
def test_interleaved_parts_are_read_and_sent_back_in_their_order(
    url: str, parts: tuple[JsonObject, ...], expected: JsonObject
) -> None:
    live = response(candidate(*parts))
    assert read(live if url == JSON_URL else chunked(*parts), url) == expected
    assert round_trip(expected, url) == expected

    # The parts in the order they came, text joined as the SDK's response.text joins it, ids aside;
    # each signature on the part it came on.
    def plain(found: list[JsonObject]) -> list[JsonObject]:
        return [{k: ({f: v for f, v in value.items() if f != "id"} if isinstance(value, dict) else value)
                 for k, value in part.items() if value is not None} for part in found]  # fmt: skip

    sent = wire_parts(expected, url)
    ids = [c["toolCallId"] for c in expected.get("calls", [])]
    assert [p["functionCall"]["id"] for p in sent if "functionCall" in p] == ids  # the neutral ids
    assert plain(sent) == plain(joined(list(parts), "thoughtSignature"))


def test_an_answer_in_the_canonical_order_carries_no_order() -> None:
    streamed = chunked({"text": "Sun"}, {"text": "ny "}, {"text": "in Paris."})
    assert read(streamed, SSE_URL) == {"type": "final_answer", "text": "Sunny in Paris."}
    canonical = chunked({"text": "Hm.", "thought": True}, {"executableCode": CODE},
                        {"codeExecutionResult": RAN}, {"text": "45."},
                        {"functionCall": {"name": "f", "args": {}}}, {"text": ""})  # fmt: skip
    output = read(canonical, SSE_URL)
    assert "sequence" not in output and "textParts" not in output  # a stream's last empty part is no part
    for url in URLS:
        assert round_trip(output, url) == output
    assert [next(iter(p)) for p in wire_parts(output, JSON_URL)] == [
        "text",
        "executableCode",
        "codeExecutionResult",
        "text",
        "functionCall",
    ]


def test_another_part_ends_a_thought() -> None:
    output = read(
        response(candidate({"text": "A", "thought": True}, {"text": "B"}, {"text": "C", "thought": True}))
    )
    assert output == {"type": "final_answer", "text": "B", "reasoning": [{"text": "A"}, {"text": "C"}],
                      "sequence": ["reasoning", "text", "reasoning"]}  # fmt: skip
    assert round_trip(output, SSE_URL) == output


def test_an_interleaved_turn_sent_back_normalizes_as_the_live_one() -> None:
    answer = {"functionResponse": {"name": "get_weather", "response": {"result": "sunny"}}}
    results = {"role": "user", "parts": [answer]}
    live = response(candidate(*INTERLEAVED_CALL))
    sent = messages(user("Weather?"), *model_turn(live), results)
    assert sent[1]["content"] == [  # the canonical order, the text joined
        {"type": "reasoning", "text": "Paris, so the tool.", "signature": THOUGHT_SIG},
        {"type": "text", "text": "I will check.One moment.", "signature": TEXT_SIG},
        {"type": "tool_use", "toolCallId": "call-0", "toolName": "get_weather",
         "toolInput": {"city": "Paris"}, "signature": CALL_SIG},
    ]  # fmt: skip
    for url in URLS:
        replayed = wire_chunks(INTERLEAVED_CALL_OUTPUT, url)
        assert messages(user("Weather?"), *model_turn(replayed[0], chunks=replayed), results) == sent


# --- several candidates ---------------------------------------------------------------------------


def test_every_candidate_is_a_choice_and_their_calls_are_numbered_after_the_first() -> None:
    weather = {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}
    lyon = {"functionCall": {"name": "get_weather", "args": {"city": "Lyon"}}}
    live = response(candidate({"text": "Red."}, index=1, finish="MAX_TOKENS"), candidate(weather, index=0),
                    candidate(lyon, {"text": "Lyon it is."}, index=2))  # fmt: skip
    ids = CallIds()
    output = read(live, ids=ids)
    assert output == {
        "type": "tool_calls",
        "calls": [{"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Paris"}}],
        "choices": [
            {"type": "final_answer", "text": "Red.", "stopReason": "max_tokens"},
            {"type": "tool_calls", "text": "Lyon it is.",
             "calls": [{"toolCallId": "call-1", "toolName": "get_weather", "toolInput": {"city": "Lyon"}}],
             "sequence": ["call", "text"]},  # the call came before the text
        ],
    }  # fmt: skip
    # The program sends candidate 2's call back without an id: it is the call the model made.
    sent = at(JSON_URL).model_input({"contents": [user("q"), {"role": "model", "parts": [lyon]}]}, ids)
    assert sent["messages"][1]["content"][0]["toolCallId"] == "call-1"
    for url in URLS:
        assert round_trip(output, url) == output
        for chunk in wire_chunks(output, url):
            assert len({c["index"] for c in chunk["candidates"]}) == len(chunk["candidates"])


def test_a_stream_of_several_candidates_is_read_by_index() -> None:
    chunks = [
        response(
            candidate({"text": "Bl"}, finish=None, index=None),
            candidate({"text": "Re"}, finish=None, index=1),
        ),
        response(candidate({"text": "d."}, index=1)),  # only candidate 1 goes on
        response(candidate({"text": "ue."}, index=0)),
    ]
    expected = {
        "type": "final_answer",
        "text": "Blue.",
        "choices": [{"type": "final_answer", "text": "Red."}],
    }
    assert read(chunks, SSE_URL) == expected
    long = {"type": "final_answer", "text": "a" * 200, "choices": [{"type": "final_answer", "text": "b"}]}
    streamed = wire_chunks(long, SSE_URL)
    assert [len(c["candidates"]) for c in streamed][:2] == [2, 1]  # candidate 1 is done after one chunk
    assert round_trip(long, SSE_URL) == long


# --- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ({"type": "final_answer", "text": "", "reasoning": "x"}, "field reasoning must be a list"),
        ({"type": "final_answer", "text": "", "reasoning": [{"signature": 1}]}, "reasoning[0].signature"),
        ({"type": "final_answer", "text": "", "textSignature": 5}, "field textSignature must be a string"),
        ({"type": "final_answer", "text": "", "stopReason": 5}, "field stopReason must be a string"),
        ({"type": "final_answer", "hostedTools": [{"toolName": "code_execution", "toolInput": "x"}]},
         "the code is not a JSON object"),
        ({"type": "final_answer", "text": "", "hostedTools": [{"toolName": "google_search", "result": []}]},
         "the result of google_search is not a JSON object"),
        ({"type": "final_answer", "text": "", "hostedTools": [{"toolName": 3}]}, "hostedTools[0].toolName"),
        ({"type": "final_answer", "text": "", "choices": [{"type": "nothing"}]}, "choices[0].type"),
        ({"type": "tool_calls", "calls": [{"toolCallId": "call-0", "toolName": "f", "toolInput": {},
                                           "signature": 1}]}, "the signature of call-0 is not a string"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("url", URLS)
def test_a_malformed_output_cannot_be_sent_and_says_which_field(
    url: str, output: JsonObject, message: str
) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        at(url).wire_response(output, {})


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (response(candidate({"text": "x", "thoughtSignature": 7})), "a thoughtSignature is not a string"),
        (response(candidate({"text": "x"}, finish=None, finishReason=3)), "finishReason is not a string"),
        (response(candidate({"text": "x"}, index="0")), "a candidate's index is not an integer"),
        (response(candidate({"executableCode": "print(1)"})), "executableCode is not a JSON object"),
    ],
)
def test_a_malformed_response_is_a_clear_value_error(body: JsonObject, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        read(body)


def test_a_malformed_part_sent_back_is_a_clear_value_error() -> None:
    bad: list[tuple[JsonObject, str]] = [
        ({"text": "x", "thought": True, "thoughtSignature": {}}, "a thoughtSignature"),
        ({"codeExecutionResult": [1]}, "codeExecutionResult is not a JSON object"),
    ]
    for part, message in bad:
        with pytest.raises(ValueError, match=message):
            messages(user("q"), {"role": "model", "parts": [part]})


def test_a_malformed_extra_in_a_cassette_is_one_clear_error_naming_the_step(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    canned = CannedProvider([response(candidate({"text": "Hi."}))])
    with canned, otel_blackbox.session(mode="record", cassette=path):
        assert ask(canned.url, "Say hi") == "Hi."
    base_url = canned.url
    for bad, message in [
        ({"reasoning": [{"signature": 42}]}, "field reasoning[0].signature must be a string, not int"),
    ]:
        cassette = load_cassette(path)
        output = next(s for s in cassette.steps if s.type == "model_output")
        output.payload.update(bad)
        broken = tmp_path / "broken.json"
        save_cassette(resealed(cassette), broken)  # a well-formed chain: only the field is wrong
        with pytest.raises(CassetteError) as refused, otel_blackbox.session(mode="replay", cassette=broken):
            ask(base_url, "Say hi")
        assert str(refused.value) == f"{broken}: step {output.index} (model_output): {message}"
    # A field of the right type that Gemini cannot send (code that is not an object): the program gets
    # a 400, and the run one divergence naming the step's request and the field.
    cassette = load_cassette(path)
    output = next(s for s in cassette.steps if s.type == "model_output")
    output.payload["hostedTools"] = [{"toolName": "code_execution", "toolInput": "print(1)"}]
    broken = tmp_path / "unsendable.json"
    save_cassette(resealed(cassette), broken)
    with (
        pytest.raises(ReplayDivergence) as diverged,
        blocked_network(),
        otel_blackbox.session(mode="replay", cassette=broken),
    ):
        ask(base_url, "Say hi")
    assert str(diverged.value).endswith("ValueError: the code is not a JSON object, as Gemini's is")


def ask(base_url: str, question: str) -> str:
    client = genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=base_url))
    try:
        return str(client.models.generate_content(model=MODEL, contents=question).text)
    finally:
        client.close()


# --- the feature cells: the real SDK, recorded, replayed offline, and a changed value ----------------

Send = Callable[[Any, types.GenerateContentConfig], Awaitable[list[types.GenerateContentResponse]]]
# What the program received that no replay can give back as it was: ids, usage, timestamps, HTTP
# headers; and safety ratings, which the translation does not keep (gemini.py's docstring).
NOT_COMPARED = ("response_id", "usage_metadata", "model_version", "create_time", "sdk_http_response")
NOT_KEPT = ("safety_ratings",)


def sender(base_url: str, mode: str, wire: str) -> tuple[Send, Callable[[], None]]:
    client = genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=base_url))

    async def send(contents: Any, config: types.GenerateContentConfig) -> list[types.GenerateContentResponse]:
        kwargs: dict[str, Any] = {"model": MODEL, "contents": contents, "config": config}
        if mode == "sync":
            if wire == "json":
                return [client.models.generate_content(**kwargs)]
            return list(client.models.generate_content_stream(**kwargs))
        if wire == "json":
            return [await client.aio.models.generate_content(**kwargs)]
        return [chunk async for chunk in await client.aio.models.generate_content_stream(**kwargs)]

    return send, client.close


def sent_back(chunks: list[types.GenerateContentResponse], index: int = 0) -> list[types.Content]:
    """A candidate's content as a program sends it back: one content a chunk, as the SDK's chats do."""
    return [
        c.content
        for chunk in chunks
        for c in chunk.candidates or []
        if (c.index or 0) == index and c.content is not None
    ]


def joined(parts: list[JsonObject], signature: str) -> list[JsonObject]:
    """Parts with the text a stream spread over several joined: a text part (or a thought) goes on the
    one before it when both are text of the same kind and that one has no signature yet."""
    out: list[JsonObject] = []
    for part in parts:
        previous = out[-1] if out else None
        if (
            previous is not None
            and _texty(previous, signature)
            and _texty(part, signature)
            and bool(previous.get("thought")) == bool(part.get("thought"))
            and previous.get(signature) is None
        ):
            texts = [t for t in (previous.get("text"), part.get("text")) if t is not None]
            out[-1] = {**previous, "text": "".join(texts) if texts else None, signature: part.get(signature)}
        else:
            out.append(dict(part))
    return out


def _texty(part: JsonObject, signature: str) -> bool:
    data = [k for k, v in part.items() if v is not None and k not in ("text", "thought", signature)]
    return not data and (part.get("text") is not None or bool(part.get("thought")))


def merged(chunks: list[JsonObject], signature: str) -> JsonObject:
    """A stream's chunks as one response: each candidate's parts in order (text joined), its other fields
    the last sent."""
    out: JsonObject = {}
    candidates: dict[int, JsonObject] = {}
    for chunk in chunks:
        for position, found in enumerate(chunk.get("candidates") or []):
            index = found.get("index") or position
            into = candidates.setdefault(index, {"parts": []})
            into["parts"] += (found.get("content") or {}).get("parts") or []
            into.update({k: v for k, v in found.items() if k != "content" and v is not None})
        out.update({k: v for k, v in chunk.items() if k != "candidates" and v is not None})
    for into in candidates.values():
        parts = into.pop("parts")
        into["content"] = {"role": "model", "parts": joined(parts, signature)} if parts else None
    if candidates:
        out["candidates"] = [candidates[i] for i in sorted(candidates)]
    return out


def as_json(chunks: list[JsonObject]) -> JsonObject:
    """The response the API sends without streaming, for a stream's chunks."""
    response_ = merged(chunks, "thoughtSignature")
    for found in response_.get("candidates", []):
        if found["content"] is None:
            del found["content"]
    return response_


def view(chunks: list[types.GenerateContentResponse], wire: str) -> JsonObject:
    """What the program received, less what no replay gives back (ids, usage...): model_dump()s."""
    dumps = [c.model_dump() for c in chunks]
    for dump in dumps:
        for key in NOT_COMPARED:
            dump.pop(key, None)
        for found in [*(dump.get("candidates") or []), dump.get("prompt_feedback") or {}]:
            for key in NOT_KEPT:
                found.pop(key, None)
            for part in (found.get("content") or {}).get("parts") or []:
                if part.get("function_call"):
                    part["function_call"].pop("id")  # replay hands out call-N
    if wire == "json":
        (dump,) = dumps
        return dump
    return merged(dumps, "thought_signature")


@dataclass(frozen=True)
class Feature:
    """A feature cell: the responses (each as a stream's chunks; the JSON form is derived), the
    program, what it must have received live, and the recorded and changed values of its divergence."""

    responses: list[list[JsonObject]]
    program: Callable[[Send, bool], Awaitable[list[list[types.GenerateContentResponse]]]]
    check: Callable[[list[list[types.GenerateContentResponse]]], None]
    diverged: tuple[Any, Any]


def text_of(chunks: list[types.GenerateContentResponse]) -> str:
    return "".join(p.text or "" for c in sent_back(chunks) for p in c.parts or [] if not p.thought)


def kinds_of(chunks: list[types.GenerateContentResponse]) -> list[str]:
    """The kinds of the parts the program received, in order; parts of one kind in a row are one."""
    kinds: list[str] = []
    for part in (p for c in sent_back(chunks) for p in c.parts or []):
        kind = "thought" if part.thought else "text" if part.text is not None else ""
        kind = kind or next(k for k in ("function_call", "executable_code", "code_execution_result")
                            if getattr(part, k) is not None)  # fmt: skip
        kinds += [kind] if not kinds or kinds[-1] != kind else []
    return kinds


def finish_of(chunks: list[types.GenerateContentResponse]) -> Any:
    return [c.finish_reason for chunk in chunks for c in chunk.candidates or [] if c.finish_reason][-1]


RATINGS = [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}]
POEM = "Write a poem about roses."


async def stop_reason_program(send: Send, changed: bool) -> list[list[types.GenerateContentResponse]]:
    short = types.GenerateContentConfig(max_output_tokens=32 if changed else 16)
    first = await send(POEM, short)
    question = types.Content(role="user", parts=[types.Part.from_text(text=POEM)])
    go_on = types.Content(role="user", parts=[types.Part.from_text(text="Go on, and make it dark.")])
    second = await send([question, *sent_back(first), go_on], short)  # continues the cut answer
    blocked = await send("Something the API blocks outright.", types.GenerateContentConfig())
    return [first, second, blocked]


def stop_reason_check(got: list[list[types.GenerateContentResponse]]) -> None:
    first, second, blocked = got
    assert text_of(first) == "Roses are red, violets" and finish_of(first) == types.FinishReason.MAX_TOKENS
    assert finish_of(second) == types.FinishReason.SAFETY and not sent_back(second)
    assert blocked[0].candidates is None and blocked[0].prompt_feedback is not None
    assert blocked[0].prompt_feedback.block_reason == types.BlockedReason.SAFETY


WEATHER = types.FunctionDeclaration(
    name="get_weather",
    description="The weather in a city.",
    parameters_json_schema={"type": "object", "properties": {"city": {"type": "string"}}},
)
NO_AFC = types.AutomaticFunctionCallingConfig(disable=True)
QUESTION = "What's the weather in Paris?"


def question() -> types.Content:
    return types.Content(role="user", parts=[types.Part.from_text(text=QUESTION)])


def weather_result(name: str = "get_weather") -> types.Content:
    return types.Content(
        role="user", parts=[types.Part.from_function_response(name=name, response={"result": "sunny, 24C"})]
    )


async def thinking_program(send: Send, changed: bool) -> list[list[types.GenerateContentResponse]]:
    config = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=[WEATHER])],
        thinking_config=types.ThinkingConfig(include_thoughts=True),
        automatic_function_calling=NO_AFC,
    )
    first = await send([question()], config)
    turn = [c.model_copy(deep=True) for c in sent_back(first)]
    if changed:  # the program tampers with the call's signature it sends back
        call = next(p for c in turn for p in c.parts or [] if p.function_call)
        call.thought_signature = b"tampered"
    second = await send([question(), *turn, weather_result()], config)
    return [first, second]


def thinking_check(got: list[list[types.GenerateContentResponse]]) -> None:
    first, second = got
    parts = [p for c in sent_back(first) for p in c.parts or []]
    assert [p.thought_signature for p in parts if p.thought and p.thought_signature] == [
        base64.b64decode(THOUGHT_SIG)
    ]
    assert [p.thought_signature for p in parts if p.function_call] == [base64.b64decode(CALL_SIG)]
    assert kinds_of(first) == ["thought", "text", "function_call", "text"]
    assert text_of(first) == "Let me check the weather.One moment."
    assert text_of(second) == "It is sunny in Paris."
    assert base64.b64decode(TEXT_SIG) in [
        p.thought_signature for c in sent_back(second) for p in c.parts or []
    ]


async def code_execution_program(send: Send, changed: bool) -> list[list[types.GenerateContentResponse]]:
    config = types.GenerateContentConfig(tools=[types.Tool(code_execution=types.ToolCodeExecution())])
    ask_ = types.Content(role="user", parts=[types.Part.from_text(text="Sum 0 to 9, run code.")])
    first = await send([ask_], config)
    turn = [c.model_copy(deep=True) for c in sent_back(first)]
    if changed:  # the program alters the result of the code Gemini ran, in the history it sends
        ran = next(p for c in turn for p in c.parts or [] if p.code_execution_result)
        assert ran.code_execution_result is not None
        ran.code_execution_result.output = "46\n"
    double = types.Content(role="user", parts=[types.Part.from_text(text="Double it.")])
    second = await send([ask_, *turn, double], config)
    return [first, second]


def code_execution_check(got: list[list[types.GenerateContentResponse]]) -> None:
    parts = [p for c in sent_back(got[0]) for p in c.parts or []]
    assert [p.executable_code.code for p in parts if p.executable_code] == [CODE["code"]]
    assert [p.code_execution_result.output for p in parts if p.code_execution_result] == ["45\n"]
    assert text_of(got[0]) == "I will run some code.The sum is 45." and text_of(got[1]) == "Doubled: 90."
    assert kinds_of(got[0]) == ["text", "executable_code", "code_execution_result", "text"]


async def grounding_program(send: Send, changed: bool) -> list[list[types.GenerateContentResponse]]:
    tool = (
        types.Tool(url_context=types.UrlContext())
        if changed
        else types.Tool(google_search=types.GoogleSearch())
    )
    config = types.GenerateContentConfig(tools=[tool])
    first = await send([question()], config)
    all_day = types.Content(role="user", parts=[types.Part.from_text(text="All day?")])
    second = await send([question(), *sent_back(first), all_day], config)
    return [first, second]


def grounding_check(got: list[list[types.GenerateContentResponse]]) -> None:
    metadata = [
        c.grounding_metadata for chunk in got[0] for c in chunk.candidates or [] if c.grounding_metadata
    ]
    assert metadata[-1].web_search_queries == ["weather Paris today"]


async def candidates_program(send: Send, changed: bool) -> list[list[types.GenerateContentResponse]]:
    config = types.GenerateContentConfig(
        candidate_count=3 if changed else 2,
        tools=[types.Tool(function_declarations=[WEATHER])],
        automatic_function_calling=NO_AFC,
    )
    first = await send([question()], config)
    chosen = sent_back(first, index=1)  # the program goes on with the second candidate
    plain = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=[WEATHER])], automatic_function_calling=NO_AFC
    )
    second = await send([question(), *chosen, weather_result()], plain)
    return [first, second]


def candidates_check(got: list[list[types.GenerateContentResponse]]) -> None:
    calls = [
        (c.index or 0, p.function_call.args)
        for chunk in got[0]
        for c in chunk.candidates or []
        for p in (c.content.parts or [] if c.content else [])
        if p.function_call
    ]
    assert calls == [(0, {"city": "Paris"}), (1, {"city": "Lyon"})]
    assert text_of(got[1]) == "Lyon is sunny."


FEATURES: dict[str, Feature] = {
    "stop_reason": Feature(
        responses=[
            [response(candidate({"text": "Roses are red,"}, finish=None)),
             response(candidate({"text": " violets"}, finish="MAX_TOKENS"))],
            [response(candidate(finish="SAFETY", safetyRatings=RATINGS))],
            [{"promptFeedback": {"blockReason": "SAFETY", "safetyRatings": RATINGS},
              "usageMetadata": {"promptTokenCount": 7}, "modelVersion": MODEL}],
        ],
        program=stop_reason_program,
        check=stop_reason_check,
        diverged=(16, 32),
    ),
    "thinking": Feature(
        responses=[
            [response(candidate({"text": "The user asks about Paris. ", "thought": True}, finish=None)),
             response(candidate({"text": "I need the weather tool.", "thought": True}, finish=None)),
             response(candidate({"thought": True, "thoughtSignature": THOUGHT_SIG}, finish=None)),
             response(candidate({"text": "Let me check "}, finish=None)),
             response(candidate({"text": "the weather."}, finish=None)),
             response(candidate({"functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
                                 "thoughtSignature": CALL_SIG}, finish=None)),
             response(candidate({"text": "One moment."}))],
            [response(candidate({"text": "Sunny: say so.", "thought": True}, finish=None)),
             response(candidate({"text": "It is sunny "}, finish=None)),
             response(candidate({"text": "in Paris.", "thoughtSignature": TEXT_SIG}))],
        ],
        program=thinking_program,
        check=thinking_check,
        # The SDK sends the signature back in URL-safe base64: what it sent when recording, and what it
        # sends for the program's b"tampered".
        diverged=(CALL_SIG.replace("+/", "-_"), base64.urlsafe_b64encode(b"tampered").decode()),
    ),
    "code_execution": Feature(
        responses=[
            [response(candidate({"text": "I will run "}, finish=None)),
             response(candidate({"text": "some code."}, finish=None)),
             response(candidate({"executableCode": CODE}, finish=None)),
             response(candidate({"codeExecutionResult": RAN}, finish=None)),
             response(candidate({"text": "The sum "}, finish=None)),
             response(candidate({"text": "is 45."}))],
            [response(candidate({"text": "Doubled: 90."}))],
        ],
        program=code_execution_program,
        check=code_execution_check,
        diverged=("45\n", "46\n"),
    ),
    "grounding": Feature(
        responses=[
            [response(candidate({"text": "Sunny "}, finish=None)),
             response(candidate({"text": "in Paris."}, groundingMetadata=GROUNDING))],
            [response(candidate({"text": "Yes, all day."}))],
        ],
        program=grounding_program,
        check=grounding_check,
        diverged=("googleSearch", "urlContext"),
    ),
    "candidates": Feature(
        responses=[
            [response(candidate({"text": "Checking Lyon."}, finish=None, index=1)),
             response(candidate({"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}),
                      candidate({"functionCall": {"name": "get_weather", "args": {"city": "Lyon"}}},
                                index=1))],
            [response(candidate({"text": "Lyon is sunny."}))],
        ],
        program=candidates_program,
        check=candidates_check,
        diverged=(2, 3),
    ),
}  # fmt: skip
CELLS = [(f, m, w) for f in FEATURES for m in ("sync", "async") for w in ("json", "sse")]


def run(feature: Feature, base_url: str, mode: str, wire: str, *, changed: bool = False) -> list[JsonObject]:
    async def go() -> list[list[types.GenerateContentResponse]]:
        send, close = sender(base_url, mode, wire)
        try:
            return await feature.program(send, changed)
        finally:
            close()

    got = asyncio.run(go())
    feature.check(got)
    return [view(chunks, wire) for chunks in got]


@pytest.mark.parametrize(("name", "mode", "wire"), CELLS, ids=[f"gemini-{f}-{m}-{w}" for f, m, w in CELLS])
def test_feature(tmp_path: Path, name: str, mode: str, wire: str) -> None:
    feature = FEATURES[name]
    bodies = [Raw("text/event-stream", sse(*chunks)) if wire == "sse" else as_json(chunks)
              for chunks in feature.responses]  # fmt: skip
    path = tmp_path / "feature.json"
    with CannedProvider(bodies) as canned:
        with otel_blackbox.session(mode="record", cassette=path):
            live = run(feature, canned.url, mode, wire)
        assert len(canned.requests) == len(feature.responses)
    assert KEY not in path.read_text()
    report = verify_cassette(load_cassette(path))
    assert report.passed, report.to_json()

    # The provider is stopped and no socket may open: every answer comes from the cassette.
    with blocked_network() as attempts, otel_blackbox.session(mode="replay", cassette=path):
        replayed = run(feature, canned.url, mode, wire)
    assert attempts == []
    assert replayed == live

    with (
        pytest.raises(ReplayDivergence) as diverged,
        blocked_network(),
        otel_blackbox.session(mode="replay", cassette=path),
    ):
        run(feature, canned.url, mode, wire, changed=True)
    recorded, changed = feature.diverged
    assert f"recorded {json.dumps(recorded)}, got {json.dumps(changed)}" in str(diverged.value)
