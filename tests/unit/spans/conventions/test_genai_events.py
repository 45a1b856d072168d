"""The GenAI events reader (``_spans/conventions/genai_events.py``) on the committed fixtures of
tests/data/conventions/genai_events/: Strands Agents 1.62 (its per-message span events by default,
``gen_ai.client.inference.operation.details`` span events with ``gen_ai_latest_experimental``) and
opentelemetry-instrumentation-openai-v2 2.4b0 with ``EVENT_ONLY`` content (one ``operation.details``
log record per ``chat`` span, joined to it by the store).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conventions import fixture_path, views

from otel_blackbox._spans.conventions import genai_events
from otel_blackbox._spans.messages import Message
from otel_blackbox._spans.view.model import SpanView, Tokens
from otel_blackbox._store.queries import SpanRecord

SYSTEM_PROMPT = "You are a weather assistant. Always use the tools."
QUESTION = "What's the weather in Lisbon?"
WEATHER = json.dumps({"city": "Lisbon", "temperature_c": 21, "conditions": "sunny"})
STRANDS = ("strands-default", "strands-latest")

Viewed = list[tuple[SpanRecord, SpanView]]


def _viewed(name: str, tmp_path: Path) -> Viewed:
    return views(fixture_path("genai_events", name), tmp_path / "blackbox.db")


def _named(viewed: Viewed, prefix: str) -> list[tuple[SpanRecord, SpanView]]:
    return [(span, view) for span, view in viewed if span.name.startswith(prefix)]


def _the_call(message: Message) -> tuple[str, str, dict[str, object]]:
    (call,) = message.tool_calls
    return call.tool_call_id, call.tool_name, json.loads(call.tool_input)


@pytest.mark.parametrize("variant", STRANDS)
def test_strands_model_calls(variant: str, tmp_path: Path) -> None:
    viewed = _viewed(f"{variant}-ok", tmp_path)
    (_, first_view), (_, second_view) = _named(viewed, "chat")
    for view in (first_view, second_view):
        assert view.kind == "LLM"
        assert view.model == "gpt-4o-mini"
        assert view.provider == "strands-agents"
        assert view.system == SYSTEM_PROMPT
        assert "genai_events" in view.readers
    assert [(m.role, m.content) for m in first_view.input_messages] == [("user", QUESTION)]
    (asked,) = first_view.output_messages
    call_id, tool, arguments = _the_call(asked)
    assert (asked.role, tool, arguments) == ("assistant", "get_weather", {"city": "Lisbon"})
    assert first_view.tokens == Tokens(input=43, output=7, total=50)
    assert first_view.finish_reasons == ["tool_use"]

    user, assistant, tool_message = second_view.input_messages
    assert (user.role, user.content) == ("user", QUESTION)
    assert _the_call(assistant) == (call_id, "get_weather", {"city": "Lisbon"})
    # Strands's toolResult content blocks ([{"text": ...}]) are read as the text the tool returned.
    assert (tool_message.role, tool_message.content, tool_message.tool_call_id) == ("tool", WEATHER, call_id)
    (answer,) = second_view.output_messages
    assert (answer.role, answer.content) == ("assistant", f"Final answer: {WEATHER}")
    assert answer.finish_reason == "end_turn"
    assert second_view.tokens == Tokens(input=126, output=19, total=145)


@pytest.mark.parametrize("variant", STRANDS)
def test_strands_agent(variant: str, tmp_path: Path) -> None:
    ((_, agent),) = _named(_viewed(f"{variant}-ok", tmp_path), "invoke_agent")
    assert agent.kind == "AGENT"
    assert agent.system == SYSTEM_PROMPT
    assert [(m.role, m.content) for m in agent.input_messages] == [("user", QUESTION)]
    assert [(m.role, m.content) for m in agent.output_messages] == [
        ("assistant", f"Final answer: {WEATHER}\n")
    ]
    assert agent.tokens == Tokens(input=169, output=26, total=195, cache_read=0, cache_write=0)
    assert [tool["name"] for tool in agent.tools] == ["get_weather"]
    if variant == "strands-latest":  # gen_ai_tool_definitions: the whole definition
        assert agent.tools[0]["description"] == "The current weather in a city."


@pytest.mark.parametrize("variant", STRANDS)
def test_strands_event_loop_cycles(variant: str, tmp_path: Path) -> None:
    """The cycle that called the tool holds the model's call and the result it got back."""
    (_, first), (_, second) = _named(_viewed(f"{variant}-ok", tmp_path), "execute_event_loop_cycle")
    assert first.kind is None
    assert (first.input_messages[0].role, first.input_messages[0].content) == ("user", QUESTION)
    said = first.input_messages + first.output_messages
    assert [m.content for m in said if m.role == "tool"] == [WEATHER]
    assert [m.role for m in second.input_messages] == ["user", "assistant", "tool"]


