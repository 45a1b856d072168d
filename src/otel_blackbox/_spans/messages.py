"""Reading messages, tool calls and tools back out of stored span attributes.

OpenInference flattens lists into dotted keys (``llm.input_messages.0.message.role``); the
OpenTelemetry GenAI conventions put them in JSON (``gen_ai.input.messages``). Both become the
same small dataclasses here, for ``show -v`` and, later, cassettes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from openinference.semconv.trace import (
    MessageAttributes,
    MessageContentAttributes,
    SpanAttributes,
    ToolAttributes,
    ToolCallAttributes,
)

__all__ = [
    "FUNCTION_OUTPUT_FIELDS",
    "HostedCall",
    "Message",
    "ToolCall",
    "function_response_outcome",
    "indexed",
    "input_messages",
    "output_messages",
    "system_instructions",
    "tool_definitions",
    "tool_name",
]

GEN_AI_INPUT_MESSAGES = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES = "gen_ai.output.messages"
GEN_AI_SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
GEN_AI_TOOL_DEFINITIONS = "gen_ai.tool.definitions"
# A tool span's own record of what it was called with and returned (pydantic-ai writes these).
GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT = "gen_ai.tool.call.result"
GEN_AI_RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"


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
    reasoning: list[str] = field(default_factory=list)  # GenAI thinking / reasoning parts' texts
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


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _tool_calls(flat: Mapping[str, Any]) -> list[ToolCall]:
    return [
        ToolCall(
            _text(call.get(ToolCallAttributes.TOOL_CALL_ID)),
            _text(call.get(ToolCallAttributes.TOOL_CALL_FUNCTION_NAME)),
            call.get(ToolCallAttributes.TOOL_CALL_FUNCTION_ARGUMENTS_JSON),
        )
        for call in indexed(flat, MessageAttributes.MESSAGE_TOOL_CALLS)
    ]


def _openinference_messages(attributes: Mapping[str, Any], prefix: str) -> list[Message]:
    messages = []
    for flat in indexed(attributes, prefix):
        content = flat.get(MessageAttributes.MESSAGE_CONTENT)
        if content is None:
            texts = [
                part.get(MessageContentAttributes.MESSAGE_CONTENT_TEXT)
                for part in indexed(flat, MessageAttributes.MESSAGE_CONTENTS)
            ]
            content = "\n".join(t for t in texts if isinstance(t, str)) or None
        messages.append(
            Message(
                role=str(flat.get(MessageAttributes.MESSAGE_ROLE, "?")),
                content=None if content is None else str(content),
                tool_calls=_tool_calls(flat),
                tool_call_id=flat.get(MessageAttributes.MESSAGE_TOOL_CALL_ID),
                name=flat.get(MessageAttributes.MESSAGE_NAME),
            )
        )
    return messages


def _json_list(raw: Any) -> list[Any]:
    try:
        items = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return []
    return items if isinstance(items, list) else []


def _gen_ai_messages(raw: Any) -> list[Message]:
    """The GenAI JSON shape: ``[{role, parts: [{type: text, content} | {type: tool_call, id, name,
    arguments} | {type: tool_call_response, id, name?, response | result}], finish_reason?}]``. Each
    tool response becomes a message of its own (role ``tool``), whatever role carried it
    (pydantic-ai: ``user``). Reasoning parts (``reasoning``, pydantic-ai's ``thinking``) and the calls
    and responses of tools the provider ran (``builtin``) stay on the message that carried them."""
    messages = []
    for item in _json_list(raw):
        if not isinstance(item, dict):
            continue
        role = str(item.get("role", "?"))
        texts, calls, responded = [], [], False
        reasoning: list[str] = []
        hosted: list[HostedCall] = []
        for part in item.get("parts") or []:
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind == "text":
                texts.append(str(part.get("content", "")))
            elif kind in ("reasoning", "thinking"):
                reasoning.append(str(part.get("content", "")))
            elif part.get("builtin") and kind == "tool_call":
                hosted.append(HostedCall(str(part.get("name") or "?"), part.get("arguments")))
            elif part.get("builtin") and kind == "tool_call_response":
                answered = next((h for h in hosted if h.result is None and h.name == part.get("name")), None)
                if answered is not None:
                    answered.result = part.get("response", part.get("result"))
                else:
                    hosted.append(HostedCall(str(part.get("name") or "?"), result=part.get("result")))
            elif kind == "tool_call":
                args = part.get("arguments")
                calls.append(
                    ToolCall(
                        _text(part.get("id")),
                        _text(part.get("name")),
                        args if isinstance(args, str) else json.dumps(args),
                    )
                )
            elif kind == "tool_call_response":
                response = part.get("response", part.get("result", ""))
                text = response if isinstance(response, str) else json.dumps(response)
                messages.append(Message("tool", text, tool_call_id=part.get("id"), name=part.get("name")))
                responded = True
        if texts or calls or reasoning or hosted or not responded:  # tool responses only: those
            finish = item.get("finish_reason")
            messages.append(
                Message(
                    role,
                    "\n".join(texts) or None,
                    calls,
                    reasoning=reasoning,
                    hosted=hosted,
                    finish_reason=finish if isinstance(finish, str) else None,
                )
            )
    return messages


def input_messages(attributes: Mapping[str, Any]) -> list[Message]:
    return _openinference_messages(attributes, SpanAttributes.LLM_INPUT_MESSAGES) or _gen_ai_messages(
        attributes.get(GEN_AI_INPUT_MESSAGES)
    )


def output_messages(attributes: Mapping[str, Any]) -> list[Message]:
    return _openinference_messages(attributes, SpanAttributes.LLM_OUTPUT_MESSAGES) or _gen_ai_messages(
        attributes.get(GEN_AI_OUTPUT_MESSAGES)
    )


def tool_definitions(attributes: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The tools offered to the model: OpenInference's ``llm.tools.N.tool.json_schema`` (parsed where
    they are JSON), or the GenAI ``gen_ai.tool.definitions`` list."""
    tools = []
    for flat in indexed(attributes, SpanAttributes.LLM_TOOLS):
        schema = flat.get(ToolAttributes.TOOL_JSON_SCHEMA)
        try:
            parsed = json.loads(schema) if isinstance(schema, str) else None
        except ValueError:
            parsed = None
        tools.append(parsed if isinstance(parsed, dict) else {"raw": schema})
    return tools or [t for t in _json_list(attributes.get(GEN_AI_TOOL_DEFINITIONS)) if isinstance(t, dict)]


def system_instructions(attributes: Mapping[str, Any]) -> str | None:
    """GenAI's ``gen_ai.system_instructions`` (text parts, kept apart from the messages), joined."""
    if GEN_AI_SYSTEM_INSTRUCTIONS not in attributes:
        return None
    texts = [
        str(part.get("content", ""))
        for part in _json_list(attributes[GEN_AI_SYSTEM_INSTRUCTIONS])
        if isinstance(part, dict) and part.get("type") == "text"
    ]
    return "\n\n".join(texts)


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
