"""The OpenTelemetry GenAI conventions, as span attributes: ``gen_ai.operation.name``, the JSON of
``gen_ai.input.messages`` / ``gen_ai.output.messages`` / ``gen_ai.system_instructions`` /
``gen_ai.tool.definitions``, ``execute_tool`` spans (``gen_ai.tool.name``, ``gen_ai.tool.call.*``)
and ``gen_ai.usage.*``.

Messages come in two shapes: the conventions' ``{role, parts: [...]}`` and the chat-style
``{role, content, tool_calls?, tool_call_id?}`` some libraries write (any-agent). The parsers here
serve the other GenAI carriers too (span events, log records: ``genai_events``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from otel_blackbox._spans.conventions.tokens import TokenKeys, tokens_from
from otel_blackbox._spans.messages import HostedCall, Message, ToolCall, json_value, text_of
from otel_blackbox._spans.semconv import GEN_AI_OPERATION_KINDS
from otel_blackbox._spans.view.model import Reading, Tokens, ToolUse
from otel_blackbox._store.queries import SpanRecord

__all__ = [
    "GEN_AI_INPUT_MESSAGES",
    "GEN_AI_OUTPUT_MESSAGES",
    "GEN_AI_SYSTEM_INSTRUCTIONS",
    "GEN_AI_TOOL_CALL_ARGUMENTS",
    "GEN_AI_TOOL_CALL_RESULT",
    "GEN_AI_TOOL_DEFINITIONS",
    "NAME",
    "SUMMARY_KEYS",
    "genai_messages",
    "genai_system",
    "genai_tools",
    "read",
    "tokens_of",
]

NAME = "genai"

GEN_AI_INPUT_MESSAGES = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES = "gen_ai.output.messages"
GEN_AI_SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
GEN_AI_TOOL_DEFINITIONS = "gen_ai.tool.definitions"
GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT = "gen_ai.tool.call.result"
GEN_AI_RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"

TOKEN_KEYS = TokenKeys(
    input=("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
    output=("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
    total=("gen_ai.usage.total_tokens", "llm.usage.total_tokens"),
    cache_read=(
        "gen_ai.usage.cache_read.input_tokens",
        "gen_ai.usage.cache_read_input_tokens",
        "gen_ai.usage.cached_tokens",  # any-agent
    ),
    cache_write=("gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.cache_creation_input_tokens"),
    reasoning=("gen_ai.usage.reasoning.output_tokens", "gen_ai.usage.reasoning_tokens"),  # any-agent's last
)
SUMMARY_KEYS = (
    "gen_ai.operation.name",
    "gen_ai.response.model",
    "gen_ai.request.model",
    "gen_ai.provider.name",
    "gen_ai.system",
    *TOKEN_KEYS.all(),
)


def _json_list(raw: Any) -> list[Any]:
    items = json_value(raw)
    return items if isinstance(items, list) else []


def _arguments_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _content_text(content: Any) -> str | None:
    """A chat-style ``content``: text, or a list of parts whose texts are joined."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            str(p.get("text", p.get("content", "")))
            for p in content
            if isinstance(p, dict) and p.get("type", "text") == "text"
        ]
        return "\n".join(texts) or None
    return json.dumps(content, ensure_ascii=False)


def _chat_style(item: dict[str, Any]) -> list[Message]:
    """``{role, content, tool_calls?, tool_call_id?}`` (OpenAI's chat shape, as any-agent writes it)."""
    calls = []
    for call in item.get("tool_calls") or []:
        if not isinstance(call, dict):
            continue
        nested = call.get("function")
        function: dict[str, Any] = nested if isinstance(nested, dict) else call
        calls.append(
            ToolCall(
                text_of(call.get("id")),
                text_of(function.get("name")),
                _arguments_text(function.get("arguments")),
            )
        )
    tool_call_id = item.get("tool_call_id")
    return [
        Message(
            role=str(item.get("role", "?")),
            content=_content_text(item.get("content")),
            tool_calls=calls,
            tool_call_id=str(tool_call_id) if tool_call_id is not None else None,
            name=item.get("name") if isinstance(item.get("name"), str) else None,
        )
    ]


