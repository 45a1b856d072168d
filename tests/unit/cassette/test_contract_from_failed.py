"""``eval generate --from-failed``'s contract: the negation of what failed, which fails the failed run
(and a rerun that fails the same way) and passes a run without that failure."""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers import vector
from test_contract_answers import answered

from otel_blackbox._cassette.contract_from_failed import (
    MAX_NEGATED_ANSWER,
    contract_from_failed,
)
from otel_blackbox._cassette.diff.outcome import answer_before_failure
from otel_blackbox._cassette.evals import dump_contract, format_results, run_contract, validate_contract
from otel_blackbox._cassette.model import Cassette
from otel_blackbox.errors import BadArgument

SENSOR = '{"error": "sensor offline"}'
GOOD_WEATHER = '{"city": "Berlin", "temp": 12.5}'
LOOKUP = ("get_weather", {"city": "Berlin"}, False)


def failing(contract: dict[str, Any], run: Cassette) -> list[str]:
    return [line for line in format_results(run_contract(contract, run)) if line.startswith("FAIL")]


def test_the_sensor_offline_incident_failed_on_its_answer() -> None:
    """The program raised after the model's answer: the contract says the run completes and never
    gives that answer again. The built-in rerun that gives the same answer and "succeeds" fails it."""
    incident = answered(SENSOR, status="error", calls=[LOOKUP])
    assert answer_before_failure(incident) == SENSOR
    contract = contract_from_failed(incident, name="weather")
    assert contract["name"] == "weather" and contract["source"]["cassetteId"] == "answered"
    assert contract["assertions"] == [
        {"kind": "status", "status": "success"},
        {"kind": "answer_not_contains", "text": SENSOR},
        {"kind": "answer_json", "pointer": "/error", "exists": False, "proposed": True},
    ]
    assert validate_contract(json.loads(dump_contract(contract))) == contract
    assert failing(contract, incident) == [
        "FAIL run ends with status success: actual: error",
        'FAIL answer does not contain "{\\"error\\": \\"sensor offline\\"}": no final answer (status error)',
        "FAIL (proposed) answer's JSON has no value at /error: no final answer (status error)",
    ]
    same_answer = answered(SENSOR, calls=[LOOKUP])
    assert failing(contract, same_answer) == [
        'FAIL answer does not contain "{\\"error\\": \\"sensor offline\\"}": found at character 0: '
        '"{\\"error\\": \\"sensor offline\\"}"',
        'FAIL (proposed) answer\'s JSON has no value at /error: present: "sensor offline"',
    ]
    assert failing(contract, answered(GOOD_WEATHER, calls=[LOOKUP])) == []
    assert failing(contract, answered("It is 12.5 degrees in Berlin.", calls=[LOOKUP])) == []


def test_the_refund_incident_never_requires_its_malformed_amount() -> None:
    """A tool rejected "12.OO": the contract asks for no tool error, proposes the tool answered and
    its rejected input not given again, and requires no input of the failed run."""
    bad_call = ("refund_order", {"order": "Alpha", "amount": "12.OO"}, True)
    incident = answered(
        "I could not refund the order.", calls=[("lookup", {"order": "Alpha"}, False), bad_call]
    )
    assert answer_before_failure(incident) is None  # it completed: the failure is the tool's, not the answer
    contract = contract_from_failed(incident)
    assert contract["assertions"] == [
        {"kind": "status", "status": "success"},
        {"kind": "no_tool_errors"},
        {"kind": "tool_called", "tool": "refund_order", "proposed": True},
        {
            "kind": "tool_input",
            "tool": "refund_order",
            "occurrence": 0,
            "pointer": "",
            "not_equals": {"order": "Alpha", "amount": "12.OO"},
            "proposed": True,
        },
    ]
    assert not any(a.get("equals") == "12.OO" for a in contract["assertions"])
    assert failing(contract, incident) == [
        'FAIL no tool returned an error: refund_order at step 6: "rejected"',
        'FAIL (proposed) 1st refund_order call has input ≠ {"amount": "12.OO", "order": "Alpha"}: '
        'actual: {"amount": "12.OO", "order": "Alpha"}',
    ]
    fixed = answered(
        "Refunded 12.00 on order Alpha.",
        calls=[
            ("lookup", {"order": "Alpha"}, False),
            ("refund_order", {"order": "Alpha", "amount": "12.00"}, False),
        ],
    )
    assert failing(contract, fixed) == []
    # Going round the failure (never calling the tool) fails the proposal only.
    avoided = answered("Refunded.", calls=[("lookup", {"order": "Alpha"}, False)])
    assert failing(contract, avoided) == [
        "FAIL (proposed) tool refund_order called at least 1 time: called 0 times"
    ]


def test_the_unknown_tool_vector_and_an_unfinished_run() -> None:
    errored = vector("error-unknown-tool")
    contract = contract_from_failed(errored)
    assert [a["kind"] for a in contract["assertions"]] == [
        "status",
        "no_tool_errors",
        "tool_called",
        "tool_input",
    ]
    assert len(failing(contract, errored)) == 3  # status, the tool error, the same input again
    unfinished = answered(None, status="incomplete", calls=[LOOKUP])
    contract = contract_from_failed(unfinished)
    assert contract["assertions"] == [{"kind": "status", "status": "success"}]
    assert failing(contract, unfinished) == ["FAIL run ends with status success: actual: incomplete"]
    assert failing(contract, answered(GOOD_WEATHER, calls=[LOOKUP])) == []


def test_a_long_failing_answer_is_negated_by_its_beginning() -> None:
    answer = "  " + "The sensor is offline; " * 20
    incident = answered(answer, status="error")
    (negated,) = [
        a for a in contract_from_failed(incident)["assertions"] if a["kind"] == "answer_not_contains"
    ]
    assert (
        negated["text"] == answer.strip()[:MAX_NEGATED_ANSWER] and len(negated["text"]) == MAX_NEGATED_ANSWER
    )
    assert failing(contract_from_failed(incident), answered(answer))[0].startswith(
        "FAIL answer does not contain"
    )


def test_a_run_that_did_not_fail_is_refused() -> None:
    with pytest.raises(BadArgument) as refused:
        contract_from_failed(answered(GOOD_WEATHER), source="good.json")
    assert str(refused.value) == "good.json: the run did not fail: a contract from it needs no --from-failed"
    # The answer before a failure that came on a tool is not an answer the run failed on.
    assert answer_before_failure(answered(None, status="error", calls=[LOOKUP])) is None
