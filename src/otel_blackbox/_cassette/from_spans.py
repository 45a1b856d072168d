"""A recorded trace (its stored spans) as a cassette.

OpenInference LLM spans give ``model_input`` and ``model_output``; TOOL spans give ``tool_call``
and ``tool_result``; a tool round with no TOOL span is read from the tool-result messages of the
next model input; the root span's end gives the closing ``metadata`` (a trace with spans still
open ends ``run_failed`` / ``process_exit``). Provider ids become ``call-0, call-1, ...`` in the
order the model produced them; ids and the providers' stop metadata never enter a payload. An LLM
span's token counts (with its cached, cache-write and reasoning details) are its model_output's
``tokenUsage``.

The cassette keeps what the model did: the OpenAI Agents SDK's handoff spans (a TOOL span
``handoff to <agent>`` beside the model's own ``transfer_to_<agent>`` call) are not steps, and a
call whose arguments its instrumentor left out because they were ``{}`` has ``{}``, so a cassette
from spans lists the tool path a cassette from the wire lists. ``Cassette.api`` is set from the
first model call's span when that span tells the API (and ``stream`` when it tells that too).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from openinference.semconv.trace import OpenInferenceSpanKindValues, SpanAttributes

from otel_blackbox._cassette.captured import captured_exchange, captured_model_call
from otel_blackbox._cassette.model import OBSERVED, Cassette
from otel_blackbox._cassette.output import Extras, Hosted, Reasoning, neutral_stop_reason, with_extras
from otel_blackbox._cassette.tool_output import tool_output
from otel_blackbox._cost.spans import usage_of
from otel_blackbox._cost.usage import usage_json, with_usage
from otel_blackbox._spans.messages import (
    GEN_AI_RESPONSE_FINISH_REASONS,
    GEN_AI_TOOL_CALL_ARGUMENTS,
    GEN_AI_TOOL_CALL_RESULT,
    GEN_AI_TOOL_DEFINITIONS,
    HostedCall,
    Message,
    ToolCall,
    function_response_outcome,
    input_messages,
    output_messages,
    system_instructions,
    tool_definitions,
    tool_name,
)
from otel_blackbox._spans.semconv import (
    ATTR_HTTP_REQUEST_BODY,
    ATTR_HTTP_REQUEST_BODY_ENCODING,
    ATTR_HTTP_URL,
    ATTR_MODEL_PROVIDER,
)
from otel_blackbox._store.queries import SpanRecord
from otel_blackbox._wire.call_ids import CallIds, call_signature
from otel_blackbox._wire.request_fields import (
    ANTHROPIC_FIELDS,
    CHAT_FIELDS,
    RESPONSES_FIELDS,
    RequestFields,
)

__all__ = ["PROCESS_EXIT", "cassette_from_spans"]

PROCESS_EXIT = "process_exit"
_LLM = OpenInferenceSpanKindValues.LLM.value
_TOOL = OpenInferenceSpanKindValues.TOOL.value
_SYSTEM_ROLES = ("system", "developer")
_ROLES = {"model": "assistant"}  # Gemini's name for the assistant
# Instrumentors whose llm.invocation_parameters are the SDK call's own arguments.
_SDK_ARGUMENTS = frozenset(
    {"openinference.instrumentation.openai", "openinference.instrumentation.anthropic"}
)
# SDK arguments that are not request fields.
_SDK_ONLY = ("extra_headers", "extra_query", "extra_body", "timeout")
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
_GEN_AI_PARAMS = {
    "gen_ai.request.max_tokens": "maxTokens",
    "gen_ai.request.temperature": "temperature",
    "gen_ai.request.top_p": "topP",
    "gen_ai.request.stop_sequences": "stop",
}
# Instrumentors whose llm.invocation_parameters are the response's echo (the Agents SDK's spans
# carry the temperature, top_p and tool_choice the Responses API answered with), not the request.
_AGENTS_SCOPE = "openinference.instrumentation.openai_agents"
_ECHOING_SCOPES = frozenset({_AGENTS_SCOPE})
_OPENAI_SCOPE = "openinference.instrumentation.openai"
_ANTHROPIC_SCOPE = "openinference.instrumentation.anthropic"
_GOOGLE_GENAI_SCOPE = "openinference.instrumentation.google_genai"
_LANGCHAIN_SCOPE = "openinference.instrumentation.langchain"
# The API of a span, by its instrumentor's span name (OpenInference's OpenAI instrumentor names a
# span after the SDK's response type; its google-genai one after the method).
_OPENAI_SPAN_APIS = {
    "ChatCompletion": "openai-chat",
    "ParsedChatCompletion": "openai-chat",
    "Response": "openai-responses",
    "ParsedResponse": "openai-responses",
}
_GEMINI_SPAN_STREAMS = {
    "GenerateContent": False,
    "AsyncGenerateContent": False,
    "GenerateContentStream": True,
    "AsyncGenerateContentStream": True,
}
# LangChain's chat model types (its ``_type``) that name one API.
_LANGCHAIN_APIS = {"openai-chat": "openai-chat", "anthropic-chat": "anthropic"}
# GenAI conventions' provider names that name one API (OpenAI's two are told by the response id).
_GEN_AI_APIS = {"anthropic": "anthropic", "gcp.gemini": "gemini", "google-gla": "gemini"}
GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
GEN_AI_SYSTEM = "gen_ai.system"
GEN_AI_RESPONSE_ID = "gen_ai.response.id"
# Recorded only for a streamed call (the time its first chunk came).
GEN_AI_TIME_TO_FIRST_CHUNK = "gen_ai.client.operation.time_to_first_chunk"


def _ms(ns: int | None) -> int:
    return 0 if ns is None else ns // 1_000_000


def _json_or_text(value: Any) -> Any:
    """Tool arguments arrive as JSON text; keep the parsed value, or the text when it is not JSON."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


