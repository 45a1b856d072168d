"""``--stub-tools`` end to end: a refund tool that writes a ledger is never run again, on every framework.

Each case is a real program run as a user runs it, under the real CLI (``python -m otel_blackbox._cli``),
against examples/fake_llm.py on 127.0.0.1: examples/ledger_agent.py on each of its frameworks (the
OpenAI Agents SDK with the refund agent used as a tool, LangChain's ``create_agent``, a LangGraph
``StateGraph`` with a ``ToolNode``, pydantic-ai with ``refund_order`` in a toolset of its own, a plain
OpenAI-SDK loop whose tools are wrapped in ``otel_blackbox.stubbable``), and examples/handoff_agent.py
(an Agents SDK handoff). ``refund_order`` appends a line to the ``--ledger`` file: the side effect
that must happen once. Each case is recorded once (``record``: the ledger then holds one line), then:

- ``replay --stub-tools``, with the provider stopped, gives the recorded answer and leaves the ledger
  as it was; the framework's tool spans still happen and carry ``blackbox.tool.stubbed = true``;
- the same replay without ``--stub-tools`` runs the tool again: the ledger grows, the spans are not
  marked. This is the proof that the other assertions can fail;
- ``fork --at N --set ... --script ... --stub-tools`` (N: the refund's tool_result) answers the
  scripted answer, the child holds the replacement, the ledger is untouched;
- ``rerun --stub-tools`` with the (fake) model live answers every call from the incident: the same
  answer, the same tool results in the child, the ledger untouched;
- a miss in each mode: in replay (a cassette with the refund's result cut out, as a run killed in
  the tool would leave it) a divergence naming the call, exit 1; in fork (a scripted call with an
  amount never recorded) and in rerun (a question about another order) the tool does not run, a
  ``[blackbox]`` note names the call, and with ``--run-unrecorded-tools`` it does run: the ledger grows.

Last, the two usage errors of ``--run-unrecorded-tools``. Every run writes under pytest's tmp dirs.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fake_llm import FakeLLMServer
from helpers import EXAMPLES, run_cli

from otel_blackbox._cassette.io import load_cassette, save_cassette
from otel_blackbox._cassette.model import Cassette, Step
from otel_blackbox._spans.semconv import ATTR_SESSION_MODE, ATTR_TOOL_STUBBED

BETA = "Look up order Beta and refund 12 on it, both please."
DECLINED = "refund declined"
SCRIPTED = "Final answer: the refund was declined, sorry."
TRIED_13 = "Final answer: I tried refunding 13."
# A scripted model call the parent never made: a refund of 13.
REFUND_13_CALL = {
    "toolCallId": "call-13",
    "toolName": "refund_order",
    "toolInput": {"order_id": "Alpha", "amount": 13},
}
REFUND_13 = {"type": "tool_calls", "calls": [REFUND_13_CALL]}


@dataclass(frozen=True)
class Case:
    id: str
    program: tuple[str, ...]  # the program and its first arguments, before --base-url
    amount: str  # what the recorded refund wrote: the agent-as-tool and the handoff refund 1
    beta_amount: str  # what the refund of order Beta writes (the handoff's refund agent takes the 12)
    # How many model calls follow the fork at the refund's result: the agents case forks inside the
    # refund agent used as a tool, so the refund agent answers, then the triage agent.
    answers_after_fork: int
    # The tool spans of a replay, by tool name: True for a function tool the stubber answers; False
    # for the agent used as a tool and the handoff, which run their agent (its model calls replayed).
    tool_spans: dict[str, bool]
    # The tool seam knows the model's call id (a framework's does; stubbable's plain function does not,
    # so a plain loop's calls are told apart by name and arguments).
    call_ids: bool = True


def _ledger_agent(framework: str) -> tuple[str, ...]:
    return (sys.executable, str(EXAMPLES / "ledger_agent.py"), framework)


FUNCTION_TOOLS = {"lookup_order": True, "refund_order": True}
CASES = [
    Case("agents", _ledger_agent("agents"), "1.00", "1.00", 2, {**FUNCTION_TOOLS, "refunds": False}),
    Case("langchain", _ledger_agent("langchain"), "12.00", "12.00", 1, FUNCTION_TOOLS),
    Case("langgraph", _ledger_agent("langgraph"), "12.00", "12.00", 1, FUNCTION_TOOLS),
    Case("pydantic-ai", _ledger_agent("pydantic-ai"), "12.00", "12.00", 1, FUNCTION_TOOLS),
    # The plain loop makes no tool span at all (no framework, and stubbable adds none): an empty
    # set is what its replay must show, stubbed or not.
    Case("openai", _ledger_agent("openai"), "12.00", "12.00", 1, {}, call_ids=False),
    Case(
        "handoff",
        (sys.executable, str(EXAMPLES / "handoff_agent.py")),
        "1.00",
        "12.00",
        1,
        {**FUNCTION_TOOLS, "handoff to Refund Agent": False},
    ),
]


@dataclass(frozen=True)
class Recording:
    case: Case
    cassette: Path
    ledger: Path  # the ledger as the recording left it: one line
    base_url: str  # the recording's provider, stopped since
    answer: str

    def command(self, directory: Path, base_url: str = "", *extra: str) -> tuple[list[str], Path, Path]:
        """The program's command line with a fresh --db and a copy of the recorded ledger, both in
        ``directory``; and those two paths."""
        directory.mkdir(parents=True, exist_ok=True)
        db, ledger = directory / "spans.db", directory / "ledger.txt"
        shutil.copy(self.ledger, ledger)
        argv = [*self.case.program, "--base-url", base_url or self.base_url, "--db", str(db)]
        return [*argv, "--ledger", str(ledger), *extra], db, ledger

    def refund_result(self) -> Step:
        (step,) = [s for s in load_cassette(self.cassette).steps_of("tool_result") if _is_refund(s)]
        return step


def _is_refund(step: Step) -> bool:
    return isinstance(step.payload, dict) and step.payload.get("toolName") == "refund_order"


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _answer(stdout: str) -> str:
    lines = stdout.strip().splitlines()
    return lines[-1] if lines else ""


def _tool_results(path: Path) -> list[Any]:
    return [s.payload for s in load_cassette(path).steps_of("tool_result")]


def _tool_spans(db: Path) -> dict[str, bool]:
    """The replay's tool spans in the program's span database: tool name -> blackbox.tool.stubbed."""
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT name, attributes FROM spans").fetchall()
    finally:
        conn.close()
    spans: dict[str, bool] = {}
    modes: set[Any] = set()
    for name, text in rows:
        attributes = json.loads(text)
        modes.add(attributes.get(ATTR_SESSION_MODE))
        if attributes.get("openinference.span.kind") == "TOOL" or "gen_ai.tool.name" in attributes:
            tool = attributes.get("gen_ai.tool.name") or attributes.get("tool.name") or name
            assert tool not in spans, f"two spans of {tool}"
            spans[tool] = attributes.get(ATTR_TOOL_STUBBED) is True
    assert rows and modes == {"replay"}, modes  # a fresh database: this replay's spans only
    return spans


def _write_script(path: Path, replies: list[Any]) -> Path:
    path.write_text(json.dumps(replies), encoding="utf-8")
    return path


@pytest.fixture(scope="module", params=CASES, ids=[c.id for c in CASES])
def recording(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Recording]:
    """The case recorded once, its provider stopped after: a replay that reached it would fail."""
    case: Case = request.param
    directory = tmp_path_factory.mktemp(f"record-{case.id}")
    cassette, ledger = directory / "rec.json", directory / "ledger.txt"
    with FakeLLMServer() as server:
        base_url = server.openai_base_url
        argv = [*case.program, "--base-url", base_url, "--db", str(directory / "spans.db")]
        recorded = run_cli("record", "-o", str(cassette), "--", *argv, "--ledger", str(ledger))
    assert recorded.returncode == 0, recorded.stderr
    assert _lines(ledger) == [f"refund Alpha {case.amount}"]
    # What every stubbing session answers from: each function tool's recorded result.
    results = [s.payload.get("toolName") for s in load_cassette(cassette).steps_of("tool_result")]
    assert {"lookup_order", "refund_order"} <= set(results), f"the recording lost a tool result: {results}"
    answer = _answer(recorded.stdout)
    assert answer.startswith("Final answer:") and "Alpha" in answer, recorded.stdout
    yield Recording(case, cassette, ledger, base_url, answer)


def test_replay_with_stub_tools_runs_no_tool(recording: Recording, tmp_path: Path) -> None:
    argv, db, ledger = recording.command(tmp_path)
    replayed = run_cli("replay", str(recording.cassette), "--stub-tools", "--", *argv)
    assert replayed.returncode == 0, replayed.stderr
    assert _answer(replayed.stdout) == recording.answer
    assert _lines(ledger) == [f"refund Alpha {recording.case.amount}"]  # the refund did not happen again
    assert _tool_spans(db) == recording.case.tool_spans  # the spans happen, the answered ones marked


def test_replay_without_stub_tools_runs_the_tools(recording: Recording, tmp_path: Path) -> None:
    """The same replay without --stub-tools: the refund runs again. The test above can fail."""
    argv, db, ledger = recording.command(tmp_path)
    replayed = run_cli("replay", str(recording.cassette), "--", *argv)
    assert replayed.returncode == 0, replayed.stderr
    assert _answer(replayed.stdout) == recording.answer
    assert _lines(ledger) == [f"refund Alpha {recording.case.amount}"] * 2
    assert _tool_spans(db) == dict.fromkeys(recording.case.tool_spans, False)


def test_fork_with_stub_tools_continues_from_the_replacement(recording: Recording, tmp_path: Path) -> None:
    at = recording.refund_result().index
    replies = [{"type": "final_answer", "text": SCRIPTED}] * recording.case.answers_after_fork
    script = _write_script(tmp_path / "script.json", replies)
    child = tmp_path / "child.json"
    argv, _, ledger = recording.command(tmp_path)
    forked = run_cli("fork", str(recording.cassette), "--at", str(at), "--set", json.dumps(DECLINED),
                     "--script", str(script), "--stub-tools", "-o", str(child), "--", *argv)  # fmt: skip
    assert forked.returncode == 0, forked.stderr
    assert _answer(forked.stdout) == SCRIPTED
    assert _lines(ledger) == [f"refund Alpha {recording.case.amount}"]
    step = load_cassette(child).steps[at]
    assert step.type == "tool_result" and step.payload["result"] == DECLINED
    assert "[blackbox] the model called" not in forked.stderr  # every call was answered


def test_rerun_with_stub_tools_answers_every_call_from_the_incident(
    recording: Recording, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    """The model live (a fake server still running), the tools answered by name and arguments."""
    child = tmp_path / "child.json"
    argv, _, ledger = recording.command(tmp_path, fake_llm.openai_base_url)
    rerun = run_cli("rerun", str(recording.cassette), "--stub-tools", "-o", str(child), "--", *argv)
    assert rerun.returncode == 0, rerun.stderr
    assert _answer(rerun.stdout) == recording.answer
    assert _lines(ledger) == [f"refund Alpha {recording.case.amount}"]
    assert _tool_results(child) == _tool_results(recording.cassette)
    assert "[blackbox] the model called" not in rerun.stderr


def test_replay_miss_is_a_divergence_naming_the_call(recording: Recording, tmp_path: Path) -> None:
    """The refund's result cut out of the cassette, as a run killed inside the tool leaves it."""
    parent = load_cassette(recording.cassette)
    refund = recording.refund_result()
    cut = Cassette(id=f"{parent.id}-cut", created_at=parent.created_at, api=parent.api)
    for step in parent.steps:
        if step.index != refund.index:
            cut.append(step.type, step.payload, step.timestamp)
    save_cassette(cut, tmp_path / "cut.json")
    argv, _, ledger = recording.command(tmp_path)
    replayed = run_cli("replay", str(tmp_path / "cut.json"), "--stub-tools", "--", *argv)
    assert replayed.returncode == 1, replayed.stderr
    if recording.case.call_ids:
        miss = f"[blackbox] tool call {refund.payload['toolCallId']} refund_order("
        assert miss in replayed.stderr and "has no recorded result" in replayed.stderr, replayed.stderr
    else:
        miss = '[blackbox] refund_order({"amount":12,"order_id":"Alpha"}) has no recorded result'
        assert miss in replayed.stderr, replayed.stderr
    assert _lines(ledger) == [f"refund Alpha {recording.case.amount}"]


