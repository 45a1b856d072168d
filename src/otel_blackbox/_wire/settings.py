"""What a request setting means on any API: the readers behind ``wire_request``'s other direction.

A neutral ``model_input`` keeps each neutral setting in the shape its own API sent it
(``params.toolChoice`` is Chat's ``"required"`` or Anthropic's ``{"type": "any"}``). To send it to
another API, a translation reads it here into one meaning (``ToolChoice``, ``ResponseFormat``...)
and writes that in its own shape. Pure functions; a value none of the four APIs would send reads
as None, and the translation names it as not sent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from otel_blackbox._types import JsonObject
from otel_blackbox._wire.request_fields import RequestFields

__all__ = [
    "NEUTRAL_PARAMS",
    "ResponseFormat",
    "ToolChoice",
    "is_text_part",
    "json_schema_of",
    "own_params",
    "part_phrase",
    "response_format_of",
    "result_text",
    "stop_list",
    "tool_choice_of",
]


# The params every translation writes in its own shape, whatever API recorded them.
NEUTRAL_PARAMS = ("maxTokens", "temperature", "topP", "toolChoice", "responseFormat", "stop")


@dataclass(frozen=True)
class ToolChoice:
    """Whether the model may, must or must not call a tool; ``name``: the one tool it must call."""

    mode: Literal["auto", "none", "required"]
    name: str | None = None


_MODES: dict[str, Literal["auto", "none", "required"]] = {
    "auto": "auto",
    "none": "none",
    "required": "required",
    "any": "required",  # Anthropic
    "validated": "auto",  # Gemini's VALIDATED: may call, checked against the schema
}


def tool_choice_of(value: Any) -> ToolChoice | None:
    """The tool choice of any API's ``params.toolChoice``: Chat's and Responses' strings and
    ``{"type": "function", ...}``, Anthropic's ``{"type": "auto" | "any" | "tool" | "none"}``, Gemini's
    ``{"functionCallingConfig": {"mode", "allowedFunctionNames"}}``; None for anything else."""
    if isinstance(value, str):
        mode = _MODES.get(value.lower())
        return ToolChoice(mode) if mode else None
    if not isinstance(value, dict):
        return None
    kind = value.get("type")
    if kind == "function":  # Chat: {"function": {"name"}}; Responses: {"name"}
        function = value.get("function")
        name = function.get("name") if isinstance(function, dict) else value.get("name")
        return ToolChoice("required", name) if isinstance(name, str) else None
    if kind == "tool":
        name = value.get("name")
        return ToolChoice("required", name) if isinstance(name, str) else None
    if isinstance(kind, str):
        mode = _MODES.get(kind)
        return ToolChoice(mode) if mode else None
    config = value.get("functionCallingConfig", value.get("function_calling_config"))
    if isinstance(config, dict):
        mode = _MODES.get(str(config.get("mode", "auto")).lower())
        names = config.get("allowedFunctionNames", config.get("allowed_function_names"))
        if mode == "required" and isinstance(names, list) and len(names) == 1 and isinstance(names[0], str):
            return ToolChoice("required", names[0])
        return ToolChoice(mode) if mode else None
    return None


@dataclass(frozen=True)
class ResponseFormat:
    """What shape the answer must take: free text, any JSON object, or JSON that fits ``schema``."""

    kind: Literal["text", "json_object", "json_schema"]
    schema: JsonObject | None = None
    name: str | None = None
    strict: bool | None = None


def response_format_of(value: Any) -> ResponseFormat | None:
    """The answer format of any API's ``params.responseFormat``: Chat's ``response_format``, Responses'
    ``text.format``, Anthropic's ``output_config.format``, Gemini's ``responseMimeType`` /
    ``responseSchema`` / ``responseJsonSchema`` object; None for anything else."""
    if not isinstance(value, dict):
        return None
    kind = value.get("type")
    if kind in ("text", "json_object"):
        return ResponseFormat(kind)
    if kind == "json_schema":
        nested = value.get("json_schema")
        inner: JsonObject = nested if isinstance(nested, dict) else value  # Chat nests it, the others do not
        schema = inner.get("schema")
        name, strict = inner.get("name"), inner.get("strict")
        return ResponseFormat(
            "json_schema",
            schema if isinstance(schema, dict) else None,
            name if isinstance(name, str) else None,
            strict if isinstance(strict, bool) else None,
        )
    mime = value.get("responseMimeType", value.get("response_mime_type"))
    schema = next(
        (
            value[key]
            for key in ("responseJsonSchema", "response_json_schema", "responseSchema", "response_schema")
            if isinstance(value.get(key), dict)
        ),
        None,
    )
    if schema is not None:
        return ResponseFormat("json_schema", schema)
    if mime == "application/json":
        return ResponseFormat("json_object")
    if mime == "text/plain":
        return ResponseFormat("text")
    return None


def stop_list(value: Any) -> list[str] | None:
    """The stop sequences of any API's ``params.stop`` (Chat sends a string or a list)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return list(value)
    return None


def result_text(result: Any) -> str:
    """A tool result as the text an API that takes only text is sent: a string as is, a list of
    content parts as their texts joined, anything else as compact JSON (non-ASCII kept)."""
    if isinstance(result, str):
        return result
    if isinstance(result, list) and result and all(is_text_part(p) for p in result):
        return "".join(p["text"] for p in result)
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"))


_GEMINI_TYPES = frozenset({"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"})


def json_schema_of(schema: Any) -> Any:
    """A tool's schema as JSON Schema: Gemini's upper-case type names (alone or in a list of types) in
    lower case, the rest as it is."""
    if isinstance(schema, list):
        return [json_schema_of(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: JsonObject = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str) and value in _GEMINI_TYPES:
            out[key] = value.lower()
        elif key == "type" and isinstance(value, list):
            out[key] = [v.lower() if isinstance(v, str) and v in _GEMINI_TYPES else v for v in value]
        else:
            out[key] = json_schema_of(value)
    return out


def part_phrase(part: JsonObject) -> str:
    """The ``dropped`` phrase of a part the request cannot carry (``a reasoning part``)."""
    kind = str(part.get("type") or "untyped")
    if kind == "hosted_tool":
        return f"a hosted {part.get('toolName') or 'tool'} call"
    return f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind} part"


def is_text_part(part: Any) -> bool:
    """A text part of any API (``{type: text | input_text | output_text, text}``), nothing more."""
    return (
        isinstance(part, dict)
        and set(part) == {"type", "text"}
        and part["type"] in ("text", "input_text", "output_text")
        and isinstance(part["text"], str)
    )


def own_params(params: JsonObject, fields: RequestFields, *, native: bool) -> tuple[JsonObject, list[str]]:
    """The non-neutral ``params`` this API is sent under their own names, and those it is not.

    ``native``: the model_input was recorded on this same API, so each of its settings (those the
    table does not know too) is one of this API's fields and is sent as it was. Otherwise a setting
    goes only when this API's table knows its name; the others are named (``params.seed``) for the
    one warning line."""
    kept: JsonObject = {}
    dropped: list[str] = []
    known = fields.names()
    for key, value in params.items():
        if key in NEUTRAL_PARAMS:
            continue
        if native or key in known:
            kept[key] = value
        else:
            dropped.append(f"params.{key}")
    return kept, dropped
