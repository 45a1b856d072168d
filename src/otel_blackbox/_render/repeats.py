"""Model calls numbered, and what each one's input repeats of an earlier call's.

An agent's model calls each carry the whole conversation before them, so showing every call's input
in full is the square of the run. Every view of a trace (``show -v``, ``--format markdown``,
``--json``, ``report``, the workbench, the MCP tools) shows a call whose input starts with an
earlier call's whole input as a reference, ``same 214 messages as call 12, 2 new``, then the new
messages only; ``--full`` (``full=true``) shows every message.

The model calls are numbered 1, 2, ... in start order across the spans given (a run's or a
session's traces together). The earlier call a call refers to is the one before it when that one's
input is a prefix of its own (the usual case: the conversation grows), else the latest of a few
earlier calls that is (after a context compaction, usually none: shown in full). Messages compare as
``a is b or a == b``, the last one first: the work is bounded by the messages read, never the square
of the calls. A span that describes a call another span counts (``same_call_as``) gets no number
and refers to that call.

The attributes, events and log records that hold a repeated call's input (OpenInference's
``llm.input_messages.*`` and ``input.value``, GenAI's ``gen_ai.input.messages``, its per-message
events...) grow with the square too: ``trimmed`` leaves them out of a repeated call, saying how many.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from otel_blackbox._render.words import counted
from otel_blackbox._spans.messages import Message
from otel_blackbox._spans.view.registry import view_of
from otel_blackbox._spans.view.trace import read_trace
from otel_blackbox._store.queries import SpanRecord

__all__ = ["INPUT_ATTRIBUTES", "ModelCalls", "Repeat", "Trimmed", "message_json", "number_calls", "trimmed"]

# Earlier calls tried beyond the one before (a compaction, a sub-agent's calls in between).
_FALLBACK = 16

# The attributes that hold a model call's input, by convention: a name, or a name and its flattened
# members (``llm.input_messages.3.message.content``).
INPUT_ATTRIBUTES = (
    "llm.input_messages",  # OpenInference, flattened
    "input.value",  # OpenInference: the whole request
    "gen_ai.input.messages",  # GenAI
    "gen_ai.prompt",  # OpenLLMetry, flattened
    "llm.prompts",  # OpenLLMetry's older form
    "request_data",  # Logfire's LLM integrations: the whole request
    "pydantic_ai.all_messages",  # pydantic-ai's agent run
    "all_messages_events",
    "gcp.vertex.agent.llm_request",  # Google ADK: the whole request
)
# GenAI's per-message events (span events or log records) of a call's input.
_INPUT_EVENTS = frozenset(
    {"gen_ai.system.message", "gen_ai.user.message", "gen_ai.assistant.message", "gen_ai.tool.message"}
)
_DETAILS_EVENT = "gen_ai.client.inference.operation.details"  # its input: gen_ai.input.messages

Key = tuple[str, str]


def _key(span: SpanRecord) -> Key:
    return (span.trace_id, span.span_id)


@dataclass(frozen=True)
class Repeat:
    """A call's input that starts with an earlier call's whole input: that call's number and span, how
    many messages they share, and the messages that follow."""

    call: int
    span: SpanRecord
    count: int
    new: Sequence[Message]

    def text(self) -> str:
        """``same 214 messages as call 12, 2 new``."""
        return f"same {counted(self.count, 'message')} as call {self.call}, {len(self.new)} new"


@dataclass
class ModelCalls:
    """The call numbers of a trace's model calls, and the input each one repeats (``collapse``)."""

    numbers: dict[Key, int] = field(default_factory=dict)
    repeats: dict[Key, Repeat] = field(default_factory=dict)

    def number(self, span: SpanRecord) -> int | None:
        return self.numbers.get(_key(span))

    def repeat(self, span: SpanRecord) -> Repeat | None:
        return self.repeats.get(_key(span))

    def input_of(self, span: SpanRecord) -> Sequence[Message]:
        """The input messages to show of ``span``: the new ones of a repeat, else all."""
        repeat = self.repeats.get(_key(span))
        return repeat.new if repeat is not None else view_of(span).input_messages


def _same(a: Message, b: Message) -> bool:
    return a is b or a == b


def _is_prefix(short: list[Message], long: list[Message]) -> bool:
    """Whether ``short`` (not empty) is where ``long`` starts: its last message first (a cheap no)."""
    n = len(short)
    if not n or n > len(long):
        return False
    if short is long:
        return True
    if not _same(short[-1], long[n - 1]) or not _same(short[0], long[0]):
        return False
    return all(_same(a, b) for a, b in zip(short, long, strict=False))


