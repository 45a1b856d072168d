"""How a conversation ended (``conversation.incomplete``), the TOOL span of each call and the end of a
conversation's timeline named without making its spans (``otlp.tool_span_ids``, ``otlp.end_ns``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from otel_blackbox._spans.semconv import ATTR_RUN_INCOMPLETE
from otel_blackbox._spans.transcripts import otlp
from otel_blackbox._spans.transcripts.conversation import Conversation, Keys, ToolCall, Turn, incomplete

MS = 1_000_000
WEATHER = ToolCall("call_1", "get_weather", '{"city": "Paris"}')
HANDOFF = ToolCall("call_ab12", "transfer_to_human_agents", '{"summary": "refund over the limit"}')


def spans_of(conversation: Conversation, base_ns: int = 0) -> list[dict[str, Any]]:
    document = otlp.otlp_document(conversation, Keys("trace", "spans"), base_ns)
    spans: list[dict[str, Any]] = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    return spans


def attributes(span: dict[str, Any]) -> dict[str, Any]:
    return {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}


@pytest.mark.parametrize(
    ("turns", "why"),
    [
        ((Turn("user", "hi"), Turn("assistant", "Hello.")), None),
        (
            (Turn("user", "Weather?"), Turn("assistant", "", (WEATHER,))),
            "the call get_weather (call_1) was never answered",
        ),
        (
            (Turn("user", "Both?"), Turn("assistant", "", (WEATHER, HANDOFF))),
            "the calls get_weather (call_1), transfer_to_human_agents (call_ab12) were never answered",
        ),
        (
            (
                Turn("user", "I want a refund"),
                Turn("assistant", "", (HANDOFF,)),
                Turn("tool", "Transfer successful", call_id="call_ab12"),
            ),
            "the call transfer_to_human_agents (call_ab12) has a result but no model answer after it",
        ),
        (  # a result with no id: matched to its call by the tool's name
            (
                Turn("user", "Weather?"),
                Turn("assistant", "", (WEATHER,)),
                Turn("tool", "18 C", name="get_weather"),
            ),
            "the call get_weather (call_1) has a result but no model answer after it",
        ),
        (
            (Turn("user", "hi"), Turn("assistant", "Hello."), Turn("user", "Are you there?")),
            "the last user message has no answer",
        ),
        ((Turn("user", "hi"), Turn("assistant", "overloaded", is_error=True)), None),  # failed, not stopped
        (  # what follows a compaction or a context-only turn does not hide the last answer
            (Turn("user", "hi"), Turn("assistant", "Hello."), Turn("compaction")),
            None,
        ),
    ],
)
def test_a_conversation_is_incomplete_when_the_model_did_not_have_the_last_word(
    turns: tuple[Turn, ...], why: str | None
) -> None:
    assert incomplete(turns) == why
    root = spans_of(Conversation(turns))[-1]
    assert attributes(root).get(ATTR_RUN_INCOMPLETE) == why
    assert root["status"] == ({"code": 0} if why else {"code": 1})
    if why:
        assert root["attributes"][0]["key"] == ATTR_RUN_INCOMPLETE  # first: kept when stored apart


def test_a_failed_ending_keeps_its_error_and_the_reason_stays_short() -> None:
    failed = spans_of(Conversation((Turn("user", "hi"), Turn("assistant", "API Error: 529", is_error=True))))
    assert failed[0]["status"] == {"code": 2, "message": "API Error: 529"} and failed[-1]["status"] == {
        "code": 1
    }
    long_call = ToolCall("c" * 300, "t" * 300, "{}")
    why = incomplete((Turn("user", "go"), Turn("assistant", "", (long_call,))))
    assert why is not None and len(why) == 400 and why.endswith("…")


def test_tool_span_ids_and_the_end_are_those_of_the_spans() -> None:
    grep = ToolCall("call_3", "grep", "{}")
    turns = (
        Turn("user", "go", time_ns=10_000 * MS),
        Turn("assistant", "", (WEATHER, HANDOFF), time_ns=10_001 * MS),
        Turn("tool", "done", call_id="call_ab12", time_ns=10_006 * MS),  # answered before call_1
        Turn("tool", "18 C", call_id="call_1", time_ns=10_009 * MS),
        Turn("compaction"),
        Turn("assistant", "", (grep, ToolCall("call_4", "never", "{}")), time_ns=10_010 * MS),
        Turn("tool", "found", call_id="call_3"),
        Turn("assistant", "Done.", context_only=True),
        Turn("assistant", "Done."),
    )
    conversation = Conversation(turns, call_metadata={"call_ab12": {"agent_id": "a1b2c3d"}})
    keys = Keys("trace", "spans")
    spans = spans_of(conversation, base_ns=5)
    tools = {
        attributes(s)["tool.name"]: s for s in spans if attributes(s)["openinference.span.kind"] == "TOOL"
    }
    assert otlp.tool_span_ids(conversation, keys) == {
        "call_1": tools["get_weather"]["spanId"],
        "call_ab12": tools["transfer_to_human_agents"]["spanId"],
        "call_3": tools["grep"]["spanId"],
    }
    assert json.loads(attributes(tools["transfer_to_human_agents"])["metadata"]) == {"agent_id": "a1b2c3d"}
    assert "metadata" not in attributes(tools["get_weather"])
    assert otlp.end_ns(conversation, 5) == int(spans[-1]["endTimeUnixNano"])
    # The two calls of one turn ran at once: each TOOL span ends at its own result, and they overlap.
    weather, handoff = tools["get_weather"], tools["transfer_to_human_agents"]
    assert int(weather["startTimeUnixNano"]) < int(handoff["startTimeUnixNano"])
    assert int(handoff["endTimeUnixNano"]) == 10_006 * MS and int(weather["endTimeUnixNano"]) == 10_009 * MS
    starts = [int(s["startTimeUnixNano"]) for s in spans[:-1]]
    assert starts == sorted(set(starts))  # the order is still the conversation's
    plain = Conversation((Turn("user", "a"), Turn("assistant", "", (WEATHER, HANDOFF)), Turn("tool", "x")))
    assert otlp.end_ns(plain, 7 * MS) == int(spans_of(plain, 7 * MS)[-1]["endTimeUnixNano"])
