"""Plain-text views for the terminal: durations, times, the span tree and its verbose details.

Every value that came from a span passes through ``safe`` so a hostile span name cannot send
terminal control sequences.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import fields as dataclass_fields
from datetime import datetime
from typing import TYPE_CHECKING, Any

from otel_blackbox._cost.prices import Price, format_usd
from otel_blackbox._cost.spans import is_priced_call, span_price, spans_cost
from otel_blackbox._render.words import counted
from otel_blackbox._spans.sdk_limits import cut_summary, sdk_cut
from otel_blackbox._spans.view.model import Tokens
from otel_blackbox._spans.view.registry import view_of
from otel_blackbox._spans.view.trace import content_missing, read_trace

if TYPE_CHECKING:
    from otel_blackbox._render.repeats import ModelCalls
    from otel_blackbox._spans.messages import Message
    from otel_blackbox._store.queries import SpanRecord, TraceSummary

__all__ = [
    "bidi_escaped",
    "clip",
    "fmt_duration",
    "fmt_time",
    "render_tree",
    "safe",
    "safe_json",
    "span_to_json",
    "status_marker",
]

Style = Callable[[str, str], str]  # (text, status) -> styled text

# Bidirectional marks, embeddings, overrides and isolates: they reorder what follows them on screen.
_BIDI_CLASS = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_BIDI = re.compile(f"[{_BIDI_CLASS}]")
# C0 and C1 controls (ESC, CR, NUL, BEL...), the bidi controls, the line and paragraph separators,
# and lone surrogates (which a UTF-8 terminal cannot even be sent): each is shown as its escape,
# never emitted.
_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f"  # C0 but newline and tab (handled below), DEL, C1
    f"{_BIDI_CLASS}\u2028\u2029\ud800-\udfff]"
)
_MARKERS = {"ok": "✓", "error": "✗", "open": "…", "unset": "·"}


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe(text: object, *, single_line: bool = True) -> str:
    """Neutralize control characters (escape sequences, NUL...) before they reach a terminal."""
    value = _CONTROL.sub(_escape, str(text))
    return value.replace("\n", "\\n").replace("\t", " ") if single_line else value


def bidi_escaped(text: str) -> str:
    """Bidi controls as their escapes, for HTML text (where the other controls ``safe`` escapes do
    no harm); the report's JavaScript does the same (report.html, ``escapeBidi``)."""
    return _BIDI.sub(_escape, text)


def safe_json(text: str) -> str:
    """JSON text with the characters ``safe`` neutralizes written as ``\\u`` + 4 hex digit escapes: the same
    JSON value, fit for a terminal (JSON already escapes C0 controls; a lone surrogate, which UTF-8
    cannot encode, becomes the escape JSON.stringify writes)."""
    if text.isascii() and text.isprintable():  # the common case: nothing to escape, no regex
        return text
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def clip(text: str, limit: int | None) -> str:
    """``text`` cut to ``limit`` characters, saying how many were left out."""
    if limit is None or len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more chars)"


def fmt_duration(ns: int | None) -> str:
    if ns is None:
        return "-"
    ms = ns / 1e6
    if ms < 1:
        return f"{ms:.2f}ms"
    if ms < 1000:
        return f"{ms:.0f}ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.2f}s"
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def fmt_time(ns: int | None) -> str:
    """Local time with its zone (``2026-12-07 02:04:06 UTC``, ``... CET``): a time without one is
    read wrongly beside the UTC of a Markdown report or a server's logs."""
    if ns is None:
        return "-"
    local = datetime.fromtimestamp(ns / 1e9).astimezone()
    return f"{local:%Y-%m-%d %H:%M:%S} {local.tzname() or local.strftime('%z')}"


def status_marker(status: str) -> str:
    return _MARKERS.get(status, "?")


def _plain(text: str, _status: str) -> str:
    return text


def _llm_price(span: SpanRecord, price_model: str | None) -> Price | None:
    return span_price(span, as_model=price_model)


def _span_line(
    span: SpanRecord, last_seen_ns: int, price_model: str | None = None, call: int | None = None
) -> str:
    view = view_of(span)
    parts = [f"{status_marker(span.status)} {safe(view.name or span.name)}"]
    if view.kind:
        parts.append(f"[{safe(view.kind)}]")
    elif span.span_kind != "INTERNAL":
        parts.append(f"[{span.span_kind}]")
    if call is not None:  # the model calls numbered in start order: "same ... as call 12" names them
        parts.append(f"call {call}")
    if span.status == "open":
        parts.append(f"OPEN (last seen {fmt_duration(max(0, last_seen_ns - span.start_ns))} after start)")
    else:
        parts.append(fmt_duration(span.duration_ns))
        if span.status == "error":
            parts.append("ERROR" + (f": {safe(span.status_message)}" if span.status_message else ""))
    if view.model:
        parts.append(safe(view.model))
    tokens = view.tokens
    if view.same_call_as is not None:
        parts.append(f"same model call as span {safe(view.same_call_as)}")
    elif tokens is not None and tokens.sum is not None:
        parts.append(f"tokens {tokens.input or 0}+{tokens.output or 0}={tokens.sum}")
    if is_priced_call(span):
        price = _llm_price(span, price_model)
        parts.append(f"cost {format_usd(price.usd if price else None)}")
    cut = sdk_cut(span.kept_attributes)
    if cut:  # the SDK's span limits dropped part of it before it was recorded (-v says what lifts them)
        parts.append(f"CUT BY SDK LIMITS ({cut.counts()})")
    return "  ".join(parts)


