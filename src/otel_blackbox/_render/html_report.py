"""One recorded trace, or one cassette, as a single self-contained HTML file (``otel-blackbox report``).

The page is one file: inline CSS and JS, no external URL, no network fetch, so it opens from disk
and can be attached to an incident. The data rides along as JSON in
``<script type="application/json" id="blackbox-data">`` with ``<``, ``>``, ``&`` and U+2028/2029
escaped, so no value can close the script tag; the page's JS builds the DOM with ``textContent``
and ``createElement`` only, so every value from a span is shown as text, never parsed as HTML.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import resources
from typing import Any

from otel_blackbox._cassette.model import Cassette, terminal_outcome, tool_calls_of
from otel_blackbox._cost.prices import format_usd
from otel_blackbox._cost.spans import span_price, spans_cost
from otel_blackbox._render.cassette_text import describe_step
from otel_blackbox._spans.messages import Message, tool_name
from otel_blackbox._spans.view.model import Tokens
from otel_blackbox._spans.view.registry import view_of
from otel_blackbox._spans.view.trace import content_missing, read_trace
from otel_blackbox._store.queries import SpanRecord, TraceSummary

__all__ = [
    "SpanGroup",
    "cassette_report",
    "embed_json",
    "group_data",
    "group_report",
    "trace_data",
    "trace_report",
]

_UNSAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_UNSAFE_RE = re.compile("[<>&\u2028\u2029\ud800-\udfff]")


# Deeper values are shown as a note: a payload nested near the JSON parser's own limit would
# otherwise exhaust the recursion limit here or in the encoder, and nobody reads level 200.
_MAX_DEPTH = 200


def _jsonable(value: Any, depth: int = 0) -> Any:
    """Plain JSON values: non-finite floats and unknown objects become strings (JSON.parse rejects NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (dict, list, tuple)) and depth >= _MAX_DEPTH:
        return f"[nested deeper than {_MAX_DEPTH} levels: not shown]"
    if isinstance(value, dict):
        return {str(k): _jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, depth + 1) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def embed_json(value: Any) -> str:
    """JSON that is safe inside a ``<script>`` element: it can never contain ``</script>`` or ``<!--``."""
    text = json.dumps(_jsonable(value), ensure_ascii=False, sort_keys=False)
    return _UNSAFE_RE.sub(lambda m: _UNSAFE.get(m.group(0)) or f"\\u{ord(m.group(0)):04x}", text)


def _iso(ns: int | None) -> str | None:
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


def _tokens_by_model(spans: list[SpanRecord]) -> list[dict[str, Any]]:
    """Each model's tokens over the model calls (a call two spans describe counted once)."""
    totals: dict[str, dict[str, Any]] = {}
    for view in (view_of(s) for s in spans):
        tokens = view.tokens
        if not view.counts or tokens is None or tokens.sum is None:
            continue
        model = view.model or "unknown"
        entry = totals.setdefault(model, {"model": model, "input": 0, "output": 0, "total": 0})
        entry["input"] += tokens.input or 0
        entry["output"] += tokens.output or 0
        entry["total"] += tokens.sum
    return list(totals.values())


def _distinct(values: list[str | None]) -> list[str]:
    return list(dict.fromkeys(v for v in values if v))


@dataclass(frozen=True)
class SpanGroup:
    """What a page of several traces is about: a run (one recorder's lifetime) or a session."""

    kind: str  # "run" or "session"
    id: str
    pid: int | None = None


