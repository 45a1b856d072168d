"""The diff verdict on failed runs, `diff --contract` (or the contract beside the incident), and what
`inspect` says of a rerun.

A run failed when its outcome is an error, when it never finished, or when any of its tool results
is an error (a tool that raised or rejected its arguments), even when a final answer followed: the
incident of issue 19, whose ``refund_order`` rejected ``"12.OO"`` and whose program still answered.
A child that succeeded is fixed only when it did what failed again without error (issue 35): one
that never called ``refund_order`` avoided the failure, and is not counted as fixed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from fake_llm import FakeLLMServer
from helpers import EXAMPLES, run_cli, vector, vector_path

from otel_blackbox._cassette.diff.outcome import Failure, diff_outcome, run_failure
from otel_blackbox._cassette.diff.report import diff_cassettes
from otel_blackbox._cassette.diff.text import format_diff
from otel_blackbox._cassette.evals import dump_contract, generate_contract
from otel_blackbox._cassette.io import load_cassette, save_cassette
from otel_blackbox._cassette.model import Cassette
from otel_blackbox._mcp.cassettes import diff_cassettes as mcp_diff
from otel_blackbox._render.cassette_text import render_timeline

REJECTED = "refund_order: amount '12.OO' is not a number"


def run(
    calls: Sequence[tuple[str, str | None]],
    *,
    status: str = "success",
    answer: str = "Refunded.",
    cassette_id: str = "run",
) -> Cassette:
    """A small run: one model turn per tool call, each answered by its result or its error (the
    second of the pair, when not None), then how the run ended."""
    c = Cassette(cassette_id, 0)
    c.append("model_input", {"messages": [{"role": "user", "content": "refund A-17"}]}, 0)
    for n, (tool, error) in enumerate(calls):
        call = {"toolCallId": f"call-{n}", "toolName": tool, "toolInput": {"order_id": "A-17"}}
        c.append("model_output", {"type": "tool_call", **call}, n)
        c.append("tool_call", call, n)
        head = {"toolCallId": f"call-{n}", "toolName": tool}
        c.append(
            "tool_result", {**head, "error": error} if error is not None else {**head, "result": "ok"}, n
        )
    if status == "success":
        c.append("model_output", {"type": "final_answer", "text": answer}, 99)
        c.append("metadata", {"event": "run_completed", "status": "success", "result": answer}, 99)
    elif status == "error":
        c.append("metadata", {"event": "run_failed", "status": "error", "reason": answer}, 99)
    return c


Calls = list[tuple[str, str | None]]
INCIDENT: Calls = [("transfer_to_refund_agent", None), ("refund_order", REJECTED)]
FIXED: Calls = [("transfer_to_refund_agent", None), ("refund_order", None)]
AVOIDED: Calls = [("lookup_order", None), ("transfer_to_refund_agent", None)]  # no refund_order


# --- what failed ------------------------------------------------------------------------------------


def test_a_tool_error_fails_a_run_that_still_answered() -> None:
    failure = run_failure(run(INCIDENT, answer="Sorry, I could not refund it."))
    assert failure is not None and failure.kind == "tool_error" and failure.tools == ("refund_order",)
    assert failure.label == "tool error in refund_order"
    assert failure.first_error == f"refund_order at step 6: {REJECTED}"
    assert run_failure(run(FIXED)) is None


def test_the_outcome_names_the_failure_before_its_tool_errors() -> None:
    failed = run_failure(run(INCIDENT, status="error", answer="ValueError"))
    assert failed is not None and (failed.kind, failed.label, failed.tools) == (
        "error",
        "error",
        ("refund_order",),
    )
    killed = run_failure(run(INCIDENT, status="incomplete"))
    assert killed is not None and (killed.kind, killed.label) == ("incomplete", "incomplete")
    assert run_failure(run([], status="incomplete")) == Failure("incomplete")


def test_several_failing_tools_are_named_once_each_in_order() -> None:
    calls = [("search", "timeout"), ("refund_order", REJECTED), ("search", "timeout")]
    failure = run_failure(run(calls))
    assert failure is not None and failure.label == "tool errors in search, refund_order"
    assert failure.first_error == "search at step 3: timeout"


def _ending_with(result: dict[str, Any]) -> Cassette:
    c = Cassette("one-result", 0)
    c.append("tool_result", {"toolCallId": "call-0", "toolName": "refund_order", **result}, 0)
    c.append("metadata", {"event": "run_completed", "status": "success", "result": "done"}, 1)
    return c


def test_an_error_that_is_not_text_is_shown_as_json_and_a_null_error_is_none() -> None:
    failure = run_failure(_ending_with({"error": {"code": 422}}))
    assert failure is not None and failure.first_error == 'refund_order at step 0: {"code":422}'
    assert run_failure(_ending_with({"result": "ok", "error": None})) is None


# --- the verdict --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("parent", "child", "kind", "verdict"),
    [
        (
            run(INCIDENT, answer="Sorry."),
            run(FIXED),
            "failure_fixed",
            "failure fixed: tool error in refund_order → success",
        ),
        (run(FIXED), run(INCIDENT), "regression", "regression: success → tool error in refund_order"),
        # A tool error with a failed outcome is the outcome's failure, named as before.
        (run(INCIDENT, status="error", answer="ValueError"), run(FIXED), "failure_fixed",
         "failure fixed: parent error → child success"),
        (run(INCIDENT, status="incomplete"), run(FIXED), "failure_fixed",
         "failure fixed: parent incomplete → child success"),
        # The outcome succeeded but a tool failed: not fixed, the failure changed.
        (run(FIXED, status="error", answer="boom"), run(INCIDENT), "still_failing",
         "still failing: error → tool error in refund_order"),
        (run(INCIDENT), run(FIXED, status="incomplete"), "still_failing",
         "still failing: tool error in refund_order → incomplete"),
        # Succeeded without calling the tool that failed: round the failure, not through it.
        (run(INCIDENT, answer="Sorry."), run(AVOIDED), "failure_avoided",
         "failure avoided: refund_order not called (tool error in refund_order → success)"),
        (run(INCIDENT, status="error", answer="ValueError"), run(AVOIDED), "failure_avoided",
         "failure avoided: refund_order not called (parent error → child success)"),
        # A failed outcome (a raised error, a failed check, a kill) is fixed only with every tool
        # the parent reached answered again, though none of them errored.
        (run([("lookup_order", None)], status="error", answer="WrongAnswer"), run(FIXED),
         "failure_avoided", "failure avoided: lookup_order not called (parent error → child success)"),
        (run([("lookup_order", None)], status="error", answer="WrongAnswer"), run(AVOIDED),
         "failure_fixed", "failure fixed: parent error → child success"),
        (run(AVOIDED, status="incomplete"), run(AVOIDED), "failure_fixed",
         "failure fixed: parent incomplete → child success"),
        (run(AVOIDED, status="incomplete"), run(FIXED), "failure_avoided",
         "failure avoided: lookup_order not called (parent incomplete → child success)"),
        # Every tool that errored must answer: one of two is not enough.
        (run([("search", "timeout"), ("refund_order", REJECTED)]), run(FIXED), "failure_avoided",
         "failure avoided: search not called (tool errors in search, refund_order → success)"),
        (run([("search", "timeout"), ("refund_order", REJECTED)]), run([("search", None), *FIXED]),
         "failure_fixed", "failure fixed: tool errors in search, refund_order → success"),
    ],
)  # fmt: skip
def test_a_change_of_failure_is_named_by_its_direction_and_what_failed(
    parent: Cassette, child: Cassette, kind: str, verdict: str
) -> None:
    outcome = diff_outcome(parent, child)
    assert (outcome.kind, outcome.verdict) == (kind, verdict)
    assert not outcome.behaviourally_equivalent


def test_the_same_tool_failing_on_both_sides_is_still_failing() -> None:
    outcome = diff_outcome(run(INCIDENT, answer="Sorry."), run(INCIDENT, answer="Sorry again."))
    assert (outcome.kind, outcome.verdict) == (
        "still_failing",
        "still failing: tool error in refund_order (the final answer changed)",
    )
    rerouted = diff_outcome(run(INCIDENT), run([("lookup_order", None), *INCIDENT]))
    assert rerouted.verdict == "still failing: tool error in refund_order (the tool path changed)"
    again = diff_outcome(run(INCIDENT, status="error", answer="x"), run(FIXED, status="error", answer="y"))
    assert again.verdict == "still failing: error (the failure reason changed)"
    same = diff_outcome(run(INCIDENT), run(INCIDENT, cassette_id="again"))
    assert (same.kind, same.verdict) == (
        "no_change",
        "no behavioural change: the same failure (tool error in refund_order), result and tool path",
    )
    assert not any(o.fixed for o in (outcome, rerouted, again, same))


def test_only_a_fix_is_fixed_and_an_avoided_failure_names_what_it_skipped() -> None:
    fixed = diff_outcome(run(INCIDENT, answer="Sorry."), run(FIXED))
    avoided = diff_outcome(run(INCIDENT, answer="Sorry."), run(AVOIDED))
    assert fixed.fixed and not avoided.fixed
    assert (fixed.avoided_tools, avoided.avoided_tools) == ((), ("refund_order",))
    assert avoided.to_json()["fixed"] is False and avoided.to_json()["avoidedTools"] == ["refund_order"]
    assert fixed.to_json()["fixed"] is True
    lines = format_diff(diff_cassettes(run(INCIDENT, answer="Sorry."), run(AVOIDED, cassette_id="child")))
    assert lines[-4:] == [
        f"parent tool error: refund_order at step 6: {REJECTED}",
        "parent tools: transfer_to_refund_agent → refund_order",
        "child tools: lookup_order → transfer_to_refund_agent",
        "outcome: failure avoided: refund_order not called (tool error in refund_order → success)",
    ]
    # A tool answered with an error on another call does not count as done again.
    retried = run([("refund_order", REJECTED), ("refund_order", None)])
    assert diff_outcome(run(INCIDENT), retried).kind == "still_failing"


def test_the_published_vectors_keep_their_verdicts() -> None:
    # error-unknown-tool's tool error ends in run_failed: its outcome names the failure.
    regressed = diff_outcome(vector("success-tool-use"), vector("error-unknown-tool"))
    assert regressed.verdict == "regression: parent success → child error"
    assert regressed.child_failure is not None and regressed.child_failure.tools == ("flights",)
    assert diff_outcome(vector("fork-parent"), vector("fork-child")).kind == "answer_changed"


def test_the_report_shows_the_tool_error_before_the_verdict() -> None:
    lines = format_diff(diff_cassettes(run(INCIDENT, answer="Sorry."), run(FIXED, cassette_id="child")))
    assert lines[-4:] == [
        "parent answer: Sorry.",
        "child answer: Refunded.",
        f"parent tool error: refund_order at step 6: {REJECTED}",
        "outcome: failure fixed: tool error in refund_order → success",
    ]
    back = format_diff(diff_cassettes(run(FIXED), run(INCIDENT, answer="Sorry.", cassette_id="child")))
    assert back[-2:] == [
        f"child tool error: refund_order at step 6: {REJECTED}",
        "outcome: regression: success → tool error in refund_order",
    ]


def test_the_json_report_says_what_failed() -> None:
    data = diff_cassettes(run(INCIDENT, answer="Sorry."), run(FIXED, cassette_id="child")).to_json()
    outcome = data["outcome"]
    assert outcome["parentFailure"] == {
        "kind": "tool_error",
        "label": "tool error in refund_order",
        "tools": ["refund_order"],
        "firstError": f"refund_order at step 6: {REJECTED}",
    }
    assert outcome["childFailure"] is None
    assert (outcome["kind"], outcome["verdict"]) == (
        "failure_fixed",
        "failure fixed: tool error in refund_order → success",
    )


# --- the CLI ------------------------------------------------------------------------------------------


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {}
    for name, cassette in {
        "incident": run(INCIDENT, answer="Sorry, I could not refund it.", cassette_id="incident"),
        "fixed": run(FIXED, cassette_id="fixed"),
        "killed": run(FIXED[:1], status="incomplete", cassette_id="killed"),
    }.items():
        paths[name] = tmp_path / f"{name}.json"
        save_cassette(cassette, paths[name])
    paths["contract"] = tmp_path / "contract.json"
    paths["contract"].write_text(dump_contract(generate_contract(run(FIXED, cassette_id="good"))))
    return paths


def test_diff_ends_with_the_verdict_and_its_json_with_the_failure(files: dict[str, Path]) -> None:
    fixed = run_cli("diff", str(files["incident"]), str(files["fixed"]))
    assert fixed.returncode == 1  # they diverge: the tool's result
    assert fixed.stdout.splitlines()[-1] == "outcome: failure fixed: tool error in refund_order → success"
    data = json.loads(run_cli("diff", "--json", str(files["incident"]), str(files["fixed"])).stdout)
    assert data["outcome"]["parentFailure"]["tools"] == ["refund_order"] and "contract" not in data


def test_diff_with_a_contract_exits_0_when_the_child_completed_and_passed(files: dict[str, Path]) -> None:
    done = run_cli("diff", str(files["incident"]), str(files["fixed"]), "--contract", str(files["contract"]))
    assert done.returncode == 0, done.stdout + done.stderr  # diverged, but the contract is the gate
    lines = done.stdout.splitlines()
    at = lines.index("outcome: failure fixed: tool error in refund_order → success")
    assert lines[at + 1] == f"contract {files['contract']} on the child: 8/8 assertions passed"
    assert lines[at + 2 : -1] and all(line.startswith("PASS ") for line in lines[at + 2 : -1])
    assert "PASS no tool returned an error: 2 tool calls, no errors" in lines
    assert lines[-1] == "contract: pass"


def test_diff_with_a_contract_exits_1_when_the_child_fails_it(files: dict[str, Path]) -> None:
    done = run_cli("diff", str(files["fixed"]), str(files["incident"]), "--contract", str(files["contract"]))
    assert done.returncode == 1
    assert f"FAIL no tool returned an error: refund_order at step 6: {json.dumps(REJECTED)}" in done.stdout
    assert done.stdout.splitlines()[-1] == "contract: fail"
    data = json.loads(
        run_cli(
            "diff",
            "--json",
            str(files["fixed"]),
            str(files["incident"]),
            "--contract",
            str(files["contract"]),
        ).stdout
    )
    contract = data["contract"]
    assert (contract["passed"], contract["childCompleted"], contract["name"]) == (False, True, "good")
    failed = [a["kind"] for a in contract["assertions"] if not a["passed"]]
    assert failed == ["no_tool_errors"]


def test_diff_with_a_contract_fails_a_child_that_did_not_complete(
    files: dict[str, Path], tmp_path: Path
) -> None:
    # A contract that asks nothing of the end: every assertion passes, the child still never finished.
    lenient = tmp_path / "lenient.json"
    lenient.write_text(
        json.dumps(
            {
                "contractVersion": 1,
                "name": "lenient",
                "assertions": [{"kind": "tool_called", "tool": "transfer_to_refund_agent"}],
            }
        )
    )
    done = run_cli("diff", str(files["fixed"]), str(files["killed"]), "--contract", str(lenient))
    assert done.returncode == 1
    assert "contract " + str(lenient) + " on the child: 1/1 assertions passed" in done.stdout
    assert done.stdout.splitlines()[-1] == "contract: fail (the child did not complete)"
    data = json.loads(
        run_cli(
            "diff", "--json", str(files["fixed"]), str(files["killed"]), "--contract", str(lenient)
        ).stdout
    )
    assert (data["contract"]["passed"], data["contract"]["childCompleted"]) == (False, False)


def _lenient(path: Path) -> Path:
    """A contract that asks only for the lookup: an answer with no refund passes it."""
    path.write_text(
        json.dumps(
            {
                "contractVersion": 1,
                "name": "lenient",
                "assertions": [{"kind": "tool_called", "tool": "lookup_order"}],
            }
        )
    )
    return path


def test_the_contract_beside_the_incident_decides_unless_told_otherwise(
    files: dict[str, Path], tmp_path: Path
) -> None:
    beside = tmp_path / "incident.contract.json"  # incident.json's own
    beside.write_text(files["contract"].read_text())
    avoided = tmp_path / "avoided.json"
    save_cassette(run(AVOIDED, cassette_id="avoided"), avoided)
    incident = str(files["incident"])

    fixed = run_cli("diff", incident, str(files["fixed"]))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr  # the contract passed: it decides
    lines = fixed.stdout.splitlines()
    at = lines.index("outcome: failure fixed: tool error in refund_order → success")
    assert lines[at + 1] == f"contract {beside} (beside the incident) on the child: 8/8 assertions passed"
    assert lines[-1] == "contract: pass"

    went_round = run_cli("diff", incident, str(avoided))
    assert went_round.returncode == 1
    assert "outcome: failure avoided: refund_order not called (tool error in refund_order → success)" in (
        went_round.stdout.splitlines()
    )
    assert "FAIL tool refund_order called at least 1 time: called 0 times" in went_round.stdout
    assert went_round.stdout.splitlines()[-1] == "contract: fail"
    data = json.loads(run_cli("diff", "--json", incident, str(avoided)).stdout)
    assert (data["outcome"]["kind"], data["outcome"]["fixed"]) == ("failure_avoided", False)
    assert (data["contract"]["path"], data["contract"]["besideIncident"]) == (str(beside), True)

    # --no-contract: no contract, the exit code says the cassettes diverged.
    plain = run_cli("diff", "--no-contract", incident, str(files["fixed"]))
    assert plain.returncode == 1 and "contract" not in plain.stdout
    assert "contract" not in json.loads(run_cli("diff", "--json", "--no-contract", incident, incident).stdout)

    # A contract named on the command line is the one that decides: this one takes no refund.
    lenient = _lenient(tmp_path / "lenient.json")
    named = run_cli("diff", incident, str(avoided), "--contract", str(lenient))
    assert named.returncode == 0, named.stdout
    assert f"contract {lenient} on the child: 1/1 assertions passed" in named.stdout.splitlines()
    assert "outcome: failure avoided: refund_order not called" in named.stdout  # the verdict says it still


def test_the_mcp_diff_says_the_same_and_checks_the_contract_beside_the_incident(
    files: dict[str, Path], tmp_path: Path
) -> None:
    avoided = tmp_path / "avoided.json"
    save_cassette(run(AVOIDED, cassette_id="avoided"), avoided)
    plain = json.loads(mcp_diff(str(files["incident"]), str(avoided)))
    assert (
        plain["verdict"] == "failure avoided: refund_order not called (tool error in refund_order → success)"
    )
    assert plain["outcome"]["fixed"] is False and "contract" not in plain
    (tmp_path / "incident.contract.json").write_text(files["contract"].read_text())
    decided = json.loads(mcp_diff(str(files["incident"]), str(avoided)))
    assert (decided["contract"]["besideIncident"], decided["contract"]["passed"]) == (True, False)
    assert json.loads(mcp_diff(str(files["incident"]), str(files["fixed"])))["contract"]["passed"]


def test_a_bad_contract_beside_the_incident_is_one_line_and_exit_2(
    files: dict[str, Path], tmp_path: Path
) -> None:
    (tmp_path / "incident.contract.json").write_text("{not json")
    done = run_cli("diff", str(files["incident"]), str(files["fixed"]))
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "incident.contract.json" in done.stderr
    assert run_cli("diff", "--no-contract", str(files["incident"]), str(files["fixed"])).returncode == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        ("{not json", "contract.json"),
        (json.dumps({"contractVersion": 1, "assertions": [{"kind": "nope"}]}), "$.assertions[0]"),
        (json.dumps({"contractVersion": 9, "assertions": []}), "contractVersion 9 is not supported"),
    ],
    ids=["missing", "not-json", "bad-assertion", "bad-version"],
)
def test_a_bad_contract_is_one_line_and_exit_2_before_any_diff(
    files: dict[str, Path], tmp_path: Path, content: str | None, message: str
) -> None:
    bad = tmp_path / "bad" / "contract.json"
    if content is not None:
        bad.parent.mkdir()
        bad.write_text(content)
    done = run_cli("diff", str(files["incident"]), str(files["fixed"]), "--contract", str(bad))
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and message in done.stderr
    assert "Traceback" not in done.stderr


def test_a_tool_error_the_processor_recorded_is_a_failure_a_good_run_fixes(tmp_path: Path) -> None:
    """Any cassette, not only the built-in agent's: the real Agents SDK, recorded by the processor
    alone. The SDK hands the tool's exception to the model, which answers: the run "succeeded"."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    paths = {}
    with FakeLLMServer() as server:
        for name, extra in (("incident", ["--lookup-down"]), ("good", [])):
            db, paths[name] = tmp_path / f"{name}.db", tmp_path / f"{name}.json"
            argv = [sys.executable, str(EXAMPLES / "handoff_agent.py"), "--base-url", server.openai_base_url]
            done = subprocess.run(
                [*argv, "--db", str(db), *extra], capture_output=True, text=True, env=env, timeout=120
            )
            assert done.returncode == 0, done.stderr
            (recorded,) = json.loads(run_cli("runs", "--json", db=db, check=True).stdout)
            run_cli("cassette", "--run", recorded["run_id"], "-o", str(paths[name]), db=db, check=True)
    failure = run_failure(load_cassette(paths["incident"]))
    assert failure is not None and (failure.kind, failure.tools) == ("tool_error", ("lookup_order",))
    fixed = run_cli("diff", str(paths["incident"]), str(paths["good"])).stdout.splitlines()
    assert fixed[-1] == "outcome: failure fixed: tool error in lookup_order → success"
    assert fixed[-2].startswith("parent tool error: lookup_order at step 3: ")
    back = run_cli("diff", str(paths["good"]), str(paths["incident"])).stdout.splitlines()
    assert back[-1] == "outcome: regression: success → tool error in lookup_order"


