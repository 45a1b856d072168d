"""The MCP tool ``fork_from_step``: ``fork CASSETTE --at N <change>`` with no program, driven by the
official MCP client over stdio.

On the demo's refund incident (test_fork_edit.py's parent: ``refund_order`` rejects the sloppy
model's "12.OO"), the server, whose environment points the SDKs at the fake provider, changes one
step and lets the built-in agent go on: the child verifies, shares the parent's steps before the
change hash for hash, records the change as its ``edit`` by "mcp", and the answer carries diff's
verdict; no tool ran again. A bad argument, or a change that does not fit its step: one line, a
tool error, no child and no model call.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple, get_args

import pytest
from fake_llm import THOROUGH_MODEL, FakeLLMServer
from helpers import RefundRun, refund_incident_cassette
from mcp import ClientSession
from test_mcp import failed, ok, serve

from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.model import Cassette
from otel_blackbox._cassette.verify import verify_cassette
from otel_blackbox._mcp.playback_tools import Change
from otel_blackbox._playback.agent.edit import CHANGES

REFUNDED = "refunded 12.00 on order Alpha"
STUBS = {"refund_order": REFUNDED}
FIXED = "failure fixed: tool error in refund_order → success"
CALLS = [{"toolName": "refund_order", "toolInput": {"order_id": "Alpha", "amount": "12.00"}}]


class Case(NamedTuple):
    name: str
    provider: str
    step: int
    change: str
    value: Any
    stubs: dict[str, Any] | None
    kind: str  # the child's edit: its kind and description
    described: str
    ended: str  # the answer's exit


CASES = [
    # A string is the result's JSON text.
    Case("set", "openai-responses", 9, "set", json.dumps(REFUNDED), STUBS, "tool_result",
         "tool result of refund_order", "completed"),
    Case("system", "anthropic", 6, "system", "Refund exactly what was paid.", STUBS, "system_prompt",
         "system prompt", "completed"),
    # The calls as a JSON list, not its text.
    Case("calls", "openai-responses", 7, "calls", CALLS, STUBS, "model_output",
         "model output: tool calls refund_order", "completed"),
    # No stub for the new call: nothing answers it, and the child stops there, before any model call.
    Case("calls-unanswered", "anthropic", 7, "calls", CALLS, None, "model_output",
         "model output: tool calls refund_order", "stopped"),
]  # fmt: skip


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def incident(tmp_path_factory: pytest.TempPathFactory, llm: FakeLLMServer) -> tuple[RefundRun, Path]:
    return refund_incident_cassette(tmp_path_factory.mktemp("incident"), llm.openai_base_url)


def _env(llm: FakeLLMServer) -> dict[str, str]:
    """The server's environment: made-up keys, and each SDK's base URL at the fake provider."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_") and not k.endswith("_BASE_URL")}
    return {
        **env,
        "OPENAI_API_KEY": "sk-mcp-fork-not-a-real-key",
        "ANTHROPIC_API_KEY": "sk-ant-mcp-fork-not-a-real-key",
        "OPENAI_BASE_URL": llm.openai_base_url,
        "ANTHROPIC_BASE_URL": llm.anthropic_base_url,
    }


def test_each_change_continues_with_the_built_in_agent(
    tmp_path: Path, llm: FakeLLMServer, incident: tuple[RefundRun, Path]
) -> None:
    """The cases in one server (the SDKs imported once): each answer, and the model calls it made."""
    recorded, parent_path = incident
    (tmp_path / "set.json").write_text("an older child")  # replaced: overwrite=true

    async def body(session: ClientSession) -> list[tuple[dict[str, Any], int]]:
        answers = []
        for case in CASES:
            heard = len(llm.requests)
            arguments = {
                "cassette": str(parent_path), "step": case.step, "change": case.change,
                "value": case.value, "output": str(tmp_path / f"{case.name}.json"),
                "provider": case.provider, "model": THOROUGH_MODEL, "overwrite": case.name == "set",
                **({"stubs": case.stubs} if case.stubs else {}),
            }  # fmt: skip
            answer = json.loads(await ok(session, "fork_from_step", **arguments))
            answers.append((answer, len(llm.requests) - heard))
        return answers

    answers = serve(tmp_path / "blackbox.db", tmp_path, body, env=_env(llm))
    assert not recorded.ledger.exists() or recorded.ledger.read_text() == ""  # no refund ran again
    for case, (answer, calls) in zip(CASES, answers, strict=True):
        _check(case, load_cassette(parent_path), tmp_path / f"{case.name}.json", answer, calls)


