"""One trace, or every trace of a run or a session, as Markdown (``show --format markdown``).

Made to be pasted into an issue or a chat with a model: a header (status, duration, spans,
tokens, cost), the failed spans, the span tree as a nested list, then each span's details: its
messages by role, tool calls with their arguments and results, exceptions with their type and
message, tokens and cost.

Bounded unless ``full``: a value longer than ``Limits.value_chars`` is cut with a visible marker
(``… [+1234 chars, --full]``), the tree, the list of failures and the details stop at their limits
and near ``Limits.total_chars`` characters (60,000 by default: an issue or a comment on GitHub
holds 65,536), and a last line says what was left out and the command that shows all of it.

Every value comes from the database and is untrusted (it is shown as stored: redacted where the
recorder redacted it), and goes through ``md_escape``. Text within a line (names, roles, statuses,
exception messages) has its control, bidi and invisible characters shown as escapes and every
ASCII punctuation character Markdown gives a meaning backslash-escaped: it stays on its line and
opens no heading, list, link, image, emphasis, code span, HTML tag or entity. Bodies (message
texts, tool arguments and results, JSON, stack traces) go in fenced code blocks with a fence longer
than any run of backticks in them, so that no body can close its block early or hide text.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

from openinference.semconv.trace import SpanAttributes

from otel_blackbox._cost.spans import (
    REASONING_KEYS,
    Price,
    format_usd,
    prices_version,
    span_price,
    total_usd,
    usage_of,
)
from otel_blackbox._render.md_escape import code, fenced, inline
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
from otel_blackbox._store.queries import SpanRecord, TraceSummary

__all__ = ["Limits", "group_markdown", "trace_markdown"]

_MARKER = "… [+{} chars, --full]"
_LAST_LINE_ROOM = 1000  # characters kept for the line that says what was left out
_ONE_LINE_JSON = 100  # JSON up to this long stays on one line; longer is indented


@dataclass(frozen=True)
class Limits:
    """How much is shown; ``None``: no limit (``--full``)."""

    value_chars: int | None = 1000  # one message text, argument, result, stack trace, error message
    name_chars: int | None = 200  # one span name, role, id, model or tool name
    total_chars: int | None = 60_000  # the whole document, roughly (details stop before it)
    tree_spans: int | None = 300  # entries of the span tree(s)
    detail_spans: int | None = 100  # spans whose details are shown
    errors: int | None = 20  # failed spans listed at the top
    tree_depth: int = 8  # nesting of the tree list; deeper spans are listed at that depth, marked

    @classmethod
    def unbounded(cls) -> Limits:
        return cls(None, None, None, None, None, None)


# --- values ------------------------------------------------------------------------------------


def _utc(ns: int | None) -> str:
    if ns is None:
        return "-"
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):  # parsed, the JSON would lose a value: shown as it is instead
        raise _DuplicateKey
    return found


def _as_body(value: Any) -> tuple[str, str]:
    """(text, info string) of a value for a code block: JSON text as it is when short and on one
    line, else indented; other text as it is."""
    parsed: Any = value
    if isinstance(value, str):
        stripped = value.strip()
        if not stripped.startswith(("{", "[")):
            return value, "text"
        try:
            parsed = json.loads(stripped, object_pairs_hook=_no_duplicates)
        except (ValueError, RecursionError):
            return value, "text"
        if len(stripped) <= _ONE_LINE_JSON and "\n" not in stripped:
            return stripped, "json"
    try:
        text = json.dumps(parsed, ensure_ascii=False, default=str)
        if len(text) > _ONE_LINE_JSON:
            text = json.dumps(parsed, indent=2, ensure_ascii=False, default=str)
    except (ValueError, RecursionError):
        return str(value), "text"
    return text, "json"


def _first_int(attributes: dict[str, Any], keys: Iterable[str]) -> int:
    for key in keys:
        value = attributes.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 0


def _kind(doc: _Document, span: SpanRecord) -> str:
    if span.oi_span_kind:
        return doc.code_value(span.oi_span_kind)
    return "" if span.span_kind == "INTERNAL" else doc.code_value(span.span_kind)


def _fingerprint(message: Message) -> tuple[Any, ...]:
    calls = tuple((c.id, c.name, c.arguments) for c in message.tool_calls)
    return (message.role, message.content or None, calls, message.tool_call_id)


def _exceptions(span: SpanRecord) -> list[tuple[str, str, str | None]]:
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


# --- the document ------------------------------------------------------------------------------


@dataclass
class _Numbered:
    number: int
    span: SpanRecord
    depth: int
    last_seen_ns: int
    price: Price | None


@dataclass
class _Left:
    """What the bounds left out, for the last line."""

    values: int = 0
    tree: int = 0
    details: int = 0
    errors: int = 0
    traces: int = 0
    trace_total: int = 0
    detail_total: int = 0
    tree_total: int = 0
    error_total: int = 0

    def any(self) -> bool:
        return bool(self.values or self.tree or self.details or self.errors or self.traces)


@dataclass
class _Document:
    limits: Limits
    as_model: str | None
    again: str  # the command that shows everything
    several: bool = False  # several traces: each span says which
    lines: list[str] = field(default_factory=list)
    size: int = 0
    left: _Left = field(default_factory=_Left)
    details_shown: int = 0
    details_stopped: bool = False
    tree_shown: int = 0
    errors_shown: int = 0
    previous_llm: tuple[int, list[tuple[Any, ...]]] | None = None  # span number, its messages

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)
        self.size += sum(len(line) + 1 for line in lines)

    def clip(self, text: str, limit: int | None) -> tuple[str, str | None]:
        """``text`` within ``limit``, and the marker saying what was cut (or None)."""
        if limit is None or len(text) <= limit:
            return text, None
        self.left.values += 1
        return text[:limit], _MARKER.format(len(text) - limit)

    def inline_value(self, text: object) -> str:
        """A message or value within a line: literal text, shortened past ``value_chars``."""
        cut, marker = self.clip(str(text), self.limits.value_chars)
        return inline(cut) + ("" if marker is None else " " + inline(marker))

    def name(self, text: object) -> str:
        """A name within a line: literal text, shortened past ``name_chars``."""
        cut, marker = self.clip(str(text), self.limits.name_chars)
        return inline(cut) + ("" if marker is None else " " + inline(marker))

    def code_value(self, text: object) -> str:
        """An id, a model or a tool name as a code span, shortened past ``name_chars``."""
        cut, marker = self.clip(str(text), self.limits.name_chars)
        return code(cut) + ("" if marker is None else " " + inline(marker))

    def room(self) -> bool:
        """Whether the document is still short of its bound (less what the last line needs)."""
        total = self.limits.total_chars
        return total is None or self.size < total - _LAST_LINE_ROOM

    def block(self, value: Any) -> list[str]:
        body, info = _as_body(value)
        cut, marker = self.clip(body, self.limits.value_chars)
        lines = fenced(cut if marker is None else f"{cut}\n{marker}", info)
        return ["", *lines]

    def text(self) -> str:
        if self.left.any():
            self.lines += ["", self._left_out_line()]
        return "\n".join(self.lines) + "\n"

    def _left_out_line(self) -> str:
        left, limits = self.left, self.limits
        parts = []
        if left.traces:
            parts.append(f"{left.traces} of {left.trace_total} traces")
        if left.details:
            parts.append(f"the details of {left.details} of {left.detail_total} spans")
        if left.tree:
            parts.append(f"{left.tree} of {left.tree_total} span tree entries")
        if left.errors:
            parts.append(f"{left.errors} of {left.error_total} failed spans in the list of failures")
        said = ""
        if parts:
            bound = (
                f" (the output stops near {limits.total_chars:,} characters)" if limits.total_chars else ""
            )
            said = f"Left out{bound}: " + ", ".join(parts) + "."
        if left.values:
            said += f" {_plural(left.values, 'value')} shortened (the marker says by how much)."
        return f"*{inline(said.strip())} All of it: {code(self.again)}*"


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


def _span_facts(doc: _Document, item: _Numbered) -> str:
    """The tree entry of a span: marker, name, kind, duration or open, model, tokens, cost."""
    span = item.span
    parts = [f"{status_marker(span.status)} {doc.name(span.name)}"]
    kind = _kind(doc, span)
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
    if span.model:
        parts.append(doc.code_value(span.model))
    if span.total_tokens is not None:
        parts.append(f"{span.total_tokens} tokens")
    if item.price is not None:
        parts.append(inline(format_usd(item.price.usd)))
    return " · ".join(parts) + f" (span {item.number})"


def _tree(doc: _Document, items: list[_Numbered], heading: str) -> None:
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


def _errors(doc: _Document, items: list[_Numbered], heading: str) -> None:
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
        head = f"- {status_marker(span.status)} {doc.name(span.name)} {_kind(doc, span)}".rstrip()
        reasons = [f"{doc.code_value(kind)}: {doc.inline_value(text)}" for kind, text, _ in _exceptions(span)]
        if not reasons and span.status_message:
            reasons = [doc.inline_value(span.status_message)]
        doc.add(f"{head} (span {item.number}): " + ("; ".join(reasons) or "failed, with no message"))


def _message_lines(doc: _Document, message: Message) -> list[str]:
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
        called = f"{role}{extra} → tool call {doc.code_value(call.name or '?')}"
        if call.id:
            called += f" (id {doc.code_value(call.id)})"
        lines += ["", called, *doc.block(call.arguments or "")]
        extra = ""
    for hosted in message.hosted:
        lines += ["", f"{role} → provider tool {doc.code_value(hosted.name)}"]
        if hosted.arguments is not None:
            lines += doc.block(hosted.arguments)
        if hosted.result is not None:
            lines += ["", "Its result:", *doc.block(hosted.result)]
    return lines or ["", role + extra + " (no content)"]


def _messages(
    doc: _Document, label: str, messages: list[Message], skip: int = 0, skipped_from: int = 0
) -> list[str]:
    if not messages:
        return []
    lines = ["", f"**{label}**"]
    if skip:
        lines += ["", f"*The first {skip} messages are those of span {skipped_from}, shown there.*"]
    for message in messages[skip:]:
        lines += _message_lines(doc, message)
    return lines


def _tokens_line(doc: _Document, span: SpanRecord, price: Price | None) -> str | None:
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


def _details(doc: _Document, item: _Numbered, heading: str) -> list[str]:
    """The details of one span, as lines."""
    span, attrs = item.span, item.span.attributes
    title = f"{heading} {item.number}. {status_marker(span.status)} {doc.name(span.name)} {_kind(doc, span)}"
    lines = ["", title.rstrip(), ""]
    if span.status == "open":
        status = "OPEN: still open when the recording stopped (killed, crashed or still running)"
    elif span.status == "error":
        status = "ERROR" + (f": {doc.inline_value(span.status_message)}" if span.status_message else "")
    else:
        status = inline(span.status.upper())
    lines.append(f"- Status: {status} · {fmt_duration(span.duration_ns)} · started {_utc(span.start_ns)}")
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
    for kind, message, stack in _exceptions(span):
        lines += ["", f"**Exception** {doc.code_value(kind)}: {doc.inline_value(message)}"]
        if stack:
            lines += doc.block(stack.rstrip())
    return lines


def _add_details(doc: _Document, items: list[_Numbered], heading: str, span_heading: str) -> None:
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
                if limits.total_chars is not None and doc.size + size > limits.total_chars - _LAST_LINE_ROOM:
                    doc.details_stopped = True
                    doc.left.values, doc.previous_llm = before  # what was not shown was not shortened
                else:
                    doc.add(*lines)
                    doc.details_shown += 1
                    continue
        doc.left.details += 1


def _llm_price(doc: _Document, span: SpanRecord) -> Price | None:
    """An LLM span's price (as the other views: only a span of kind LLM is a priced call)."""
    return span_price(span, as_model=doc.as_model) if span.oi_span_kind == "LLM" else None


