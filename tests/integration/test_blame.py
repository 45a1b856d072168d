"""``blame`` on incidents recorded by the processor from the real OpenAI Agents SDK, against the fake
provider, whose scripted models plant the mistake:

- ``coin`` types the refund's amount as "12.OO" on every other call (the incident's included) and
  gives up once a tool failed: the decisive step is the refund's model_output, and no branch from
  a later step succeeds;
- ``careful`` is right, but the incident's lookup_order failed (``--lookup-down``): no model branch
  succeeds, and the good run's lookup result, as a correction, names that tool result.

Every branch's child is a cassette that verifies and replays offline; no tool ever runs (the
refund agent's ledger stays empty).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_llm import CAREFUL_MODEL, COIN_MODEL, WALKER_MODEL, FakeLLMServer
from helpers import PROGRAMS, REFUND_STUB, record_refund_incident, run_cli

from otel_blackbox._cassette.diff.report import diff_cassettes
from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.verify import verify_file


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    """A provider of its own for each test: the coin model's count starts at 0."""
    with FakeLLMServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-blame-not-a-real-key")
        yield server


def cassette_of(folder: Path, db: Path, run_id: str, name: str) -> Path:
    path = folder / name
    run_cli("cassette", "--run", run_id, "-o", str(path), db=db, check=True)
    return path


def blame_json(*args: str) -> tuple[int, dict[str, Any], str]:
    done = run_cli("blame", *args, "--format", "json")
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else {}, done.stderr


def test_the_refund_decision_is_decisive_and_no_later_branch_succeeds(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    recorded = record_refund_incident(tmp_path, llm.openai_base_url, COIN_MODEL)
    incident = cassette_of(tmp_path, recorded.db, recorded.run_id, "incident.json")
    steps = load_cassette(incident).steps
    refund = next(s for s in steps if s.type == "model_output" and "refund_order" in json.dumps(s.payload))
    assert "12.OO" in json.dumps(refund.payload)  # the planted mistake
    out = tmp_path / "branches"
    code, report, stderr = blame_json(str(incident), "--model", COIN_MODEL, "--stub", REFUND_STUB,
                                      "--samples", "2", "-o", str(out))  # fmt: skip
    assert code == 0, stderr
    assert report["decisive"]["index"] == refund.index and report["decisive"]["type"] == "model_output"
    assert '"amount": 12' in report["decisive"]["instead"]  # what a successful branch did there
    rates = {b["from_index"]: (b["successes"], b["samples"]) for b in report["branches"]}
    assert rates[refund.index][0] > 0
    assert all(successes == 0 for index, (successes, _) in rates.items() if index > refund.index)
    assert report["decisionPoints"] == 3 and report["branchCount"] == 2 * len(rates)
    # The children: each verifies, shares the incident's steps before its point, and replays offline.
    children = [Path(c) for b in report["branches"] for c in b["children"]]
    assert sorted(children) == sorted(out.glob("*.json"))
    parent = load_cassette(incident)
    for child in children:  # verify's and diff's own functions: the commands are tested elsewhere
        assert verify_file(child).passed, verify_file(child).first_failure
        branch = next(b for b in report["branches"] if str(child) in b["children"])
        assert diff_cassettes(parent, load_cassette(child)).shared_prefix >= branch["from_index"] - 1
    heard = len(llm.requests)
    for child in children:  # the built-in agent again, from the branch's own first request
        replayed = run_cli("replay", str(child))
        assert replayed.returncode in (0, 1) and "replayed" in replayed.stderr, (child, replayed.stderr)
    assert len(llm.requests) == heard  # offline
    assert not recorded.ledger.exists() or recorded.ledger.read_text() == ""  # no refund ever ran


def test_a_wrong_tool_result_is_named_by_the_good_run(tmp_path: Path, llm: FakeLLMServer) -> None:
    recorded = record_bad_lookup(tmp_path / "incident", llm.openai_base_url)
    good = record_good_run(tmp_path / "good", llm.openai_base_url)
    steps = load_cassette(recorded).steps
    lookup = next(s for s in steps if s.type == "tool_result" and s.payload.get("toolName") == "lookup_order")
    assert "error" in lookup.payload
    code, report, stderr = blame_json(str(recorded), "--model", CAREFUL_MODEL, "--good", str(good),
                                      "--samples", "1", "-o", str(tmp_path / "branches"))  # fmt: skip
    assert code == 0, stderr
    assert report["decisive"]["index"] == lookup.index and report["decisive"]["type"] == "tool_result"
    decisions = [b for b in report["branches"] if b["type"] == "model_output"]
    assert decisions and all(b["successes"] == 0 for b in decisions)  # the model was right
    (fixed,) = [b for b in report["branches"] if b["from_index"] == lookup.index]
    assert fixed["intervention"]["source"] == "good" and "paid 12.00" in fixed["intervention"]["result"]


def record_bad_lookup(folder: Path, base_url: str) -> Path:
    """The careful model, right, and lookup_order down: the run fails."""
    recorded = record_refund_incident(folder, base_url, CAREFUL_MODEL, lookup_down=True)
    return cassette_of(folder, recorded.db, recorded.run_id, "incident.json")


def record_good_run(folder: Path, base_url: str) -> Path:
    """The same task, lookup_order up: the refund goes through."""
    recorded = record_refund_incident(folder, base_url, CAREFUL_MODEL, fails=False)
    return cassette_of(folder, recorded.db, recorded.run_id, "good.json")


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}