def _check(case: Case, parent: Cassette, child_path: Path, answer: dict[str, Any], calls: int) -> None:
    step = case.step
    assert calls >= 1 if case.ended == "completed" else calls == 0, case.name  # the model went on, live
    child = load_cassette(child_path)
    assert verify_cassette(child).passed
    assert [s.hash for s in child.steps[:step]] == [s.hash for s in parent.steps[:step]]
    assert child.steps[step].hash != parent.steps[step].hash
    assert child.edit == {"step": step, "kind": case.kind, "description": case.described, "by": "mcp"}
    assert child.agent is not None and child.agent["provider"] == case.provider
    assert answer["child"] == str(child_path) and answer["edit"] == child.edit
    assert answer["exit"] == case.ended and answer["sharedPrefix"] == step
    assert answer["report"][0] == f"edited at step {step}: {case.described}"
    assert answer["report"][-1] == f"outcome: {answer['verdict']}"
    assert answer["outcome"]["parent"] == "success (tool error in refund_order)"
    assert answer["cost"] and "cost_usd" in answer
    if case.ended == "completed":
        assert answer["outcome"]["child"] == "success"
        assert answer["verdict"] == FIXED and "stopped" not in answer
    else:
        assert answer["outcome"]["child"] == "error" and answer["stopped"] == "unrecorded_tool_call"
    own = child.steps[step].payload
    if case.change == "set":
        assert own["result"] == REFUNDED
    elif case.change == "system":  # this request and every later one
        later = [s.payload["systemPrompt"] for s in child.steps[step:] if s.type == "model_input"]
        assert len(later) >= 2 and set(later) == {case.value}
    else:
        assert [c["toolName"] for c in own["calls"]] == ["refund_order"]


def test_bad_input_is_one_line_before_any_model_call(
    tmp_path: Path, llm: FakeLLMServer, incident: tuple[RefundRun, Path]
) -> None:
    parent_path = incident[1]
    before = parent_path.read_bytes()
    child = tmp_path / "child.json"
    taken = tmp_path / "taken.json"
    taken.write_text("keep me")
    data = json.loads(before)
    data["steps"][0]["payload"]["messages"][0]["content"] = "Refund everything."
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(data))
    base = {"cassette": str(parent_path), "output": str(child), "model": THOROUGH_MODEL}
    bad: list[tuple[dict[str, Any], str]] = [
        ({"step": 99, "change": "set", "value": "1"}, "--at 99: the cassette has steps 0 to 12"),
        ({"step": 9, "change": "answer", "value": "x"}, "step 9 is a tool_result"),
        ({"step": 6, "change": "set", "value": "1"}, "step 6 is a model_input"),
        ({"step": 9, "change": "set", "value": "{bad"}, "value: not JSON: '{bad': for set, a string is JSON"),
        ({"step": 7, "change": "calls", "value": [1]}, 'call 0 has no "toolName"'),
        ({"step": 6, "change": "system", "value": {"a": 1}}, 'value: system takes a string, not {"a": 1}'),
        ({"step": 6, "change": "tool", "value": {"name": "refund_order"}}, "value: tool takes {"),
        ({"step": 6, "change": "tool", "value": "refund_order={bad"}, "value: --tool: not JSON"),
        ({"step": 6, "change": "nope", "value": "x"}, "bad arguments: change: Input should be 'set'"),
        ({"step": -1, "change": "set", "value": "1"}, "bad arguments: step: Input should be greater"),
        ({"step": 9, "change": "set", "value": "1", "model": " "}, "model: give a model name"),
        ({"step": 9, "change": "set", "value": "1", "max_cost": "-1"}, "max_cost: a budget must be"),
        ({"step": 9, "change": "set", "value": "1", "output": str(parent_path)}, "overwrite the parent"),
        ({"step": 9, "change": "set", "value": "1", "output": str(taken)}, "exists: pass overwrite=true"),
        ({"step": 9, "change": "set", "value": "1", "stubs": {"nope": 1}}, "--stub nope: the incident never"),
        ({"step": 9, "change": "set", "value": "1", "cassette": str(edited)}, f"{edited} fails verify"),
    ]
    heard = len(llm.requests)

    async def body(session: ClientSession) -> None:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        fork = tools["fork_from_step"]
        assert fork.annotations is not None and fork.annotations.open_world_hint
        assert fork.input_schema["properties"]["change"]["enum"] == list(CHANGES)
        for arguments, said in bad:
            line = await failed(session, "fork_from_step", **{**base, **arguments})
            assert said in line, (arguments, line)

    serve(tmp_path / "blackbox.db", tmp_path, body, env=_env(llm))
    assert len(llm.requests) == heard and not child.exists()
    assert parent_path.read_bytes() == before and taken.read_text() == "keep me"


def test_the_changes_are_the_cli_s() -> None:
    assert get_args(Change) == CHANGES
