"""What a contract checks a run against, and the checks of what the run *did*.

``facts_of`` reads a cassette once: its tool calls (each with its input and whether its result was
an error), the tool errors, the model turns, how it ended and its final answer. The checks here are
the structural kinds (``tool_called``, ``tool_sequence``, ``tool_input``, ``max_model_turns``,
``no_tool_errors``, ``status``); the answer's kinds are in ``answer_checks``. Each check gives a
``Judged``: what it asserts, whether it held, and what it saw.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from otel_blackbox._cassette.canonical import same_canonical
from otel_blackbox._cassette.json_pointer import resolve_pointer
from otel_blackbox._cassette.model import Cassette, terminal_outcome
from otel_blackbox._render.words import counted

__all__ = ["STRUCTURAL_CHECKS", "Call", "Facts", "Judged", "clip", "facts_of", "short"]

Assertion = dict[str, Any]


class Judged(NamedTuple):
    description: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class Call:
    tool: str
    input: Any
    occurrence: int  # 0-based, among the calls of this tool
    errored: bool  # its tool_result is an error


@dataclass(frozen=True)
class Facts:
    calls: list[Call]
    errors: list[str]  # "<tool> at step N: <error>"
    model_turns: int
    status: str
    answer: str | None  # the final answer of a run that completed, else None


def facts_of(cassette: Cassette) -> Facts:
    errored_ids: set[Any] = set()
    errors = []
    for step in cassette.steps_of("tool_result"):
        payload = step.payload if isinstance(step.payload, dict) else {}
        if payload.get("error") is not None:
            tool = payload.get("toolName")
            name = tool if isinstance(tool, str) else "unknown"
            errors.append(f"{name} at step {step.index}: {short(payload['error'])}")
            if payload.get("toolCallId") is not None:
                errored_ids.add(payload["toolCallId"])
    calls: list[Call] = []
    for step in cassette.steps_of("tool_call"):
        payload = step.payload if isinstance(step.payload, dict) else {}
        tool = payload.get("toolName")
        tool = tool if isinstance(tool, str) else "unknown"
        occurrence = sum(1 for c in calls if c.tool == tool)
        call_id = payload.get("toolCallId")
        errored = call_id is not None and call_id in errored_ids
        calls.append(Call(tool, payload.get("toolInput"), occurrence, errored))
    turns = sum(1 for _ in cassette.steps_of("model_output"))
    outcome = terminal_outcome(cassette)
    return Facts(calls, errors, turns, outcome.status, outcome.final_answer)


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


def short(value: Any, limit: int = 80) -> str:
    return clip(json.dumps(value, ensure_ascii=False, sort_keys=True), limit)


def _times(n: int) -> str:
    return counted(n, "time")


def _path(tools: list[str]) -> str:
    return " → ".join(tools) if tools else "(none)"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _tool_called(a: Assertion, facts: Facts) -> Judged:
    at_least = int(a.get("at_least", 1))
    count = sum(1 for c in facts.calls if c.tool == a["tool"])
    description = f"tool {a['tool']} called at least {_times(at_least)}"
    return Judged(description, count >= at_least, f"called {_times(count)}")


def _is_subsequence(wanted: list[str], actual: list[str]) -> bool:
    remaining = iter(actual)
    return all(any(tool == got for got in remaining) for tool in wanted)


def _tool_sequence(a: Assertion, facts: Facts) -> Judged:
    wanted: list[str] = a["tools"]
    actual = [c.tool for c in facts.calls]
    if a.get("mode", "exact") == "subsequence":
        description = f"tools called in this order (others allowed between): {_path(wanted)}"
        passed = _is_subsequence(wanted, actual)
    else:
        description = f"tool sequence is exactly: {_path(wanted)}"
        passed = wanted == actual
    return Judged(description, passed, f"actual: {_path(actual)}")


def _tool_input(a: Assertion, facts: Facts) -> Judged:
    """``equals``: the value at the pointer is this one. ``not_equals``: it is not (a call or a value
    that is not there is not it)."""
    occurrence = int(a.get("occurrence", 0))
    negated = "not_equals" in a
    expected = a["not_equals"] if negated else a["equals"]
    where = f"input {a['pointer']}" if a["pointer"] else "input"
    relation = "≠" if negated else "="
    description = f"{_ordinal(occurrence + 1)} {a['tool']} call has {where} {relation} {short(expected)}"
    calls = [c for c in facts.calls if c.tool == a["tool"]]
    if occurrence >= len(calls):
        return Judged(description, negated, f"{a['tool']} called {_times(len(calls))}")
    found, value = resolve_pointer(calls[occurrence].input, a["pointer"])
    if not found:
        return Judged(description, negated, f"no {a['pointer']} in the input")
    # Canonical forms: true is not 1, but 1 and 1.0 are the same JSON number.
    return Judged(description, same_canonical(value, expected) != negated, f"actual: {short(value)}")


def _max_model_turns(a: Assertion, facts: Facts) -> Judged:
    at_most = int(a["at_most"])
    turns = counted(facts.model_turns, "model turn")
    return Judged(f"at most {at_most} model turns", facts.model_turns <= at_most, turns)


def _no_tool_errors(_a: Assertion, facts: Facts) -> Judged:
    calls = f"{counted(len(facts.calls), 'tool call')}, no errors"
    detail = "; ".join(facts.errors) if facts.errors else calls
    return Judged("no tool returned an error", not facts.errors, detail)


def _status(a: Assertion, facts: Facts) -> Judged:
    description = f"run ends with status {a['status']}"
    return Judged(description, facts.status == a["status"], f"actual: {facts.status}")


STRUCTURAL_CHECKS: dict[str, Callable[[Assertion, Facts], Judged]] = {
    "tool_called": _tool_called,
    "tool_sequence": _tool_sequence,
    "tool_input": _tool_input,
    "max_model_turns": _max_model_turns,
    "no_tool_errors": _no_tool_errors,
    "status": _status,
}
