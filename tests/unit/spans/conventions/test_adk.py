"""The Google ADK reader (``_spans/conventions/adk.py``) on the committed fixtures of
tests/data/conventions/adk/ (google-adk 2.13.0, google-genai 2.34.0; tests/conformance/agents/
adk_agent.py): ``defaults`` (schema 2, no content), ``v1`` (ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1:
``call_llm`` spans with ``gcp.vertex.agent.llm_request`` / ``llm_response``, tool spans with
``tool_call_args`` / ``tool_response``), ``latest`` (GenAI attributes, SPAN_ONLY) and ``events``
(EVENT_ONLY: ``gen_ai.client.inference.operation.details`` log records, joined to their spans by
the store).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conventions import fixture_path, views

from otel_blackbox._spans.conventions import adk
from otel_blackbox._spans.messages import Message
from otel_blackbox._spans.view.model import Reading, SpanView, Tokens
from otel_blackbox._spans.view.trace import model_calls, read_trace
from otel_blackbox._store.queries import SpanRecord

SYSTEM_PROMPT = "You are a weather assistant. Always use the tools."
QUESTION = "What's the weather in Lisbon?"
WEATHER = json.dumps({"city": "Lisbon", "temperature_c": 21, "conditions": "sunny"})
MODEL = "gemini-2.5-flash"
VARIANTS = ("defaults", "v1", "latest", "events")
# The fake's token counts for the two calls (the same request each time, whatever the variant).
TOKENS = (Tokens(input=57, output=7), Tokens(input=126, output=19))

Viewed = list[tuple[SpanRecord, SpanView]]


def _viewed(name: str, tmp_path: Path) -> Viewed:
    return views(fixture_path("adk", name), tmp_path / "blackbox.db")


def _named(viewed: Viewed, prefix: str) -> list[tuple[SpanRecord, SpanView]]:
    return [(span, view) for span, view in viewed if span.name.startswith(prefix)]


def _read(span: SpanRecord) -> Reading:
    reading = adk.read(span)
    assert reading is not None, span.name
    return reading


def _the_call(message: Message) -> tuple[str, dict[str, object]]:
    (call,) = message.tool_calls
    return call.tool_name, json.loads(call.tool_input)


def _check_conversation(first: SpanView, second: SpanView) -> None:
    """The two model calls of the run: the question, the tool call, its result, the final answer."""
    for view in (first, second):
        assert view.kind == "LLM"
        assert view.model == MODEL
        assert view.system is not None and view.system.startswith(SYSTEM_PROMPT)
        assert [t.get("name") for t in view.tools] == ["get_weather"]
        assert view.no_content is None
    assert [(m.role, m.content) for m in first.input_messages] == [("user", QUESTION)]
    (asked,) = first.output_messages
    assert asked.role == "assistant"
    assert _the_call(asked) == ("get_weather", {"city": "Lisbon"})
    user, assistant, tool = second.input_messages
    assert (user.role, user.content) == ("user", QUESTION)
    assert _the_call(assistant) == ("get_weather", {"city": "Lisbon"})
    assert tool.role == "tool"
    assert json.loads(tool.content or "") == {"result": WEATHER}  # as the model saw it, in ADK's envelope
    (answer,) = second.output_messages
    assert (answer.role, answer.content) == ("assistant", f"Final answer: {WEATHER}")
    assert second.finish_reasons == ["stop"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_kinds(variant: str, tmp_path: Path) -> None:
    viewed = _viewed(f"{variant}-ok", tmp_path)
    kinds = {span.name: view.kind for span, view in viewed}
    root = "invocation" if variant == "v1" else "invoke_workflow weather_agent"
    assert kinds[root] == "CHAIN"
    assert kinds["invoke_agent weather_agent"] == "AGENT"
    assert kinds[f"generate_content {MODEL}"] == "LLM"
    assert kinds["execute_tool get_weather"] == "TOOL"
    assert ("call_llm" in kinds) == (variant == "v1")
    for span, _ in viewed:
        assert adk.read(span) is not None, span.name  # every span is ADK's (scope gcp.vertex.agent)


def test_not_adk() -> None:
    attributes = {"gen_ai.operation.name": "chat"}
    span = SpanRecord(
        "t", "s", None, "chat", "CLIENT", None, "ok", None, 0, 1, 1, 1, None, None, None,
        None, None, None, None, None, attributes, scope={"name": "x"},
    )  # fmt: skip
    assert adk.read(span) is None


def test_defaults_name_the_setting(tmp_path: Path) -> None:
    """Schema 2 records no content by default: the model calls say which setting turns it on."""
    viewed = _viewed("defaults-ok", tmp_path)
    calls = _named(viewed, "generate_content")
    assert len(calls) == 2
    for (_, view), tokens in zip(calls, TOKENS, strict=True):
        assert view.kind == "LLM"
        assert view.model == MODEL
        assert view.provider == "gcp.gemini"
        assert view.tokens == tokens
        assert not view.has_content
        assert view.no_content == adk.CONTENT_OFF
        assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in view.no_content
        assert "\n" not in view.no_content
        assert [t["name"] for t in view.tools] == ["get_weather"]  # ADK names its tools even so
    ((_, tool),) = _named(viewed, "execute_tool")
    assert tool.tool is not None
    assert (tool.tool.name, tool.tool.arguments, tool.tool.result) == ("get_weather", None, None)
    for _, view in viewed:
        if view.kind != "LLM":
            assert view.no_content is None


def test_v1_call_llm(tmp_path: Path) -> None:
    """Schema 1: the conversation is ADK's ``gcp.vertex.agent.llm_request`` / ``llm_response``."""
    viewed = _viewed("v1-ok", tmp_path)
    (first_span, first), (second_span, second) = _named(viewed, "call_llm")
    _check_conversation(first, second)
    for span, view in ((first_span, first), (second_span, second)):
        assert "adk" in view.readers
        reading = _read(span)
        assert (
            reading.system == SYSTEM_PROMPT + '\n\nYou are an agent. Your internal name is "weather_agent".'
        )
        assert reading.tools[0]["parameters"]["properties"] == {"city": {"title": "City", "type": "string"}}
    assert _read(first_span).tokens == Tokens(input=57, output=7, total=64)
    assert _read(second_span).tokens == Tokens(input=126, output=19, total=145)
    assert first.tokens is not None and (first.tokens.input, first.tokens.output) == (57, 7)
    assert second.output_messages[0].finish_reason == "stop"