# --- inspect --------------------------------------------------------------------------------------------


def _child(**hints: Any) -> Cassette:
    child = run(FIXED, cassette_id="child")
    child.parent_id = "incident-42"
    for name, value in hints.items():
        setattr(child, name, value)
    return child


def test_inspect_names_the_built_in_agent_that_reran_the_incident(tmp_path: Path) -> None:
    agent = {"kind": "built-in", "provider": "anthropic", "model": "claude-x", "toolMatch": "arguments"}
    child = _child(agent=agent, api={"name": "anthropic", "stream": True})
    path = tmp_path / "child.json"
    save_cassette(child, path)
    shown = run_cli("inspect", str(path), check=True).stdout.splitlines()
    assert shown[1:3] == [
        "rerun of incident-42 (built-in agent, provider anthropic, model claude-x)",
        "recorded on: anthropic (streamed)",
    ]


RERUN = "rerun of incident-42"


@pytest.mark.parametrize(
    ("hints", "lines"),
    [
        ({}, [RERUN]),  # a program's rerun: as before
        ({"api": {"name": "openai-responses", "stream": True}},
         [RERUN, "recorded on: openai-responses (streamed)"]),
        ({"api": {"name": "openai-chat", "stream": False}},
         [RERUN, "recorded on: openai-chat (not streamed)"]),
        ({"api": {"name": "gemini"}}, [RERUN, "recorded on: gemini"]),  # the spans did not tell
        ({"agent": {"kind": "built-in", "model": "m"}}, [f"{RERUN} (built-in agent, model m)"]),
        ({"agent": {"kind": "program"}, "api": {"stream": True}}, [RERUN]),  # neither understood
    ],
)  # fmt: skip
def test_inspect_shows_the_hints_it_has(hints: dict[str, Any], lines: list[str]) -> None:
    shown = render_timeline(_child(**hints))
    assert shown[1 : 1 + len(lines)] == lines
    assert shown[1 + len(lines)].startswith("#0 ")


def test_inspect_of_a_cassette_with_no_parent_and_no_hint_is_unchanged() -> None:
    shown = render_timeline(vector("success-tool-use"))
    assert shown[1].startswith("#0 ")
    assert (
        run_cli("inspect", str(vector_path("success-tool-use")), check=True)
        .stdout.splitlines()[1]
        .startswith("#0 ")
    )


def test_inspect_makes_hostile_hints_terminal_safe() -> None:
    child = _child(
        agent={"kind": "built-in", "provider": "evil\x1b[2J", "model": "m\nfake line"},
        api={"name": "x\x07", "stream": True},
    )
    text = "\n".join(render_timeline(child))
    assert "\x1b" not in text and "\x07" not in text and "fake line\n" not in text
    assert "rerun of incident-42 (built-in agent, provider evil\\x1b[2J, model m\\nfake line)" in text
    long = render_timeline(_child(agent={"kind": "built-in", "model": "m" * 5000}, api={"name": "n" * 5000}))
    assert all(len(line) < 200 for line in long[1:3])
