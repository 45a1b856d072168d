"""Pydantic Logfire's own attributes, and pydantic-ai's agent runs (read with logfire 5.4, pydantic-ai
2.78; the names are older than both):

- ``logfire.msg``: the rendered message, the name to show when the span's name is its template
  (``Chat Completion with {request_data[model]!r}``, ``execute_tool {gen_ai.tool.name}``);
- ``request_data`` / ``response_data`` of ``logfire.instrument_openai`` / ``instrument_anthropic``
  (``version=1``, and every version before the GenAI attributes): the request JSON (``messages``,
  ``tools``, ``system``) and ``{message, usage}`` of the response (OpenAI chat or Anthropic
  messages; a completion's ``text``, a stream's ``combined_chunk_content``); tokens from its usage,
  else from ``gen_ai.usage.raw``;
- ``events``: the Responses API spans' messages at ``version=1`` (and ``instrument_openai_agents``'s),
  event-style dicts (``{event.name, role, content, tool_calls?, id?}``), the answer last;
- pydantic-ai's agent run: ``pydantic_ai.all_messages`` (GenAI messages; ``all_messages_events``,
  event-style, before version 2 of its format) and ``final_result``: the agent's input, and its
  output (the final answer). Its model calls and tools are GenAI spans (``genai``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from otel_blackbox._spans.conventions.genai import genai_messages
from otel_blackbox._spans.messages import Message, ToolCall, json_value, text_of
from otel_blackbox._spans.view.model import Reading, Tokens
from otel_blackbox._store.queries import SpanRecord

__all__ = ["NAME", "SUMMARY_KEYS", "read"]

NAME = "logfire"

LOGFIRE_MSG = "logfire.msg"
LOGFIRE_MSG_TEMPLATE = "logfire.msg_template"
REQUEST_DATA = "request_data"
RESPONSE_DATA = "response_data"
EVENTS = "events"
ALL_MESSAGES = "pydantic_ai.all_messages"
ALL_MESSAGES_EVENTS = "all_messages_events"
FINAL_RESULT = "final_result"
USAGE_RAW = "gen_ai.usage.raw"
# The kind (the template) and the tokens (the raw usage) without request_data / response_data, which
# hold the prompts and the answer: Logfire's calls also carry the GenAI attributes since 3.x.
SUMMARY_KEYS = (LOGFIRE_MSG_TEMPLATE, USAGE_RAW)

# The message templates of Logfire's LLM integrations -> the kind of span.
_TEMPLATE_KINDS = (
    ("Chat Completion with", "LLM"),
    ("Completion with", "LLM"),
    ("Responses API", "LLM"),
    ("Message with", "LLM"),  # Anthropic
    ("Embedding Creation with", "EMBEDDING"),
)
_PROVIDERS = {"logfire.openai": "openai", "logfire.anthropic": "anthropic"}


def _dict(value: Any) -> dict[str, Any] | None:
    parsed = json_value(value)
    return parsed if isinstance(parsed, dict) else None


def _list(value: Any) -> list[Any]:
    parsed = json_value(value)
    return parsed if isinstance(parsed, list) else []


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _arguments(value: Any) -> Any:
    return value if value is None or isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _tool_calls(raw: Any) -> list[ToolCall]:
    """OpenAI's ``tool_calls`` (``{id, function: {name, arguments}}``, or ``custom: {name, input}``)."""
    calls = []
    for call in raw if isinstance(raw, list) else []:
        if not isinstance(call, dict):
            continue
        function = call.get("function") or call.get("custom") or call
        if not isinstance(function, dict):
            continue
        arguments = function.get("arguments", function.get("input"))
        calls.append(ToolCall(text_of(call.get("id")), text_of(function.get("name")), _arguments(arguments)))
    return calls


