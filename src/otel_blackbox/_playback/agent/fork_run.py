"""``fork CASSETTE --at N <change> -o CHILD`` with no program: the parent copied up to step N, changed
there (edit.py), and continued by the built-in agent as ``rerun`` runs it (branch.py's
``continue_edit``, blame's machinery): any provider and model, every tool answered from the parent's
results or a ``--stub``, never executed, ``--max-cost`` counting the child's own model calls."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from otel_blackbox._cassette.model import Cassette
from otel_blackbox._playback.agent.branch import continue_edit
from otel_blackbox._playback.agent.edit import Edit, start_of
from otel_blackbox._playback.agent.loop import AgentPlan
from otel_blackbox._playback.agent.run import (
    MIN_TURNS,
    BuiltInRerun,
    finish_child,
    prepare_rerun,
    say,
    say_dropped,
)
from otel_blackbox._playback.agent.sdk import make_client
from otel_blackbox._playback.budget import Budget
from otel_blackbox._render.words import counted
from otel_blackbox._types import JsonObject

__all__ = ["fork_built_in", "own_part"]


def fork_built_in(
    parent_path: Path,
    edit: Edit,
    plan: BuiltInRerun,
    *,
    by: str = "command",
    progress: Callable[[JsonObject], None] | None = None,
) -> int:
    """Fork the parent at ``edit`` and continue with the built-in agent: 0 when the child completed,
    1 when it stopped short, 130 when interrupted. Every setup error (the edit that does not fit its
    step among them) is raised before any model call. ``by``: who asked (the child's ``edit.by``:
    command, workbench, mcp); ``progress`` hears each model call and tool answer."""
    parent, reader, api, model = prepare_rerun(parent_path, plan)
    start = start_of(parent, reader, edit)  # refused here, before the client starts
    budget = Budget(plan.max_cost) if plan.max_cost is not None else None
    stream = plan.stream if plan.stream is not None else bool(reader.stream)
    max_turns = plan.max_turns or max(MIN_TURNS, 2 * len(reader.model_inputs))
    agent_plan = AgentPlan(api, model, stream, native=reader.api == api, max_turns=max_turns)
    client = make_client(api, base_url=plan.base_url)

    def before_call(child: Cassette, seeded: int, call: int) -> None:
        if budget is not None:  # the child's own calls: the parent's, copied, were paid for already
            budget.before_call(own_part(child, seeded), model=model, api=api, call=call)

    try:
        done = continue_edit(
            parent, reader, edit, output=plan.output, plan=agent_plan, client=client, stubs=plan.stubs,
            match=plan.tool_match, before_call=before_call, label="fork", hint=by, progress=progress,
        )  # fmt: skip
    except KeyboardInterrupt:  # the child is written, ending run_failed / interrupted
        say(f"[blackbox] interrupted: {plan.output} holds the fork so far")
        return 130
    finally:
        client.close()
    say_dropped(api, done.run)
    head = (
        f"[blackbox] fork of {parent.id} at step {edit.step} ({start.edit.description}) by the built-in "
        f"agent on {api} (model {model})"
    )
    own = own_part(done.session.cassette, done.seeded)
    calls = counted(sum(1 for s in own.steps if s.type == "model_output"), "model call")
    kept = finish_child(done.session, done.stopped, plan.output, head=head, calls=calls, book=done.book,
                        source="the parent", priced=own)  # fmt: skip
    if kept is not None:
        raise kept
    return 0 if done.stopped is None else 1


def own_part(child: Cassette, seeded: int | None = None) -> Cassette:
    """The child's steps after those copied from its parent (``seeded``, else as its ``agent.branch``
    records them): what its own model calls cost."""
    if seeded is None:
        branch = child.agent.get("branch") if isinstance(child.agent, dict) else None
        seeded = int(branch.get("seeded", 0)) if isinstance(branch, dict) else 0
    return Cassette(id=child.id, created_at=child.created_at, steps=child.steps[seeded:], api=child.api)
