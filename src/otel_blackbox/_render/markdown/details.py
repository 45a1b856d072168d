"""The details of each span: its status, ids, tokens and cost, the tools offered, its messages by role
(a model call whose input starts with an earlier call's says so and shows the new messages only,
unless ``--full``), tool calls with their arguments and results,
invocation parameters, and exceptions with their stack traces; until the document's bounds."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from openinference.semconv.trace import SpanAttributes

from otel_blackbox._cost.prices import Price, format_usd
from otel_blackbox._render.markdown.document import LAST_LINE_ROOM, Document, utc_text
from otel_blackbox._render.markdown.tree import Numbered, exceptions_of, kind_label
from otel_blackbox._render.md_escape import inline
from otel_blackbox._render.repeats import Repeat
from otel_blackbox._render.text import fmt_duration, status_marker
from otel_blackbox._spans.messages import Message, tool_name
from otel_blackbox._spans.sdk_limits import sdk_cut
from otel_blackbox._spans.view.registry import view_of
from otel_blackbox._store.queries import SpanRecord


def _message_lines(doc: Document, message: Message) -> list[str]:
    role = f"**{doc.name(message.role)}**"
    extra = ""
    if message.name:
        extra += f" ({doc.name(message.name)})"
    if message.tool_call_id:
        extra += f" · result of call {doc.code_value(message.tool_call_id)}"
    if message.finish_reason:
        extra += f" · finish: {doc.name(message.finish_reason)}"
    lines: list[str] = []
    for thought in message.reasoning:
        lines += ["", f"{role} (reasoning)", *doc.block(thought)]
    if message.content:
        lines += ["", role + extra, *doc.block(message.content)]
        extra = ""
    for call in message.tool_calls:
        called = f"{role}{extra} → tool call {doc.code_value(call.tool_name or '?')}"
        if call.tool_call_id:
            called += f" (id {doc.code_value(call.tool_call_id)})"
        lines += ["", called, *doc.block(call.tool_input or "")]
        extra = ""
    for hosted in message.hosted:
        lines += ["", f"{role} → provider tool {doc.code_value(hosted.name)}"]
        if hosted.arguments is not None:
            lines += doc.block(hosted.arguments)
        if hosted.result is not None:
            lines += ["", "Its result:", *doc.block(hosted.result)]
    return lines or ["", role + extra + " (no content)"]


def _messages(
    doc: Document, label: str, messages: Sequence[Message], repeat: Repeat | None = None
) -> list[str]:
    if not messages and repeat is None:
        return []
    lines = ["", f"**{label}**"]
    if repeat is not None:  # shown at the earlier call (or referred to from there)
        at = doc.span_numbers.get((repeat.span.trace_id, repeat.span.span_id))
        where = f" (span {at})" if at is not None else ""
        text = repeat.text().replace(f"call {repeat.call}", f"call {repeat.call}{where}", 1)
        lines += ["", f"*{text[:1].upper()}{text[1:]} (--full shows them all).*"]
    for message in messages:
        lines += _message_lines(doc, message)
    return lines


def _tokens_line(doc: Document, span: SpanRecord, price: Price | None) -> str | None:
    as_model = doc.as_model
    view = view_of(span)
    tokens = view.tokens
    if view.model is None and tokens is None:
        return None
    parts = [f"Model: {doc.code_value(view.model) if view.model else '-'}"]
    if view.same_call_as is not None:
        parts.append(f"the same model call as span {doc.code_value(view.same_call_as)}, counted there")
    elif tokens is not None:
        line = f"tokens: prompt {tokens.input or 0}, completion {tokens.output or 0}, total {tokens.sum or 0}"
        details = [
            f"{label} {value}"
            for label, value in (
                ("cached", tokens.cache_read),
                ("cache write", tokens.cache_write),
                ("reasoning", tokens.reasoning),
            )
            if value
        ]
        parts.append(line + (f" ({', '.join(details)})" if details else ""))
    if price is not None:
        priced_as = f" as {doc.code_value(as_model)}" if as_model else ""
        parts.append(f"cost {inline(format_usd(price.usd))}{priced_as}")
    elif view.counts and (view.model is not None or as_model is not None):
        parts.append("cost: no price (genai-prices knows none for this model)")
    return "- " + " · ".join(parts)


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _details(doc: Document, item: Numbered, heading: str) -> list[str]:
    """The details of one span, as lines."""
    span, attrs = item.span, item.span.attributes
    view = view_of(span)
    title = (
        f"{heading} {item.number}. {status_marker(span.status)} {doc.name(view.name or span.name)} "
        f"{kind_label(doc, span)}"
    )
    lines = ["", title.rstrip(), ""]
    if span.status == "open":
        status = "OPEN: still open when the recording stopped (killed, crashed or still running)"
    elif span.status == "error":
        status = "ERROR" + (f": {doc.inline_value(span.status_message)}" if span.status_message else "")
    else:
        status = inline(span.status.upper())
    lines.append(f"- Status: {status} · {fmt_duration(span.duration_ns)} · started {utc_text(span.start_ns)}")
    ids = f"- Span {doc.code_value(span.span_id)}"
    if span.parent_span_id:
        ids += f" · parent {doc.code_value(span.parent_span_id)}"
    lines.append(ids + (f" · trace {doc.code_value(span.trace_id)}" if doc.several else ""))
    tokens = _tokens_line(doc, span, item.price)
    if tokens:
        lines.append(tokens)
    if cut := sdk_cut(attrs):
        lines.append(f"- Cut: {doc.inline_value(cut.text())}")
    if view.no_content:
        lines.append(f"- No content recorded: {doc.inline_value(view.no_content)}")
    if view.not_a_call:
        lines.append(f"- Not a model call: {doc.inline_value(view.not_a_call)}")
    if view.tools:
        lines.append("- Tools offered: " + ", ".join(doc.name(tool_name(t)) for t in view.tools))
    tool = view.tool
    if tool is not None and tool.name:
        lines.append(f"- Tool: {doc.code_value(tool.name)}")

    if view.system:
        lines += ["", "**System instructions**", *doc.block(view.system)]
    inputs, outputs = view.input_messages, view.output_messages
    repeat = doc.calls.repeat(span)
    lines += _messages(doc, "Messages in", doc.calls.input_of(span), repeat)
    arguments = tool.arguments if tool is not None else None
    given = view.input_text
    if arguments is not None and not inputs:
        lines += ["", "**Arguments**", *doc.block(_shown(arguments))]
    if given is not None and not inputs and given != arguments:
        lines += ["", "**Input**", *doc.block(given)]
    lines += _messages(doc, "Messages out", outputs)
    result = tool.result if tool is not None and tool.result is not None else view.output_text
    if result is not None and not outputs:
        lines += ["", "**Result**" if tool is not None else "**Output**", *doc.block(_shown(result))]
    params = attrs.get(SpanAttributes.LLM_INVOCATION_PARAMETERS)
    if params:
        lines += ["", "**Parameters**", *doc.block(params)]
    for kind, message, stack in exceptions_of(span):
        lines += ["", f"**Exception** {doc.code_value(kind)}: {doc.inline_value(message)}"]
        if stack:
            lines += doc.block(stack.rstrip())
    return lines


def add_details(doc: Document, items: list[Numbered], heading: str, span_heading: str) -> None:
    if not items:
        return
    doc.add("", heading)
    for item in items:
        doc.left.detail_total += 1
        limits = doc.limits
        if not doc.details_stopped:
            if limits.detail_spans is not None and doc.details_shown >= limits.detail_spans:
                doc.details_stopped = True
            else:
                before = doc.left.values
                lines = _details(doc, item, span_heading)
                size = sum(len(line) + 1 for line in lines)
                if limits.total_chars is not None and doc.size + size > limits.total_chars - LAST_LINE_ROOM:
                    doc.details_stopped = True
                    doc.left.values = before  # what was not shown was not shortened
                else:
                    doc.add(*lines)
                    doc.details_shown += 1
                    continue
        doc.left.details += 1
