"""The Logfire reader on what logfire 5.4.0 and pydantic-ai 2.78.0 wrote (tests/data/conventions/logfire/,
by tests/conformance/agents/logfire_agent.py): ``instrument_openai`` in its default format (GenAI
attributes, a template for a name) and ``version=1`` (``request_data`` / ``response_data``), and a
pydantic-ai agent run (``pydantic_ai.all_messages``, ``final_result``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conventions import fixture_path, views

from otel_blackbox._spans.conventions import logfire
from otel_blackbox._spans.view.model import SpanView, Tokens
from otel_blackbox._store.queries import SpanRecord

SYSTEM_PROMPT = "You are a weather assistant. Always use the tools."
QUESTION = "What's the weather in Lisbon?"
RESULT = '{"city": "Lisbon", "temperature_c": 21, "conditions": "sunny"}'
ANSWER = f"Final answer: {RESULT}"
TOOL_ERROR = "weather service unavailable"
CALL_NAME = "Chat Completion with 'gpt-4o-mini'"

Views = list[tuple[SpanRecord, SpanView]]


def read(name: str, tmp_path: Path) -> Views:
    return views(fixture_path("logfire", name), tmp_path / "blackbox.db")


def of_kind(spans: Views, kind: str) -> Views:
    return [(span, view) for span, view in spans if view.kind == kind]


def check_first_call(view: SpanView) -> None:
    """The first model call: the system prompt and the question in, a get_weather call out."""
    assert view.name == CALL_NAME
    assert view.model == "gpt-4o-mini" and view.provider == "openai"
    system, user = view.input_messages
    assert (system.role, system.content) == ("system", SYSTEM_PROMPT)
    assert (user.role, user.content) == ("user", QUESTION)
    (answer,) = view.output_messages
    (call,) = answer.tool_calls
    assert call.tool_name == "get_weather" and call.tool_call_id.startswith("call_")
    assert json.loads(call.tool_input) == {"city": "Lisbon"}
    assert [t["function"]["name"] for t in view.tools] == ["get_weather"]
    assert view.tokens is not None and (view.tokens.input, view.tokens.output) == (36, 7)
    assert view.finish_reasons == ["tool_calls"]


def check_second_call(view: SpanView, tool_answer: str) -> str:
    """The second model call: the tool's answer in, the final answer out (returned)."""
    assert view.name == CALL_NAME
    roles = [m.role for m in view.input_messages]
    assert roles == ["system", "user", "assistant", "tool"]
    calling, answered = view.input_messages[2:]
    assert calling.tool_calls[0].tool_name == "get_weather"
    assert answered.content == tool_answer
    assert answered.tool_call_id == calling.tool_calls[0].tool_call_id
    (final,) = view.output_messages
    assert final.role == "assistant" and final.content == f"Final answer: {tool_answer}"
    assert view.finish_reasons == ["stop"]
    return final.content


@pytest.mark.parametrize("variant", ["default", "v1"])
def test_instrument_openai_calls_and_tool(variant: str, tmp_path: Path) -> None:
    spans = read(f"{variant}-ok", tmp_path)
    (_, first_view), (_, second_view) = of_kind(spans, "LLM")
    check_first_call(first_view)
    check_second_call(second_view, RESULT)
    assert second_view.tokens is not None and (second_view.tokens.input, second_view.tokens.output) == (
        119,
        19,
    )
    # The tool: a Logfire span with the GenAI execute_tool attributes; its name is no template.
    ((tool_span, tool),) = of_kind(spans, "TOOL")
    assert tool_span.name == "execute_tool get_weather" and tool.name is None
    assert tool.tool is not None and tool.tool.name == "get_weather"
    assert json.loads(tool.tool.arguments) == {"city": "Lisbon"} and tool.tool.result == RESULT
    assert tool.tool.error is None
    # The user's own span around the run: its rendered message is its name; no kind.
    root = next(view for span, view in spans if span.parent_span_id is None)
    assert root.name == f"weather agent: {QUESTION}" and root.kind is None


def test_default_format_messages_are_genai_the_name_logfire(tmp_path: Path) -> None:
    for span, view in of_kind(read("default-ok", tmp_path), "LLM"):
        assert span.attributes["request_data"] == '{"model":"gpt-4o-mini"}'
        assert view.readers == ("genai", "logfire")
        reading = logfire.read(span)
        assert reading is not None and reading.name == CALL_NAME and reading.kind == "LLM"
        assert reading.input_messages == [] and reading.output_messages == []
        assert reading.tokens is not None and reading.tokens.total == view.tokens.sum  # type: ignore[union-attr]


