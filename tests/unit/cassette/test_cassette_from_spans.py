"""Cassettes from real recordings: the openai / anthropic SDKs, OpenInference, the fake provider."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import anthropic_agent  # examples/ is on sys.path (conftest.py)
import openai
import pytest
import weather_agent
from fake_llm import FakeLLMServer
from helpers import EXAMPLES, Recorder, run_cli
from openinference.instrumentation.anthropic import AnthropicInstrumentor
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from otel_blackbox import CassetteSpanExporter
from otel_blackbox._cassette.from_spans.cassette import PROCESS_EXIT, cassette_from_spans
from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.model import Cassette, terminal_outcome, tool_call_sequence
from otel_blackbox._cassette.verify import verify_cassette
from otel_blackbox._cost.usage import without_usage
from otel_blackbox._store.connection import connect_reader
from otel_blackbox._store.queries import SpanRecord, trace_spans

QUESTION = "What's the weather in Lisbon, and the 2 day forecast? I need both."
PROVIDER_MARKERS = ("call_", "toolu_", "chatcmpl-", "msg_", '"usage"', "finish_reason", "stop_reason")


def _spans(rec: Recorder, trace_id: str) -> list[SpanRecord]:
    rec.flush()
    conn = connect_reader(rec.db_path)
    try:
        return trace_spans(conn, trace_id)
    finally:
        conn.close()


def _types(cassette: Cassette) -> list[str]:
    return [s.type for s in cassette.steps]


def _assert_neutral_and_valid(cassette: Cassette) -> None:
    text = json.dumps([s.payload for s in cassette.steps])
    for marker in PROVIDER_MARKERS:
        assert marker not in text, marker
    report = verify_cassette(cassette)
    assert report.passed, report.first_failure


@pytest.fixture
def openai_recorder(recorder: Recorder) -> Iterator[Recorder]:
    OpenAIInstrumentor().instrument(tracer_provider=recorder.provider)
    yield recorder
    OpenAIInstrumentor().uninstrument()


@pytest.mark.parametrize("stream", [False, True])
def test_openai_parallel_tool_round(openai_recorder: Recorder, fake_llm: FakeLLMServer, stream: bool) -> None:
    with openai.OpenAI(base_url=fake_llm.openai_base_url, api_key="sk-fake", max_retries=0) as client:
        answer, trace_id = weather_agent.run_agent(client, openai_recorder.tracer, QUESTION, stream=stream)
    cassette = cassette_from_spans(_spans(openai_recorder, trace_id))
    assert cassette.id == trace_id
    assert _types(cassette) == [
        "model_input", "model_output", "tool_call", "tool_result", "tool_call", "tool_result",
        "model_input", "model_output", "metadata",
    ]  # fmt: skip
    first_input = cassette.steps[0].payload
    assert first_input["messages"] == [{"role": "user", "content": QUESTION}]
    assert first_input["systemPrompt"].startswith("You are a weather assistant")
    assert [t["name"] for t in first_input["tools"]] == ["get_weather", "get_forecast"]
    assert first_input["tools"][0]["inputSchema"]["properties"]["city"]["type"] == "string"
    assert first_input["model"] == "gpt-4o-mini"
    calls = cassette.steps[1].payload
    assert calls["type"] == "tool_calls"
    assert [(c["toolCallId"], c["toolName"], c["toolInput"]) for c in calls["calls"]] == [
        ("call-0", "get_weather", {"city": "Lisbon"}),
        ("call-1", "get_forecast", {"city": "Lisbon", "days": 2}),
    ]
    assert (
        cassette.steps[3].payload["toolCallId"] == "call-0"
        and "Lisbon" in cassette.steps[3].payload["result"]
    )
    # The second model input carries the round: tool_use parts, then one user turn of tool_result parts.
    messages = cassette.steps[6].payload["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert [p["toolCallId"] for p in messages[1]["content"]] == ["call-0", "call-1"]
    assert [(p["type"], p["toolCallId"], p["toolName"]) for p in messages[2]["content"]] == [
        ("tool_result", "call-0", "get_weather"),
        ("tool_result", "call-1", "get_forecast"),
    ]
    assert without_usage(cassette.steps[7].payload) == {"type": "final_answer", "text": answer}
    assert cassette.steps[8].payload == {"event": "run_completed", "status": "success", "result": answer}
    _assert_neutral_and_valid(cassette)


def test_anthropic_run(recorder: Recorder, fake_llm: FakeLLMServer) -> None:
    AnthropicInstrumentor().instrument(tracer_provider=recorder.provider)
    try:
        with anthropic.Anthropic(
            base_url=fake_llm.anthropic_base_url, api_key="sk-ant-fake", max_retries=0, open_telemetry=False
        ) as client:
            answer, trace_id = anthropic_agent.run_agent(client, recorder.tracer, QUESTION, stream=True)
    finally:
        AnthropicInstrumentor().uninstrument()
    cassette = cassette_from_spans(_spans(recorder, trace_id))
    assert tool_call_sequence(cassette) == ["get_weather", "get_forecast"]
    assert cassette.steps[0].payload["model"] == "claude-haiku-4-5"
    assert cassette.steps[0].payload["params"] == {"maxTokens": 1024}
    assert terminal_outcome(cassette).final_answer == answer
    _assert_neutral_and_valid(cassette)


def test_failed_tool_and_rounds_without_tool_spans(
    openai_recorder: Recorder, fake_llm: FakeLLMServer
) -> None:
    tools = weather_agent.WeatherTools(fail=True)
    with openai.OpenAI(base_url=fake_llm.openai_base_url, api_key="sk-fake", max_retries=0) as client:
        _, trace_id = weather_agent.run_agent(client, openai_recorder.tracer, QUESTION, tools=tools)
    spans = _spans(openai_recorder, trace_id)
    cassette = cassette_from_spans(spans)
    failed = cassette.steps[3].payload
    assert failed == {
        "toolCallId": "call-0",
        "toolName": "get_weather",
        "error": "ValueError: weather service unavailable for Lisbon",
    }
    _assert_neutral_and_valid(cassette)
    # Without TOOL spans the same rounds are read from the next model input's tool results.
    llm_only = cassette_from_spans([s for s in spans if s.oi_span_kind != "TOOL"])
    assert _types(llm_only) == _types(cassette)
    assert [s.payload for s in llm_only.steps if s.type == "tool_call"] == [
        s.payload for s in cassette.steps if s.type == "tool_call"
    ]
    results = [s.payload for s in llm_only.steps if s.type == "tool_result"]
    assert results[0]["result"] == "error: ValueError: weather service unavailable for Lisbon"
    _assert_neutral_and_valid(llm_only)


def test_killed_run_ends_with_process_exit(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    argv = [sys.executable, str(EXAMPLES / "weather_agent.py"), "--db", str(db), "--hang-in-tool"]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        proc.stdout.readline()
        trace_id = proc.stdout.readline().split()[1]
        time.sleep(1.0)  # five flush intervals: the open rows are on disk
        proc.send_signal(signal.SIGKILL)
    out = tmp_path / "incident.json"
    result = run_cli("cassette", trace_id[:8], "-o", str(out), db=db, check=True)
    assert "outcome error" in result.stdout
    cassette = load_cassette(out)
    assert _types(cassette) == ["model_input", "model_output", "tool_call", "metadata"]
    assert cassette.steps[2].payload["toolInput"] == {"city": "Paris"}
    assert cassette.steps[-1].payload == {"event": "run_failed", "status": "error", "reason": PROCESS_EXIT}
    assert verify_cassette(cassette).passed
    timeline = run_cli("inspect", str(out), check=True).stdout
    assert "tool_call     get_weather" in timeline and "run_failed error: process_exit" in timeline


def test_exporter_writes_one_cassette_per_trace_like_the_database(
    openai_recorder: Recorder, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    folder = tmp_path / "cassettes"
    exporter = CassetteSpanExporter(folder)
    openai_recorder.provider.add_span_processor(SimpleSpanProcessor(exporter))
    with openai.OpenAI(base_url=fake_llm.openai_base_url, api_key="sk-fake", max_retries=0) as client:
        ids = [weather_agent.run_agent(client, openai_recorder.tracer, QUESTION)[1] for _ in range(2)]
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{t}.json" for t in ids)
    for trace_id in ids:
        exported = load_cassette(folder / f"{trace_id}.json")
        from_db = cassette_from_spans(_spans(openai_recorder, trace_id))
        assert exported.head == from_db.head  # the same spans make the same cassette, hash for hash
        assert verify_cassette(exported).passed


def test_exporter_bounds_memory_and_flushes_unfinished_traces(tmp_path: Path) -> None:
    exporter = CassetteSpanExporter(tmp_path, max_buffered_spans=5)
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("root"):
        for i in range(8):
            with tracer.start_as_current_span(f"child-{i}"):
                pass
    # Past 5 buffered spans the trace was written as it was; the rest was dropped and counted.
    assert len(exporter.written) == 1
    assert exporter.spans_dropped == 3  # child-6, child-7 and the root
    cut = load_cassette(exporter.written[0])
    # No open spans: it ended where it was cut, with no model's final answer: not a success.
    assert cut.steps[-1].payload == {"event": "run_ended", "reason": "no_final_answer"}
    # Plain spans, no model call among them: its chain holds, and there is nothing to replay.
    checks = {c.name: c.status for c in verify_cassette(cut).checks}
    assert checks == {
        "schema_version": "pass",
        "hash_chain": "pass",
        "provider_neutrality": "pass",
        "replayability": "fail",
    }
    other = tracer.start_span("unfinished-trace")
    with tracer.start_as_current_span("child", context=trace.set_span_in_context(other)):
        pass
    provider.shutdown()  # writes what is still buffered
    assert len(exporter.written) == 2
    other.end()


def _llm_span(index: int, history: list[dict[str, Any]], answer: dict[str, Any]) -> SpanRecord:
    """An OpenInference LLM span as the google-genai instrumentor writes one: calls without ids,
    tool responses named but without ids."""
    attributes: dict[str, Any] = {}
    for prefix, messages in (("llm.input_messages", history), ("llm.output_messages", [answer])):
        for n, message in enumerate(messages):
            at = f"{prefix}.{n}.message"
            attributes[f"{at}.role"] = message["role"]
            for key in ("content", "name"):
                if key in message:
                    attributes[f"{at}.{key}"] = message[key]
            for m, (name, arguments) in enumerate(message.get("calls", [])):
                attributes[f"{at}.tool_calls.{m}.tool_call.function.name"] = name
                attributes[f"{at}.tool_calls.{m}.tool_call.function.arguments"] = json.dumps(arguments)
    start = 1_000_000_000 * (index + 1)
    return SpanRecord(
        trace_id="ab" * 16, span_id=f"{index + 1:016x}", parent_span_id=None, name="generate_content",
        span_kind="INTERNAL", oi_span_kind="LLM", status="ok", status_message=None, start_ns=start,
        end_ns=start + 1000, duration_ns=1000, written_ns=start + 1000, session_id=None, user_id=None,
        model="gemini-2.5-flash", prompt_tokens=None, completion_tokens=None, total_tokens=None,
        tool_name=None, pid=1, attributes=attributes,
    )  # fmt: skip


def test_calls_without_ids_link_to_their_results_by_name_and_occurrence() -> None:
    weather = ("get_weather", {"city": "Lisbon"})
    forecast = ("get_forecast", {"city": "Lisbon", "days": 2})
    ask = {"role": "user", "content": "Lisbon? both"}
    turn = {"role": "model", "calls": [weather, forecast]}
    results = [
        {"role": "tool", "name": "get_forecast", "content": '{"highs": [14, 17]}'},  # out of order
        {"role": "tool", "name": "get_weather", "content": '{"temp": 11}'},
    ]
    again = {"role": "model", "calls": [weather]}  # the very same call, a turn later
    spans = [
        _llm_span(0, [ask], turn),
        _llm_span(1, [ask, turn, *results], again),
        _llm_span(2, [ask, turn, *results, again, results[1]], {"role": "model", "content": "done"}),
    ]
    cassette = cassette_from_spans(spans)
    outputs = [s.payload for s in cassette.steps_of("model_output")]
    assert [c["toolCallId"] for c in outputs[0]["calls"]] == ["call-0", "call-1"]
    assert [c["toolCallId"] for c in outputs[1]["calls"]] == ["call-2"]  # not call-0 again
    last_input = list(cassette.steps_of("model_input"))[2].payload["messages"]
    uses = [p["toolCallId"] for m in last_input if isinstance(m["content"], list) for p in m["content"]
            if p["type"] == "tool_use"]  # fmt: skip
    answered = {(p["toolCallId"], p["toolName"]) for m in last_input if isinstance(m["content"], list)
                for p in m["content"] if p["type"] == "tool_result"}  # fmt: skip
    assert uses == ["call-0", "call-1", "call-2"]
    assert [m["role"] for m in last_input] == ["user", "assistant", "user", "assistant", "user"]
    assert answered == {("call-0", "get_weather"), ("call-1", "get_forecast"), ("call-2", "get_weather")}
    assert verify_cassette(cassette).passed


def _gen_ai_span(output: list[dict[str, Any]], **attributes: Any) -> SpanRecord:
    """A GenAI LLM span as pydantic-ai writes one (messages as JSON, parts typed)."""
    user = [{"role": "user", "parts": [{"type": "text", "content": "Search, think, answer."}]}]
    attrs = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-5-mini",
        "gen_ai.input.messages": json.dumps(user),
        "gen_ai.output.messages": json.dumps(output),
        **attributes,
    }
    return SpanRecord(
        trace_id="cd" * 16, span_id="1" * 16, parent_span_id=None, name="chat gpt-5-mini",
        span_kind="CLIENT", oi_span_kind="LLM", status="ok", status_message=None, start_ns=10**9,
        end_ns=10**9 + 1000, duration_ns=1000, written_ns=10**9 + 1000, session_id=None, user_id=None,
        model="gpt-5-mini", prompt_tokens=None, completion_tokens=None, total_tokens=None,
        tool_name=None, pid=1, attributes=attrs,
    )  # fmt: skip


def test_a_cassette_from_spans_carries_the_stop_reason_reasoning_and_hosted_tools_they_saw() -> None:
    parts = [
        {"type": "thinking", "content": "The user wants a search first."},
        {
            "type": "tool_call",
            "id": "ws_1",
            "name": "web_search",
            "arguments": {"query": "lisbon"},
            "builtin": True,
        },
        {
            "type": "tool_call_response",
            "id": "ws_1",
            "name": "web_search",
            "result": {"hits": 3},
            "builtin": True,
        },
        {"type": "text", "content": "Lisbon is sunny, and I ran out of"},
    ]
    output = [{"role": "assistant", "parts": parts, "finish_reason": "length"}]
    cassette = cassette_from_spans([_gen_ai_span(output)])
    (answer,) = [s.payload for s in cassette.steps_of("model_output")]
    assert answer == {
        "type": "final_answer",
        "text": "Lisbon is sunny, and I ran out of",
        "stopReason": "max_tokens",
        "reasoning": [{"text": "The user wants a search first."}],
        "hostedTools": [{"toolName": "web_search", "toolInput": {"query": "lisbon"}, "result": {"hits": 3}}],
    }
    assert verify_cassette(cassette).passed
    # The provider's own name of a reason with no neutral one, from the span attribute; a normal end
    # says nothing, so such an answer is as it always was.
    plain = [{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}]
    (filtered,) = cassette_from_spans(
        [_gen_ai_span(plain, **{"gen_ai.response.finish_reasons": ["RECITATION"]})]
    ).steps_of("model_output")
    assert filtered.payload == {"type": "final_answer", "text": "done", "stopReason": "RECITATION"}
    (normal,) = cassette_from_spans(
        [_gen_ai_span(plain, **{"gen_ai.response.finish_reasons": ["stop"]})]
    ).steps_of("model_output")
    assert normal.payload == {"type": "final_answer", "text": "done"}
