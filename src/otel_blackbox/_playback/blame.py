"""``blame``: which step made the run fail, answered by reruns rather than by a guess.

For a decision point (a ``model_output`` of the incident) a branch keeps the steps before it and
lets the model answer live from there, every tool answered from the recording (branch.py); for a
tool result with a correction (from a good run, ``--good``, or a ``--stub``) a branch puts the
correction in its place and lets the model go on. With a program (``blame -- CMD``) each branch is
the program run again from the point instead (program_branch.py), so its own checks run. Each
branch's child is judged by the contract given, else by ``diff``'s verdict (a fixed failure is a
success); ``samples`` branches a point give it a success rate. An incident that failed in its
program after its answer is refused without a contract or the program: nothing else can judge it.

The decisive step is the last decision point from which the run can still succeed when every later
one cannot; when no decision can succeed, the first tool result whose correction makes it succeed.
The search bisects over the decision points (the last first, then the first, then halves: a point
is measured once), so it spends about 2 + log2(points) points, not one a point; it assumes that a
point after a point that cannot succeed cannot either. ``max_branches`` and ``max_cost`` stop it
with what it found.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from otel_blackbox._cassette.diff.contract import ContractCheck, find_contract
from otel_blackbox._cassette.diff.outcome import answer_before_failure, diff_outcome, run_failure
from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.model import Cassette, Step
from otel_blackbox._cassette.trusted import checked_cassette
from otel_blackbox._cost.cassettes import cassette_cost
from otel_blackbox._cost.prices import total_usd
from otel_blackbox._playback.agent.branch import (
    Branch,
    BranchPoint,
    corrections_from,
    decision_points,
    run_branch,
    tool_points,
)
from otel_blackbox._playback.agent.incident import Incident, RecordedResult, recorded_results
from otel_blackbox._playback.agent.loop import AgentPlan
from otel_blackbox._playback.agent.run import MIN_TURNS, BuiltInRerun, prepare_rerun
from otel_blackbox._playback.agent.sdk import make_client
from otel_blackbox._playback.budget import MAX_COST
from otel_blackbox._playback.program_branch import run_program_branch
from otel_blackbox._playback.record import RunStopped
from otel_blackbox._render.cassette_text import describe_step
from otel_blackbox._render.hints import stub_hint, stub_options, suggest
from otel_blackbox._render.text import safe
from otel_blackbox._types import JsonObject
from otel_blackbox.errors import BlackboxError

__all__ = ["BlamePlan", "BlameReport", "PointResult", "blame"]

DEFAULT_SAMPLES = 3


@dataclass(frozen=True)
class BlamePlan:
    """What ``blame`` is asked: the folder the children go to, the model (None: the incident's),
    the stubs, a good run, a contract, samples a point, and the limits of the search."""

    output: Path  # the folder the children go to
    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    stubs: dict[str, Any] = field(default_factory=dict)
    good: Path | None = None
    contract: Path | None = None
    samples: int = DEFAULT_SAMPLES
    max_cost: Decimal | None = None
    max_branches: int | None = None
    program: tuple[str, ...] = ()  # the program each branch runs (blame -- CMD); empty: the built-in agent
    stub_tools: bool = False  # a program's plain-Python tools answered from the recording too
    allow_unverified: bool = False  # an incident or good run that fails verify's hash_chain: go on


@dataclass
class PointResult:
    """What the branches from one point did."""

    point: BranchPoint
    branches: list[Branch] = field(default_factory=list)
    successes: int = 0
    unanswerable: int = 0
    model_calls: int = 0
    cost_usd: Decimal | None = None

    @property
    def can_succeed(self) -> bool:
        return self.successes > 0


@dataclass
class BlameReport:
    incident: Cassette
    failure: str
    decision_count: int
    measured: list[PointResult]  # in the order they were measured
    decisive: BranchPoint | None = None
    reason: str = ""
    stopped: str | None = None  # why the search ended early (--max-branches, --max-cost)
    children: Path = Path()
    program: tuple[str, ...] = ()  # the program the branches ran (blame -- CMD), which replays them

    @property
    def branch_count(self) -> int:
        return sum(len(r.branches) for r in self.measured)

    @property
    def model_calls(self) -> int:
        return sum(r.model_calls for r in self.measured)

    @property
    def cost_usd(self) -> Decimal | None:
        """What every branch's own model calls cost (None: no call had a price)."""
        known = [r.cost_usd for r in self.measured if r.cost_usd is not None]
        return sum(known, Decimal(0)) if known else None

    def result_of(self, point: BranchPoint) -> PointResult | None:
        return next((r for r in self.measured if r.point == point), None)

    def instead(self) -> Step | None:
        """What a successful branch from the decisive point did there: its first model output."""
        result = None if self.decisive is None else self.result_of(self.decisive)
        for branch in [] if result is None else result.branches:
            child = load_cassette(branch.child)
            if branch.stopped is None:
                return next((s for s in child.steps[branch.seeded :] if s.type == "model_output"), None)
        return None

    def to_json(self) -> JsonObject:
        decisive = None
        if self.decisive is not None:
            step = self.incident.steps[self.decisive.index]
            decisive = {"index": step.index, "type": step.type, "description": describe_step(step, 300)}
            if (instead := self.instead()) is not None:
                decisive["instead"] = describe_step(instead, 300)
        return {
            "incident": self.incident.id,
            "failure": self.failure,
            "decisive": decisive,
            "reason": self.reason or None,
            "stopped": self.stopped,
            "decisionPoints": self.decision_count,
            "branchCount": self.branch_count,
            "modelCalls": self.model_calls,
            "branches": [
                {
                    "from_index": r.point.index,
                    "type": r.point.type,
                    "intervention": r.point.intervention(),
                    "samples": len(r.branches),
                    "successes": r.successes,
                    "unanswerable": r.unanswerable,
                    "cost_usd": None if r.cost_usd is None else float(r.cost_usd),
                    "children": [str(b.child) for b in r.branches],
                }
                for r in self.measured
            ],
            "cost_usd": None if self.cost_usd is None else float(self.cost_usd),
            "children": str(self.children),
        }


class _Exhausted(Exception):
    """--max-branches or --max-cost reached: the search ends with what it found."""


class _Search:
    def __init__(
        self,
        incident_path: Path,
        incident: Cassette,
        reader: Incident,
        plan: BlamePlan,
        agent: AgentPlan,
        judge: Callable[[Cassette], bool],
        say: Callable[[str], None],
        fallback: list[RecordedResult],
    ) -> None:
        self.incident, self.reader, self.plan, self.agent = incident, reader, plan, agent
        self.incident_path = incident_path  # what a program branch reruns
        self.fallback = fallback  # a good run's results, for the calls the incident has none of
        self.judge, self.say = judge, say
        self.client = None if plan.program else make_client(agent.api, base_url=plan.base_url)
        self.measured: dict[int, PointResult] = {}
        self.order: list[PointResult] = []
        self.spent = Decimal(0)

    def close(self) -> None:
        if self.client is not None:
            self.client.close()

    def measure(self, point: BranchPoint) -> PointResult:
        """``samples`` branches from the point (once: a point measured before is not measured again)."""
        key = point.index
        if key in self.measured:
            return self.measured[key]
        result = PointResult(point)
        for sample in range(self.plan.samples):
            if self.plan.max_cost is not None and self.spent >= self.plan.max_cost:
                raise _Exhausted(f"--max-cost ${self.plan.max_cost} reached")
            if (
                self.plan.max_branches is not None
                and sum(len(r.branches) for r in self.order) >= self.plan.max_branches
            ):
                raise _Exhausted(f"--max-branches {self.plan.max_branches} reached")
            if sample == 0:  # measured once it has a branch: a point stopped before one is not measured
                self.measured[key] = result
                self.order.append(result)
            self._branch(result, sample)
        return result

    def _branch(self, result: PointResult, sample: int) -> None:
        point = result.point
        kind = "d" if point.correction is None else "t"
        output = self.plan.output / f"branch-{kind}{point.index:04d}-{sample + 1}.json"
        limit = self.plan.max_cost

        seeded: list[int] = []  # the child's length at its first call: the incident's steps before it

        def before_call(child: Cassette, call: int) -> None:
            seeded[:] = seeded or [len(child.steps)]
            if limit is not None and self.spent + (_new_cost(child, seeded[0]) or 0) >= limit:
                raise RunStopped(MAX_COST, f"[blackbox] --max-cost ${limit} reached before model call {call}")

        if self.plan.program:
            left = None if limit is None else limit - self.spent
            branch = run_program_branch(
                self.incident_path, self.incident, point, output=output, program=self.plan.program,
                model=self.plan.model, max_cost=left, stub_tools=self.plan.stub_tools,
            )  # fmt: skip
        else:
            assert self.client is not None
            branch = run_branch(
                self.incident, self.reader, point, output=output, plan=self.agent, client=self.client,
                stubs=self.plan.stubs, before_call=before_call, fallback=self.fallback,
            )  # fmt: skip
        child = load_cassette(branch.child)
        cost = _new_cost(child, branch.seeded)
        self.spent += cost or Decimal(0)
        result.branches.append(branch)
        result.model_calls += sum(1 for s in child.steps[branch.seeded :] if s.type == "model_output")
        if cost is not None:
            result.cost_usd = (result.cost_usd or Decimal(0)) + cost
        if branch.stopped == "unrecorded_tool_call":
            result.unanswerable += 1
            verdict = "unanswerable"
        elif self.judge(child):
            result.successes += 1
            verdict = "succeeded"
        else:
            verdict = f"failed ({branch.stopped})" if branch.stopped else "failed"
        which = f"{sample + 1}/{self.plan.samples}"
        self.say(f"[blackbox] branch from step {point.index} ({point.type}) {which}: {verdict}")
        if branch.stopped == MAX_COST:
            raise _Exhausted(f"--max-cost ${limit} reached")


def _new_cost(child: Cassette, start: int) -> Decimal | None:
    """What a branch's own model calls cost (not the incident's, copied before the point)."""
    return total_usd([c.price for c in cassette_cost(child).calls if c.step >= start])


def blame(incident_path: Path, plan: BlamePlan, say: Callable[[str], None] | None = None) -> BlameReport:
    """The decisive step of the failed incident at ``incident_path``, found by branching from its
    steps with the built-in agent (the model live, every tool answered from the recording) and
    judging each branch's child: a ``BlameReport`` (``decisive`` None: no step found, ``reason``
    says why; ``to_json()`` as ``blame --format json``). ``say`` hears a line per branch (default:
    stderr). BlackboxError before any model call for bad input: an incident that did not fail, no
    model step, a good run of another task, a contract that does not parse, a missing SDK or key.

        report = otel_blackbox.blame(Path("incident.json"), BlamePlan(Path("branches"), model="gpt-4.1"))
        report.decisive  # BranchPoint(index=7, type="model_output", ...)
    """
    tell = say or (lambda line: print(safe(line), file=sys.stderr))
    rerun = BuiltInRerun(
        output=plan.output, provider=plan.provider, model=plan.model, base_url=plan.base_url,
        stubs=plan.stubs, max_cost=plan.max_cost, allow_unverified=plan.allow_unverified,
    )  # fmt: skip
    # Setup errors: exit 2, before any call.
    incident, reader, api, model = prepare_rerun(incident_path, rerun, program=bool(plan.program))
    failure = run_failure(incident)
    check = find_contract(incident_path, plan.contract) if plan.contract is not None else None
    if check is not None:
        check.run(incident)
        if check.passed:
            raise BlackboxError(f"{incident_path}: the incident passes the contract: nothing to blame")
    elif failure is None:
        raise BlackboxError(f"{incident_path}: the incident did not fail: nothing to blame")
    elif not plan.program and answer_before_failure(incident) is not None:
        agent_only = [
            o for o, given in (("--provider", plan.provider), ("--base-url", plan.base_url)) if given
        ]
        without = f", without {' and '.join(agent_only)}" if agent_only else ""  # blame -- CMD refuses them
        raise BlackboxError(
            f"{incident_path}: the incident failed in its program after its answer ({failure.label}), "
            "which a branch without the program cannot check: give a contract "
            f"({suggest('--contract', 'C.json')}) or the program ({suggest('--', 'CMD')}{without})"
        )
    decisions = decision_points(incident)
    if not decisions:
        raise BlackboxError(f"{incident_path}: the cassette has no model step to branch from")
    good = None if plan.good is None else checked_cassette(plan.good, allow_unverified=plan.allow_unverified)
    tools = tool_points(incident, corrections_from(incident, good, plan.stubs))
    plan.output.mkdir(parents=True, exist_ok=True)
    max_turns = max(MIN_TURNS, 2 * len(reader.model_inputs))
    agent = AgentPlan(api, model, bool(reader.stream), native=reader.api == api, max_turns=max_turns)
    judge = _judge(incident, check)
    report = BlameReport(
        incident,
        failure.label if failure else "the contract failed",
        len(decisions),
        [],
        children=plan.output,
        program=plan.program,
    )
    fallback = recorded_results(good) if good is not None else []
    search = _Search(incident_path, incident, reader, plan, agent, judge, tell, fallback)
    try:
        _bisect(search, decisions, tools, report)
    except _Exhausted as exc:
        report.stopped = str(exc)
        report.reason = report.reason or f"the search stopped ({exc}) before a step was found"
    finally:
        search.close()
        report.measured = list(search.order)
    return report


def _judge(incident: Cassette, check: ContractCheck | None) -> Callable[[Cassette], bool]:
    def judge(child: Cassette) -> bool:
        if check is not None:
            check.run(child)
            return check.passed
        return diff_outcome(incident, child).fixed

    return judge


def _bisect(
    search: _Search, decisions: list[BranchPoint], tools: list[BranchPoint], report: BlameReport
) -> None:
    last = search.measure(decisions[-1])
    if last.can_succeed:
        report.decisive = decisions[-1]
        return
    first = search.measure(decisions[0])
    if first.can_succeed:
        lo, hi = 0, len(decisions) - 1  # lo can succeed, hi cannot
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if search.measure(decisions[mid]).can_succeed:
                lo = mid
            else:
                hi = mid
        report.decisive = decisions[lo]
        return
    for point in tools:
        if search.measure(point).can_succeed:
            report.decisive = point
            return
    results = search.order
    unanswered = [b.tool for r in results for b in r.branches if b.tool is not None]
    stubs = stub_hint(unanswered, search.reader.offered_tools())
    stubs = f" ({stubs})" if stubs else ""
    if results and all(r.unanswerable == len(r.branches) for r in results):
        report.reason = f"every branch was unanswerable: its tool calls have no recorded result{stubs}"
    elif not tools:
        report.reason = (
            "no branch from a decision succeeded, and no tool result had a correction to try"
            + _corrections_hint(search)
        )
    else:
        report.reason = "no branch succeeded, from a decision or from a corrected tool result"
    unanswerable = sum(r.unanswerable for r in results)
    if unanswerable and not report.reason.startswith("every branch"):
        total = sum(len(r.branches) for r in results)
        report.reason += f"; {unanswerable} of {total} branches were unanswerable{stubs}"


def _corrections_hint(search: _Search) -> str:
    """What would give a tool result a correction: a good run, or a stub of a tool whose result a
    model call follows (the only results a branch can correct)."""
    steps = search.incident.steps
    last_request = max((s.index for s in steps if s.type == "model_input"), default=-1)
    names = [
        str(s.payload.get("toolName")) for s in steps if s.type == "tool_result" and s.index < last_request
    ]
    if not names:
        return " (the incident has no tool result that a model call follows: nothing to correct)"
    good = (
        f"a successful run of the same task ({suggest('--good', 'GOOD.json')}) or "
        if search.plan.good is None
        else ""
    )
    return f" (give {good}a stub to try as its tool's results, e.g. {suggest(*stub_options(names))})"
