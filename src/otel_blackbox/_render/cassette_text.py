"""A cassette as a readable timeline (``otel-blackbox inspect``)."""

from __future__ import annotations

import json
from typing import Any

from otel_blackbox._cassette.diff.outcome import outcome_label
from otel_blackbox._cassette.model import Cassette, Step, terminal_outcome, tool_calls_of
from otel_blackbox._cassette.output import extras_of
from otel_blackbox._cost.cassettes import cassette_cost
from otel_blackbox._render.text import safe
from otel_blackbox._render.words import counted

__all__ = ["describe_step", "render_timeline"]


def _short(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    text = safe(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _content(content: Any, limit: int) -> str:
    """A message's content: text as is, tool parts as `→ name(input)` / `name → result`."""
    if not isinstance(content, list):
        return _short(content, limit)
    parts = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "tool_use":
            parts.append(f"→ {safe(part.get('toolName', '?'))}({_short(part.get('toolInput'), limit // 2)})")
        elif kind == "tool_result":
            outcome = f"error: {part['error']}" if "error" in part else part.get("result")
            parts.append(f"{safe(part.get('toolName', '?'))} → {_short(outcome, limit // 2)}")
        elif kind == "text":
            parts.append(_short(part.get("text", ""), limit // 2))
        else:
            parts.append(_short(part, limit // 2))
    return _short("; ".join(parts), limit)


def _extras_note(payload: dict[str, Any], limit: int) -> str:
    """What a model_output says besides its text and calls, in a few words."""
    try:
        extras = extras_of(payload)
    except ValueError as exc:
        return f"  (malformed: {_short(str(exc), limit)})"
    notes = [f"stopped: {safe(extras.stop_reason)}"] if extras.stop_reason else []
    if extras.refusal is not None:
        notes.append(f"refusal: {_short(extras.refusal, limit // 2)}")
    if extras.reasoning:
        notes.append(f"reasoning ×{len(extras.reasoning)}")
    if extras.hosted:
        notes.append("hosted: " + ", ".join(safe(h.tool_name) for h in extras.hosted))
    if extras.choices:
        notes.append(f"+{counted(len(extras.choices), 'more choice')}")
    return f"  ({'; '.join(notes)})" if notes else ""


def describe_step(step: Step, limit: int) -> str:
    payload = step.payload if isinstance(step.payload, dict) else {}
    if step.type == "model_input":
        messages = _list(payload.get("messages"))
        tools = _list(payload.get("tools"))
        model = f", model {safe(payload['model'])}" if isinstance(payload.get("model"), str) else ""
        last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
        content = last.get("content")
        said = f"  last: [{safe(last.get('role', '?'))}] {_content(content, limit)}" if content else ""
        return f"{counted(len(messages), 'message')}, {counted(len(tools), 'tool')}{model}{said}"
    if step.type == "model_output":
        calls = tool_calls_of(payload)
        if calls:
            said = "  ".join(
                f"→ {safe(c.tool_name)}({_short(c.tool_input, limit)}) {safe(c.tool_call_id)}" for c in calls
            )
        else:
            said = f"final answer: {_short(payload.get('text', ''), limit)}"
        return said + _extras_note(payload, limit)
    if step.type == "tool_call":
        name, call_id = safe(payload.get("toolName", "?")), safe(payload.get("toolCallId", ""))
        return f"{name} {_short(payload.get('toolInput'), limit)}  {call_id}"
    if step.type == "tool_result":
        name = safe(payload.get("toolName", "?"))
        if "error" in payload:
            return f"✗ {name} error: {_short(payload['error'], limit)}"
        stub = "  (stub)" if payload.get("stub") is True else ""  # --stub answered it, not the incident
        return f"{name} → {_short(payload.get('result'), limit)}{stub}"
    if step.type == "metadata":
        event = safe(payload.get("event", "?"))
        detail = payload.get("result", payload.get("reason"))
        return f"{event} {safe(payload.get('status', ''))}" + (
            f": {_short(detail, limit)}" if detail is not None else ""
        )
    return _short(payload, limit)


def _agent_note(agent: Any) -> str:
    """What reran a run of the built-in agent: `` (built-in agent, provider P, model M)``."""
    if not isinstance(agent, dict) or agent.get("kind") != "built-in":
        return ""
    said = ["built-in agent"]
    said += [
        f"{key} {_short(agent[key], 80)}" for key in ("provider", "model") if isinstance(agent.get(key), str)
    ]
    return f" ({', '.join(said)})"


def _stream_note(stream: Any) -> str:
    if stream is True:
        return " (streamed)"
    return " (not streamed)" if stream is False else ""  # absent: the recording did not tell


def render_timeline(cassette: Cassette, *, limit: int = 160) -> list[str]:
    outcome = terminal_outcome(cassette)
    lines = [
        f"cassette {safe(cassette.id)}  v{cassette.version}  {counted(len(cassette.steps), 'step')}  "
        f"outcome {outcome_label(cassette)}"
        + (f" ({_short(outcome.failure_reason, 60)})" if outcome.failure_reason else "")
    ]
    if cassette.parent_id and cassette.forked_from_step_id:
        lines.append(f"fork of {safe(cassette.parent_id)} at {safe(cassette.forked_from_step_id)}")
    elif cassette.parent_id:  # a rerun starts over: nothing of the parent is copied
        lines.append(f"rerun of {safe(cassette.parent_id)}{_agent_note(cassette.agent)}")
    if isinstance(cassette.api, dict) and isinstance(cassette.api.get("name"), str):
        name = _short(cassette.api["name"], 80)
        lines.append(f"recorded on: {name}{_stream_note(cassette.api.get('stream'))}")
    cost = cassette_cost(cassette)
    if any(call.usage is not None for call in cost.calls):  # a cassette with no counts: as it always was
        lines.append(f"cost: {cost.describe()}")
    start = cassette.steps[0].timestamp if cassette.steps else 0
    for step in cassette.steps:
        delta = step.timestamp - start
        # Timestamps are any JSON numbers: 1e308 - (-1e308) is infinity, which int() refuses.
        offset = f"+{int(delta)}ms" if abs(delta) < 1e15 else "+?ms"
        described = describe_step(step, limit)
        lines.append(f"#{step.index:<4} {offset:>9}  {step.type:<12}  {described}  [{safe(step.hash[:8])}]")
    if cassette.head:
        lines.append(f"head {safe(cassette.head)}")
    return lines