def _numbered(doc: _Document, spans: list[SpanRecord], last_seen_ns: int, start: int) -> list[_Numbered]:
    return [
        _Numbered(start + n, span, depth, last_seen_ns, _llm_price(doc, span))
        for n, (span, depth) in enumerate(_tree_order(spans))
    ]


def _header(
    doc: _Document,
    items: list[_Numbered],
    status: str,
    start_ns: int,
    duration_ns: int,
    traces: int | None = None,
) -> None:
    spans = [i.span for i in items]
    failed = sum(1 for s in spans if s.status == "error")
    opened = sum(1 for s in spans if s.status == "open")
    notes = [_plural(n, word) for n, word in ((failed, "failed span"), (opened, "open span")) if n]
    doc.add("", f"- Status: **{status.upper()}**" + (f" ({', '.join(notes)})" if notes else ""))
    doc.add(f"- Started: {_utc(start_ns)} · duration {fmt_duration(duration_ns)}")
    doc.add(f"- Spans: {len(spans)}" + ("" if traces is None else f" in {_plural(traces, 'trace')}"))
    sessions = list(dict.fromkeys(s.session_id for s in spans if s.session_id))
    if sessions:
        shown = ", ".join(doc.code_value(s) for s in sessions[:5])
        doc.add(f"- Session: {shown}" + (f" (+{len(sessions) - 5} more)" if len(sessions) > 5 else ""))
    llm = [i for i in items if i.span.oi_span_kind == "LLM"]
    counted = [i.span for i in llm if i.span.total_tokens is not None or _has_usage(i.span)]
    if counted:
        prompt = sum(s.prompt_tokens or 0 for s in counted)
        completion = sum(s.completion_tokens or 0 for s in counted)
        total = sum(s.total_tokens or (s.prompt_tokens or 0) + (s.completion_tokens or 0) for s in counted)
        calls = _plural(len(counted), "LLM call")
        doc.add(f"- Tokens: {total} (prompt {prompt}, completion {completion}) in {calls}")
    prices = [i.price for i in llm if _has_usage(i.span)]  # what can be priced: calls with a usage
    if prices:
        total_price: Decimal | None = total_usd(prices)
        cost = inline(format_usd(total_price)) if total_price is not None else "no price"
        if doc.as_model:
            cost += f" as if {doc.code_value(doc.as_model)} had answered"
        unpriced = sum(1 for p in prices if p is None)
        without = f"; {_plural(unpriced, 'LLM call')} with no price" if unpriced else ""
        doc.add(f"- Cost: {cost} ({inline(prices_version())}{without})")


