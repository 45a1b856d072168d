"""Whether two runs did something different: the verdict on failure, result and tool path.

Failure, terminal result and tool-call sequence compared with a strict precedence (failure, then
result, then tool path), whether or not the steps diverged. A run *failed* when its outcome is an
error, when it never finished (incomplete), or when any of its tool results is an error (a tool that
raised or rejected its arguments), even if a final answer followed.

The verdict table, first matching row first (the parent is the incident, the child its rerun):

- ``failure_fixed``: the parent failed and the child succeeded by doing what failed: each tool whose
  result was an error answered without one (from the recording or a stub) and, when the outcome
  itself failed (a raised error, a failed check, a killed run), every tool the parent reached too.
- ``failure_avoided``: the parent failed and the child succeeded without answering one of those
  tools: it went round the failure, which is not counted as fixed.
- ``not_checkable``: the parent failed in its program after the model's final answer (a check that
  raised, a kill), and the child ran without the program (the built-in agent), so its success says
  nothing of that check. A contract decides instead when one is given: it passes on the child and
  fails on the parent (``failure_fixed``), or it fails on the child (``still_failing``).
- ``regression``: the parent succeeded, the child failed.
- ``still_failing``: both failed, differently, or alike with another result or tool path.
- ``answer_changed``, ``tool_path_changed``: both succeeded, with another answer, or with the same
  answer by other tools.
- ``no_change``: the same failure (or none), result and tool path.

The line says which failure: ``parent error → child success`` when only the outcomes failed,
``tool error in refund_order → success`` when a tool error is one side's failure, and what an
avoided failure skipped: ``failure avoided: refund_order not called (tool error in refund_order →
success)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from otel_blackbox._cassette.canonical import canonical_or_none
from otel_blackbox._cassette.model import Cassette, Outcome, terminal_outcome, tool_call_sequence

__all__ = [
    "Failure",
    "OutcomeDiff",
    "answer_before_failure",
    "diff_outcome",
    "outcome_label",
    "ran_without_program",
    "run_failure",
]

VerdictKind = Literal[
    "failure_fixed",
    "failure_avoided",
    "not_checkable",
    "regression",
    "still_failing",
    "answer_changed",
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
    # The tools the parent's failure went through that the child never answered (failure_avoided).
    avoided_tools: tuple[str, ...] = ()

    @property
    def parent_label(self) -> str:
        return labelled(self.parent_status, self.parent_failure)

    @property
    def child_label(self) -> str:
        return labelled(self.child_status, self.child_failure)

    @property
    def behaviourally_equivalent(self) -> bool:
        return self.kind == "no_change"

    @property
    def fixed(self) -> bool:
        """The failure fixed, by the child doing what failed: not avoided, not still failing."""
        return self.kind == "failure_fixed"

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
            "avoidedTools": list(self.avoided_tools),
            "statusChanged": self.status_changed,
            "resultChanged": self.result_changed,
            "toolSequenceChanged": self.tool_sequence_changed,
            "behaviourallyEquivalent": self.behaviourally_equivalent,
            "fixed": self.fixed,
            "kind": self.kind,
            "verdict": self.verdict,
        }


def _tool_results(cassette: Cassette) -> list[tuple[str, Any, int]]:
    """(tool name, its error or None, step index) of each tool_result, in order."""
    found = []
    for step in cassette.steps_of("tool_result"):
        payload = step.payload if isinstance(step.payload, dict) else {}
        name = payload.get("toolName")
        found.append((name if isinstance(name, str) else "unknown", payload.get("error"), step.index))
    return found


def run_failure(cassette: Cassette, outcome: Outcome | None = None) -> Failure | None:
    """Why the run failed, or None when it succeeded: an error or incomplete outcome first (the run's
    own end), else its tool results that are errors, though a final answer followed them."""
    outcome = terminal_outcome(cassette) if outcome is None else outcome
    tools: dict[str, None] = {}  # an ordered set
    first_error = None
    for name, error, index in _tool_results(cassette):
        if error is None:
            continue
        tools.setdefault(name)
        if first_error is None:
            text = error if isinstance(error, str) else canonical_or_none(error) or repr(error)
            first_error = f"{name} at step {index}: {text}"
    if outcome.status == "error" or outcome.status == "incomplete":
        return Failure(outcome.status, tuple(tools), first_error)
    return Failure("tool_error", tuple(tools), first_error) if tools else None


def outcome_label(cassette: Cassette) -> str:
    """How a run ended, in a word, with the tool errors a completed run went through:
    ``success (tool error in refund_order)``, never a bare success that hides one."""
    outcome = terminal_outcome(cassette)
    return labelled(outcome.status, run_failure(cassette, outcome))


def labelled(status: str, failure: Failure | None) -> str:
    """A status with the tool errors a completed run went through: ``success (tool error in X)``."""
    return f"{status} ({failure.label})" if failure is not None and failure.kind == "tool_error" else status


def _avoided(failure: Failure, parent_tools: list[str], child: Cassette) -> tuple[str, ...]:
    """What of the parent's failure the child never did again: each tool that errored, and, when the
    outcome itself failed (a raised error, a failed check, a killed run), each tool the parent
    reached; a tool counts as done again once the child has a result for it that is not an error."""
    needed = dict.fromkeys(failure.tools)
    if failure.kind != "tool_error":
        needed.update(dict.fromkeys(parent_tools))
    answered = {name for name, error, _ in _tool_results(child) if error is None}
    return tuple(name for name in needed if name not in answered)


def answer_before_failure(cassette: Cassette, outcome: Outcome | None = None) -> str | None:
    """The final answer of a run that failed outside its conversation, else None: it ended in an
    error after the model's last output was a final answer with every tool call answered (the
    program raised on the answer, or was killed after it). Only the program, or a contract, can say
    whether a rerun fixed that."""
    outcome = terminal_outcome(cassette) if outcome is None else outcome
    if outcome.status != "error":
        return None
    for step in reversed(cassette.steps):
        if step.type == "tool_call" or step.type == "tool_result":
            return None  # the conversation ended on a tool, not on an answer
        if step.type == "model_output":
            payload = step.payload if isinstance(step.payload, dict) else {}
            if payload.get("type") != "final_answer":
                return None
            text = payload.get("text")
            return text if isinstance(text, str) else ""
    return None


def ran_without_program(cassette: Cassette) -> bool:
    """Whether the built-in agent made this run (``rerun`` without ``-- CMD``, a blame branch): no
    program ran, so none of its own checks did."""
    agent = cassette.agent
    return isinstance(agent, dict) and agent.get("kind") == "built-in"


def _side(failure: Failure | None) -> str:
    return "success" if failure is None else failure.label


def _change(parent: Outcome, child: Outcome, p_fail: Failure | None, c_fail: Failure | None) -> str:
    if "tool_error" in (None if p_fail is None else p_fail.kind, None if c_fail is None else c_fail.kind):
        return f"{_side(p_fail)} → {_side(c_fail)}"
    return f"parent {parent.status} → child {child.status}"  # only the outcomes failed: their statuses say it


UNCHECKED = (
    "not checkable: the incident failed in the program after its answer, and the child ran without "
    "the program; give a contract or the program"
)


def _unchecked(answer: str, child: Outcome, contract: tuple[bool, bool] | None) -> tuple[VerdictKind, str]:
    """The verdict on a child whose success cannot show that the program's own check now passes."""
    same = " (the child gave the same answer)" if child.final_answer == answer else ""
    if contract is None:
        return "not_checkable", f"{UNCHECKED}{same}"
    parent_passes, child_passes = contract
    if not child_passes:
        return "still_failing", f"still failing: the contract fails on the child{same}"
    if parent_passes:
        return (
            "not_checkable",
            f"not checkable: the contract passes on the incident too, so it cannot tell{same}",
        )
    return "failure_fixed", "failure fixed: the contract passes on the child and fails on the incident"


