"""Which instrumentation made a span, and what that tells.

The OpenInference span kinds; each instrumentor's scope name and span names; the API a model call
went to (``Cassette.api`` is set from the first model call's span when that span tells the API, and
``stream`` when it tells that too); the request-field table a span's recorded arguments are read
with; and the instrumentors' quirks: the Agents SDK leaves out a call's arguments when they are
``{}`` (a cassette from spans has ``{}``, as one from the wire), and records a handoff as a TOOL
span beside the model's own ``transfer_to_<agent>`` call.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from openinference.semconv.trace import OpenInferenceSpanKindValues, SpanAttributes

from otel_blackbox._cassette.from_spans.calls import json_or_text
from otel_blackbox._spans.messages import Message
from otel_blackbox._spans.semconv import (
    ATTR_HTTP_REQUEST_BODY,
    ATTR_HTTP_REQUEST_BODY_ENCODING,
    ATTR_HTTP_URL,
    ATTR_MODEL_PROVIDER,
)
from otel_blackbox._store.queries import SpanRecord
from otel_blackbox._wire.anthropic.fields import ANTHROPIC_FIELDS
from otel_blackbox._wire.openai_chat.fields import CHAT_FIELDS
from otel_blackbox._wire.openai_responses.fields import RESPONSES_FIELDS
from otel_blackbox._wire.request_fields import RequestFields

LLM_KIND = OpenInferenceSpanKindValues.LLM.value
TOOL_KIND = OpenInferenceSpanKindValues.TOOL.value


# Instrumentors whose llm.invocation_parameters are the response's echo (the Agents SDK's spans
# carry the temperature, top_p and tool_choice the Responses API answered with), not the request.
_AGENTS_SCOPE = "openinference.instrumentation.openai_agents"
ECHOING_SCOPES = frozenset({_AGENTS_SCOPE})
_OPENAI_SCOPE = "openinference.instrumentation.openai"
_ANTHROPIC_SCOPE = "openinference.instrumentation.anthropic"
GOOGLE_GENAI_SCOPE = "openinference.instrumentation.google_genai"
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


def table_for(span: SpanRecord) -> RequestFields:
    provider = span.attributes.get(
        SpanAttributes.LLM_PROVIDER, span.attributes.get(SpanAttributes.LLM_SYSTEM)
    )
    if provider == "anthropic" or span.scope.get("name") == _ANTHROPIC_SCOPE:
        return ANTHROPIC_FIELDS
    responses = _OPENAI_SPAN_APIS.get(span.name) == "openai-responses"  # OpenInference's span names
    return RESPONSES_FIELDS if responses else CHAT_FIELDS


def with_arguments(span: SpanRecord, messages: list[Message]) -> list[Message]:
    """The Agents SDK's instrumentor leaves out a call's arguments when they are ``{}`` (a handoff's
    ``transfer_to_<agent>``, a tool with no parameters): the model sent ``{}``, not nothing."""
    if span.scope.get("name") != _AGENTS_SCOPE or all(
        c.tool_input is not None for m in messages for c in m.tool_calls
    ):
        return messages
    return [
        replace(
            m,
            tool_calls=[c if c.tool_input is not None else replace(c, tool_input="{}") for c in m.tool_calls],
        )
        for m in messages
    ]


def is_handoff(span: SpanRecord) -> bool:
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


def api_of_llm(span: SpanRecord) -> dict[str, Any] | None:
    """The API an LLM span's call went to, where its instrumentor tells it; ``stream`` where the span
    tells that too (an SDK's own arguments do: no ``stream`` there is a call that did not stream)."""
    scope, attrs = span.scope.get("name"), span.attributes
    invocation = json_or_text(attrs.get(SpanAttributes.LLM_INVOCATION_PARAMETERS))
    invocation = invocation if isinstance(invocation, dict) else {}
    if scope == _OPENAI_SCOPE:
        return _api(_OPENAI_SPAN_APIS.get(span.name), invocation.get("stream") is True)
    if scope == _ANTHROPIC_SCOPE and span.name.removeprefix("beta.").startswith("messages."):
        return _api("anthropic", span.name.endswith(".stream") or invocation.get("stream") is True)
    if scope == GOOGLE_GENAI_SCOPE and span.name in _GEMINI_SPAN_STREAMS:
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


def api_of_wire(span: SpanRecord) -> dict[str, Any] | None:
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
    request = json_or_text(body)
    return _api(name, request.get("stream") is True if isinstance(request, dict) else None)
