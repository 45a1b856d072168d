"""OpenInference (Arize): ``openinference.span.kind``, flattened messages (``llm.input_messages.N.*``),
``llm.tools.N.tool.json_schema``, ``input.value`` / ``output.value``, ``tool.*`` and token counts.

LlamaIndex's instrumentor marks ``*._prepare_chat_with_tools`` LLM though it calls no model, and
records a tool's result as LlamaIndex's ``ToolOutput`` (``{"blocks": [...], "raw_output": ...}``):
the first is no model call, the second is unwrapped to what the tool returned.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from openinference.semconv.trace import (
    MessageAttributes,
    MessageContentAttributes,
    SpanAttributes,
    ToolAttributes,
    ToolCallAttributes,
)

from otel_blackbox._spans.messages import Message, ToolCall, indexed, json_value, text_of
from otel_blackbox._spans.view.model import Reading, Tokens, ToolUse
from otel_blackbox._store.queries import SpanRecord

__all__ = ["NAME", "SUMMARY_KEYS", "messages_of", "read", "tool_arguments", "unwrapped_tool_output"]

NAME = "openinference"
SUMMARY_KEYS = (
    SpanAttributes.OPENINFERENCE_SPAN_KIND,
    SpanAttributes.LLM_MODEL_NAME,
    SpanAttributes.LLM_PROVIDER,
    SpanAttributes.LLM_SYSTEM,
    SpanAttributes.LLM_TOKEN_COUNT_PROMPT,
    SpanAttributes.LLM_TOKEN_COUNT_COMPLETION,
    SpanAttributes.LLM_TOKEN_COUNT_TOTAL,
    SpanAttributes.LLM_TOKEN_COUNT_PROMPT_DETAILS_CACHE_READ,
    SpanAttributes.LLM_TOKEN_COUNT_PROMPT_DETAILS_CACHE_WRITE,
    SpanAttributes.LLM_TOKEN_COUNT_COMPLETION_DETAILS_REASONING,
)

# Methods LlamaIndex's instrumentor wraps and marks LLM that call no model.
_NOT_CALLS = ("._prepare_chat_with_tools",)


def _tool_calls(flat: Mapping[str, Any]) -> list[ToolCall]:
    return [
        ToolCall(
            text_of(call.get(ToolCallAttributes.TOOL_CALL_ID)),
            text_of(call.get(ToolCallAttributes.TOOL_CALL_FUNCTION_NAME)),
            call.get(ToolCallAttributes.TOOL_CALL_FUNCTION_ARGUMENTS_JSON),
        )
        for call in indexed(flat, MessageAttributes.MESSAGE_TOOL_CALLS)
    ]


def messages_of(attributes: Mapping[str, Any], prefix: str) -> list[Message]:
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


def _tools(attributes: Mapping[str, Any]) -> list[dict[str, Any]]:
    tools = []
    for flat in indexed(attributes, SpanAttributes.LLM_TOOLS):
        schema = flat.get(ToolAttributes.TOOL_JSON_SCHEMA)
        parsed = json_value(schema)
        tools.append(parsed if isinstance(parsed, dict) else {"raw": schema})
    return tools


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _tokens(attributes: Mapping[str, Any]) -> Tokens | None:
    tokens = Tokens(
        input=_int(attributes.get(SpanAttributes.LLM_TOKEN_COUNT_PROMPT)),
        output=_int(attributes.get(SpanAttributes.LLM_TOKEN_COUNT_COMPLETION)),
        total=_int(attributes.get(SpanAttributes.LLM_TOKEN_COUNT_TOTAL)),
        cache_read=_int(attributes.get(SpanAttributes.LLM_TOKEN_COUNT_PROMPT_DETAILS_CACHE_READ)),
        cache_write=_int(attributes.get(SpanAttributes.LLM_TOKEN_COUNT_PROMPT_DETAILS_CACHE_WRITE)),
        reasoning=_int(attributes.get(SpanAttributes.LLM_TOKEN_COUNT_COMPLETION_DETAILS_REASONING)),
    )
    return tokens if tokens.counted or tokens.total is not None else None


def unwrapped_tool_output(value: Any) -> Any:
    """What a tool returned, out of LlamaIndex's ``ToolOutput`` JSON (``raw_output``, else the text
    of its blocks) or LangChain's ``ToolMessage`` (``{"type": "tool", "data": {"content": ...}}``);
    any other value as it is."""
    parsed = json_value(value)
    if isinstance(parsed, dict) and parsed.get("type") == "tool" and isinstance(parsed.get("data"), dict):
        content = parsed["data"].get("content")
        return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    if not isinstance(parsed, dict) or "raw_output" not in parsed or "blocks" not in parsed:
        return value
    raw = parsed["raw_output"]
    if raw is None:
        texts = [b.get("text") for b in parsed.get("blocks") or [] if isinstance(b, dict)]
        return "".join(t for t in texts if isinstance(t, str))
    return raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)


# The envelopes instrumentors wrap a tool's arguments in: smolagents's ``{"args": [],
# "sanitize_inputs_outputs": ..., "kwargs": {...}}``, LlamaIndex's ``{"kwargs": {...}}``.
_ARGUMENT_ENVELOPE = {"args", "kwargs", "sanitize_inputs_outputs"}


def tool_arguments(value: Any) -> Any:
    """A tool span's ``input.value``: the arguments, out of a framework's call envelope (keyword
    arguments only) when it has one; any other value as it is."""
    parsed = json_value(value)
    if (
        isinstance(parsed, dict)
        and isinstance(parsed.get("kwargs"), dict)
        and set(parsed) <= _ARGUMENT_ENVELOPE
        and not parsed.get("args")
    ):
        return json.dumps(parsed["kwargs"], ensure_ascii=False)
    return value


def _tool(span: SpanRecord, kind: str | None) -> ToolUse | None:
    attrs = span.attributes
    name = attrs.get(SpanAttributes.TOOL_NAME)
    if kind != "TOOL" and name is None:
        return None
    # ``input.value`` first: the instrumentors of smolagents, LlamaIndex, CrewAI, openai-agents and
    # OITracer's ``tool`` decorator write the tool's parameter schema as ``tool.parameters``.
    arguments = attrs.get(SpanAttributes.INPUT_VALUE, attrs.get(SpanAttributes.TOOL_PARAMETERS))
    result = attrs.get(SpanAttributes.OUTPUT_VALUE)
    return ToolUse(
        name=str(name) if name is not None else None,
        arguments=None if arguments is None else tool_arguments(arguments),
        result=None if result is None else unwrapped_tool_output(result),
    )


def read(span: SpanRecord) -> Reading | None:
    attrs = span.attributes
    raw_kind = attrs.get(SpanAttributes.OPENINFERENCE_SPAN_KIND)
    kind = raw_kind.upper() if isinstance(raw_kind, str) else None
    inputs = messages_of(attrs, SpanAttributes.LLM_INPUT_MESSAGES)
    outputs = messages_of(attrs, SpanAttributes.LLM_OUTPUT_MESSAGES)
    model = attrs.get(SpanAttributes.LLM_MODEL_NAME)
    provider = attrs.get(SpanAttributes.LLM_PROVIDER, attrs.get(SpanAttributes.LLM_SYSTEM))
    input_value, output_value = attrs.get(SpanAttributes.INPUT_VALUE), attrs.get(SpanAttributes.OUTPUT_VALUE)
    if kind is None and not (
        inputs or outputs or model or input_value is not None or output_value is not None
    ):
        return None
    not_a_call = (
        "LlamaIndex's instrumentor marks this method LLM; it prepares a call and makes none"
        if kind == "LLM" and span.name.endswith(_NOT_CALLS)
        else None
    )
    return Reading(
        kind=kind,
        model=str(model) if model is not None else None,
        provider=str(provider) if provider is not None else None,
        input_messages=inputs,
        output_messages=outputs,
        input_text=None if input_value is None else str(input_value),
        output_text=None if output_value is None else str(output_value),
        tools=_tools(attrs),
        tool=_tool(span, kind),
        tokens=_tokens(attrs),
        finish_reasons=[str(finish)] if (finish := attrs.get(SpanAttributes.LLM_FINISH_REASON)) else [],
        not_a_call=not_a_call,
    )
