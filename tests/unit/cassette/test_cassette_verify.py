"""verify: each kind of tampering is caught by the right check at the right step; nothing crashes it."""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import vector
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_blackbox._cassette.io import loads_json, parse_cassette
from otel_blackbox._cassette.model import STEP_TYPES, Cassette
from otel_blackbox._cassette.neutrality import audit_neutrality, find_credential
from otel_blackbox._cassette.verify import CHECK_NAMES, VerifyReport, verify_cassette, verify_file
from otel_blackbox.errors import CassetteError

ANTHROPIC_KEY = "sk-ant-api03-" + "Xy7_Qw2-" * 11 + "AA"


def success() -> Cassette:
    """success-tool-use: 0 input, 1 output (call-0), 2 tool_call, 3 tool_result, … 13 final_answer, 14 end."""
    return vector("success-tool-use")


def rechained(
    cassette: Cassette, edit: Callable[[list[tuple[str, Any]]], None] = lambda steps: None
) -> Cassette:
    """The cassette's steps, edited, then hashed again: a valid chain, so only the other checks can object."""
    steps = [(s.type, copy.deepcopy(s.payload)) for s in cassette.steps]
    edit(steps)
    out = Cassette(cassette.id, cassette.created_at)
    for step_type, payload in steps:
        out.append(step_type, payload, 0)
    return out


def failure(report: VerifyReport) -> tuple[str, int | None, str]:
    """(check, step, detail) of the single failure; the checks before it passed, those after it skipped."""
    first = report.first_failure
    assert first is not None and not report.passed
    position = CHECK_NAMES.index(first.name)
    assert [c.status for c in report.checks] == ["pass"] * position + ["fail"] + ["skip"] * (3 - position)
    assert "\n" not in first.detail
    return first.name, first.step_index, first.detail


# -- hash_chain ----------------------------------------------------------------------------------


def _edit_payload(c: Cassette) -> None:
    c.steps[3].payload["result"]["results"] = []


def _remove_step(c: Cassette) -> None:
    del c.steps[5]


def _swap_steps(c: Cassette) -> None:
    c.steps[6], c.steps[7] = c.steps[7], c.steps[6]


def _edit_hash(c: Cassette) -> None:
    c.steps[8].hash = "0" * 64


def _edit_prev_hash(c: Cassette) -> None:
    c.steps[8].prev_hash = c.steps[6].hash


def _first_prev_hash(c: Cassette) -> None:
    c.steps[0].prev_hash = c.steps[0].hash


def _wrong_id(c: Cassette) -> None:
    c.steps[2].id = "another-run:2"


def _nan_payload(c: Cassette) -> None:
    c.steps[4].payload = {"x": float("nan")}


def _deep_payload(c: Cassette) -> None:
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    c.steps[9].payload = deep


@pytest.mark.parametrize(
    ("tamper", "step", "words"),
    [
        (_edit_payload, 3, "hash does not match its content"),
        (_remove_step, 5, "index is 6, expected 5"),
        (_swap_steps, 6, "index is 7, expected 6"),
        (_edit_hash, 8, "hash does not match its content"),
        (_edit_prev_hash, 8, "is not the previous step's hash"),
        (_first_prev_hash, 0, "prevHash must be null"),
        (_wrong_id, 2, "id another-run:2 is not fixture-success-tool-use:2"),
        (_nan_payload, 4, "no canonical JSON form"),
        (_deep_payload, 9, "no canonical JSON form"),
    ],
)
def test_hash_chain_names_the_tampered_step(
    tamper: Callable[[Cassette], None], step: int, words: str
) -> None:
    cassette = success()
    tamper(cassette)
    name, index, detail = failure(verify_cassette(cassette))
    assert (name, index) == ("hash_chain", step)
    assert detail.startswith(f"step {step}: ") and words in detail


def test_an_edited_hash_shows_both_hashes_shortened() -> None:
    cassette = success()
    _edit_payload(cassette)
    detail = failure(verify_cassette(cassette))[2]
    assert (
        f"expected {cassette.steps[3].expected_hash()[:8]}…, stored {cassette.steps[3].hash[:8]}…" in detail
    )


