"""The OpenLLMetry reader (``_spans/conventions/openllmetry.py``) on the committed fixtures of
tests/data/conventions/openllmetry/: opentelemetry-instrumentation-openai 0.40.14 (``old``: indexed
``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*``) and 0.62.4 (``new``: GenAI message attributes,
the ``genai`` reader's), each with its content off too (``TRACELOOP_TRACE_CONTENT=false``), and
traceloop-sdk 0.62.4 (``traceloop``: ``@workflow`` / ``@agent`` / ``@tool`` spans, ``traceloop.*``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conventions import fixture_path, views

from otel_blackbox._spans.conventions import openllmetry
from otel_blackbox._spans.messages import Message
from otel_blackbox._spans.view.model import SpanView, Tokens
from otel_blackbox._store.queries import SpanRecord

SYSTEM_PROMPT = "You are a weather assistant. Always use the tools."
QUESTION = "What's the weather in Lisbon?"
WEATHER = json.dumps({"city": "Lisbon", "temperature_c": 21, "conditions": "sunny"})
ANSWER = f"Final answer: {WEATHER}"
TOOL_ERROR = "Error: weather service unavailable"
TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "The current weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}

Viewed = list[tuple[SpanRecord, SpanView]]


def _viewed(name: str, tmp_path: Path) -> Viewed:
    return views(fixture_path("openllmetry", name), tmp_path / "blackbox.db")


def _named(viewed: Viewed, name: str) -> list[tuple[SpanRecord, SpanView]]:
    return [(span, view) for span, view in viewed if span.name == name]


def _calls(viewed: Viewed) -> tuple[SpanView, SpanView]:
    (_, first), (_, second) = _named(viewed, "openai.chat")
    return first, second


def _the_call(message: Message) -> tuple[str, str, dict[str, object]]:
    (call,) = message.tool_calls
    return call.tool_call_id, call.tool_name, json.loads(call.tool_input)


def _check_loop(first: SpanView, second: SpanView, tool_answer: str, answer: str) -> None:
    """The two model calls of the loop: the question, the tool call, its answer, the final answer."""
    assert [(m.role, m.content) for m in first.input_messages] == [
        ("system", SYSTEM_PROMPT),
        ("user", QUESTION),
    ]
    (asked,) = first.output_messages
    call_id, tool, arguments = _the_call(asked)
    assert (asked.role, asked.content, tool, arguments) == (
        "assistant",
        None,
        "get_weather",
        {"city": "Lisbon"},
    )
    system, user, assistant, tool_message = second.input_messages
    assert (system.content, user.content) == (SYSTEM_PROMPT, QUESTION)
    assert _the_call(assistant) == (call_id, "get_weather", {"city": "Lisbon"})
    assert (tool_message.role, tool_message.content, tool_message.tool_call_id) == (
        "tool",
        tool_answer,
        call_id,
    )
    (answered,) = second.output_messages
    assert (answered.role, answered.content, answered.tool_calls) == ("assistant", answer, [])
    for view in (first, second):
        assert view.kind == "LLM"
        assert view.model == "gpt-4o-mini"
        assert view.tools == [TOOL]
        assert view.no_content is None


def test_old_model_calls(tmp_path: Path) -> None:
    first, second = _calls(_viewed("old-ok", tmp_path))
    _check_loop(first, second, WEATHER, ANSWER)
    for view in (first, second):
        assert view.provider == "OpenAI"
        assert "openllmetry" in view.readers
    assert first.output_messages[0].finish_reason == "tool_calls"
    assert (first.finish_reasons, second.finish_reasons) == (["tool_calls"], ["stop"])
    assert first.tokens == Tokens(input=36, output=7, total=43)
    assert second.tokens == Tokens(input=119, output=19, total=138)


def test_old_reading_alone(tmp_path: Path) -> None:
    """What the reader itself finds on a 0.40 span (the kind from ``llm.request.type``), whatever
    another reader gives."""
    (span, _), _ = _named(_viewed("old-ok", tmp_path), "openai.chat")
    reading = openllmetry.read(span)
    assert reading is not None
    assert (reading.kind, reading.model, reading.provider) == ("LLM", "gpt-4o-mini", "OpenAI")
    assert reading.tokens == Tokens(input=36, output=7, total=43)
    assert reading.tools == [TOOL]
    assert [m.role for m in reading.input_messages] == ["system", "user"]
    assert _the_call(reading.output_messages[0])[1:] == ("get_weather", {"city": "Lisbon"})


def test_old_tool_error(tmp_path: Path) -> None:
    viewed = _viewed("old-tool-error", tmp_path)
    first, second = _calls(viewed)
    _check_loop(first, second, TOOL_ERROR, f"Final answer: {TOOL_ERROR}")
    # The tool ran in a span of the agent's own (the instrumentation makes none): no convention's.
    ((span, view),) = _named(viewed, "get_weather")
    assert span.status == "error"
    assert openllmetry.read(span) is None
    assert view.kind is None


def test_new_model_calls_are_genai(tmp_path: Path) -> None:
    """0.62 writes GenAI message attributes: the ``genai`` reader reads them, this one adds nothing."""
    viewed = _viewed("new-ok", tmp_path)
    first, second = _calls(viewed)
    _check_loop(first, second, WEATHER, ANSWER)
    for view in (first, second):
        assert view.provider == "openai"
        assert view.readers == ("genai",)
    assert (first.finish_reasons, second.finish_reasons) == (["tool_call"], ["stop"])
    assert first.tokens == Tokens(input=36, output=7, total=43)
    assert second.tokens == Tokens(input=119, output=19, total=138)
    for span, _ in _named(viewed, "openai.chat"):
        assert openllmetry.read(span) is None


def test_new_tool_error(tmp_path: Path) -> None:
    first, second = _calls(_viewed("new-tool-error", tmp_path))
    _check_loop(first, second, TOOL_ERROR, f"Final answer: {TOOL_ERROR}")


@pytest.mark.parametrize(("variant", "provider"), [("old", "OpenAI"), ("new", "openai")])
def test_content_off(variant: str, provider: str, tmp_path: Path) -> None:
    """With ``TRACELOOP_TRACE_CONTENT=false`` a call keeps its model and tokens, and says what
    turns its content on."""
    first, second = _calls(_viewed(f"{variant}-nocontent-ok", tmp_path))
    for view in (first, second):
        assert (view.kind, view.model, view.provider) == ("LLM", "gpt-4o-mini", provider)
        assert not view.has_content
        assert view.no_content is not None and "TRACELOOP_TRACE_CONTENT" in view.no_content
    assert first.tokens == Tokens(input=36, output=7, total=43)


def test_traceloop_spans(tmp_path: Path) -> None:
    viewed = _viewed("traceloop-ok", tmp_path)
    ((_, workflow),) = _named(viewed, "weather_workflow.workflow")
    ((_, agent),) = _named(viewed, "weather_agent.agent")
    for view, kind in ((workflow, "CHAIN"), (agent, "AGENT")):
        assert view.kind == kind
        assert (view.input_text, view.output_text) == (QUESTION, ANSWER)
        assert view.readers == ("openllmetry",)
    ((_, tool),) = _named(viewed, "get_weather.tool")
    assert tool.kind == "TOOL" and tool.is_tool
    assert tool.tool is not None
    assert (tool.tool.name, tool.tool.error) == ("get_weather", None)
    # The model calls are the instrumentation's current form, read as GenAI.
    first, second = _calls(viewed)
    _check_loop(first, second, WEATHER, ANSWER)


def test_traceloop_tool_reading(tmp_path: Path) -> None:
    """The tool's arguments are its keyword arguments, its result what it returned (out of the JSON
    of ``traceloop.entity.output``)."""
    ((span, _),) = _named(_viewed("traceloop-ok", tmp_path), "get_weather.tool")
    reading = openllmetry.read(span)
    assert reading is not None and reading.tool is not None
    assert reading.kind == "TOOL"
    assert reading.tool.name == "get_weather"
    assert json.loads(reading.tool.arguments) == {"city": "Lisbon"}
    assert reading.tool.result == WEATHER


def test_traceloop_tool_error(tmp_path: Path) -> None:
    viewed = _viewed("traceloop-tool-error", tmp_path)
    ((span, tool),) = _named(viewed, "get_weather.tool")
    assert tool.kind == "TOOL"
    assert tool.tool is not None
    assert tool.tool.name == "get_weather"
    assert tool.tool.error == "RuntimeError: weather service unavailable"
    reading = openllmetry.read(span)
    assert reading is not None and reading.tool is not None
    assert json.loads(reading.tool.arguments) == {"city": "Lisbon"}
    assert reading.tool.result is None
    ((_, agent),) = _named(viewed, "weather_agent.agent")
    assert (agent.kind, agent.output_text) == ("AGENT", f"Final answer: {TOOL_ERROR}")
    first, second = _calls(viewed)
    _check_loop(first, second, TOOL_ERROR, f"Final answer: {TOOL_ERROR}")


def test_entity_values() -> None:
    assert openllmetry.entity_value('"text"') == "text"
    assert openllmetry.entity_value('{"a": 1}') == '{"a": 1}'
    assert openllmetry.entity_value("not json") == "not json"
    assert openllmetry.entity_value(None) is None
