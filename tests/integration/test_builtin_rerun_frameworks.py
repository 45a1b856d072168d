"""The built-in rerun of incidents that real frameworks recorded through the processor alone.

The issue's own incident: an OpenAI Agents SDK triage agent hands off to a refund agent whose
``refund_order(order_id, amount: float)`` rejects the sloppy model's ``"12.OO"``
(examples/handoff_agent.py). The processor records it; ``cassette --run`` turns it into a cassette;
the built-in agent reruns it with another model, ``--stub`` answering the refund the incident never
made. The ledger the tool writes is untouched, the child follows the handoff, and ``diff`` says the
failure is fixed. The same program run live with the good model does write the ledger: the check can
fail. Then one pydantic-ai and one LangChain incident (examples/framework_agent.py), rerun alike,
their tool API hearing nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_llm import SLOPPY_MODEL, FakeLLMServer
from helpers import EXAMPLES, blocked_network, run_cli
from weather_api import WeatherAPI

from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.model import terminal_outcome
from otel_blackbox._cassette.verify import verify_cassette
from otel_blackbox._cost.cassettes import cassette_cost
from otel_blackbox._playback.agent.run import replay_built_in

QUESTION = "Look up my order Alpha and refund 12.00 on it, both please."
GOOD_MODEL = "gpt-4o-mini"
REFUND_INSTRUCTIONS = "You refund orders. Refund the amount the order was paid."


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return {**env, "PYTHONPATH": str(EXAMPLES)}


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=_env(), timeout=120)


def _cassette_of_the_run(db: Path, path: Path) -> None:
    (run,) = json.loads(run_cli("runs", "--json", db=db, check=True).stdout)
    run_cli("cassette", "--run", run["run_id"][:8], "-o", str(path), db=db, check=True)


@pytest.fixture
def provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-builtin-framework-0123456789")


def test_the_refund_incident_reruns_without_refunding_and_the_failure_is_fixed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider_env: None
) -> None:
    ledger = tmp_path / "ledger.txt"
    ledger.write_text("refund Zeta 3.00\n")  # an earlier refund: the file must stay exactly this
    agent = [str(EXAMPLES / "handoff_agent.py"), "--question", QUESTION, "--ledger", str(ledger)]
    with FakeLLMServer() as llm:
        base = ["--base-url", llm.openai_base_url]
        db = tmp_path / "blackbox.db"
        incident_run = _run([*agent, *base, "--db", str(db), "--model", SLOPPY_MODEL, "--require-refund"])
        assert incident_run.returncode == 1 and "no refund went through" in incident_run.stderr
        assert ledger.read_text() == "refund Zeta 3.00\n"
        incident = tmp_path / "incident.json"
        _cassette_of_the_run(db, incident)

        # The control: the same program with the good model really refunds (the ledger can change).
        control = _run([*agent, *base, "--db", str(tmp_path / "control.db"), "--model", GOOD_MODEL])
        assert control.returncode == 0, control.stderr
        assert ledger.read_text() == "refund Zeta 3.00\nrefund Alpha 12.00\n"
        ledger.write_text("refund Zeta 3.00\n")

        monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
        child = tmp_path / "fixed.json"
        stub = 'refund_order="refunded 12.00 on order Alpha"'
        rerun = run_cli("rerun", str(incident), "--model", GOOD_MODEL, "--stub", stub, "-o", str(child))
    assert rerun.returncode == 0, rerun.stderr
    incident_id = load_cassette(incident).id
    assert rerun.stderr.splitlines()[-1] == (
        f"[blackbox] rerun of {incident_id} by the built-in agent on openai-responses (model {GOOD_MODEL}): "
        f"completed in 3 model calls, 2 tool results from the incident, 1 stub -> {child} "
        f"(cost {cassette_cost(load_cassette(child)).describe()})"
    )
    assert ledger.read_text() == "refund Zeta 3.00\n"  # nothing of the program ran

    fixed = load_cassette(child)
    assert verify_cassette(fixed).passed
    inputs = [s.payload for s in fixed.steps if s.type == "model_input"]
    assert [[t["name"] for t in i["tools"]] for i in inputs] == [
        ["lookup_order", "transfer_to_refund_agent"], ["refund_order"], ["refund_order"]
    ]  # fmt: skip
    assert inputs[1]["systemPrompt"] == REFUND_INSTRUCTIONS  # the handoff, followed
    results = [s.payload for s in fixed.steps if s.type == "tool_result"]
    assert [(r["toolName"], r.get("stub", False)) for r in results] == [
        ("lookup_order", False), ("transfer_to_refund_agent", False), ("refund_order", True)
    ]  # fmt: skip
    assert terminal_outcome(fixed).status == "success"

    diff = run_cli("diff", str(incident), str(child))
    assert diff.stdout.splitlines()[-1] == "outcome: failure fixed: tool error in refund_order → success"
    shown = run_cli("inspect", str(child), check=True).stdout
    assert f"rerun of {incident_id} (built-in agent, provider openai-responses, model {GOOD_MODEL})" in shown
    assert "refund_order → refunded 12.00 on order Alpha  (stub)" in shown

    with blocked_network() as attempts:
        assert replay_built_in(child) == 0  # the child is itself reproducible, offline
    assert attempts == []

    # The program rerun of the same incident gets the same verdict, but its tool ran: the ledger grew.
    with FakeLLMServer() as llm:
        program_child = tmp_path / "program.json"
        command = [sys.executable, *agent, "--base-url", llm.openai_base_url, "--db", str(tmp_path / "p.db")]
        rerun = run_cli(
            "rerun", str(incident), "--model", GOOD_MODEL, "-o", str(program_child), "--", *command
        )
        assert rerun.returncode == 0, rerun.stderr
    assert ledger.read_text() == "refund Zeta 3.00\nrefund Alpha 12.00\n"
    diff = run_cli("diff", str(incident), str(program_child))
    assert diff.stdout.splitlines()[-1] == "outcome: failure fixed: tool error in refund_order → success"


@pytest.mark.parametrize("framework", ["pydantic-ai", "langchain"])
def test_a_framework_incident_reruns_with_its_tools_answered_from_the_recording(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider_env: None, framework: str
) -> None:
    db = tmp_path / "blackbox.db"
    question = "What's the weather in Lisbon, and the 2 day forecast? I need both."
    with FakeLLMServer() as llm, WeatherAPI() as weather:
        argv = [str(EXAMPLES / "framework_agent.py"), framework, "--base-url", llm.openai_base_url]
        recorded = _run([*argv, "--db", str(db), "--tool-url", weather.url, "--question", question])
        assert recorded.returncode == 0, recorded.stderr
        heard = len(weather.requests)
        assert heard == 2
        incident = tmp_path / "incident.json"
        _cassette_of_the_run(db, incident)
        monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
        child = tmp_path / "child.json"
        rerun = run_cli("rerun", str(incident), "--provider", "openai-chat", "-o", str(child))
        assert rerun.returncode == 0, rerun.stderr
        assert len(weather.requests) == heard  # no tool ran

    recorded_cassette, fixed = load_cassette(incident), load_cassette(child)
    assert verify_cassette(fixed).passed
    outcomes = [
        [(s.payload["toolName"], s.payload.get("result")) for s in c.steps if s.type == "tool_result"]
        for c in (recorded_cassette, fixed)
    ]
    assert outcomes[0] == outcomes[1] != []
    assert terminal_outcome(fixed).status == "success"
    assert "Lisbon" in str(terminal_outcome(fixed).final_answer)
