"""OpenInference JSONL: one span a line in Phoenix's ``v1.Span`` shape.

``name``, ``context.trace_id``, ``context.span_id``, ``parent_id``, ``span_kind`` (the
OpenInference kind), ``start_time`` / ``end_time`` (ISO 8601, UTC), ``status_code`` (OK, ERROR,
UNSET), ``status_message``, ``attributes`` (flat dotted keys), ``events``. This is what Phoenix's
``log_spans`` takes, and ``pandas.json_normalize`` turns it into Phoenix's span columns.

A span still open when the recording stopped is exported, not dropped: it ends at the last moment
the trace was seen alive, with status ERROR and ``blackbox.span.open = true``.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

from otel_blackbox._spans.semconv import ATTR_SPAN_OPEN
from otel_blackbox._store.queries import SpanRecord

__all__ = ["OPEN_SPAN_MESSAGE", "iso_time", "to_phoenix_span"]

OPEN_SPAN_MESSAGE = (
    "incomplete: the span was still open when the recording stopped (process killed or crashed)"
)
_STATUS_CODES = {"ok": "OK", "error": "ERROR", "unset": "UNSET", "open": "ERROR"}


def iso_time(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).isoformat()


def to_phoenix_span(span: SpanRecord, last_seen_ns: int) -> dict[str, Any]:
    """One stored span as a Phoenix v1.Span; ``last_seen_ns`` ends a span that is still open."""
    attributes = dict(span.attributes)
    end_ns = span.end_ns
    message = span.status_message or ""
    if span.status == "open":
        attributes[ATTR_SPAN_OPEN] = True
        end_ns = max(last_seen_ns, span.start_ns)
        message = OPEN_SPAN_MESSAGE
    return {
        "name": span.name,
        "context": {"trace_id": span.trace_id, "span_id": span.span_id},
        "parent_id": span.parent_span_id,
        "span_kind": span.oi_span_kind or "UNKNOWN",
        "start_time": iso_time(span.start_ns),
        "end_time": iso_time(end_ns if end_ns is not None else span.start_ns),
        "status_code": _STATUS_CODES.get(span.status, "UNSET"),
        "status_message": message,
        "attributes": attributes,
        "events": [
            {
                "name": e.get("name", ""),
                "timestamp": iso_time(int(e.get("timestamp_ns") or span.start_ns)),
                "attributes": e.get("attributes") or {},
            }
            for e in span.events
        ],
    }


def phoenix_spans(spans: Iterator[SpanRecord], last_seen: dict[str, int]) -> Iterator[dict[str, Any]]:
    for span in spans:
        yield to_phoenix_span(span, last_seen.get(span.trace_id, span.written_ns))