@dataclass
class _Calls:
    """Provider tool-call ids -> neutral ids, numbered in the order the model produced them (the
    wire translations' ``CallIds``, so a call without an id is numbered as a replay numbers it),
    and the tool name of each."""

    ids: CallIds = field(default_factory=CallIds)
    names: dict[str, str] = field(default_factory=dict)

    def id_for(self, provider_id: str | None, name: str | None) -> str:
        neutral = self.ids.neutral(provider_id or f"anonymous-{self.ids.next_index()}")
        if name:
            self.names[neutral] = name
        return neutral

    def made(self, call: ToolCall) -> str:
        """A call in a model's answer."""
        neutral = self.ids.made_call(_signature(call), call.id)
        self.names[neutral] = call.name or "unknown"
        return neutral

    def in_history(self, messages: list[Message]) -> Iterator[str]:
        """The ids of a request's history calls, in order (matched with the calls the model made)."""
        history = [call for message in messages for call in message.tool_calls]
        found = self.ids.in_history([(_signature(call), call.id) for call in history])
        for call, neutral in zip(history, found, strict=True):
            self.names[neutral] = call.name or "unknown"
        return iter(found)


def _signature(call: ToolCall) -> str:
    return call_signature(call.name or "unknown", _json_or_text(call.arguments))


