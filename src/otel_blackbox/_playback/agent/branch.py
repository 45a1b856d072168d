"""A branch of an incident (``blame``, ``fork --at N`` with no program): its steps kept up to a point,
changed there (edit.py), the built-in agent from there.

Blame's two kinds of point. A *decision* is a ``model_output`` step: the branch keeps every step before the
request that produced it, verbatim (same timestamps, so the same hashes: a fork's proof), and sends
that request again to the model, live. An *intervention* is a ``tool_result`` step: the branch keeps
every step before it, puts a corrected result in its place (the rest of that tool round as
recorded), and lets the model go on from the next request. Either way the conversation goes on as
``rerun`` runs it: every tool call answered from the incident's results (name and arguments, each
once, those after the point first), then a good run's, or a ``--stub``, never executed; a call
none answers ends the branch ``unrecorded_tool_call``, which ``blame`` counts as unanswerable. A
fork's edits (``continue_edit``) go the same way, their change recorded as the child's ``edit``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from otel_blackbox._cassette.model import Cassette, Step, highest_call_index
from otel_blackbox._playback.agent.edit import Edit, Start, start_of
from otel_blackbox._playback.agent.incident import Incident, RecordedResult
from otel_blackbox._playback.agent.loop import AgentPlan, AgentRun
from otel_blackbox._playback.agent.run import BuiltInRerunSession, drive_session
from otel_blackbox._playback.agent.sdk import ModelClient
from otel_blackbox._playback.agent.tools import ToolBook, ToolMatch
from otel_blackbox._playback.interceptor import Mode, now_ms
from otel_blackbox._playback.record import RunStopped
from otel_blackbox._types import JsonObject
from otel_blackbox.errors import BlackboxError

__all__ = [
    "Branch",
    "BranchPoint",
    "BranchSession",
    "Continued",
    "continue_edit",
    "corrections_from",
    "decision_points",
    "run_branch",
    "tool_points",
]


@dataclass(frozen=True)
class BranchPoint:
    """Where a branch leaves the incident: ``index`` is the incident's step, of ``type`` model_output
    (a decision) or tool_result (an intervention, ``correction`` its new outcome)."""

    index: int
    type: str
    turn: int  # the model call (from 0) the branch sends first
    correction: JsonObject | None = None  # {"result": ...} or {"error": ...}; None for a decision
    source: str | None = None  # where the correction came from: "good" or "stub"

    def edit(self) -> Edit:
        """The change a branch from here makes: none (the request sent again), or the correction."""
        if self.correction is None:
            return Edit("resend", self.index)
        return Edit("tool_result", self.index, self.correction)

    def intervention(self) -> JsonObject | None:
        if self.correction is None:
            return None
        return {"source": self.source, **self.correction}


def _model_input_indexes(cassette: Cassette) -> list[int]:
    return [s.index for s in cassette.steps if s.type == "model_input"]


def decision_points(cassette: Cassette) -> list[BranchPoint]:
    """Every model_output step that answers a model_input, in order: the incident's decisions."""
    inputs = _model_input_indexes(cassette)
    points = []
    for step in cassette.steps:
        if step.type != "model_output":
            continue
        turn = sum(1 for i in inputs if i < step.index) - 1
        if turn >= 0:
            points.append(BranchPoint(step.index, "model_output", turn))
    return points


def tool_points(cassette: Cassette, corrections: dict[int, tuple[JsonObject, str]]) -> list[BranchPoint]:
    """The tool_result steps with a correction (step index -> (outcome, source)) that a model call
    follows: an intervention needs a next request to change."""
    inputs = _model_input_indexes(cassette)
    points = []
    for index, (outcome, source) in sorted(corrections.items()):
        later = [i for i in inputs if i > index]
        if later and cassette.steps[index].type == "tool_result":
            points.append(BranchPoint(index, "tool_result", inputs.index(later[0]), outcome, source))
    return points


def corrections_from(
    incident: Cassette, good: Cassette | None, stubs: dict[str, Any]
) -> dict[int, tuple[JsonObject, str]]:
    """Corrected outcomes for the incident's tool results: the good run's result of the same tool at
    the same occurrence, where it differs; a --stub's value for that tool's results."""
    found: dict[int, tuple[JsonObject, str]] = {}
    ours = _results_by_tool(incident)
    if good is not None:
        theirs = _results_by_tool(good)
        matched = False
        for name, steps in ours.items():
            for n, step in enumerate(steps):
                if n < len(theirs.get(name, [])):
                    matched = True
                    other = _outcome(theirs[name][n])
                    if other != _outcome(step):
                        found[step.index] = (other, "good")
        if not matched:
            raise BlackboxError(
                f"--good {good.id}: none of its tool results matches one of the incident's (another task?)"
            )
    for name, value in stubs.items():
        for step in ours.get(name, []):
            found.setdefault(step.index, ({"result": value}, "stub"))
    return found


def _results_by_tool(cassette: Cassette) -> dict[str, list[Step]]:
    found: dict[str, list[Step]] = {}
    for step in cassette.steps_of("tool_result"):
        found.setdefault(str(step.payload.get("toolName")), []).append(step)
    return found


def _outcome(step: Step) -> JsonObject:
    payload = step.payload
    return {"error": payload["error"]} if "error" in payload else {"result": payload.get("result")}


