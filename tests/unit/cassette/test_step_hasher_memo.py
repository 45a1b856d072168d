"""``StepHasher``: the hash of every step is ``hash_step``'s, on the Blackbox vectors and on long
conversations whose steps share their message objects (as a recording's do), with the corners of
canonical JSON in the messages; it keeps the bytes of one conversation only."""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers import VECTOR_NAMES, vector_path

from otel_blackbox._cassette.canonical import StepHasher, hash_step
from otel_blackbox._cassette.model import Cassette
from otel_blackbox._playback.record import Recorder
from otel_blackbox._spans.redact import Redactor
from otel_blackbox._wire.call_ids import CallIds


@pytest.mark.parametrize("name", VECTOR_NAMES)
def test_the_vectors_hash_as_recorded(name: str) -> None:
    hasher = StepHasher()
    for step in json.loads(vector_path(name).read_text(encoding="utf-8"))["steps"]:
        args = (step["index"], step["type"], step["timestamp"], step["payload"], step["prevHash"])
        assert hasher.hash_step(*args) == hash_step(*args) == step["hash"]


def _message(r: int) -> dict[str, Any]:
    # The corners where Python's encoder and JavaScript's differ: floats, exponents, big ints,
    # keys outside the BMP, a lone surrogate, non-ASCII.
    corners: list[Any] = [1.0, 1e-7, 1e21, 2**60, "\ud800", "é😀", True, None]
    return {
        "role": "user" if r % 2 else "assistant",
        "content": [
            {"type": "tool_result", "toolCallId": f"call-{r}", "result": "x" * 2048, "v": corners[r % 8]}
        ],
        "\U0001f600k" if r % 3 == 0 else "zk": r,
    }


def test_a_long_conversation_hashes_as_hash_step_turn_after_turn() -> None:
    hasher, prev = StepHasher(), None
    messages: list[dict[str, Any]] = []
    params: dict[str, Any] = {"temperature": 0.5}
    for r in range(150):
        messages = [*messages, _message(r)]  # a new list each turn, the old messages the same objects
        payload = {"tools": [], "systemPrompt": "s", "messages": messages, "params": params, "model": "m"}
        got = hasher.hash_step(2 * r, "model_input", 1_700_000_000_000 + r, payload, prev)
        assert got == hash_step(2 * r, "model_input", 1_700_000_000_000 + r, payload, prev), r
        prev = got


def test_another_history_the_same_steps_and_odd_payloads_hash_as_hash_step() -> None:
    hasher = StepHasher()
    messages = [_message(r) for r in range(20)]
    cases: list[Any] = [
        {"messages": messages},
        {"messages": messages[:5]},  # shorter: starts over
        {"messages": [*messages[:3], {"role": "user", "content": "other"}, *messages[4:]]},
        {"messages": [dict(m) for m in messages]},  # equal, other objects
        {"messages": []},
        {"messages": "not a list"},
        {"output": 1},
        [1, 2],
        {"messages": messages, "a": 1, "~": {"b": [1.5]}},
    ]
    for n, payload in enumerate(cases):
        assert hasher.hash_step(n, "model_input", 0, payload, "ab" * 32) == hash_step(
            n, "model_input", 0, payload, "ab" * 32
        )


def test_the_hasher_keeps_one_conversation() -> None:
    hasher = StepHasher()
    for run in range(50):  # many reruns in one process, one hasher each or the same
        messages = [{"role": "user", "content": f"run {run} message {i}"} for i in range(40)]
        for turn in range(1, 41):
            hasher.hash_step(turn, "model_input", 0, {"messages": messages[:turn]}, None)
    assert len(hasher._texts) == 40 and len(hasher._messages) == 40


def test_a_recorder_shares_the_messages_it_already_recorded() -> None:
    cassette = Cassette(id="c", created_at=0)
    recorder = Recorder(cassette, path=None, redactor=Redactor(enabled=False), ids=CallIds())  # type: ignore[arg-type]
    history: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for r in range(30):
        read = json.loads(json.dumps({"messages": history}))  # what the wire gives: new objects
        recorder.record_model(read, {"type": "final_answer", "text": f"a{r}"})
        history = [
            *history,
            {"role": "assistant", "content": f"a{r}"},
            {"role": "user", "content": [{"type": "text", "text": "x" * 2048}]},
        ]
    inputs = [s for s in cassette.steps if s.type == "model_input"]
    assert all(
        s.hash == hash_step(s.index, s.type, s.timestamp, s.payload, s.prev_hash) for s in cassette.steps
    )
    assert all(
        a is b for a, b in zip(inputs[-1].payload["messages"], inputs[-2].payload["messages"], strict=False)
    )
    assert inputs[-1].payload["messages"] == history[:-2]