def _neutral_messages(
    messages: list[Message], calls: _Calls, *, function_responses: bool = False
) -> tuple[list[dict[str, Any]], str | None]:
    """Provider-flavoured messages -> v2 messages and the system prompt. ``function_responses``:
    a tool message holds a Gemini functionResponse's ``response`` as JSON (google-genai's spans)."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    history_ids = calls.in_history(messages)
    unanswered: list[tuple[str, str | None]] = []  # (neutral id, name) of the last turn's calls
    for message in messages:
        role = _ROLES.get(message.role, message.role)
        if role in _SYSTEM_ROLES and not out:
            system.append(message.content or "")
        elif role == "tool":
            call_id = _answered(message, calls, unanswered)
            part = {
                "type": "tool_result",
                "toolCallId": call_id,
                "toolName": calls.names.get(call_id, message.name or "unknown"),
                **_outcome(message.content, function_responses),
            }
            previous = out[-1] if out else None
            if previous and previous["role"] == "user" and isinstance(previous["content"], list):
                previous["content"].append(part)  # one user turn holds every result of a round
            else:
                out.append({"role": "user", "content": [part]})
        elif message.tool_calls:
            parts: list[dict[str, Any]] = (
                [{"type": "text", "text": message.content}] if message.content else []
            )
            parts += [
                {
                    "type": "tool_use",
                    "toolCallId": next(history_ids),
                    "toolName": c.name or "unknown",
                    "toolInput": _json_or_text(c.arguments),
                }
                for c in message.tool_calls
            ]
            asked = [(p["toolCallId"], p["toolName"]) for p in parts if p["type"] == "tool_use"]
            previous = out[-1] if out else None
            if previous and previous["role"] == role == "assistant":
                out[-1] = _one_turn(previous["content"], parts)
                unanswered += asked
            else:
                out.append({"role": role, "content": parts})
                unanswered = asked
        else:
            out.append({"role": role, "content": message.content or ""})
    return out, ("\n\n".join(system) if system else None)


def _outcome(content: str | None, function_response: bool) -> dict[str, Any]:
    if not function_response or content is None:
        return {"result": content if content is not None else ""}
    return function_response_outcome(_json_or_text(content))


def _answered(message: Message, calls: _Calls, unanswered: list[tuple[str, str | None]]) -> str:
    """The call a tool message answers: by its id, else the first unanswered call of the last turn
    with its name (Gemini's function responses carry a name, rarely an id)."""
    if message.tool_call_id:
        call_id = calls.id_for(message.tool_call_id, None)
    else:
        match = next((c for c in unanswered if message.name in (None, c[1])), None)
        call_id = match[0] if match is not None else calls.id_for(None, message.name)
    unanswered[:] = [c for c in unanswered if c[0] != call_id]
    return call_id


def _one_turn(earlier: Any, parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Assistant messages that follow each other as one turn, the shape the wire gives (OpenAI
    Responses sends a turn's text and each call as separate items; the Agents SDK's spans keep them
    apart): the text joined into one leading part, then the calls."""
    earlier = [{"type": "text", "text": earlier}] if isinstance(earlier, str) and earlier else earlier or []
    joined = [*earlier, *parts]
    text = "".join(p.get("text", "") for p in joined if p.get("type") == "text")
    rest = [p for p in joined if p.get("type") != "text"]
    return {"role": "assistant", "content": ([{"type": "text", "text": text}] if text else []) + rest}


def _neutral_tools(attributes: dict[str, Any]) -> list[dict[str, Any]]:
    tools = []
    for definition in tool_definitions(attributes):
        nested = definition.get("function")
        function: dict[str, Any] = nested if isinstance(nested, dict) else definition
        tool: dict[str, Any] = {
            "name": tool_name(definition),
            "description": function.get("description") or "",
        }
        schema = function.get("parameters", function.get("input_schema"))
        if schema is not None:
            tool["inputSchema"] = schema
        tools.append(tool)
    return tools


def _model_input(span: SpanRecord, calls: _Calls) -> dict[str, Any]:
    attrs = span.attributes
    gemini = span.scope.get("name") == _GOOGLE_GENAI_SCOPE
    messages, system = _neutral_messages(
        _with_arguments(span, input_messages(attrs)), calls, function_responses=gemini
    )
    payload: dict[str, Any] = {"messages": messages, "tools": _neutral_tools(attrs)}
    if not messages and SpanAttributes.INPUT_VALUE in attrs:
        payload["messages"] = [{"role": "user", "content": str(attrs[SpanAttributes.INPUT_VALUE])}]
    system = system if system is not None else system_instructions(attrs)
    if system is not None:
        payload["systemPrompt"] = system
    observed = ["messages", "systemPrompt"]
    invocation = _json_or_text(attrs.get(SpanAttributes.LLM_INVOCATION_PARAMETERS))
    if GEN_AI_REQUEST_MODEL in attrs:  # GenAI conventions: the request's own model and settings
        payload["model"] = str(attrs[GEN_AI_REQUEST_MODEL])
        params = {name: attrs[key] for key, name in _GEN_AI_PARAMS.items() if attrs.get(key) is not None}
        observed += ["model", *(f"params.{name}" for name in _GEN_AI_PARAMS.values())]
        observed += ["tools"] if GEN_AI_TOOL_DEFINITIONS in attrs else []
    elif isinstance(invocation, dict) and span.scope.get("name") not in _ECHOING_SCOPES:
        payload["model"] = str(invocation.get("model") or span.model or "") or None
        params, seen = _invocation_params(span, invocation)
        observed += ["model", *seen, "tools"]  # the request's arguments, tools among them
    else:  # settings read back from the response, or none at all: not the request's
        payload["model"] = span.model
        params = {}
        observed += ["tools"] if payload["tools"] else []
    if payload["model"] is None:
        del payload["model"]
    if params:
        payload["params"] = params
    payload[OBSERVED] = sorted(observed)
    return payload


def _invocation_params(span: SpanRecord, invocation: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``params`` from a span's recorded request arguments, read with the wire's own table, and what
    of them the span observed: the neutral settings (present or absent), and each other setting it
    recorded. An SDK instrumentor records the SDK's arguments (not ``extra_body``'s fields, which it
    never sees: so a setting absent from the span is not taken as absent from the request); a
    framework's (LangChain) records its own settings beside them, so only the table's fields count."""
    table = _table_for(span)
    arguments = {k: v for k, v in invocation.items() if k not in _SDK_ONLY}
    if span.scope.get("name") not in _SDK_ARGUMENTS:
        known = table.fields()
        arguments = {k: v for k, v in arguments.items() if k in known}
    params = table.params(arguments)
    return params, [f"params.{name}" for name in sorted({*table.neutral_names(), *params})]


def _table_for(span: SpanRecord) -> RequestFields:
    provider = span.attributes.get(
        SpanAttributes.LLM_PROVIDER, span.attributes.get(SpanAttributes.LLM_SYSTEM)
    )
    if provider == "anthropic" or span.scope.get("name") == _ANTHROPIC_SCOPE:
        return ANTHROPIC_FIELDS
    responses = _OPENAI_SPAN_APIS.get(span.name) == "openai-responses"  # OpenInference's span names
    return RESPONSES_FIELDS if responses else CHAT_FIELDS


def _with_arguments(span: SpanRecord, messages: list[Message]) -> list[Message]:
    """The Agents SDK's instrumentor leaves out a call's arguments when they are ``{}`` (a handoff's
    ``transfer_to_<agent>``, a tool with no parameters): the model sent ``{}``, not nothing."""
    if span.scope.get("name") != _AGENTS_SCOPE or all(
        c.arguments is not None for m in messages for c in m.tool_calls
    ):
        return messages
    return [
        replace(
            m, tool_calls=[c if c.arguments is not None else replace(c, arguments="{}") for c in m.tool_calls]
        )
        for m in messages
    ]


def _is_handoff(span: SpanRecord) -> bool:
    """The Agents SDK's span of a handoff: a TOOL span named ``handoff to <agent>`` with no tool
    name, beside the model's own ``transfer_to_<agent>`` call and its result, which are the steps.
    (A function tool's span always carries its name, and a function's name holds no space.)"""
    return (
        span.scope.get("name") == _AGENTS_SCOPE
        and SpanAttributes.TOOL_NAME not in span.attributes
        and (span.name == "handoff" or span.name.startswith("handoff to "))
    )


# --- the API hint -----------------------------------------------------------------------------------


def _api(name: str | None, stream: bool | None) -> dict[str, Any] | None:
    if name is None:
        return None
    return {"name": name} if stream is None else {"name": name, "stream": stream}


def _api_of_llm(span: SpanRecord) -> dict[str, Any] | None:
    """The API an LLM span's call went to, where its instrumentor tells it; ``stream`` where the span
    tells that too (an SDK's own arguments do: no ``stream`` there is a call that did not stream)."""
    scope, attrs = span.scope.get("name"), span.attributes
    invocation = _json_or_text(attrs.get(SpanAttributes.LLM_INVOCATION_PARAMETERS))
    invocation = invocation if isinstance(invocation, dict) else {}
    if scope == _OPENAI_SCOPE:
        return _api(_OPENAI_SPAN_APIS.get(span.name), invocation.get("stream") is True)
    if scope == _ANTHROPIC_SCOPE and span.name.removeprefix("beta.").startswith("messages."):
        return _api("anthropic", span.name.endswith(".stream") or invocation.get("stream") is True)
    if scope == _GOOGLE_GENAI_SCOPE and span.name in _GEMINI_SPAN_STREAMS:
        return _api("gemini", _GEMINI_SPAN_STREAMS[span.name])
    if scope == _AGENTS_SCOPE:  # a "response" span is the Responses API's; a "generation" any model's
        return _api("openai-responses" if span.name == "response" else None, None)
    if scope == _LANGCHAIN_SCOPE:
        kind = _LANGCHAIN_APIS.get(str(invocation.get("_type")))
        if kind == "openai-chat" and invocation.get("use_responses_api"):
            kind = "openai-responses"
        # Its ``stream`` is the model's setting, and ``.stream()`` streams whatever it says.
        return _api(kind, True if invocation.get("stream") is True else None)
    provider = attrs.get(GEN_AI_PROVIDER_NAME, attrs.get(GEN_AI_SYSTEM))
    if provider is None:
        return None
    streamed = True if GEN_AI_TIME_TO_FIRST_CHUNK in attrs else None
    if provider == "openai":
        response_id = str(attrs.get(GEN_AI_RESPONSE_ID, ""))
        name = "openai-chat" if response_id.startswith("chatcmpl-") else None
        return _api("openai-responses" if response_id.startswith("resp_") else name, streamed)
    return _api(_GEN_AI_APIS.get(str(provider)), streamed)


def _api_of_wire(span: SpanRecord) -> dict[str, Any] | None:
    """The API of a model call HTTP capture saw: the translation that read it, and whether the
    request asked for a stream (Gemini says so in the URL, the others in the body)."""
    attrs = span.attributes
    name = attrs.get(ATTR_MODEL_PROVIDER)
    if not isinstance(name, str):
        return None
    if name == "gemini":
        path = str(attrs.get(ATTR_HTTP_URL, "")).split("?", 1)[0]
        return _api(name, path.endswith(":streamGenerateContent"))
    body = attrs.get(ATTR_HTTP_REQUEST_BODY)
    if attrs.get(ATTR_HTTP_REQUEST_BODY_ENCODING) == "base64" or not isinstance(body, str):
        return _api(name, None)
    request = _json_or_text(body)
    return _api(name, request.get("stream") is True if isinstance(request, dict) else None)


def _model_output(span: SpanRecord, calls: _Calls) -> dict[str, Any] | None:
    messages = _with_arguments(span, output_messages(span.attributes))
    if not messages:
        return None
    return with_usage(with_extras(_turn_of(messages, calls), _extras_of(span, messages)), _usage_of(span))


def _usage_of(span: SpanRecord) -> dict[str, Any] | None:
    """The span's token counts as ``tokenUsage``: its prompt and completion columns, with the cached,
    cache-write and reasoning details its attributes hold (otel_blackbox._cost.spans reads them)."""
    tokens = usage_of(span.prompt_tokens, span.completion_tokens, span.total_tokens, span.attributes)
    if tokens is None:
        return None
    return usage_json(tokens.input, tokens.output, tokens.cache_read, tokens.cache_write)


def _extras_of(span: SpanRecord, messages: list[Message]) -> Extras:
    """What the spans saw beyond text and calls: why the model stopped, its reasoning texts (spans
    record no signatures), and the tools the provider ran (GenAI's builtin calls)."""
    reasons = _json_or_text(span.attributes.get(GEN_AI_RESPONSE_FINISH_REASONS))
    recorded = [m.finish_reason for m in messages if m.finish_reason]
    if isinstance(reasons, list | tuple):
        recorded += [str(r) for r in reasons]
    return Extras(
        stop_reason=next((r for r in map(neutral_stop_reason, recorded) if r), None),
        reasoning=[Reasoning(text=text) for m in messages for text in m.reasoning],
        hosted=[_hosted(h) for m in messages for h in m.hosted],
    )


def _hosted(call: HostedCall) -> Hosted:
    hosted = Hosted(call.name)
    if call.arguments is not None:
        hosted = replace(hosted, tool_input=_json_or_text(call.arguments))
    return hosted if call.result is None else replace(hosted, result=call.result)


def _turn_of(messages: list[Message], calls: _Calls) -> dict[str, Any]:
    text = "\n".join(m.content for m in messages if m.content)
    tool_calls = [c for m in messages for c in m.tool_calls]
    if not tool_calls:
        return {"type": "final_answer", "text": text}
    payload: dict[str, Any] = {
        "type": "tool_calls",
        "calls": [
            {
                "toolCallId": calls.made(c),
                "toolName": c.name or "unknown",
                "toolInput": _json_or_text(c.arguments),
            }
            for c in tool_calls
        ],
    }
    if text:
        payload["text"] = text
    return payload


def _first_of(attributes: dict[str, Any], *keys: str) -> Any:
    """The first of these attributes the span has (OpenInference's name, then the GenAI one)."""
    return next((attributes[key] for key in keys if attributes.get(key) is not None), None)


def _error_of(span: SpanRecord) -> str:
    for event in span.exception_events:
        ev = event.get("attributes", {})
        return f"{ev.get('exception.type', 'Error')}: {ev.get('exception.message', '')}"
    return span.status_message or "error"


class _Builder:
    def __init__(self, cassette: Cassette) -> None:
        self.cassette = cassette
        self.calls = _Calls()
        self.pending: list[dict[str, Any]] = []  # calls of the last model output not yet executed
        self.final_answer: str | None = None
        self.model_calls = 0

    def first_call(self, api: dict[str, Any] | None) -> None:
        """The API hint is the first model call's, or none when its span does not tell it."""
        if self.model_calls == 0:
            self.cassette.api = api
        self.model_calls += 1

    def llm(self, span: SpanRecord) -> None:
        self.first_call(_api_of_llm(span))
        model_input = _model_input(span, self.calls)
        self.flush_pending(model_input["messages"], _ms(span.start_ns))
        self.cassette.append("model_input", model_input, _ms(span.start_ns))
        if span.status == "open":
            return
        self.model_output(_model_output(span, self.calls), _ms(span.end_ns))

    def wire(self, span: SpanRecord, model_input: dict[str, Any], output: dict[str, Any]) -> None:
        """A model call as HTTP capture saw it on the wire: the whole request, no `observed` needed."""
        self.first_call(_api_of_wire(span))
        model_input = _renumbered(model_input, self.calls)
        self.flush_pending(model_input.get("messages", []), _ms(span.start_ns))
        self.cassette.append("model_input", model_input, _ms(span.start_ns))
        self.model_output(_renumbered(output, self.calls), _ms(span.end_ns))

    def model_output(self, output: dict[str, Any] | None, at: int) -> None:
        if output is None:
            return
        self.cassette.append("model_output", output, at)
        if output["type"] == "final_answer":
            self.final_answer = output["text"]
        else:
            self.pending = list(output["calls"])

    def tool(self, span: SpanRecord) -> None:
        name = span.tool_name or span.name
        match = next((c for c in self.pending if c["toolName"] == name), None)
        if match is not None:
            self.pending.remove(match)
            call_id, tool_input = match["toolCallId"], match["toolInput"]
        else:  # a tool the model did not ask for (or asked for in an unrecorded call)
            call_id = self.calls.id_for(None, name)
            raw = _first_of(
                span.attributes,
                SpanAttributes.TOOL_PARAMETERS,
                SpanAttributes.INPUT_VALUE,
                GEN_AI_TOOL_CALL_ARGUMENTS,
            )
            tool_input = _json_or_text(raw) if raw is not None else {}
        head = {"toolCallId": call_id, "toolName": name}
        self.cassette.append("tool_call", {**head, "toolInput": tool_input}, _ms(span.start_ns))
        if span.status == "open":
            return
        if span.status == "error":
            self.cassette.append("tool_result", {**head, "error": _error_of(span)}, _ms(span.end_ns))
        else:
            output = tool_output(
                _first_of(span.attributes, SpanAttributes.OUTPUT_VALUE, GEN_AI_TOOL_CALL_RESULT)
            )
            self.cassette.append(
                "tool_result", {**head, "result": output if output is not None else ""}, _ms(span.end_ns)
            )

    def flush_pending(self, next_messages: list[Any], at: int) -> None:
        """Calls with no TOOL span: their rounds come from the results the next model input carries."""
        if not self.pending:
            return
        results = {
            part["toolCallId"]: part
            for message in next_messages
            if isinstance(message, dict) and isinstance(message.get("content"), list)
            for part in message["content"]
            if isinstance(part, dict) and part.get("type") == "tool_result"
        }
        for call in self.pending:
            head = {"toolCallId": call["toolCallId"], "toolName": call["toolName"]}
            self.cassette.append("tool_call", {**head, "toolInput": call["toolInput"]}, at)
            if call["toolCallId"] in results:
                part = results[call["toolCallId"]]
                outcome = {"error": part["error"]} if "error" in part else {"result": part.get("result")}
                self.cassette.append("tool_result", {**head, **outcome}, at)
        self.pending = []

    def exchange(self, span: SpanRecord, payload: dict[str, Any]) -> None:
        self.cassette.append("metadata", payload, _ms(span.end_ns))


def _renumbered(payload: Any, calls: _Calls) -> Any:
    """A captured payload's ids (the recording process's ``call-N``, counted over all its runs)
    renumbered in this cassette's order, as a replay will number them."""
    if isinstance(payload, list):
        return [_renumbered(item, calls) for item in payload]
    if not isinstance(payload, dict):
        return payload
    out = {key: _renumbered(value, calls) for key, value in payload.items()}
    if isinstance(payload.get("toolCallId"), str):
        name = payload.get("toolName")
        # Prefixed: CallIds keeps a "call-N" as it is, and these must be numbered anew.
        captured = f"captured\x00{payload['toolCallId']}"
        out["toolCallId"] = calls.id_for(captured, name if isinstance(name, str) else None)
    return out


def _ordered(spans: Iterable[SpanRecord]) -> list[SpanRecord]:
    return sorted(spans, key=lambda s: (s.start_ns, s.end_ns or 0))


def _calls_in_asked_order(ordered: list[SpanRecord], builder: _Builder) -> Iterator[SpanRecord]:
    """The spans in time order, except TOOL spans that started at the same moment: those come in
    the order the model asked for the calls. A clock of millisecond precision (the JavaScript SDK's)
    gives tools run together one start time, and their ends would otherwise decide."""
    i = 0
    while i < len(ordered):
        span = ordered[i]
        j = i + 1
        if span.oi_span_kind == _TOOL:
            while (
                j < len(ordered) and ordered[j].oi_span_kind == _TOOL and ordered[j].start_ns == span.start_ns
            ):
                j += 1
        if j - i > 1:
            asked = [call["toolName"] for call in builder.pending]  # read now: the LLM span came before
            group = ordered[i:j]
            yield from sorted(group, key=lambda s: _position(asked, s.tool_name or s.name))
        else:
            yield span
        i = j


def _position(asked: list[str], name: str) -> int:
    return asked.index(name) if name in asked else len(asked)


def _roots(spans: list[SpanRecord]) -> list[SpanRecord]:
    """The spans whose parent is not among them: one per trace, or more for a trace cut short."""
    ids = {(s.trace_id, s.span_id) for s in spans}
    return [s for s in spans if (s.trace_id, s.parent_span_id) not in ids] or spans[:1]


def _ancestors(spans: list[SpanRecord], of: list[SpanRecord]) -> set[tuple[str, str]]:
    """(trace id, span id) of every ancestor of the spans ``of``."""
    parents = {(s.trace_id, s.span_id): s.parent_span_id for s in spans}
    found: set[tuple[str, str]] = set()
    for span in of:
        parent = span.parent_span_id
        for _ in range(len(spans)):  # bounded: a hand-made cycle cannot loop
            if parent is None or (span.trace_id, parent) in found:
                break
            found.add((span.trace_id, parent))
            parent = parents.get((span.trace_id, parent))
    return found


def _around(spans: list[SpanRecord], calls: list[SpanRecord]) -> set[tuple[str, str]]:
    """LLM spans whose time holds a captured call of their process though it is not their child:
    LangChain's OpenInference spans are never made current, so the wire call has no parent."""
    return {
        (s.trace_id, s.span_id)
        for s in spans
        if s.oi_span_kind == _LLM
        and s.end_ns is not None
        and any(
            c.pid == s.pid and s.start_ns <= c.start_ns and c.end_ns is not None and c.end_ns <= s.end_ns
            for c in calls
        )
    }


def cassette_from_spans(spans: list[SpanRecord], *, cassette_id: str | None = None) -> Cassette:
    """Spans as a v2 cassette: one trace's (id = the trace id), or several traces' (a run's, a
    session's: pass ``cassette_id``), their model and tool rounds in time order."""
    if not spans:
        raise ValueError("a cassette needs at least one span")
    ordered = _ordered(spans)
    roots = _roots(ordered)
    cassette = Cassette(id=cassette_id or roots[0].trace_id, created_at=_ms(roots[0].start_ns))
    builder = _Builder(cassette)
    wire = {(s.trace_id, s.span_id): call for s in ordered if (call := captured_model_call(s)) is not None}
    # An LLM span around a captured call, or around another LLM span, is not a round of its own.
    outer = _ancestors(
        ordered, [s for s in ordered if s.oi_span_kind == _LLM or (s.trace_id, s.span_id) in wire]
    ) | _around(ordered, [s for s in ordered if (s.trace_id, s.span_id) in wire])
    for span in _calls_in_asked_order(ordered, builder):
        key = (span.trace_id, span.span_id)
        if key in wire:
            builder.wire(span, *wire[key])
        elif span.oi_span_kind == _LLM and key not in outer:
            builder.llm(span)
        elif _is_handoff(span):
            continue  # the model's transfer call and its result are the steps
        elif span.oi_span_kind == _TOOL:
            builder.tool(span)
        elif (exchange := captured_exchange(span)) is not None and ATTR_MODEL_PROVIDER not in span.attributes:
            builder.exchange(span, exchange)
    _close(cassette, builder, ordered, roots)
    return cassette


def _close(cassette: Cassette, builder: _Builder, spans: list[SpanRecord], roots: list[SpanRecord]) -> None:
    """How the run ended: killed if anything is still open, else as its last root span ended."""
    last_seen = max((s.end_ns or s.written_ns) for s in spans)
    root = max(roots, key=lambda s: (s.end_ns or s.written_ns, s.start_ns))
    if any(s.status == "open" for s in spans):
        payload: dict[str, Any] = {"event": "run_failed", "status": "error", "reason": PROCESS_EXIT}
        cassette.append("metadata", payload, _ms(last_seen))
    elif root.status == "error":
        cassette.append(
            "metadata",
            {"event": "run_failed", "status": "error", "reason": _error_of(root)},
            _ms(root.end_ns),
        )
    else:
        answer = builder.final_answer
        if answer is None:
            output = root.attributes.get(SpanAttributes.OUTPUT_VALUE)
            answer = str(output) if output is not None else ""
        cassette.append(
            "metadata", {"event": "run_completed", "status": "success", "result": answer}, _ms(root.end_ns)
        )
