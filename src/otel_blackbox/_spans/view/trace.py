"""What only the whole trace tells of its spans: which spans describe the same model call.

Two instrumentations on one call (an SDK's own span under an instrumentor's, LangChain's span over
the OpenAI instrumentor's) nest one LLM span in another. Such a chain is one model call: the span
that holds the conversation gives it (the innermost, closest to the wire, when several do), and the
others are marked ``same_call_as`` that span: shown in the tree, counted once. An LLM span over
several model calls is a wrapper: it is marked too (as the first call's), so nothing counts twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from otel_blackbox._spans.messages import Message
from otel_blackbox._spans.view.model import SpanView
from otel_blackbox._spans.view.registry import read_span, view_of
from otel_blackbox._store.queries import SpanRecord

__all__ = ["content_missing", "model_calls", "read_trace"]

# A model call's span nests in another's through spans of other kinds (HTTP, a framework's step),
# never through a tool or an agent: a tool or agent span below an LLM span starts calls of its own.
_BOUNDARIES = frozenset({"TOOL", "AGENT"})


def read_trace(spans: list[SpanRecord]) -> list[SpanRecord]:
    """Every span's view (``span.view``), with the model calls two of these spans describe marked; the
    same list, for chaining. A span read before keeps its view (and what its whole trace told)."""
    fresh = [span for span in spans if not isinstance(span.view, SpanView)]
    shared: dict[tuple[object, ...], Message] = {}
    for span in fresh:
        span.view = view = read_span(span)
        view.input_messages = _shared(view.input_messages, shared)
        view.output_messages = _shared(view.output_messages, shared)
    if fresh:
        _mark_same_calls(spans)
        for span in fresh:  # a repeat of a call says nothing of content: the counted span has it
            view = view_of(span)
            if view.same_call_as is not None:
                view.no_content = None
    return spans


def _shared(messages: list[Message], shared: dict[tuple[object, ...], Message]) -> list[Message]:
    """The messages, each one seen before in the trace replaced by that first one: each model call
    of a long run holds the conversation before it, which read call by call is its square."""
    out = []
    for message in messages:
        try:
            key = (
                message.role, message.content, tuple(message.tool_calls), message.tool_call_id,
                message.name, tuple(message.reasoning), message.finish_reason,
            )  # fmt: skip
            out.append(message if message.hosted else shared.setdefault(key, message))
        except TypeError:  # a part that is no key (a tool input parsed to a dict): kept as it is
            out.append(message)
    return out


def _weight(view: SpanView) -> tuple[bool, bool]:
    return (bool(view.input_messages or view.output_messages), view.tokens is not None)


def _calls_below(span: SpanRecord, children: dict[tuple[str, str], list[SpanRecord]]) -> list[SpanRecord]:
    """The nearest LLM spans below ``span`` (not through a tool or an agent)."""
    found: list[SpanRecord] = []
    stack = list(children.get((span.trace_id, span.span_id), []))
    seen = 0
    while stack and seen < 100_000:  # bounded: a hand-made cycle cannot loop
        seen += 1
        child = stack.pop()
        kind = view_of(child).kind
        if kind == "LLM":
            found.append(child)
        elif kind not in _BOUNDARIES:
            stack.extend(children.get((child.trace_id, child.span_id), []))
    return sorted(found, key=lambda s: (s.start_ns, s.span_id))


def _mark_same_calls(spans: list[SpanRecord]) -> None:
    children: dict[tuple[str, str], list[SpanRecord]] = {}
    for span in spans:
        if span.parent_span_id is not None:
            children.setdefault((span.trace_id, span.parent_span_id), []).append(span)
    # Innermost first: a chain is resolved from the wire up.
    llm = [s for s in spans if view_of(s).kind == "LLM"]
    for span in sorted(llm, key=_depth_of(spans), reverse=True):
        below = _calls_below(span, children)
        if not below:
            continue
        outer = view_of(span)
        if len(below) > 1:
            outer.same_call_as = below[0].span_id
            continue
        inner_span = below[0]
        inner = view_of(inner_span)
        counted = inner_span
        if inner.same_call_as is not None:
            counted = next((s for s in spans if s.span_id == inner.same_call_as), inner_span)
        if _weight(outer) > _weight(view_of(counted)):
            view_of(counted).same_call_as = span.span_id
            for other in spans:  # what pointed at the inner call now points at this one
                if view_of(other).same_call_as == counted.span_id and other is not span:
                    view_of(other).same_call_as = span.span_id
        else:
            outer.same_call_as = counted.span_id


def _depth_of(spans: list[SpanRecord]) -> Callable[[SpanRecord], int]:
    parents = {(s.trace_id, s.span_id): s.parent_span_id for s in spans}

    def depth(span: SpanRecord) -> int:
        level, parent = 0, span.parent_span_id
        while parent is not None and level < len(spans):
            level += 1
            parent = parents.get((span.trace_id, parent))
        return level

    return depth


def model_calls(spans: Iterable[SpanRecord]) -> list[SpanRecord]:
    """The spans that are model calls, each call once."""
    return [s for s in spans if view_of(s).counts]


def content_missing(spans: list[SpanRecord]) -> str | None:
    """One line when model calls of these spans recorded no messages, saying what turns them on (None
    when every model call has its content)."""
    calls = model_calls(read_trace(spans))
    empty = [view_of(s) for s in calls if view_of(s).no_content and not view_of(s).has_content]
    if not empty:
        return None
    reasons = list(dict.fromkeys(v.no_content for v in empty if v.no_content))
    return f"{len(empty)} of {len(calls)} model calls recorded no messages: " + "; ".join(reasons)