def _parts_style(item: dict[str, Any]) -> list[Message]:
    """The conventions' ``{role, parts: [{type: text, content} | {type: tool_call, id, name,
    arguments} | {type: tool_call_response, id, name?, response | result}], finish_reason?}``. Each tool
    response becomes a message of its own (role ``tool``), whatever role carried it (pydantic-ai:
    ``user``). Reasoning parts (``reasoning``, pydantic-ai's ``thinking``) and the calls and responses
    of tools the provider ran (``builtin``) stay on the message that carried them."""
    messages = []
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
            calls.append(
                ToolCall(
                    text_of(part.get("id")), text_of(part.get("name")), _arguments_text(part.get("arguments"))
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


def genai_message(item: Any) -> list[Message]:
    """One GenAI message (either shape) as messages: a message's tool responses are messages of
    their own."""
    if not isinstance(item, dict):
        return []
    return _parts_style(item) if "parts" in item or "content" not in item else _chat_style(item)


def genai_messages(raw: Any) -> list[Message]:
    """A GenAI message list, JSON text or already parsed."""
    return [message for item in _json_list(raw) for message in genai_message(item)]


def genai_system(raw: Any) -> str | None:
    """``gen_ai.system_instructions``: a list of parts (their texts joined), or plain text."""
    if raw is None:
        return None
    parsed = json_value(raw)
    if isinstance(parsed, str):
        return parsed
    if isinstance(parsed, dict):
        parsed = [parsed]
    if not isinstance(parsed, list):
        return str(raw)
    texts = [
        str(part.get("content", part.get("text", "")))
        for part in parsed
        if isinstance(part, dict) and part.get("type", "text") == "text"
    ]
    return "\n\n".join(texts)


def genai_tools(raw: Any) -> list[dict[str, Any]]:
    return [t for t in _json_list(raw) if isinstance(t, dict)]


def tokens_of(attributes: Mapping[str, Any]) -> Tokens | None:
    tokens = tokens_from(attributes, TOKEN_KEYS)
    return tokens if tokens is not None and tokens.counted else None


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


# gen_ai.system values that name an agent framework, not the provider that answered (Google ADK's).
_NOT_PROVIDERS = frozenset({"gcp.vertex.agent"})


def _provider(attrs: Mapping[str, Any]) -> str | None:
    name = _text(attrs.get("gen_ai.provider.name", attrs.get("gen_ai.system")))
    return None if name in _NOT_PROVIDERS else name


# mozilla-ai/any-agent (src/any_agent/tracing/attributes.py): a model call's or a tool's output as
# one attribute, its kind in gen_ai.output.type ("text", or "json": a model's tool calls as
# [{"tool.name", "tool.args"}]), and a tool's arguments as gen_ai.tool.args.
ANY_AGENT_OUTPUT = "gen_ai.output"
ANY_AGENT_TOOL_ARGS = "gen_ai.tool.args"


def _any_agent_output(attrs: Mapping[str, Any]) -> list[Message]:
    output = attrs.get(ANY_AGENT_OUTPUT)
    if output is None:
        return []
    parsed = json_value(output) if attrs.get("gen_ai.output.type") == "json" else output
    if isinstance(parsed, list) and all(isinstance(c, dict) and "tool.name" in c for c in parsed):
        calls = [ToolCall("", str(c["tool.name"]), _arguments_text(c.get("tool.args"))) for c in parsed]
        return [Message("assistant", None, calls)]
    return [Message("assistant", output if isinstance(output, str) else json.dumps(output))]


def read(span: SpanRecord) -> Reading | None:
    attrs = span.attributes
    operation = attrs.get("gen_ai.operation.name")
    kind = GEN_AI_OPERATION_KINDS.get(operation) if isinstance(operation, str) else None
    tool = None
    if kind == "TOOL" or "gen_ai.tool.name" in attrs or GEN_AI_TOOL_CALL_RESULT in attrs:
        tool = ToolUse(
            name=_text(attrs.get("gen_ai.tool.name")),
            arguments=attrs.get(GEN_AI_TOOL_CALL_ARGUMENTS, attrs.get(ANY_AGENT_TOOL_ARGS)),
            result=attrs.get(GEN_AI_TOOL_CALL_RESULT, attrs.get(ANY_AGENT_OUTPUT)),
        )
    reasons = json_value(attrs.get(GEN_AI_RESPONSE_FINISH_REASONS))
    return Reading(
        kind=kind,
        model=_text(attrs.get("gen_ai.response.model", attrs.get("gen_ai.request.model"))),
        provider=_provider(attrs),
        system=genai_system(attrs.get(GEN_AI_SYSTEM_INSTRUCTIONS)),
        input_messages=genai_messages(attrs.get(GEN_AI_INPUT_MESSAGES)),
        output_messages=genai_messages(attrs.get(GEN_AI_OUTPUT_MESSAGES))
        or (_any_agent_output(attrs) if kind == "LLM" else []),
        tools=genai_tools(attrs.get(GEN_AI_TOOL_DEFINITIONS)),
        tool=tool,
        tokens=tokens_of(attrs),
        finish_reasons=[str(r) for r in reasons] if isinstance(reasons, (list, tuple)) else [],
    )
