"""The messages a model call saw and made, as every convention's reader gives them
(``_spans.conventions``): small dataclasses, and the helpers the readers share."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "FUNCTION_OUTPUT_FIELDS",
    "HostedCall",
    "Message",
    "ToolCall",
    "function_response_outcome",
    "indexed",
    "json_value",
    "text_of",
    "tool_name",
]


@dataclass(frozen=True)
class ToolCall:
    """A tool call a model made, in the cassette format's words (toolCallId, toolName, toolInput).

    Read from a span, ``tool_input`` is the arguments as the span holds them (JSON text, or None
    when they were not recorded); read from a cassette (``tool_calls_of``), the parsed value. An id
    or a name that was not recorded is "".
    """

    tool_call_id: str
    tool_name: str
    tool_input: Any


@dataclass
class HostedCall:
    """A tool the provider ran itself (GenAI's ``builtin`` tool call), with its response if recorded."""

    name: str
    arguments: Any = None
    result: Any = None


@dataclass
class Message:
    role: str
    content: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    reasoning: list[str] = field(default_factory=list)  # thinking / reasoning texts
    hosted: list[HostedCall] = field(default_factory=list)
    finish_reason: str | None = None


def indexed(attributes: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``prefix.0.a``, ``prefix.0.b``, ``prefix.1.a`` -> ``[{a, b}, {a}]``, in index order."""
    start = prefix + "."
    items: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if not key.startswith(start):
            continue
        index, _, rest = key[len(start) :].partition(".")
        if index.isdigit() and rest:
            items.setdefault(int(index), {})[rest] = value
    return [items[i] for i in sorted(items)]


def text_of(value: Any) -> str:
    return "" if value is None else str(value)


def json_value(raw: Any) -> Any:
    """JSON text parsed (None when it is not JSON); any other value as it is."""
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return None


def tool_name(definition: dict[str, Any]) -> str:
    """The name in a tool definition, in the OpenAI ({function: {name}}) or flat ({name}) shape."""
    function = definition.get("function")
    name = function.get("name") if isinstance(function, dict) else definition.get("name")
    return str(name) if name else "?"


FUNCTION_OUTPUT_FIELDS = ("result", "output")  # Gemini's fields for a function's output


def function_response_outcome(sent: Any) -> dict[str, Any]:
    """What a Gemini ``functionResponse.response`` says, as a tool_result's ``result`` or ``error``:
    the value of its only field when that is ``result`` or ``output`` (the SDK's automatic function
    calling sends ``{result: ...}``), the text of a lone ``error``, else the response as sent."""
    key, inner = next(iter(sent.items())) if isinstance(sent, dict) and len(sent) == 1 else ("", None)
    if key == "error":
        return {
            "error": inner
            if isinstance(inner, str)
            else json.dumps(inner, ensure_ascii=False, separators=(",", ":"))
        }
    return {"result": inner if key in FUNCTION_OUTPUT_FIELDS else sent}
