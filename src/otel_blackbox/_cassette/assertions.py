"""Declared expectations over a cassette's outcome: the checks behind ``otel-blackbox assert``.

Exact comparisons only (no fuzzy or semantic matching), one result per expectation the caller
supplied, all of them evaluated so a CI log shows every mismatch at once. The CLI verifies the
cassette first: an unsound cassette's outcome is not worth comparing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from otel_blackbox._cassette.model import Cassette, terminal_outcome, tool_call_sequence
from otel_blackbox._render.text import safe

__all__ = ["Expectation", "check_expectations", "format_expectations"]

Value = str | list[str] | None


@dataclass(frozen=True)
class Expectation:
    """One supplied expectation: ``name`` is status, final_answer, failure_reason or tools."""

    name: str
    passed: bool
    expected: Value
    actual: Value


def _check(name: str, expected: Value, actual: Value) -> Expectation:
    return Expectation(name, expected == actual, expected, actual)


def check_expectations(
    cassette: Cassette,
    *,
    status: str | None = None,
    final_answer: str | None = None,
    tools: Sequence[str] | None = None,
    failure_reason: str | None = None,
) -> list[Expectation]:
    """Every supplied expectation, in a stable order; ``tools=[]`` asserts that no tool was called."""
    outcome = terminal_outcome(cassette)
    checks = []
    if status is not None:
        checks.append(_check("status", status, outcome.status))
    if final_answer is not None:
        checks.append(_check("final_answer", final_answer, outcome.final_answer))
    if failure_reason is not None:
        checks.append(_check("failure_reason", failure_reason, outcome.failure_reason))
    if tools is not None:
        checks.append(_check("tools", list(tools), tool_call_sequence(cassette)))
    return checks


def _show(value: Value) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, list):
        return ", ".join(safe(v) for v in value) if value else "(none)"
    return safe(value)


def format_expectations(checks: Sequence[Expectation]) -> list[str]:
    """One line per check: PASS with the value, or FAIL with expected and actual."""
    lines = []
    for check in checks:
        if check.passed:
            lines.append(f"PASS {check.name}: {_show(check.actual)}")
        else:
            lines.append(f"FAIL {check.name}: expected {_show(check.expected)}, got {_show(check.actual)}")
    return lines
