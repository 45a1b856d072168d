"""Whether two runs did something different: the verdict on failure, result and tool path.

Failure, terminal result and tool-call sequence compared with a strict precedence (failure, then
result, then tool path), whether or not the steps diverged. A run *failed* when its outcome is an
error, when it never finished (incomplete), or when any of its tool results is an error (a tool that
raised or rejected its arguments), even if a final answer followed. A change of failure is named by
its direction: ``failure fixed`` (failed to succeeded), ``regression`` (succeeded to failed), else
``outcome flipped`` (one failure to another kind). The line says which failure: ``parent error →
child success`` when only the outcomes failed, ``tool error in refund_order → success`` when a tool
error is one side's failure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from otel_blackbox._cassette.canonical import canonical_or_none
from otel_blackbox._cassette.model import Cassette, Outcome, terminal_outcome, tool_call_sequence

__all__ = ["Failure", "OutcomeDiff", "diff_outcome", "run_failure"]

VerdictKind = Literal[
    "failure_fixed",
    "regression",
    "outcome_flipped",
    "answer_changed",
    "reason_changed",
    "tool_path_changed",
    "no_change",
]
FailureKind = Literal["error", "incomplete", "tool_error"]


@dataclass(frozen=True)
class Failure:
    """Why a run counts as failed: its outcome (``error``, ``incomplete``), or else a tool result that
    is an error (``tool_error``). ``tools`` names every tool whose result was an error, in order and
    once each, whatever the kind; ``first_error`` is the first such result (``tool at step N: error``)."""

    kind: FailureKind
    tools: tuple[str, ...] = ()
    first_error: str | None = None

    @property
    def label(self) -> str:
        """How the verdict names it: ``error``, ``incomplete``, ``tool error in refund_order``."""
        if self.kind != "tool_error":
            return self.kind
        return f"tool error{'s' if len(self.tools) > 1 else ''} in {', '.join(self.tools)}"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "label": self.label,
            "tools": list(self.tools),
            "firstError": self.first_error,
        }


@dataclass(frozen=True)
class OutcomeDiff:
    parent_status: str
    child_status: str
    parent_result: str | None
    child_result: str | None
    parent_tools: list[str]
    child_tools: list[str]
    status_changed: bool
    result_changed: bool
    tool_sequence_changed: bool
    kind: VerdictKind
    verdict: str
    parent_failure: Failure | None = None
    child_failure: Failure | None = None

    @property
    def behaviourally_equivalent(self) -> bool:
        return self.kind == "no_change"

    def to_json(self) -> dict[str, Any]:
        return {
            "parentStatus": self.parent_status,
            "childStatus": self.child_status,
            "parentResult": self.parent_result,
            "childResult": self.child_result,
            "parentTools": self.parent_tools,
            "childTools": self.child_tools,
            "parentFailure": None if self.parent_failure is None else self.parent_failure.to_json(),
            "childFailure": None if self.child_failure is None else self.child_failure.to_json(),
            "statusChanged": self.status_changed,
            "resultChanged": self.result_changed,
            "toolSequenceChanged": self.tool_sequence_changed,
            "behaviourallyEquivalent": self.behaviourally_equivalent,
            "kind": self.kind,
            "verdict": self.verdict,
        }


def run_failure(cassette: Cassette, outcome: Outcome | None = None) -> Failure | None:
    """Why the run failed, or None when it succeeded: an error or incomplete outcome first (the run's
    own end), else its tool results that are errors, though a final answer followed them."""
    outcome = terminal_outcome(cassette) if outcome is None else outcome
    tools: dict[str, None] = {}  # an ordered set
    first_error = None
    for step in cassette.steps_of("tool_result"):
        payload = step.payload if isinstance(step.payload, dict) else {}
        error = payload.get("error")
        if error is None:
            continue
        name = payload.get("toolName")
        name = name if isinstance(name, str) else "unknown"
        tools.setdefault(name)
        if first_error is None:
            text = error if isinstance(error, str) else canonical_or_none(error) or repr(error)
            first_error = f"{name} at step {step.index}: {text}"
    if outcome.status == "error" or outcome.status == "incomplete":
        return Failure(outcome.status, tuple(tools), first_error)
    return Failure("tool_error", tuple(tools), first_error) if tools else None


def _side(failure: Failure | None) -> str:
    return "success" if failure is None else failure.label


def _verdict(
    parent: Outcome, child: Outcome, failures: tuple[Failure | None, Failure | None], tools_changed: bool
) -> tuple[VerdictKind, str]:
    p_fail, c_fail = failures
    p_kind, c_kind = (None if f is None else f.kind for f in failures)
    if p_kind != c_kind:  # one side failed and the other did not, or they failed differently
        if "tool_error" in (p_kind, c_kind):
            change = f"{_side(p_fail)} → {_side(c_fail)}"
        else:  # only the outcomes failed: their statuses say it
            change = f"parent {parent.status} → child {child.status}"
        if c_fail is None:  # what a rerun of an incident is for
            return "failure_fixed", f"failure fixed: {change}"
        if p_fail is None:
            return "regression", f"regression: {change}"
        return "outcome_flipped", f"outcome flipped: {change}"
    if parent.result != child.result:
        if parent.status == "error":
            return "reason_changed", "same final status (error), but the failure reason changed"
        return "answer_changed", f"same final status ({parent.status}), but the final answer changed"
    if tools_changed:
        return "tool_path_changed", "same outcome, but the tool path changed"
    return "no_change", "no behavioural change: same status, result and tool path"


def diff_outcome(parent: Cassette, child: Cassette) -> OutcomeDiff:
    """Classify the behavioural change from parent to child (first matching rule wins)."""
    p_out, c_out = terminal_outcome(parent), terminal_outcome(child)
    p_fail, c_fail = run_failure(parent, p_out), run_failure(child, c_out)
    p_tools, c_tools = tool_call_sequence(parent), tool_call_sequence(child)
    kind, verdict = _verdict(p_out, c_out, (p_fail, c_fail), p_tools != c_tools)
    return OutcomeDiff(
        parent_status=p_out.status,
        child_status=c_out.status,
        parent_result=p_out.result,
        child_result=c_out.result,
        parent_tools=p_tools,
        child_tools=c_tools,
        status_changed=p_out.status != c_out.status,
        result_changed=p_out.result != c_out.result,
        tool_sequence_changed=p_tools != c_tools,
        kind=kind,
        verdict=verdict,
        parent_failure=p_fail,
        child_failure=c_fail,
    )
