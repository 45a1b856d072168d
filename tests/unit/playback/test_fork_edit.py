"""``fork CASSETTE --at N <change>`` with no program: the parent changed at one step, continued by the
built-in agent.

On the demo's refund incident (the OpenAI Agents SDK's triage agent hands off to a refund agent
whose ``refund_order`` rejects the sloppy model's "12.OO"; examples/handoff_agent.py, recorded by the
processor and made a cassette as the demo does), each kind of change at a step that fits it, the run
continued on two providers' official SDKs against the fake provider: the child verifies, shares the
parent's steps before N hash for hash, records the change as its ``edit``, and ``diff`` names it
first; no tool ran again (the ledger of refunds stays empty). A change that does not fit its step:
one line, exit 2, and no model call.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_llm import THOROUGH_MODEL, FakeLLMServer
from helpers import REFUND_STUB, RefundRun, refund_incident_cassette, run_cli

from otel_blackbox._cassette.diff.report import diff_cassettes
from otel_blackbox._cassette.diff.text import format_diff
from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.verify import verify_cassette

PROVIDERS = ("openai-responses", "anthropic")
FIXED = "outcome: failure fixed: tool error in refund_order → success"
FIXED_CALLS = json.dumps(
    [{"toolName": "refund_order", "toolInput": {"order_id": "Alpha", "amount": "12.00"}}]
)

# (name, options, step, kind, description): step 0 and 6 are requests, 1, 7 and 11 model outputs,
# 3 and 9 tool results (lookup_order's, refund_order's rejection of "12.OO").
CASES = [
    ("set", ["--set", '"refunded 12.00 on order Alpha"'], 9, "tool_result", "tool result of refund_order"),
    ("set-error", ["--set-error", "lookup is down"], 3, "tool_result", "tool error of lookup_order"),
    ("answer", ["--answer", "Refunded 12.00."], 11, "model_output", "model output: an answer"),
    ("calls", ["--calls", FIXED_CALLS], 7, "model_output", "model output: tool calls refund_order"),
    (
        "user",
        ["--user", "Look up my order Alpha and refund 12.00 on it, both please, quickly."],
        0,
        "user_message",
        "user message",
    ),
    ("insert-user", ["--insert-user", "Refund 12.00 on it."], 6, "user_message", "user message inserted"),
    ("system", ["--system", "Refund exactly what was paid."], 6, "system_prompt", "system prompt"),
    (
        "tool",
        ["--tool", 'refund_order={"description": "Refund an amount like 12.00."}'],
        6,
        "tool_definition",
        "definition of tool refund_order",
    ),
]


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def incident(tmp_path_factory: pytest.TempPathFactory, llm: FakeLLMServer) -> tuple[RefundRun, Path]:
    return refund_incident_cassette(tmp_path_factory.mktemp("incident"), llm.openai_base_url)


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Made-up keys, for the SDKs to send (run_cli passes the environment on)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fork-edit-not-a-real-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fork-edit-not-a-real-key")
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def fork(llm: FakeLLMServer, parent: Path, provider: str, out: Path, *change: str) -> tuple[int, str]:
    base = llm.openai_base_url if provider.startswith("openai") else llm.anthropic_base_url
    done = run_cli(
        "fork", str(parent), *change, "--provider", provider, "--model", THOROUGH_MODEL,
        "--base-url", base, "--stub", REFUND_STUB, "-o", str(out),
    )  # fmt: skip
    return done.returncode, done.stderr


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(("name", "change", "step", "kind", "described"), CASES, ids=[c[0] for c in CASES])
def test_each_change_at_a_step_continues_with_the_built_in_agent(
    tmp_path: Path,
    llm: FakeLLMServer,
    incident: tuple[RefundRun, Path],
    provider: str,
    name: str,
    change: list[str],
    step: int,
    kind: str,
    described: str,
) -> None:
    recorded, parent_path = incident
    parent = load_cassette(parent_path)
    child_path = tmp_path / "child.json"
    heard = len(llm.requests)
    code, stderr = fork(llm, parent_path, provider, child_path, "--at", str(step), *change)
    assert code == 0, stderr
    calls = len(llm.requests) - heard
    assert calls == 0 if name == "answer" else calls >= 1  # an answer ends the child: no model call
    assert not recorded.ledger.exists() or recorded.ledger.read_text() == ""  # no refund ran again

    child = load_cassette(child_path)
    assert verify_cassette(child).passed
    assert [s.hash for s in child.steps[:step]] == [s.hash for s in parent.steps[:step]]
    assert child.steps[step].hash != parent.steps[step].hash
    assert (child.parent_id, child.forked_from_step_id) == (parent.id, parent.steps[step].id)
    assert child.edit == {"step": step, "kind": kind, "description": described, "by": "command"}
    assert child.agent is not None and child.agent["provider"] == provider

    report = diff_cassettes(parent, child)
    lines = format_diff(report)
    assert lines[0] == f"edited at step {step}: {described}"
    assert report.to_json()["edit"] == child.edit and report.shared_prefix == step
    if name in ("set", "calls", "system", "tool", "insert-user"):
        assert lines[-1] == FIXED  # the refund the child asked for went through (the stub)

    own = child.steps[step]
    if name == "user":
        assert own.payload["messages"][-1]["content"] == change[1]
    elif name == "insert-user":
        # After the tool round's results (Anthropic's wire joins them in one user turn).
        last = own.payload["messages"][-1]
        assert last["role"] == "user" and change[1] in json.dumps(last)
        assert change[1] not in json.dumps(parent.steps[step].payload)
    elif name == "system":  # this request and every later one
        later = [s.payload["systemPrompt"] for s in child.steps[step:] if s.type == "model_input"]
        assert len(later) >= 2 and set(later) == {change[1]}
    elif name == "tool":
        tools = [t for s in child.steps[step:] if s.type == "model_input" for t in s.payload["tools"]]
        assert {t["description"] for t in tools if t["name"] == "refund_order"} == {
            "Refund an amount like 12.00."
        }
    elif name == "calls":  # numbered after the parent's highest call id (call-2)
        assert own.payload["calls"][0]["toolCallId"] == "call-3"
        stubbed = [s.payload for s in child.steps if s.type == "tool_result" and s.payload.get("stub")]
        assert [p["toolCallId"] for p in stubbed] == ["call-3"]
    elif name == "answer":
        assert own.payload == {"type": "final_answer", "text": change[1]}
        assert child.steps[-1].payload["status"] == "success"

    if provider == "anthropic":  # the child replays offline, with the same agent
        replayed = run_cli("replay", str(child_path))
        assert replayed.returncode == 0, replayed.stderr


def test_a_call_nothing_answers_stops_the_child_and_names_it(
    tmp_path: Path, llm: FakeLLMServer, incident: tuple[RefundRun, Path]
) -> None:
    parent_path = incident[1]
    child_path = tmp_path / "child.json"
    done = run_cli(
        "fork", str(parent_path), "--at", "7", "--calls", FIXED_CALLS, "--provider", "anthropic",
        "--model", THOROUGH_MODEL, "--base-url", llm.anthropic_base_url, "-o", str(child_path),
    )  # fmt: skip
    assert done.returncode == 1
    assert "refund_order" in done.stderr and "failed (unrecorded_tool_call)" in done.stderr
    child = load_cassette(child_path)
    assert verify_cassette(child).passed
    assert child.steps[-1].payload["reason"] == "unrecorded_tool_call"


BAD = [
    (["--at", "9", "--answer", "x"], "--answer/--calls changes a model_output step; step 9 is a tool_result"),
    (["--at", "6", "--set", "1"], "--set/--set-error changes a tool_result step; step 6 is a model_input"),
    (["--at", "99", "--set", "1"], "--at 99: the cassette has steps 0 to 12"),
    (["--at", "6", "--tool", 'nope={"description": "x"}'], "--tool nope: the request at step 6 offers no"),
    (["--at", "6", "--tool", "refund_order={bad"], "not JSON"),
    (["--at", "9", "--set", "{bad"], "not JSON"),
    (["--at", "7", "--calls", "[1]"], 'call 0 has no "toolName"'),
    (
        ["--at", "7", "--calls", '[{"toolName": "made_up", "toolInput": {}}]'],
        "--calls made_up: the request at step 6 offers no such tool (it offers: ",
    ),
    (["--at", "9"], "give exactly one change for step 9"),
    (["--at", "9", "--set", "1", "--answer", "x"], "give exactly one change for step 9"),
    (["--at", "9", "--set", "1", "--live"], "--live is for a program fork"),
    (["--at", "12", "--system", "x"], "step 12 is a metadata"),
]


@pytest.mark.parametrize(("change", "said"), BAD, ids=[" ".join(c) for c, _ in BAD])
def test_a_change_that_does_not_fit_is_one_line_exit_2_before_any_model_call(
    tmp_path: Path, llm: FakeLLMServer, incident: tuple[RefundRun, Path], change: list[str], said: str
) -> None:
    heard = len(llm.requests)
    child_path = tmp_path / "child.json"
    code, stderr = fork(llm, incident[1], "anthropic", child_path, *change)
    assert code == 2 and said in stderr
    assert len(stderr.strip().splitlines()) == 1, stderr
    assert len(llm.requests) == heard and not child_path.exists()


def test_with_a_program_the_built_in_agents_options_are_refused(
    tmp_path: Path, incident: tuple[RefundRun, Path]
) -> None:
    out = str(tmp_path / "child.json")
    done = run_cli(
        "fork", str(incident[1]), "--at", "9", "--set", "1", "--model", "m", "-o", out, "--", "python"
    )
    assert done.returncode == 2 and "--model is for the built-in agent" in done.stderr