@pytest.mark.parametrize("run_unrecorded", [False, True], ids=["not-run", "run-unrecorded-tools"])
def test_fork_miss_is_a_tool_error_or_runs_for_real(
    recording: Recording, tmp_path: Path, run_unrecorded: bool
) -> None:
    """After the fork the script calls refund_order with an amount the parent never refunded."""
    at = recording.refund_result().index
    replies = [REFUND_13] + [{"type": "final_answer", "text": TRIED_13}] * recording.case.answers_after_fork
    script = _write_script(tmp_path / "script.json", replies)
    child = tmp_path / "child.json"
    argv, _, ledger = recording.command(tmp_path)
    options = ["--stub-tools"] + (["--run-unrecorded-tools"] if run_unrecorded else [])
    forked = run_cli("fork", str(recording.cassette), "--at", str(at), "--set", json.dumps(DECLINED),
                     "--script", str(script), *options, "-o", str(child), "--", *argv)  # fmt: skip
    assert forked.returncode == 0, forked.stderr
    assert _answer(forked.stdout) == TRIED_13
    assert load_cassette(child).steps[at].payload["result"] == DECLINED
    recorded = [f"refund Alpha {recording.case.amount}"]
    if run_unrecorded:
        assert _lines(ledger) == [*recorded, "refund Alpha 13.00"]
        ran = '[blackbox] refund_order({"amount":13,"order_id":"Alpha"}) was not recorded: it ran for real'
        assert ran in forked.stderr, forked.stderr
    else:
        assert _lines(ledger) == recorded
        note = '[blackbox] the model called refund_order({"amount":13,"order_id":"Alpha"})'
        assert note in forked.stderr, forked.stderr


