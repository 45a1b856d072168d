"""Gemini tool results: a JSON object goes over as the object, never as escaped JSON inside JSON.

An incident recorded on OpenAI Chat (its tool's message is the JSON text ``{"order_id": 42, ...}``)
is rerun by the built-in agent on Gemini through google-genai against the fake provider: the body the
server received holds the object. The child then replays offline with the same agent. And the
translation both ways: each shape of result written as a ``functionResponse`` and read back.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_llm import FakeLLMServer
from helpers import blocked_network
from test_builtin_rerun import KEYS, MODEL_OF, OrderAPI, record_incident

from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.verify import verify_cassette
from otel_blackbox._playback.agent.run import BuiltInRerun, replay_built_in, rerun_built_in
from otel_blackbox._types import JsonObject
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.gemini.translation import GeminiGenerateContent

GEMINI = GeminiGenerateContent()
ORDER = {"order_id": 42, "status": "shipped"}  # what OrderAPI answers the incident's lookup_order


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with FakeLLMServer() as server:
        yield server


def function_responses(body: JsonObject) -> list[JsonObject]:
    return [p["functionResponse"] for c in body["contents"] for p in c["parts"] if "functionResponse" in p]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_a_chat_tool_s_json_text_reaches_gemini_as_an_object(
    llm: FakeLLMServer, tmp_path: Path, stream: bool
) -> None:
    incident_path = tmp_path / "incident.json"
    record_incident(llm, "openai-chat", incident_path)
    recorded = [s.payload for s in load_cassette(incident_path).steps if s.type == "tool_result"]
    assert [json.loads(r["result"]) for r in recorded] == [ORDER]  # JSON text, as Chat carries it
    assert isinstance(recorded[0]["result"], str)

    child_path = tmp_path / "child.json"
    plan = BuiltInRerun(
        output=child_path,
        provider="gemini",
        model=MODEL_OF["gemini"],
        stream=stream,
        base_url=llm.gemini_base_url,
    )
    with OrderAPI() as orders:
        assert rerun_built_in(incident_path, plan) == 0
        assert orders.received == []
    sent = [
        body for path, body in llm.requests if ":generateContent" in path or ":streamGenerateContent" in path
    ]
    responses = [r for body in sent for r in function_responses(body)]
    assert responses and all(r["response"] == ORDER for r in responses), responses  # the object itself

    child = load_cassette(child_path)
    assert verify_cassette(child).passed
    inputs = [s.payload for s in child.steps if s.type == "model_input"]
    results = [p for m in inputs[-1]["messages"] if isinstance(m["content"], list) for p in m["content"]]
    assert [p["result"] for p in results if p["type"] == "tool_result"] == [ORDER]  # read back: the object

    # The replay sends what the rerun sent: it matches the recorded requests, offline.
    with blocked_network() as attempts:
        assert replay_built_in(child_path) == 0
    assert attempts == []


def result(value: Any) -> JsonObject:
    return {"type": "tool_result", "toolCallId": "call-0", "toolName": "lookup", "result": value}


def model_input(part: JsonObject) -> JsonObject:
    return {
        "messages": [
            {"role": "user", "content": "Look it up."},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "toolCallId": "call-0", "toolName": "lookup", "toolInput": {}}
                ],
            },
            {"role": "user", "content": [part]},
        ],
        "tools": [],
    }


OBJECT = {"ok": True, "n": 2}
# (a neutral result, the functionResponse.response written, the result read back from it)
CASES: dict[str, tuple[Any, Any, Any]] = {
    "JSON text of an object": ('{"ok": true, "n": 2}', OBJECT, OBJECT),
    "an object": (OBJECT, OBJECT, OBJECT),
    "JSON text of an object of one result field": ('{"result": 5}', {"result": {"result": 5}}, {"result": 5}),
    "JSON text of an object of one error field": (
        '{"error": "no"}',
        {"result": {"error": "no"}},
        {"error": "no"},
    ),
    "text": ("shipped", {"result": "shipped"}, "shipped"),
    "text that only starts like an object": ("{not json", {"result": "{not json"}, "{not json"),
    "JSON text with NaN": ('{"x": NaN}', {"result": '{"x": NaN}'}, '{"x": NaN}'),
    "JSON text of a list": ("[1, 2]", {"result": "[1, 2]"}, "[1, 2]"),
    "a number": (3, {"result": 3}, 3),
}


def written_and_read(part: JsonObject, native: bool) -> tuple[JsonObject, list[JsonObject]]:
    """The functionResponse ``part`` is written as, and the part it reads back as."""
    body = GEMINI.wire_request(model_input(part), stream=False, native=native).body
    (sent,) = function_responses(body)
    read = GEMINI.model_input(body, CallIds())
    # Written again, what was read back is sent as it was the first time.
    again = GEMINI.wire_request(read, stream=False, native=True).body
    assert function_responses(again) == [sent]
    return sent, read["messages"][-1]["content"]


@pytest.mark.parametrize(("value", "response", "read_back"), CASES.values(), ids=CASES.keys())
@pytest.mark.parametrize("native", [True, False], ids=["native", "from another API"])
def test_each_result_is_written_and_read_back(
    value: Any, response: Any, read_back: Any, native: bool
) -> None:
    sent, read = written_and_read(result(value), native)
    assert sent == {"id": "call-0", "name": "lookup", "response": response}
    assert read == [result(read_back)]


def test_an_error_is_sent_under_error_and_read_back_as_one() -> None:
    error = {"type": "tool_result", "toolCallId": "call-0", "toolName": "lookup", "error": "timeout"}
    sent, read = written_and_read(error, native=False)
    assert sent["response"] == {"error": "timeout"}
    assert read == [error]