def test_v1_generate_content_is_not_marked(tmp_path: Path) -> None:
    """Schema 1's ``generate_content`` (the stable GenAI conventions, its log records' content
    ``<elided>``) leaves the messages to its ``call_llm`` parent: not a call without content."""
    viewed = _viewed("v1-ok", tmp_path)
    calls = _named(viewed, "generate_content")
    assert len(calls) == 2
    for (span, view), tokens in zip(calls, TOKENS, strict=True):
        assert view.kind == "LLM"
        assert view.tokens == tokens
        assert view.no_content is None
        parent = next(s for s, _ in viewed if s.span_id == span.parent_span_id)
        assert parent.name == "call_llm"


def test_v1_each_call_counted_once_with_its_conversation(tmp_path: Path) -> None:
    """``call_llm`` and its ``generate_content`` are one model call: counted once, the span that
    holds the conversation (``call_llm``) giving it."""
    spans = [span for span, _ in _viewed("v1-ok", tmp_path)]
    for span in spans:
        span.view = None
    counted = model_calls(read_trace(spans))
    assert [s.name for s in counted] == ["call_llm", "call_llm"]
    first = counted[0].view
    assert isinstance(first, SpanView)
    assert [(m.role, m.content) for m in first.input_messages] == [("user", QUESTION)]


def test_v1_tool_span(tmp_path: Path) -> None:
    viewed = _viewed("v1-ok", tmp_path)
    ((span, view),) = _named(viewed, "execute_tool")
    reading = adk.read(span)
    assert reading is not None and reading.tool is not None
    assert reading.kind == "TOOL"
    assert reading.tool.name == "get_weather"
    assert json.loads(reading.tool.arguments) == {"city": "Lisbon"}
    assert reading.tool.result == WEATHER  # out of ADK's {"result": ...}
    assert view.kind == "TOOL"
    assert view.tool is not None
    assert view.tool.name == "get_weather"
    assert json.loads(view.tool.arguments) == {"city": "Lisbon"}
    assert view.tool.result == WEATHER
    assert view.tool.error is None


def test_latest(tmp_path: Path) -> None:
    """SPAN_ONLY: the GenAI attributes on the spans (the genai reader), the tool's arguments and
    result on its span (``gen_ai.tool.call.*``, the result unwrapped here)."""
    viewed = _viewed("latest-ok", tmp_path)
    (first_span, first), (_, second) = _named(viewed, "generate_content")
    _check_conversation(first, second)
    assert (first.tokens, second.tokens) == TOKENS
    assert first.provider == "gcp.gemini"
    reading = adk.read(first_span)
    assert reading is not None and (reading.kind, reading.no_content) == ("LLM", None)
    ((span, view),) = _named(viewed, "execute_tool")
    assert view.tool is not None
    assert view.tool.name == "get_weather"
    assert json.loads(view.tool.arguments) == {"city": "Lisbon"}
    assert view.tool.result is not None and "sunny" in view.tool.result
    tool = _read(span).tool
    assert tool is not None and tool.result == WEATHER


def test_events(tmp_path: Path) -> None:
    """EVENT_ONLY: the content is in the spans' log records; the ADK reader does not mark those
    calls as without content."""
    viewed = _viewed("events-ok", tmp_path)
    calls = _named(viewed, "generate_content")
    (first_span, first), (second_span, second) = calls
    for span in (first_span, second_span):
        assert [log["event_name"] for log in span.logs] == ["gen_ai.client.inference.operation.details"]
        reading = adk.read(span)
        assert reading is not None and (reading.kind, reading.no_content) == ("LLM", None)
    _check_conversation(first, second)
    assert (first.tokens, second.tokens) == TOKENS
    ((_, tool),) = _named(viewed, "execute_tool")
    assert tool.tool is not None
    # ADK puts a tool's arguments and result on its span only in the span modes.
    assert (tool.tool.name, tool.tool.arguments, tool.tool.result) == ("get_weather", None, None)


@pytest.mark.parametrize("variant", VARIANTS)
def test_tool_error(variant: str, tmp_path: Path) -> None:
    viewed = _viewed(f"{variant}-tool-error", tmp_path)
    ((span, view),) = _named(viewed, "execute_tool")
    assert view.kind == "TOOL"
    assert view.is_tool
    assert view.tool is not None
    assert view.tool.name == "get_weather"
    assert view.tool.error == "RuntimeError: weather service unavailable"
    assert view.tool.result is None
    reading = adk.read(span)
    assert reading is not None and reading.tool is not None
    assert reading.tool.result is None  # ADK's {"result": "<not specified>"}: no result
    if variant in ("v1", "latest"):
        assert json.loads(reading.tool.arguments) == {"city": "Lisbon"}
    (call,) = _named(viewed, "call_llm" if variant == "v1" else "generate_content")
    if variant != "defaults":
        (asked,) = call[1].output_messages
        assert _the_call(asked) == ("get_weather", {"city": "Lisbon"})