def test_a_truncated_tail_is_caught_only_with_the_expected_head() -> None:
    original = success()
    cut = success()
    del cut.steps[12:]
    assert verify_cassette(cut).passed  # still a valid (incomplete) run
    name, index, detail = failure(verify_cassette(cut, expect_head=original.head))
    assert (name, index) == ("hash_chain", 11) and "expected head" in detail
    assert verify_cassette(original, expect_head=str(original.head).upper()).passed


def test_a_rewritten_chain_is_caught_only_with_the_expected_head() -> None:
    original = success()
    forged = rechained(original, lambda steps: steps[3][1]["result"].update(results=[]))
    assert verify_cassette(forged).passed
    assert failure(verify_cassette(forged, expect_head=original.head))[:2] == ("hash_chain", 14)


def test_an_expected_head_on_an_empty_cassette_fails_without_a_step() -> None:
    # An empty cassette has an intact (empty) chain, and nothing to replay.
    assert failure(verify_cassette(Cassette("empty", 0))) == (
        "replayability",
        None,
        "no model call in the cassette: there is nothing to replay",
    )
    assert failure(verify_cassette(Cassette("empty", 0), expect_head="ab" * 32))[:2] == ("hash_chain", None)


def test_a_wrong_version_fails_first() -> None:
    cassette = success()
    cassette.version = 3
    assert failure(verify_cassette(cassette)) == (
        "schema_version",
        None,
        "version 3 is not supported (expected 2)",
    )


# -- provider_neutrality -------------------------------------------------------------------------


def _set(step: int, *path: Any, value: Any) -> Callable[[list[tuple[str, Any]]], None]:
    def edit(steps: list[tuple[str, Any]]) -> None:
        target = steps[step][1]
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


@pytest.mark.parametrize(
    ("edit", "step", "path", "shown"),
    [
        (_set(1, "toolCallId", value="toolu_01A09q90qw90lq917835lq9"), 1,
         "$.steps[1].payload.toolCallId", "toolu_"),
        (_set(1, "toolCallId", value="call_abcdefghijklmnopqrstuvwx"), 1,
         "$.steps[1].payload.toolCallId", "call_"),
        (_set(1, "usage", value={"input_tokens": 10}), 1, "$.steps[1].payload.usage", '"usage"'),
        (_set(13, "id", value="anything"), 13, "$.steps[13].payload.id", '"id"'),
        (_set(14, "finish_reason", value="stop"), 14, "$.steps[14].payload.finish_reason", "finish_reason"),
        (_set(14, "reason", value="set ANTHROPIC_API_KEY"), 14,
         "$.steps[14].payload.reason", "ANTHROPIC_API_KEY"),
        (_set(4, "messages", 1, "role", value="msg_01XyZ"), 4, "$.steps[4].payload.messages[1].role", "msg_"),
        (_set(0, "tools", 0, "chatcmpl-9ab3Kd72Lx", value=1), 0,
         '$.steps[0].payload.tools[0]["chatcmpl-9ab3Kd72Lx"]', "chatcmpl-"),
        (_set(3, "result", "note", value=f"key: {ANTHROPIC_KEY}"), 3,
         "$.steps[3].payload.result.note", "sk-ant…"),
        (_set(2, "toolInput", "auth", value="Bearer abcdefghijklmnop0123"), 2,
         "$.steps[2].payload.toolInput.auth", "bearer"),
    ],
)  # fmt: skip
def test_provider_specific_things_are_found_where_they_are(
    edit: Callable[[list[tuple[str, Any]]], None], step: int, path: str, shown: str
) -> None:
    name, index, detail = failure(verify_cassette(rechained(success(), edit)))
    assert (name, index) == ("provider_neutrality", step)
    assert detail.startswith(f"step {step}: ") and f"at {path}" in detail and shown in detail


def test_a_credential_is_never_echoed() -> None:
    cassette = rechained(success(), _set(3, "result", "note", value=f"key: {ANTHROPIC_KEY}"))
    detail = failure(verify_cassette(cassette))[2]
    assert ANTHROPIC_KEY[:12] not in detail and f"({len(ANTHROPIC_KEY)} chars)" in detail


