"""The readers, in the order they are tried, and the view of one span.

Every reader reads every span; for each field of the view, the first reader in this order that
found it gives it (``SpanView.merged``). The order: the conventions that say the most first, the
dedicated carriers of one library after the general ones.

1. ``openinference``  OpenInference (Arize): every OpenInference instrumentor.
2. ``genai``          GenAI span attributes (``gen_ai.*``), both message shapes.
3. ``genai_events``   GenAI span events and log records (the per-message events, deprecated, and
                      ``gen_ai.client.inference.operation.details``).
4. ``openllmetry``    OpenLLMetry / Traceloop: indexed ``gen_ai.prompt.N.*``, ``traceloop.*``.
5. ``logfire``        Logfire (``request_data`` / ``response_data``, ``logfire.msg``) and pydantic-ai's
                      agent runs.
6. ``adk``            Google ADK's own ``gcp.vertex.agent.*``.
7. ``anthropic_sdk``  The Anthropic SDK's own spans.
8. ``stored_columns`` The store's own columns (kind, model, tokens, tool name), last.

A new family is one module in ``_spans/conventions`` and one line here.
"""

from __future__ import annotations

from typing import Protocol

from otel_blackbox._spans.conventions import (
    adk,
    anthropic_sdk,
    genai,
    genai_events,
    logfire,
    openinference,
    openllmetry,
    stored_columns,
)
from otel_blackbox._spans.sdk_limits import sdk_cut
from otel_blackbox._spans.view.model import Reading, SpanView, ToolUse
from otel_blackbox._store.queries import SpanRecord

__all__ = ["READERS", "SUMMARY_KEYS", "Convention", "read_span", "view_of"]


class Convention(Protocol):
    """A reader module: its name, the attributes that tell a span's kind, model, provider and tokens
    (``SUMMARY_KEYS``: pricing a whole database reads only those), and its reader."""

    @property
    def NAME(self) -> str: ...

    @property
    def SUMMARY_KEYS(self) -> tuple[str, ...]: ...

    def read(self, span: SpanRecord) -> Reading | None: ...


READERS: tuple[Convention, ...] = (
    openinference,
    genai,
    genai_events,
    openllmetry,
    logfire,
    adk,
    anthropic_sdk,
    stored_columns,
)
# Every reader's summary attributes, once each.
SUMMARY_KEYS: tuple[str, ...] = tuple(
    dict.fromkeys(key for c in READERS for key in getattr(c, "SUMMARY_KEYS", ()))
)


def error_of(span: SpanRecord) -> str | None:
    """Why a span failed: its first exception, else its status message (None: it did not fail)."""
    if span.status != "error":
        return None
    for event in span.exception_events:
        ev = event.get("attributes", {})
        return f"{ev.get('exception.type', 'Error')}: {ev.get('exception.message', '')}"
    return span.status_message or "error"


# What turns a model call's content on, by the convention that wrote the span (a family's own reader
# says it more precisely where it knows: ADK, OpenLLMetry, the Anthropic SDK).
_GENAI_CONTENT = (
    "the GenAI instrumentation recorded no messages: set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
    "=SPAN_ONLY (with OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental), or EVENT_ONLY with "
    "BlackboxLogRecordProcessor (OTEL_LOGS_EXPORTER=blackbox) beside the span processor"
)
_OPENINFERENCE_CONTENT = (
    "the OpenInference instrumentor recorded no messages: unset OPENINFERENCE_HIDE_INPUTS, "
    "OPENINFERENCE_HIDE_OUTPUTS, OPENINFERENCE_HIDE_INPUT_MESSAGES and OPENINFERENCE_HIDE_OUTPUT_MESSAGES"
)
_ANY_CONTENT = "the instrumentation recorded no messages for this model call: turn its content capture on"


def _why_empty(span: SpanRecord) -> str:
    if any(key.startswith("gen_ai.") for key in span.attributes):
        return _GENAI_CONTENT
    if "openinference.span.kind" in span.attributes:
        return _OPENINFERENCE_CONTENT
    return _ANY_CONTENT


def read_span(span: SpanRecord) -> SpanView:
    """The view of one span on its own (``view.trace.read_trace`` adds what only the trace tells)."""
    readings = []
    for convention in READERS:
        reading = convention.read(span)
        if reading is not None:
            readings.append((convention.NAME, reading))
    view = SpanView.merged(readings)
    if (
        view.kind is None
        and (view.input_messages or view.output_messages)
        and sdk_cut(span.kept_attributes).attributes
    ):
        view.kind = (
            "LLM"  # a model call whose kind, set first, was among the oldest attributes the SDK dropped
        )
    if view.no_content is None and view.kind == "LLM" and span.status != "open" and not view.has_content:
        view.no_content = _why_empty(span)
    if view.tool is not None or view.kind == "TOOL":
        tool = view.tool or ToolUse()
        view.tool = ToolUse(tool.name, tool.arguments, tool.result, error_of(span))
    return view


def view_of(span: SpanRecord) -> SpanView:
    """The span's view: the one its trace was read with, else read now and kept on the span."""
    if isinstance(span.view, SpanView):
        return span.view
    view = read_span(span)
    span.view = view
    return view