@pytest.mark.parametrize("run_unrecorded", [False, True], ids=["not-run", "run-unrecorded-tools"])
def test_rerun_miss_is_a_tool_error_or_runs_for_real(
    recording: Recording, fake_llm: FakeLLMServer, tmp_path: Path, run_unrecorded: bool
) -> None:
    """A question about order Beta: the live model calls the tools with arguments never recorded."""
    child = tmp_path / "child.json"
    argv, _, ledger = recording.command(tmp_path, fake_llm.openai_base_url, "--question", BETA)
    options = ["--stub-tools"] + (["--run-unrecorded-tools"] if run_unrecorded else [])
    rerun = run_cli("rerun", str(recording.cassette), *options, "-o", str(child), "--", *argv)
    assert rerun.returncode == 0, rerun.stderr
    recorded = [f"refund Alpha {recording.case.amount}"]
    if run_unrecorded:
        assert _lines(ledger) == [*recorded, f"refund Beta {recording.case.beta_amount}"]
        ran = '[blackbox] lookup_order({"order_id":"Beta"}) was not recorded: it ran for real'
        assert ran in rerun.stderr, rerun.stderr
        assert "Beta" in _answer(rerun.stdout)
    else:
        assert _lines(ledger) == recorded
        note = '[blackbox] the model called lookup_order({"order_id":"Beta"}), which the incident'
        assert f"{note} did not record" in rerun.stderr, rerun.stderr
        assert "[blackbox] the model called refund_order(" in rerun.stderr


