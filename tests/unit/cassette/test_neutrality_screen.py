"""The neutrality audit's cheap screen never hides a finding that the full walk would report."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_blackbox._cassette.model import Cassette
from otel_blackbox._cassette.neutrality import MODEL_OUTPUT_KEYS, _Audit, audit_neutrality

# Fragments that findings are made of, mixed with ordinary text and characters JSON escapes.
WORDS = [
    "toolu_01abc9", "msg_7x", "call_" + "a" * 24, "chatcmpl-ABCDEFGH12", "resp_" + "b" * 16, "fc_" + "c" * 16,
    "OPENAI_API_KEY", "usage", "stop_reason", "id", "sk-ant-api03-" + "x" * 30, "sk-proj-" + "y" * 30,
    "Bearer abcdefghijklmnop", '"api_key": "hunter2hunter2"', "postgres://u:secretpass@h/db",
    "weather", "Paris", "\n", '"', "\\", "\t", " ", "call-0", "result", "toolInput",
]  # fmt: skip
text = st.lists(st.sampled_from(WORDS), max_size=5).map("".join)
json_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(text, children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None, database=None)
@given(
    payloads=st.lists(st.tuples(st.sampled_from(["model_output", "tool_result"]), json_values), max_size=4)
)
def test_screen_agrees_with_the_full_walk(payloads: list[tuple[str, Any]]) -> None:
    cassette = Cassette("c", 0)
    for step_type, payload in payloads:
        cassette.append(step_type, payload, 0)
    full = _Audit()
    for position, step in enumerate(cassette.steps):
        base = f"$.steps[{position}]"
        full.string(step.id, f"{base}.id", position, user_data=False)
        full.string(step.type, f"{base}.type", position, user_data=False)
        forbidden = MODEL_OUTPUT_KEYS if step.type == "model_output" else frozenset()
        full.walk(step.payload, f"{base}.payload", position, forbidden)
    assert audit_neutrality(cassette) == full.findings
