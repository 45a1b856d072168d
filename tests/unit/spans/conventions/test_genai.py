"""The GenAI span-attribute reader (``_spans/conventions/genai.py``) on the committed fixtures of
tests/data/conventions/genai/, each written by a conformance agent (tests/conformance/agents/) on
the real package against the fake provider:

- ``openai-v2``: opentelemetry-instrumentation-openai-v2 2.4b0 (opentelemetry-util-genai 1.1b0) with
  ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY`` and
  ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``, the agent and its tool
  util-genai's ``invoke_agent`` / ``execute_tool`` spans;
- ``pydantic-ai``: pydantic-ai-slim 2.78 ``Agent`` with ``instrument = True`` on ``OpenAIChatModel``.

And the chat-style ``{role, content}`` messages mozilla-ai/any-agent writes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conventions import fixture_path, views

from otel_blackbox._spans.conventions import genai
from otel_blackbox._spans.messages import Message
from otel_blackbox._spans.view.model import SpanView, Tokens
from otel_blackbox._store.queries import SpanRecord

SYSTEM_PROMPT = "You are a weather assistant. Always use the tools."
QUESTION = "What's the weather in Lisbon?"
WEATHER = json.dumps({"city": "Lisbon", "temperature_c": 21, "conditions": "sunny"})

Viewed = list[tuple[SpanRecord, SpanView]]


def _viewed(name: str, tmp_path: Path) -> Viewed:
    return views(fixture_path("genai", name), tmp_path / "blackbox.db")


def _named(viewed: Viewed, prefix: str) -> list[SpanView]:
    return [view for span, view in viewed if span.name.startswith(prefix)]


def _the_call(message: Message) -> tuple[str, str, dict[str, object]]:
    (call,) = message.tool_calls
    return call.tool_call_id, call.tool_name, json.loads(call.tool_input)


def test_openai_v2_model_calls(tmp_path: Path) -> None:
    first, second = _named(_viewed("openai-v2-ok", tmp_path), "chat gpt-4o-mini")
    for view in (first, second):
        assert (view.kind, view.model, view.provider) == ("LLM", "gpt-4o-mini", "openai")
        assert view.readers[0] == "genai"
        assert view.system is None  # openai-v2 keeps the system prompt a message of the input
    system, user = first.input_messages
    assert [(m.role, m.content) for m in (system, user)] == [("system", SYSTEM_PROMPT), ("user", QUESTION)]
    (asked,) = first.output_messages
    call_id, tool, arguments = _the_call(asked)
    assert (asked.role, tool, arguments, asked.finish_reason) == (
        "assistant",
        "get_weather",
        {"city": "Lisbon"},
        "tool_calls",
    )
    assert first.tokens == Tokens(input=36, output=7)
    assert first.finish_reasons == ["tool_calls"]

    *_, assistant, tool_message = second.input_messages
    assert _the_call(assistant) == (call_id, "get_weather", {"city": "Lisbon"})
    assert (tool_message.role, tool_message.content, tool_message.tool_call_id) == ("tool", WEATHER, call_id)
    (answer,) = second.output_messages
    assert (answer.role, answer.content) == ("assistant", f"Final answer: {WEATHER}")
    assert second.tokens == Tokens(input=119, output=19)
    assert second.finish_reasons == ["stop"]


def test_openai_v2_agent_and_tool(tmp_path: Path) -> None:
    viewed = _viewed("openai-v2-ok", tmp_path)
    (agent,) = _named(viewed, "invoke_agent")
    assert (agent.kind, agent.model) == ("AGENT", "gpt-4o-mini")
    (tool,) = _named(viewed, "execute_tool")
    assert tool.kind == "TOOL"
    assert tool.tool is not None
    assert (tool.tool.name, json.loads(tool.tool.arguments), tool.tool.result, tool.tool.error) == (
        "get_weather",
        {"city": "Lisbon"},
        WEATHER,
        None,
    )


def test_openai_v2_tool_error(tmp_path: Path) -> None:
    viewed = _viewed("openai-v2-tool-error", tmp_path)
    (tool,) = _named(viewed, "execute_tool")
    assert tool.kind == "TOOL"
    assert tool.tool is not None
    # util-genai sets the status (and error.type), no exception event.
    assert (tool.tool.name, tool.tool.error, tool.tool.result) == (
        "get_weather",
        "weather service unavailable",
        None,
    )
    (span,) = [span for span, view in viewed if view is tool]
    assert span.attributes["error.type"] == "RuntimeError"
    *_, last = _named(viewed, "chat")
    assert last.input_messages[-1].content == "Error: weather service unavailable"
    assert last.output_messages[0].content == "Final answer: Error: weather service unavailable"


def test_pydantic_ai_model_calls(tmp_path: Path) -> None:
    first, second = _named(_viewed("pydantic-ai-ok", tmp_path), "chat gpt-4o-mini")
    for view in (first, second):
        assert (view.kind, view.model, view.provider) == ("LLM", "gpt-4o-mini", "openai")
        assert view.system == SYSTEM_PROMPT
        assert [t["name"] for t in view.tools] == ["get_weather"]
        assert view.tools[0]["parameters"]["properties"] == {"city": {"type": "string"}}
    assert [(m.role, m.content) for m in first.input_messages] == [("user", QUESTION)]
    (asked,) = first.output_messages
    call_id, tool, arguments = _the_call(asked)
    assert (tool, arguments, asked.finish_reason) == ("get_weather", {"city": "Lisbon"}, "tool_call")
    assert first.tokens == Tokens(input=36, output=7)

    # pydantic-ai sends the tool's result as a tool_call_response part of a user message.
    user, assistant, tool_message = second.input_messages
    assert (user.role, user.content) == ("user", QUESTION)
    assert _the_call(assistant) == (call_id, "get_weather", {"city": "Lisbon"})
    assert (tool_message.role, tool_message.content, tool_message.tool_call_id) == ("tool", WEATHER, call_id)
    assert tool_message.name == "get_weather"
    (answer,) = second.output_messages
    assert (answer.content, answer.finish_reason) == (f"Final answer: {WEATHER}", "stop")
    assert second.tokens == Tokens(input=123, output=19)
    assert second.finish_reasons == ["stop"]


def test_pydantic_ai_agent_and_tool(tmp_path: Path) -> None:
    viewed = _viewed("pydantic-ai-ok", tmp_path)
    (agent,) = _named(viewed, "invoke_agent")
    assert agent.kind == "AGENT"
    assert agent.system == SYSTEM_PROMPT
    # Its gen_ai.aggregated_usage.* is no model call's: the agent counts no tokens of its own.
    assert agent.tokens is None
    (tool,) = _named(viewed, "execute_tool")
    assert tool.tool is not None
    assert (tool.kind, tool.tool.name, json.loads(tool.tool.arguments), tool.tool.result) == (
        "TOOL",
        "get_weather",
        {"city": "Lisbon"},
        WEATHER,
    )


def test_pydantic_ai_tool_error(tmp_path: Path) -> None:
    viewed = _viewed("pydantic-ai-tool-error", tmp_path)
    (tool,) = _named(viewed, "execute_tool")
    assert tool.tool is not None
    assert (tool.kind, tool.tool.name, tool.tool.error) == (
        "TOOL",
        "get_weather",
        "RuntimeError: weather service unavailable",
    )
    assert len(_named(viewed, "chat")) == 1  # the tool's exception ends pydantic-ai's run


def _any_agent_messages() -> list[dict[str, Any]]:
    """What any-agent's tinyagent hands ``_set_llm_input`` (``kwargs["messages"]``, litellm's chat
    messages), for the second call of the weather run."""
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": QUESTION},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Lisbon"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": WEATHER},
    ]


@pytest.mark.parametrize("parsed", [False, True], ids=["json-text", "parsed"])
def test_any_agent_chat_style_messages(parsed: bool) -> None:
    """mozilla-ai/any-agent (src/any_agent/callbacks/span_generation/base.py, ``_set_llm_input``)
    writes ``gen_ai.input.messages`` as ``json.dumps(messages, default=str, ensure_ascii=False)`` of
    the chat messages its framework sends: ``{role, content, tool_calls?, tool_call_id?}``."""
    messages = _any_agent_messages()
    value: Any = messages if parsed else json.dumps(messages, default=str, ensure_ascii=False)
    span = SpanRecord(
        trace_id="1" * 32,
        span_id="2" * 16,
        parent_span_id=None,
        name="call_llm gpt-4o-mini",
        span_kind="INTERNAL",
        oi_span_kind=None,
        status="ok",
        status_message=None,
        start_ns=0,
        end_ns=1,
        duration_ns=1,
        written_ns=1,
        session_id=None,
        user_id=None,
        model="gpt-4o-mini",
        prompt_tokens=119,
        completion_tokens=19,
        total_tokens=None,
        tool_name=None,
        pid=None,
        attributes={
            "gen_ai.operation.name": "call_llm",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.input.messages": value,
            "gen_ai.usage.input_tokens": 119,
            "gen_ai.usage.output_tokens": 19,
        },
    )
    reading = genai.read(span)
    assert reading is not None
    system, user, assistant, tool = reading.input_messages
    assert [(m.role, m.content) for m in (system, user)] == [("system", SYSTEM_PROMPT), ("user", QUESTION)]
    assert (assistant.role, assistant.content) == ("assistant", None)
    assert [(c.tool_call_id, c.tool_name, json.loads(c.tool_input)) for c in assistant.tool_calls] == [
        ("call_1", "get_weather", {"city": "Lisbon"})
    ]
    assert (tool.role, tool.content, tool.tool_call_id, tool.name) == (
        "tool",
        WEATHER,
        "call_1",
        "get_weather",
    )
    assert reading.model == "gpt-4o-mini"
    assert reading.tokens == Tokens(input=119, output=19)
