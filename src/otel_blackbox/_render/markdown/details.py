"""The details of each span: its status, ids, tokens and cost, the tools offered, its messages by role
(those a previous span showed are not repeated), tool calls with their arguments and results,
invocation parameters, and exceptions with their stack traces; until the document's bounds."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from openinference.semconv.trace import SpanAttributes

from otel_blackbox._cost.prices import Price, format_usd
from otel_blackbox._cost.usage import REASONING_KEYS, usage_of
from otel_blackbox._render.markdown.document import LAST_LINE_ROOM, Document, utc_text
from otel_blackbox._render.markdown.tree import Numbered, exceptions_of, kind_label
from otel_blackbox._render.md_escape import inline
from otel_blackbox._render.text import fmt_duration, status_marker
from otel_blackbox._spans.messages import (
    GEN_AI_TOOL_CALL_ARGUMENTS,
    GEN_AI_TOOL_CALL_RESULT,
    Message,
    input_messages,
    output_messages,
    system_instructions,
    tool_definitions,
    tool_name,
)
from otel_blackbox._store.queries import SpanRecord


def _first_int(attributes: dict[str, Any], keys: Iterable[str]) -> int:
    for key in keys:
        value = attributes.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 0


def _fingerprint(message: Message) -> tuple[Any, ...]:
    calls = tuple((c.tool_call_id, c.tool_name, c.tool_input) for c in message.tool_calls)
    return (message.role, message.content or None, calls, message.tool_call_id)


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
    doc: Document, label: str, messages: list[Message], skip: int = 0, skipped_from: int = 0
) -> list[str]:
    if not messages:
        return []
    lines = ["", f"**{label}**"]
    if skip:
        lines += ["", f"*The first {skip} messages are those of span {skipped_from}, shown there.*"]
    for message in messages[skip:]:
        lines += _message_lines(doc, message)
    return lines


def _tokens_line(doc: Document, span: SpanRecord, price: Price | None) -> str | None:
    as_model = doc.as_model
    if span.model is None and span.total_tokens is None and span.prompt_tokens is None:
        return None
    parts = [f"Model: {doc.code_value(span.model) if span.model else '-'}"]
    if span.prompt_tokens is not None or span.completion_tokens is not None or span.total_tokens is not None:
        tokens = (
            f"tokens: prompt {span.prompt_tokens or 0}, completion {span.completion_tokens or 0}, "
            f"total {span.total_tokens or 0}"
        )
        usage = usage_of(span.prompt_tokens, span.completion_tokens, span.total_tokens, span.attributes)
        details = []
        if usage is not None and usage.cache_read:
            details.append(f"cached {usage.cache_read}")
        if usage is not None and usage.cache_write:
            details.append(f"cache write {usage.cache_write}")
        reasoning = _first_int(span.attributes, REASONING_KEYS)
        if reasoning:
            details.append(f"reasoning {reasoning}")
        parts.append(tokens + (f" ({', '.join(details)})" if details else ""))
    if price is not None:
        priced_as = f" as {doc.code_value(as_model)}" if as_model else ""
        parts.append(f"cost {inline(format_usd(price.usd))}{priced_as}")
    elif span.oi_span_kind == "LLM" and (span.model is not None or as_model is not None):
        parts.append("cost: no price (genai-prices knows none for this model)")
    return "- " + " · ".join(parts)


def _details(doc: Document, item: Numbered, heading: str) -> list[str]:
    """The details of one span, as lines."""
    span, attrs = item.span, item.span.attributes
    title = (
        f"{heading} {item.number}. {status_marker(span.status)} {doc.name(span.name)} {kind_label(doc, span)}"
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
    tools = tool_definitions(attrs)
    if tools:
        lines.append("- Tools offered: " + ", ".join(doc.name(tool_name(t)) for t in tools))
    if span.tool_name:
        lines.append(f"- Tool: {doc.code_value(span.tool_name)}")

    instructions = system_instructions(attrs)
    if instructions:
        lines += ["", "**System instructions**", *doc.block(instructions)]
    inputs, outputs = input_messages(attrs), output_messages(attrs)
    skip, skipped_from = 0, 0
    if inputs and doc.previous_llm is not None and doc.limits.value_chars is not None:
        number, before = doc.previous_llm
        now = [_fingerprint(m) for m in inputs]
        while skip < min(len(now), len(before)) and now[skip] == before[skip]:
            skip += 1
        skip, skipped_from = (skip, number) if skip >= 2 else (0, 0)
    if inputs or outputs:
        doc.previous_llm = (item.number, [_fingerprint(m) for m in [*inputs, *outputs]])
    is_tool = span.oi_span_kind == "TOOL" or span.tool_name is not None
    lines += _messages(doc, "Messages in", inputs, skip, skipped_from)
    arguments = next(
        (attrs[k] for k in (SpanAttributes.TOOL_PARAMETERS, GEN_AI_TOOL_CALL_ARGUMENTS) if k in attrs), None
    )
    given = attrs.get(SpanAttributes.INPUT_VALUE)
    if is_tool and arguments is None:
        arguments, given = given, None
    if arguments is not None and not inputs:
        lines += ["", "**Arguments**", *doc.block(arguments)]
    if given is not None and not inputs and given != arguments:
        lines += ["", "**Input**", *doc.block(given)]
    lines += _messages(doc, "Messages out", outputs)
    result = attrs.get(SpanAttributes.OUTPUT_VALUE, attrs.get(GEN_AI_TOOL_CALL_RESULT))
    if result is not None and not outputs:
        lines += ["", "**Result**" if is_tool else "**Output**", *doc.block(result)]
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
                before = (doc.left.values, doc.previous_llm)
                lines = _details(doc, item, span_heading)
                size = sum(len(line) + 1 for line in lines)
                if limits.total_chars is not None and doc.size + size > limits.total_chars - LAST_LINE_ROOM:
                    doc.details_stopped = True
                    doc.left.values, doc.previous_llm = before  # what was not shown was not shortened
                else:
                    doc.add(*lines)
                    doc.details_shown += 1
                    continue
        doc.left.details += 1