def test_the_budget_and_the_branch_limit_stop_the_search(tmp_path: Path, llm: FakeLLMServer) -> None:
    recorded = record_refund_incident(tmp_path, llm.openai_base_url, COIN_MODEL)
    incident = cassette_of(tmp_path, recorded.db, recorded.run_id, "incident.json")
    limited = run_cli(
        "blame",
        str(incident),
        "--model",
        COIN_MODEL,
        "--stub",
        REFUND_STUB,
        "--max-branches",
        "3",
        "-o",
        str(tmp_path / "limited"),
    )  # fmt: skip  (the text answer)
    lines = limited.stdout.splitlines()
    # The first point got no branch before the limit: it is not counted as measured (no "0/0").
    assert limited.returncode == 1 and "3 decision points; 1 point measured: 3 branches" in lines[1]
    assert not any("0/0" in line for line in lines)
    assert (
        lines[2].startswith("no step found: the search stopped")
        and "stopped: --max-branches 3 reached" in lines
    )
    assert "success rate per point:" in lines and any(line.startswith("  step ") for line in lines)
    # A priced model (the fake answers any name): a budget below one call's price stops after one branch.
    code, report, stderr = blame_json(str(incident), "--model", "gpt-4o-mini", "--stub", REFUND_STUB,
                                      "--max-cost", "0.000001", "-o", str(tmp_path / "budget"))  # fmt: skip
    assert code == 1 and "--max-cost" in report["stopped"], stderr
    assert report["branchCount"] == 1 and report["cost_usd"] > 0


def test_bad_input_is_one_line_and_no_call(tmp_path: Path, llm: FakeLLMServer) -> None:
    good = record_good_run(tmp_path / "good", llm.openai_base_url)
    recorded = record_refund_incident(tmp_path, llm.openai_base_url, COIN_MODEL)
    incident = cassette_of(tmp_path, recorded.db, recorded.run_id, "incident.json")
    no_model = tmp_path / "no-model.json"
    no_model.write_text(json.dumps({**json.loads(incident.read_text()), "steps": []}))
    other = tmp_path / "other-task.json"
    from helpers import vector_path

    other.write_bytes(vector_path("error-unknown-tool").read_bytes())
    broken = tmp_path / "broken.contract.json"
    broken.write_text("{not json")
    heard = len(llm.requests)
    cases = [
        ([str(good)], "did not fail"),
        ([str(no_model)], "no model"),
        ([str(incident), "--good", str(other)], "none of its tool results matches"),
        ([str(incident), "--contract", str(broken)], "broken.contract.json"),
        ([str(incident), "--stub", "refund_order=12.OO"], "is not JSON"),
        ([str(incident), "--samples", "0"], "--samples"),
        ([str(incident), "--max-cost", "-1"], "--max-cost"),
    ]
    for args, says in cases:
        done = run_cli("blame", *args, "--model", COIN_MODEL, "-o", str(tmp_path / "none"))
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1 and says in lines[0], (args, done.stderr)
    assert len(llm.requests) == heard and not (tmp_path / "none").exists()


