"""Which span attributes fill which columns: OpenInference first, then OpenTelemetry GenAI (gen_ai.*).

The table here is the single source of truth in code; semconv/columns.yaml documents it for
people writing SQL, and a test checks that the two agree. ``blackbox.*`` attributes that this
project sets itself are registered in semconv/registry.yaml.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openinference.semconv.trace import OpenInferenceSpanKindValues, SpanAttributes

__all__ = [
    "ATTR_CASSETTE_STEP",
    "ATTR_HTTP_METHOD",
    "ATTR_HTTP_REPLAYED",
    "ATTR_HTTP_REQUEST_BODY",
    "ATTR_HTTP_REQUEST_BODY_ENCODING",
    "ATTR_HTTP_RESPONSE_BODY",
    "ATTR_HTTP_RESPONSE_BODY_ENCODING",
    "ATTR_HTTP_RESPONSE_CONTENT_TYPE",
    "ATTR_HTTP_STATUS",
    "ATTR_HTTP_URL",
    "ATTR_MODEL_INPUT",
    "ATTR_MODEL_OUTPUT",
    "ATTR_MODEL_PROVIDER",
    "ATTR_RUN_INCOMPLETE",
    "ATTR_SESSION_MODE",
    "ATTR_SPAN_OPEN",
    "ATTR_TOOL_STUBBED",
    "COLUMN_SOURCES",
    "GEN_AI_OPERATION_KINDS",
    "HTTP_SPAN_NAME",
    "INTEGER_COLUMNS",
    "columns_from_attributes",
]

# Attributes this project adds (registered in semconv/registry.yaml).
ATTR_SPAN_OPEN = "blackbox.span.open"
# An imported conversation that ended with no model answer after its last call: why, naming the call.
ATTR_RUN_INCOMPLETE = "blackbox.run.incomplete"
ATTR_SESSION_MODE = "blackbox.session.mode"
ATTR_CASSETTE_STEP = "blackbox.cassette.step"
ATTR_TOOL_STUBBED = "blackbox.tool.stubbed"

# HTTP capture (OTEL_BLACKBOX_CAPTURE_HTTP): one span of this name per wire exchange, written to the
# black box only (and, redacted, to the provider's other processors with
# OTEL_BLACKBOX_CAPTURE_HTTP_EXPORT). Bodies are text when UTF-8, else base64 text with the
# *_encoding attribute "base64".
HTTP_SPAN_NAME = "blackbox.http"
ATTR_HTTP_METHOD = "blackbox.http.method"
ATTR_HTTP_URL = "blackbox.http.url"
ATTR_HTTP_STATUS = "blackbox.http.status"
ATTR_HTTP_REQUEST_BODY = "blackbox.http.request.body"
ATTR_HTTP_REQUEST_BODY_ENCODING = "blackbox.http.request.body_encoding"
ATTR_HTTP_RESPONSE_BODY = "blackbox.http.response.body"
ATTR_HTTP_RESPONSE_BODY_ENCODING = "blackbox.http.response.body_encoding"
ATTR_HTTP_RESPONSE_CONTENT_TYPE = "blackbox.http.response.content_type"
ATTR_HTTP_REPLAYED = "blackbox.http.replayed"
# A model call among them (a provider translation understood it): the neutral payloads, JSON text.
ATTR_MODEL_INPUT = "blackbox.model.input"
ATTR_MODEL_OUTPUT = "blackbox.model.output"
ATTR_MODEL_PROVIDER = "blackbox.model.provider"

# Column -> attributes that can fill it, in order of preference.
COLUMN_SOURCES: dict[str, tuple[str, ...]] = {
    "oi_span_kind": (SpanAttributes.OPENINFERENCE_SPAN_KIND,),
    "session_id": (SpanAttributes.SESSION_ID, "gen_ai.conversation.id"),
    "user_id": (SpanAttributes.USER_ID,),
    "model": (
        SpanAttributes.LLM_MODEL_NAME,
        "gen_ai.response.model",
        "gen_ai.request.model",
        SpanAttributes.EMBEDDING_MODEL_NAME,
    ),
    "prompt_tokens": (
        SpanAttributes.LLM_TOKEN_COUNT_PROMPT,
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.prompt_tokens",
    ),
    "completion_tokens": (
        SpanAttributes.LLM_TOKEN_COUNT_COMPLETION,
        "gen_ai.usage.output_tokens",
        "gen_ai.usage.completion_tokens",
    ),
    "total_tokens": (SpanAttributes.LLM_TOKEN_COUNT_TOTAL,),
    "tool_name": (SpanAttributes.TOOL_NAME, "gen_ai.tool.name"),
}
INTEGER_COLUMNS = frozenset({"prompt_tokens", "completion_tokens", "total_tokens"})

# A span with gen_ai.operation.name but no openinference.span.kind gets this kind.
GEN_AI_OPERATION_KINDS: dict[str, str] = {
    "chat": OpenInferenceSpanKindValues.LLM.value,
    "text_completion": OpenInferenceSpanKindValues.LLM.value,
    "generate_content": OpenInferenceSpanKindValues.LLM.value,
    "embeddings": OpenInferenceSpanKindValues.EMBEDDING.value,
    "execute_tool": OpenInferenceSpanKindValues.TOOL.value,
    "invoke_agent": OpenInferenceSpanKindValues.AGENT.value,
    "create_agent": OpenInferenceSpanKindValues.AGENT.value,
    "invoke_workflow": OpenInferenceSpanKindValues.CHAIN.value,
    "call_llm": OpenInferenceSpanKindValues.LLM.value,  # mozilla-ai/any-agent's model call
}


# attribute -> (column, rank): one pass over a span's attributes finds every column's best source.
_SOURCE_INDEX: dict[str, tuple[str, int]] = {
    attribute: (column, rank)
    for column, sources in COLUMN_SOURCES.items()
    for rank, attribute in enumerate(sources)
}


def _column_value(column: str, value: Any) -> Any:
    """The value as the column stores it, or None when its type does not fit."""
    if value is None or isinstance(value, (list, tuple)):
        return None
    if column in INTEGER_COLUMNS:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        return int(value)
    return str(value)


def columns_from_attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """The column values for one span's attributes (None where nothing maps)."""
    row: dict[str, Any] = dict.fromkeys(COLUMN_SOURCES)
    ranks: dict[str, int] = {}
    for key, value in attributes.items():
        hit = _SOURCE_INDEX.get(key)
        if hit is None:
            continue
        column, rank = hit
        if rank < ranks.get(column, len(COLUMN_SOURCES[column])):
            converted = _column_value(column, value)
            if converted is not None:
                row[column], ranks[column] = converted, rank
    if row["oi_span_kind"] is None:
        operation = attributes.get("gen_ai.operation.name")
        if isinstance(operation, str):
            row["oi_span_kind"] = GEN_AI_OPERATION_KINDS.get(operation)
    else:
        row["oi_span_kind"] = row["oi_span_kind"].upper()
    if row["total_tokens"] is None and (
        row["prompt_tokens"] is not None or row["completion_tokens"] is not None
    ):
        row["total_tokens"] = (row["prompt_tokens"] or 0) + (row["completion_tokens"] or 0)
    return row
