"""OpenLLMetry (Traceloop): its instrumentations' indexed attributes and Traceloop's SDK spans.

- The instrumentations before the GenAI message attributes (opentelemetry-instrumentation-openai
  0.40 and its siblings): ``llm.request.type`` (chat, completion: a model call),
  ``gen_ai.prompt.N.{role,content,tool_call_id,tool_calls.M.{id,name,arguments}}`` (a completion
  request's: ``gen_ai.prompt.0.user``),
  ``gen_ai.completion.N.{role,content,finish_reason,refusal,tool_calls.M.*}`` (``llm.prompts`` /
  ``llm.completions`` before that), ``llm.request.functions.N.{name,description,parameters}``,
  ``gen_ai.system``, ``gen_ai.request.model`` / ``gen_ai.response.model``,
  ``gen_ai.usage.prompt_tokens`` / ``completion_tokens`` / ``cache_read_input_tokens`` /
  ``cache_creation_input_tokens``, ``llm.usage.total_tokens`` / ``reasoning_tokens``. A completion
  of role ``thinking`` (the Anthropic instrumentation's) is the reasoning of the answer after it.
- Their current form (0.62) writes GenAI attributes (``gen_ai.input.messages``...: the ``genai``
  reader's); from it this reader takes only ``gen_ai.usage.reasoning_tokens``, and what turns the
  content on when it was not recorded.
- Traceloop's SDK (``@workflow`` / ``@task`` / ``@agent`` / ``@tool``, 0.62): ``traceloop.span.kind``
  (workflow and task: CHAIN, agent: AGENT, tool: TOOL), ``traceloop.entity.name``,
  ``traceloop.entity.input`` (the JSON of ``{"args": [...], "kwargs": {...}}``) and
  ``traceloop.entity.output`` (the JSON of what the function returned).

Content is recorded unless ``TRACELOOP_TRACE_CONTENT`` is false.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from otel_blackbox._spans.conventions.tokens import TokenKeys, tokens_from
from otel_blackbox._spans.messages import Message, ToolCall, indexed, json_value, text_of
from otel_blackbox._spans.view.model import Reading, Tokens, ToolUse
from otel_blackbox._store.queries import SpanRecord

__all__ = ["NAME", "SUMMARY_KEYS", "entity_value", "read"]

NAME = "openllmetry"

REQUEST_TYPE = "llm.request.type"
SPAN_KIND = "traceloop.span.kind"
ENTITY_NAME = "traceloop.entity.name"
ENTITY_INPUT = "traceloop.entity.input"
ENTITY_OUTPUT = "traceloop.entity.output"
_PROMPTS = ("gen_ai.prompt", "llm.prompts")
_COMPLETIONS = ("gen_ai.completion", "llm.completions")
_FUNCTIONS = "llm.request.functions"
_MODEL_KEYS = ("gen_ai.response.model", "gen_ai.request.model", "llm.response.model", "llm.request.model")
_PROVIDER_KEYS = ("gen_ai.system", "gen_ai.provider.name", "llm.vendor")
_TOKEN_KEYS = TokenKeys(
    input=("gen_ai.usage.prompt_tokens", "gen_ai.usage.input_tokens", "llm.usage.prompt_tokens"),
    output=("gen_ai.usage.completion_tokens", "gen_ai.usage.output_tokens", "llm.usage.completion_tokens"),
    total=("llm.usage.total_tokens", "gen_ai.usage.total_tokens"),
    cache_read=("gen_ai.usage.cache_read_input_tokens", "gen_ai.usage.cache_read.input_tokens"),
    cache_write=("gen_ai.usage.cache_creation_input_tokens", "gen_ai.usage.cache_creation.input_tokens"),
    reasoning=("gen_ai.usage.reasoning_tokens", "llm.usage.reasoning_tokens"),
)
SUMMARY_KEYS = (
    REQUEST_TYPE,
    SPAN_KIND,
    *_MODEL_KEYS,
    *_PROVIDER_KEYS,
    *_TOKEN_KEYS.all(),
)

# llm.request.type -> the kind of span (LLMRequestTypeValues).
REQUEST_KINDS = {"chat": "LLM", "completion": "LLM", "embedding": "EMBEDDING", "rerank": "RERANKER"}
# traceloop.span.kind -> the kind of span (TraceloopSpanKindValues).
SPAN_KINDS = {"workflow": "CHAIN", "task": "CHAIN", "agent": "AGENT", "tool": "TOOL"}
# The current form: a model call whose messages are GenAI attributes, when content is recorded.
_GENAI_CALLS = ("chat", "text_completion", "generate_content")
_NO_CONTENT = (
    "TRACELOOP_TRACE_CONTENT is false: OpenLLMetry records no prompts or completions (unset or true does)"
)


def _first(attributes: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    return next((attributes[key] for key in keys if attributes.get(key) is not None), None)


def _tokens(attributes: Mapping[str, Any]) -> Tokens | None:
    return tokens_from(attributes, _TOKEN_KEYS)


def _content(value: Any) -> str | None:
    """A message's content: text, or the JSON of a list of parts (their texts joined)."""
    if value is None:
        return None
    text = str(value)
    parsed = json_value(text) if text.startswith("[") else None
    if isinstance(parsed, list) and all(isinstance(p, dict) for p in parsed):
        texts = [str(p.get("text", "")) for p in parsed if p.get("type", "text") == "text"]
        if texts:
            return "\n".join(texts)
    return text