def _has_usage(span: SpanRecord) -> bool:
    return span.prompt_tokens is not None or span.completion_tokens is not None


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
    doc = _Document(
        Limits.unbounded() if full else limits or Limits(), as_model, _command("trace", summary.trace_id)
    )
    items = _numbered(doc, spans, summary.end_ns, 1)
    doc.add(f"# Trace {doc.code_value(summary.trace_id)}: {doc.name(summary.root_name)}")
    _header(doc, items, summary.status, summary.start_ns, summary.duration_ns)
    _errors(doc, items, "## Failures")
    _tree(doc, items, "## Span tree")
    _add_details(doc, items, "## Spans", "###")
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
    doc = _Document(
        Limits.unbounded() if full else limits or Limits(), as_model, _command(kind, ident), several=True
    )
    numbered: list[tuple[TraceSummary, list[_Numbered]]] = []
    for summary, spans in traces:
        first = 1 + (numbered[-1][1][-1].number if numbered and numbered[-1][1] else 0)
        numbered.append((summary, _numbered(doc, spans, summary.end_ns, first)))
    every = [item for _, items in numbered for item in items]
    start = min((s.start_ns for s, _ in traces), default=0)
    end = max((s.end_ns for s, _ in traces), default=start)
    statuses = {s.status for s, _ in traces}
    status = "open" if "open" in statuses else "error" if "error" in statuses else "ok"
    doc.add(f"# {kind.capitalize()} {doc.code_value(ident)}")
    _header(doc, every, status, start, max(0, end - start), len(traces))
    _errors(doc, every, "## Failures")
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
            f"{summary.status.upper()} · started {_utc(summary.start_ns)} · "
            f"{fmt_duration(summary.duration_ns)} · {_plural(summary.span_count, 'span')}{opened}",
        )
        _tree(doc, items, "### Span tree")
        _add_details(doc, items, "### Spans", "####")
    return doc.text()
