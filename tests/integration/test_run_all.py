"""``eval run-all``: a contract suite rerun against the fake provider, through the real CLI.

The suite holds the demo's refund incident (examples/handoff_agent.py, recorded by the processor)
with a contract generated from a good child: ``thorough`` follows the handoff and calls
``refund_order`` again, answered by a stub the incident never recorded. The contract's ``rerun``
block keeps that stub, so each later rerun is answered the same way, and nothing of the incident's
tools runs (its ledger stays empty). ``hasty`` never calls ``refund_order``: the contract fails it.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_llm import HASTY_MODEL, THOROUGH_MODEL, FakeLLMServer
from helpers import REFUND_STUB, RefundRun, refund_incident_cassette, run_cli

from otel_blackbox._cassette.evals import generate_contract
from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.suite import save_entry, stubs_of, with_rerun

KEY = "sk-run-all-not-a-real-key"
REFUND_FAILS = "        ✗ tool refund_order called at least 1 time: called 0 times"


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def keyed() -> Iterator[None]:
    """A made-up key for the OpenAI SDK (run_cli passes the environment on)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", KEY)
        patch.delenv("OPENAI_BASE_URL", raising=False)
        yield


@pytest.fixture(scope="module")
def refund(tmp_path_factory: pytest.TempPathFactory, llm: FakeLLMServer) -> tuple[RefundRun, Path]:
    """The refund incident, recorded by the processor alone and made a cassette, as the demo does."""
    return refund_incident_cassette(tmp_path_factory.mktemp("incident"), llm.openai_base_url)


@pytest.fixture(scope="module")
def suite(
    tmp_path_factory: pytest.TempPathFactory,
    llm: FakeLLMServer,
    keyed: None,
    refund: tuple[RefundRun, Path],
) -> Path:
    """A suite of one entry, ``refund``: the incident and the contract of a good child, with the
    stub that child got in its ``rerun`` block, as the workbench saves it."""
    _, incident = refund
    work = tmp_path_factory.mktemp("suite")
    good = work / "good.json"
    rerun = ("rerun", str(incident), "--model", THOROUGH_MODEL, "--base-url", llm.openai_base_url)
    run_cli(*rerun, "--stub", REFUND_STUB, "-o", str(good), check=True)
    child = load_cassette(good)
    assert stubs_of(child) == {"refund_order": "refunded 12.00 on order Alpha"}
    contract = with_rerun(generate_contract(child, name="refund"), stubs=stubs_of(child))
    save_entry(work / "contracts", "refund", incident, contract)
    return work / "contracts"


