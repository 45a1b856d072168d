"""Behaviour contracts: small versioned JSON documents of assertions over a run.

A contract says what a good run *does* (which tools, in which order, with which key inputs, how
many model turns, how it ended: ``contract_checks``) and, where a person asks it, what its final
answer holds (a text, a pattern, a JSON value or shape: ``answer_checks``), so it keeps passing when
harmless wording changes and fails when the behaviour does. ``generate_contract`` derives one from a
recorded good run without any model call (``contract_from_failed`` the negation of a failed one);
``run_contract`` checks a cassette against it. The shape is a JSON Schema (draft 2020-12) shipped
beside this module.

An assertion marked ``"proposed": true`` is a guess ``eval generate`` made for a person to keep or
drop; it is checked like any other, and shown as proposed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

from otel_blackbox._cassette.answer_checks import ANSWER_CHECKS, answer_problem, propose_from_answer
from otel_blackbox._cassette.contract_checks import STRUCTURAL_CHECKS, Facts, clip, facts_of
from otel_blackbox._cassette.diff.json_paths import child_path
from otel_blackbox._cassette.io import loads_json, read_text
from otel_blackbox._cassette.json_pointer import pointer_to
from otel_blackbox._cassette.model import Cassette
from otel_blackbox._render.text import safe, safe_json
from otel_blackbox.errors import CassetteError

__all__ = [
    "CONTRACT_VERSION",
    "AssertionResult",
    "contract_schema",
    "dump_contract",
    "format_results",
    "generate_contract",
    "load_contract",
    "new_contract",
    "proposed_count",
    "run_contract",
    "validate_contract",
]

CONTRACT_VERSION = 1
TURN_MARGIN = 2  # generated max_model_turns: recorded turns plus this much slack
MAX_COPIED_STRING = 80  # longer tool-input strings are prose: not copied into a contract
_MESSAGE_LIMIT = 200

Contract = dict[str, Any]
_CHECKS = {**STRUCTURAL_CHECKS, **ANSWER_CHECKS}


@dataclass(frozen=True)
class AssertionResult:
    kind: str
    description: str
    passed: bool
    detail: str
    proposed: bool = False  # a guess of eval generate's, not yet kept by a person


# --- schema ---------------------------------------------------------------------------------------


@cache
def contract_schema() -> dict[str, Any]:
    text = (
        resources.files("otel_blackbox._cassette")
        .joinpath("contract.schema.json")
        .read_text(encoding="utf-8")
    )
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _validator() -> Draft202012Validator:
    return Draft202012Validator(contract_schema())


def _error_path(error: ValidationError) -> str:
    path = "$"
    for part in error.absolute_path:
        path = child_path(path, part)
    return path


def _error_message(error: ValidationError) -> str:
    where = error.absolute_path[-1] if error.absolute_path else None
    if where == "contractVersion" and error.validator == "const":
        return f"contractVersion {error.instance!r} is not supported (expected {CONTRACT_VERSION})"
    if where == "pointer" and error.validator == "pattern":
        return (
            f"{error.instance!r} is not a JSON Pointer (RFC 6901): empty, or '/'-separated tokens "
            "where '~' is followed by 0 or 1"
        )
    instance = error.instance if isinstance(error.instance, dict) else {}
    if error.validator == "not" and isinstance(error.validator_value, dict):
        (other,) = error.validator_value.get("required", ["?"])
        partner = "not_equals" if instance.get("kind") == "tool_input" else "exists"
        return f"{other!r} and {partner!r} together: give one of them"
    if error.validator == "required" and instance.get("kind") == "answer_json" and "pointer" in instance:
        return "give 'equals' (a JSON value) or 'exists' (true or false)"
    return error.message


def validate_contract(data: Any, source: str = "contract") -> Contract:
    """The contract itself if it matches the schema (and its patterns and schemas compile);
    otherwise CassetteError naming the first error's path, one line."""
    error = best_match(_validator().iter_errors(data))
    if error is not None:
        message = clip(_error_message(error), _MESSAGE_LIMIT)
        raise CassetteError(f"{source}: {_error_path(error)}: {safe(message)}")
    for n, assertion in enumerate(data["assertions"]):
        problem = answer_problem(assertion)
        if problem is not None:
            field, why = problem
            raise CassetteError(f"{source}: $.assertions[{n}].{field}: {safe(clip(why, _MESSAGE_LIMIT))}")
    contract: Contract = data
    return contract