def _message(item: Any) -> list[Message]:
    """One message of a request or a response, OpenAI chat or Anthropic (whose ``tool_result`` blocks
    become messages of their own, role ``tool``), or an event-style dict (Logfire's ``events``,
    pydantic-ai's ``all_messages_events``: a tool message's call id in ``id``)."""
    if not isinstance(item, dict):
        return []
    role = str(item.get("role") or "?")
    content = item.get("content")
    texts: list[str] = []
    reasoning: list[str] = []
    calls = _tool_calls(item.get("tool_calls"))
    results: list[Message] = []
    if isinstance(content, str):
        texts.append(content)
    elif isinstance(content, dict):
        texts.append(_text(content))
    for block in content if isinstance(content, list) else []:
        if isinstance(block, str):
            texts.append(block)
            continue
        if not isinstance(block, dict):
            continue
        kind = block.get("type", "text")
        if kind in ("text", "input_text", "output_text"):
            texts.append(str(block.get("text", block.get("content", ""))))
        elif kind == "refusal":
            texts.append(str(block.get("refusal", "")))
        elif kind in ("thinking", "reasoning"):
            reasoning.append(str(block.get("thinking", block.get("text", block.get("content", "")))))
        elif kind == "tool_use":  # Anthropic
            calls.append(
                ToolCall(text_of(block.get("id")), text_of(block.get("name")), _arguments(block.get("input")))
            )
        elif kind == "tool_result":
            result = block.get("content")
            if isinstance(result, list):
                result = "\n".join(str(b.get("text", "")) for b in result if isinstance(b, dict))
            results.append(
                Message(
                    "tool", None if result is None else _text(result), tool_call_id=block.get("tool_use_id")
                )
            )
    for key in ("reasoning_content", "reasoning"):
        if isinstance(item.get(key), str) and item[key]:
            reasoning.append(item[key])
    call_id = item.get("tool_call_id", item.get("id") if role == "tool" else None)
    name = item.get("name")
    messages = results
    if texts or calls or reasoning or not results:
        messages.append(
            Message(
                role,
                "\n".join(texts) if texts else None,
                calls,
                tool_call_id=None if call_id is None else str(call_id),
                name=name if isinstance(name, str) else None,
                reasoning=reasoning,
            )
        )
    return messages


def _messages(items: list[Any]) -> list[Message]:
    return [message for item in items for message in _message(item)]


