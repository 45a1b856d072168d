"""The first difference ``diff`` names is one of meaning: a model_input's bookkeeping (the ``observed``
list a cassette built from spans or a chat log keeps, walked in key order before ``tools``) comes
after what the run sent."""

from __future__ import annotations

from typing import Any

from otel_blackbox._cassette.diff.report import diff_cassettes
from otel_blackbox._cassette.diff.text import format_diff
from otel_blackbox._cassette.model import Cassette

TOOL = {"name": "lookup_order", "description": "Look an order up.", "parameters": {"type": "object"}}


def chat(tools: list[Any]) -> Cassette:
    cassette = Cassette(id=f"chat-{len(tools)}", created_at=1)
    observed = ["messages", "model", *(["tools"] if tools else [])]
    payload: dict[str, Any] = {"messages": [{"role": "user", "content": "Where is order 42?"}]}
    payload.update({"model": "gpt-4o", "observed": observed, **({"tools": tools} if tools else {})})
    cassette.append("model_input", payload, 1)
    cassette.append("model_output", {"type": "final_answer", "text": "ok"}, 2)
    cassette.append("metadata", {"event": "run_completed", "status": "success", "result": "ok"}, 3)
    return cassette


def test_tools_offered_on_one_side_are_named_before_the_observed_list() -> None:
    report = diff_cassettes(chat([TOOL]), chat([]))
    assert report.index == 0
    assert report.difference is not None
    assert report.difference.path == "$.payload.tools"
    assert "differs at: $.payload.tools" in format_diff(report)


def test_bookkeeping_alone_is_still_named() -> None:
    one, other = chat([TOOL]), chat([TOOL])
    other.steps.clear()
    payload = {**one.steps[0].payload, "observed": ["messages", "model", "tools", "temperature"]}
    other.append("model_input", payload, 1)
    report = diff_cassettes(one, other)
    assert report.difference is not None
    assert report.difference.path.startswith("$.payload.observed")