def _messages(attributes: Mapping[str, Any], prefixes: tuple[str, ...]) -> list[Message]:
    items = next((found for prefix in prefixes if (found := indexed(attributes, prefix))), [])
    messages: list[Message] = []
    thinking: list[str] = []
    for flat in items:
        if "role" not in flat and "user" in flat:  # a completion request's prompt: gen_ai.prompt.0.user
            flat = {"role": "user", "content": flat["user"], **flat}
        role = str(flat.get("role", "?"))
        content = _content(flat.get("content"))
        if role == "thinking":  # a reasoning block, a completion of its own
            if content:
                thinking.append(content)
            continue
        calls = [
            ToolCall(text_of(call.get("id")), text_of(call.get("name")), call.get("arguments"))
            for call in indexed(flat, "tool_calls")
        ]
        tool_call_id = flat.get("tool_call_id")
        finish = flat.get("finish_reason")
        refusal = flat.get("refusal")
        messages.append(
            Message(
                role=role,
                content=content if content is not None or refusal is None else str(refusal),
                tool_calls=calls,
                tool_call_id=None if tool_call_id is None else str(tool_call_id),
                name=flat.get("name") if isinstance(flat.get("name"), str) else None,
                reasoning=thinking,
                finish_reason=finish if isinstance(finish, str) else None,
            )
        )
        thinking = []
    if thinking:
        messages.append(Message("assistant", reasoning=thinking))
    return messages


def _tools(attributes: Mapping[str, Any]) -> list[dict[str, Any]]:
    tools = []
    for flat in indexed(attributes, _FUNCTIONS):
        tool: dict[str, Any] = {"type": "function", "name": text_of(flat.get("name"))}
        if flat.get("description") is not None:
            tool["description"] = flat["description"]
        if flat.get("parameters") is not None:
            parameters = json_value(flat["parameters"])
            tool["parameters"] = parameters if parameters is not None else flat["parameters"]
        tools.append(tool)
    return tools


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def entity_value(raw: Any) -> Any:
    """``traceloop.entity.output``: the JSON of what the function returned, as text when it returned
    text, else as JSON text; a value that is not JSON as it is."""
    if raw is None:
        return None
    parsed = json_value(raw)
    return raw if parsed is None else _as_text(parsed)


def _arguments(raw: Any) -> Any:
    """``traceloop.entity.input`` (``{"args": [...], "kwargs": {...}}``) as the call's arguments: the
    keyword arguments as a JSON object, else the positional ones as a JSON list, else both."""
    parsed = json_value(raw)
    if not isinstance(parsed, dict) or not {"args", "kwargs"} >= parsed.keys():
        return raw
    args, kwargs = parsed.get("args") or [], parsed.get("kwargs") or {}
    if kwargs and not args:
        return _as_text(kwargs)
    if args and not kwargs:
        return _as_text(args)
    return None if not args and not kwargs else _as_text(parsed)


def _input_text(raw: Any) -> str | None:
    """An entity's input as text: its one positional argument, else its arguments as JSON."""
    parsed = json_value(raw)
    if isinstance(parsed, dict) and not parsed.get("kwargs") and len(parsed.get("args") or []) == 1:
        return _as_text(parsed["args"][0])
    arguments = _arguments(raw)
    return None if arguments is None else str(arguments)


def _is_current_form(span: SpanRecord) -> bool:
    """A span of an OpenLLMetry instrumentation's current form: GenAI attributes, and its own marks."""
    attrs = span.attributes
    return (
        "gen_ai.is_streaming" in attrs
        or "traceloop.workflow.name" in attrs
        or "traceloop.association.properties" in attrs
    )


def read(span: SpanRecord) -> Reading | None:
    attrs = span.attributes
    request_type = attrs.get(REQUEST_TYPE)
    span_kind = attrs.get(SPAN_KIND)
    kind = REQUEST_KINDS.get(request_type) if isinstance(request_type, str) else None
    if kind is None and isinstance(span_kind, str):
        kind = SPAN_KINDS.get(span_kind)
    inputs = _messages(attrs, _PROMPTS)
    outputs = _messages(attrs, _COMPLETIONS)
    tokens = _tokens(attrs)
    reasoning_counted = tokens is not None and tokens.reasoning is not None
    if request_type is None and span_kind is None and not (inputs or outputs):
        operation = attrs.get("gen_ai.operation.name")
        if not _is_current_form(span):
            return None
        no_content = (
            _NO_CONTENT
            if operation in _GENAI_CALLS
            and "gen_ai.input.messages" not in attrs
            and "gen_ai.output.messages" not in attrs
            else None
        )
        if no_content is None and not reasoning_counted:
            return None
        return Reading(tokens=tokens if reasoning_counted else None, no_content=no_content)
    model, provider = _first(attrs, _MODEL_KEYS), _first(attrs, _PROVIDER_KEYS)
    tool = None
    if span_kind == "tool":
        output = attrs.get(ENTITY_OUTPUT)
        tool = ToolUse(
            name=text_of(attrs.get(ENTITY_NAME)) or None,
            arguments=_arguments(attrs.get(ENTITY_INPUT)),
            result=entity_value(output),
        )
    entity = isinstance(span_kind, str) and request_type is None
    no_content = _NO_CONTENT if kind == "LLM" and not (inputs or outputs) else None
    return Reading(
        kind=kind,
        model=None if model is None else str(model),
        provider=None if provider is None else str(provider),
        input_messages=inputs,
        output_messages=outputs,
        input_text=_input_text(attrs.get(ENTITY_INPUT))
        if entity and attrs.get(ENTITY_INPUT) is not None
        else None,
        output_text=entity_value(attrs.get(ENTITY_OUTPUT)) if entity else None,
        tools=_tools(attrs),
        tool=tool,
        tokens=tokens,
        finish_reasons=[m.finish_reason for m in outputs if m.finish_reason],
        no_content=no_content,
    )