def _format_message(message: Message, limit: int | None) -> list[str]:
    label = safe(message.role) + (f" {safe(message.tool_call_id)}" if message.tool_call_id else "")
    lines = [f"[{label} reasoning] {safe(clip(text, limit))}" for text in message.reasoning]
    if message.content:
        lines.append(f"[{label}] {safe(clip(message.content, limit))}")
    for call in message.tool_calls:
        args = safe(clip(_text(call.tool_input), limit))
        called = f"[{label}] → {safe(call.tool_name or '?')}({args})"
        lines.append(called + (f"  id={safe(call.tool_call_id)}" if call.tool_call_id else ""))
    return lines or [f"[{label}]"]


def _text(value: object) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _details(span: SpanRecord, limit: int | None, calls: ModelCalls | None = None) -> list[str]:
    # The OpenInference names: only for `show -v` (every CLI command imports this module, for ``safe``).
    from openinference.semconv.trace import SpanAttributes

    from otel_blackbox._spans.messages import tool_name

    view = view_of(span)
    lines: list[str] = []
    cut = sdk_cut(span.kept_attributes)
    if cut:
        lines.append(cut.text())
    if view.no_content:
        lines.append(f"no content recorded: {safe(view.no_content)}")
    if view.not_a_call:
        lines.append(f"not a model call: {safe(view.not_a_call)}")
    if view.tools:
        lines.append("tools offered: " + ", ".join(safe(tool_name(t)) for t in view.tools))
    if view.system:
        lines.append(f"system: {safe(clip(view.system, limit))}")
    repeat = calls.repeat(span) if calls is not None else None
    if repeat is not None:  # the messages an earlier call showed: referred to, the new ones shown
        lines.append(f"messages: {repeat.text()}")
        lines += [f"  {m}" for msg in repeat.new for m in _format_message(msg, limit)]
    elif view.input_messages:
        lines.append("messages:")
        lines += [f"  {m}" for msg in view.input_messages for m in _format_message(msg, limit)]
    elif view.tool is not None and view.tool.arguments is not None:
        lines.append(f"input: {safe(clip(_text(view.tool.arguments), limit))}")
    elif view.input_text is not None:
        lines.append(f"input: {safe(clip(view.input_text, limit))}")
    if view.output_messages:
        lines.append("output:")
        lines += [f"  {m}" for msg in view.output_messages for m in _format_message(msg, limit)]
    elif view.tool is not None and view.tool.result is not None:
        lines.append(f"output: {safe(clip(_text(view.tool.result), limit))}")
    elif view.output_text is not None:
        lines.append(f"output: {safe(clip(view.output_text, limit))}")
    tokens = view.tokens
    if view.model or tokens is not None:
        counts = tokens or Tokens()
        detail = [f"{name} {value}" for name, value in
                  (("cached", counts.cache_read), ("reasoning", counts.reasoning)) if value]  # fmt: skip
        lines.append(
            f"model: {safe(view.model or '-')}  tokens: prompt {counts.input or 0}, "
            f"completion {counts.output or 0}, total {counts.sum or 0}"
            + (f" ({', '.join(detail)})" if detail else "")
        )
    params = span.attributes.get(SpanAttributes.LLM_INVOCATION_PARAMETERS)
    if params:
        lines.append(f"parameters: {safe(clip(str(params), limit))}")
    for event in span.exception_events:
        ev = event.get("attributes", {})
        lines.append(
            f"exception: {safe(ev.get('exception.type', '?'))}: {safe(ev.get('exception.message', ''))}"
        )
        stack = ev.get("exception.stacktrace")
        if stack:
            lines += [f"  {safe(line)}" for line in clip(str(stack), limit).rstrip().splitlines()]
    if span.status == "open":
        lines.append(
            "still open when the recording stopped: the process was killed, crashed or is still running"
        )
    return lines


