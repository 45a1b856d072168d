"""OTLP: stored spans rebuilt as OpenTelemetry SDK spans, and OTLP/JSON lines for the Collector.

``readable_spans`` turns stored rows back into ``ReadableSpan`` objects (original ids, parent,
kind, status, times, attributes, events, links, resource, scope), so the OpenTelemetry project's
own encoder and exporter can send them anywhere. ``otlp_json_lines`` writes them as the OTLP/JSON
file format the Collector's ``otlpjsonfile`` receiver reads: one ``ExportTraceServiceRequest`` a
line, camelCase names, enums as integers, 64-bit integers as strings, and trace / span ids as hex
(the OTLP/JSON exception to ProtoJSON, which would write bytes as base64).

A span still open when the recording stopped is exported, not dropped: it ends at the last moment
its trace was seen alive, with status ERROR and ``blackbox.span.open = true``. What an import carried
in attributes (``_spans/otlp_carried.py``: trace states, dropped counts, bytes values) goes back into
its OTLP fields.
"""

from __future__ import annotations

import base64
import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from google.protobuf import json_format  # type: ignore[import-untyped]  # no types-protobuf here
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util import BoundedList
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags, TraceState

from otel_blackbox._spans.openinference import OPEN_SPAN_MESSAGE
from otel_blackbox._spans.otlp_carried import take
from otel_blackbox._spans.semconv import ATTR_SPAN_OPEN
from otel_blackbox._store import queries
from otel_blackbox._store.queries import SpanRecord

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "MAX_BATCH_CHARS",
    "batched",
    "otlp_json_lines",
    "readable_spans",
    "rebuilt_spans",
]

DEFAULT_BATCH_SIZE = 512
MAX_BATCH_CHARS = 4 * 1024 * 1024  # a batch (an export line, a push request) holds about this much
_INT64 = range(-(2**63), 2**63)
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)


def _value(value: Any) -> Any:
    """An attribute value the encoder takes: scalars as they are, JSON lists as tuples."""
    if isinstance(value, int) and not isinstance(value, bool) and value not in _INT64:
        return str(value)  # protobuf's int64 would reject it and the encoder would drop the key
    if isinstance(value, (list, tuple)):
        return tuple(_value(v) for v in value)
    if isinstance(value, dict):  # not an SDK attribute type, but AnyValue has a kvlist for it
        return {str(k): _value(v) for k, v in value.items()}
    return value


def _attributes(values: Mapping[str, Any] | None) -> dict[str, Any]:
    return {str(k): _value(v) for k, v in (values or {}).items()}


def _counted(values: dict[str, Any], dropped: int) -> dict[str, Any] | BoundedAttributes:
    """Attributes with the count the sender's SDK had dropped: the encoder reads it off a
    ``BoundedAttributes`` only (a plain dict says 0, and costs nothing to build)."""
    if not dropped:
        return values
    bounded = BoundedAttributes(attributes=values, immutable=True)
    bounded.dropped += dropped
    return bounded


def _counted_list(items: list[Any], dropped: int) -> Sequence[Any]:
    """Events or links with the count dropped before them (the encoder reads it off a ``BoundedList``)."""
    if not dropped:
        return items
    bounded = BoundedList.from_seq(None, items)
    bounded.dropped = dropped
    return bounded


def _context(trace_id: str, span_id: str, *, is_remote: bool = False, trace_state: str = "") -> SpanContext:
    # Text that is not W3C tracestate is refused by the API (it logs a warning): not valid OTLP either.
    state = TraceState.from_header([trace_state]) if trace_state else None
    return SpanContext(
        int(trace_id, 16), int(span_id, 16), is_remote=is_remote, trace_flags=_SAMPLED, trace_state=state
    )


def _status(span: SpanRecord) -> Status:
    if span.status in ("error", "open"):
        return Status(StatusCode.ERROR, OPEN_SPAN_MESSAGE if span.status == "open" else span.status_message)
    # The SDK keeps a description only with ERROR (and warns if given one with OK).
    return Status(StatusCode.OK if span.status == "ok" else StatusCode.UNSET)


class _Shared:
    """Each distinct Resource / InstrumentationScope built once (the encoder groups spans by their value)."""

    def __init__(self) -> None:
        self.resources: dict[str, Resource] = {}
        self.scopes: dict[str, InstrumentationScope | None] = {}

    def resource(self, values: dict[str, Any]) -> Resource:
        key = json.dumps(values, sort_keys=True, default=str)
        if key not in self.resources:
            self.resources[key] = Resource(_attributes(values))
        return self.resources[key]

    def scope(self, values: dict[str, Any]) -> InstrumentationScope | None:
        key = json.dumps(values, sort_keys=True, default=str)
        if key not in self.scopes:
            name = values.get("name")
            self.scopes[key] = (
                InstrumentationScope(str(name), values.get("version"), values.get("schema_url"))
                if name is not None
                else None
            )
        return self.scopes[key]


def _readable_span(
    span: SpanRecord, last_seen_ns: int, parent_is_remote: bool, shared: _Shared
) -> ReadableSpan:
    """One stored span as an SDK ``ReadableSpan``; ``last_seen_ns`` ends a span that is still open."""
    carried = take(span.attributes)
    attributes = _attributes(carried.attributes)
    end_ns = span.end_ns
    if span.status == "open":
        attributes[ATTR_SPAN_OPEN] = True
        end_ns = max(last_seen_ns, span.start_ns)
    parent = (
        _context(span.trace_id, span.parent_span_id, is_remote=parent_is_remote)
        if span.parent_span_id
        else None
    )
    events = [_event(e, span.start_ns) for e in span.events]
    links = [_link(link) for link in span.links if link.get("trace_id") and link.get("span_id")]
    return ReadableSpan(
        name=span.name,
        context=_context(span.trace_id, span.span_id, trace_state=carried.trace_state),
        parent=parent,
        resource=shared.resource(span.resource),
        attributes=_counted(attributes, carried.dropped_attributes),
        events=_counted_list(events, carried.dropped_events),
        links=_counted_list(links, carried.dropped_links),
        kind=SpanKind.__members__.get(span.span_kind, SpanKind.INTERNAL),
        status=_status(span),
        start_time=span.start_ns,
        end_time=end_ns if end_ns is not None else span.start_ns,
        instrumentation_scope=shared.scope(span.scope),
    )