def test_a_provider_id_in_the_cassette_id_names_no_step() -> None:
    cassette = success()
    cassette.id = "chatcmpl-9ab3Kd72LxQ"
    findings = audit_neutrality(cassette)
    assert (findings[0].step_index, findings[0].path) == (None, "$.id")


@pytest.mark.parametrize(
    "edit",
    [
        _set(3, "result", "usage", value=42),  # a tool's own data may use provider words as keys
        _set(3, "result", "stop_reason", value="end_turn"),
        _set(
            3, "result", "log", value="grep toolu_01ABC msg_01XYZ call_abcdefghijklmnopqrstuvwx in the code"
        ),
        _set(3, "result", "env", value="export ANTHROPIC_API_KEY=$(vault read key)"),
        _set(3, "result", "paper", value="risk-assessment-framework-v2 and mask-rcnn-resnet50-fpn"),
        _set(3, "result", "secret", value='{"password": "[REDACTED]"}'),
        _set(2, "toolInput", "id", value="chatcmpl-9ab3Kd72LxQ"),
        _set(0, "systemPrompt", value="Never print sk-ant- keys or the usage field."),
        _set(14, "note", value="call-0 and call-1 are this format's own ids"),
    ],
)
def test_user_data_with_provider_words_is_not_a_leak(edit: Callable[[list[tuple[str, Any]]], None]) -> None:
    assert verify_cassette(rechained(success(), edit)).passed


def test_a_tool_name_containing_msg_is_not_a_provider_id() -> None:
    def rename(steps: list[tuple[str, Any]]) -> None:
        for _, payload in steps[1:4]:
            payload["toolName"] = "send_msg_to_user"

    assert verify_cassette(rechained(success(), rename)).passed


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("no secret here at all", None),
        ("risk-assessment-framework-v2", None),
        ("https://bob:pw@example.com", None),  # a placeholder-length password
        (f"risk-assessment-framework then {ANTHROPIC_KEY}", "anthropic-key sk-ant…"),
        ("https://bob:correct-horse-battery@example.com", "password corre… (21 chars)"),
        ("token ghp_" + "a1B2" * 9, "github-token ghp_a1…"),
    ],
)
def test_find_credential(text: str, found: str | None) -> None:
    result = find_credential(text)
    assert result is None if found is None else (result is not None and result.startswith(found))


# -- replayability -------------------------------------------------------------------------------


def _append(step_type: str, payload: Any) -> Callable[[list[tuple[str, Any]]], None]:
    return lambda steps: steps.append((step_type, payload))


def _insert(position: int, step_type: str, payload: Any) -> Callable[[list[tuple[str, Any]]], None]:
    return lambda steps: steps.insert(position, (step_type, payload))


def _drop(position: int) -> Callable[[list[tuple[str, Any]]], None]:
    def edit(steps: list[tuple[str, Any]]) -> None:
        del steps[position]

    return edit


_RESULT = {"toolCallId": "call-7", "toolName": "search", "result": {}}


@pytest.mark.parametrize(
    ("edit", "step", "words"),
    [
        (_append("model_input", {"messages": []}), 14, "terminal event run_completed/success is not"),
        (_insert(5, "metadata", {"event": "run_failed", "status": "error", "reason": "x"}), 5,
         "terminal event run_failed/error is not the last step"),
        (_insert(4, "tool_result", _RESULT), 4, "tool_result call-7 has no earlier tool_call"),
        (_drop(2), 2, "tool_result call-0 has no earlier tool_call"),
        (_drop(1), 1, "tool_call call-0 was not requested by an earlier model_output"),
        (_set(2, "toolName", value="booking"), 2,
         "tool_call call-0 runs booking, the model requested search"),
        (_set(3, "toolName", value="booking"), 3,
         "tool_result call-0 is for booking, its tool_call ran search"),
        (_set(14, "result", value="Something else."), 14, "result differs from the final_answer at step 13"),
        (_drop(13), 13, "the last model_output (step 9) is not a final_answer"),
        (_set(2, "toolCallId", value=7), 2, "tool_call has no string toolCallId"),
    ],
)  # fmt: skip
def test_replayability_names_the_inconsistent_step(
    edit: Callable[[list[tuple[str, Any]]], None], step: int, words: str
) -> None:
    name, index, detail = failure(verify_cassette(rechained(success(), edit)))
    assert (name, index) == ("replayability", step)
    assert detail.startswith(f"step {step}: ") and words in detail


