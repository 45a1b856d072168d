"""A cassette diff as readable lines: one fact per line, every recorded value clipped and made
terminal-safe, the verdict last."""

from __future__ import annotations

from typing import Any

from otel_blackbox._cassette.canonical import canonical_or_none
from otel_blackbox._cassette.diff.json_paths import ABSENT
from otel_blackbox._cassette.diff.outcome import OutcomeDiff
from otel_blackbox._cassette.diff.report import DiffReport
from otel_blackbox._cassette.model import Step
from otel_blackbox._render.text import clip, safe
from otel_blackbox._render.words import counted

__all__ = ["format_diff"]

VALUE_LIMIT = 200


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
        return [f"no divergence: all {counted(report.parent_length, 'step')} are equal"]
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
    if outcome.kind in ("failure_fixed", "failure_avoided", "regression", "still_failing"):
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
        *_edit_line(report),
        f"parent: {safe(report.parent_id)} ({counted(report.parent_length, 'step')})",
        f"child: {safe(report.child_id)} ({counted(report.child_length, 'step')})",
        *_cost_lines(report),
        f"compared by: {compared}",
        f"shared prefix: {counted(report.shared_prefix, 'step')}",
        *_divergence_lines(report),
        *_outcome_lines(report.outcome),
    ]


def _edit_line(report: DiffReport) -> list[str]:
    """``edited at step 7: tool result of lookup_order``: the change a fork made, before all else."""
    edit = report.edit
    if edit is None:
        return []
    what = safe(clip(str(edit.get("description")), VALUE_LIMIT))
    return [f"edited at step {safe(str(edit.get('step')))}: {what}"]


def _cost_lines(report: DiffReport) -> list[str]:
    """``cost: parent $0.0123, child $0.0045``: each side's model calls priced (``-``: no price)."""
    if report.parent_cost is None or report.child_cost is None:
        return []
    return [f"cost: parent {report.parent_cost.describe()}, child {report.child_cost.describe()}"]