def number_calls(spans: Iterable[SpanRecord], *, collapse: bool = True) -> ModelCalls:
    """The model calls of ``spans`` numbered in start order and, with ``collapse``, what each one's
    input repeats of an earlier call's."""
    spans = sorted(read_trace(list(spans)), key=lambda s: (s.start_ns, s.trace_id, s.span_id))
    calls = ModelCalls()
    earlier: list[tuple[int, SpanRecord]] = []  # the numbered calls with an input, in order
    others: list[SpanRecord] = []
    for span in spans:
        view = view_of(span)
        if not view.is_model_call:
            continue
        if view.same_call_as is not None:
            others.append(span)
            continue
        number = len(calls.numbers) + 1
        calls.numbers[_key(span)] = number
        if not view.input_messages:
            continue
        if collapse:
            found = _earlier_prefix(view.input_messages, [c for c in reversed(earlier[-_FALLBACK - 1 :])])
            if found is not None:
                calls.repeats[_key(span)] = found
        earlier.append((number, span))
    if collapse:
        by_id = {(s.trace_id, s.span_id): (n, s) for n, s in earlier}
        for span in others:
            view = view_of(span)
            if not view.input_messages:
                continue
            target = by_id.get((span.trace_id, view.same_call_as or ""))
            tried = [target] if target is not None else []
            before = [c for c in earlier if c[1].start_ns <= span.start_ns][-_FALLBACK:]
            found = _earlier_prefix(view.input_messages, tried + list(reversed(before)))
            if found is not None:
                calls.repeats[_key(span)] = found
    return calls


def _earlier_prefix(messages: list[Message], candidates: list[tuple[int, SpanRecord]]) -> Repeat | None:
    """The first of ``candidates`` (the call before first) whose whole input starts ``messages``."""
    for number, span in candidates:
        before = view_of(span).input_messages
        if _is_prefix(before, messages):
            return Repeat(number, span, len(before), messages[len(before) :])
    return None


# --- what a repeated call's span holds of its input ------------------------------------------------


def _input_attribute(key: str) -> str | None:
    """The family of an attribute that holds a call's input (``llm.input_messages.*``), or None."""
    for name in INPUT_ATTRIBUTES:
        if key == name:
            return name
        if key.startswith(name) and key[len(name) : len(name) + 1] == ".":
            return name + ".*"
    return None


def _event_name(event: dict[str, Any]) -> str | None:
    name = event.get("name") or event.get("event_name")
    attrs = event.get("attributes")
    if not name and isinstance(attrs, dict):
        name = attrs.get("event.name")
    return name if isinstance(name, str) else None


@dataclass
class Trimmed:
    """A span's attributes, events and log records without what holds its input; what was left out."""

    attributes: dict[str, Any]
    events: list[dict[str, Any]]
    logs: list[dict[str, Any]]
    omitted: int = 0  # attributes, events and log records left out (or cut)
    keys: list[str] = field(default_factory=list)  # what they were: attribute families, event names

    def note(self) -> dict[str, Any] | None:
        return {"count": self.omitted, "keys": self.keys} if self.omitted else None


def _trim_record(record: dict[str, Any], out: Trimmed) -> dict[str, Any] | None:
    """An event or log record, None when it holds an input message, without the input it holds."""
    name = _event_name(record)
    if name in _INPUT_EVENTS:
        out.omitted += 1
        out.keys.append(str(name))
        return None
    if name != _DETAILS_EVENT:
        return record
    attrs, body = record.get("attributes"), record.get("body")
    if isinstance(attrs, dict) and "gen_ai.input.messages" in attrs:
        record = {**record, "attributes": {k: v for k, v in attrs.items() if k != "gen_ai.input.messages"}}
        out.omitted += 1
        out.keys.append(f"{name}: gen_ai.input.messages")
    if isinstance(body, dict) and "gen_ai.input.messages" in body:
        record = {**record, "body": {k: v for k, v in body.items() if k != "gen_ai.input.messages"}}
        out.omitted += 1
        out.keys.append(f"{name}: gen_ai.input.messages")
    return record


def trimmed(span: SpanRecord) -> Trimmed:
    """``span``'s attributes, events and log records without those that hold its input messages."""
    out = Trimmed({}, [], [])
    for key, value in span.attributes.items():
        family = _input_attribute(key)
        if family is None:
            out.attributes[key] = value
        else:
            out.omitted += 1
            out.keys.append(family)
    out.events = [e for e in (_trim_record(e, out) for e in span.events) if e is not None]
    out.logs = [r for r in (_trim_record(r, out) for r in span.logs or []) if r is not None]
    out.keys = list(dict.fromkeys(out.keys))
    return out


def message_json(message: Message) -> dict[str, Any]:
    """A message as plain JSON (``show --json``, the MCP tools): its role, content, name, the call id it
    answers, its tool calls, reasoning and finish reason."""
    return {
        "role": message.role,
        "content": message.content,
        "name": message.name,
        "tool_call_id": message.tool_call_id,
        "tool_calls": [
            {"id": c.tool_call_id or None, "name": c.tool_name or None, "arguments": c.tool_input}
            for c in message.tool_calls
        ],
        "reasoning": list(message.reasoning),
        "finish_reason": message.finish_reason,
    }
