"""The OpenTelemetry GenAI conventions' events, as span events and as the OTel log records joined to
a span (the same names and meaning; a log record's content is its ``body``, its name its
``event_name`` or its ``event.name`` attribute):

- the per-message events (conventions up to 1.36, deprecated): ``gen_ai.system.message``,
  ``gen_ai.user.message``, ``gen_ai.assistant.message``, ``gen_ai.tool.message`` (``content``,
  ``tool_calls``, ``id``) and ``gen_ai.choice`` (``message``, ``finish_reason``);
- ``gen_ai.client.inference.operation.details``: ``gen_ai.input.messages`` /
  ``gen_ai.output.messages`` / ``gen_ai.system_instructions`` / ``gen_ai.tool.definitions``, as JSON
  text (span events) or structured values (log records), with the call's model and token counts.

Who writes them: Strands Agents (1.62) on its ``invoke_agent`` / ``execute_event_loop_cycle`` /
``chat`` / ``execute_tool`` spans, the per-message events by default (their content the JSON of
Strands's content blocks: ``text``, ``toolUse {toolUseId, name, input}``, ``toolResult {toolUseId,
status, content: [{text} | {json}]}``, ``reasoningContent``; the agent's final ``gen_ai.choice`` plain
text), ``operation.details`` events with ``gen_ai_latest_experimental``; on its ``execute_tool`` spans
the tool's input (``gen_ai.tool.message``, or the ``tool_call`` part) and result (``gen_ai.choice``,
or the ``tool_call_response`` part) are the tool's arguments and result, not messages. Strands's own
``gen_ai.agent.tools`` (the tools' names) gives the tools. opentelemetry-instrumentation-openai-v2
(2.4b0, opentelemetry-util-genai 1.1b0) with ``EVENT_ONLY`` content: one ``operation.details`` log
record per ``chat`` span. Google ADK's schema 1 writes the per-message events as log records, its content
``<elided>`` unless captured: nothing recorded, no message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from otel_blackbox._spans.conventions.genai import (
    GEN_AI_INPUT_MESSAGES,
    GEN_AI_OUTPUT_MESSAGES,
    GEN_AI_SYSTEM_INSTRUCTIONS,
    GEN_AI_TOOL_DEFINITIONS,
    genai_messages,
    genai_system,
    genai_tools,
    tokens_of,
)
from otel_blackbox._spans.messages import Message, ToolCall, json_value, text_of
from otel_blackbox._spans.semconv import GEN_AI_OPERATION_KINDS
from otel_blackbox._spans.view.model import Reading, ToolUse
from otel_blackbox._store.queries import SpanRecord

__all__ = ["NAME", "SUMMARY_KEYS", "read"]

NAME = "genai_events"
SUMMARY_KEYS: tuple[str, ...] = ()

OPERATION_DETAILS = "gen_ai.client.inference.operation.details"
CHOICE = "gen_ai.choice"
# The per-message events -> the role of their message.
MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
_NAMES = frozenset((OPERATION_DETAILS, CHOICE, *MESSAGE_EVENTS))
# What Google ADK (schema 1) writes for the content it was told not to capture.
ELIDED = "<elided>"


@dataclass(frozen=True)
class _Event:
    """One GenAI event: its fields (a log record's body over its attributes), and whether they are
    structured values (a log record) or the JSON text span event attributes must hold."""

    name: str
    fields: Mapping[str, Any]
    structured: bool


def _events(span: SpanRecord) -> list[_Event]:
    found = [
        _Event(str(event["name"]), event.get("attributes") or {}, False)
        for event in span.events
        if event.get("name") in _NAMES
    ]
    for record in sorted(span.logs, key=lambda r: r.get("timestamp_ns") or 0):
        attributes = record.get("attributes") or {}
        name = record.get("event_name") or attributes.get("event.name")
        if name not in _NAMES:
            continue
        body = record.get("body")
        parsed = json_value(body) if isinstance(body, str) else body
        if isinstance(parsed, dict):
            fields = {**attributes, **parsed}
        elif body is not None and body != "":
            fields = {**attributes, "content": body if parsed is None else parsed}
        else:
            fields = dict(attributes)
        found.append(_Event(str(name), fields, True))
    return found


def _json_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _is_blocks(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, dict) for item in value)


def _value(event: _Event, key: str) -> Any:
    """A field, JSON text parsed when the event is a span event (a value that is not JSON: as is)."""
    raw = event.fields.get(key)
    if event.structured or not isinstance(raw, str):
        return raw
    parsed = json_value(raw)
    return raw if parsed is None else parsed


def result_text(content: Any) -> Any:
    """A Strands ``toolResult``'s ``content`` (``[{text} | {json}]``) as the text the tool returned;
    anything else as it is."""
    if not _is_blocks(content) or not all(any(k in b for k in ("text", "json")) for b in content):
        return content
    texts = [b["text"] if "text" in b else json.dumps(b["json"], ensure_ascii=False) for b in content]
    return "\n".join(str(t) for t in texts)


def _block_messages(
    role: str, content: Any, tool_calls: Any = None, tool_call_id: Any = None, finish: Any = None
) -> list[Message]:
    """One message's content: text, Strands's content blocks or the conventions' parts (``{type:
    text, content | text}``), with chat-style ``tool_calls``; a Strands ``toolResult`` is a tool
    message of its own."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[str] = []
    results: list[Message] = []
    if content == ELIDED:
        pass
    elif isinstance(content, str):
        texts.append(content)
    elif _is_blocks(content):
        for block in content:
            if "toolUse" in block and isinstance(block["toolUse"], dict):
                use = block["toolUse"]
                calls.append(
                    ToolCall(
                        text_of(use.get("toolUseId")), text_of(use.get("name")), _json_text(use.get("input"))
                    )
                )
            elif "toolResult" in block and isinstance(block["toolResult"], dict):
                done = block["toolResult"]
                text = _json_text(result_text(done.get("content")))
                results.append(Message("tool", text, tool_call_id=text_of(done.get("toolUseId")) or None))
            elif "reasoningContent" in block and isinstance(block["reasoningContent"], dict):
                said = block["reasoningContent"].get("reasoningText")
                if isinstance(said, dict) and said.get("text") is not None:
                    reasoning.append(str(said["text"]))
            elif block.get("type", "text") == "text" and ("text" in block or "content" in block):
                texts.append(str(block.get("text", block.get("content"))))
    elif content is not None:
        texts.append(json.dumps(content, ensure_ascii=False))
    for call in tool_calls if isinstance(tool_calls, list) else []:
        if isinstance(call, dict):
            inner = call.get("function")
            function: dict[str, Any] = inner if isinstance(inner, dict) else call
            calls.append(
                ToolCall(
                    text_of(call.get("id")),
                    text_of(function.get("name")),
                    _json_text(function.get("arguments")),
                )
            )
    messages = list(results)
    if texts or calls or reasoning:  # a message with nothing recorded in it is none
        messages.append(
            Message(
                role,
                "\n".join(texts) or None,
                calls,
                tool_call_id=None if tool_call_id is None else str(tool_call_id),
                reasoning=reasoning,
                finish_reason=finish if isinstance(finish, str) else None,
            )
        )
    return messages