def _event(event: dict[str, Any], start_ns: int) -> Event:
    carried = take(event.get("attributes") or {})
    return Event(
        str(event.get("name", "")),
        _counted(_attributes(carried.attributes), carried.dropped_attributes),
        int(event.get("timestamp_ns") or start_ns),
    )


def _link(link: dict[str, Any]) -> Link:
    carried = take(link.get("attributes") or {})
    return Link(
        _context(link["trace_id"], link["span_id"], trace_state=carried.trace_state),
        _counted(_attributes(carried.attributes), carried.dropped_attributes),
    )


def readable_spans(records: Iterable[SpanRecord], last_seen: Mapping[str, int]) -> list[ReadableSpan]:
    """Stored spans as SDK spans, in the order given.

    ``last_seen`` maps a trace id to the last moment it was seen alive (``last_seen_by_trace``); an
    open span of a trace not in it ends when its row was last written. The store does not keep
    whether a parent was remote: a parent that is among ``records`` is local, one that is not
    (typically a caller in another process) is marked remote. Pass whole traces for that to hold.
    """
    records = list(records)
    present = {(r.trace_id, r.span_id) for r in records}
    shared = _Shared()
    return [
        _readable_span(
            r, last_seen.get(r.trace_id, r.written_ns), (r.trace_id, r.parent_span_id) not in present, shared
        )
        for r in records
    ]


def batched(
    spans: Iterable[ReadableSpan], size: int, max_chars: int = MAX_BATCH_CHARS
) -> Iterator[list[ReadableSpan]]:
    """Lists of up to ``size`` spans, and of about ``max_chars`` characters of attribute and event
    values: a long conversation's model calls each hold it whole, so 512 of them are gigabytes."""
    batch: list[ReadableSpan] = []
    chars = 0
    for span in spans:
        batch.append(span)
        chars += _chars(span)
        if len(batch) >= size or chars >= max_chars:
            yield batch
            batch, chars = [], 0
    if batch:
        yield batch


def _chars(span: ReadableSpan) -> int:
    values = list((span.attributes or {}).values())
    for event in span.events:
        values += (event.attributes or {}).values()
    return sum(len(v) if isinstance(v, str) else 16 for v in values)


def _hex_id(value: str) -> str:
    return base64.b64decode(value).hex()


def _ids_to_hex(request: dict[str, Any]) -> dict[str, Any]:
    """ProtoJSON writes bytes as base64; OTLP/JSON wants trace and span ids as lowercase hex."""
    for resource_spans in request.get("resourceSpans", ()):
        for scope_spans in resource_spans.get("scopeSpans", ()):
            for span in scope_spans.get("spans", ()):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = _hex_id(span[key])
                for link in span.get("links", ()):
                    for key in ("traceId", "spanId"):
                        if key in link:
                            link[key] = _hex_id(link[key])
    return request


def _with_link_trace_states(request: Any, batch: list[ReadableSpan]) -> Any:
    """The encoder leaves a link's trace state out (``_encode_links`` of
    opentelemetry-exporter-otlp-proto-common 1.x writes no ``trace_state``): put it in, link by link."""
    states = {
        (span.context.trace_id, span.context.span_id): [link.context.trace_state for link in span.links]
        for span in batch
        if span.context is not None and any(link.context.trace_state for link in span.links)
    }
    if not states:
        return request
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                key = (int.from_bytes(span.trace_id, "big"), int.from_bytes(span.span_id, "big"))
                for link, state in zip(span.links, states.get(key, ()), strict=False):
                    if state:
                        link.trace_state = state.to_header()
    return request


def otlp_json_lines(spans: Iterable[ReadableSpan], batch_size: int = DEFAULT_BATCH_SIZE) -> Iterator[str]:
    """OTLP/JSON: one ``ExportTraceServiceRequest`` of up to ``batch_size`` spans a line.

    Encoded by the OpenTelemetry exporter's ``encode_spans`` (which groups by resource and scope), links'
    trace states added, then protobuf's ProtoJSON with integer enums, then ids rewritten to hex.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    for batch in batched(spans, batch_size):
        encoded = _with_link_trace_states(encode_spans(batch), batch)
        request = json_format.MessageToDict(encoded, use_integers_for_enums=True)
        yield json.dumps(_ids_to_hex(request), ensure_ascii=False, separators=(",", ":"))


def rebuilt_spans(
    conn: sqlite3.Connection, trace_ids: Sequence[str], last_seen: dict[str, int]
) -> Iterator[ReadableSpan]:
    """The stored spans of these traces as SDK spans, made one at a time as they are read (a long
    run's model calls each hold the conversation: a trace of them at once is its square)."""
    for trace_id in trace_ids:
        present = {
            (trace_id, span_id)
            for (span_id,) in conn.execute("SELECT span_id FROM spans WHERE trace_id = ?", (trace_id,))
        }
        shared = _Shared()
        for r in queries.iter_spans(conn, trace_id):
            remote = (r.trace_id, r.parent_span_id) not in present
            yield _readable_span(r, last_seen.get(r.trace_id, r.written_ns), remote, shared)
