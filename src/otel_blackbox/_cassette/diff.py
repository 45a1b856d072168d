"""Where two cassettes stop agreeing, and whether that changed what the run did.

Two questions, answered independently:

* the first divergence: by hash (a fork against its parent: the first index whose step hashes
  differ, or where one side has no step), or semantically (two separate recordings, whose
  timestamps and ids always differ: the first index whose ``type`` or canonical ``payload``
  differ; a ``model_input`` built from spans is compared only in what its spans ``observed``, as a
  replay compares it). Only the divergent step is walked as JSON, to name the first differing path;
* the outcome: failure, terminal result and tool-call sequence compared with a strict precedence
  (failure, then result, then tool path), whether or not the steps diverged. A run *failed* when
  its outcome is an error, when it never finished (incomplete), or when any of its tool results is
  an error (a tool that raised or rejected its arguments), even if a final answer followed. A
  change of failure is named by its direction: ``failure fixed`` (failed to succeeded),
  ``regression`` (succeeded to failed), else ``outcome flipped`` (one failure to another kind).
  The line says which failure: ``parent error → child success`` when only the outcomes failed,
  ``tool error in refund_order → success`` when a tool error is one side's failure.

A model_output's ``tokenUsage`` is not behaviour: the semantic mode leaves it out, so two runs that
said the same at a different token count agree. The report prices each side (cost.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from otel_blackbox._cassette.canonical import canonical_or_none, same_canonical
from otel_blackbox._cassette.model import (
    OBSERVED,
    Cassette,
    Outcome,
    Step,
    observed_view,
    terminal_outcome,
    tool_call_sequence,
)
from otel_blackbox._cost.cassettes import CassetteCost, cassette_cost
from otel_blackbox._cost.usage import without_usage
from otel_blackbox._render.text import clip, safe

__all__ = [
    "ABSENT",
    "DiffReport",
    "Failure",
    "OutcomeDiff",
    "PathDifference",
    "child_path",
    "diff_cassettes",
    "diff_outcome",
    "first_difference",
    "format_diff",
    "run_failure",
]

VALUE_LIMIT = 200

Mode = Literal["hash", "semantic"]
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


class _Absent:
    """A path present on one side only (distinct from a JSON null)."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = _Absent()


@dataclass(frozen=True)
class PathDifference:
    """The first differing JSON path inside the divergent step, with both values (or ABSENT)."""

    path: str
    parent: Any
    child: Any

    def to_json(self) -> dict[str, Any]:
        """An absent side is left out (JSON has no "absent", and null is a value)."""
        data: dict[str, Any] = {"path": self.path}
        if self.parent is not ABSENT:
            data["parent"] = self.parent
        if self.child is not ABSENT:
            data["child"] = self.child
        return data


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


@dataclass(frozen=True)
class DiffReport:
    parent_id: str
    child_id: str
    mode: Mode
    parent_length: int
    child_length: int
    index: int | None  # the first divergent index; None when the cassettes agree throughout
    parent_step: Step | None
    child_step: Step | None
    difference: PathDifference | None
    outcome: OutcomeDiff
    parent_cost: CassetteCost | None = None
    child_cost: CassetteCost | None = None

    @property
    def diverged(self) -> bool:
        return self.index is not None

    @property
    def shared_prefix(self) -> int:
        """Steps equal before the divergence (all of them when none)."""
        return self.parent_length if self.index is None else self.index

    def to_json(self) -> dict[str, Any]:
        return {
            "parentId": self.parent_id,
            "childId": self.child_id,
            "mode": self.mode,
            "parentSteps": self.parent_length,
            "childSteps": self.child_length,
            "sharedPrefix": self.shared_prefix,
            "index": self.index,
            "parentStep": None if self.parent_step is None else self.parent_step.to_json(),
            "childStep": None if self.child_step is None else self.child_step.to_json(),
            "difference": None if self.difference is None else self.difference.to_json(),
            "outcome": self.outcome.to_json(),
            "cost_usd": {
                "parent": None if self.parent_cost is None else self.parent_cost.dollars,
                "child": None if self.child_cost is None else self.child_cost.dollars,
            },
        }


# --- first divergence ---------------------------------------------------------------------------


