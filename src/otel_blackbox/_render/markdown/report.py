"""One trace, or every trace of a run or a session, as Markdown (``show --format markdown``).

Made to be pasted into an issue or a chat with a model: a header (status, duration, spans,
tokens, cost), the failed spans, the span tree as a nested list, then each span's details: its
messages by role, tool calls with their arguments and results, exceptions with their type and
message, tokens and cost. Several traces (a run's, a session's) share one header, then each has its
failures, tree and details, spans numbered across them. Its bounds: ``document``.
"""

from __future__ import annotations

import shlex

from otel_blackbox._cost.prices import Cost, prices_version
from otel_blackbox._cost.spans import is_priced_call
from otel_blackbox._render.markdown.details import add_details
from otel_blackbox._render.markdown.document import Document, Limits, utc_text
from otel_blackbox._render.markdown.tree import Numbered, errors_section, numbered_spans, tree_section
from otel_blackbox._render.md_escape import inline
from otel_blackbox._render.repeats import number_calls
from otel_blackbox._render.text import fmt_duration
from otel_blackbox._render.words import counted
from otel_blackbox._spans.sdk_limits import cut_summary
from otel_blackbox._spans.view.registry import view_of
from otel_blackbox._spans.view.trace import content_missing
from otel_blackbox._store.queries import SpanRecord, TraceSummary

__all__ = ["group_markdown", "trace_markdown"]


def _header(
    doc: Document,
    items: list[Numbered],
    status: str,
    start_ns: int,
    duration_ns: int,
    traces: int | None = None,
) -> None:
    spans = [i.span for i in items]
    failed = sum(1 for s in spans if s.status == "error")
    opened = sum(1 for s in spans if s.status == "open")
    notes = [counted(n, word) for n, word in ((failed, "failed span"), (opened, "open span")) if n]
    doc.add("", f"- Status: **{status.upper()}**" + (f" ({', '.join(notes)})" if notes else ""))
    doc.add(f"- Started: {utc_text(start_ns)} · duration {fmt_duration(duration_ns)}")
    doc.add(f"- Spans: {len(spans)}" + ("" if traces is None else f" in {counted(traces, 'trace')}"))
    sessions = list(dict.fromkeys(s.session_id for s in spans if s.session_id))
    if sessions:
        shown = ", ".join(doc.code_value(s) for s in sessions[:5])
        doc.add(f"- Session: {shown}" + (f" (+{len(sessions) - 5} more)" if len(sessions) > 5 else ""))
    missing = content_missing(spans)
    if missing is not None:
        doc.add(f"- No content: {doc.inline_value(missing)}")
    cut = cut_summary(spans)
    if cut is not None:
        doc.add(f"- Cut: {doc.inline_value(cut)}")
    llm = [i for i in items if view_of(i.span).counts]
    tokened = [t for i in llm if (t := view_of(i.span).tokens) is not None and t.sum is not None]
    if tokened:
        prompt = sum(t.input or 0 for t in tokened)
        completion = sum(t.output or 0 for t in tokened)
        total = sum(t.sum or 0 for t in tokened)
        calls = counted(len(tokened), "LLM call")
        doc.add(f"- Tokens: {total} (prompt {prompt}, completion {completion}) in {calls}")
    priced = [i for i in llm if is_priced_call(i.span)]
    if priced:
        cost = Cost.of(i.price for i in priced)
        shown = inline(cost.text()) if cost.usd is not None else "no price"  # "$0.0097 + 1 unpriced"
        if doc.as_model:
            shown += f" as if {doc.code_value(doc.as_model)} had answered"
        without = f"; {counted(cost.unpriced, 'LLM call')} with no price" if cost.usd is None else ""
        doc.add(f"- Cost: {shown} ({inline(prices_version())}{without})")


def _command(kind: str, ident: str) -> str:
    target = shlex.quote(ident) if kind == "trace" else f"--{kind} {shlex.quote(ident)}"
    return f"otel-blackbox show {target} --format markdown --full"


def trace_markdown(
    summary: TraceSummary,
    spans: list[SpanRecord],
    *,
    full: bool = False,
    as_model: str | None = None,
    limits: Limits | None = None,
) -> str:
    """One trace as a Markdown document."""
    doc = Document(
        Limits.unbounded() if full else limits or Limits(), as_model, _command("trace", summary.trace_id)
    )
    doc.calls = number_calls(spans, collapse=not full)
    items = numbered_spans(doc, spans, summary.end_ns, 1)
    doc.add(f"# Trace {doc.code_value(summary.trace_id)}: {doc.name(summary.root_name)}")
    _header(doc, items, summary.status, summary.start_ns, summary.duration_ns)
    errors_section(doc, items, "## Failures")
    tree_section(doc, items, "## Span tree")
    add_details(doc, items, "## Spans", "###")
    return doc.text()


def group_markdown(
    kind: str,
    ident: str,
    traces: list[tuple[TraceSummary, list[SpanRecord]]],
    *,
    full: bool = False,
    as_model: str | None = None,
    limits: Limits | None = None,
) -> str:
    """Every trace of a run or a session (``kind``), in time order, as one Markdown document: a
    header for all of them, then each trace's failures, tree and details, spans numbered across."""
    doc = Document(
        Limits.unbounded() if full else limits or Limits(), as_model, _command(kind, ident), several=True
    )
    doc.calls = number_calls([s for _, spans in traces for s in spans], collapse=not full)
    numbered: list[tuple[TraceSummary, list[Numbered]]] = []
    for summary, spans in traces:
        first = 1 + (numbered[-1][1][-1].number if numbered and numbered[-1][1] else 0)
        numbered.append((summary, numbered_spans(doc, spans, summary.end_ns, first)))
    every = [item for _, items in numbered for item in items]
    start = min((s.start_ns for s, _ in traces), default=0)
    end = max((s.end_ns for s, _ in traces), default=start)
    statuses = {s.status for s, _ in traces}
    status = "open" if "open" in statuses else "error" if "error" in statuses else "ok"
    doc.add(f"# {kind.capitalize()} {doc.code_value(ident)}")
    _header(doc, every, status, start, max(0, end - start), len(traces))
    errors_section(doc, every, "## Failures")
    for n, (summary, items) in enumerate(numbered):
        if not doc.room():  # the rest of the traces: counted, not shown
            doc.left.traces, doc.left.trace_total = len(numbered) - n, len(numbered)
            doc.left.tree_total += sum(len(i) for _, i in numbered[n:])
            doc.left.tree += sum(len(i) for _, i in numbered[n:])
            doc.left.detail_total += sum(len(i) for _, i in numbered[n:])
            doc.left.details += sum(len(i) for _, i in numbered[n:])
            break
        doc.add("", f"## Trace {doc.code_value(summary.trace_id)}: {doc.name(summary.root_name)}")
        opened = f", {summary.open_count} open" if summary.open_count else ""
        doc.add(
            "",
            f"{summary.status.upper()} · started {utc_text(summary.start_ns)} · "
            f"{fmt_duration(summary.duration_ns)} · {counted(summary.span_count, 'span')}{opened}",
        )
        tree_section(doc, items, "### Span tree")
        add_details(doc, items, "### Spans", "####")
    return doc.text()
