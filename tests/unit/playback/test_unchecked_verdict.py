"""A verdict no greener than its evidence: the sensor-offline incident.

The order API answers ``{"error": "sensor offline"}`` (a tool result, not a tool error); the model
quotes it in its final answer, and the program's own check raises after the answer (the order's
status is not in it). The built-in agent cannot run that check: its child gives the same answer
and completes. ``diff`` must not call that fixed, ``blame`` must refuse it without a contract or the
program, and ``blame -- CMD`` must find the tool result that returned garbage, the program judging
each branch. The programs run for real against the fake provider and an order API on 127.0.0.1;
the order API counts what it receives.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_llm import FakeLLMServer
from helpers import PROGRAMS, LoopbackAPI, run_cli

from otel_blackbox._cassette.diff.outcome import answer_before_failure
from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.model import terminal_outcome

AGENT = str(PROGRAMS / "rerun_agent.py")
MODEL = "gpt-4o-mini"
GARBAGE = {"order_id": 42, "error": "sensor offline"}
GOOD = {"order_id": 42, "status": "shipped"}


class SensorOfflineAPI(LoopbackAPI):
    """The order API with its sensor down: a 200 whose body is garbage."""

    def __init__(self) -> None:
        super().__init__(lambda method, path, body: (200, GARBAGE))


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-verdict-test-0123456789")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture(scope="module")
def sensor_api() -> Iterator[SensorOfflineAPI]:
    with SensorOfflineAPI() as api:
        yield api


@pytest.fixture(scope="module")
def incident(
    llm: FakeLLMServer, sensor_api: SensorOfflineAPI, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, SensorOfflineAPI]:
    path = tmp_path_factory.mktemp("incident") / "incident.json"
    api = sensor_api
    program = program_of(llm, api)
    recorded = run_cli("record", "-o", str(path), "--", *program)
    assert recorded.returncode == 1, recorded.stderr
    assert "wrong answer" in recorded.stderr  # the program's check raised after the answer
    return path, api


def program_of(llm: FakeLLMServer, api: LoopbackAPI) -> list[str]:
    return [sys.executable, AGENT, "--base-url", llm.openai_base_url, "--tool-url", api.url, "--model", MODEL]


def rerun_built_in(llm: FakeLLMServer, incident: Path, child: Path) -> None:
    done = run_cli(
        "rerun", str(incident), "--base-url", llm.openai_base_url, "--model", MODEL, "-o", str(child)
    )
    assert done.returncode == 0, done.stderr
    assert "the incident failed in its program after its answer, which the built-in agent does not run" in (
        done.stderr
    )


def test_the_incident_failed_in_its_program_after_its_answer(incident: tuple[Path, SensorOfflineAPI]) -> None:
    cassette = load_cassette(incident[0])
    assert terminal_outcome(cassette).status == "error"
    answer = answer_before_failure(cassette)
    assert answer is not None and "sensor offline" in answer


def test_diff_says_not_checkable_where_it_used_to_say_fixed(
    llm: FakeLLMServer, incident: tuple[Path, SensorOfflineAPI], tmp_path: Path
) -> None:
    child = tmp_path / "child.json"
    rerun_built_in(llm, incident[0], child)
    assert terminal_outcome(load_cassette(child)).status == "success"

    shown = run_cli("diff", str(incident[0]), str(child))
    assert shown.returncode == 1, shown.stderr
    verdict = shown.stdout.strip().splitlines()[-1]
    assert verdict == (
        "outcome: not checkable: the incident failed in the program after its answer, and the child ran "
        "without the program; give a contract or the program (the child gave the same answer)"
    )
    assert "fixed" not in shown.stdout

    as_json = json.loads(run_cli("diff", str(incident[0]), str(child), "--json").stdout)
    assert as_json["outcome"]["kind"] == "not_checkable"
    assert as_json["outcome"]["fixed"] is False


def test_a_contract_that_only_asks_for_success_is_no_evidence(
    llm: FakeLLMServer, incident: tuple[Path, SensorOfflineAPI], tmp_path: Path
) -> None:
    """The parent fails ``status: success`` by how it ended, which is what cannot be checked: a
    contract is evidence only when the parent fails it on what it did."""
    child = tmp_path / "child.json"
    rerun_built_in(llm, incident[0], child)
    contract = tmp_path / "status.contract.json"
    contract.write_text(
        json.dumps({"contractVersion": 1, "assertions": [{"kind": "status", "status": "success"}]})
    )
    shown = json.loads(
        run_cli("diff", str(incident[0]), str(child), "--contract", str(contract), "--json").stdout
    )
    assert shown["outcome"]["kind"] == "not_checkable"
    assert shown["outcome"]["verdict"].startswith("not checkable: the contract passes on the incident too")


def test_blame_refuses_without_a_contract_or_the_program(
    llm: FakeLLMServer, incident: tuple[Path, SensorOfflineAPI], tmp_path: Path
) -> None:
    refused = run_cli("blame", str(incident[0]), "--base-url", llm.openai_base_url, "-o", str(tmp_path / "b"))
    assert refused.returncode == 2
    assert (
        refused.stderr.strip()
        .splitlines()[-1]
        .endswith(
            "the incident failed in its program after its answer (error), which a branch without the program "
            "cannot check: give a contract (`--contract C.json`) or the program "
            "(`-- CMD`, without --base-url)"
        )
    )
    assert "Traceback" not in refused.stderr
    assert not (tmp_path / "b").exists() or not any((tmp_path / "b").iterdir())


def test_blame_through_the_program_finds_the_tool_result_that_returned_garbage(
    llm: FakeLLMServer, incident: tuple[Path, SensorOfflineAPI], tmp_path: Path
) -> None:
    path, api = incident
    sent_before = len(api.received)
    calls_before = len(llm.requests)
    branches = tmp_path / "branches"
    found = run_cli(
        "blame", str(path), "--samples", "1", "--stub", f"lookup_order={json.dumps(json.dumps(GOOD))}",
        "--format", "json", "-o", str(branches), "--", *program_of(llm, api),
    )  # fmt: skip
    assert found.returncode == 0, found.stderr
    report: dict[str, Any] = json.loads(found.stdout)
    incident_cassette = load_cassette(path)
    decisive = report["decisive"]
    assert incident_cassette.steps[decisive["index"]].type == "tool_result"
    # Every decision branch ran the program, whose check failed them; the corrected result passed.
    measured = {b["from_index"]: b for b in report["branches"]}
    for index, branch in measured.items():
        expected = 1 if index == decisive["index"] else 0
        assert branch["successes"] == expected, (index, branch)
        assert branch["samples"] == 1
    assert len(measured) == 3  # the last decision, the first, then the tool result
    assert len(api.received) == sent_before  # the tool's HTTP was answered from the recording
    assert len(llm.requests) > calls_before  # the model was live after each point


def answer_contract(tmp_path: Path) -> Path:
    contract = tmp_path / "order.contract.json"
    assertion = {"kind": "answer_contains", "text": "shipped"}
    contract.write_text(json.dumps({"contractVersion": 1, "assertions": [assertion]}))
    return contract


def test_a_contract_about_the_answer_decides_the_verdict(
    llm: FakeLLMServer, incident: tuple[Path, SensorOfflineAPI], tmp_path: Path
) -> None:
    child = tmp_path / "child.json"
    rerun_built_in(llm, incident[0], child)
    contract = answer_contract(tmp_path)
    shown = run_cli("diff", str(incident[0]), str(child), "--contract", str(contract))
    assert shown.returncode == 1
    assert "outcome: still failing: the contract fails on the child (the child gave the same answer)" in (
        shown.stdout.splitlines()
    )
    assert any(
        line.startswith("FAIL answer contains") and "shipped" in line for line in shown.stdout.splitlines()
    )


def test_blame_with_a_contract_names_the_tool_result_not_the_answer(
    llm: FakeLLMServer, incident: tuple[Path, SensorOfflineAPI], tmp_path: Path
) -> None:
    path, api = incident
    sent_before = len(api.received)
    found = run_cli(
        "blame", str(path), "--base-url", llm.openai_base_url, "--samples", "1",
        "--contract", str(answer_contract(tmp_path)),
        "--stub", f"lookup_order={json.dumps(json.dumps(GOOD))}", "--format", "json",
        "-o", str(tmp_path / "branches"),
    )  # fmt: skip
    assert found.returncode == 0, found.stderr
    report = json.loads(found.stdout)
    assert load_cassette(path).steps[report["decisive"]["index"]].type == "tool_result"
    assert all(b["successes"] == 0 for b in report["branches"] if b["type"] == "model_output")
    assert len(api.received) == sent_before  # no tool ran: the built-in agent answered from the recording
