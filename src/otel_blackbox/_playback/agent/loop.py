"""The built-in agent's loop: a plain tool-calling conversation on one API's official SDK.

Each turn sends the conversation so far with the incident's system prompt, tools and params for that
turn (``Incident.settings_at``), written in the chosen API's shape (``Provider.wire_request``, the
messages written on an earlier turn kept: ``_wire/memo.py``, so turn 1,000 costs what turn 10 does), through
its SDK (``sdk.py``). The session the agent runs under sees the exchange and hands back the neutral
output: the recorder's in a rerun, the cassette's in a replay. A tool call is answered from the
incident (``tools.py``), never executed; a final answer ends the run, unless the incident's user spoke
again after it. A call nothing answers, the turn limit, a model error, or ``before_call`` (the
budget of ``--max-cost``) stops the run (``RunStopped``), which the recorder writes as the child's
``run_failed``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from otel_blackbox._cassette.model import tool_calls_of
from otel_blackbox._playback.agent.incident import Incident
from otel_blackbox._playback.agent.sdk import ModelClient
from otel_blackbox._playback.agent.tools import ToolBook, describe_call
from otel_blackbox._playback.record import RunStopped
from otel_blackbox._spans.messages import ToolCall
from otel_blackbox._types import JsonObject
from otel_blackbox._wire.memo import RequestMemo
from otel_blackbox._wire.protocol import Provider

__all__ = ["AgentPlan", "AgentRun", "Resume", "assistant_message", "drive"]


@dataclass(frozen=True)
class AgentPlan:
    api: str  # the --provider: one of _wire.apis.API_NAMES
    model: str
    stream: bool
    native: bool  # the incident was recorded on this same API: its own settings are sent as they are
    max_turns: int


@dataclass(frozen=True)
class Resume:
    """Where a branch takes the conversation up (blame, fork): the messages model call ``turn`` (from
    0) sends, and the user turns the incident adds after it. ``output``: that call's output is given
    (an edited model output, already in the child): it is acted on as if the call had returned it."""

    messages: list[JsonObject]
    turn: int
    user_turns: list[list[JsonObject]]
    output: JsonObject | None = None


@dataclass
class AgentRun:
    """What the loop did: its model turns, its answer, and what the API could not be sent."""

    turns: int = 0
    final_answer: str | None = None
    dropped: list[str] = field(default_factory=list)  # in first-seen order, each once


def drive(
    incident: Incident,
    plan: AgentPlan,
    *,
    provider: Provider,
    client: ModelClient,
    book: ToolBook,
    last_output: Callable[[], JsonObject | None],
    answered: Callable[[str, JsonObject], None],
    run: AgentRun,
    before_call: Callable[[int], None] | None = None,
    observe: Callable[[JsonObject], None] | None = None,
    resume: Resume | None = None,
) -> None:
    """Run the conversation to its end, keeping count in ``run``; RunStopped when it stops short (the
    reason says why). ``before_call(n)`` runs before model call n (from 1), and may stop the run.
    ``observe(event)`` hears each step as it happens (the workbench's progress): ``model_call``,
    ``model_output`` and ``tool_answer`` events. ``resume``: start at that model call instead of the
    first (``run.turns`` counts from it)."""
    tell = observe or (lambda _event: None)
    messages = incident.first_messages() if resume is None else [dict(m) for m in resume.messages]
    user_turns = list(incident.user_turns if resume is None else resume.user_turns)
    first = 0 if resume is None else resume.turn
    run.turns = max(run.turns, first)
    requests = RequestMemo(
        provider, native=plan.native
    )  # ``messages`` only grows: each turn writes its new ones
    given = None if resume is None else resume.output
    while True:
        if given is not None:  # an edited output: acted on with no model call
            output, given = given, None
            run.turns += 1
        else:
            output = _call(
                incident, plan, requests, client, messages, run, first, last_output, before_call, tell
            )
        messages.append(assistant_message(output))
        calls = tool_calls_of(output)
        text = output.get("text") if isinstance(output.get("text"), str) else None
        tools = [c.tool_name for c in calls]
        tell({"event": "model_output", "call": run.turns, "tools": tools, "text": text})
        if not calls:
            if user_turns:  # the incident's user spoke again after this answer
                messages.extend(user_turns.pop(0))
                continue
            run.final_answer = str(output.get("text", ""))
            return
        messages.append({"role": "user", "content": [_answer(call, book, answered, tell) for call in calls]})


def _call(
    incident: Incident,
    plan: AgentPlan,
    requests: RequestMemo,
    client: ModelClient,
    messages: list[JsonObject],
    run: AgentRun,
    first: int,
    last_output: Callable[[], JsonObject | None],
    before_call: Callable[[int], None] | None,
    tell: Callable[[JsonObject], None],
) -> JsonObject:
    """One model call of the conversation so far: its output; RunStopped when it is not made or fails."""
    if run.turns - first >= plan.max_turns:
        raise RunStopped(
            "max_turns",
            f"[blackbox] stopped after {run.turns} model turns (--max-turns {plan.max_turns})",
            maxTurns=plan.max_turns,
        )
    request = {**incident.settings_at(run.turns), "messages": messages, "model": plan.model}
    wire = requests.wire_request(request, stream=plan.stream)
    run.dropped.extend(d for d in wire.dropped if d not in run.dropped)
    if before_call is not None:
        before_call(run.turns + 1)
    tell({"event": "model_call", "call": run.turns + 1, "model": plan.model})
    before = last_output()
    try:
        client.send(wire.body, model=plan.model, stream=plan.stream)
    except Exception as exc:  # the SDK's error, after its own retries: the child records it
        raise RunStopped(
            "model_error", f"[blackbox] model call {run.turns + 1} failed: {type(exc).__name__}: {exc}"
        ) from exc
    output = last_output()
    if output is None or output is before:
        raise RunStopped("model_error", f"[blackbox] model call {run.turns + 1} returned no model output")
    run.turns += 1
    return output


def _answer(
    call: ToolCall,
    book: ToolBook,
    answered: Callable[[str, JsonObject], None],
    tell: Callable[[JsonObject], None],
) -> JsonObject:
    """The tool_result part of one call, from the incident or a stub; RunStopped when neither has it."""
    answer = book.answer(call.tool_name, call.tool_input)
    if answer is None:
        raise RunStopped(
            "unrecorded_tool_call",
            book.miss(call.tool_name, call.tool_input),
            toolName=call.tool_name,
            toolInput=call.tool_input,
            call=describe_call(call.tool_name, call.tool_input),
        )
    answered(call.tool_call_id, answer.outcome)
    source = "stub" if answer.outcome.get("stub") else "incident"
    tell({"event": "tool_answer", "tool": call.tool_name, "from": source, "error": "error" in answer.outcome})
    outcome = {k: v for k, v in answer.outcome.items() if k != "stub"}
    return {"type": "tool_result", "toolCallId": call.tool_call_id, "toolName": call.tool_name, **outcome}


def assistant_message(output: JsonObject) -> JsonObject:
    """The assistant turn a model output becomes when sent back, in the canonical part order:
    reasoning, hosted tools, text, refusal, tool uses (its text alone as a string)."""
    parts: list[JsonObject] = []
    for item in output.get("reasoning") or []:
        parts.append({"type": "reasoning", **item})
    for item in output.get("hostedTools") or []:
        parts.append({"type": "hosted_tool", **item})
    text = output.get("text")
    if isinstance(text, str) and (text or output.get("textSignature")):
        part: JsonObject = {"type": "text", "text": text}
        if isinstance(output.get("textSignature"), str):
            part["signature"] = output["textSignature"]
        parts.append(part)
    if isinstance(output.get("refusal"), str):
        parts.append({"type": "refusal", "refusal": output["refusal"]})
    raw_calls = output.get("calls") if output.get("type") == "tool_calls" else [output]
    for call, raw in zip(tool_calls_of(output), raw_calls or [], strict=False):
        use: JsonObject = {
            "type": "tool_use",
            "toolCallId": call.tool_call_id,
            "toolName": call.tool_name,
            "toolInput": call.tool_input,
        }
        if isinstance(raw, dict) and isinstance(raw.get("signature"), str):
            use["signature"] = raw["signature"]
        parts.append(use)
    if not parts:
        return {"role": "assistant", "content": ""}
    if len(parts) == 1 and parts[0]["type"] == "text" and "signature" not in parts[0]:
        return {"role": "assistant", "content": parts[0]["text"]}
    return {"role": "assistant", "content": parts}