@pytest.mark.parametrize("variant", STRANDS)
def test_strands_tool_span(variant: str, tmp_path: Path) -> None:
    ((span, view),) = _named(_viewed(f"{variant}-ok", tmp_path), "execute_tool")
    assert view.kind == "TOOL"
    assert view.tool is not None and view.tool.name == "get_weather" and view.tool.error is None
    reading = genai_events.read(span)
    assert reading is not None and reading.kind == "TOOL" and reading.tool is not None
    assert reading.tool.name == "get_weather"
    assert json.loads(reading.tool.arguments) == {"city": "Lisbon"}
    assert reading.tool.result == WEATHER
    assert reading.input_messages == [] and reading.output_messages == []


def test_strands_default_tool_span_view_has_arguments(tmp_path: Path) -> None:
    # The genai reader knows the name (gen_ai.tool.name), this one the arguments and the result: the
    # view has all three (a tool use is merged field by field).
    ((_, view),) = _named(_viewed("strands-default-ok", tmp_path), "execute_tool")
    assert view.tool is not None and view.tool.name == "get_weather"
    assert view.tool.arguments is not None and json.loads(view.tool.arguments) == {"city": "Lisbon"}
    assert view.tool.result == WEATHER


def test_strands_latest_tool_span_view(tmp_path: Path) -> None:
    ((_, view),) = _named(_viewed("strands-latest-ok", tmp_path), "execute_tool")
    assert view.tool is not None
    assert json.loads(view.tool.arguments) == {"city": "Lisbon"}
    # gen_ai.tool.call.result (the genai reader's): Strands's content blocks, holding what it returned
    assert genai_events.result_text(json.loads(view.tool.result)) == WEATHER


@pytest.mark.parametrize("variant", STRANDS)
def test_strands_tool_error(variant: str, tmp_path: Path) -> None:
    viewed = _viewed(f"{variant}-tool-error", tmp_path)
    ((span, view),) = _named(viewed, "execute_tool")
    assert view.kind == "TOOL"
    assert view.tool is not None and view.tool.name == "get_weather"
    assert view.tool.error == "RuntimeError: weather service unavailable"
    reading = genai_events.read(span)
    assert reading is not None and reading.tool is not None
    assert json.loads(reading.tool.arguments) == {"city": "Lisbon"}
    assert reading.tool.result == "Error: RuntimeError - weather service unavailable"
    (_, last) = _named(viewed, "chat")[-1]
    assert last.input_messages[-1].content == "Error: RuntimeError - weather service unavailable"
    assert (
        last.output_messages[-1].content == "Final answer: Error: RuntimeError - weather service unavailable"
    )


