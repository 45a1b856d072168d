"""A recorded trace (its stored spans) as a cassette: the walk over the spans, and how the run ended.

OpenInference LLM spans give ``model_input`` and ``model_output``; TOOL spans give ``tool_call``
and ``tool_result``; a tool round with no TOOL span is read from the tool-result messages of the
next model input; the root span's end gives the closing ``metadata`` (a trace with spans still
open ends ``run_failed`` / ``process_exit``). A model call HTTP capture saw is read from the wire
instead, and an LLM span around it (or around another LLM span) is not a round of its own.

The cassette keeps what the model did: the OpenAI Agents SDK's handoff spans (a TOOL span
``handoff to <agent>`` beside the model's own ``transfer_to_<agent>`` call) are not steps.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_blackbox._cassette.captured import captured_exchange, captured_model_call
from otel_blackbox._cassette.from_spans.builder import Builder, ms_of
from otel_blackbox._cassette.from_spans.cut_input import refuse_if_cut
from otel_blackbox._cassette.from_spans.order import (
    ancestors_of,
    around_calls,
    calls_in_asked_order,
    ordered_spans,
    root_spans,
)
from otel_blackbox._cassette.from_spans.sources import LLM_KIND, TOOL_KIND, is_handoff
from otel_blackbox._cassette.model import Cassette
from otel_blackbox._spans.semconv import ATTR_MODEL_PROVIDER
from otel_blackbox._spans.view.registry import error_of, view_of
from otel_blackbox._spans.view.trace import read_trace
from otel_blackbox._store.queries import SpanRecord
from otel_blackbox.errors import CassetteError

__all__ = ["PROCESS_EXIT", "cassette_from_spans"]

PROCESS_EXIT = "process_exit"


def cassette_from_spans(spans: list[SpanRecord], *, cassette_id: str | None = None) -> Cassette:
    """Spans as a v2 cassette: one trace's (id = the trace id), or several traces' (a run's, a
    session's: pass ``cassette_id``), their model and tool rounds in time order."""
    if not spans:
        raise ValueError("a cassette needs at least one span")
    ordered = ordered_spans(read_trace(spans))
    roots = root_spans(ordered)
    cassette = Cassette(id=cassette_id or roots[0].trace_id, created_at=ms_of(roots[0].start_ns))
    builder = Builder(cassette)
    wire = {(s.trace_id, s.span_id): call for s in ordered if (call := captured_model_call(s)) is not None}
    # An LLM span around a captured call is not a round of its own, nor one that describes the same
    # call as another span (the view marks it: an SDK's own span under an instrumentor's).
    captured = [s for s in ordered if (s.trace_id, s.span_id) in wire]
    outer = ancestors_of(ordered, captured) | around_calls(ordered, captured)
    _refuse_without_content(ordered, wire, outer)
    for span in calls_in_asked_order(ordered, builder):
        key = (span.trace_id, span.span_id)
        view = view_of(span)
        if key in wire:
            builder.wire(span, *wire[key])
        elif view.kind == LLM_KIND and view.same_call_as is None and key not in outer:
            builder.llm(span)
        elif is_handoff(span):
            continue  # the model's transfer call and its result are the steps
        elif view.kind == TOOL_KIND:
            builder.tool(span)
        elif (exchange := captured_exchange(span)) is not None and ATTR_MODEL_PROVIDER not in span.attributes:
            builder.exchange(span, exchange)
    _close(cassette, builder, ordered, roots)
    return cassette


def _refuse_without_content(
    spans: list[SpanRecord], wire: Mapping[tuple[str, str], object], outer: set[tuple[str, str]]
) -> None:
    """A model call whose instrumentation recorded no content (and that HTTP capture did not see)
    would make a cassette of empty requests: refused, naming the span and the setting."""
    for span in spans:
        view = view_of(span)
        key = (span.trace_id, span.span_id)
        if view.is_model_call and view.same_call_as is None and key not in wire and key not in outer:
            refuse_if_cut(span)  # first: what the SDK cut may be why no messages are left
        if (
            view.no_content
            and view.same_call_as is None
            and key not in wire
            and key not in outer
            and not view.has_content
        ):
            raise CassetteError(
                f"model call {span.name!r} (span {span.span_id}) recorded no messages: {view.no_content}"
            )


def _close(cassette: Cassette, builder: Builder, spans: list[SpanRecord], roots: list[SpanRecord]) -> None:
    """How the run ended: killed if anything is still open, else as its last root span ended: a
    success only with a model's final answer, which is what `verify` holds a success to."""
    last_seen = max((s.end_ns or s.written_ns) for s in spans)
    root = max(roots, key=lambda s: (s.end_ns or s.written_ns, s.start_ns))
    if any(s.status == "open" for s in spans):
        payload: dict[str, Any] = {"event": "run_failed", "status": "error", "reason": PROCESS_EXIT}
        cassette.append("metadata", payload, ms_of(last_seen))
    elif root.status == "error":
        cassette.append(
            "metadata",
            {"event": "run_failed", "status": "error", "reason": error_of(root) or "error"},
            ms_of(root.end_ns),
        )
    elif builder.final_answer is None:
        # It ended cleanly with no model's final answer (a LangChain or openai-v2 trace is one model
        # call, often asking for a tool): not a success the format can claim, as a recording says.
        cassette.append("metadata", {"event": "run_ended", "reason": "no_final_answer"}, ms_of(root.end_ns))
    else:
        cassette.append(
            "metadata",
            {"event": "run_completed", "status": "success", "result": builder.final_answer},
            ms_of(root.end_ns),
        )
