"""A cassette diff: the first divergence and the outcome verdict of two cassettes, each side priced
(``cost``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from otel_blackbox._cassette.diff.divergence import Mode, first_divergent_index, step_difference
from otel_blackbox._cassette.diff.json_paths import PathDifference
from otel_blackbox._cassette.diff.outcome import OutcomeDiff, diff_outcome
from otel_blackbox._cassette.model import Cassette, Step
from otel_blackbox._cost.cassettes import CassetteCost, cassette_cost

__all__ = ["DiffReport", "diff_cassettes"]


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
    edit: dict[str, Any] | None = None  # the child's ``edit`` hint: the change a fork made, named first

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
            "edit": self.edit,
            "cost_usd": {
                "parent": None if self.parent_cost is None else self.parent_cost.dollars,
                "child": None if self.child_cost is None else self.child_cost.dollars,
            },
        }


def diff_cassettes(
    parent: Cassette, child: Cassette, *, semantic: bool = False, contract: tuple[bool, bool] | None = None
) -> DiffReport:
    """The first divergence (by hash, or by type and payload when ``semantic``) and the outcome diff
    (``contract``: whether a contract passes on parent and child, the verdict's evidence when given)."""
    mode: Mode = "semantic" if semantic else "hash"
    index = first_divergent_index(parent, child, mode)
    p_step = parent.steps[index] if index is not None and index < len(parent.steps) else None
    c_step = child.steps[index] if index is not None and index < len(child.steps) else None
    difference = step_difference(p_step, c_step, mode) if p_step is not None and c_step is not None else None
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
        outcome=diff_outcome(parent, child, contract=contract),
        parent_cost=cassette_cost(parent),
        child_cost=cassette_cost(child),
        edit=child.edit if child.edit is not None and child.parent_id == parent.id else None,
    )
