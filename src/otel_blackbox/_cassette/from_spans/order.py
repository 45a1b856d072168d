"""The spans in the order their steps happened, and which of them are rounds of their own.

Time order, but for TOOL spans that started at the same moment: those in the order the model asked
for the calls. The roots (one per trace, or more for a trace cut short); the ancestors of a model
call, and the LLM spans whose time holds a captured call: neither is a round of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from otel_blackbox._cassette.from_spans.builder import Builder
from otel_blackbox._cassette.from_spans.sources import LLM_KIND, TOOL_KIND
from otel_blackbox._spans.view.registry import view_of
from otel_blackbox._store.queries import SpanRecord


def ordered_spans(spans: Iterable[SpanRecord]) -> list[SpanRecord]:
    return sorted(spans, key=lambda s: (s.start_ns, s.end_ns or 0))


def calls_in_asked_order(ordered: list[SpanRecord], builder: Builder) -> Iterator[SpanRecord]:
    """The spans in time order, except TOOL spans that started at the same moment: those come in
    the order the model asked for the calls. A clock of millisecond precision (the JavaScript SDK's)
    gives tools run together one start time, and their ends would otherwise decide."""
    i = 0
    while i < len(ordered):
        span = ordered[i]
        j = i + 1
        if view_of(span).kind == TOOL_KIND:
            while (
                j < len(ordered)
                and view_of(ordered[j]).kind == TOOL_KIND
                and ordered[j].start_ns == span.start_ns
            ):
                j += 1
        if j - i > 1:
            asked = [call["toolName"] for call in builder.pending]  # read now: the LLM span came before
            group = ordered[i:j]
            yield from sorted(group, key=lambda s: _position(asked, _tool_name(s)))
        else:
            yield span
        i = j


def _tool_name(span: SpanRecord) -> str:
    tool = view_of(span).tool
    return (tool.name if tool is not None else None) or span.tool_name or span.name


def _position(asked: list[str], name: str) -> int:
    return asked.index(name) if name in asked else len(asked)


def root_spans(spans: list[SpanRecord]) -> list[SpanRecord]:
    """The spans whose parent is not among them: one per trace, or more for a trace cut short."""
    ids = {(s.trace_id, s.span_id) for s in spans}
    return [s for s in spans if (s.trace_id, s.parent_span_id) not in ids] or spans[:1]


def ancestors_of(spans: list[SpanRecord], of: list[SpanRecord]) -> set[tuple[str, str]]:
    """(trace id, span id) of every ancestor of the spans ``of``."""
    parents = {(s.trace_id, s.span_id): s.parent_span_id for s in spans}
    found: set[tuple[str, str]] = set()
    for span in of:
        parent = span.parent_span_id
        for _ in range(len(spans)):  # bounded: a hand-made cycle cannot loop
            if parent is None or (span.trace_id, parent) in found:
                break
            found.add((span.trace_id, parent))
            parent = parents.get((span.trace_id, parent))
    return found


def around_calls(spans: list[SpanRecord], calls: list[SpanRecord]) -> set[tuple[str, str]]:
    """LLM spans whose time holds a captured call of their process though it is not their child:
    LangChain's OpenInference spans are never made current, so the wire call has no parent."""
    return {
        (s.trace_id, s.span_id)
        for s in spans
        if view_of(s).kind == LLM_KIND
        and s.end_ns is not None
        and any(
            c.pid == s.pid and s.start_ns <= c.start_ns and c.end_ns is not None and c.end_ns <= s.end_ns
            for c in calls
        )
    }
