"""``rerun INCIDENT -o CHILD`` and ``replay CHILD`` with no program: the built-in agent under a session.

A rerun records the child as ``record`` records a program (``BuiltInRerunSession``: the model steps
from the wire, masking, the credential-leak refusal), with the incident as its parent and the
``agent`` hint saying what ran it. Its summary line says what the child's model calls cost; with
``max_cost`` (budget.py) a model with no price is refused before anything runs, and the run stops
``max_cost`` before the call its calls so far can no longer afford. A replay serves a built-in
agent's child back to the same agent offline (a ``ReplaySession``), its tool calls answered from the
child's own results, so the child is itself reproducible. Either way nothing of the incident's
program or tools runs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, ClassVar

from otel_blackbox._cassette.diff.outcome import answer_before_failure
from otel_blackbox._cassette.model import Cassette, highest_call_index, terminal_outcome
from otel_blackbox._cassette.trusted import checked_cassette
from otel_blackbox._cost.cassettes import cassette_cost
from otel_blackbox._playback.agent.incident import Incident, read_incident
from otel_blackbox._playback.agent.loop import AgentPlan, AgentRun, Resume, drive
from otel_blackbox._playback.agent.sdk import ModelClient, make_client
from otel_blackbox._playback.agent.tools import ToolBook, ToolMatch
from otel_blackbox._playback.budget import MAX_COST, Budget, unpriced
from otel_blackbox._playback.interceptor import Mode, now_ms
from otel_blackbox._playback.launch import PLACEHOLDER_KEYS
from otel_blackbox._playback.record import RecordSession, RunStopped
from otel_blackbox._playback.replay import ReplaySession, load_recording
from otel_blackbox._render.hints import suggest
from otel_blackbox._render.text import safe
from otel_blackbox._render.words import counted
from otel_blackbox._types import JsonObject
from otel_blackbox._wire.apis import API_NAMES
from otel_blackbox._wire.protocol import Provider
from otel_blackbox._wire.registry import PROVIDERS
from otel_blackbox.errors import BlackboxError, ReplayDivergence, ResultKept

__all__ = [
    "BuiltInRerun",
    "BuiltInRerunSession",
    "drive_session",
    "finish_child",
    "prepare_rerun",
    "replay_built_in",
    "rerun_built_in",
    "say",
    "say_dropped",
]

MIN_TURNS = 10


@dataclass(frozen=True)
class BuiltInRerun:
    """What ``rerun`` without ``-- CMD`` was asked (None: the incident's own)."""

    output: Path
    provider: str | None = None
    model: str | None = None
    stream: bool | None = None
    base_url: str | None = None
    tool_match: ToolMatch = "arguments"
    stubs: dict[str, Any] = field(default_factory=dict)
    max_turns: int | None = None
    max_cost: Decimal | None = None  # the budget of the model calls, in US dollars
    allow_unverified: bool = False  # an incident that fails verify's hash_chain: go on (the caller warns)
    # A call no recording answers suggests `--stub`: not where the caller takes no --stub (eval run-all's
    # stubs come from the contract's rerun block).
    stub_hints: bool = True


class BuiltInRerunSession(RecordSession):
    """A record session whose run is the built-in agent's rerun of ``incident``."""

    mode: ClassVar[Mode] = "rerun"

    def __init__(self, incident: Cassette, output: Path, agent: dict[str, Any]) -> None:
        super().__init__(output)
        now = now_ms()
        self.cassette = Cassette(
            id=f"{incident.id}-rerun-{now}", created_at=now, parent_id=incident.id, agent=agent
        )
        self.recorder.cassette = self.cassette

    def _started(self) -> None:
        return None  # no program, so no TOOL spans: the agent hands the recorder each tool's outcome


def choose_api(incident: Incident, provider: str | None, model: str | None) -> str:
    """--provider; else the API the incident was recorded on; else the model name's family."""
    if provider is not None:
        if provider not in API_NAMES:
            raise BlackboxError(f"--provider {provider!r}: expected one of {', '.join(API_NAMES)}")
        return provider
    found = incident.api if incident.api in API_NAMES else incident.family_api(model)
    if found is None:
        shown = model or incident.model
        choices = ", ".join(suggest("--provider", name) for name in API_NAMES)
        raise BlackboxError(
            f"{incident.source}: neither the cassette nor the model name "
            f"({shown!r}) tells which API to rerun on: give --provider ({choices})"
            if shown
            else f"{incident.source}: the cassette does not tell which API it was recorded on: give "
            f"--provider ({choices})"
        )
    return found


def translation(api: str) -> Provider:
    return next(p for p in PROVIDERS if p.name == api)


def prepare_rerun(
    incident_path: Path, plan: BuiltInRerun, *, program: bool = False
) -> tuple[Cassette, Incident, str, str]:
    """The incident read and the plan checked against it (its stubs, the API, the model, the budget's
    price), with the API and model chosen: every setup error but the client's (an SDK, a key, the
    base URL), so that a caller with many incidents can check them all before the first call.
    ``program``: the program runs the branches (``blame -- CMD``), its requests naming their own API
    and model: neither is asked for ("" when the incident does not tell)."""
    cassette = checked_cassette(incident_path, allow_unverified=plan.allow_unverified)
    incident = read_incident(cassette, str(incident_path))
    offered = incident.offered_tools()
    for name in plan.stubs:  # a typo would otherwise stub nothing, silently
        if name not in offered:
            known = ", ".join(sorted(offered)) or "none"
            raise BlackboxError(
                f"--stub {name}: the incident never offered a tool of that name (it offered: {known})"
            )
    model = plan.model or incident.model
    if program:  # blame -- CMD refuses --provider: never ask for it
        api = (incident.api if incident.api in API_NAMES else incident.family_api(model)) or ""
    else:
        api = choose_api(incident, plan.provider, plan.model)
    if not model and not program:
        raise BlackboxError(
            f"{incident_path}: the incident names no model: give {suggest('--model', 'NAME')}"
        )
    if plan.max_cost is not None and model:
        refused = unpriced(model, api or None)
        if refused is not None:  # before any call: a setup error, exit 2
            raise BlackboxError(f"--max-cost: {refused}")
    return cassette, incident, api, model or ""


def rerun_built_in(
    incident_path: Path, plan: BuiltInRerun, progress: Callable[[JsonObject], None] | None = None
) -> int:
    """Rerun the incident with the built-in agent; 0 when the child completed, else 1. ``progress``
    hears each model call and tool answer as it happens (``loop.drive``'s events)."""
    cassette, incident, api, model = prepare_rerun(incident_path, plan)
    budget = Budget(plan.max_cost) if plan.max_cost is not None else None
    stream = plan.stream if plan.stream is not None else bool(incident.stream)
    max_turns = plan.max_turns or max(MIN_TURNS, 2 * len(incident.model_inputs))
    client = make_client(api, base_url=plan.base_url)
    agent = {"kind": "built-in", "provider": api, "model": model, "toolMatch": plan.tool_match}
    session = BuiltInRerunSession(cassette, plan.output, agent)
    session.ids.start = incident.next_call_index()  # new calls are numbered after the history's
    book = ToolBook(
        incident.results, match=plan.tool_match, stubs=plan.stubs, unanswered=incident.unanswered,
        stubbable=incident.offered_tools() if plan.stub_hints else None,
    )  # fmt: skip
    agent_plan = AgentPlan(api, model, stream, native=incident.api == api, max_turns=max_turns)

    def before_call(call: int) -> None:
        if budget is not None:
            budget.before_call(session.cassette, model=model, api=api, call=call)

    try:
        run, stopped = drive_session(session, incident, agent_plan, book, client, before_call, progress)
    except KeyboardInterrupt:  # the child is written, ending run_failed / interrupted
        say(f"[blackbox] interrupted: {plan.output} holds the rerun so far")
        return 130
    finally:
        client.close()
    say_dropped(api, run)
    head = f"[blackbox] rerun of {incident.id} by the built-in agent on {api} (model {model})"
    calls = counted(run.turns, "model call")
    kept = finish_child(session, stopped, plan.output, head=head, calls=calls, book=book,
                        source="the incident", priced=session.cassette)  # fmt: skip
    if stopped is None and answer_before_failure(cassette) is not None:  # what its success cannot show
        contract = suggest(
            "otel-blackbox", "diff", str(incident_path), str(plan.output), "--contract", "FILE"
        )
        program = suggest("otel-blackbox", "rerun", str(incident_path), "-o", "FILE", "--", "CMD")
        say(
            "[blackbox] the incident failed in its program after its answer, which the built-in "
            f"agent does not run: a contract ({contract}) or the program ({program}) can tell "
            "whether this child fixed it"
        )
    if kept is not None:
        raise kept
    return 0 if stopped is None else 1


def replay_built_in(child_path: Path, *, allow_unverified: bool = False) -> int:
    """Replay a built-in agent's run offline with the same agent: 0 when it reproduced a completed run,
    1 when it reproduced a failed one; ReplayDivergence when it did not reproduce it."""
    cassette = load_recording(child_path, allow_unverified=allow_unverified)
    agent = cassette.agent
    if not isinstance(agent, dict) or agent.get("kind") != "built-in":
        program = suggest("otel-blackbox", "replay", str(child_path), "--", "CMD")
        raise BlackboxError(f"{child_path}: not a run of the built-in agent: give the program ({program})")
    incident = read_incident(cassette, str(child_path))
    api, model = str(agent.get("provider")), str(agent.get("model"))
    if api not in API_NAMES:
        raise BlackboxError(f"{child_path}: its agent hint names an unknown provider {api!r}")
    match: ToolMatch = "name" if agent.get("toolMatch") == "name" else "arguments"
    for name, value in PLACEHOLDER_KEYS.items():  # offline: the SDKs need a key to start
        os.environ.setdefault(name, value)
    if not os.environ.get("GOOGLE_API_KEY"):
        os.environ.setdefault("GEMINI_API_KEY", "blackbox-placeholder")
    client = make_client(api, base_url=None)
    branch = agent.get("branch") if isinstance(agent.get("branch"), dict) else None
    resume = _branch_resume(cassette, incident, branch) if branch is not None else None
    seeded = int(branch["seeded"]) if branch is not None else 0
    session = ReplaySession(child_path, after=seeded, allow_unverified=allow_unverified)
    session.ids.start = (
        highest_call_index(cassette.steps[:seeded]) + 1 if branch else incident.next_call_index()
    )
    turns = max(MIN_TURNS, 2 * len(incident.model_inputs))
    agent_plan = AgentPlan(api, model, bool(incident.stream), native=True, max_turns=turns)
    book = ToolBook([r for r in incident.results if r.step >= seeded], match=match)
    player = session.player
    if resume is not None and resume.output is not None and resume.output.get("type") == "final_answer":
        player.final_answer = str(resume.output.get("text", ""))  # a fork's edited answer: no call serves it
    budget_stop = terminal_outcome(cassette).failure_reason == MAX_COST

    def before_call(call: int) -> None:
        """A run its budget stopped stops again where the recording did: after its last model call."""
        if budget_stop and not player.models_left:
            raise RunStopped(MAX_COST, f"[blackbox] stopped before model call {call}, as the recording did")

    try:
        run, stopped = drive_session(session, incident, agent_plan, book, client, before_call, None, resume)
    finally:
        client.close()
    if session.error is None and stopped is not None:
        session.finish()
        recorded = terminal_outcome(cassette)
        if recorded.status != "error" or recorded.failure_reason != stopped.reason:
            raise ReplayDivergence(f"[blackbox] the replay stopped where the recording did not: {stopped}")
        say(f"[blackbox] replayed {child_path}: it stopped as recorded ({stopped.reason})")
        return 1
    session.finish(stopped)
    say(f"[blackbox] replayed {child_path}: {counted(run.turns, 'model call')}, as recorded")
    return 0


def _branch_resume(cassette: Cassette, incident: Incident, branch: dict[str, Any]) -> Resume:
    """A blame branch's child replays from its own first request (the incident's steps before it are
    the branch's prefix, not its run): that request's messages, at its model call."""
    seeded, turn = int(branch["seeded"]), int(branch["turn"])
    first = cassette.steps[seeded] if seeded < len(cassette.steps) else None
    edited = cassette.steps[seeded - 1] if 0 < seeded <= len(cassette.steps) else None
    if (
        (first is None or first.type != "model_input")
        and edited is not None
        and edited.type == "model_output"
    ):
        # A fork's edited model output ends its prefix: acted on again, with no model call.
        request = next(s for s in reversed(cassette.steps[:seeded]) if s.type == "model_input")
        messages = [dict(m) for m in request.payload.get("messages", [])]
        return Resume(messages, turn, incident.user_turns_after(turn), output=edited.payload)
    if first is None or first.type != "model_input":
        raise BlackboxError(f"{incident.source}: the branch has no request of its own to replay from")
    messages = [dict(m) for m in first.payload.get("messages", [])]
    return Resume(messages, turn, incident.user_turns_after(turn))


def finish_child(
    session: RecordSession,
    stopped: RunStopped | None,
    output: Path,
    *,
    head: str,
    calls: str,
    book: ToolBook,
    source: str,
    priced: Cassette,
) -> ResultKept | None:
    """Write the child of a built-in run (``rerun``'s, ``fork``'s) and say how it ended: what it
    called, answered from ``source`` or stubbed, where it is and what ``priced`` cost. A child the
    write could not put at ``output`` is kept elsewhere: that ResultKept comes back, for the caller
    to raise once it has said the rest (paid for: the summary still names it)."""
    kept: ResultKept | None = None
    try:
        session.finish(stopped)
    except ResultKept as exc:
        kept = exc
    tools = f"{counted(book.answered, 'tool result')} from {source}"
    stubs = f", {counted(book.stubbed, 'stub')}" if book.stubbed else ""
    cost = f"(cost {cassette_cost(priced).describe()})"
    written = output if kept is None else kept.kept
    if stopped is not None:
        say(str(stopped))
        say(f"{head}: failed ({stopped.reason}) after {calls}, {tools}{stubs} -> {written} {cost}")
    else:
        say(f"{head}: completed in {calls}, {tools}{stubs} -> {written} {cost}")
    return kept


def drive_session(
    session: RecordSession | ReplaySession,
    incident: Incident,
    plan: AgentPlan,
    book: ToolBook,
    client: ModelClient,
    before_call: Callable[[int], None] | None = None,
    observe: Callable[[JsonObject], None] | None = None,
    resume: Resume | None = None,
) -> tuple[AgentRun, RunStopped | None]:
    """The loop under the started session: what it did, and how it stopped short (None: it completed)."""
    if isinstance(session, ReplaySession):
        player = session.player
        last_output, answered = (lambda: player.last_output), (lambda _id, _outcome: None)
    else:
        recorder = session.recorder
        last_output, answered = (lambda: recorder.last_output), recorder.tool_answered
    session.start()
    run = AgentRun()
    try:
        drive(
            incident,
            plan,
            provider=translation(plan.api),
            client=client,
            book=book,
            last_output=last_output,
            answered=answered,
            run=run,
            before_call=before_call,
            observe=observe,
            resume=resume,
        )
    except RunStopped as stopped:
        if isinstance(session, RecordSession) and stopped.reason == "unrecorded_tool_call":
            session.recorder.end_tool_round()  # the child shows the call it stopped at
        return run, stopped
    except BaseException as exc:  # Ctrl-C: the child is still written, as interrupted
        session.finish(exc)
        raise
    return run, None


def say_dropped(api: str, run: AgentRun) -> None:
    if run.dropped:
        say(f"[blackbox] not sent to {api}, which has no equivalent: {', '.join(run.dropped)}")


def say(line: str) -> None:
    print(safe(line), file=sys.stderr)
