"""The workbench's contracts: proposals marked on the contract page and saved as kept or dropped, a
suite name checked as the CLI checks it, and a suite with a broken entry listed and run whole.

The page and the save are called as the server calls them, on a job whose child answered JSON; the
contracts page and Run all go through a real workbench and a worker process against the fake
provider (the refund incident of tests/unit/web/test_workbench.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_llm import THOROUGH_MODEL, FakeLLMServer
from helpers import REFUND_STUB, RefundRun, record_refund_incident, run_cli
from test_contract_answers import answered
from workbench_client import only_openai, workbench

from otel_blackbox._cassette.io import load_cassette, save_cassette
from otel_blackbox._cassette.suite import save_entry, stubs_of, with_rerun
from otel_blackbox._web.actions import BadForm, child_contract, save_contract
from otel_blackbox._web.contract_pages import contract_page
from otel_blackbox._web.jobs import Job
from otel_blackbox._web.workspace import Workspace

WEATHER = '{"city": "Berlin", "temp": 12.5}'


@pytest.fixture
def job(tmp_path: Path) -> Job:
    """A finished rerun whose child answered a JSON object (the incident failed on its answer)."""
    incident, child = tmp_path / "incident.json", tmp_path / "child.json"
    save_cassette(answered('{"error": "sensor offline"}', status="error"), incident)
    save_cassette(answered(WEATHER), child)
    asked = {"provider": "openai-chat", "model": "gpt-4.1-mini"}
    return Job("20261207-000000-abcdef", "rerun", asked, incident=incident, child=child, state="done")


def test_the_contract_page_marks_each_proposal_unticked(tmp_path: Path, job: Job) -> None:
    contract, results = child_contract(job)
    proposed = [i for i, a in enumerate(contract["assertions"]) if a.get("proposed")]
    assert proposed == [3, 4, 5] and [r.proposed for r in results] == [i in proposed for i in range(6)]
    page = contract_page(job, results, "weather", tmp_path / "contracts", token="t", read_only=False)
    items = re.findall(r'<li data-testid="assertion".*?</li>', page)
    assert len(items) == 6
    for i, item in enumerate(items):
        if i in proposed:
            assert 'data-proposed="true"' in item and '<mark data-testid="proposed">proposed</mark>' in item
            assert f'value="{i}">' in item  # not ticked: a proposal is kept only by a person
        else:
            assert "proposed" not in item and f'value="{i}" checked>' in item
    assert "answer&#x27;s JSON has a value at /city" in items[3]
    assert '<p class="note" data-testid="proposals">3 proposed from the child' in page


def test_a_kept_proposal_loses_its_mark_and_an_unticked_one_is_dropped(tmp_path: Path, job: Job) -> None:
    workspace = Workspace(tmp_path / "wb")
    entry = save_contract(workspace, job, {"name": ["weather"], "keep": ["0", "3", "5"]})
    saved = json.loads(entry.contract_path.read_text())
    assert [a["kind"] for a in saved["assertions"]] == ["status", "answer_json", "answer_schema"]
    assert not any("proposed" in a for a in saved["assertions"])
    assert saved["assertions"][1] == {"kind": "answer_json", "pointer": "/city", "exists": True}


@pytest.mark.parametrize("name", ["a.contract", "refund.CONTRACT", "../escape", ".hidden"])
def test_a_name_the_suite_would_misread_is_refused(tmp_path: Path, job: Job, name: str) -> None:
    workspace = Workspace(tmp_path / "wb")
    with pytest.raises(BadForm) as refused:
        save_contract(workspace, job, {"name": [name], "keep": ["0"]})
    assert str(refused.value).startswith(f"entry name {name!r}: ") and "\n" not in str(refused.value)
    assert not workspace.contracts.exists()


# --- the contracts page and Run all, with a broken entry ------------------------------------------------


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def refund(tmp_path_factory: pytest.TempPathFactory, llm: FakeLLMServer) -> RefundRun:
    return record_refund_incident(tmp_path_factory.mktemp("refund"), llm.openai_base_url)


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, llm: FakeLLMServer) -> None:
    only_openai(monkeypatch, llm.openai_base_url)


def test_a_broken_entry_is_listed_and_run_all_runs_the_others(
    tmp_path: Path, refund: RefundRun, env: None, llm: FakeLLMServer
) -> None:
    incident, child = tmp_path / "incident.json", tmp_path / "good.json"
    run_cli("cassette", "--run", refund.run_id, "-o", str(incident), db=refund.db, check=True)
    rerun = ("rerun", str(incident), "--model", THOROUGH_MODEL, "--base-url", llm.openai_base_url)
    run_cli(*rerun, "--stub", REFUND_STUB, "-o", str(child), check=True)
    from_failed = tmp_path / "from-failed.json"
    run_cli("eval", "generate", str(incident), "--from-failed", "-o", str(from_failed), check=True)
    contract = with_rerun(json.loads(from_failed.read_text()), stubs=stubs_of(load_cassette(child)))
    suite = tmp_path / "wb" / "contracts"
    save_entry(suite, "refund", incident, contract)
    (suite / "gone.contract.json").write_text(json.dumps(contract))  # its incident is missing
    with workbench(refund.db, tmp_path / "wb") as client:
        page = client.get("/contracts")
        assert page.status == 200
        assert 'data-testid="saved-contract" data-name="refund"' in page.body
        broken = re.search(r'<tr data-testid="broken-contract" data-name="gone">.*?</tr>', page.body)
        assert broken and "BROKEN" in broken.group(0) and "its incident" in broken.group(0)
        assert "1 entry of the suite is broken: listed below, left out of Run all" in page.body
        assert re.search(r'data-testid="run-all"\s*>', page.body)  # not disabled
        started = client.post("/contracts/run-all", {"token": client.token(), "model": THOROUGH_MODEL})
        assert started.status == 303, started.body
        progress = client.wait(started.location)
        events = client.server.board.all()[-1].record()["events"]
        results = {e["name"]: e for e in events if e.get("event") == "contract_result"}
        assert results["gone"]["passed"] is False and "is missing" in results["gone"]["broken"]
        assert results["refund"]["passed"] is True, results["refund"]
        assert progress["state"] in ("done", "failed")  # exit 1: an entry was broken
        job_page = client.get(started.location).body
        assert 'data-state="broken" data-name="gone"' in job_page and "not run: " in job_page
        # Every entry broken: nothing can run, one line, no job.
        (suite / "refund.json").unlink()
        jobs = len(client.server.board.all())
        nothing = client.post("/contracts/run-all", {"token": client.token(), "model": THOROUGH_MODEL})
        assert nothing.status == 400 and "no contract can run: 2 broken" in nothing.body
        assert len(client.server.board.all()) == jobs
