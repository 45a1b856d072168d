"""The spans of a report page as its JSON: each span in tree order with its view (kind, model, tokens,
messages, tool use, cost, whether its call is counted on another span), its exceptions and events, and
the resources the spans point to (each embedded once)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from otel_blackbox._cost.prices import format_usd
from otel_blackbox._cost.spans import span_price
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
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The spans in tree order as the page's JSON, and the resources they point to."""
    out = []
    # Every span of a process has the same resource: each is embedded once, spans point to it
    # (a sixth of a large report's size otherwise).
    resources: list[dict[str, Any]] = []
    resource_index: dict[str, int] = {}
    read_trace(spans)
    for span, depth in _tree_order(spans):
        span_done(1)
        attrs = span.attributes
        view = view_of(span)
        tokens = view.tokens or Tokens()
        tool = view.tool
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
                "inputMessages": [_message(m) for m in view.input_messages],
                "outputMessages": [_message(m) for m in view.output_messages],
                "tools": [tool_name(t) for t in view.tools],
                "input": _shown(tool.arguments)
                if tool is not None and tool.arguments is not None
                else view.input_text,
                "output": _shown(tool.result)
                if tool is not None and tool.result is not None
                else view.output_text,
                "exceptions": _exceptions(span),
                "events": [e for e in span.events if e.get("name") != "exception"],
                "attributes": attrs,
                "resource": resource,  # an index into "resources"
            }
        )
    return out, resources


def _span_cost(span: SpanRecord) -> dict[str, Any]:
    """An LLM span's price in dollars and as the CLI writes it (None: not an LLM call, or no price:
    never shown as $0)."""
    price = span_price(span)
    return (
        {"costUsd": price.dollars, "costText": format_usd(price.usd)}
        if price
        else {"costUsd": None, "costText": None}
    )
