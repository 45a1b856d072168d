"""The suggestions printed about a program's incident are accepted as printed (test_hints_accepted.py
has the built-in agent's, and how a suggestion is found, filled in and run).

The hint sites, and where each is run:

- agent/run.py ``rerun_built_in``: an incident that failed in its program after its answer ->
  ``otel-blackbox diff INCIDENT CHILD --contract FILE``, ``otel-blackbox rerun INCIDENT -o FILE -- CMD``;
- blame.py ``blame``: such an incident without a contract or the program -> ``--contract C.json``,
  ``-- CMD`` (without the built-in agent's --base-url); then, through the program, the corrections to
  try (``--good GOOD.json``, ``--stub``) and _cli/blame.py ``otel-blackbox replay CHILD -- CMD``;
- rerun.py ``_refusal`` (rerun -- CMD): a request the incident did not record -> ``--allow-network``;
  under blame -- CMD, which has no such option, no suggestion;
- tool_stubs/answers.py ``ToolStubber`` (rerun --stub-tools -- CMD): a tool call with no recorded
  result -> ``--run-unrecorded-tools``; under blame -- CMD, no suggestion.

The programs run for real (tests/programs/rerun_agent.py, examples/ledger_agent.py) against the fake
provider and an order API on 127.0.0.1 whose sensor is offline (test_unchecked_verdict.py's).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_llm import FakeLLMServer
from helpers import EXAMPLES, LoopbackAPI, run_cli
from test_hints_accepted import KEY, STUB, accepted, suggested
from test_unchecked_verdict import GOOD, MODEL, SensorOfflineAPI, answer_contract, program_of

from otel_blackbox._playback.tool_stubs.answers import ToolStubber
from otel_blackbox._wire.call_ids import CallIds


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture(scope="module")
def sensor(
    fake_llm: FakeLLMServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, list[str]]]:
    """The sensor-offline incident (the program's check raised after the answer), and its program:
    the order API stays up, for what --allow-network sends."""
    path = tmp_path_factory.mktemp("sensor") / "incident.json"
    with SensorOfflineAPI() as api:
        program = program_of(fake_llm, api)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("OPENAI_API_KEY", KEY)
            recorded = run_cli("record", "-o", str(path), "--", *program)
        assert recorded.returncode == 1 and "wrong answer" in recorded.stderr, recorded.stderr
        yield path, program


def test_the_built_in_rerun_names_the_diff_and_the_rerun_that_can_judge_its_child(
    fake_llm: FakeLLMServer, sensor: tuple[Path, list[str]], tmp_path: Path
) -> None:
    path, program = sensor
    child = tmp_path / "child.json"
    done = run_cli(
        "rerun", str(path), "--base-url", fake_llm.openai_base_url, "--model", MODEL, "-o", str(child)
    )
    assert done.returncode == 0 and "failed in its program after its answer" in done.stderr, done.stderr
    diff, rerun = suggested(done)
    assert diff[:2] == ["otel-blackbox", "diff"] and rerun[:2] == ["otel-blackbox", "rerun"]
    values = {"--contract FILE": [str(answer_contract(tmp_path))], "-o FILE": [str(tmp_path / "p.json")]}
    assert accepted([], diff, values).returncode == 1  # the contract fails on the child too
    accepted([], rerun, {**values, "CMD": program})


def test_blame_names_a_contract_and_the_program_and_through_it_what_to_try(
    fake_llm: FakeLLMServer, sensor: tuple[Path, list[str]], tmp_path: Path
) -> None:
    path, program = sensor
    folder = ["-o", str(tmp_path / "branches")]
    built_in = ["blame", str(path), "--samples", "1", *folder]
    done = run_cli(*built_in[:2], "--base-url", fake_llm.openai_base_url, *built_in[2:])
    assert done.returncode == 2 and "`-- CMD`, without --base-url)" in done.stderr, done.stderr
    contract, through = suggested(done)
    assert (contract, through) == (["--contract", "C.json"], ["--", "CMD"])
    with pytest.MonkeyPatch.context() as patch:  # the built-in agent's provider, as --base-url gave it
        patch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
        accepted(built_in, contract, {"C.json": [str(answer_contract(tmp_path))]})
    done = accepted(built_in, through, {"CMD": program})  # no correction to try: no branch succeeds
    good, stub, replay = suggested(done)
    assert (good, stub) == (["--good", "GOOD.json"], STUB) and replay[:2] == ["otel-blackbox", "replay"]
    assert replay[-len(program) - 1 :] == ["--", *program]  # a decision branch's child, with the program
    assert accepted([], replay).returncode == 1  # the program's own check fails again, as recorded
    good_run = tmp_path / "good.json"
    with LoopbackAPI(lambda method, path, body: (200, GOOD)) as api:  # the sensor back
        assert run_cli("record", "-o", str(good_run), "--", *program_of(fake_llm, api)).returncode == 0
    base = [*built_in, "--", *program]
    assert accepted(base, good, {"GOOD.json": [str(good_run)]}).returncode == 0  # the tool result is found
    accepted(base, stub)


def test_a_request_the_incident_did_not_record_is_sent_by_the_option_named_where_there_is_one(
    sensor: tuple[Path, list[str]], tmp_path: Path
) -> None:
    path, program = sensor
    other = [*program, "--channel", "phone"]  # the order API is asked with another body
    base = ["rerun", str(path), "-o", str(tmp_path / "child.json"), "--", *other]
    done = run_cli(*base)
    assert "was not recorded by the incident, so it was not sent" in done.stderr, done.stderr
    (allow,) = suggested(done)
    assert allow == ["--allow-network"]
    accepted(base, allow)
    branch = ["blame", str(path), "--max-branches", "1", "-o", str(tmp_path / "b"), "--", *other]
    done = run_cli(*branch)  # blame has no --allow-network: the refusal suggests nothing
    assert "was not recorded by the incident, so it was not sent;" in done.stderr, done.stderr
    assert "--allow-network" not in done.stdout + done.stderr
    assert [s[:2] for s in suggested(done)] == [["otel-blackbox", "replay"]]


def test_a_stubbed_tool_the_incident_did_not_record_runs_with_the_option_named(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.txt"
    program = [
        sys.executable,
        str(EXAMPLES / "ledger_agent.py"),
        "openai",
        "--base-url",
        fake_llm.openai_base_url,
    ]
    program += ["--ledger", str(ledger)]
    incident = tmp_path / "incident.json"
    assert run_cli("record", "-o", str(incident), "--", *program).returncode == 0
    beta = [*program, "--question", "Look up order Beta and refund 12 on it, both please."]
    base = ["rerun", str(incident), "--stub-tools", "-o", str(tmp_path / "child.json"), "--", *beta]
    done = run_cli(*base)
    assert re.search(r"the model called lookup_order\(.*\), which the incident did not record", done.stderr)
    (run,) = suggested(done)
    assert run == ["--run-unrecorded-tools"]
    assert accepted(base, run).returncode == 0
    assert ledger.read_text().splitlines()[-1] == "refund Beta 12.00"  # it ran for real, as named


def test_a_blame_branch_names_no_option_blame_does_not_take() -> None:
    """Under blame -- CMD --stub-tools a tool call with no recorded result is a tool error the model
    sees, as under rerun, but suggests no --run-unrecorded-tools: blame has none."""
    stubber = ToolStubber(ids=CallIds(), on_miss="error", run_hint=False)
    missed = stubber.answer("lookup_order", json.dumps({"order_id": "Beta"}), None, framework="test")
    assert missed.error is not None and "the tool did not run)" in missed.error
    assert "`" not in missed.error and "--run-unrecorded-tools" not in missed.error
