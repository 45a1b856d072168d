"""The spans of a report page as its JSON: each span in tree order with its view (kind, model, tokens,
messages, tool use, cost, whether its call is counted on another span), its exceptions and events, and
the resources the spans point to (each embedded once).

Unless ``full``, a model call whose input starts with an earlier call's carries the new messages only
and a reference to that call (``inputRepeat``), and its attributes and events leave out those that hold
its input (``omitted`` says which): the page grows with the run, not its square (``repeats``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from otel_blackbox._cost.prices import format_usd
from otel_blackbox._cost.spans import span_price
from otel_blackbox._render.repeats import ModelCalls, number_calls, trimmed
from otel_blackbox._spans.messages import Message, tool_name
from otel_blackbox._spans.sdk_limits import sdk_cut
from otel_blackbox._spans.view.model import Tokens
from otel_blackbox._spans.view.registry import view_of
from otel_blackbox._spans.view.trace import read_trace
from otel_blackbox._store.queries import SpanRecord

__all__ = ["iso", "span_entries"]


def iso(ns: int | None) -> str | None:
    if ns is None:
        return None
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).isoformat(timespec="milliseconds")


def _message(message: Message) -> dict[str, Any]:
    return {
        "role": message.role,
        "content": message.content,
        "name": message.name,
        "toolCallId": message.tool_call_id,
        "toolCalls": [
            {"id": c.tool_call_id or None, "name": c.tool_name or None, "arguments": c.tool_input}
            for c in message.tool_calls
        ],
    }


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _exceptions(span: SpanRecord) -> list[dict[str, Any]]:
    found = []
    for event in span.events:
        if event.get("name") != "exception":
            continue
        attrs = event.get("attributes") or {}
        found.append(
            {
                "type": attrs.get("exception.type"),
                "message": attrs.get("exception.message"),
                "stacktrace": attrs.get("exception.stacktrace"),
            }
        )
    return found


def _tree_order(spans: list[SpanRecord]) -> list[tuple[SpanRecord, int]]:
    """Spans depth first (children by start time), each with its depth; orphans become roots.

    Spans are keyed by (trace id, span id): a page may hold several traces (a run, a session),
    each root in the order of ``spans``."""
    ids = {(s.trace_id, s.span_id) for s in spans}
    children: dict[tuple[str, str] | None, list[SpanRecord]] = {}
    for span in spans:
        parent = (span.trace_id, span.parent_span_id or "")
        children.setdefault(parent if parent in ids else None, []).append(span)
    ordered: list[tuple[SpanRecord, int]] = []
    seen: set[tuple[str, str]] = set()
    stack = [(s, 0) for s in reversed(children.get(None, []))]
    while stack:
        span, depth = stack.pop()
        key = (span.trace_id, span.span_id)
        if key in seen:
            continue
        seen.add(key)
        ordered.append((span, depth))
        stack += [(c, depth + 1) for c in reversed(children.get(key, []))]
    ordered += [(s, 0) for s in spans if (s.trace_id, s.span_id) not in seen]  # a parent cycle: still shown
    return ordered


def span_entries(
    spans: list[SpanRecord],
    start: int,
    last_seen_of: Callable[[SpanRecord], int],
    span_done: Callable[[int], None],
    *,
    full: bool = False,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The spans in tree order as the page's JSON, and the resources they point to; every input
    message of every model call with ``full``."""
    out = []
    # Every span of a process has the same resource: each is embedded once, spans point to it
    # (a sixth of a large report's size otherwise).
    resources: list[dict[str, Any]] = []
    resource_index: dict[str, int] = {}
    read_trace(spans)
    calls = number_calls(spans, collapse=not full)
    for span, depth in _tree_order(spans):
        span_done(1)
        attrs = span.attributes
        view = view_of(span)
        repeated = _repeated(calls, span)
        tokens = view.tokens or Tokens()
        tool = view.tool
        given = view.input_text if repeated["inputRepeat"] is None else None  # not the whole request again
        if tool is not None and tool.arguments is not None:
            given = _shown(tool.arguments)
        shown_output = (
            _shown(tool.result) if tool is not None and tool.result is not None else view.output_text
        )
        is_open = span.status == "open" or span.end_ns is None
        end = max(span.start_ns, last_seen_of(span)) if is_open else (span.end_ns or span.start_ns)
        resource = resource_index.setdefault(json.dumps(span.resource, sort_keys=True), len(resources))
        if resource == len(resources):
            resources.append(span.resource)
        out.append(
            {
                "traceId": span.trace_id,
                "spanId": span.span_id,
                "parentSpanId": span.parent_span_id,
                "depth": depth,
                "name": view.name or span.name,
                "kind": view.kind or span.span_kind,
                "spanKind": span.span_kind,
                "oiSpanKind": view.kind,
                "status": span.status,
                "statusMessage": span.status_message,
                "open": is_open,
                "start": iso(span.start_ns),
                "startOffsetNs": span.start_ns - start,
                "endOffsetNs": end - start,
                "durationNs": span.duration_ns,
                "model": view.model,
                "promptTokens": tokens.input,
                "completionTokens": tokens.output,
                "totalTokens": tokens.sum,
                "sameCallAs": view.same_call_as,
                "noContent": view.no_content,
                "sdkCut": cut.text() if (cut := sdk_cut(attrs)) else None,  # the SDK's span limits
                **_span_cost(span),
                "toolName": tool.name if tool is not None else None,
                "sessionId": span.session_id,
                "userId": span.user_id,
                "system": view.system,
                "call": calls.number(span),  # the model calls, numbered in start order
                "inputRepeat": repeated["inputRepeat"],
                "inputMessages": [_message(m) for m in calls.input_of(span)],
                "outputMessages": [_message(m) for m in view.output_messages],
                "tools": [tool_name(t) for t in view.tools],
                "input": given,
                "output": shown_output,
                "exceptions": _exceptions(span),
                "events": [e for e in repeated["events"] if e.get("name") != "exception"],
                **_attributes(repeated["attributes"], given, shown_output),
                "omitted": repeated["omitted"],
                "resource": resource,  # an index into "resources"
            }
        )
    return out, resources