def _response_unwrapped(messages: Any) -> Any:
    """GenAI messages with a Strands tool result (``response: [{text}]``) as the text it holds."""
    if not isinstance(messages, list):
        return messages
    unwrapped = []
    for message in messages:
        if isinstance(message, dict) and isinstance(message.get("parts"), list):
            parts = [
                {**part, "response": result_text(part["response"])}
                if isinstance(part, dict) and part.get("type") == "tool_call_response" and "response" in part
                else part
                for part in message["parts"]
            ]
            message = {**message, "parts": parts}
        unwrapped.append(message)
    return unwrapped


def _tool_use(span: SpanRecord, events: list[_Event]) -> ToolUse:
    """An ``execute_tool`` span's call: its input and result events are the arguments and result."""
    arguments = result = None
    for event in events:
        if event.name == "gen_ai.tool.message" and arguments is None:
            arguments = event.fields.get("content")
        elif event.name == CHOICE and result is None:
            result = result_text(_value(event, "message"))
        elif event.name == OPERATION_DETAILS:
            for message in genai_messages(_response_unwrapped(_value(event, GEN_AI_INPUT_MESSAGES))):
                if arguments is None and message.tool_calls:
                    arguments = message.tool_calls[0].tool_input
            for message in genai_messages(_response_unwrapped(_value(event, GEN_AI_OUTPUT_MESSAGES))):
                if result is None and message.role == "tool":
                    result = message.content
    name = span.attributes.get("gen_ai.tool.name")
    return ToolUse(name=None if name is None else str(name), arguments=_json_text(arguments), result=result)


