"""Behaviour contracts: small versioned JSON documents of structural assertions over a run.

A contract says what a good run *does* (which tools, in which order, with which key inputs, how
many model turns, how it ended) rather than what it *says*, so it keeps passing when the wording
of an answer changes and fails when the behaviour does. ``generate_contract`` derives one from a
recorded good run without any model call; ``run_contract`` checks a cassette against it. The
shape is a JSON Schema (draft 2020-12) shipped beside this module.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

from otel_blackbox._cassette.canonical import same_canonical
from otel_blackbox._cassette.diff.json_paths import child_path
from otel_blackbox._cassette.io import loads_json, read_text
from otel_blackbox._cassette.model import Cassette, terminal_outcome
from otel_blackbox._render.text import safe, safe_json
from otel_blackbox._render.words import counted
from otel_blackbox.errors import CassetteError

__all__ = [
    "CONTRACT_VERSION",
    "AssertionResult",
    "contract_schema",
    "dump_contract",
    "format_results",
    "generate_contract",
    "load_contract",
    "resolve_pointer",
    "run_contract",
    "validate_contract",
]

CONTRACT_VERSION = 1
TURN_MARGIN = 2  # generated max_model_turns: recorded turns plus this much slack
MAX_COPIED_STRING = 80  # longer tool-input strings are prose: not copied into a contract
_MESSAGE_LIMIT = 200

Contract = dict[str, Any]


@dataclass(frozen=True)
class AssertionResult:
    kind: str
    description: str
    passed: bool
    detail: str


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
    return error.message


def validate_contract(data: Any, source: str = "contract") -> Contract:
    """The contract itself if it matches the schema; otherwise CassetteError naming the first error's path."""
    error = best_match(_validator().iter_errors(data))
    if error is not None:
        message = _clip(_error_message(error), _MESSAGE_LIMIT)
        raise CassetteError(f"{source}: {_error_path(error)}: {safe(message)}")
    contract: Contract = data
    return contract


def load_contract(path: str | Path) -> Contract:
    return validate_contract(loads_json(read_text(path), str(path)), str(path))


def dump_contract(contract: Contract) -> str:
    """The file form: sorted keys and a fixed indent, so generating twice gives identical bytes."""
    return safe_json(json.dumps(contract, indent=2, sort_keys=True, ensure_ascii=False)) + "\n"


# --- facts read from a cassette -------------------------------------------------------------------


@dataclass(frozen=True)
class _Call:
    tool: str
    input: Any


@dataclass(frozen=True)
class _Facts:
    calls: list[_Call]
    errors: list[str]  # "<tool> at step N: <error>"
    model_turns: int
    status: str


def _facts(cassette: Cassette) -> _Facts:
    calls, errors = [], []
    for step in cassette.steps:
        payload = step.payload if isinstance(step.payload, dict) else {}
        tool = payload.get("toolName")
        tool = tool if isinstance(tool, str) else "unknown"
        if step.type == "tool_call":
            calls.append(_Call(tool, payload.get("toolInput")))
        elif step.type == "tool_result" and payload.get("error") is not None:
            errors.append(f"{tool} at step {step.index}: {_short(payload['error'])}")
    turns = sum(1 for _ in cassette.steps_of("model_output"))
    return _Facts(calls, errors, turns, terminal_outcome(cassette).status)


# --- checks ---------------------------------------------------------------------------------------


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


def _short(value: Any) -> str:
    return _clip(json.dumps(value, ensure_ascii=False, sort_keys=True), 80)


def _times(n: int) -> str:
    return counted(n, "time")


def _path(tools: list[str]) -> str:
    return " → ".join(tools) if tools else "(none)"


def _check_tool_called(a: Contract, facts: _Facts) -> AssertionResult:
    at_least = int(a.get("at_least", 1))
    count = sum(1 for c in facts.calls if c.tool == a["tool"])
    description = f"tool {a['tool']} called at least {_times(at_least)}"
    return AssertionResult("tool_called", description, count >= at_least, f"called {_times(count)}")


def _is_subsequence(wanted: list[str], actual: list[str]) -> bool:
    remaining = iter(actual)
    return all(any(tool == got for got in remaining) for tool in wanted)


def _check_tool_sequence(a: Contract, facts: _Facts) -> AssertionResult:
    wanted: list[str] = a["tools"]
    actual = [c.tool for c in facts.calls]
    if a.get("mode", "exact") == "subsequence":
        description = f"tools called in this order (others allowed between): {_path(wanted)}"
        passed = _is_subsequence(wanted, actual)
    else:
        description = f"tool sequence is exactly: {_path(wanted)}"
        passed = wanted == actual
    return AssertionResult("tool_sequence", description, passed, f"actual: {_path(actual)}")


