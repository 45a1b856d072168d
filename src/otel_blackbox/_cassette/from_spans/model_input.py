"""An LLM span's request as a ``model_input``.

Its messages as v2 messages and the system prompt (a tool message matched to the call it answers,
by id or else by name; one user turn holds every result of a round), the tools offered, the model
and settings, and what of them the span ``observed``: the GenAI conventions' request attributes, an
SDK instrumentor's call arguments (read with the wire's own table), or settings read back from the
response, which are not the request's.
"""

from __future__ import annotations

from typing import Any

from openinference.semconv.trace import SpanAttributes

from otel_blackbox._cassette.from_spans.calls import CallNumbering, json_or_text
from otel_blackbox._cassette.from_spans.cut_input import whole_input
from otel_blackbox._cassette.from_spans.sources import (
    ECHOING_SCOPES,
    GOOGLE_GENAI_SCOPE,
    table_for,
    with_arguments,
)
from otel_blackbox._cassette.model import OBSERVED
from otel_blackbox._spans.conventions.genai import GEN_AI_TOOL_DEFINITIONS
from otel_blackbox._spans.messages import Message, function_response_outcome, tool_name
from otel_blackbox._spans.view.registry import view_of
from otel_blackbox._store.queries import SpanRecord

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


def _neutral_messages(
    messages: list[Message], calls: CallNumbering, *, function_responses: bool = False
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
                    "toolName": c.tool_name or "unknown",
                    "toolInput": json_or_text(c.tool_input),
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
    return function_response_outcome(json_or_text(content))


def _answered(message: Message, calls: CallNumbering, unanswered: list[tuple[str, str | None]]) -> str:
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


def _neutral_tools(definitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    tools = []
    for definition in definitions:
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


def model_input_of(span: SpanRecord, calls: CallNumbering) -> dict[str, Any]:
    attrs = span.attributes
    view = view_of(span)
    gemini = span.scope.get("name") == GOOGLE_GENAI_SCOPE
    # Cut by the SDK's span limits: the request from a value kept whole (raises when none is).
    whole = whole_input(span)
    inputs = view.input_messages if whole is None else whole.messages
    offered = whole.tools if whole is not None and whole.tools is not None else view.tools
    messages, system = _neutral_messages(with_arguments(span, inputs), calls, function_responses=gemini)
    payload: dict[str, Any] = {"messages": messages, "tools": _neutral_tools(offered)}
    if not messages and view.input_text is not None and whole is None:
        payload["messages"] = [{"role": "user", "content": view.input_text}]
    system = system if system is not None else (view.system if whole is None else whole.system)
    if system is not None:
        payload["systemPrompt"] = system
    observed = ["messages", "systemPrompt"]
    invocation = json_or_text(attrs.get(SpanAttributes.LLM_INVOCATION_PARAMETERS))
    if GEN_AI_REQUEST_MODEL in attrs:  # GenAI conventions: the request's own model and settings
        payload["model"] = str(attrs[GEN_AI_REQUEST_MODEL])
        params = {name: attrs[key] for key, name in _GEN_AI_PARAMS.items() if attrs.get(key) is not None}
        observed += ["model", *(f"params.{name}" for name in _GEN_AI_PARAMS.values())]
        observed += ["tools"] if GEN_AI_TOOL_DEFINITIONS in attrs else []
    elif isinstance(invocation, dict) and span.scope.get("name") not in ECHOING_SCOPES:
        payload["model"] = str(invocation.get("model") or view.model or "") or None
        params, seen = _invocation_params(span, invocation)
        observed += ["model", *seen, "tools"]  # the request's arguments, tools among them
    else:  # settings read back from the response, or none at all: not the request's
        payload["model"] = view.model
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
    table = table_for(span)
    arguments = {k: v for k, v in invocation.items() if k not in _SDK_ONLY}
    if span.scope.get("name") not in _SDK_ARGUMENTS:
        known = table.fields()
        arguments = {k: v for k, v in arguments.items() if k in known}
    params = table.params(arguments)
    return params, [f"params.{name}" for name in sorted({*table.neutral_names(), *params})]
