"""Google ADK (google-adk, read against 2.13; instrumentation scope ``gcp.vertex.agent``): its own span
names and ``gcp.vertex.agent.*`` attributes. What ADK writes as GenAI attributes and log records
(``gen_ai.*``, ``gen_ai.client.inference.operation.details``) the ``genai`` and ``genai_events``
readers read; this one adds what only ADK tells:

- the kind of a span from its name: ``invocation`` / ``invoke_workflow`` (the run), ``invoke_agent``,
  ``call_llm`` (schema 1's model call, which carries no ``gen_ai.operation.name``),
  ``generate_content <model>``, ``execute_tool <name>`` (and ``execute_tool (merged)``);
- schema 1 (``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1``, ADK 1.x's only one) ``call_llm`` content:
  ``gcp.vertex.agent.llm_request`` (a Gemini request: ``model``, ``config.system_instruction``,
  ``config.tools[].function_declarations``, ``contents`` of parts ``text`` / ``thought`` /
  ``function_call`` / ``function_response`` / ``executable_code`` / ``code_execution_result``) and
  ``gcp.vertex.agent.llm_response`` (``content``, ``finish_reason``, ``usage_metadata``);
- schema 1 tool spans: ``gcp.vertex.agent.tool_call_args`` / ``tool_response`` (the response in
  ADK's ``{"result": ...}`` envelope, unwrapped here), and schema 2's ``gen_ai.tool.call.*`` likewise;
- ``no_content``: a model call ADK recorded without its messages (schema 2 by default: the content
  is off until ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` turns it on), unless the span's
  log records carry them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from otel_blackbox._spans.messages import HostedCall, Message, ToolCall, json_value, text_of
from otel_blackbox._spans.view.model import Reading, Tokens, ToolUse
from otel_blackbox._store.queries import SpanRecord

__all__ = ["NAME", "SUMMARY_KEYS", "read"]

NAME = "adk"
# The kind comes from the span's name, the model and tokens from ``gen_ai.*`` (genai's keys): ADK's
# own attributes that tell anything more hold the prompts.
SUMMARY_KEYS: tuple[str, ...] = ()

SCOPE = "gcp.vertex.agent"
LLM_REQUEST = "gcp.vertex.agent.llm_request"
LLM_RESPONSE = "gcp.vertex.agent.llm_response"
TOOL_CALL_ARGS = "gcp.vertex.agent.tool_call_args"
TOOL_RESPONSE = "gcp.vertex.agent.tool_response"
_PREFIX = "gcp.vertex.agent."
_GENAI_CONTENT = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions")
_NOT_RECORDED = ("", "{}", "<not specified>", "N/A")
ELIDED = "<elided>"  # ADK's log body content when capture is off

CALL_LLM_OFF = (
    "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=false (or RunConfig.telemetry) turned off ADK's content; "
    "unset it to record gcp.vertex.agent.llm_request / llm_response"
)
CONTENT_OFF = (
    "ADK records no messages unless OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT is "
    "SPAN_ONLY (on the span) or EVENT_ONLY (as log records)"
)

# Span names (the first word) -> kind.
_KINDS = {
    "invocation": "CHAIN",
    "invoke_workflow": "CHAIN",
    "invoke_agent": "AGENT",
    "call_llm": "LLM",
    "generate_content": "LLM",
    "execute_tool": "TOOL",
}


def _is_adk(span: SpanRecord) -> bool:
    if span.scope.get("name") == SCOPE:
        return True
    return any(key.startswith(_PREFIX) for key in span.attributes)


def _recorded(raw: Any) -> Any:
    """An ADK JSON attribute parsed, or None where ADK wrote a placeholder (content off)."""
    if raw is None or (isinstance(raw, str) and raw.strip() in _NOT_RECORDED):
        return None
    parsed = json_value(raw)
    return parsed if parsed not in (None, {}) else None


def _dumped(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _role(role: Any) -> str:
    return "assistant" if role == "model" else str(role or "user")


def _content_messages(content: Any, finish_reason: str | None = None) -> list[Message]:
    """A Gemini ``Content`` (``{role, parts}``, ADK's snake_case dump) as messages: each function
    response a ``tool`` message of its own, thoughts as reasoning, code execution as hosted calls."""
    if not isinstance(content, Mapping):
        return []
    texts: list[str] = []
    reasoning: list[str] = []
    calls: list[ToolCall] = []
    hosted: list[HostedCall] = []
    responses: list[Message] = []
    for part in content.get("parts") or []:
        if not isinstance(part, Mapping):
            continue
        call = part.get("function_call") or part.get("functionCall")
        response = part.get("function_response") or part.get("functionResponse")
        code = part.get("executable_code") or part.get("executableCode")
        outcome = part.get("code_execution_result") or part.get("codeExecutionResult")
        if isinstance(part.get("text"), str):
            (reasoning if part.get("thought") else texts).append(part["text"])
        elif isinstance(call, Mapping):
            calls.append(
                ToolCall(text_of(call.get("id")), text_of(call.get("name")), _dumped(call.get("args") or {}))
            )
        elif isinstance(response, Mapping):
            responses.append(
                Message(
                    "tool",
                    _dumped(response.get("response")),
                    tool_call_id=text_of(response.get("id")) or None,
                    name=text_of(response.get("name")) or None,
                )
            )
        elif isinstance(code, Mapping):
            hosted.append(HostedCall("code_execution", code.get("code")))
        elif isinstance(outcome, Mapping):
            pending = next((h for h in hosted if h.result is None), None)
            if pending is not None:
                pending.result = outcome.get("output")
            else:
                hosted.append(HostedCall("code_execution", result=outcome.get("output")))
    messages = list(responses)
    if texts or calls or reasoning or hosted or not responses:
        messages.append(
            Message(
                _role(content.get("role")),
                "".join(texts) or None,
                calls,
                reasoning=reasoning,
                hosted=hosted,
                finish_reason=finish_reason,
            )
        )
    return messages


def _system(config: Mapping[str, Any]) -> str | None:
    """``config.system_instruction``: text, a ``Content``, a part, or a list of either."""
    instruction = config.get("system_instruction")
    if isinstance(instruction, str) or instruction is None:
        return instruction
    items = instruction if isinstance(instruction, list) else [instruction]
    texts: list[str] = []
    for item in items:
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, Mapping):
            parts = item.get("parts")
            parts = parts if isinstance(parts, list) else [item]
            texts.extend(str(p["text"]) for p in parts if isinstance(p, Mapping) and "text" in p)
    return "\n".join(texts) or None


def _tools(config: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``config.tools``: each function declaration as ``{type: function, name, description,
    parameters}``, each built-in tool (``google_search``, ``code_execution``...) by its name."""
    definitions: list[dict[str, Any]] = []
    for tool in config.get("tools") or []:
        if not isinstance(tool, Mapping):
            continue
        for declaration in tool.get("function_declarations") or []:
            if isinstance(declaration, Mapping):
                definitions.append(
                    {
                        "type": "function",
                        "name": declaration.get("name"),
                        "description": declaration.get("description"),
                        "parameters": declaration.get(
                            "parameters", declaration.get("parameters_json_schema")
                        ),
                    }
                )
        definitions.extend(
            {"type": key, "name": key}
            for key, value in tool.items()
            if key != "function_declarations" and value
        )
    return definitions


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _tokens(usage: Any) -> Tokens | None:
    """Gemini's ``usage_metadata``: the input counts the cached and tool-use prompt tokens, the
    output the candidates' and the thoughts' (as ADK's ``gen_ai.usage.*`` do)."""
    if not isinstance(usage, Mapping):
        return None
    prompt, tool_use = _int(usage.get("prompt_token_count")), _int(usage.get("tool_use_prompt_token_count"))
    candidates, thoughts = _int(usage.get("candidates_token_count")), _int(usage.get("thoughts_token_count"))
    tokens = Tokens(
        input=None if prompt is None and tool_use is None else (prompt or 0) + (tool_use or 0),
        output=None if candidates is None and thoughts is None else (candidates or 0) + (thoughts or 0),
        total=_int(usage.get("total_token_count")),
        cache_read=_int(usage.get("cached_content_token_count")),
        reasoning=thoughts,
    )
    return tokens if tokens.counted else None


def _unwrapped(response: Any) -> Any:
    """A tool's response out of ADK's ``{"result": ...}`` envelope (what the tool returned); None
    where ADK recorded none (``<not specified>``, the tool raised)."""
    parsed = _recorded(response)
    if isinstance(parsed, Mapping) and len(parsed) == 1 and "result" in parsed:
        parsed = parsed["result"]
    if parsed is None or parsed == "<not specified>":
        return None
    return parsed if isinstance(parsed, str) else json.dumps(parsed, ensure_ascii=False)


def _tool(span: SpanRecord) -> ToolUse:
    attrs = span.attributes
    name = attrs.get("gen_ai.tool.name")
    if name is None:
        name = span.name.partition(" ")[2] or None
    arguments = attrs.get(TOOL_CALL_ARGS, attrs.get("gen_ai.tool.call.arguments"))
    response = attrs.get(TOOL_RESPONSE, attrs.get("gen_ai.tool.call.result"))
    result = _unwrapped(response)
    if arguments in ("", "N/A", "<not specified>") or (arguments == "{}" and _recorded(response) is None):
        arguments = None  # "N/A" (merged calls), or "{}" beside an empty response: content off
    return ToolUse(name=None if name is None else str(name), arguments=arguments, result=result)


def _logs_hold_content(span: SpanRecord) -> bool:
    """Whether the span's log records carry messages (EVENT_ONLY): the genai_events reader reads them."""
    for log in span.logs:
        attributes = log.get("attributes") or {}
        if any(attributes.get(key) not in (None, "", "[]", []) for key in _GENAI_CONTENT):
            return True
        body = log.get("body")
        if isinstance(body, Mapping) and body.get("content") not in (None, "", ELIDED):
            return True
    return False


def _call_llm(span: SpanRecord) -> Reading:
    """Schema 1's ``call_llm``: the request and the response ADK serialized."""
    request = _recorded(span.attributes.get(LLM_REQUEST))
    response = _recorded(span.attributes.get(LLM_RESPONSE))
    request = request if isinstance(request, Mapping) else {}
    response = response if isinstance(response, Mapping) else {}
    config = request.get("config")
    config = config if isinstance(config, Mapping) else {}
    finish = response.get("finish_reason")
    finish = finish.lower() if isinstance(finish, str) else None
    inputs = [m for content in request.get("contents") or [] for m in _content_messages(content)]
    outputs = _content_messages(response.get("content"), finish) if response.get("content") else []
    model = (
        request.get("model") or response.get("model_version") or span.attributes.get("gen_ai.request.model")
    )
    reading = Reading(
        kind="LLM",
        model=None if model is None else str(model),
        system=_system(config),
        input_messages=inputs,
        output_messages=outputs,
        tools=_tools(config),
        tokens=_tokens(response.get("usage_metadata")),
        finish_reasons=[finish] if finish else [],
    )
    if not (request or response) and not _logs_hold_content(span):
        reading.no_content = CALL_LLM_OFF
    return reading


def _generate_content(span: SpanRecord) -> Reading:
    """A ``generate_content`` span: the GenAI readers read it; here only whether it holds content.
    Under the experimental GenAI conventions (schema 2's default) ADK records the messages only when
    the capture mode says so; a span of the stable ones (``gen_ai.system``, schema 1) leaves them to
    its ``call_llm`` parent, and is not marked."""
    attrs = span.attributes
    stable = "gen_ai.system" in attrs and "gen_ai.provider.name" not in attrs
    has_content = any(attrs.get(key) not in (None, "", "[]") for key in _GENAI_CONTENT)
    reading = Reading(kind="LLM")
    if not stable and not has_content and not _logs_hold_content(span):
        reading.no_content = CONTENT_OFF
    return reading


def read(span: SpanRecord) -> Reading | None:
    if not _is_adk(span):
        return None
    word = span.name.partition(" ")[0]
    kind = _KINDS.get(word)
    if word == "call_llm":
        return _call_llm(span)
    if word == "generate_content":
        return _generate_content(span)
    if kind == "TOOL":
        return Reading(kind=kind, tool=_tool(span))
    return Reading(kind=kind)
