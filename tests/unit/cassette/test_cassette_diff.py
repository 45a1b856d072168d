"""diff_cassettes: the first divergence (by hash or semantically), the differing path, the outcome verdict."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from helpers import vector

from otel_blackbox._cassette.diff.json_paths import ABSENT, first_difference
from otel_blackbox._cassette.diff.outcome import diff_outcome
from otel_blackbox._cassette.diff.report import diff_cassettes
from otel_blackbox._cassette.diff.text import format_diff
from otel_blackbox._cassette.model import Cassette


def rerecorded(source: Cassette, new_id: str, time_shift: int) -> Cassette:
    """The same run recorded again: another id, other timestamps, the same types and payloads."""
    copy_ = Cassette(new_id, source.created_at + time_shift)
    for step in source.steps:
        copy_.append(step.type, copy.deepcopy(step.payload), step.timestamp + time_shift)
    return copy_


def run(
    tools: list[str], *, status: str = "success", result: str = "done", cassette_id: str = "run"
) -> Cassette:
    """A small synthetic run: one model turn per tool, then a terminal metadata step."""
    c = Cassette(cassette_id, 0)
    c.append("model_input", {"messages": [{"role": "user", "content": "go"}]}, 0)
    for n, tool in enumerate(tools):
        call = {"toolCallId": f"c{n}", "toolName": tool, "toolInput": {"n": n}}
        c.append("model_output", {"type": "tool_call", **call}, n)
        c.append("tool_call", call, n)
        c.append("tool_result", {"toolCallId": f"c{n}", "toolName": tool, "result": "ok"}, n)
    if status == "success":
        c.append("model_output", {"type": "final_answer", "text": result}, 99)
        c.append("metadata", {"event": "run_completed", "status": "success", "result": result}, 99)
    elif status == "error":
        c.append("metadata", {"event": "run_failed", "status": "error", "reason": result}, 99)
    return c


# --- the published vectors ------------------------------------------------------------------------


def test_fork_child_diverges_at_the_replaced_search_result() -> None:
    report = diff_cassettes(vector("fork-parent"), vector("fork-child"))
    assert report.index == 3 and report.shared_prefix == 3
    assert report.parent_step is not None and report.child_step is not None
    assert report.parent_step.type == report.child_step.type == "tool_result"
    assert report.difference is not None
    assert report.difference.path.startswith("$.payload.result")
    # Keys are visited in canonical order, so the first difference is the key only the child has.
    assert report.difference.path == "$.payload.result.available"
    assert report.difference.parent is ABSENT and report.difference.child is False
    outcome = report.outcome
    assert outcome.kind == "answer_changed" and "answer changed" in outcome.verdict
    assert (outcome.status_changed, outcome.result_changed, outcome.tool_sequence_changed) == (
        False,
        True,
        True,
    )
    assert outcome.parent_tools == ["search", "calendar", "booking"]
    assert outcome.child_tools == ["search"]
    assert outcome.child_result is not None and outcome.child_result.startswith("No hotels available")


def test_fork_child_readable_report_has_one_fact_per_line() -> None:
    lines = format_diff(diff_cassettes(vector("fork-parent"), vector("fork-child")))
    assert "first divergence: index 3 (tool_result)" in lines
    assert "differs at: $.payload.result.available" in lines
    assert "parent value: (absent)" in lines and "child value: false" in lines
    assert "outcome: same final status (success), but the final answer changed" in lines
    assert "child tools: search" in lines
    assert "parent tools: search → calendar → booking" in lines
    assert all("\n" not in line for line in lines)


def test_parent_against_itself_has_no_divergence_and_no_behavioural_change() -> None:
    parent = vector("fork-parent")
    report = diff_cassettes(parent, parent)
    assert report.index is None and not report.diverged
    assert report.parent_step is None and report.child_step is None and report.difference is None
    assert report.shared_prefix == 15
    assert report.outcome.kind == "no_change" and report.outcome.behaviourally_equivalent
    assert report.outcome.verdict.startswith("no behavioural change")
    assert "no divergence: all 15 steps are equal" in format_diff(report)


def test_ids_are_not_hashed_so_the_same_run_under_another_id_does_not_diverge() -> None:
    success, parent = vector("success-tool-use"), vector("fork-parent")
    assert success.id != parent.id
    assert diff_cassettes(success, parent).index is None


def test_success_against_unknown_tool_error_is_a_regression() -> None:
    report = diff_cassettes(vector("success-tool-use"), vector("error-unknown-tool"))
    assert report.index == 0  # different user prompts from the first step
    assert report.difference is not None and report.difference.path == "$.payload.messages[0].content"
    assert report.outcome.kind == "regression"
    assert report.outcome.verdict == "regression: parent success → child error"
    assert report.outcome.child_result == "unknown_tool"
    assert report.outcome.child_tools == ["flights"]


# --- semantic mode ----------------------------------------------------------------------------------


def test_semantic_diff_ignores_timestamps_and_ids() -> None:
    original = vector("success-tool-use")
    again = rerecorded(original, "another-recording", time_shift=1_700_000_000_000)
    by_hash = diff_cassettes(original, again)
    assert by_hash.index == 0 and by_hash.difference is not None
    assert by_hash.difference.path == "$.timestamp"  # hash mode names what really differs
    semantic = diff_cassettes(original, again, semantic=True)
    assert semantic.index is None and semantic.mode == "semantic"
    assert semantic.outcome.behaviourally_equivalent


def test_semantic_diff_still_finds_a_real_payload_change() -> None:
    child = rerecorded(vector("fork-child"), "child-again", time_shift=5)
    report = diff_cassettes(vector("fork-parent"), child, semantic=True)
    assert report.index == 3
    assert report.difference is not None and report.difference.path == "$.payload.result.available"


def test_semantic_equality_is_canonical_json_equality() -> None:
    a, b = Cassette("a", 0), Cassette("b", 5)
    a.append("tool_result", {"result": {"n": 1, "k": [1.0, "x"]}}, 0)
    b.append("tool_result", {"result": {"k": [1, "x"], "n": 1.0}}, 5)  # same JSON: 1.0 is 1, keys unordered
    assert diff_cassettes(a, b, semantic=True).index is None
    a.append("tool_result", {"ok": True}, 1)
    b.append("tool_result", {"ok": 1}, 6)  # true is not 1 in JSON
    report = diff_cassettes(a, b, semantic=True)
    assert report.index == 1 and report.difference is not None
    assert (report.difference.path, report.difference.parent, report.difference.child) == (
        "$.payload.ok",
        True,
        1,
    )


def test_a_changed_step_type_is_named_first() -> None:
    a, b = Cassette("a", 0), Cassette("b", 0)
    a.append("model_output", {"type": "final_answer", "text": "hi"}, 0)
    b.append("metadata", {"event": "note"}, 0)
    report = diff_cassettes(a, b, semantic=True)
    assert report.difference is not None and report.difference.path == "$.type"
    assert "first divergence: index 0 (model_output vs metadata)" in format_diff(report)


# --- ends, truncations, broken hashes ---------------------------------------------------------------


def test_a_truncated_child_diverges_where_it_ends() -> None:
    parent = vector("fork-parent")
    child = Cassette("short", 0, steps=parent.steps[:10])
    report = diff_cassettes(parent, child)
    assert report.index == 10 and report.child_step is None and report.difference is None
    assert report.parent_step is not None and report.parent_step.index == 10
    assert report.outcome.kind == "regression" and report.outcome.child_status == "incomplete"
    lines = format_diff(report)
    assert "first divergence: index 10 (the child ends there)" in lines
    assert "child step 10: (no step: the child ended)" in lines
    reverse = diff_cassettes(child, parent)
    assert reverse.index == 10 and reverse.parent_step is None and reverse.child_step is not None


def test_differing_stored_hashes_over_equal_fields_point_to_verify() -> None:
    parent = vector("fork-parent")
    child = copy.deepcopy(parent)
    child.steps[2].hash = "0" * 64  # tampered hash, content untouched
    report = diff_cassettes(parent, child)
    assert report.index == 2 and report.difference is None
    assert any("run verify" in line for line in format_diff(report))


# --- outcome precedence -----------------------------------------------------------------------------


def test_same_outcome_with_another_tool_path() -> None:
    outcome = diff_outcome(run(["search", "booking"]), run(["search", "calendar", "booking"]))
    assert outcome.kind == "tool_path_changed"
    assert outcome.verdict == "same outcome, but the tool path changed"
    assert not outcome.status_changed and not outcome.result_changed


def test_same_error_with_another_reason() -> None:
    outcome = diff_outcome(
        run([], status="error", result="timeout"), run([], status="error", result="unknown_tool")
    )
    assert (outcome.kind, outcome.verdict) == (
        "still_failing",
        "still failing: error (the failure reason changed)",
    )
    lines = format_diff(
        diff_cassettes(run([], status="error", result="timeout"), run([], status="error", result="x"))
    )
    assert "parent reason: timeout" in lines and "child reason: x" in lines


def test_status_outranks_result_and_tools() -> None:
    outcome = diff_outcome(run(["a"], result="yes"), run(["b"], status="error", result="boom"))
    assert outcome.kind == "regression" and outcome.status_changed
    assert outcome.result_changed and outcome.tool_sequence_changed  # all flags still reported


@pytest.mark.parametrize(
    ("parent", "child", "kind", "verdict"),
    [
        ("error", "success", "failure_fixed", "failure fixed: parent error → child success"),
        ("incomplete", "success", "failure_fixed", "failure fixed: parent incomplete → child success"),
        ("success", "error", "regression", "regression: parent success → child error"),
        ("success", "incomplete", "regression", "regression: parent success → child incomplete"),
        ("error", "incomplete", "still_failing", "still failing: parent error → child incomplete"),
        ("incomplete", "error", "still_failing", "still failing: parent incomplete → child error"),
    ],
)
def test_a_status_change_is_named_by_its_direction(parent: str, child: str, kind: str, verdict: str) -> None:
    outcome = diff_outcome(run(["a"], status=parent, result="r1"), run(["a"], status=child, result="r2"))
    assert (outcome.kind, outcome.verdict) == (kind, verdict)
    assert outcome.status_changed and not outcome.behaviourally_equivalent


def test_the_verdict_closes_the_report_after_both_results() -> None:
    failed = run(["search"], status="error", result="RuntimeError")
    fixed = run(["search", "book"], result="Booked.", cassette_id="child")
    lines = format_diff(diff_cassettes(failed, fixed))
    assert lines[-5:] == [
        "parent reason: RuntimeError",
        "child answer: Booked.",
        "parent tools: search",
        "child tools: search → book",
        "outcome: failure fixed: parent error → child success",
    ]
    back = format_diff(diff_cassettes(fixed, run(["search", "book"], status="incomplete")))
    assert back[-2:] == ["parent answer: Booked.", "outcome: regression: parent success → child incomplete"]


def test_two_incomplete_runs_with_the_same_tools_are_equivalent() -> None:
    outcome = diff_outcome(run(["a"], status="incomplete"), run(["a"], status="incomplete", cassette_id="x"))
    assert outcome.kind == "no_change" and outcome.parent_result is None


# --- the JSON walk ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("parent", "child", "path", "values"),
    [
        ({"a": [1, 2, 3]}, {"a": [1, 2]}, "$.a[2]", (3, ABSENT)),
        ({"a": [{"b": 1}]}, {"a": [{"b": 2}]}, "$.a[0].b", (1, 2)),
        ({"z": 1, "a": 1}, {"z": 2, "a": 2}, "$.a", (1, 2)),  # canonical key order, not file order
        ({"a b": 1}, {"a b": None}, '$["a b"]', (1, None)),  # null is a value, not an absence
        ({"x": {"y": 1}}, {"x": [1]}, "$.x", ({"y": 1}, [1])),
        ("text", "text", None, None),
        ({"n": 10**20}, {"n": 1e20}, None, None),  # the same double in JavaScript
    ],
)
def test_first_difference(parent: Any, child: Any, path: str | None, values: tuple[Any, Any] | None) -> None:
    found = first_difference(parent, child)
    if path is None:
        assert found is None
    else:
        assert found is not None and found.path == path and (found.parent, found.child) == values


def test_json_report_leaves_out_an_absent_side() -> None:
    data = diff_cassettes(vector("fork-parent"), vector("fork-child")).to_json()
    assert data["index"] == 3 and data["sharedPrefix"] == 3
    assert data["difference"] == {"path": "$.payload.result.available", "child": False}
    assert data["outcome"]["kind"] == "answer_changed" and data["outcome"]["childTools"] == ["search"]
    assert data["parentStep"]["hash"].startswith("a201c469") and data["childStep"]["hash"].startswith(
        "bbf0f149"
    )


# --- hostile and large values -----------------------------------------------------------------------


def test_format_neutralises_control_characters_and_clips_long_values() -> None:
    a, b = Cassette("a\x1b[2J", 0), Cassette("b", 0)
    a.append("tool_result", {"result": "fine"}, 0)
    b.append("tool_result", {"result": "\x1b]0;pwned\x07" + "y" * 5000}, 0)
    lines = format_diff(diff_cassettes(a, b))
    text = "\n".join(lines)
    assert "\x1b" not in text and "\x07" not in text and "\\x1b" in text
    assert all(len(line) < 320 for line in lines)
    assert any("more chars)" in line for line in lines)


def big_run(cassette_id: str, *, steps: int, change_at: int | None = None, time_shift: int = 0) -> Cassette:
    c = Cassette(cassette_id, time_shift)
    kinds = ("model_input", "model_output", "tool_call", "tool_result")
    for i in range(steps):
        payload = {"toolName": "search", "toolCallId": f"call-{i // 4}", "toolInput": {"query": f"q{i // 4}"}}
        if i == change_at:
            payload["toolInput"] = {"query": "changed"}
        c.append(kinds[i % 4], payload, time_shift + i)
    return c


@pytest.fixture(scope="module")
def ten_thousand() -> tuple[Cassette, Cassette, Cassette]:
    parent = big_run("big", steps=10_000)
    fork = big_run("big-fork", steps=10_000, change_at=9_990)
    rerecorded_fork = big_run("big-again", steps=10_000, change_at=9_990, time_shift=10**12)
    return parent, fork, rerecorded_fork


def test_ten_thousand_step_cassettes_diff_correctly(
    ten_thousand: tuple[Cassette, Cassette, Cassette],
) -> None:
    # How fast: bench/bench_cassette.py (docs/benchmarks.md), not a timed test.
    parent, fork, rerecorded_fork = ten_thousand
    by_hash = diff_cassettes(parent, fork)
    semantic = diff_cassettes(parent, rerecorded_fork, semantic=True)
    for report in (by_hash, semantic):
        assert report.index == 9_990 and report.shared_prefix == 9_990
        assert report.difference is not None and report.difference.path == "$.payload.toolInput.query"
        assert (report.difference.parent, report.difference.child) == ("q2497", "changed")
    assert diff_cassettes(parent, rerecorded_fork).index == 0  # by hash, timestamps differ from step 0


def _one_call(model_input: dict[str, Any], run_id: str) -> Cassette:
    cassette = Cassette(id=run_id, created_at=1)
    cassette.append("model_input", model_input, 1)
    cassette.append("model_output", {"type": "final_answer", "text": "done"}, 2)
    cassette.append("metadata", {"event": "run_completed", "status": "success", "result": "done"}, 3)
    return cassette


def test_semantic_diff_compares_a_span_built_model_input_in_what_its_spans_observed() -> None:
    wire = {"messages": [{"role": "user", "content": "hi"}], "tools": [], "params": {"toolChoice": "auto"}}
    # The spans saw the messages but not the settings (the Agents SDK's echo, say): none written.
    spans = {"messages": [{"role": "user", "content": "hi"}], "tools": [], "observed": ["messages"]}
    same = diff_cassettes(_one_call(spans, "from-spans"), _one_call(wire, "from-wire"), semantic=True)
    assert same.index is None
    changed = {**wire, "messages": [{"role": "user", "content": "hello"}]}
    report = diff_cassettes(_one_call(spans, "from-spans"), _one_call(changed, "changed"), semantic=True)
    assert report.index == 0
    assert report.difference is not None and report.difference.path == "$.payload.messages[0].content"
    # By hash nothing is overlooked: the payloads are not the same bytes.
    assert diff_cassettes(_one_call(spans, "a"), _one_call(wire, "b")).index == 0
