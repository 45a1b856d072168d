"""Which Task call started which of a Claude Code session's subagents, and where their spans go.

A subagent's conversation is placed under the TOOL span of the Task call (``Agent`` since 2.1.63)
that started it, so the span tree says which call ran which subagent; its root's ``metadata`` names
the call (``parent_tool_call_id``) beside its ``agent_id``. A call is found:

* by the subagent's ``agentId``, when the session names it: the result of the call
  (``toolUseResult.agentId``, or its text's ``agentId:`` line) or an ``agent_progress`` record;
* else (versions before 2.0 keep subagents in the session's file with no ``agentId``) by the
  call's ``input.prompt`` being the subagent's first user message, each call taken once, in the
  order the subagents started.

A subagent whose call has no result (the session was killed while it ran: the call has no TOOL
span), or whose call is not found, goes under the session's root span; its metadata still names the
call when it is known. A subagent's file imported without its session is a trace of its own.
"""

from __future__ import annotations

import json
from dataclasses import replace

from otel_blackbox._spans.transcripts.claude_code import TASK_TOOLS, Session
from otel_blackbox._spans.transcripts.conversation import Conversation, Keys, ToolCall
from otel_blackbox._spans.transcripts.otlp import root_ids, tool_span_ids

__all__ = ["place_subagents", "starting_calls"]


def _prompt(call: ToolCall) -> str | None:
    try:
        arguments = json.loads(call.arguments)
    except ValueError:
        return None
    prompt = arguments.get("prompt") if isinstance(arguments, dict) else None
    return prompt.strip() if isinstance(prompt, str) else None


def _first_prompt(side: Conversation) -> str | None:
    return next((t.text.strip() for t in side.turns if t.role == "user" and t.text), None)


def starting_calls(session: Session, sides: list[Conversation]) -> list[str | None]:
    """The id of the Task call of ``session``'s main conversation that started each of ``sides``
    (None when none is found): by agent id first, then by prompt."""
    if session.main is None:
        return [None] * len(sides)
    found: list[str | None] = []
    for side in sides:
        agent = side.metadata.get("agent_id")
        found.append(session.agent_calls.get(agent) if isinstance(agent, str) else None)
    # A call that names its subagent started no other: only the calls named by none are matched.
    named = set(session.agent_calls.values())
    taken = {call for call in found if call is not None}
    open_calls = [
        call
        for turn in session.main.turns
        if turn.role == "assistant" and not turn.context_only
        for call in turn.tool_calls
        if call.name in TASK_TOOLS and call.call_id and call.call_id not in named | taken
    ]
    # In the order the subagents started (a file's order is its agent id's, not the session's).
    unlinked = [n for n, call in enumerate(found) if call is None]
    unlinked.sort(key=lambda n: next((t.time_ns for t in sides[n].turns if t.time_ns), 0))
    for n in unlinked:
        prompt = _first_prompt(sides[n])
        match = next((c for c in open_calls if prompt is not None and _prompt(c) == prompt), None)
        if match is not None:
            open_calls.remove(match)
            found[n] = match.call_id
    return found


def place_subagents(
    session: Session, keys: Keys, sides: list[Conversation]
) -> list[tuple[Conversation, tuple[str, str] | None]]:
    """Each of ``sides`` (subagents of ``session``, whose documents are made with ``keys``), its
    metadata naming the call that started it, with the trace and span it goes under: the call's
    TOOL span, else the session's root; none (a trace of its own) when the session's main
    conversation is not here."""
    if session.main is None:
        return [(side, None) for side in sides]
    trace_id, root = root_ids(keys)
    tools = tool_span_ids(session.main, keys)
    placed: list[tuple[Conversation, tuple[str, str] | None]] = []
    for side, call in zip(sides, starting_calls(session, sides), strict=True):
        if call is None:
            placed.append((side, (trace_id, root)))
            continue
        linked = replace(side, metadata={**side.metadata, "parent_tool_call_id": call})
        placed.append((linked, (trace_id, tools.get(call, root))))
    return placed