def _agent_tools(span: SpanRecord) -> list[dict[str, Any]]:
    """Strands's ``gen_ai.agent.tools``: the names of the agent's tools."""
    names = json_value(span.attributes.get("gen_ai.agent.tools"))
    return [{"name": n} for n in names if isinstance(n, str)] if isinstance(names, list) else []


def read(span: SpanRecord) -> Reading | None:
    events = _events(span)
    if not events:
        return None
    if span.attributes.get("gen_ai.operation.name") == "execute_tool":
        return Reading(kind="TOOL", tool=_tool_use(span, events))
    reading = Reading(tools=_agent_tools(span))
    systems: list[str] = []
    for event in events:
        if event.name in MESSAGE_EVENTS:
            role = MESSAGE_EVENTS[event.name]
            tool_call_id = event.fields.get("id") if role == "tool" else None
            said = _block_messages(role, _value(event, "content"), _value(event, "tool_calls"), tool_call_id)
            if role == "system":
                systems += [m.content for m in said if m.content]
            else:
                reading.input_messages += said
        elif event.name == CHOICE:
            message = _value(event, "message")
            if message is None:  # Google ADK's: the choice's content itself
                message = _value(event, "content")
            finish = event.fields.get("finish_reason")
            if isinstance(message, dict) and any(k in message for k in ("role", "content", "tool_calls")):
                said = _block_messages(  # the conventions' {role, content, tool_calls}
                    str(message.get("role", "assistant")),
                    message.get("content"),
                    message.get("tool_calls"),
                    finish=finish,
                )
            else:
                said = _block_messages("assistant", message, finish=finish)
            reading.output_messages += said
            if event.fields.get("tool.result") is not None:  # Strands's cycle: the tool results it got
                reading.output_messages += _block_messages("user", _value(event, "tool.result"))
            if isinstance(finish, str):
                reading.finish_reasons.append(finish)
        else:
            _read_details(reading, event, systems)
    if systems:
        reading.system = "\n\n".join(systems)
    return reading


def _read_details(reading: Reading, event: _Event, systems: list[str]) -> None:
    """A ``gen_ai.client.inference.operation.details`` event, and the call it describes when it is
    a log record (its attributes: the span's, repeated)."""
    reading.input_messages += genai_messages(_response_unwrapped(_value(event, GEN_AI_INPUT_MESSAGES)))
    output = genai_messages(_response_unwrapped(_value(event, GEN_AI_OUTPUT_MESSAGES)))
    reading.output_messages += output
    reading.finish_reasons += [m.finish_reason for m in output if m.finish_reason]
    system = genai_system(_value(event, GEN_AI_SYSTEM_INSTRUCTIONS))
    if system:
        systems.append(system)
    reading.tools += genai_tools(_value(event, GEN_AI_TOOL_DEFINITIONS))
    if not event.structured:
        return
    fields = event.fields
    operation = fields.get("gen_ai.operation.name")
    reading.kind = reading.kind or (
        GEN_AI_OPERATION_KINDS.get(operation) if isinstance(operation, str) else None
    )
    model = fields.get("gen_ai.response.model", fields.get("gen_ai.request.model"))
    reading.model = reading.model or (None if model is None else str(model))
    provider = fields.get("gen_ai.provider.name", fields.get("gen_ai.system"))
    reading.provider = reading.provider or (None if provider is None else str(provider))
    reading.tokens = reading.tokens or tokens_of(fields)
