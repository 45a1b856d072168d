"""What the wire translations share: pieces of the neutral payloads (message parts, tools, tool
arguments, a turn's text and calls), and the framing of synthesized responses (JSON and SSE headers,
compact ASCII JSON, ids derived from the output, text cut into stream deltas).

OpenAI Chat and Responses use all of it; Gemini uses the framing. Pure functions, no I/O.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from otel_blackbox._cassette.model import tool_calls_of
from otel_blackbox._types import JsonObject
from otel_blackbox._wire.call_ids import CallIds

__all__ = [
    "JSON_HEADERS",
    "SSE_HEADERS",
    "Turn",
    "add_tool_result",
    "arguments_text",
    "digest",
    "dumps",
    "error_text",
    "image_part",
    "neutral_tool",
    "objects_of",
    "pieces",
    "sse_data",
    "tool_input",
    "tool_result",
    "tool_use",
    "wire_turn",
]

JSON_HEADERS = [("content-type", "application/json")]


SSE_HEADERS = [("content-type", "text/event-stream"), ("cache-control", "no-cache")]


_PIECE = 16  # characters per streamed delta: several deltas, so clients really accumulate


def objects_of(items: Any) -> list[JsonObject]:
    """The objects of a list field (``messages``, ``input``); nothing when it is not a list."""
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def image_part(url: Any, detail: Any) -> JsonObject:
    part: JsonObject = {"type": "image", "url": url}
    if detail is not None:
        part["detail"] = detail
    return part


def tool_use(call_id: str, name: str, tool_input: Any) -> JsonObject:
    return {"type": "tool_use", "toolCallId": call_id, "toolName": name, "toolInput": tool_input}


def tool_result(call_id: str, name: str, result: Any) -> JsonObject:
    return {"type": "tool_result", "toolCallId": call_id, "toolName": name, "result": _or_empty(result)}


def _or_empty(value: Any) -> Any:
    return "" if value is None else value


def add_tool_result(out: list[JsonObject], part: JsonObject) -> None:
    """Results that follow each other form one user turn, as in the format's tool rounds."""
    content = out[-1].get("content") if out and out[-1].get("role") == "user" else None
    if isinstance(content, list) and content and all(_is_result(p) for p in content):
        content.append(part)
    else:
        out.append({"role": "user", "content": [part]})


def _is_result(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") == "tool_result"


_TOOL_FIELDS = frozenset({"type", "name", "description", "parameters", "function", "custom"})


def neutral_tool(tool: JsonObject) -> JsonObject:
    """Chat nests a tool under its type (``{type: function, function: {...}}``); Responses does not.
    A built-in tool (``{type: web_search, ...}``) is named by its type; a tool's other fields
    (``strict``, a custom tool's ``format``, a built-in's options, a type but ``function``) are its
    ``settings``."""
    kind = tool.get("type")
    nested = tool.get(str(kind))
    spec: JsonObject = nested if isinstance(nested, dict) else tool
    neutral: JsonObject = {
        "name": str(spec.get("name") or kind or ""),
        "description": spec.get("description") or "",
    }
    if spec.get("parameters") is not None:
        neutral["inputSchema"] = spec["parameters"]
    settings = {k: v for k, v in spec.items() if k not in _TOOL_FIELDS and v is not None}
    if spec is not tool:  # Chat's nesting: what sits beside the nested definition counts too
        settings.update(
            (k, v) for k, v in tool.items() if k != kind and k not in _TOOL_FIELDS and v is not None
        )
    if kind not in (None, "function") and spec.get("name"):  # a custom tool: its type tells it apart
        settings["type"] = kind
    return {**neutral, "settings": settings} if settings else neutral


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _strict_json(text: str) -> Any:
    return json.loads(text, parse_constant=_no_constants)


def tool_input(arguments: Any) -> Any:
    """Arguments arrive as JSON text: the parsed value, or the text itself when it is not JSON."""
    if not isinstance(arguments, str):
        return arguments
    try:
        return _strict_json(arguments)
    except ValueError:
        return arguments


def arguments_text(value: Any) -> str:
    """The inverse of ``tool_input``: a string that is not JSON was the model's raw text."""
    if isinstance(value, str):
        try:
            _strict_json(value)
        except ValueError:
            return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@dataclass
class Turn:
    """What one response said: its text and its calls as (provider id, name, raw arguments)."""

    text: str = ""
    calls: list[tuple[str, str, Any]] = field(default_factory=list)

    def neutral(self, ids: CallIds) -> JsonObject:
        calls = [
            {
                # A call with no id (some compatible servers) still gets its own neutral id.
                "toolCallId": ids.neutral(call_id or f"missing-{ids.next_index()}"),
                "toolName": name,
                "toolInput": tool_input(arguments),
            }
            for call_id, name, arguments in self.calls
        ]
        if not calls:
            return {"type": "final_answer", "text": self.text}
        output: JsonObject = {"type": "tool_calls", "calls": calls}
        if self.text:
            output["text"] = self.text
        return output


def error_text(value: Any) -> str:
    """The message of an error body (``{error: {message}}``, or a stream's ``{message}``)."""
    error = value.get("error") if isinstance(value, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    if isinstance(value, dict) and isinstance(value.get("message"), str):
        return str(value["message"])
    return type(value).__name__


def sse_data(body: bytes) -> Iterator[str]:
    """The data of each server-sent event (``event:`` names and comments are not needed)."""
    for chunk in body.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n").split("\n\n"):
        data = [line[5:].removeprefix(" ") for line in chunk.split("\n") if line.startswith("data:")]
        if data:
            yield "\n".join(data)


def dumps(value: Any) -> str:
    # ASCII escapes keep every SSE data line one line for any decoder (U+2028 is a line break to
    # str.splitlines) and survive lone surrogates, which UTF-8 cannot encode.
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"))


def digest(output: JsonObject) -> str:
    """An id part derived from the output: deterministic, and different for different answers."""
    return hashlib.sha256(json.dumps(output, sort_keys=True).encode()).hexdigest()[:24]


def pieces(text: str) -> list[str]:
    return [text[i : i + _PIECE] for i in range(0, len(text), _PIECE)]


def wire_turn(output: JsonObject) -> tuple[str, list[tuple[str, str, str]]]:
    """The text and the (neutral id, name, arguments text) calls to send, from either output shape."""
    text = output.get("text")
    calls = [(c.tool_call_id, c.tool_name, arguments_text(c.tool_input)) for c in tool_calls_of(output)]
    return (text if isinstance(text, str) else ""), calls