def resolve_pointer(document: Any, pointer: str) -> tuple[bool, Any]:
    """RFC 6901: (True, value) where the pointer leads, (False, None) where it leads nowhere."""
    if pointer == "":
        return True, document
    current = document
    for raw in pointer[1:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(current, dict) and token in current:
            current = current[token]
        elif isinstance(current, list) and token.isdigit() and (token == "0" or token[0] != "0"):
            if int(token) >= len(current):
                return False, None
            current = current[int(token)]
        else:
            return False, None
    return True, current


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _check_tool_input(a: Contract, facts: _Facts) -> AssertionResult:
    occurrence = int(a.get("occurrence", 0))
    expected = a["equals"]
    description = f"{_ordinal(occurrence + 1)} {a['tool']} call has input {a['pointer']} = {_short(expected)}"
    calls = [c for c in facts.calls if c.tool == a["tool"]]
    if occurrence >= len(calls):
        return AssertionResult("tool_input", description, False, f"{a['tool']} called {_times(len(calls))}")
    found, value = resolve_pointer(calls[occurrence].input, a["pointer"])
    if not found:
        return AssertionResult("tool_input", description, False, f"no {a['pointer']} in the input")
    # Canonical forms: true is not 1, but 1 and 1.0 are the same JSON number.
    passed = same_canonical(value, expected)
    return AssertionResult("tool_input", description, passed, f"actual: {_short(value)}")


def _check_max_model_turns(a: Contract, facts: _Facts) -> AssertionResult:
    at_most = int(a["at_most"])
    description = f"at most {at_most} model turns"
    passed = facts.model_turns <= at_most
    return AssertionResult("max_model_turns", description, passed, counted(facts.model_turns, "model turn"))


def _check_no_tool_errors(_a: Contract, facts: _Facts) -> AssertionResult:
    detail = (
        "; ".join(facts.errors) if facts.errors else f"{counted(len(facts.calls), 'tool call')}, no errors"
    )
    return AssertionResult("no_tool_errors", "no tool returned an error", not facts.errors, detail)


def _check_status(a: Contract, facts: _Facts) -> AssertionResult:
    passed = facts.status == a["status"]
    return AssertionResult("status", f"run ends with status {a['status']}", passed, f"actual: {facts.status}")


_CHECKS: dict[str, Callable[[Contract, _Facts], AssertionResult]] = {
    "tool_called": _check_tool_called,
    "tool_sequence": _check_tool_sequence,
    "tool_input": _check_tool_input,
    "max_model_turns": _check_max_model_turns,
    "no_tool_errors": _check_no_tool_errors,
    "status": _check_status,
}


def run_contract(contract: Any, cassette: Cassette) -> list[AssertionResult]:
    """One result per assertion, in the contract's order (CassetteError if the contract is invalid)."""
    valid = validate_contract(contract)
    facts = _facts(cassette)
    return [_CHECKS[a["kind"]](a, facts) for a in valid["assertions"]]


def format_results(results: list[AssertionResult]) -> list[str]:
    return [f"{'PASS' if r.passed else 'FAIL'} {safe(r.description)}: {safe(r.detail)}" for r in results]


# --- generation -----------------------------------------------------------------------------------


def _is_copyable(value: Any) -> bool:
    if isinstance(value, str):
        return len(value) <= MAX_COPIED_STRING
    return isinstance(value, (bool, int, float))


def _escape_token(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _input_assertions(facts: _Facts) -> list[Contract]:
    assertions: list[Contract] = []
    seen: set[str] = set()
    for call in facts.calls:
        if call.tool in seen:
            continue  # the first call of each tool stands for it
        seen.add(call.tool)
        inputs = call.input if isinstance(call.input, dict) else {}
        for key in sorted(inputs):
            if _is_copyable(inputs[key]):
                pointer = "/" + _escape_token(key)
                assertions.append(
                    {
                        "kind": "tool_input",
                        "tool": call.tool,
                        "occurrence": 0,
                        "pointer": pointer,
                        "equals": inputs[key],
                    }
                )
    return assertions


def generate_contract(cassette: Cassette, name: str | None = None) -> Contract:
    """A contract the cassette passes, derived deterministically from what the run did."""
    facts = _facts(cassette)
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
    return {
        "contractVersion": CONTRACT_VERSION,
        "name": name if name is not None else cassette.id,
        "source": {"cassetteId": cassette.id, "head": cassette.head},
        "assertions": assertions,
    }