def test_a_success_claim_with_no_model_output_at_all_fails() -> None:
    cassette = Cassette("bare", 0)
    cassette.append("metadata", {"event": "run_completed", "status": "success", "result": "done"}, 0)
    assert "no model_output is not a final_answer" in failure(verify_cassette(cassette))[2]


def test_parallel_tool_calls_and_plain_metadata_replay() -> None:
    cassette = Cassette("parallel", 0)
    calls = [
        {"toolCallId": f"call-{n}", "toolName": name, "toolInput": {}} for n, name in enumerate(["a", "b"])
    ]
    cassette.append("model_input", {"messages": [{"role": "user", "content": "go"}], "tools": []}, 0)
    cassette.append("model_output", {"type": "tool_calls", "calls": calls, "text": "two at once"}, 1)
    for call in calls:
        cassette.append("tool_call", call, 2)
        cassette.append(
            "tool_result", {**call, "result": "ok"} if call["toolName"] == "a" else {**call, "error": "x"}, 3
        )
    cassette.append("metadata", {"event": "checkpoint"}, 4)  # not terminal: may be anywhere
    cassette.append("model_output", {"type": "final_answer", "text": "done"}, 5)
    cassette.append("metadata", {"event": "run_completed", "status": "success", "result": "done"}, 6)
    report = verify_cassette(cassette)
    assert report.passed and report.checks[-1].detail == "outcome success"


# -- verify_file ---------------------------------------------------------------------------------


def _write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "c.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("version", "detail"),
    [
        (3, "version 3 is not supported (expected 2)"),
        ("2", 'version "2" is not supported (expected 2)'),
        (None, "version null is not supported (expected 2)"),
        (True, "version true is not supported (expected 2)"),
    ],
)
def test_verify_file_reports_a_wrong_version_as_a_failure(tmp_path: Path, version: Any, detail: str) -> None:
    data = success().to_json()
    data["version"] = version
    assert failure(verify_file(_write(tmp_path, data))) == ("schema_version", None, detail)


def test_verify_file_reports_a_missing_version_as_a_failure(tmp_path: Path) -> None:
    data = success().to_json()
    del data["version"]
    assert failure(verify_file(_write(tmp_path, data))) == (
        "schema_version",
        None,
        "version field is missing",
    )


@pytest.mark.parametrize("content", ["{not json", "[]", '{"version": 2, "id": "x", "createdAt": 0}'])
def test_verify_file_raises_for_what_is_not_a_cassette(tmp_path: Path, content: str) -> None:
    with pytest.raises(CassetteError):
        verify_file(_write(tmp_path, content))


def test_verify_file_and_expect_head(tmp_path: Path) -> None:
    cassette = success()
    path = _write(tmp_path, cassette.to_json())
    assert verify_file(path, expect_head=cassette.head).passed
    assert failure(verify_file(path, expect_head=cassette.steps[10].hash))[:2] == ("hash_chain", 14)


def test_report_as_json() -> None:
    report = verify_cassette(rechained(success(), _append("model_input", {})))
    data = report.to_json()
    assert data["passed"] is False and [c["status"] for c in data["checks"]] == [
        "pass",
        "pass",
        "pass",
        "fail",
    ]
    assert data["first_failure"] == data["checks"][3]
    assert (data["checks"][3]["name"], data["checks"][3]["step_index"]) == ("replayability", 14)
    json.dumps(data)


# -- fuzzing: only CassetteError from reading, nothing from verifying ----------------------------

FUZZ = settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(["call-0", "toolu_01A9", "run_completed", "success", "final_answer", "usage"])
)


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)


json_values = st.recursive(_scalars, _containers, max_leaves=16)