def render_tree(
    summary: TraceSummary,
    spans: list[SpanRecord],
    *,
    verbose: bool = False,
    max_chars: int | None = 1000,
    style: Style = _plain,
    price_model: str | None = None,
    collapse: bool = True,
    calls: ModelCalls | None = None,
) -> list[str]:
    """The span tree of one trace as lines, children under parents in start order; each LLM span's
    cost, and the trace's in the header (``price_model``: its tokens priced as that model).

    The model calls are numbered (``call 3``); with ``verbose``, a call whose input starts with an
    earlier call's shows ``same 214 messages as call 12, 2 new`` and the new messages only, unless
    ``collapse`` is false (``--full``). ``calls``: the numbers and repeats of a wider set of spans
    (a run's), else those of ``spans``."""
    from otel_blackbox._render.repeats import number_calls  # not for every command

    read_trace(spans)
    if calls is None:
        calls = number_calls(spans, collapse=collapse and verbose)
    by_id = {s.span_id: s for s in spans}
    children: dict[str | None, list[SpanRecord]] = {}
    for span in spans:
        parent = span.parent_span_id if span.parent_span_id in by_id else None
        children.setdefault(parent, []).append(span)
    opened = f", {summary.open_count} open" if summary.open_count else ""
    header = (
        f"trace {summary.trace_id}  {safe(summary.root_name)}  {summary.status.upper()}  "
        f"{fmt_duration(summary.duration_ns)}  {counted(summary.span_count, 'span')}{opened}  "
        f"started {fmt_time(summary.start_ns)}"
    )
    trace_cost = spans_cost(spans, as_model=price_model)
    if trace_cost.usd is not None:
        header += f"  cost {trace_cost.text()}" + (f" (as {safe(price_model)})" if price_model else "")
    if summary.session_id:
        header += f"  session {safe(summary.session_id)}"
    lines = [style(header, summary.status)]
    if summary.status == "incomplete":
        lines.append(f"incomplete: {safe(summary.incomplete or '')}")
    missing = content_missing(spans)
    if missing is not None:
        lines.append(f"no content: {safe(missing)}")
    cut_spans = cut_summary(spans)
    if cut_spans is not None:
        lines.append(f"cut: {cut_spans}")

    # Depth-first with an explicit stack: a deeply nested trace must not hit the recursion limit.
    roots = children.get(None, [])
    stack = [(root, "", i == len(roots) - 1) for i, root in reversed(list(enumerate(roots)))]
    while stack:
        span, prefix, last = stack.pop()
        lines.append(
            prefix
            + ("└── " if last else "├── ")
            + style(_span_line(span, summary.end_ns, price_model, calls.number(span)), span.status)
        )
        inner = prefix + ("    " if last else "│   ")
        kids = children.get(span.span_id, [])
        if verbose:
            bar = "│   " if kids else "    "
            lines.extend(inner + bar + line for line in _details(span, max_chars, calls))
        stack.extend((kid, inner, i == len(kids) - 1) for i, kid in reversed(list(enumerate(kids))))
    return lines


def span_to_json(
    span: SpanRecord, price_model: str | None = None, calls: ModelCalls | None = None
) -> dict[str, Any]:
    """A stored span as plain JSON values (for --json output), with its ``cost_usd`` (None: not an
    LLM call, or one with no price).

    With ``calls`` (the trace's, ``repeats.number_calls``): its model call number (``call``, None
    for other spans) and, for a call whose input starts with an earlier call's, ``same_input_as``:
    that call, how many messages they share, the new messages, and what was left out of the span's
    attributes, events and log records (those that hold its input: the earlier call has them)."""
    fields = {f.name: getattr(span, f.name) for f in dataclass_fields(span) if f.name not in ("view", "logs")}
    logs = span.logs
    repeat = calls.repeat(span) if calls is not None else None
    same_input_as: dict[str, Any] | None = None
    if repeat is not None:
        from otel_blackbox._render.repeats import message_json, trimmed

        trim = trimmed(span)
        fields["attributes"], fields["events"], logs = trim.attributes, trim.events, trim.logs
        same_input_as = {
            "call": repeat.call,
            "span_id": repeat.span.span_id,
            "messages": repeat.count,
            "new_messages": [message_json(m) for m in repeat.new],
            "omitted": trim.note(),
        }
    value: dict[str, Any] = json.loads(json.dumps(fields, default=str))
    price = _llm_price(span, price_model)
    value["cost_usd"] = price.dollars if price is not None else None
    cut = sdk_cut(span.kept_attributes)  # what the SDK's span limits dropped, and the setting that lifts them
    value["sdk_limits"] = cut.json() if cut else None
    if logs:  # the log records that carry its content
        value["logs"] = json.loads(json.dumps(logs, default=str))
    if calls is not None:
        value["call"] = calls.number(span)
        if same_input_as is not None:
            value["same_input_as"] = json.loads(json.dumps(same_input_as, default=str))
    return value
