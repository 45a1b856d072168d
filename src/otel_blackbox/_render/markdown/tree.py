"""A document's spans in tree order: numbered (an LLM span priced), the span tree as a nested list,
and the failed spans listed at the top; with a span's kind and exceptions as every part shows them."""

from __future__ import annotations

from dataclasses import dataclass

from otel_blackbox._cost.prices import Price, format_usd
from otel_blackbox._cost.spans import span_price
from otel_blackbox._render.markdown.document import Document
from otel_blackbox._render.md_escape import inline
from otel_blackbox._render.text import fmt_duration, status_marker
from otel_blackbox._spans.sdk_limits import sdk_cut
from otel_blackbox._spans.view.registry import view_of
from otel_blackbox._spans.view.trace import read_trace
from otel_blackbox._store.queries import SpanRecord


def kind_label(doc: Document, span: SpanRecord) -> str:
    kind = view_of(span).kind
    if kind:
        return doc.code_value(kind)
    return "" if span.span_kind == "INTERNAL" else doc.code_value(span.span_kind)


def exceptions_of(span: SpanRecord) -> list[tuple[str, str, str | None]]:
    """(type, message, stack trace) of each exception event of the span."""
    found = []
    for event in span.exception_events:
        attrs = event.get("attributes") or {}
        stack = attrs.get("exception.stacktrace")
        found.append(
            (
                str(attrs.get("exception.type") or "?"),
                str(attrs.get("exception.message") or ""),
                None if stack is None else str(stack),
            )
        )
    return found


@dataclass
class Numbered:
    number: int
    span: SpanRecord
    depth: int
    last_seen_ns: int
    price: Price | None


def _tree_order(spans: list[SpanRecord]) -> list[tuple[SpanRecord, int]]:
    """Spans depth first (children in start order), with their depth; a span whose parent is not
    here is a root, and a parent cycle still lists every span once."""
    ids = {s.span_id for s in spans}
    children: dict[str | None, list[SpanRecord]] = {}
    for span in spans:
        parent = span.parent_span_id if span.parent_span_id in ids else None
        children.setdefault(parent, []).append(span)
    ordered: list[tuple[SpanRecord, int]] = []
    seen: set[str] = set()
    stack = [(s, 0) for s in reversed(children.get(None, []))]
    while stack:
        span, depth = stack.pop()
        if span.span_id in seen:
            continue
        seen.add(span.span_id)
        ordered.append((span, depth))
        stack += [(kid, depth + 1) for kid in reversed(children.get(span.span_id, []))]
    ordered += [(s, 0) for s in spans if s.span_id not in seen]
    return ordered


def _span_facts(doc: Document, item: Numbered) -> str:
    """The tree entry of a span: marker, name, kind, duration or open, model, tokens, cost."""
    span = item.span
    view = view_of(span)
    parts = [f"{status_marker(span.status)} {doc.name(view.name or span.name)}"]
    kind = kind_label(doc, span)
    if kind:
        parts.append(kind)
    if span.status == "open":
        parts.append(
            f"OPEN (last seen {fmt_duration(max(0, item.last_seen_ns - span.start_ns))} after start)"
        )
    else:
        parts.append(fmt_duration(span.duration_ns))
    if span.status == "error":
        parts.append("ERROR")
    if view.model:
        parts.append(doc.code_value(view.model))
    if view.same_call_as is not None:
        parts.append(f"same model call as span {doc.code_value(view.same_call_as)}")
    elif view.tokens is not None and view.tokens.sum is not None:
        parts.append(f"{view.tokens.sum} tokens")
    if item.price is not None:
        parts.append(inline(format_usd(item.price.usd)))
    cut = sdk_cut(span.kept_attributes)
    if cut:  # the details say which setting lifts the limit
        parts.append(f"CUT BY SDK LIMITS ({cut.counts()})")
    call = doc.calls.number(span)
    return " · ".join(parts) + f" (span {item.number}" + (f", call {call})" if call is not None else ")")


def tree_section(doc: Document, items: list[Numbered], heading: str) -> None:
    doc.add("", heading, "")
    limit = doc.limits.tree_spans
    before = doc.left.tree
    for item in items:
        doc.left.tree_total += 1
        if (limit is not None and doc.tree_shown >= limit) or not doc.room():
            doc.left.tree += 1
            continue
        doc.tree_shown += 1
        depth = min(item.depth, doc.limits.tree_depth - 1)
        deeper = f"↳ depth {item.depth}: " if item.depth > depth else ""
        doc.add("  " * depth + "- " + deeper + _span_facts(doc, item))
    if doc.left.tree > before:
        doc.add("- " + inline(f"… {doc.left.tree - before} more spans (--full)"))


def errors_section(doc: Document, items: list[Numbered], heading: str) -> None:
    failed = [i for i in items if i.span.status == "error" or i.span.exception_events]
    if not failed:
        return
    doc.add("", heading, "")
    for item in failed:
        doc.left.error_total += 1
        if (doc.limits.errors is not None and doc.errors_shown >= doc.limits.errors) or not doc.room():
            doc.left.errors += 1
            continue
        doc.errors_shown += 1
        span = item.span
        head = f"- {status_marker(span.status)} {doc.name(span.name)} {kind_label(doc, span)}".rstrip()
        reasons = [
            f"{doc.code_value(kind)}: {doc.inline_value(text)}" for kind, text, _ in exceptions_of(span)
        ]
        if not reasons and span.status_message:
            reasons = [doc.inline_value(span.status_message)]
        doc.add(f"{head} (span {item.number}): " + ("; ".join(reasons) or "failed, with no message"))


def _llm_price(doc: Document, span: SpanRecord) -> Price | None:
    """A model call's price (as the other views: a call two spans describe is priced once)."""
    return span_price(span, as_model=doc.as_model)


def numbered_spans(doc: Document, spans: list[SpanRecord], last_seen_ns: int, start: int) -> list[Numbered]:
    read_trace(spans)
    items = [
        Numbered(start + n, span, depth, last_seen_ns, _llm_price(doc, span))
        for n, (span, depth) in enumerate(_tree_order(spans))
    ]
    doc.span_numbers.update(((i.span.trace_id, i.span.span_id), i.number) for i in items)
    return items