def _attributes(attributes: dict[str, Any], given: str | None, output: str | None) -> dict[str, Any]:
    """The attributes, less those whose value is the span's input or output as the page shows it
    (``input.value``, ``output.value``: embedded once), and which those are (``shownAs``: the page
    puts them back in the table)."""
    shown_as: dict[str, str] = {}
    for name, text in (("input", given), ("output", output)):
        if text is None or len(text) < 64:
            continue
        for key, value in attributes.items():
            if isinstance(value, str) and key not in shown_as and len(value) == len(text) and value == text:
                shown_as[key] = name
    kept = {k: v for k, v in attributes.items() if k not in shown_as} if shown_as else attributes
    return {"attributes": kept, "shownAs": shown_as or None}


def _same_as_before(attributes: dict[str, Any], before: dict[str, Any]) -> list[str]:
    """The keys of the long attributes (tool definitions, parameters) the earlier call had the same."""
    return [
        key
        for key, value in attributes.items()
        if isinstance(value, str) and len(value) >= 100 and before.get(key) == value
    ]


def _repeated(calls: ModelCalls, span: SpanRecord) -> dict[str, Any]:
    """A span's reference to the call its input repeats, with its attributes and events less those that
    hold that input; a span that repeats none, as it is."""
    repeat = calls.repeat(span)
    if repeat is None:
        return {"inputRepeat": None, "attributes": span.attributes, "events": span.events, "omitted": None}
    trim = trimmed(span)
    same = _same_as_before(trim.attributes, repeat.span.attributes)
    if same:  # the tool definitions each call sends: shown at the call it refers to
        trim.attributes = {k: v for k, v in trim.attributes.items() if k not in set(same)}
        trim.omitted += len(same)
        trim.keys.append(f"{len(same)} the same as call {repeat.call}'s")
    return {
        "inputRepeat": {
            "call": repeat.call,
            "traceId": repeat.span.trace_id,
            "spanId": repeat.span.span_id,
            "count": repeat.count,
            "text": repeat.text(),
        },
        "attributes": trim.attributes,
        "events": trim.events,
        "omitted": trim.note(),
    }


def _span_cost(span: SpanRecord) -> dict[str, Any]:
    """An LLM span's price in dollars and as the CLI writes it (None: not an LLM call, or no price:
    never shown as $0)."""
    price = span_price(span)
    return (
        {"costUsd": price.dollars, "costText": format_usd(price.usd)}
        if price
        else {"costUsd": None, "costText": None}
    )
