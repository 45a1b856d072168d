"""The fields of an OTLP/protobuf span, read from the generated message classes: ids of the
right size, attribute values nested no deeper than the bound, and a span kind or status code that a
newer proto added read as 0 (unspecified, unset). Trace states, dropped counts and where bytes values
were are carried in attributes (``_spans/otlp_carried.py``), as from JSON."""

from __future__ import annotations

import base64
from typing import Any

from otel_blackbox._spans.otlp_carried import Base64Text, carry
from otel_blackbox._spans.otlp_in.span import KINDS, MAX_DEPTH, STATUSES, OtlpError, Span, finish


def _pb_id(raw: bytes, size: int, path: str, *, required: bool = True) -> int | None:
    what = "trace id" if size == 16 else "span id"
    if not raw:
        if required:
            raise OtlpError(path, f"missing: a span has a {what}")
        return None
    if len(raw) != size:
        raise OtlpError(path, f"a {what} is {size} bytes, got {len(raw)}")
    number = int.from_bytes(raw, "big")
    if not number and required:
        raise OtlpError(path, f"an all-zero {what} is not valid")
    return number or None


def _pb_value(value: Any, depth: int = 0) -> Any:
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [_pb_value(v, depth + 1) for v in _deep(value.array_value.values, depth)]
    if which == "kvlist_value":
        return pb_attributes(_deep(value.kvlist_value.values, depth), depth + 1)
    if which == "bytes_value":
        return Base64Text(base64.b64encode(value.bytes_value).decode("ascii"))  # `carry` notes where
    return getattr(value, which)


def _deep(values: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise OtlpError("attributes", f"a value nested deeper than {MAX_DEPTH} levels")
    return values


def pb_attributes(values: Any, depth: int = 0) -> dict[str, Any]:
    return {kv.key: _pb_value(kv.value, depth) for kv in values}


def pb_span(span: Any, path: str) -> Span:
    trace_id = _pb_id(span.trace_id, 16, f"{path}.traceId")
    span_id = _pb_id(span.span_id, 8, f"{path}.spanId")
    assert trace_id is not None and span_id is not None  # required
    parent = _pb_id(span.parent_span_id, 8, f"{path}.parentSpanId", required=False)
    kind = span.kind if 0 <= span.kind < len(KINDS) else 0  # an enum value from a newer proto
    code = span.status.code if 0 <= span.status.code < len(STATUSES) else 0
    events = tuple(_pb_event(e) for e in span.events)
    links = tuple(_pb_link(link, f"{path}.links[{i}]") for i, link in enumerate(span.links))
    attributes = carry(
        pb_attributes(span.attributes),
        trace_state=span.trace_state,
        dropped_attributes=span.dropped_attributes_count,
        dropped_events=span.dropped_events_count,
        dropped_links=span.dropped_links_count,
    )
    return finish(
        trace_id, span_id, parent, span.name, KINDS[kind], STATUSES[code], span.status.message,
        span.start_time_unix_nano, span.end_time_unix_nano, attributes, events, links, path,
    )  # fmt: skip


def _pb_event(event: Any) -> tuple[str, int, dict[str, Any]]:
    attributes = carry(pb_attributes(event.attributes), dropped_attributes=event.dropped_attributes_count)
    return event.name, event.time_unix_nano, attributes


def _pb_link(link: Any, path: str) -> tuple[int, int, dict[str, Any]]:
    trace_id = _pb_id(link.trace_id, 16, f"{path}.traceId")
    span_id = _pb_id(link.span_id, 8, f"{path}.spanId")
    assert trace_id is not None and span_id is not None  # required
    attributes = carry(
        pb_attributes(link.attributes),
        trace_state=link.trace_state,
        dropped_attributes=link.dropped_attributes_count,
    )
    return trace_id, span_id, attributes