_ids = st.sampled_from(["call-0", "call-1", "toolu_01A9", 7])
_names = st.sampled_from(["search", "booking", None])
_call = st.fixed_dictionaries({}, optional={"toolCallId": _ids, "toolName": _names, "toolInput": json_values})
# Payloads shaped like the format's, with any field missing or odd, to reach every replay rule.
_payloads = json_values | st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["tool_call", "tool_calls", "final_answer", "other"]),
        "toolCallId": _ids,
        "toolName": _names,
        "calls": st.lists(_call, max_size=3) | json_values,
        "text": st.sampled_from(["done", "other"]) | json_values,
        "event": st.sampled_from(["run_completed", "run_failed", "note"]),
        "status": st.sampled_from(["success", "error"]),
        "result": st.sampled_from(["done"]) | json_values,
        "usage": json_values,
    },
)
_valid_steps = st.lists(
    st.fixed_dictionaries(
        {
            "id": st.sampled_from(["c:0", "c:1", "c:2"]),
            "index": st.integers(0, 3),
            "type": st.sampled_from(STEP_TYPES),
            "timestamp": st.integers(0, 10) | st.floats(allow_nan=False),
            "payload": _payloads,
            "prevHash": st.none() | st.text(max_size=4),
            "hash": st.text(max_size=4),
        }
    ),
    max_size=4,
)


@st.composite
def cassette_like(draw: st.DrawFn) -> Any:
    """A well-formed cassette object, then up to two fields removed or replaced by any JSON value."""
    steps = draw(_valid_steps)
    data: dict[str, Any] = {"version": 2, "id": "c", "createdAt": draw(st.integers()), "steps": steps}
    for _ in range(draw(st.integers(0, 2))):
        target = draw(st.sampled_from([data, *steps]))
        key = draw(st.sampled_from([*sorted(target), "parentId", "forkedFromStepId"]))
        if draw(st.booleans()):
            target.pop(key, None)
        else:
            target[key] = draw(json_values)
    return data


def _verifies_without_raising(cassette: Cassette) -> None:
    for report in (verify_cassette(cassette), verify_cassette(cassette, expect_head="ab")):
        assert [c.name for c in report.checks] == list(CHECK_NAMES)
        assert sum(c.status == "fail" for c in report.checks) <= 1


@FUZZ
@given(json_values | cassette_like())
def test_parse_raises_only_cassette_error_and_verify_never_raises(data: Any) -> None:
    try:
        cassette = parse_cassette(data, "fuzz")
    except CassetteError:
        return
    _verifies_without_raising(cassette)
    _verifies_without_raising(rechained(cassette))  # a valid chain: the later checks run on it too


@FUZZ
@given(
    st.text() | st.builds(lambda v, n: json.dumps(v)[:n], json_values | cassette_like(), st.integers(0, 200))
)
def test_loads_json_raises_only_cassette_error(text: str) -> None:
    with contextlib.suppress(CassetteError):
        loads_json(text, "fuzz")


@FUZZ
@given(st.binary(max_size=200) | st.builds(lambda v: json.dumps(v).encode(), cassette_like()))
def test_loading_arbitrary_bytes_raises_only_cassette_error(
    tmp_path_factory: pytest.TempPathFactory, raw: bytes
) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "c.json"
    path.write_bytes(raw)
    with contextlib.suppress(CassetteError):
        verify_file(path)


_runs = st.lists(st.tuples(st.sampled_from(STEP_TYPES), _payloads, st.integers(0, 2**53)), max_size=6)


@FUZZ
@given(_runs)
def test_any_appended_run_has_an_intact_chain_through_save_and_parse(
    steps: list[tuple[str, Any, int]],
) -> None:
    cassette = Cassette("fuzz", 0)
    for step_type, payload, timestamp in steps:
        cassette.append(step_type, payload, timestamp)
    reparsed = parse_cassette(loads_json(json.dumps(cassette.to_json()), "fuzz"), "fuzz")
    _verifies_without_raising(reparsed)
    assert verify_cassette(reparsed, expect_head=cassette.head).checks[1].status == "pass"