def load_contract(path: str | Path) -> Contract:
    return validate_contract(loads_json(read_text(path), str(path)), str(path))


def dump_contract(contract: Contract) -> str:
    """The file form: sorted keys and a fixed indent, so generating twice gives identical bytes."""
    return safe_json(json.dumps(contract, indent=2, sort_keys=True, ensure_ascii=False)) + "\n"


def proposed_count(contract: Contract) -> int:
    return sum(1 for a in contract.get("assertions", []) if a.get("proposed") is True)


# --- checking -------------------------------------------------------------------------------------


def run_contract(contract: Any, cassette: Cassette) -> list[AssertionResult]:
    """One result per assertion, in the contract's order (CassetteError if the contract is invalid).
    A proposed assertion counts as any other: the mark only says who wrote it."""
    valid = validate_contract(contract)
    facts = facts_of(cassette)
    results = []
    for a in valid["assertions"]:
        judged = _CHECKS[a["kind"]](a, facts)
        results.append(AssertionResult(a["kind"], *judged, proposed=a.get("proposed") is True))
    return results


def format_results(results: list[AssertionResult]) -> list[str]:
    """``PASS …`` / ``FAIL …``, with ``(proposed)`` after it for an assertion still proposed."""
    return [
        f"{'PASS' if r.passed else 'FAIL'}{' (proposed)' if r.proposed else ''} "
        f"{safe(r.description)}: {safe(r.detail)}"
        for r in results
    ]


# --- generation -----------------------------------------------------------------------------------


def _is_copyable(value: Any) -> bool:
    if isinstance(value, str):
        return len(value) <= MAX_COPIED_STRING
    return isinstance(value, (bool, int, float))


def _input_assertions(facts: Facts) -> list[Contract]:
    """The short scalar inputs of each tool's first call that did not fail: a call whose result was an
    error is what went wrong, never what a good run must do again."""
    assertions: list[Contract] = []
    seen: set[str] = set()
    for call in facts.calls:
        if call.tool in seen or call.errored:
            continue
        seen.add(call.tool)
        inputs = call.input if isinstance(call.input, dict) else {}
        for key in sorted(inputs):
            if _is_copyable(inputs[key]):
                assertions.append(
                    {
                        "kind": "tool_input",
                        "tool": call.tool,
                        "occurrence": call.occurrence,
                        "pointer": pointer_to(key),
                        "equals": inputs[key],
                    }
                )
    return assertions


def generate_contract(cassette: Cassette, name: str | None = None) -> Contract:
    """A contract the cassette passes, derived deterministically from what the run did, with the
    answer's structure proposed (``answer_checks.propose_from_answer``) when it completed."""
    facts = facts_of(cassette)
    tools = [c.tool for c in facts.calls]
    counts = {tool: tools.count(tool) for tool in dict.fromkeys(tools)}  # first-call order
    assertions: list[Contract] = [{"kind": "status", "status": facts.status}]
    assertions += [{"kind": "tool_called", "tool": t, "at_least": n} for t, n in counts.items()]
    if tools:
        assertions.append({"kind": "tool_sequence", "tools": tools, "mode": "subsequence"})
    assertions += _input_assertions(facts)
    assertions.append({"kind": "max_model_turns", "at_most": facts.model_turns + TURN_MARGIN})
    if not facts.errors:
        assertions.append({"kind": "no_tool_errors"})
    assertions += propose_from_answer(facts.answer)
    return new_contract(cassette, name, assertions)


def new_contract(cassette: Cassette, name: str | None, assertions: list[Contract]) -> Contract:
    """The document around a generated contract's assertions: version, name, source."""
    return {
        "contractVersion": CONTRACT_VERSION,
        "name": name if name is not None else cassette.id,
        "source": {"cassetteId": cassette.id, "head": cassette.head},
        "assertions": assertions,
    }
