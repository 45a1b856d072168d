"""A model call the OpenTelemetry SDK's span limits cut: its request from a value kept whole, or none.

Past its attribute limit (128 by default) the SDK drops a span's oldest attributes. OpenInference's
flattened messages (``llm.input_messages.N.*``) then start mid-conversation, and a cassette built
from them would hold a request the program never sent. One attribute is kept or dropped whole, so a
cut span's request is read from GenAI's ``gen_ai.input.messages`` when it is there and parses, else
from OpenInference's ``input.value`` when it parses as a request whose every message is read whole
(the chat shape: text, tool calls, tool results). Otherwise the cassette is refused, in one line
naming the span and the setting that lifts the limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from openinference.semconv.trace import SpanAttributes

from otel_blackbox._spans.conventions.genai import (
    GEN_AI_INPUT_MESSAGES,
    GEN_AI_SYSTEM_INSTRUCTIONS,
    GEN_AI_TOOL_DEFINITIONS,
    genai_message,
    genai_messages,
    genai_system,
    genai_tools,
)
from otel_blackbox._spans.messages import Message, json_value
from otel_blackbox._spans.sdk_limits import ATTRIBUTES_SETTING, sdk_cut
from otel_blackbox._store.queries import SpanRecord
from otel_blackbox.errors import CassetteError

__all__ = ["WholeInput", "refuse_if_cut", "whole_input"]

# The chat shape's fields this reads (OpenAI's, which OpenInference's OpenAI instrumentor records as
# input.value). Another field is allowed empty (an SDK's message object dumped whole has
# ``refusal: null``, ``annotations: []``); with a value, or a content part other than text, the
# message is not read whole.
_CHAT_FIELDS = frozenset({"role", "content", "tool_calls", "tool_call_id", "name"})


@dataclass(frozen=True)
class WholeInput:
    """A cut span's request as one attribute kept it: messages, system prompt, tools (None: the
    attribute does not say, the span's own are kept)."""

    messages: list[Message]
    system: str | None = None
    tools: list[dict[str, Any]] | None = None


def whole_input(span: SpanRecord) -> WholeInput | None:
    """None when the SDK dropped none of the span's attributes; else its request from a value kept
    whole. Raises CassetteError when there is none."""
    cut = sdk_cut(span.kept_attributes)
    if not cut.attributes:
        return None
    found = _from_genai(span.attributes) or _from_input_value(span.attributes)
    if found is None:
        raise CassetteError(
            f"model call {span.name!r} (span {span.span_id}) was cut by the OpenTelemetry SDK's span limits "
            f"({cut.counts()}, the oldest first) and keeps no whole copy of its messages (input.value, "
            f"gen_ai.input.messages): record it again with {ATTRIBUTES_SETTING} raised (e.g. 100000)"
        )
    return found


def refuse_if_cut(span: SpanRecord) -> None:
    """Raises CassetteError when ``span`` is a cut model call with no whole copy of its request."""
    whole_input(span)


def _from_genai(attributes: dict[str, Any]) -> WholeInput | None:
    raw = json_value(attributes.get(GEN_AI_INPUT_MESSAGES))
    if not isinstance(raw, list) or not raw:
        return None
    tools = attributes.get(GEN_AI_TOOL_DEFINITIONS)
    return WholeInput(
        genai_messages(raw),
        genai_system(attributes.get(GEN_AI_SYSTEM_INSTRUCTIONS)),
        genai_tools(tools) if tools is not None else None,
    )


def _from_input_value(attributes: dict[str, Any]) -> WholeInput | None:
    request = json_value(attributes.get(SpanAttributes.INPUT_VALUE))
    if not isinstance(request, dict):
        return None  # dropped, cut by OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT (no longer JSON), or truncated
    items = request.get("messages")
    if not isinstance(items, list) or not items or not all(_whole(item) for item in items):
        return None
    system = request.get("system")  # Anthropic's, beside its messages
    if system is not None and not isinstance(system, str):
        if not _text_parts(system):
            return None
        system = "\n\n".join(part["text"] for part in system)
    tools = request.get("tools", [])
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        return None
    # ``content`` always present: a message without it (an assistant turn of tool calls) is still
    # read in the chat shape.
    messages = [m for item in items for m in genai_message({"content": None, **item})]
    return WholeInput(messages, system, tools)


def _whole(item: Any) -> bool:
    """A chat message read with nothing left out: known fields, text content, well-formed calls."""
    if not isinstance(item, dict) or not isinstance(item.get("role"), str):
        return False
    if any(value not in (None, "", [], {}) for key, value in item.items() if key not in _CHAT_FIELDS):
        return False
    content = item.get("content")
    if content is not None and not isinstance(content, str) and not _text_parts(content):
        return False
    calls = item.get("tool_calls") or []
    return isinstance(calls, list) and all(
        isinstance(c, dict) and isinstance(c.get("function"), dict) and "name" in c["function"] for c in calls
    )


def _text_parts(value: Any) -> bool:
    """A list of text parts only (an image, a tool_use or tool_result block is not read whole)."""
    return isinstance(value, list) and all(
        isinstance(p, dict) and p.get("type", "text") == "text" and isinstance(p.get("text"), str)
        for p in value
    )
