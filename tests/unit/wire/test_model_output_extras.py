"""The model_output fields beyond text and calls (cassette/output.py), and tool results compared as JSON.

Bad input: a malformed field in a recorded cassette is one CassetteError naming the step (the CLI's
one line, exit 2), and in a script one SessionError naming the reply, before anything is answered.
Tool results: a result that is JSON text on both sides compares as a JSON value; other text as text.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import openai
import pytest
import weather_agent
from fake_llm import FakeLLMServer
from helpers import EXAMPLES, CannedProvider, blocked_network, run_cli
from opentelemetry.sdk.trace import TracerProvider

import otel_blackbox
from otel_blackbox._cassette.io import load_cassette, save_cassette
from otel_blackbox._cassette.model import comparable_results, observed_view
from otel_blackbox._cassette.output import (
    Extras,
    Hosted,
    Reasoning,
    check_output,
    extras_of,
    ordered,
    sequence_of,
    with_extras,
)
from otel_blackbox._cassette.trusted import resealed
from otel_blackbox._cassette.verify import verify_cassette
from otel_blackbox._playback.script import check_replies
from otel_blackbox.errors import CassetteError, ReplayDivergence, SessionError

QUESTION = "What's the weather in Lisbon, and the 2 day forecast? I need both."
KEY = "sk-test-extras-0123456789abcdef"

BAD_FIELDS: list[tuple[dict[str, Any], str]] = [
    ({"stopReason": 3}, "field stopReason must be a string, not int"),
    ({"stopSequence": ["x"]}, "field stopSequence must be a string, not list"),
    ({"refusal": {"text": "no"}}, "field refusal must be a string, not dict"),
    ({"reasoning": "thinking"}, "field reasoning must be a list, not str"),
    ({"reasoning": ["thinking"]}, "field reasoning[0] must be an object, not str"),
    ({"reasoning": [{"signature": 1}]}, "field reasoning[0].signature must be a string, not int"),
    ({"reasoning": [{"summary": "s"}]}, "field reasoning[0].summary must be a list of strings"),
    ({"hostedTools": [{"toolInput": {}}]}, "field hostedTools[0].toolName must be a string"),
    (
        {"hostedTools": [{"toolName": "web_search", "status": 2}]},
        "field hostedTools[0].status must be a string",
    ),
    ({"choices": [{"text": "b"}]}, "field choices[0].type must be final_answer or tool_calls"),
    ({"choices": [{"type": "final_answer", "text": "b", "stopReason": 1}]}, "(in choices[0])"),
    ({"textSignature": 7}, "field textSignature must be a string, not int"),
    ({"sequence": "text"}, "field sequence must be a list of reasoning, hosted, text, call"),
    ({"sequence": ["text", "image"]}, "field sequence must be a list of reasoning, hosted, text, call"),
    ({"sequence": ["text", "text"]}, "field sequence names 2 text parts, the output has 1"),
    ({"sequence": ["text", "text"], "textParts": ["a", 1]}, "field textParts must be a list of strings"),
    ({"sequence": ["text", "text"], "textParts": ["b", "a"]}, "field textParts must join to the text"),
    ({"sequence": ["reasoning", "text"]}, "field sequence names 1 reasoning parts, the output has 0"),
]


@pytest.mark.parametrize(
    ("extra", "message"), BAD_FIELDS, ids=[next(iter(e)) + str(n) for n, (e, _) in enumerate(BAD_FIELDS)]
)
def test_a_malformed_field_names_itself(extra: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=r"^field ") as raised:
        check_output({"type": "final_answer", "text": "a", **extra})
    assert message in str(raised.value)


def test_the_order_of_the_parts_is_kept_only_when_it_is_not_the_canonical_one() -> None:
    assert sequence_of(["reasoning", "hosted", "text", "call", "call"], ["t"]) == (None, None)
    kinds, texts = ["text", "hosted", "text", "call"], ["I'll search. ", "Lisbon: sunny."]
    assert sequence_of(kinds, texts) == (kinds, texts)
    assert sequence_of(["text", "text"], ["a", "b"]) == (["text", "text"], ["a", "b"])  # two pieces
    call = {"toolCallId": "call-0", "toolName": "f", "toolInput": {}}
    extras = Extras(hosted=[Hosted("web_search", result=[1])], sequence=kinds, text_parts=texts)
    output = with_extras({"type": "tool_calls", "text": "".join(texts), "calls": [call]}, extras)
    check_output(output)
    read = extras_of(output)
    assert read == extras
    assert [(kind, value) for kind, value in ordered(output, read, [call])] == [
        ("text", "I'll search. "),
        ("hosted", Hosted("web_search", result=[1])),
        ("text", "Lisbon: sunny."),
        ("call", call),
    ]
    plain = {"type": "tool_calls", "text": "t", "calls": [call]}
    assert ordered(plain, extras_of(plain), [call]) == [("text", "t"), ("call", call)]


def test_a_malformed_call_signature_names_the_call() -> None:
    calls = [{"toolCallId": "call-0", "toolName": "f", "toolInput": {}, "signature": 5}]
    with pytest.raises(ValueError, match=r"field calls\[0\]\.signature must be a string"):
        check_output({"type": "tool_calls", "calls": calls})


def test_extras_round_trip_and_stay_absent_when_they_say_nothing() -> None:
    plain = {"type": "final_answer", "text": "a"}
    assert with_extras(dict(plain), Extras()) == plain  # a run with none of them hashes as before
    extras = Extras(
        stop_reason="max_tokens",
        refusal="I can't help with that.",
        reasoning=[Reasoning(text="think", signature="sig"), Reasoning(redacted="opaque")],
        hosted=[Hosted("web_search", tool_input={"query": "q"}, result=[{"url": "u"}], status="completed")],
        choices=[{"type": "final_answer", "text": "b"}],
        text_signature="ts",
    )
    output = with_extras(dict(plain), extras)
    assert output["reasoning"] == [{"text": "think", "signature": "sig"}, {"redacted": "opaque"}]
    assert output["hostedTools"] == [
        {
            "toolName": "web_search",
            "toolInput": {"query": "q"},
            "result": [{"url": "u"}],
            "status": "completed",
        }
    ]
    assert extras_of(output) == extras
    check_output(output)


def _record(tmp_path: Path) -> Path:
    cassette = tmp_path / "run.json"
    with FakeLLMServer() as server, otel_blackbox.session(mode="record", cassette=cassette):
        _run(server.openai_base_url)
    return cassette


def _run(base_url: str) -> None:
    with openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0) as client:
        weather_agent.run_agent(client, TracerProvider().get_tracer("t"), QUESTION, stream=False)


def test_a_cassette_with_a_malformed_field_is_refused_naming_the_step(tmp_path: Path) -> None:
    path = _record(tmp_path)
    cassette = load_cassette(path)
    output = next(s for s in cassette.steps if s.type == "model_output")
    output.payload["reasoning"] = [{"text": ["not", "a", "string"]}]
    save_cassette(resealed(cassette), path)  # a well-formed chain: only the field is wrong

    with pytest.raises(CassetteError) as refused, otel_blackbox.session(mode="replay", cassette=path):
        pass
    assert str(refused.value) == (
        f"{path}: step {output.index} (model_output): field reasoning[0].text must be a string, not list"
    )

    agent = [sys.executable, str(EXAMPLES / "weather_agent.py"), "--base-url", "http://127.0.0.1:9/v1"]
    result = run_cli("replay", str(path), "--", *agent)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"otel-blackbox: error: {path}: step {output.index} (model_output): "
        "field reasoning[0].text must be a string, not list"
    ]


def test_a_script_with_a_malformed_field_is_refused_naming_the_reply() -> None:
    replies: list[Any] = [
        {"type": "final_answer", "text": "a"},
        {"type": "final_answer", "text": "b", "refusal": 1},
    ]
    with pytest.raises(
        SessionError, match=r"^reply 1 of the script: field refusal must be a string, not int$"
    ):
        check_replies(replies)


# --- tool results ----------------------------------------------------------------------------------


def _with_result(result: Any) -> dict[str, Any]:
    part = {"type": "tool_result", "toolCallId": "call-0", "toolName": "get_weather", "result": result}
    return {"messages": [{"role": "user", "content": "q"}, {"role": "user", "content": [part]}], "tools": []}


def test_json_results_compare_as_values_and_text_as_text() -> None:
    spaced, compact = (
        _with_result('{"city": "Lisbon", "t": [1, 2]}'),
        _with_result('{"t":[1,2],"city":"Lisbon"}'),
    )
    assert comparable_results(spaced) == comparable_results(compact)
    assert comparable_results(_with_result('{"city": "Porto"}')) != comparable_results(compact)
    # Text stays text: a number written two ways is two texts, and so is JSON against its look-alike.
    assert comparable_results(_with_result("1.50")) != comparable_results(_with_result("1.5"))
    assert comparable_results(_with_result("{not json")) == _with_result("{not json")
    assert comparable_results(_with_result("[NaN]")) == _with_result("[NaN]")  # no canonical form: as text
    plain = _with_result("sunny")
    assert comparable_results(plain) is plain  # nothing to change: the very same object


def test_a_replay_whose_json_tool_result_changed_still_diverges(tmp_path: Path) -> None:
    """A span-built cassette's spaced JSON replays against the wire's compact JSON, but another value
    does not: the comparison is of values, not a pass for anything JSON."""
    path = _record(tmp_path)
    cassette = load_cassette(path)
    second = [s for s in cassette.steps if s.type == "model_input"][1]
    results = [p for m in second.payload["messages"] if isinstance(m["content"], list) for p in m["content"]
               if p.get("type") == "tool_result"]  # fmt: skip
    original = json.loads(results[0]["result"])
    results[0]["result"] = json.dumps(original, indent=2)  # the same value, spelt otherwise
    save_cassette(resealed(cassette), path)  # the chain rehashed: only the text differs
    with FakeLLMServer() as server:
        base_url = server.openai_base_url
    with blocked_network(), otel_blackbox.session(mode="replay", cassette=path):
        _run(base_url)

    results[0]["result"] = json.dumps({**original, "temperature_c": 99})
    save_cassette(resealed(cassette), path)  # the chain rehashed: only the text differs
    with (
        pytest.raises(
            ReplayDivergence, match=r"differs at \$\.messages\[2\]\.content\[0\]\.result"
        ) as diverged,
        blocked_network(),
        otel_blackbox.session(mode="replay", cassette=path),
    ):
        _run(base_url)
    assert "99" in str(diverged.value) and "11" in str(diverged.value)


def test_a_cassette_from_spans_does_not_compare_the_parts_spans_never_record() -> None:
    """Spans record no reasoning or hosted tool parts in their messages: a program that sends them
    back replays a span-built cassette; the conversation around them is still compared."""
    tool_use = {"type": "tool_use", "toolCallId": "call-0", "toolName": "f", "toolInput": {}}
    wire: dict[str, Any] = {
        "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [
                {"type": "reasoning", "text": "think", "signature": "sig"},
                {"type": "hosted_tool", "toolName": "web_search", "toolInput": {"query": "q"}},
                tool_use,
            ]},
        ],
        "tools": [],
    }  # fmt: skip
    spans = {
        **wire,
        "messages": [
            wire["messages"][0],
            {"role": "assistant", "content": [tool_use]},
        ],
    }
    # Nor a tool's settings: spans record its name, description and schema.
    wire["tools"] = [{"name": "f", "description": "", "settings": {"strict": True}}]
    spans["tools"] = [{"name": "f", "description": ""}]
    observed = ["messages", "systemPrompt", "tools"]
    assert observed_view(wire, observed) == observed_view(spans, observed)
    assert observed_view(wire, None) is wire  # a recording that saw the wire compares every part
    changed = {**wire, "messages": [{"role": "user", "content": "other"}, wire["messages"][1]]}
    assert observed_view(changed, observed) != observed_view(spans, observed)


def _chat_choice(index: int, name: str, call_id: str) -> dict[str, Any]:
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": '{"city":"Lisbon"}'}}
    message = {"role": "assistant", "content": None, "refusal": None, "tool_calls": [call]}
    return {"index": index, "message": message, "logprobs": None, "finish_reason": "tool_calls"}


def _completion(choices: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": "chatcmpl-canned0001", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
            "choices": choices}  # fmt: skip


def test_the_tool_round_is_the_one_of_the_choice_the_program_ran(tmp_path: Path) -> None:
    """With n = 2 a program may run the second choice's calls: the recording's tool steps are those,
    the cassette verifies, and the run replays."""
    first = _completion(
        [_chat_choice(0, "get_weather", "call_aaaaaaaa"), _chat_choice(1, "get_forecast", "call_bbbbbbbb")]
    )
    answer = {"index": 0, "message": {"role": "assistant", "content": "Sunny."}, "finish_reason": "stop"}
    path = tmp_path / "run.json"

    def program(base_url: str) -> str:
        with openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0) as client:
            messages: list[Any] = [{"role": "user", "content": "Lisbon?"}]
            reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages, n=2)
            chosen = reply.choices[1].message  # the program prefers the second choice
            call = (chosen.tool_calls or [])[0]
            assert call.type == "function"
            function = {"name": call.function.name, "arguments": call.function.arguments}
            turn = {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": call.id, "type": "function", "function": function}],
            }
            messages.append(turn)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": "14, 17"})
            final = client.chat.completions.create(model="gpt-4o-mini", messages=messages, n=2)
            return str(final.choices[0].message.content)

    with (
        CannedProvider([first, _completion([answer])]) as canned,
        otel_blackbox.session(mode="record", cassette=path),
    ):
        assert program(canned.url + "/v1") == "Sunny."
    cassette = load_cassette(path)
    rounds = [
        (s.type, s.payload["toolCallId"], s.payload["toolName"])
        for s in cassette.steps
        if s.type.startswith("tool_")
    ]
    assert rounds == [("tool_call", "call-1", "get_forecast"), ("tool_result", "call-1", "get_forecast")]
    assert verify_cassette(cassette).passed
    with blocked_network() as attempts, otel_blackbox.session(mode="replay", cassette=path):
        assert program(canned.url + "/v1") == "Sunny."
    assert attempts == []