def test_openai_v2_event_only(tmp_path: Path) -> None:
    """Content in log records only: the chat spans' messages come from their joined log record."""
    viewed = _viewed("openai-v2-event-only-ok", tmp_path)
    (first, first_view), (second, second_view) = _named(viewed, "chat")
    for span, view in ((first, first_view), (second, second_view)):
        assert "gen_ai.input.messages" not in span.attributes
        assert [log["event_name"] for log in span.logs] == [genai_events.OPERATION_DETAILS]
        assert view.kind == "LLM" and view.model == "gpt-4o-mini" and view.provider == "openai"
        assert view.readers == ("genai", "genai_events")
    assert [(m.role, m.content) for m in first_view.input_messages] == [
        ("system", SYSTEM_PROMPT),
        ("user", QUESTION),
    ]
    (asked,) = first_view.output_messages
    call_id, tool, arguments = _the_call(asked)
    assert (tool, arguments, asked.finish_reason) == ("get_weather", {"city": "Lisbon"}, "tool_calls")
    assert first_view.tokens == Tokens(input=36, output=7)

    roles = [m.role for m in second_view.input_messages]
    assert roles == ["system", "user", "assistant", "tool"]
    tool_message = second_view.input_messages[-1]
    assert (tool_message.content, tool_message.tool_call_id) == (WEATHER, call_id)
    assert [m.content for m in second_view.output_messages] == [f"Final answer: {WEATHER}"]
    assert second_view.finish_reasons == ["stop"]
    assert second_view.tokens == Tokens(input=119, output=19)

    ((_, agent),) = _named(viewed, "invoke_agent")
    assert agent.kind == "AGENT"
    ((tool_span, tool_view),) = _named(viewed, "execute_tool")
    assert tool_view.kind == "TOOL" and tool_view.tool is not None and tool_view.tool.name == "get_weather"
    assert genai_events.read(tool_span) is None  # EVENT_ONLY: the tool span holds no content


def test_openai_v2_event_only_tool_error(tmp_path: Path) -> None:
    viewed = _viewed("openai-v2-event-only-tool-error", tmp_path)
    ((_, tool_view),) = _named(viewed, "execute_tool")
    assert tool_view.kind == "TOOL" and tool_view.tool is not None
    assert (tool_view.tool.name, tool_view.tool.error) == ("get_weather", "weather service unavailable")
    (_, last) = _named(viewed, "chat")[-1]
    assert last.input_messages[-1].content == "Error: weather service unavailable"
    assert last.output_messages[-1].content == "Final answer: Error: weather service unavailable"


def _span(**found: Any) -> SpanRecord:
    return SpanRecord(
        "0" * 32, "1" * 16, None, "chat gpt-4o-mini", "CLIENT", None, "unset", None, 0, 1, 1, 1, None, None,
        None, None, None, None, None, None, **found,
    )  # fmt: skip


def test_per_message_log_records() -> None:
    """The per-message events as log records (openai-v2 before util-genai 1.0 wrote these): the
    name in ``event.name``, the content in the body; the choice's message with chat-style calls."""
    calls = [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Lisbon"}'},
        }
    ]
    logs: list[dict[str, Any]] = [
        {
            "event_name": None,
            "attributes": {"event.name": "gen_ai.system.message"},
            "body": {"content": SYSTEM_PROMPT},
        },
        {"event_name": "gen_ai.user.message", "attributes": {}, "body": {"content": QUESTION}},
        {"event_name": "gen_ai.assistant.message", "attributes": {}, "body": {"tool_calls": calls}},
        {"event_name": "gen_ai.tool.message", "attributes": {}, "body": {"content": WEATHER, "id": "call_1"}},
        {
            "event_name": "gen_ai.choice",
            "attributes": {},
            "body": {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "Sunny."},
            },
        },
    ]
    reading = genai_events.read(_span(logs=[{"timestamp_ns": i, **log} for i, log in enumerate(logs)]))
    assert reading is not None
    assert reading.system == SYSTEM_PROMPT
    user, assistant, tool = reading.input_messages
    assert (user.role, user.content) == ("user", QUESTION)
    assert _the_call(assistant) == ("call_1", "get_weather", {"city": "Lisbon"})
    assert (tool.role, tool.content, tool.tool_call_id) == ("tool", WEATHER, "call_1")
    (answer,) = reading.output_messages
    assert (answer.role, answer.content, answer.finish_reason) == ("assistant", "Sunny.", "stop")
    assert reading.finish_reasons == ["stop"]


def test_no_events_no_reading() -> None:
    assert genai_events.read(_span(attributes={"gen_ai.operation.name": "chat"})) is None
    assert genai_events.read(_span(events=[{"name": "exception", "attributes": {}}])) is None
