"""Contract assertions on the final answer: each kind hand-written and generated, on passing and
failing runs; a run with no answer, an answer that is not JSON; patterns and schemas refused when
the contract is read; proposals marked, and a failed call's input never copied."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from otel_blackbox._cassette.evals import (
    contract_schema,
    dump_contract,
    format_results,
    generate_contract,
    load_contract,
    proposed_count,
    run_contract,
    validate_contract,
)
from otel_blackbox._cassette.model import Cassette
from otel_blackbox.errors import CassetteError

WEATHER = '{"city": "Berlin", "temp": 12.5, "sources": ["dwd"], "alert": null}'


def answered(
    answer: str | None, *, status: str = "success", calls: Sequence[tuple[str, Any, bool]] = ()
) -> Cassette:
    """A synthetic run: each (tool, input, errored) call in a model turn of its own, then the final
    answer; ``status`` error ends it ``run_failed`` after the answer (the program raised on it)."""
    c = Cassette("answered", 0)
    c.append("model_input", {"messages": []}, 0)
    for n, (tool, tool_input, errored) in enumerate(calls):
        call = {"toolCallId": f"c{n}", "toolName": tool, "toolInput": tool_input}
        c.append("model_output", {"type": "tool_call", **call}, n)
        c.append("tool_call", call, n)
        outcome = {"error": "rejected"} if errored else {"result": "ok"}
        c.append("tool_result", {"toolCallId": f"c{n}", "toolName": tool, **outcome}, n)
    if answer is not None:
        c.append("model_output", {"type": "final_answer", "text": answer}, 90)
    if status == "success":
        c.append("metadata", {"event": "run_completed", "status": "success", "result": answer}, 99)
    elif status == "error":
        c.append("metadata", {"event": "run_failed", "status": "error", "reason": "RuntimeError"}, 99)
    return c


def contract(*assertions: dict[str, Any]) -> dict[str, Any]:
    return {"contractVersion": 1, "name": "answers", "assertions": list(assertions)}


def judge(assertion: dict[str, Any], answer: str | None, **run: Any) -> tuple[bool, str]:
    (result,) = run_contract(contract(assertion), answered(answer, **run))
    assert result.kind == assertion["kind"]
    return result.passed, result.detail


# --- each kind, hand-written -------------------------------------------------------------------------

CASES: list[tuple[dict[str, Any], str, bool, str]] = [
    ({"kind": "answer_contains", "text": "Berlin"}, WEATHER, True, "found at character 10"),
    ({"kind": "answer_contains", "text": "berlin"}, WEATHER, False, 'not in the answer: "{\\"city'),
    ({"kind": "answer_contains", "text": "berlin", "ignore_case": True}, WEATHER, True, "found at"),
    ({"kind": "answer_not_contains", "text": "sensor offline"}, WEATHER, True, "not in the answer"),
    (
        {"kind": "answer_not_contains", "text": "OFFLINE", "ignore_case": True},
        '{"error": "sensor offline"}',
        False,
        'found at character 18: "offline\\"}"',
    ),
    ({"kind": "answer_matches", "pattern": r'"temp": \d+(\.\d+)?'}, WEATHER, True, 'matched "\\"temp'),
    ({"kind": "answer_matches", "pattern": r"(?i)^BERLIN"}, "berlin is 12 degrees", True, "at character 0"),
    ({"kind": "answer_matches", "pattern": r"\d{3}"}, WEATHER, False, "no match in the answer: "),
    ({"kind": "answer_json", "pointer": "/city", "equals": "Berlin"}, WEATHER, True, 'actual: "Berlin"'),
    ({"kind": "answer_json", "pointer": "/temp", "equals": 12.5}, WEATHER, True, "actual: 12.5"),
    ({"kind": "answer_json", "pointer": "/temp", "equals": "12.5"}, WEATHER, False, "actual: 12.5"),
    ({"kind": "answer_json", "pointer": "/sources", "equals": ["dwd"]}, WEATHER, True, 'actual: ["dwd"]'),
    ({"kind": "answer_json", "pointer": "/sources/0", "equals": "dwd"}, WEATHER, True, "actual"),
    ({"kind": "answer_json", "pointer": "/n", "equals": 1}, '{"n": 1.0}', True, "actual: 1.0"),  # canonical
    ({"kind": "answer_json", "pointer": "/n", "equals": 1}, '{"n": true}', False, "actual: true"),
    (
        {"kind": "answer_json", "pointer": "/wind", "equals": 3},
        WEATHER,
        False,
        "no /wind in the answer's JSON",
    ),
    ({"kind": "answer_json", "pointer": "/alert", "exists": True}, WEATHER, True, "present: null"),
    ({"kind": "answer_json", "pointer": "/wind", "exists": True}, WEATHER, False, "no /wind"),
    ({"kind": "answer_json", "pointer": "/error", "exists": False}, WEATHER, True, "no /error"),
    ({"kind": "answer_json", "pointer": "/error", "exists": False}, '{"error": "x"}', False, 'present: "x"'),
    ({"kind": "answer_json", "pointer": "", "equals": {"a": [1]}}, '{"a": [1.0]}', True, "actual"),
    (
        {"kind": "answer_schema", "schema": {"type": "object", "required": ["city", "temp"]}},
        WEATHER,
        True,
        "valid",
    ),
    (
        {"kind": "answer_schema", "schema": {"properties": {"temp": {"type": "string"}}}},
        WEATHER,
        False,
        "$.temp: 12.5 is not of type 'string'",
    ),
    (
        {"kind": "answer_schema", "schema": {"type": "object", "required": ["wind"]}},
        WEATHER,
        False,
        "$: 'wind' is a required property",
    ),
]


@pytest.mark.parametrize(("assertion", "answer", "passed", "detail"), CASES)
def test_each_answer_kind_hand_written(
    assertion: dict[str, Any], answer: str, passed: bool, detail: str
) -> None:
    validate_contract(contract(assertion))
    got, said = judge(assertion, answer)
    assert got is passed, said
    assert detail in said


KINDS = [
    {"kind": "answer_contains", "text": "x"},
    {"kind": "answer_not_contains", "text": "x"},
    {"kind": "answer_matches", "pattern": "x"},
    {"kind": "answer_json", "pointer": "/x", "equals": 1},
    {"kind": "answer_json", "pointer": "/x", "exists": False},
    {"kind": "answer_schema", "schema": True},
]


@pytest.mark.parametrize("assertion", KINDS, ids=lambda a: a["kind"])
@pytest.mark.parametrize("status", ["error", "incomplete"])
def test_a_run_with_no_final_answer_fails_every_answer_kind(assertion: dict[str, Any], status: str) -> None:
    # The model answered, then the program raised on the answer (or the run never ended): no answer.
    assert judge(assertion, "x is not here", status=status) == (False, f"no final answer (status {status})")


def test_an_answer_that_is_not_json_fails_the_json_kinds_saying_why() -> None:
    text = "It is 12.5 degrees in Berlin."
    for assertion in (
        {"kind": "answer_json", "pointer": "/city", "equals": "Berlin"},
        {"kind": "answer_json", "pointer": "/city", "exists": True},
        {"kind": "answer_json", "pointer": "", "exists": True},
        {"kind": "answer_schema", "schema": {"type": "object"}},
    ):
        passed, detail = judge(assertion, text)
        assert not passed
        assert detail == "the answer is not JSON: Expecting value (line 1, column 1)"
    # No value at any pointer of an answer that is not JSON: what exists false asks.
    assert judge({"kind": "answer_json", "pointer": "/error", "exists": False}, text)[0]
    assert judge({"kind": "answer_json", "pointer": "", "exists": False}, text)[0]
    assert judge({"kind": "answer_schema", "schema": True}, "NaN") == (
        False,
        "the answer is not JSON: NaN is not a JSON value",
    )


def test_a_schema_ref_to_elsewhere_is_not_fetched() -> None:
    assertion = {"kind": "answer_schema", "schema": {"$ref": "https://example.invalid/weather.json"}}
    passed, detail = judge(assertion, WEATHER)
    assert not passed and detail.startswith("the schema cannot be applied: ")


def test_descriptions_and_the_proposed_mark_in_the_lines() -> None:
    run = answered(WEATHER)
    results = run_contract(
        contract(
            {"kind": "answer_contains", "text": "Berlin", "ignore_case": True},
            {"kind": "answer_not_contains", "text": "offline"},
            {"kind": "answer_matches", "pattern": "temp"},
            {"kind": "answer_json", "pointer": "/city", "equals": "Berlin", "proposed": True},
            {"kind": "answer_json", "pointer": "/wind", "exists": False},
            {"kind": "answer_schema", "schema": {"type": "object", "required": ["city"]}, "proposed": False},
        ),
        run,
    )
    assert [r.proposed for r in results] == [False, False, False, True, False, False]
    assert format_results(results) == [
        'PASS answer contains "Berlin" (any case): found at character 10',
        'PASS answer does not contain "offline": not in the answer',
        'PASS answer matches /temp/: matched "temp" at character 20',
        'PASS (proposed) answer\'s JSON at /city = "Berlin": actual: "Berlin"',
        "PASS answer's JSON has no value at /wind: no /wind in the answer's JSON",
        "PASS answer's JSON matches its schema (type object; required: city): valid",
    ]


# --- refused when the contract is read -------------------------------------------------------------


@pytest.mark.parametrize(
    ("assertion", "where", "says"),
    [
        (
            {"kind": "answer_matches", "pattern": "(unclosed"},
            "$.assertions[0].pattern",
            "not a regular expression",
        ),
        (
            {"kind": "answer_matches", "pattern": "a{2,1}"},
            "$.assertions[0].pattern",
            "not a regular expression",
        ),
        (
            {"kind": "answer_schema", "schema": {"type": "texte"}},
            "$.assertions[0].schema",
            "not a JSON Schema",
        ),
        (
            {"kind": "answer_schema", "schema": {"required": "city"}},
            "$.assertions[0].schema",
            "not a JSON Schema",
        ),
        ({"kind": "answer_schema", "schema": []}, "$.assertions[0].schema", "is not of type"),
        ({"kind": "answer_contains", "text": ""}, "$.assertions[0].text", "should be non-empty"),
        (
            {"kind": "answer_contains", "text": "a", "ignore_case": "yes"},
            "$.assertions[0].ignore_case",
            "type",
        ),
        ({"kind": "answer_matches", "pattern": "a", "ignore_case": True}, "$.assertions[0]", "unexpected"),
        (
            {"kind": "answer_json", "pointer": "/a"},
            "$.assertions[0]",
            "give 'equals' (a JSON value) or 'exists'",
        ),
        (
            {"kind": "answer_json", "pointer": "/a", "equals": 1, "exists": True},
            "$.assertions[0]",
            "'equals' and 'exists' together: give one of them",
        ),
        (
            {"kind": "answer_json", "pointer": "a", "exists": True},
            "$.assertions[0].pointer",
            "not a JSON Pointer",
        ),
        (
            {"kind": "tool_input", "tool": "t", "pointer": "/a", "equals": 1, "not_equals": 2},
            "$.assertions[0]",
            "'equals' and 'not_equals' together: give one of them",
        ),
        ({"kind": "answer_contains", "text": "a", "proposed": "yes"}, "$.assertions[0].proposed", "type"),
    ],
)
def test_a_bad_answer_assertion_is_refused_in_one_line(
    assertion: dict[str, Any], where: str, says: str
) -> None:
    with pytest.raises(CassetteError) as refused:
        validate_contract(contract(assertion), "c.json")
    message = str(refused.value)
    assert message.startswith(f"c.json: {where}: ") and says in message, message
    assert "\n" not in message


def test_an_invalid_pattern_in_a_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "weather.contract.json"
    path.write_text(json.dumps(contract({"kind": "answer_matches", "pattern": "[z-a]"})), encoding="utf-8")
    with pytest.raises(CassetteError) as refused:
        load_contract(path)
    assert str(refused.value).startswith(f"{path}: $.assertions[0].pattern: not a regular expression: bad")
    with pytest.raises(CassetteError):
        run_contract(contract({"kind": "answer_schema", "schema": {"minLength": -1}}), answered(WEATHER))


def test_the_schema_documents_every_kind_and_the_mark() -> None:
    schema = contract_schema()
    Draft202012Validator.check_schema(schema)
    kinds = schema["$defs"]["assertion"]["properties"]["kind"]["enum"]
    assert kinds[6:] == [
        "answer_contains",
        "answer_not_contains",
        "answer_matches",
        "answer_json",
        "answer_schema",
    ]
    for kind in kinds:
        assert schema["$defs"][kind]["description"]
        assert schema["$defs"][kind]["properties"]["proposed"] == {"$ref": "#/$defs/proposed"}
    assert schema["properties"]["contractVersion"] == {"const": 1}  # additive kinds: still version 1


# --- generated ----------------------------------------------------------------------------------------


def test_generate_proposes_the_keys_and_types_of_a_json_answer() -> None:
    good = answered(WEATHER, calls=[("weather", {"city": "Berlin"}, False)])
    made = generate_contract(good)
    answers = [a for a in made["assertions"] if a["kind"].startswith("answer_")]
    assert answers == [
        {"kind": "answer_json", "pointer": "/city", "exists": True, "proposed": True},
        {"kind": "answer_json", "pointer": "/temp", "exists": True, "proposed": True},
        {"kind": "answer_json", "pointer": "/sources", "exists": True, "proposed": True},
        {"kind": "answer_json", "pointer": "/alert", "exists": True, "proposed": True},
        {
            "kind": "answer_schema",
            "schema": {
                "type": "object",
                "required": ["city", "temp", "sources", "alert"],
                "properties": {
                    "city": {"type": "string"},
                    "temp": {"type": "number"},
                    "sources": {"type": "array"},
                    "alert": {"type": "null"},
                },
            },
            "proposed": True,
        },
    ]
    # Only the answer's guesses are proposals: what the run did is not.
    assert proposed_count(made) == 5
    assert all("proposed" not in a for a in made["assertions"] if not a["kind"].startswith("answer_"))
    assert validate_contract(json.loads(dump_contract(made))) == made
    assert all(r.passed for r in run_contract(made, good))
    # Another answer of the same shape passes; a key gone, or of another type, fails.
    assert all(
        r.passed
        for r in run_contract(
            made, answered(WEATHER.replace("Berlin", "Paris"), calls=[("weather", {"city": "Berlin"}, False)])
        )
    )
    changed = answered(
        '{"city": "Berlin", "temp": "warm", "sources": []}', calls=[("weather", {"city": "Berlin"}, False)]
    )
    failed = {r.description: r.detail for r in run_contract(made, changed) if not r.passed}
    assert failed == {
        "answer's JSON has a value at /alert": "no /alert in the answer's JSON",
        "answer's JSON matches its schema (type object; required: city, temp, sources, alert)": (
            "$: 'alert' is a required property"
        ),
    }


def test_generate_proposes_nothing_from_text_and_the_type_of_an_array() -> None:
    assert proposed_count(generate_contract(answered("It is 12.5 degrees in Berlin."))) == 0
    assert proposed_count(generate_contract(answered("42"))) == 0  # a JSON scalar: its wording
    made = generate_contract(answered('[{"id": 1}]'))
    assert made["assertions"][-1] == {"kind": "answer_schema", "schema": {"type": "array"}, "proposed": True}
    assert proposed_count(generate_contract(answered('{"a~b/c": 1}'))) == 2
    assert generate_contract(answered('{"a~b/c": 1}'))["assertions"][-2]["pointer"] == "/a~0b~1c"
    # A run that failed has no answer to propose from.
    assert proposed_count(generate_contract(answered(WEATHER, status="error"))) == 0


def test_generate_never_copies_the_input_of_a_call_that_failed() -> None:
    """The refund incident's "12.OO": the call the tool rejected is not what a good run must repeat;
    the first call that went through stands for the tool (occurrence 1 here)."""
    run = answered(
        "Refunded 12.00 on order Alpha.",
        calls=[
            ("refund_order", {"order": "Alpha", "amount": "12.OO"}, True),
            ("refund_order", {"order": "Alpha", "amount": "12.00"}, False),
            ("lookup", {"order": "Alpha"}, True),
        ],
    )
    inputs = [a for a in generate_contract(run)["assertions"] if a["kind"] == "tool_input"]
    assert inputs == [
        {
            "kind": "tool_input",
            "tool": "refund_order",
            "occurrence": 1,
            "pointer": "/amount",
            "equals": "12.00",
        },
        {
            "kind": "tool_input",
            "tool": "refund_order",
            "occurrence": 1,
            "pointer": "/order",
            "equals": "Alpha",
        },
    ]
    assert "12.OO" not in dump_contract(generate_contract(run))


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.text(max_size=8)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None)
@given(st.one_of(json_values, st.text(max_size=40)))
def test_a_generated_contract_holds_on_its_own_answer(value: Any) -> None:
    answer = value if isinstance(value, str) else json.dumps(value)
    run = answered(answer)
    made = generate_contract(run)
    assert validate_contract(json.loads(dump_contract(made))) == made
    assert [r.description for r in run_contract(made, run) if not r.passed] == []