def run_all(llm: FakeLLMServer, folder: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_cli("eval", "run-all", str(folder), "--base-url", llm.openai_base_url, *extra)


def test_a_good_model_passes_the_suite_and_no_tool_runs(
    tmp_path: Path, llm: FakeLLMServer, keyed: None, refund: tuple[RefundRun, Path], suite: Path
) -> None:
    recorded, _ = refund
    children = tmp_path / "children"
    done = run_all(llm, suite, "--model", THOROUGH_MODEL, "--children", str(children))
    assert done.returncode == 0, done.stderr
    (line, closing) = done.stdout.splitlines()
    status, name, counts = line.split("  ")
    assert (status, name) == ("PASS", "refund") and counts.split("/")[0] == counts.split("/")[1]
    assert closing == f"1 contract: 1 passed, 0 failed (children in {children})"
    child = load_cassette(children / "refund.child.json")
    assert stubs_of(child) == {"refund_order": "refunded 12.00 on order Alpha"}  # from the contract
    assert child.agent is not None and child.agent["model"] == THOROUGH_MODEL
    # The incident's tools never ran again: the ledger of refunds that went through is still empty.
    assert not recorded.ledger.exists() or recorded.ledger.read_text() == ""


def test_a_model_that_avoids_the_refund_fails_it(llm: FakeLLMServer, keyed: None, suite: Path) -> None:
    done = run_all(llm, suite, "--model", HASTY_MODEL)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("FAIL  refund  ")
    assert REFUND_FAILS in lines
    assert not any("stopped short" in line for line in lines)  # it completed: the contract failed it
    assert lines[-1].startswith("1 contract: 0 passed, 1 failed (children in ")
    children = Path(lines[-1].split("(children in ")[1].removesuffix(")"))
    assert children.name.startswith("otel-blackbox-run-all-") and (children / "refund.child.json").is_file()


def test_the_contracts_own_model_and_a_rerun_that_stops_short(
    tmp_path: Path, llm: FakeLLMServer, keyed: None, refund: tuple[RefundRun, Path], suite: Path
) -> None:
    _, incident = refund
    contract = json.loads((suite / "refund.contract.json").read_text())
    folder = tmp_path / "contracts"
    # The block's model runs when no --model is given; --model wins over it.
    save_entry(folder, "by-block", incident, with_rerun(contract, model=THOROUGH_MODEL))
    # Without the block's stub, the refund the child asks for has no answer: it stops short.
    save_entry(folder, "no-stub", incident, with_rerun(contract, stubs={}, model=THOROUGH_MODEL))
    done = run_all(llm, folder, "--children", str(tmp_path / "children"))
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("PASS  by-block  ")
    assert lines[1].startswith("FAIL  no-stub  ")
    assert "        ✗ run ends with status success: actual: error" in lines
    (stopped,) = [line for line in lines if "stopped short" in line]
    assert stopped.startswith(
        "        ✗ the rerun stopped short: unrecorded_tool_call: the model called refund_order("
    )
    assert lines[-1] == f"2 contracts: 1 passed, 1 failed (children in {tmp_path / 'children'})"

    overridden = run_all(llm, folder, "--model", HASTY_MODEL, "--json")
    assert overridden.returncode == 1
    assert [c["passed"] for c in json.loads(overridden.stdout)["contracts"]] == [False, False]


def test_json_shape(tmp_path: Path, llm: FakeLLMServer, keyed: None, suite: Path) -> None:
    children = tmp_path / "children"
    done = run_all(llm, suite, "--model", HASTY_MODEL, "--children", str(children), "--json")
    assert done.returncode == 1, done.stderr
    answer = json.loads(done.stdout)
    assert set(answer) == {"contracts", "broken", "passed", "failed", "children"}
    assert answer["broken"] == []
    assert (answer["passed"], answer["failed"], answer["children"]) == (0, 1, str(children))
    (entry,) = answer["contracts"]
    assert set(entry) == {"name", "incident", "contract", "child", "passed", "stopped", "assertions"}
    assert entry["name"] == "refund" and entry["passed"] is False and entry["stopped"] is None
    assert entry["incident"] == str(suite / "refund.json")
    assert entry["contract"] == str(suite / "refund.contract.json")
    assert entry["child"] == str(children / "refund.child.json")
    assert all(set(a) == {"kind", "description", "passed", "detail"} for a in entry["assertions"])
    assert {
        "kind": "tool_called",
        "description": "tool refund_order called at least 1 time",
        "passed": False,
        "detail": "called 0 times",
    } in entry["assertions"]


def assert_refused(done: subprocess.CompletedProcess[str], says: str) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr


def test_each_bad_input_is_one_line_and_exit_2_before_any_rerun(
    tmp_path: Path, llm: FakeLLMServer, keyed: None, refund: tuple[RefundRun, Path], suite: Path
) -> None:
    _, incident = refund
    heard = len(llm.requests)
    assert_refused(run_all(llm, tmp_path / "missing"), "missing: no such folder")
    (tmp_path / "empty").mkdir()
    assert_refused(run_all(llm, tmp_path / "empty"), "no contract in the folder")

    contract = (suite / "refund.contract.json").read_text()
    orphan = tmp_path / "orphan"
    orphan.mkdir()
    (orphan / "refund.contract.json").write_text(contract)
    # A broken entry is listed, not a setup error (test_run_all_broken_entry.py runs the others).
    listed = run_all(llm, orphan)
    assert listed.returncode == 1 and listed.stderr == ""
    assert listed.stdout.splitlines()[:2] == [
        "BROKEN  refund",
        f"        ✗ {orphan / 'refund.contract.json'}: its incident {orphan / 'refund.json'} is missing",
    ]

    # A broken entry does not hide a setup error of the others: refused before any rerun.
    broken = tmp_path / "broken"
    save_entry(broken, "a-good-one", incident, with_rerun(json.loads(contract), stubs={"refund_ordr": "ok"}))
    (broken / "z.json").write_bytes(incident.read_bytes())
    (broken / "z.contract.json").write_text('{"contractVersion": 1,')
    assert_refused(run_all(llm, broken), "a-good-one: --stub refund_ordr: the incident never offered")

    # An entry whose stub names a tool the incident never offered: found before the first rerun,
    # though the entry before it is good.
    bad_stub = tmp_path / "bad-stub"
    save_entry(bad_stub, "a-good-one", incident, json.loads(contract))
    save_entry(bad_stub, "z", incident, with_rerun(json.loads(contract), stubs={"refund_ordr": "ok"}))
    assert_refused(run_all(llm, bad_stub), "z: --stub refund_ordr: the incident never offered")

    assert_refused(run_all(llm, suite, "--max-cost", "-1"), "Invalid value for '--max-cost'")
    assert_refused(run_all(llm, suite, "--max-cost", "0.5"), "no price for model 'sloppy'")
    assert_refused(
        run_cli("eval", "run-all", str(suite), "--base-url", "nota-url"), "Invalid value for '--base-url'"
    )
    assert_refused(
        run_cli("eval", "run-all", str(suite), "--base-url", "http://127.0.0.1:9/v1"), "nothing answers"
    )
    assert_refused(run_all(llm, suite, "--provider", "openai"), "Invalid value for '--provider'")
    assert_refused(run_all(llm, suite, "--model", " "), "give a model name")
    assert_refused(run_all(llm, suite, "--children", str(suite)), "the suite folder itself")
    (tmp_path / "file").write_text("")
    assert_refused(run_all(llm, suite, "--children", str(tmp_path / "file")), "--children")
    assert_refused(run_all(llm, suite, "--children", str(tmp_path / "file" / "sub")), "--children")
    assert llm.requests[heard:] == []  # not one model call


def test_a_missing_key_is_a_setup_error(
    monkeypatch: pytest.MonkeyPatch, llm: FakeLLMServer, keyed: None, suite: Path
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    heard = len(llm.requests)
    assert_refused(run_all(llm, suite, "--model", THOROUGH_MODEL), "OPENAI_API_KEY")
    assert llm.requests[heard:] == []