def test_v1_request_and_response_data(tmp_path: Path) -> None:
    """Version 1 holds the messages in request_data / response_data only: the logfire reader's."""
    (first, first_view), (second, _) = of_kind(read("v1-ok", tmp_path), "LLM")
    for span in (first, second):
        assert "gen_ai.input.messages" not in span.attributes and "request_data" in span.attributes
    first_reading, second_reading = logfire.read(first), logfire.read(second)
    assert first_reading is not None and second_reading is not None
    assert first_reading.input_messages == first_view.input_messages
    assert first_reading.output_messages == first_view.output_messages
    assert second_reading.output_messages[0].content == ANSWER
    assert first_reading.model == "gpt-4o-mini" and first_reading.provider == "openai"
    assert [t["function"]["name"] for t in first_reading.tools] == ["get_weather"]
    assert first_reading.tokens == Tokens(input=36, output=7, total=43)
    assert second_reading.tokens == Tokens(input=119, output=19, total=138)


@pytest.mark.parametrize("variant", ["default", "v1"])
def test_instrument_openai_tool_error(variant: str, tmp_path: Path) -> None:
    spans = read(f"{variant}-tool-error", tmp_path)
    ((_, tool),) = of_kind(spans, "TOOL")
    assert tool.tool is not None and tool.tool.name == "get_weather"
    assert json.loads(tool.tool.arguments) == {"city": "Lisbon"}
    assert tool.tool.result is None and tool.tool.error == f"RuntimeError: {TOOL_ERROR}"
    # The loop sent the error back to the model as the tool's answer.
    (_, first), (_, second) = of_kind(spans, "LLM")
    check_first_call(first)
    assert check_second_call(second, f"Error: {TOOL_ERROR}") == f"Final answer: Error: {TOOL_ERROR}"


def test_pydantic_ai_agent_run(tmp_path: Path) -> None:
    spans = read("pydantic-ai-ok", tmp_path)
    ((agent_span, agent),) = of_kind(spans, "AGENT")
    assert agent_span.name == "invoke_agent weather_agent" and agent.name is None
    assert agent.system == SYSTEM_PROMPT and agent.model == "gpt-4o-mini"
    user, calling, answered = agent.input_messages
    assert (user.role, user.content) == ("user", QUESTION)
    (call,) = calling.tool_calls
    assert call.tool_name == "get_weather" and json.loads(call.tool_input) == {"city": "Lisbon"}
    assert (answered.role, answered.content, answered.tool_call_id) == ("tool", RESULT, call.tool_call_id)
    assert [(m.role, m.content) for m in agent.output_messages] == [("assistant", ANSWER)]
    assert agent.output_text == ANSWER
    assert agent.tokens is None  # the run's aggregated usage is its model calls': counted there
    assert "logfire" in agent.readers
    # Its model calls and its tool are GenAI spans, read by the genai reader alone.
    calls = of_kind(spans, "LLM")
    assert len(calls) == 2 and all(view.readers == ("genai",) for _, view in calls)
    assert calls[1][1].output_messages[0].content == ANSWER
    assert calls[0][1].tokens is not None and calls[0][1].tokens.input == 36
    ((_, tool),) = of_kind(spans, "TOOL")
    assert tool.tool is not None and tool.tool.name == "get_weather" and tool.tool.result == RESULT


def test_pydantic_ai_tool_error(tmp_path: Path) -> None:
    spans = read("pydantic-ai-tool-error", tmp_path)
    ((_, tool),) = of_kind(spans, "TOOL")
    assert tool.tool is not None and tool.tool.name == "get_weather"
    assert json.loads(tool.tool.arguments) == {"city": "Lisbon"}
    assert tool.tool.error == f"RuntimeError: {TOOL_ERROR}"
    # The run failed in its tool: it records the messages of its last request, and no final result.
    ((_, agent),) = of_kind(spans, "AGENT")
    assert [(m.role, m.content) for m in agent.input_messages] == [("user", QUESTION)]
    assert agent.output_messages == [] and agent.output_text is None
    assert agent.system == SYSTEM_PROMPT


def test_other_spans_are_not_logfire(tmp_path: Path) -> None:
    spans = views(fixture_path("openinference", "openai-ok"), tmp_path / "blackbox.db")
    assert spans and all(logfire.read(span) is None for span, _ in spans)
