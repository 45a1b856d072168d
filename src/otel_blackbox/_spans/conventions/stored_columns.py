"""The store's own columns (kind, model, tokens, tool name), tried last: what the writer read from
the span's attributes when it stored them. They still tell a span whose attributes went over the
stored size (left out, counted in ``blackbox.attributes.dropped``), and a record built by hand."""

from __future__ import annotations

from otel_blackbox._spans.view.model import Reading, Tokens, ToolUse
from otel_blackbox._store.queries import SpanRecord

__all__ = ["NAME", "SUMMARY_KEYS", "read"]

NAME = "stored_columns"
SUMMARY_KEYS: tuple[str, ...] = ()


def read(span: SpanRecord) -> Reading | None:
    total = span.total_tokens
    if total is not None and total == (span.prompt_tokens or 0) + (span.completion_tokens or 0):
        total = None  # the sum the writer made when the span gave none: Tokens.sum makes it again
    tokens = Tokens(span.prompt_tokens, span.completion_tokens, total)
    kind = span.oi_span_kind.upper() if span.oi_span_kind else None
    return Reading(
        kind=kind,
        model=span.model,
        tokens=tokens if tokens.counted else None,
        tool=ToolUse(name=span.tool_name) if span.tool_name else None,
    )
