"""The neutral conversation the transcript readers make and ``otlp.py`` writes as spans, and what is
read off it before any span is made: which result answers which call, and how it ended.

A conversation is *incomplete* when it stops before the model had the last word: it ends on a tool
call never answered, on a tool's result with no model answer after it (a hand-off to a person, a
session killed while a tool ran), or on a user message with no answer. One that ends on a failed
model call is not: it failed, and says so on its own span.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Conversation", "Keys", "ToolCall", "Turn", "incomplete", "matched_results"]

# Past this, the reason is cut: it must stay a short attribute (a row whose attributes are stored
# apart keeps only members of at most 512 characters readable in its own text, _store.content_split).
_REASON_CHARS = 400


@dataclass(frozen=True)
class ToolCall:
    call_id: str
    name: str
    arguments: str  # JSON text, as the providers send it


@dataclass(frozen=True)
class Turn:
    """One turn: ``user`` / ``system`` (text), ``assistant`` (text and tool calls, tokens when told;
    ``is_error`` for a model call that failed, its text the error), ``tool`` (the result of the call
    ``call_id``; ``is_error`` for an error result), or
    ``compaction`` (the agent compacted its context: later requests hold only the turns after it)."""

    role: str
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    call_id: str = ""
    name: str = ""
    is_error: bool = False
    time_ns: int | None = None
    prompt_tokens: int | None = None  # cached ones included
    completion_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    model: str | None = None  # this turn's model, when it is not the conversation's
    # Context only: a turn of the history an agent restarted from (Codex's ``replacement_history``),
    # held by the requests after it but made no span (its call and result happened before).
    context_only: bool = False


@dataclass(frozen=True)
class Conversation:
    turns: tuple[Turn, ...]
    model: str | None = None
    provider: str | None = None  # "openai", "anthropic"
    system: str | None = None
    tools: tuple[dict[str, Any], ...] = ()  # the tool definitions offered, as the source wrote them
    source: str = "chat"  # the scope's name suffix: chat, claude-code, codex
    skipped: dict[str, int] = field(default_factory=dict)  # left out, by kind: the root's metadata.left_out
    metadata: dict[str, Any] = field(default_factory=dict)  # the root span's ``metadata`` (JSON)
    # The ``metadata`` of the TOOL span of a call, by call id (a Task call's: the sub-agent it ran).
    call_metadata: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class Keys:
    """What a document's ids are derived from: the trace id from ``trace``, the span ids from
    ``spans``. A transcript with no identity of its own uses its content's hash for both."""

    trace: str
    spans: str


def _matches(turns: tuple[Turn, ...]) -> tuple[list[ToolCall], dict[int, int]]:
    """Every call (context-only turns left out) in order, and the turn index of the result that
    answers each, by the call's number: matched by the call's id, else (a result with no id) the
    first unanswered call of that name."""
    calls: list[ToolCall] = []
    open_calls: list[int] = []
    found: dict[int, int] = {}
    for at, turn in enumerate(turns):
        if turn.context_only:
            continue
        if turn.role == "assistant":
            for call in turn.tool_calls:
                open_calls.append(len(calls))
                calls.append(call)
        elif turn.role == "tool":
            match = next(
                (
                    n
                    for n in open_calls
                    if (calls[n].call_id == turn.call_id if turn.call_id else calls[n].name == turn.name)
                ),
                None,
            )
            if match is not None:
                open_calls.remove(match)
                found[match] = at
    return calls, found


def matched_results(turns: tuple[Turn, ...]) -> dict[int, Turn]:
    """The result turn of each call, by the call's number in the conversation (see ``_matches``)."""
    return {n: turns[at] for n, at in _matches(turns)[1].items()}


def _named(call: ToolCall | None, result: Turn | None = None) -> str:
    name = (call.name if call is not None else "") or (result.name if result is not None else "") or "tool"
    call_id = (call.call_id if call is not None else "") or (result.call_id if result is not None else "")
    return f"{name} ({call_id})" if call_id else name


def incomplete(turns: tuple[Turn, ...]) -> str | None:
    """Why a conversation that stopped before the model's last word is incomplete, naming the call
    (None when it ended on a model's answer, or on a failed model call)."""
    spoken = [(at, t) for at, t in enumerate(turns) if not t.context_only and t.role != "compaction"]
    if not spoken:
        return None
    at, last = spoken[-1]
    calls, answered = _matches(turns)
    if last.role == "assistant":
        if last.is_error or not last.tool_calls:
            return None
        first = len(calls) - len(last.tool_calls)  # the last turn's calls are the last ones numbered
        unanswered = [calls[n] for n in range(first, len(calls)) if n not in answered]
        if not unanswered:
            return None
        named = ", ".join(_named(c) for c in unanswered)
        many = len(unanswered) > 1
        reason = f"the call{'s' if many else ''} {named} {'were' if many else 'was'} never answered"
    elif last.role == "tool":
        call = next((calls[n] for n, result_at in answered.items() if result_at == at), None)
        reason = f"the call {_named(call, last)} has a result but no model answer after it"
    else:
        reason = f"the last {last.role} message has no answer"
    return reason if len(reason) <= _REASON_CHARS else reason[: _REASON_CHARS - 1] + "…"