def _span_entries(
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
                "start": _iso(span.start_ns),
                "startOffsetNs": span.start_ns - start,
                "endOffsetNs": end - start,
                "durationNs": span.duration_ns,
                "model": view.model,
                "promptTokens": tokens.input,
                "completionTokens": tokens.output,
                "totalTokens": tokens.sum,
                "sameCallAs": view.same_call_as,
                "noContent": view.no_content,
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


def _counts(spans: list[SpanRecord]) -> dict[str, Any]:
    """The header fields a one-trace page and a several-trace page share."""
    cost = spans_cost(spans)
    return {
        "costUsd": cost.dollars,
        "costText": cost.text() if cost.usd is not None else None,  # "$0.0097 + 1 unpriced"
        "unpricedLlmSpans": cost.unpriced,
        "spanCount": len(spans),
        "openCount": sum(1 for s in spans if s.status == "open"),
        "errorCount": sum(1 for s in spans if s.status == "error"),
        "tokensByModel": _tokens_by_model(spans),
        "users": _distinct([s.user_id for s in spans]),
        "noContent": content_missing(spans),  # model calls that recorded no messages, and why
    }


def trace_data(
    summary: TraceSummary,
    spans: list[SpanRecord],
    last_seen_ns: int,
    span_done: Callable[[int], None] = lambda _n: None,
) -> dict[str, Any]:
    """What the trace page shows, as plain JSON (times as nanosecond offsets from the trace start).

    ``span_done(1)`` is called after each span (for a progress bar over a large trace).
    """
    start = min([summary.start_ns, *(s.start_ns for s in spans)])
    stop = max([last_seen_ns, summary.end_ns, *(s.end_ns or s.start_ns for s in spans)])
    out, resources = _span_entries(spans, start, lambda _s: last_seen_ns, span_done)
    return {
        "kind": "trace",
        "trace": {
            "traceId": summary.trace_id,
            "rootName": summary.root_name,
            "status": summary.status,
            "start": _iso(start),
            "durationNs": stop - start,
            **_counts(spans),
            "lastSeen": _iso(last_seen_ns) if summary.open_count else None,
            "sessions": _distinct([summary.session_id, *(s.session_id for s in spans)]),
        },
        "spans": out,
        "resources": resources,
    }


def group_data(
    group: SpanGroup,
    spans: list[SpanRecord],
    last_seen_by_trace: dict[str, int],
    span_done: Callable[[int], None] = lambda _n: None,
) -> dict[str, Any]:
    """The page of several traces (a run's, a session's): the same span entries as a trace page,
    each carrying its trace id, under a header for the whole group. ``last_seen_by_trace`` says
    where each trace's open spans are drawn to end (as on that trace's own page)."""

    def last_seen_of(span: SpanRecord) -> int:
        return last_seen_by_trace.get(span.trace_id, span.written_ns)

    ends = [s.end_ns or s.start_ns for s in spans]
    start = min((s.start_ns for s in spans), default=0)
    stop = max([start, *ends, *(last_seen_of(s) for s in spans if s.status == "open")])
    out, resources = _span_entries(spans, start, last_seen_of, span_done)
    counts = _counts(spans)
    status = "open" if counts["openCount"] else "error" if counts["errorCount"] else "ok"
    return {
        "kind": group.kind,
        "group": {
            "kind": group.kind,
            "id": group.id,
            "pid": group.pid,
            "status": status,
            "start": _iso(start),
            "durationNs": stop - start,
            "traceCount": len({s.trace_id for s in spans}),
            "rootNames": _distinct([s.name for s in spans if s.parent_span_id is None]),
            **counts,
            "lastSeen": _iso(max(last_seen_by_trace.values()))
            if counts["openCount"] and last_seen_by_trace
            else None,
            "sessions": _distinct([s.session_id for s in spans]),
        },
        "spans": out,
        "resources": resources,
    }


def cassette_data(cassette: Cassette) -> dict[str, Any]:
    outcome = terminal_outcome(cassette)
    first = cassette.steps[0].timestamp if cassette.steps else 0
    rounds = 0
    steps = []
    for step in cassette.steps:
        if step.type == "model_output" and tool_calls_of(step.payload):
            rounds += 1
        in_round = step.type in ("tool_call", "tool_result") or (
            step.type == "model_output" and bool(tool_calls_of(step.payload))
        )
        steps.append(
            {
                "id": step.id,
                "index": step.index,
                "type": step.type,
                "timestamp": step.timestamp,
                "offsetMs": step.timestamp - first,
                "description": describe_step(step, 200),
                "hash": step.hash,
                "hashShort": step.hash[:8],
                "prevHash": step.prev_hash,
                "toolRound": rounds if in_round and rounds else None,
                "payload": step.payload,
            }
        )
    return {
        "kind": "cassette",
        "cassette": {
            "id": cassette.id,
            "version": cassette.version,
            "createdAt": cassette.created_at,
            "parentId": cassette.parent_id,
            "forkedFromStepId": cassette.forked_from_step_id,
            "head": cassette.head,
            "stepCount": len(cassette.steps),
            "toolRounds": rounds,
            "outcome": {
                "status": outcome.status,
                "finalAnswer": outcome.final_answer,
                "failureReason": outcome.failure_reason,
            },
        },
        "steps": steps,
    }


@functools.cache
def _template() -> str:
    return resources.files(__package__).joinpath("report.html").read_text(encoding="utf-8")


def _page(data: dict[str, Any]) -> str:
    before, marker, after = _template().partition("__BLACKBOX_DATA__")
    assert marker, "report.html lost its data marker"
    return before + embed_json(data) + after


def trace_report(
    summary: TraceSummary,
    spans: list[SpanRecord],
    last_seen_ns: int,
    span_done: Callable[[int], None] = lambda _n: None,
    *,
    select_failure: bool = False,
) -> str:
    """The trace page: header, waterfall, span tree, details, search, errors-only, arrow keys;
    opened on the span where it failed with ``select_failure`` (else on the first span)."""
    return _page({**trace_data(summary, spans, last_seen_ns, span_done), "selectFailure": select_failure})


def group_report(
    group: SpanGroup,
    spans: list[SpanRecord],
    last_seen_by_trace: dict[str, int],
    span_done: Callable[[int], None] = lambda _n: None,
    *,
    select_failure: bool = False,
) -> str:
    """The page of a run or a session: every trace's spans on one time axis, the same views."""
    return _page({**group_data(group, spans, last_seen_by_trace, span_done), "selectFailure": select_failure})


def cassette_report(cassette: Cassette) -> str:
    """The cassette page: the steps in order with type, description, short hash and tool round."""
    return _page(cassette_data(cassette))
