"""Exact expectations (assert) and structural contracts (eval) over the published cassettes."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import vector
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from otel_blackbox._cassette.assertions import Expectation, check_expectations, format_expectations
from otel_blackbox._cassette.evals import (
    contract_schema,
    dump_contract,
    format_results,
    generate_contract,
    load_contract,
    run_contract,
    validate_contract,
)
from otel_blackbox._cassette.json_pointer import resolve_pointer
from otel_blackbox._cassette.model import Cassette
from otel_blackbox.errors import CassetteError

ANSWER = "Hotel booked for Alice on 2024-03-15 at 14:00."


def tool_run(calls: list[tuple[str, Any]], *, error_at: int | None = None) -> Cassette:
    """A synthetic successful run making these (tool, input) calls, one model turn each."""
    c = Cassette("synthetic", 0)
    c.append("model_input", {"messages": []}, 0)
    for n, (tool, tool_input) in enumerate(calls):
        call = {"toolCallId": f"c{n}", "toolName": tool, "toolInput": tool_input}
        c.append("model_output", {"type": "tool_call", **call}, n)
        c.append("tool_call", call, n)
        outcome = {"error": "boom"} if n == error_at else {"result": "ok"}
        c.append("tool_result", {"toolCallId": f"c{n}", "toolName": tool, **outcome}, n)
    c.append("model_output", {"type": "final_answer", "text": "done"}, 99)
    c.append("metadata", {"event": "run_completed", "status": "success", "result": "done"}, 99)
    return c


# --- assert ---------------------------------------------------------------------------------------


def test_all_expectations_pass_on_the_success_vector() -> None:
    checks = check_expectations(
        vector("success-tool-use"),
        status="success",
        final_answer=ANSWER,
        tools=["search", "calendar", "booking"],
    )
    assert [c.name for c in checks] == ["status", "final_answer", "tools"]
    assert all(c.passed for c in checks)
    assert checks[2].actual == ["search", "calendar", "booking"]


def test_failure_reason_passes_on_the_error_vector() -> None:
    checks = check_expectations(vector("error-unknown-tool"), status="error", failure_reason="unknown_tool")
    assert [(c.name, c.passed, c.actual) for c in checks] == [
        ("status", True, "error"),
        ("failure_reason", True, "unknown_tool"),
    ]


def test_every_expectation_is_evaluated_and_each_failure_reports_both_sides() -> None:
    checks = check_expectations(
        vector("success-tool-use"),
        status="error",
        final_answer="Hotel booked.",
        tools=["search", "booking"],
        failure_reason="unknown_tool",
    )
    assert checks == [
        Expectation("status", False, "error", "success"),
        Expectation("final_answer", False, "Hotel booked.", ANSWER),
        Expectation("failure_reason", False, "unknown_tool", None),
        Expectation("tools", False, ["search", "booking"], ["search", "calendar", "booking"]),
    ]
    lines = format_expectations(checks)
    assert lines[0] == "FAIL status: expected error, got success"
    assert lines[2] == "FAIL failure_reason: expected unknown_tool, got (none)"
    assert lines[3] == "FAIL tools: expected search, booking, got search, calendar, booking"


def test_no_expectations_no_checks_and_empty_tools_means_none_called() -> None:
    assert check_expectations(vector("success-tool-use")) == []
    [with_tools] = check_expectations(vector("success-tool-use"), tools=[])
    assert not with_tools.passed
    [without] = check_expectations(tool_run([]), tools=[])
    assert without.passed and format_expectations([without]) == ["PASS tools: (none)"]


def test_tool_order_matters() -> None:
    [check] = check_expectations(vector("success-tool-use"), tools=["calendar", "search", "booking"])
    assert not check.passed


# --- eval: generate ---------------------------------------------------------------------------------


def test_generate_is_deterministic_and_valid() -> None:
    first = dump_contract(generate_contract(vector("success-tool-use")))
    second = dump_contract(generate_contract(vector("success-tool-use")))
    assert first == second
    assert first == json.dumps(json.loads(first), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    Draft202012Validator.check_schema(contract_schema())
    assert list(Draft202012Validator(contract_schema()).iter_errors(json.loads(first))) == []


def test_generated_contract_from_the_success_vector() -> None:
    contract = generate_contract(vector("success-tool-use"), name="booking flow")
    assert contract["contractVersion"] == 1 and contract["name"] == "booking flow"
    assert contract["source"] == {
        "cassetteId": "fixture-success-tool-use",
        "head": "ad95eb1808b8dd4d680a57a64d1da3ae568654bad327ccc756aa525e9d3dbc2f",
    }
    inputs = [
        (a["tool"], a["pointer"], a["equals"]) for a in contract["assertions"] if a["kind"] == "tool_input"
    ]
    others = [a for a in contract["assertions"] if a["kind"] != "tool_input"]
    assert inputs == [
        ("search", "/query", "weekend hotels"),
        ("calendar", "/date", "2024-03-15"),
        ("booking", "/date", "2024-03-15"),
        ("booking", "/name", "Alice"),
        ("booking", "/time", "14:00"),
    ]
    assert others == [
        {"kind": "status", "status": "success"},
        {"kind": "tool_called", "tool": "search", "at_least": 1},
        {"kind": "tool_called", "tool": "calendar", "at_least": 1},
        {"kind": "tool_called", "tool": "booking", "at_least": 1},
        {"kind": "tool_sequence", "tools": ["search", "calendar", "booking"], "mode": "subsequence"},
        {"kind": "max_model_turns", "at_most": 6},  # 4 recorded turns + 2
        {"kind": "no_tool_errors"},
    ]
    assert generate_contract(vector("success-tool-use"))["name"] == "fixture-success-tool-use"


def test_generate_copies_short_scalars_only() -> None:
    prose = (
        "Please find me a quiet hotel near the station, ideally with breakfast included and late checkout."
    )
    assert len(prose) > 80
    run = tool_run(
        [
            (
                "search",
                {"query": prose, "limit": 5, "exact": False, "ratio": 0.5, "filters": {"a": 1}, "x": None},
            ),
            ("search", {"query": "second call is not copied", "limit": 9}),
            ("fetch", {"a/b": "slash", "m~n": "tilde"}),
            ("fetch", "not an object"),
        ]
    )
    contract = generate_contract(run)
    inputs = [
        (a["tool"], a["pointer"], a["equals"]) for a in contract["assertions"] if a["kind"] == "tool_input"
    ]
    assert inputs == [
        ("search", "/exact", False),
        ("search", "/limit", 5),
        ("search", "/ratio", 0.5),
        ("fetch", "/a~1b", "slash"),
        ("fetch", "/m~0n", "tilde"),
    ]
    assert {"kind": "tool_called", "tool": "search", "at_least": 2} in contract["assertions"]
    assert all(r.passed for r in run_contract(contract, run))


def test_generate_on_a_run_with_a_tool_error_leaves_out_no_tool_errors() -> None:
    contract = generate_contract(vector("error-unknown-tool"))
    kinds = [a["kind"] for a in contract["assertions"]]
    assert "no_tool_errors" not in kinds
    assert contract["assertions"][0] == {"kind": "status", "status": "error"}
    assert all(r.passed for r in run_contract(contract, vector("error-unknown-tool")))


# --- eval: run ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def contract() -> dict[str, Any]:
    return generate_contract(vector("success-tool-use"))


@pytest.mark.parametrize("name", ["success-tool-use", "fork-parent"])
def test_contract_passes_on_its_own_run_and_the_identical_fork_parent(
    contract: dict[str, Any], name: str
) -> None:
    results = run_contract(contract, vector(name))
    assert len(results) == len(contract["assertions"]) == 12
    assert [r for r in results if not r.passed] == []


def test_contract_fails_on_the_fork_child_where_the_tool_path_changed(contract: dict[str, Any]) -> None:
    results = run_contract(contract, vector("fork-child"))
    failed = {(r.kind, r.description, r.detail) for r in results if not r.passed}
    assert failed == {
        ("tool_called", "tool calendar called at least 1 time", "called 0 times"),
        ("tool_called", "tool booking called at least 1 time", "called 0 times"),
        (
            "tool_sequence",
            "tools called in this order (others allowed between): search → calendar → booking",
            "actual: search",
        ),
        ("tool_input", '1st calendar call has input /date = "2024-03-15"', "calendar called 0 times"),
        ("tool_input", '1st booking call has input /date = "2024-03-15"', "booking called 0 times"),
        ("tool_input", '1st booking call has input /name = "Alice"', "booking called 0 times"),
        ("tool_input", '1st booking call has input /time = "14:00"', "booking called 0 times"),
    }
    passed = {r.kind for r in results if r.passed}
    # The child still succeeded, searched with the same query, in fewer turns, without errors.
    assert passed == {"status", "tool_called", "tool_input", "max_model_turns", "no_tool_errors"}


def test_contract_fails_on_the_unknown_tool_error(contract: dict[str, Any]) -> None:
    results = {(r.kind, r.description): r for r in run_contract(contract, vector("error-unknown-tool"))}
    status = results["status", "run ends with status success"]
    assert not status.passed and status.detail == "actual: error"
    errors = results["no_tool_errors", "no tool returned an error"]
    assert not errors.passed and errors.detail.startswith('flights at step 3: "Unknown fixture tool')
    assert results["max_model_turns", "at most 6 model turns"].passed
    assert (
        results["tool_sequence", next(d for k, d in results if k == "tool_sequence")].detail
        == "actual: flights"
    )
    lines = format_results(list(results.values()))
    assert "FAIL run ends with status success: actual: error" in lines


def test_tool_sequence_modes() -> None:
    run = tool_run([("a", {}), ("b", {}), ("a", {}), ("c", {})])

    def passes(tools: list[str], mode: str) -> bool:
        doc = {"contractVersion": 1, "assertions": [{"kind": "tool_sequence", "tools": tools, "mode": mode}]}
        [result] = run_contract(doc, run)
        return result.passed

    assert passes(["a", "b", "a", "c"], "exact") and not passes(["a", "b", "c"], "exact")
    assert (
        passes(["a", "c"], "subsequence") and passes(["b", "a"], "subsequence") and passes([], "subsequence")
    )
    assert not passes(["c", "a"], "subsequence") and not passes(["a", "a", "a"], "subsequence")


def test_tool_input_follows_the_pointer_and_compares_json_values() -> None:
    run = tool_run(
        [("book", {"guests": [{"name": "Al"}], "nights": 2, "pet": True}), ("book", {"nights": 3})]
    )

    def check(pointer: str, equals: Any, occurrence: int = 0) -> tuple[bool, str]:
        assertion = {"kind": "tool_input", "tool": "book", "pointer": pointer, "equals": equals}
        [result] = run_contract(
            {"contractVersion": 1, "assertions": [assertion | {"occurrence": occurrence}]}, run
        )
        return result.passed, result.detail

    assert check("/guests/0/name", "Al") == (True, 'actual: "Al"')
    assert check("/nights", 2.0) == (True, "actual: 2")  # the same JSON number
    assert check("/pet", 1) == (False, "actual: true")  # true is not 1
    assert check("/nights", 3, occurrence=1) == (True, "actual: 3")
    assert check("/nights", 3, occurrence=2) == (False, "book called 2 times")
    assert check("/guests/1/name", "Al") == (False, "no /guests/1/name in the input")
    assert check("/guests", "Al") == (False, 'actual: [{"name": "Al"}]')
    # A value with no canonical JSON form (found by fuzzing: it ended in an internal error) is
    # equal to nothing, itself included, and is reported like any other.
    huge = 10**400
    odd = tool_run([("book", {"nights": 0})])
    for step in odd.steps:  # as a file can hold it (appending would refuse to hash it)
        if step.type in ("model_output", "tool_call") and "toolInput" in step.payload:
            step.payload["toolInput"]["nights"] = huge
    for equals in (huge, 2):
        assertion = {"kind": "tool_input", "tool": "book", "pointer": "/nights", "equals": equals}
        [result] = run_contract({"contractVersion": 1, "assertions": [assertion]}, odd)
        assert not result.passed and result.detail.startswith("actual: 1000")


def test_max_model_turns_counts_model_outputs() -> None:
    doc = {"contractVersion": 1, "assertions": [{"kind": "max_model_turns", "at_most": 3}]}
    assert run_contract(doc, tool_run([("a", {}), ("b", {})]))[0].passed  # 2 tool turns + the answer
    [over] = run_contract(doc, tool_run([("a", {}), ("b", {}), ("c", {})]))
    assert not over.passed and over.detail == "4 model turns"


def test_no_tool_errors_names_the_failing_tool() -> None:
    doc = {"contractVersion": 1, "assertions": [{"kind": "no_tool_errors"}]}
    [result] = run_contract(doc, tool_run([("a", {}), ("b", {})], error_at=1))
    assert not result.passed and result.detail == 'b at step 6: "boom"'  # steps: input, then 3 per call


@pytest.mark.parametrize(
    ("pointer", "found", "value"),
    [  # RFC 6901, section 5
        ("", True, None),
        ("/foo", True, ["bar", "baz"]),
        ("/foo/0", True, "bar"),
        ("/", True, 0),
        ("/a~1b", True, 1),
        ("/m~0n", True, 8),
        ("/ ", True, 7),
        ("/foo/2", False, None),
        ("/foo/01", False, None),
        ("/foo/-", False, None),
        ("/nope", False, None),
    ],
)
def test_resolve_pointer(pointer: str, found: bool, value: Any) -> None:
    document = {"foo": ["bar", "baz"], "": 0, "a/b": 1, "m~n": 8, " ": 7}
    got = resolve_pointer(document, pointer)
    assert got == (found, document if pointer == "" else value)


# --- eval: contract files -----------------------------------------------------------------------------


def _broken(change: Any) -> dict[str, Any]:
    doc = copy.deepcopy(generate_contract(vector("success-tool-use")))
    change(doc)
    return doc


@pytest.mark.parametrize(
    ("change", "where", "says"),
    [
        (lambda d: d.update(contractVersion=2), "$.contractVersion", "contractVersion 2 is not supported"),
        (lambda d: d.pop("contractVersion"), "$", "'contractVersion' is a required property"),
        (
            lambda d: d["assertions"][1].update(kind="tool_caled"),
            "$.assertions[1].kind",
            "'tool_caled' is not one of",
        ),
        (lambda d: d["assertions"][1].pop("tool"), "$.assertions[1]", "'tool' is a required property"),
        (lambda d: d["assertions"][5].pop("equals"), "$.assertions[5]", "'equals' is a required property"),
        (
            lambda d: d["assertions"][5].update(pointer="query"),
            "$.assertions[5].pointer",
            "not a JSON Pointer",
        ),
        (
            lambda d: d["assertions"][5].update(pointer="/a~2"),
            "$.assertions[5].pointer",
            "not a JSON Pointer",
        ),
        (lambda d: d["assertions"][5].update(equals=[1]), "$.assertions[5].equals", "is not of type"),
        (lambda d: d["assertions"][4].update(mode="fuzzy"), "$.assertions[4].mode", "'fuzzy' is not one of"),
        (
            lambda d: d["assertions"][1].update(at_least=0),
            "$.assertions[1].at_least",
            "less than the minimum",
        ),
        (
            lambda d: d["assertions"][10].update(at_most="6"),
            "$.assertions[10].at_most",
            "is not of type 'integer'",
        ),
        (lambda d: d["assertions"][0].update(status="ok"), "$.assertions[0].status", "'ok' is not one of"),
        (lambda d: d["assertions"][11].update(extra=1), "$.assertions[11]", "'extra' was unexpected"),
        (lambda d: d["assertions"].append({}), "$.assertions[12]", "'kind' is a required property"),
    ],
)
def test_malformed_contracts_name_the_path(change: Any, where: str, says: str) -> None:
    with pytest.raises(CassetteError) as raised:
        validate_contract(_broken(change), "c.json")
    message = str(raised.value)
    assert message.startswith(f"c.json: {where}: ") and says in message
    assert "\n" not in message


def test_run_contract_refuses_an_invalid_contract() -> None:
    with pytest.raises(CassetteError, match=r"\$: 'assertions' is a required property"):
        run_contract({"contractVersion": 1}, vector("success-tool-use"))


def test_load_contract_round_trips_and_reports_file_problems(tmp_path: Path) -> None:
    path = tmp_path / "contract.json"
    contract = generate_contract(vector("success-tool-use"))
    path.write_text(dump_contract(contract), encoding="utf-8")
    assert load_contract(path) == contract
    path.write_text('{"contractVersion": 1, "assertions": [', encoding="utf-8")
    with pytest.raises(CassetteError, match="not valid JSON"):
        load_contract(path)
    path.write_text('{"contractVersion": 7, "assertions": []}', encoding="utf-8")
    with pytest.raises(CassetteError, match=r"contract\.json: \$\.contractVersion: contractVersion 7"):
        load_contract(path)
    with pytest.raises(CassetteError, match="no such file"):
        load_contract(tmp_path / "missing.json")


# --- property: a generated contract always holds on its own run ----------------------------------------

scalars = st.one_of(
    st.text(max_size=100),
    st.integers(-(2**60), 2**60),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False),
)
calls = st.lists(
    st.tuples(
        st.sampled_from(["search", "book", "a/b", "~x", ""]),
        st.dictionaries(st.text(max_size=8), st.one_of(scalars, st.lists(scalars, max_size=2)), max_size=4),
    ),
    max_size=6,
)


@settings(max_examples=60, deadline=None)
@given(calls, st.one_of(st.none(), st.integers(0, 5)))
def test_generated_contract_is_valid_and_holds_on_its_source(
    made: list[tuple[str, Any]], error_at: int | None
) -> None:
    run = tool_run(made, error_at=error_at)
    contract = generate_contract(run)
    assert validate_contract(json.loads(dump_contract(contract))) == contract
    assert [r.description for r in run_contract(contract, run) if not r.passed] == []
    assert dump_contract(generate_contract(run)) == dump_contract(contract)
