"""A trace's spans as conversations: the main agent's, and each sub-agent's that ran its own.

A cassette is the conversation of one agent: its model calls in order, each request extending the
one before. An agent that starts another (Claude Code's Task tool, a framework's agent used as a
tool, a sub-agent with a conversation of its own) sees one tool call answered by the sub-agent's
result; the sub-agent's model and tool calls are a conversation apart, often interleaved with the
parent's in time (several run at once), which in one sequence no replay could play.

Where one starts, read from the span tree (no framework's names):

* a TOOL span with model calls under it ran an agent: what is under it is a conversation of its
  own, the tool call and its result are the parent's steps;
* an AGENT span nested in another conversation, whose first request does not open as that
  conversation's did (its first message other than the system prompt differs), while that
  conversation had already called the model: a sub-agent with its own conversation. One that opens
  the same (a handoff carrying the history, an agent span around the first calls) continues it.

Spans belong to the innermost conversation above them; the span that starts one (its boundary)
belongs to the parent. Conversations come main first, then sub-agents in the order they started.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from otel_blackbox._cassette.from_spans.order import ordered_spans
from otel_blackbox._cassette.from_spans.sources import TOOL_KIND
from otel_blackbox._spans.view.registry import view_of
from otel_blackbox._store.queries import SpanRecord

__all__ = ["Conversation", "opening_of", "split_conversations", "trace_groups"]

Key = tuple[str, str]


@dataclass
class Conversation:
    """One agent's spans in time order; ``boundary`` is the span that started it (a TOOL span of
    the parent's, or the sub-agent's own AGENT span), None for the main one."""

    spans: list[SpanRecord]
    boundary: SpanRecord | None = None
    parent: Conversation | None = None
    model_calls: list[SpanRecord] = field(default_factory=list)

    @property
    def start_ns(self) -> int:
        return self.spans[0].start_ns if self.spans else 0


def _key(span: SpanRecord) -> Key:
    return (span.trace_id, span.span_id)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") if isinstance(p, dict) else p for p in content]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def opening_of(span: SpanRecord, wire: dict[Key, tuple[dict[str, Any], dict[str, Any]]]) -> str | None:
    """The first message of a model call's request other than the system prompt (role and text):
    what tells one conversation from another. None when the span recorded no message."""
    captured = wire.get(_key(span))
    if captured is not None:
        messages = captured[0].get("messages")
        for message in messages if isinstance(messages, list) else []:
            if isinstance(message, dict) and message.get("role") not in ("system", "developer"):
                return f"{message.get('role')}\x00{_text(message.get('content'))}"
        return None
    for neutral in view_of(span).input_messages:
        if neutral.role not in ("system", "developer"):
            return f"{neutral.role}\x00{neutral.content or ''}"
    return None


def split_conversations(
    spans: list[SpanRecord],
    model_calls: list[SpanRecord],
    opening: Callable[[SpanRecord], str | None],
) -> list[Conversation]:
    """``spans`` (one trace's, or a run's) as conversations; ``model_calls`` the spans that are model
    rounds of their own (an LLM span, or a call HTTP capture saw), ``opening`` a call's opening."""
    by_key = {_key(s): s for s in spans}
    parent_of = {_key(s): (s.trace_id, s.parent_span_id) for s in spans if s.parent_span_id}

    def chain(span: SpanRecord) -> list[Key]:
        """The span's ancestors present here, innermost first (bounded: a hand-made cycle ends)."""
        found: list[Key] = []
        at = parent_of.get(_key(span))
        while at is not None and at in by_key and len(found) < len(spans):
            found.append(at)
            at = parent_of.get(at)
        return found

    calls_under: dict[Key, list[SpanRecord]] = {}  # each span's model calls beneath it, in time order
    for call in ordered_spans(model_calls):
        for above in chain(call):
            calls_under.setdefault(above, []).append(call)
    depth = {k: len(chain(by_key[k])) for k in calls_under}
    candidates = sorted(
        (by_key[k] for k in calls_under if parent_of.get(k) in by_key and _starts_one(by_key[k])),
        key=lambda s: (depth[_key(s)], s.start_ns),
    )
    main = Conversation([])
    boundary_of: dict[Key, Conversation] = {}  # each boundary span's conversation

    def owner(span: SpanRecord, skip_self: bool = False) -> Conversation:
        if not skip_self and _key(span) in boundary_of and view_of(span).kind != TOOL_KIND:
            return boundary_of[_key(span)]  # an AGENT boundary belongs to its own conversation
        for above in chain(span):
            if above in boundary_of:
                return boundary_of[above]
        return main

    for candidate in candidates:
        enclosing = owner(candidate, skip_self=True)
        own_calls = calls_under[_key(candidate)]
        if view_of(candidate).kind != TOOL_KIND:
            first = own_calls[0]
            inside = {_key(c) for c in own_calls}
            earlier = [
                c
                for c in (calls_under.get(_key(enclosing.boundary)) if enclosing.boundary else model_calls)
                or []
                if _key(c) not in inside and c.start_ns <= first.start_ns and owner(c) is enclosing
            ]
            if not earlier or opening(min(earlier, key=lambda c: c.start_ns)) == opening(first):
                continue  # it continues the conversation it is in
        boundary_of[_key(candidate)] = Conversation([], candidate, enclosing)
    for span in ordered_spans(spans):
        conversation = owner(span)
        conversation.spans.append(span)
    calls = {_key(c) for c in model_calls}
    subs = sorted(boundary_of.values(), key=lambda c: c.start_ns)
    found = [main, *subs]
    for conversation in found:
        conversation.model_calls = [s for s in conversation.spans if _key(s) in calls]
    return [c for c in found if c.spans]


def _starts_one(span: SpanRecord) -> bool:
    """Whether a span with model calls under it may start a conversation: a tool, or an agent."""
    kind = view_of(span).kind
    return kind == TOOL_KIND or kind == "AGENT"


def trace_groups(
    spans: list[SpanRecord],
    model_calls: list[SpanRecord],
    opening: Callable[[SpanRecord], str | None],
) -> list[list[SpanRecord]]:
    """A run's or a session's traces as its independent conversations, each a list of spans in time
    order. A trace whose root is an agent (a framework's run, an imported transcript) is one of its
    own; the others (frameworks that make each model call a trace) join the traces whose first
    request opens the same, and a trace with no model call joins the conversation before it."""
    by_trace: dict[str, list[SpanRecord]] = {}
    for span in ordered_spans(spans):
        by_trace.setdefault(span.trace_id, []).append(span)
    first_call: dict[str, SpanRecord] = {}
    for call in ordered_spans(model_calls):
        first_call.setdefault(call.trace_id, call)
    groups: list[list[SpanRecord]] = []
    by_opening: dict[str | None, list[SpanRecord]] = {}
    group_of: dict[str, list[SpanRecord]] = {}
    for trace_id, own in by_trace.items():  # in the order the traces started
        opened = first_call.get(trace_id)
        if opened is None:
            continue
        if any(view_of(s).kind == "AGENT" for s in own if s.parent_span_id is None):
            groups.append(group_of.setdefault(trace_id, []))
            continue
        key = opening(opened)
        if key not in by_opening:
            by_opening[key] = []
            groups.append(by_opening[key])
        group_of[trace_id] = by_opening[key]
    if not groups:
        return [ordered_spans(spans)]
    last = groups[0]
    for trace_id, own in by_trace.items():
        last = group_of.get(trace_id, last)  # a trace with no model call: the conversation before it
        last.extend(own)
    return [ordered_spans(g) for g in groups]