def _system_text(value: Any) -> str | None:
    """Anthropic's ``system`` (text, or text blocks), the Responses API's ``instructions``."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = [str(b.get("text", "")) for b in value if isinstance(b, dict)]
        return "\n\n".join(texts) or None
    return None


def _usage_tokens(usage: Mapping[str, Any] | None) -> Tokens | None:
    """OpenAI's (chat: ``prompt_tokens``..., Responses: ``input_tokens``...) or Anthropic's usage,
    whose ``input_tokens`` leave out the cached ones."""
    if not usage:
        return None
    details_in = usage.get("prompt_tokens_details") or usage.get("input_tokens_details") or {}
    details_out = usage.get("completion_tokens_details") or usage.get("output_tokens_details") or {}
    cache_read = _int(usage.get("cache_read_input_tokens"))
    cache_write = _int(usage.get("cache_creation_input_tokens"))
    input_tokens = _int(usage.get("prompt_tokens", usage.get("input_tokens")))
    if input_tokens is not None and (cache_read is not None or cache_write is not None):  # Anthropic
        input_tokens += (cache_read or 0) + (cache_write or 0)
    tokens = Tokens(
        input=input_tokens,
        output=_int(usage.get("completion_tokens", usage.get("output_tokens"))),
        total=_int(usage.get("total_tokens")),
        cache_read=cache_read if cache_read is not None else _int(details_in.get("cached_tokens")),
        cache_write=cache_write if cache_write is not None else _int(details_in.get("cache_write_tokens")),
        reasoning=_int(details_out.get("reasoning_tokens")),
    )
    return tokens if tokens.counted else None


def _response_messages(response: Mapping[str, Any]) -> list[Message]:
    message = response.get("message")
    if isinstance(message, dict):
        return _message({**message, "role": message.get("role") or "assistant"})
    for key in ("text", "combined_chunk_content"):  # a completion's, a stream's without a snapshot
        if isinstance(response.get(key), str):
            return [Message("assistant", response[key])]
    return []


def _split_events(events: list[Any]) -> tuple[list[Any], list[Any]]:
    """A Responses API span's ``events``: its input, then the answer (the assistant's, last)."""
    end = len(events)
    while end > 0 and isinstance(events[end - 1], dict) and events[end - 1].get("role") == "assistant":
        end -= 1
    return events[:end], events[end:]


def _template_kind(span: SpanRecord) -> str | None:
    template = span.attributes.get(LOGFIRE_MSG_TEMPLATE, span.name)
    if not isinstance(template, str):
        return None
    return next((kind for prefix, kind in _TEMPLATE_KINDS if template.startswith(prefix)), None)


def _read_call(span: SpanRecord, reading: Reading) -> None:
    """A model call of Logfire's LLM integrations: ``request_data`` / ``response_data`` / ``events``."""
    attrs = span.attributes
    request = _dict(attrs.get(REQUEST_DATA)) or {}
    response = _dict(attrs.get(RESPONSE_DATA)) or {}
    events = _list(attrs.get(EVENTS))
    reading.kind = _template_kind(span) or ("LLM" if "messages" in request or "message" in response else None)
    model = request.get("model")
    answer = _dict(response.get("message")) or {}
    reading.model = text_of(answer.get("model") or model) or None
    reading.provider = _PROVIDERS.get(str(span.scope.get("name")))
    system = [e for e in events if isinstance(e, dict) and e.get("role") == "system"]
    reading.system = _system_text(request.get("system")) or (
        _system_text(system[0].get("content")) if system else None
    )
    inputs, outputs = _split_events([e for e in events if e not in system])
    reading.input_messages = _messages(_list(request.get("messages"))) or _messages(inputs)
    reading.output_messages = _response_messages(response) or _messages(outputs)
    reading.tools = [t for t in _list(request.get("tools")) if isinstance(t, dict)]
    usage = response.get("usage") if isinstance(response.get("usage"), dict) else _dict(attrs.get(USAGE_RAW))
    reading.tokens = _usage_tokens(usage)
    finish = answer.get("stop_reason", response.get("finish_reason"))
    reading.finish_reasons = [finish] if isinstance(finish, str) else []


def _read_agent_run(span: SpanRecord, reading: Reading) -> None:
    """pydantic-ai's agent run: the history it ended with, less its answer, is the input; the answer
    (the last message, when the run gave a ``final_result``) and the final result the output."""
    attrs = span.attributes
    reading.kind = "AGENT"
    model = attrs.get("model_name")
    reading.model = model if isinstance(model, str) and model != "no-model" else None
    if ALL_MESSAGES in attrs:
        messages = genai_messages(attrs.get(ALL_MESSAGES))
    else:
        events = _list(attrs.get(ALL_MESSAGES_EVENTS))
        system = [e for e in events if isinstance(e, dict) and e.get("role") == "system"]
        reading.system = _system_text(system[0].get("content")) if system else None
        messages = _messages([e for e in events if e not in system])
    final = attrs.get(FINAL_RESULT)
    if final is not None and messages and messages[-1].role == "assistant":
        reading.output_messages = [messages.pop()]
    reading.input_messages = messages
    reading.output_text = None if final is None else _text(final)


def read(span: SpanRecord) -> Reading | None:
    attrs = span.attributes
    message = attrs.get(LOGFIRE_MSG)
    call = REQUEST_DATA in attrs or RESPONSE_DATA in attrs or _template_kind(span) is not None
    agent_run = ALL_MESSAGES in attrs or ALL_MESSAGES_EVENTS in attrs
    if message is None and LOGFIRE_MSG_TEMPLATE not in attrs and not call and not agent_run:
        return None
    reading = Reading(name=str(message) if message is not None and "{" in span.name else None)
    if call:
        _read_call(span, reading)
    elif agent_run:
        _read_agent_run(span, reading)
    return reading
