"""The OpenInference reader (``_spans/conventions/openinference.py``) on the committed fixtures of
tests/data/conventions/openinference/, each written by a conformance agent
(tests/conformance/agents/) on the real package against the fake provider:

- ``openai``: openinference-instrumentation-openai 0.1.66 on openai 3.63, the agent and its tool
  OITracer's ``agent`` / ``tool`` spans (openinference-instrumentation 0.1.72);
- ``langchain``: openinference-instrumentation-langchain 0.1.80, ``create_agent`` (langchain 1.5,
  langgraph 1.2) on ``ChatOpenAI``;
- ``smolagents``: openinference-instrumentation-smolagents 0.1.43, smolagents 1.26 ``ToolCallingAgent``;
- ``litellm``: openinference-instrumentation-litellm 0.1.51, litellm 1.110 ``completion``;
- ``llamaindex``: openinference-instrumentation-llama-index 4.6.1, llama-index-core 0.14 ``FunctionAgent``;
- ``crewai``: openinference-instrumentation-crewai 1.1.21 with the OpenAI instrumentor, crewai 1.15.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conventions import fixture_path, views

from otel_blackbox._spans.messages import Message
from otel_blackbox._spans.view.model import SpanView, Tokens
from otel_blackbox._store.queries import SpanRecord

SYSTEM_PROMPT = "You are a weather assistant. Always use the tools."
QUESTION = "What's the weather in Lisbon?"
WEATHER = json.dumps({"city": "Lisbon", "temperature_c": 21, "conditions": "sunny"})
ERROR = "RuntimeError: weather service unavailable"

Viewed = list[tuple[SpanRecord, SpanView]]

# framework -> (the first model call's tokens, the root span's name and kind, the tool span's name)
FRAMEWORKS: dict[str, tuple[Tokens | None, str, str, str]] = {
    "openai": (Tokens(input=36, output=7, total=43), "weather_agent", "AGENT", "get_weather"),
    "langchain": (Tokens(input=36, output=7, total=43), "LangGraph", "CHAIN", "get_weather"),
    "smolagents": (Tokens(input=935, output=7, total=942), "ToolCallingAgent.run", "AGENT", "SimpleTool"),
    "litellm": (Tokens(input=36, output=7, total=43), "weather_agent", "AGENT", "get_weather"),
    # FunctionAgent streams, and LlamaIndex's OpenAI asks for no usage in the stream: no counts.
    "llamaindex": (None, "FunctionAgent.run", "CHAIN", "FunctionTool.acall"),
    "crewai": (Tokens(input=62, output=7, total=69), "Weather assistant.kickoff", "AGENT", "get_weather.run"),
}
MODELS = {"litellm": "openai/gpt-4o-mini"}  # as the caller named it: the provider prefix stays


def _viewed(name: str, tmp_path: Path) -> Viewed:
    return views(fixture_path("openinference", name), tmp_path / "blackbox.db")


def _calls(viewed: Viewed) -> list[SpanView]:
    return [view for _, view in viewed if view.is_model_call]


def _tool(viewed: Viewed, name: str) -> SpanView:
    (view,) = [view for span, view in viewed if span.name == name]
    return view


def _arguments(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _the_call(message: Message) -> tuple[str, dict[str, object]]:
    (call,) = message.tool_calls
    return call.tool_name, _arguments(call.tool_input)


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
def test_first_model_call(framework: str, tmp_path: Path) -> None:
    tokens, *_ = FRAMEWORKS[framework]
    first = _calls(_viewed(f"{framework}-ok", tmp_path))[0]
    assert first.kind == "LLM"
    assert first.readers[0] == "openinference"
    assert first.model == MODELS.get(framework, "gpt-4o-mini")
    assert first.provider == "openai"
    system, user = first.input_messages
    # smolagents and CrewAI write their own system prompt around the agent's instructions.
    assert system.role == "system" and SYSTEM_PROMPT in (system.content or "")
    assert user.role == "user" and QUESTION in (user.content or "")
    (asked,) = first.output_messages
    assert asked.role == "assistant"
    assert _the_call(asked) == ("get_weather", {"city": "Lisbon"})
    assert first.tools[0]["function"]["name"] == "get_weather"
    assert first.tokens == tokens


@pytest.mark.parametrize("framework", sorted(set(FRAMEWORKS) - {"smolagents"}))
def test_the_answer_quotes_the_tool_result(framework: str, tmp_path: Path) -> None:
    calls = _calls(_viewed(f"{framework}-ok", tmp_path))
    assert len(calls) == 2
    *_, assistant, tool = calls[1].input_messages
    asked = calls[0].output_messages[0]
    assert _the_call(assistant) == ("get_weather", {"city": "Lisbon"})
    assert (tool.role, tool.content) == ("tool", WEATHER)
    if framework != "litellm":  # LiteLLM's instrumentor records no tool_call_id on the tool message
        assert tool.tool_call_id == asked.tool_calls[0].tool_call_id
    (answer,) = calls[1].output_messages
    assert (answer.role, answer.content) == ("assistant", f"Final answer: {WEATHER}")


def test_smolagents_answers_after_its_last_step(tmp_path: Path) -> None:
    """smolagents sends tool results back as user messages ("Observation: ...") and ends only on its
    ``final_answer`` tool, which the fake never calls: after its one step (max_steps=1) it asks the
    model for an answer without tools. Its own roles (``tool-call``, ``tool-response``) are kept."""
    first, last = _calls(_viewed("smolagents-ok", tmp_path))
    assert [t["function"]["name"] for t in first.tools] == ["get_weather", "final_answer"]
    roles = [m.role for m in last.input_messages]
    assert roles == ["system", "user", "tool-call", "tool-response", "user"]
    assert last.input_messages[3].content == f"Observation:\n{WEATHER}"
    (answer,) = last.output_messages
    assert (answer.content or "").startswith("Final answer: ") and "sunny" in (answer.content or "")


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
def test_root_and_tool_spans(framework: str, tmp_path: Path) -> None:
    _, root_name, root_kind, tool_name = FRAMEWORKS[framework]
    viewed = _viewed(f"{framework}-ok", tmp_path)
    roots = [(span, view) for span, view in viewed if span.parent_span_id is None]
    assert [(span.name, view.kind) for span, view in roots] == [(root_name, root_kind)]
    tool = _tool(viewed, tool_name)
    assert tool.kind == "TOOL" and tool.is_tool
    assert tool.tool is not None
    assert tool.tool.name == "get_weather"
    assert tool.tool.result == WEATHER
    assert tool.tool.error is None
    if framework == "langchain":  # LangChain's tool input: the one argument's value
        assert tool.tool.arguments == "Lisbon"
    else:  # not tool.parameters, which holds the tool's parameter schema
        assert _arguments(tool.tool.arguments) == {"city": "Lisbon"}


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
def test_tool_error(framework: str, tmp_path: Path) -> None:
    *_, tool_name = FRAMEWORKS[framework]
    viewed = _viewed(f"{framework}-tool-error", tmp_path)
    tool = _tool(viewed, tool_name)
    assert tool.kind == "TOOL"
    assert tool.tool is not None
    assert (tool.tool.name, tool.tool.error, tool.tool.result) == ("get_weather", ERROR, None)
    calls = _calls(viewed)
    if framework == "langchain":  # create_agent's ToolNode re-raises: the run ends there
        assert len(calls) == 1
        return
    (answer,) = calls[-1].output_messages
    assert "weather service unavailable" in (answer.content or "")
    assert (answer.content or "").startswith("Final answer: ")


@pytest.mark.parametrize("framework", ["openai", "langchain", "litellm", "llamaindex"])
def test_finish_reasons(framework: str, tmp_path: Path) -> None:
    calls = _calls(_viewed(f"{framework}-ok", tmp_path))
    assert [view.finish_reasons for view in calls] == [["tool_calls"], ["stop"]]


def test_llamaindex_prepare_chat_with_tools_is_no_call(tmp_path: Path) -> None:
    viewed = _viewed("llamaindex-ok", tmp_path)
    prepared = [view for span, view in viewed if span.name == "OpenAI._prepare_chat_with_tools"]
    assert len(prepared) == 2
    for view in prepared:
        assert view.not_a_call is not None
        assert view.kind is None and not view.is_model_call
    assert [span.name for span, view in viewed if view.is_model_call] == ["OpenAI.astream_chat"] * 2


def test_llamaindex_tool_output_is_unwrapped(tmp_path: Path) -> None:
    viewed = _viewed("llamaindex-ok", tmp_path)
    (span,) = [span for span, _ in viewed if span.name == "FunctionTool.acall"]
    recorded = json.loads(span.attributes["output.value"])
    assert set(recorded) == {"blocks", "tool_name", "raw_input", "raw_output", "is_error"}
    assert recorded["raw_output"] == WEATHER
    assert _tool(viewed, "FunctionTool.acall").tool.result == WEATHER  # type: ignore[union-attr]


def test_agent_spans_say_what_went_in_and_out(tmp_path: Path) -> None:
    for framework in ("openai", "litellm"):
        agent = _tool_free_root(_viewed(f"{framework}-ok", tmp_path))
        assert (agent.input_text, agent.output_text) == (QUESTION, f"Final answer: {WEATHER}")
        tmp_path = tmp_path / framework  # a database each
        tmp_path.mkdir()
    smolagents = _tool_free_root(_viewed("smolagents-ok", tmp_path))
    # smolagents counts the run's tokens on its agent span too; only model calls count.
    assert smolagents.tokens == Tokens(input=1130, output=59, total=1189)
    assert not smolagents.counts


def _tool_free_root(viewed: Viewed) -> SpanView:
    (view,) = [view for span, view in viewed if span.parent_span_id is None]
    assert view.kind == "AGENT"
    return view