def test_a_late_mistake_in_a_long_run_is_found_with_fewer_branches_than_decisions(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """20 steps (tests/programs/long_agent.py, the walker model), the mistake at step 19: the search
    measures 7 points of the 20, two branches each."""
    incident, ledger = record_long_run(tmp_path, llm.openai_base_url, 20)
    taken = ledger.read_text()
    outputs = [s for s in load_cassette(incident).steps if s.type == "model_output"]
    mistake = next(s for s in outputs if "19th" in json.dumps(s.payload))
    code, report, stderr = blame_json(str(incident), "--model", WALKER_MODEL, "--stub", 'take_step="done"',
                                      "--samples", "2", "-o", str(tmp_path / "branches"))  # fmt: skip
    assert code == 0, stderr
    assert report["decisive"]["index"] == mistake.index
    assert report["decisionPoints"] == 20 and report["branchCount"] < report["decisionPoints"]
    assert ledger.read_text() == taken  # the tool never ran again


def record_long_run(folder: Path, base_url: str, steps: int) -> tuple[Path, Path]:
    db, ledger = folder / "long.db", folder / "ledger.txt"
    argv = [sys.executable, str(PROGRAMS / "long_agent.py"), "--base-url", base_url, "--steps", str(steps)]
    argv += ["--db", str(db), "--ledger", str(ledger)]
    done = subprocess.run(argv, capture_output=True, text=True, env=_env(), timeout=300)
    assert done.returncode == 1 and f"{steps - 2} of {steps} steps taken" in done.stderr, done.stderr
    (trace,) = json.loads(run_cli("list", "--json", db=db, check=True).stdout)
    path = folder / "incident.json"
    run_cli("cassette", trace["trace_id"], "-o", str(path), db=db, check=True)
    return path, ledger


def test_the_mcp_tool_answers_as_the_command(tmp_path: Path, llm: FakeLLMServer) -> None:
    from otel_blackbox._mcp.cassettes import blame_incident
    from otel_blackbox.errors import BadArgument

    recorded = record_refund_incident(tmp_path, llm.openai_base_url, COIN_MODEL)
    incident = cassette_of(tmp_path, recorded.db, recorded.run_id, "incident.json")
    answer = json.loads(
        blame_incident(str(incident), str(tmp_path / "branches"), model=COIN_MODEL,
                       stubs={"refund_order": "refunded 12.00 on order Alpha"}, samples=2)
    )  # fmt: skip
    refund = next(s for s in load_cassette(incident).steps if "12.OO" in json.dumps(s.payload))
    assert answer["decisive"]["index"] == refund.index
    with pytest.raises(BadArgument, match="max_cost"):
        blame_incident(str(incident), str(tmp_path / "none"), max_cost="-1")


def test_a_contract_judges_the_branches(tmp_path: Path, llm: FakeLLMServer) -> None:
    """Judged by a contract made from a good rerun: the same decisive step; an incident that passes
    the contract has nothing to blame."""
    recorded = record_refund_incident(tmp_path, llm.openai_base_url, COIN_MODEL)
    incident = cassette_of(tmp_path, recorded.db, recorded.run_id, "incident.json")
    good = tmp_path / "good-child.json"
    run_cli("rerun", str(incident), "--model", "thorough", "--stub", REFUND_STUB, "-o", str(good), check=True)
    contract = tmp_path / "refund.contract.json"
    run_cli("eval", "generate", str(good), "-o", str(contract), check=True)
    judged = ["--contract", str(contract), "--samples", "2", "-o", str(tmp_path / "b")]
    code, report, stderr = blame_json(str(incident), "--model", COIN_MODEL, "--stub", REFUND_STUB, *judged)
    refund = next(s for s in load_cassette(incident).steps if "12.OO" in json.dumps(s.payload))
    assert code == 0 and report["decisive"]["index"] == refund.index, stderr
    passes = run_cli("blame", str(good), "--contract", str(contract), "-o", str(tmp_path / "none"))
    assert passes.returncode == 2 and "passes the contract: nothing to blame" in passes.stderr