class BranchSession(BuiltInRerunSession):
    """A rerun session whose child starts with the parent's steps before the branch point, changed."""

    mode: ClassVar[Mode] = "rerun"

    def __init__(
        self,
        incident: Cassette,
        start: Start,
        output: Path,
        agent: dict[str, Any],
        *,
        label: str = "branch",
        hint: JsonObject | None = None,
    ) -> None:
        super().__init__(incident, output, agent)
        now = now_ms()
        index = start.edit.step
        self.cassette = Cassette(
            id=f"{incident.id}-{label}-{index}-{now}",
            created_at=now,
            parent_id=incident.id,
            forked_from_step_id=incident.steps[index].id,
            api=incident.api,
            agent=agent,
            edit=hint,
        )
        self.recorder.cassette = self.cassette
        for step_type, payload, timestamp in start.seed:
            self.cassette.append(step_type, payload, timestamp)
        if start.resume.output is not None:  # an edited output: its calls wait for their answers
            self.recorder.took_output(start.resume.output)


def _book(
    reader: Incident,
    index: int,
    stubs: dict[str, Any],
    fallback: Sequence[RecordedResult],
    match: ToolMatch = "arguments",
) -> ToolBook:
    """The incident's results, those after step ``index`` first (each once), then ``fallback`` (a good
    run's), then the stubs."""
    after: list[RecordedResult] = [r for r in reader.results if r.step > index]
    before = [r for r in reader.results if r.step <= index]
    recorded = [*after, *before, *fallback]
    return ToolBook(
        recorded,
        match=match,
        stubs=stubs,
        unanswered=reader.unanswered,
        stubbable=reader.offered_tools(),
    )


@dataclass
class Continued:
    """A child continued from an edit, its session still to finish (``finish``): how its run ended."""

    session: BranchSession
    start: Start
    seeded: int  # the child's steps taken from the parent (its own start after them)
    run: AgentRun
    book: ToolBook
    stopped: RunStopped | None


def continue_edit(
    incident: Cassette,
    reader: Incident,
    edit: Edit,
    *,
    output: Path,
    plan: AgentPlan,
    client: ModelClient,
    stubs: dict[str, Any],
    match: ToolMatch = "arguments",
    before_call: Callable[[Cassette, int, int], None] | None = None,
    fallback: Sequence[RecordedResult] = (),
    label: str = "branch",
    hint: str | None = None,
    progress: Callable[[JsonObject], None] | None = None,
) -> Continued:
    """Copy the parent up to the edit, change it, and let the built-in agent run on to its end; the
    child written to ``output``. ``before_call(child, seeded, n)`` runs before each model call, and may
    stop the run (RunStopped). ``hint``: who asked, recorded as the child's ``edit`` field;
    ``progress`` hears each model call and tool answer (the workbench's job page)."""
    start = start_of(incident, reader, edit)
    agent: dict[str, Any] = {
        "kind": "built-in",
        "provider": plan.api,
        "model": plan.model,
        "toolMatch": match,
    }
    turn = start.resume.turn
    # Where a replay of the child takes it up: its first own request, at model call ``turn``.
    agent["branch"] = {"from": edit.step, "turn": turn, "seeded": len(start.seed)}
    mark = None if hint is None else start.edit.hint(hint)
    session = BranchSession(incident, start, output, agent, label=label, hint=mark)
    session.ids.start = highest_call_index(session.cassette.steps) + 1
    book = _book(reader, edit.step, stubs, fallback, match)
    seeded = len(session.cassette.steps)

    def check(call: int) -> None:
        if before_call is not None:
            before_call(session.cassette, seeded, call)

    run, stopped = drive_session(session, start.incident, plan, book, client, check, progress, start.resume)
    return Continued(session, start, seeded, run, book, stopped)


@dataclass(frozen=True)
class Branch:
    """One branch's child on disk, and how its run ended (None: it completed)."""

    point: BranchPoint
    child: Path
    stopped: str | None  # the run_failed reason, e.g. unrecorded_tool_call, model_error, max_cost
    seeded: int  # the child's steps taken from the incident (its own start after them)
    tool: str | None = None  # unrecorded_tool_call: the tool of the call nothing answered


def run_branch(
    incident: Cassette,
    reader: Incident,
    point: BranchPoint,
    *,
    output: Path,
    plan: AgentPlan,
    client: ModelClient,
    stubs: dict[str, Any],
    before_call: Callable[[Cassette, int], None] | None = None,
    fallback: Sequence[RecordedResult] = (),
) -> Branch:
    """Run one branch to its end with the built-in agent; its child written to ``output``.
    ``before_call(child, n)`` runs before each model call, and may stop the branch (RunStopped)."""

    def check(child: Cassette, _seeded: int, call: int) -> None:
        if before_call is not None:
            before_call(child, call)

    done = continue_edit(
        incident, reader, point.edit(), output=output, plan=plan, client=client, stubs=stubs,
        before_call=check, fallback=fallback,
    )  # fmt: skip
    done.session.finish(done.stopped)
    stopped = done.stopped
    if stopped is None:
        return Branch(point, output, None, done.seeded)
    tool = stopped.details.get("toolName")
    return Branch(point, output, stopped.reason, done.seeded, tool if isinstance(tool, str) else None)