def _tiny_cassette(path: Path) -> Path:
    cassette = Cassette(id="tiny", created_at=1_700_000_000_000)
    cassette.append("model_input", {"messages": [{"role": "user", "content": "hi"}]}, 1_700_000_000_001)
    cassette.append("model_output", {"type": "final_answer", "text": "hello"}, 1_700_000_000_002)
    save_cassette(cassette, path)
    return path


def test_run_unrecorded_tools_usage_errors(tmp_path: Path) -> None:
    """Exit 2 before any program runs: replay has no such option; rerun takes it only with --stub-tools."""
    cassette = _tiny_cassette(tmp_path / "tiny.json")
    ran = tmp_path / "ran"
    program = [sys.executable, "-c", f"open({str(ran)!r}, 'w')"]
    replayed = run_cli("replay", str(cassette), "--run-unrecorded-tools", "--", *program)
    assert replayed.returncode == 2, replayed.stderr
    assert "No such option" in replayed.stderr and "--run-unrecorded-tools" in replayed.stderr
    child = tmp_path / "child.json"
    rerun = run_cli("rerun", str(cassette), "-o", str(child), "--run-unrecorded-tools", "--", *program)
    assert rerun.returncode == 2, rerun.stderr
    assert "--run-unrecorded-tools goes with --stub-tools" in rerun.stderr
    assert not ran.exists() and not child.exists()