def _verdict(
    parent: Outcome,
    child: Outcome,
    failures: tuple[Failure | None, Failure | None],
    tools_changed: bool,
    avoided: tuple[str, ...],
    unchecked: str | None = None,
    contract: tuple[bool, bool] | None = None,
) -> tuple[VerdictKind, str]:
    p_fail, c_fail = failures
    if p_fail is not None and c_fail is None:  # what a rerun of an incident is for, or round it
        if unchecked is not None:  # the parent's answer, rejected by a program the child never ran
            return _unchecked(unchecked, child, contract)
        change = _change(parent, child, p_fail, c_fail)
        if avoided:
            return "failure_avoided", f"failure avoided: {', '.join(avoided)} not called ({change})"
        return "failure_fixed", f"failure fixed: {change}"
    if p_fail is None and c_fail is not None:
        return "regression", f"regression: {_change(parent, child, p_fail, c_fail)}"
    if p_fail is not None and c_fail is not None:
        if p_fail.label != c_fail.label:
            return "still_failing", f"still failing: {_change(parent, child, p_fail, c_fail)}"
        if parent.result != child.result:
            what = "failure reason" if parent.status == "error" else "final answer"
            return "still_failing", f"still failing: {p_fail.label} (the {what} changed)"
        if tools_changed:
            return "still_failing", f"still failing: {p_fail.label} (the tool path changed)"
        return "no_change", f"no behavioural change: the same failure ({p_fail.label}), result and tool path"
    if parent.result != child.result:
        return "answer_changed", f"same final status ({parent.status}), but the final answer changed"
    if tools_changed:
        return "tool_path_changed", "same outcome, but the tool path changed"
    return "no_change", "no behavioural change: same status, result and tool path"


def diff_outcome(
    parent: Cassette, child: Cassette, *, contract: tuple[bool, bool] | None = None
) -> OutcomeDiff:
    """Classify the behavioural change from parent to child (first matching rule wins).

    ``contract``: whether a contract passes on (parent, child), when one is given: the evidence
    that decides a child the conversation alone cannot judge (``not_checkable``)."""
    p_out, c_out = terminal_outcome(parent), terminal_outcome(child)
    p_fail, c_fail = run_failure(parent, p_out), run_failure(child, c_out)
    p_tools, c_tools = tool_call_sequence(parent), tool_call_sequence(child)
    avoided = _avoided(p_fail, p_tools, child) if p_fail is not None and c_fail is None else ()
    unchecked = answer_before_failure(parent, p_out) if ran_without_program(child) else None
    kind, verdict = _verdict(p_out, c_out, (p_fail, c_fail), p_tools != c_tools, avoided, unchecked, contract)
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
        avoided_tools=avoided,
    )
