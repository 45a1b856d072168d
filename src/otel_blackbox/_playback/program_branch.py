"""A branch of ``blame -- CMD``: the program itself run again from a point of the incident.

The program runs under a rerun session (rerun.py): its model calls before the point are answered
with the incident's own outputs, the rest go to the live model; every HTTP request of its tools is
answered from the recording (with ``stub_tools``, its plain-Python tools too), never sent. A branch
from a tool result sends the model the correction in place of what the tool returned. The child
ends as the program ends: its own check, run on the answer, judges the branch.
"""

from __future__ import annotations

import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.model import Cassette, terminal_outcome
from otel_blackbox._playback.agent.branch import Branch, BranchPoint
from otel_blackbox._playback.budget import MAX_COST
from otel_blackbox._playback.launch import run_program
from otel_blackbox.errors import ResultKept, SessionError

__all__ = ["run_program_branch"]


def run_program_branch(
    incident_path: Path,
    incident: Cassette,
    point: BranchPoint,
    *,
    output: Path,
    program: tuple[str, ...],
    model: str | None,
    max_cost: Decimal | None,
    stub_tools: bool,
) -> Branch:
    """Run the program from ``point``; its child written to ``output``. A session that fails before
    the child is written (the program never reached the point) is a branch that failed."""
    plan: dict[str, Any] = {
        "output": str(output.resolve()),
        "model": model,
        "max_cost": None if max_cost is None else str(max_cost),
        "replay_turns": point.turn,
        "stub_tools": stub_tools,
        "allow_unverified": True,  # blame checked the incident before any branch (and warned)
        "blame_branch": True,
    }
    if point.correction is not None:
        call_id = incident.steps[point.index].payload.get("toolCallId")
        fixed = point.correction
        plan["correction"] = {"toolCallId": call_id, "result": fixed.get("result", fixed.get("error"))}
    output.unlink(missing_ok=True)  # a child of an earlier blame in the folder is not this branch's
    try:
        run_program("rerun", incident_path, program, plan=plan, stdout=sys.stderr)
    except (SessionError, ResultKept) as exc:
        if not output.is_file():
            raise SessionError(f"the branch from step {point.index} wrote no child: {exc}") from None
    child = load_cassette(output)
    outcome = terminal_outcome(child)
    stopped = MAX_COST if outcome.failure_reason == MAX_COST else None  # the budget stopped it
    return Branch(point, output, stopped, _live_from(child, point.turn))


def _live_from(child: Cassette, turn: int) -> int:
    """The child's first step of its own: the model_input of the first live call."""
    inputs = [s.index for s in child.steps if s.type == "model_input"]
    return inputs[turn] if turn < len(inputs) else len(child.steps)