def _strict_json(value: Any) -> str | None:
    """A fast C-encoded form: equal forms imply equal canonical JSON (the converse can fail)."""
    try:
        return json.dumps(value, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        return None


def _same_payload(a: Any, b: Any) -> bool:
    if a is b:
        return True
    fast = _strict_json(a)
    if fast is not None and fast == _strict_json(b):
        return True
    # Different here but maybe equal canonically: 1 vs 1.0, integers beyond 2**53.
    return same_canonical(a, b)


def _compared(parent: Step, child: Step) -> tuple[Any, Any]:
    """The payloads as the semantic mode compares them: a model_output without its ``tokenUsage``; a
    model_input built from spans (with ``observed``) only in what its spans saw, on both sides, as a
    replay compares it."""
    p, c = parent.payload, child.payload
    if parent.type == "model_output" and child.type == "model_output":
        return without_usage(p), without_usage(c)
    if parent.type != "model_input" or not (isinstance(p, dict) and isinstance(c, dict)):
        return p, c
    observed = p.get(OBSERVED, c.get(OBSERVED))
    return observed_view(p, observed), observed_view(c, observed)


def _same_step(parent: Step, child: Step, mode: Mode) -> bool:
    if parent.hash == child.hash:
        return True  # the hash covers type and payload, so semantic equality follows too
    if mode == "hash":
        return False
    return parent.type == child.type and _same_payload(*_compared(parent, child))


def _first_divergent_index(parent: Cassette, child: Cassette, mode: Mode) -> int | None:
    for index, (p, c) in enumerate(zip(parent.steps, child.steps, strict=False)):
        if not _same_step(p, c, mode):
            return index
    if len(parent.steps) == len(child.steps):
        return None
    return min(len(parent.steps), len(child.steps))  # one side ended: diverged where it ends


# --- first differing JSON path ------------------------------------------------------------------


def _utf16(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def child_path(path: str, key: str | int) -> str:
    """``$.a.b[0]``: identifier keys dotted, other keys quoted in brackets, indexes in brackets."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    if key.isidentifier():
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def first_difference(parent: Any, child: Any, path: str = "$") -> PathDifference | None:
    """The first leaf where two JSON values differ, object keys visited in canonical order."""
    if isinstance(parent, dict) and isinstance(child, dict):
        for key in sorted(parent.keys() | child.keys(), key=_utf16):
            sub = child_path(path, key)
            if key not in parent or key not in child:
                return PathDifference(sub, parent.get(key, ABSENT), child.get(key, ABSENT))
            found = first_difference(parent[key], child[key], sub)
            if found is not None:
                return found
        return None
    if isinstance(parent, list) and isinstance(child, list):
        for index in range(max(len(parent), len(child))):
            sub = child_path(path, index)
            if index >= len(parent) or index >= len(child):
                return PathDifference(sub, _item(parent, index), _item(child, index))
            found = first_difference(parent[index], child[index], sub)
            if found is not None:
                return found
        return None
    return None if same_canonical(parent, child) else PathDifference(path, parent, child)


def _item(values: list[Any], index: int) -> Any:
    return values[index] if index < len(values) else ABSENT


def _hashed_fields(step: Step, mode: Mode) -> dict[str, Any]:
    # Meaning first: a changed type or payload explains more than a changed timestamp.
    if mode == "semantic":
        return {"type": step.type, "payload": step.payload}
    return {
        "type": step.type,
        "payload": step.payload,
        "timestamp": step.timestamp,
        "prevHash": step.prev_hash,
        "index": step.index,
    }


def _step_difference(parent: Step, child: Step, mode: Mode) -> PathDifference | None:
    p_fields, c_fields = _hashed_fields(parent, mode), _hashed_fields(child, mode)
    if mode == "semantic":
        p_fields["payload"], c_fields["payload"] = _compared(parent, child)
    for name in p_fields:  # dict order, not canonical order: see _hashed_fields
        found = first_difference(p_fields[name], c_fields[name], f"$.{name}")
        if found is not None:
            return found
    return None


# --- outcome --------------------------------------------------------------------------------------


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


def diff_cassettes(parent: Cassette, child: Cassette, *, semantic: bool = False) -> DiffReport:
    """The first divergence (by hash, or by type and payload when ``semantic``) and the outcome diff."""
    mode: Mode = "semantic" if semantic else "hash"
    index = _first_divergent_index(parent, child, mode)
    p_step = parent.steps[index] if index is not None and index < len(parent.steps) else None
    c_step = child.steps[index] if index is not None and index < len(child.steps) else None
    difference = _step_difference(p_step, c_step, mode) if p_step is not None and c_step is not None else None
    return DiffReport(
        parent_id=parent.id,
        child_id=child.id,
        mode=mode,
        parent_length=len(parent.steps),
        child_length=len(child.steps),
        index=index,
        parent_step=p_step,
        child_step=c_step,
        difference=difference,
        outcome=diff_outcome(parent, child),
        parent_cost=cassette_cost(parent),
        child_cost=cassette_cost(child),
    )


# --- text -----------------------------------------------------------------------------------------


def _show(value: Any) -> str:
    if value is ABSENT:
        return "(absent)"
    text = canonical_or_none(value)
    if text is None:
        text = repr(value)
    return safe(clip(text, VALUE_LIMIT))


def _show_text(value: str | None) -> str:
    return "(none)" if value is None else safe(clip(value, VALUE_LIMIT))


def _step_line(side: str, step: Step | None, index: int) -> str:
    if step is None:
        return f"{side} step {index}: (no step: the {side} ended)"
    return f"{side} step {index}: {safe(step.type)} {safe(step.hash[:12])} {_show(step.payload)}"


def _divergence_lines(report: DiffReport) -> list[str]:
    index = report.index
    if index is None:
        return [f"no divergence: all {report.parent_length} steps are equal"]
    p, c = report.parent_step, report.child_step
    if p is None or c is None:
        where = "parent" if p is None else "child"
        head = f"first divergence: index {index} (the {where} ends there)"
    elif p.type == c.type:
        head = f"first divergence: index {index} ({safe(p.type)})"
    else:
        head = f"first divergence: index {index} ({safe(p.type)} vs {safe(c.type)})"
    lines = [head, _step_line("parent", p, index), _step_line("child", c, index)]
    diff = report.difference
    if diff is not None:
        lines += [
            f"differs at: {safe(diff.path)}",
            f"parent value: {_show(diff.parent)}",
            f"child value: {_show(diff.child)}",
        ]
    elif p is not None and c is not None:
        lines.append("the hashed fields are equal but the stored hashes differ: run verify on both")
    return lines


def _outcome_lines(outcome: OutcomeDiff) -> list[str]:
    """The details, then the verdict: the closing line of the report names the change."""
    lines = []
    if outcome.status_changed:
        lines += _result_line("parent", outcome.parent_status, outcome.parent_result)
        lines += _result_line("child", outcome.child_status, outcome.child_result)
    elif outcome.result_changed:
        label = "reason" if outcome.parent_status == "error" else "answer"
        lines.append(f"parent {label}: {_show_text(outcome.parent_result)}")
        lines.append(f"child {label}: {_show_text(outcome.child_result)}")
    if outcome.kind in ("failure_fixed", "regression", "outcome_flipped"):
        # The tool error the verdict names, as the run recorded it.
        for side, failure in (("parent", outcome.parent_failure), ("child", outcome.child_failure)):
            if failure is not None and failure.kind == "tool_error" and failure.first_error is not None:
                lines.append(f"{side} tool error: {_show_text(failure.first_error)}")
    if outcome.tool_sequence_changed:
        lines.append(f"parent tools: {_tools(outcome.parent_tools)}")
        lines.append(f"child tools: {_tools(outcome.child_tools)}")
    return [*lines, f"outcome: {outcome.verdict}"]


def _result_line(side: str, status: str, result: str | None) -> list[str]:
    # An incomplete run has no terminal result to show.
    if status == "incomplete":
        return []
    return [f"{side} {'answer' if status == 'success' else 'reason'}: {_show_text(result)}"]


def _tools(tools: list[str]) -> str:
    return safe(clip(" → ".join(tools), VALUE_LIMIT)) if tools else "(none)"


def format_diff(report: DiffReport) -> list[str]:
    """The readable report, one fact per line, every recorded value clipped and made terminal-safe."""
    compared = "step hashes" if report.mode == "hash" else "type and payload (timestamps and ids ignored)"
    return [
        f"parent: {safe(report.parent_id)} ({report.parent_length} steps)",
        f"child: {safe(report.child_id)} ({report.child_length} steps)",
        *_cost_lines(report),
        f"compared by: {compared}",
        f"shared prefix: {report.shared_prefix} steps",
        *_divergence_lines(report),
        *_outcome_lines(report.outcome),
    ]


def _cost_lines(report: DiffReport) -> list[str]:
    """``cost: parent $0.0123, child $0.0045``: each side's model calls priced (``-``: no price)."""
    if report.parent_cost is None or report.child_cost is None:
        return []
    return [f"cost: parent {report.parent_cost.describe()}, child {report.child_cost.describe()}"]
