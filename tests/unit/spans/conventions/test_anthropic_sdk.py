"""The Anthropic SDK's own spans (anthropic 2.x, scope com.anthropic.sdk.python), captured from the
real SDK (tests/conformance/agents/anthropic_sdk_agent.py): under openinference-instrumentation-
anthropic, each model call is two LLM spans that must count as one, the instrumentor's holding the
conversation; alone, the SDK's spans say how to record the messages."""

from __future__ import annotations

from pathlib import Path

import pytest
from conventions import fixture_path, stored_spans

from otel_blackbox._cassette.from_spans.cassette import cassette_from_spans
from otel_blackbox._cassette.model import terminal_outcome
from otel_blackbox._cassette.verify import verify_cassette
from otel_blackbox._cost.spans import is_priced_call, span_price, spans_cost
from otel_blackbox._spans.conventions.anthropic_sdk import SCOPE
from otel_blackbox._spans.view.registry import view_of
from otel_blackbox._spans.view.trace import model_calls, read_trace
from otel_blackbox._store.queries import SpanRecord
from otel_blackbox.errors import CassetteError

SYSTEM_PROMPT = "You are a weather assistant. Always use the tools."


def _spans(tmp_path: Path, name: str) -> list[SpanRecord]:
    return read_trace(stored_spans(fixture_path("anthropic_sdk", name), tmp_path / "blackbox.db"))


def test_each_call_is_counted_once_and_read_from_the_instrumentor(tmp_path: Path) -> None:
    spans = _spans(tmp_path, "openinference-ok")
    llm = [s for s in spans if view_of(s).kind == "LLM"]
    sdk = [s for s in llm if s.scope.get("name") == SCOPE]
    assert len(llm) == 4 and len(sdk) == 2  # two calls, each described twice
    calls = model_calls(spans)
    assert len(calls) == 2 and all(c.scope.get("name") != SCOPE for c in calls)
    for inner in sdk:  # the SDK's span is the same call as its parent, the instrumentor's
        assert view_of(inner).same_call_as == inner.parent_span_id
        assert not is_priced_call(inner)
    first = view_of(calls[0])
    assert first.system == SYSTEM_PROMPT or any(m.content == SYSTEM_PROMPT for m in first.input_messages)
    assert [c.tool_name for m in first.output_messages for c in m.tool_calls] == ["get_weather"]
    assert view_of(sdk[0]).finish_reasons == ["tool_use"]
    # Tokens: each call's once (the same counts are on both spans).
    tokens = [view_of(c).tokens for c in calls]
    assert all(t is not None and t.input and t.output for t in tokens)
    cost = spans_cost(spans)
    assert cost.usd is not None and cost.unpriced == 0
    priced = [span_price(c) for c in calls]
    assert cost.usd == sum(p.usd for p in priced if p is not None)  # two priced calls, not four


def test_the_cassette_takes_the_span_with_the_conversation(tmp_path: Path) -> None:
    cassette = cassette_from_spans(_spans(tmp_path, "openinference-ok"))
    kinds = [s.type for s in cassette.steps]
    assert kinds.count("model_input") == 2 and kinds.count("tool_call") == 1
    first = next(cassette.steps_of("model_input")).payload
    assert first["systemPrompt"] == SYSTEM_PROMPT
    assert first["messages"][0]["content"] == "What's the weather in Lisbon?"
    assert terminal_outcome(cassette).status == "success"
    assert verify_cassette(cassette).first_failure is None


def test_the_sdk_alone_says_how_to_record_messages(tmp_path: Path) -> None:
    spans = _spans(tmp_path, "sdk-ok")
    (first, _second) = [s for s in spans if view_of(s).kind == "LLM"]
    view = view_of(first)
    assert view.provider == "anthropic" and view.tokens is not None and view.tokens.input
    assert view.no_content is not None and "openinference-instrumentation-anthropic" in view.no_content
    with pytest.raises(CassetteError, match="recorded no messages: the Anthropic SDK's own spans"):
        cassette_from_spans(spans)


def test_a_failing_tool_is_a_tool_error(tmp_path: Path) -> None:
    spans = _spans(tmp_path, "openinference-tool-error")
    (tool,) = [s for s in spans if view_of(s).kind == "TOOL"]
    used = view_of(tool).tool
    assert used is not None and used.name == "get_weather"
    assert used.error == "RuntimeError: weather service unavailable"
