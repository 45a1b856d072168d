"""The demo's refund incident (the sloppy model's ``"amount": "12.OO"``, rejected by refund_order)
through the real CLI: ``eval generate`` refuses it without ``--from-failed``; with it, the contract
requires no input of the failed run, fails the incident and passes a good child. Kept in a suite
beside a broken entry, ``eval run-all`` reruns the good one and lists the broken one."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_llm import THOROUGH_MODEL, FakeLLMServer
from helpers import REFUND_STUB, refund_incident_cassette, run_cli

from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.suite import save_entry, stubs_of, with_rerun


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def keyed() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", "sk-broken-entry-not-a-real-key")
        patch.delenv("OPENAI_BASE_URL", raising=False)
        yield


@pytest.fixture(scope="module")
def incident_and_child(
    tmp_path_factory: pytest.TempPathFactory, llm: FakeLLMServer, keyed: None
) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("refund")
    _, incident = refund_incident_cassette(folder, llm.openai_base_url)
    child = folder / "good.json"
    rerun = ("rerun", str(incident), "--model", THOROUGH_MODEL, "--base-url", llm.openai_base_url)
    run_cli(*rerun, "--stub", REFUND_STUB, "-o", str(child), check=True)
    return incident, child


def test_the_refund_incident_gives_a_contract_of_what_must_not_happen_again(
    tmp_path: Path, incident_and_child: tuple[Path, Path]
) -> None:
    incident, child = incident_and_child
    refused = run_cli("eval", "generate", str(incident), "-o", str(tmp_path / "c.json"))
    assert refused.returncode == 2 and "--from-failed" in refused.stderr
    assert len(refused.stderr.splitlines()) == 1 and not (tmp_path / "c.json").exists()

    contract_path = tmp_path / "incident.contract.json"
    run_cli("eval", "generate", str(incident), "--from-failed", "-o", str(contract_path), check=True)
    contract = json.loads(contract_path.read_text())
    # "12.OO" is no requirement: at most the proposal that the rejected input is not given again.
    for assertion in contract["assertions"]:
        if "12.OO" in json.dumps(assertion):
            assert assertion["kind"] == "tool_input" and "not_equals" in assertion and assertion["proposed"]
    assert {"kind": "status", "status": "success"} in contract["assertions"]
    assert {"kind": "no_tool_errors"} in contract["assertions"]
    assert run_cli("eval", "run", str(contract_path), str(incident)).returncode == 1
    good = run_cli("eval", "run", str(contract_path), str(child))
    assert good.returncode == 0, good.stdout


def test_a_suite_with_a_broken_entry_runs_the_others(
    tmp_path: Path, llm: FakeLLMServer, keyed: None, incident_and_child: tuple[Path, Path]
) -> None:
    incident, child_path = incident_and_child
    child = load_cassette(child_path)
    suite = tmp_path / "contracts"
    contract_path = tmp_path / "from-failed.json"
    run_cli("eval", "generate", str(incident), "--from-failed", "-o", str(contract_path), check=True)
    contract = with_rerun(json.loads(contract_path.read_text()), stubs=stubs_of(child))
    save_entry(suite, "refund", incident, contract)
    (suite / "gone.contract.json").write_text(json.dumps(contract))  # its incident is missing
    done: subprocess.CompletedProcess[str] = run_cli(
        "eval", "run-all", str(suite), "--model", THOROUGH_MODEL, "--base-url", llm.openai_base_url,
        "--children", str(tmp_path / "children"),
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == [
        "BROKEN  gone",
        f"        ✗ {suite / 'gone.contract.json'}: its incident {suite / 'gone.json'} is missing",
    ]
    assert lines[2].startswith("PASS  refund  ")
    assert lines[-1] == f"2 contracts: 1 passed, 0 failed, 1 broken (children in {tmp_path / 'children'})"
    assert (tmp_path / "children" / "refund.child.json").is_file()
