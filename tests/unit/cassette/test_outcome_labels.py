"""A run that completed through a tool error is never labelled a bare success: the cassette line,
``inspect``'s timeline and the verdict's sides name the tool error."""

from __future__ import annotations

from otel_blackbox._cassette.diff.outcome import diff_outcome, outcome_label
from otel_blackbox._cassette.model import Cassette
from otel_blackbox._render.cassette_text import render_timeline


def refund_run(error: bool) -> Cassette:
    cassette = Cassette(id=f"refund-{error}", created_at=1)
    cassette.append("model_input", {"messages": [{"role": "user", "content": "Refund Alpha"}]}, 1)
    call = {"toolCallId": "call-1", "toolName": "refund_order", "toolInput": {"amount": "12.OO"}}
    cassette.append("model_output", {"type": "tool_call", **call}, 2)
    cassette.append("tool_call", call, 3)
    outcome = {"error": "amount is not a number"} if error else {"result": "refunded"}
    cassette.append("tool_result", {"toolCallId": "call-1", "toolName": "refund_order", **outcome}, 4)
    cassette.append("model_input", {"messages": [{"role": "user", "content": "Refund Alpha"}]}, 5)
    cassette.append("model_output", {"type": "final_answer", "text": "done"}, 6)
    cassette.append("metadata", {"event": "run_completed", "status": "success", "result": "done"}, 7)
    return cassette


def test_a_completed_run_with_a_tool_error_says_so() -> None:
    failed, good = refund_run(error=True), refund_run(error=False)
    assert outcome_label(failed) == "success (tool error in refund_order)"
    assert outcome_label(good) == "success"
    assert "outcome success (tool error in refund_order)" in render_timeline(failed)[0]
    verdict = diff_outcome(failed, good)
    assert verdict.kind == "failure_fixed"
    assert (verdict.parent_label, verdict.child_label) == ("success (tool error in refund_order)", "success")
