"""OTLP: stored spans rebuilt as OpenTelemetry SDK spans, and OTLP/JSON lines for the Collector.

``readable_spans`` turns stored rows back into ``ReadableSpan`` objects (original ids, parent,
kind, status, times, attributes, events, links, resource, scope), so the OpenTelemetry project's
own encoder and exporter can send them anywhere. ``otlp_json_lines`` writes them as the OTLP/JSON
file format the Collector's ``otlpjsonfile`` receiver reads: one ``ExportTraceServiceRequest`` a
line, camelCase names, enums as integers, 64-bit integers as strings, and trace / span ids as hex
(the OTLP/JSON exception to ProtoJSON, which would write bytes as base64).

A span still open when the recording stopped is exported, not dropped: it ends at the last moment
its trace was seen alive, with status ERROR and ``blackbox.span.open = true``.
"""

from __future__ import annotations

import base64
import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from google.protobuf import json_format  # type: ignore[import-untyped]  # no types-protobuf here
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from otel_blackbox._spans.openinference import OPEN_SPAN_MESSAGE
from otel_blackbox._spans.semconv import ATTR_SPAN_OPEN
from otel_blackbox._store import queries
from otel_blackbox._store.queries import SpanRecord

__all__ = ["DEFAULT_BATCH_SIZE", "batched", "otlp_json_lines", "readable_spans", "rebuilt_spans"]

DEFAULT_BATCH_SIZE = 512
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


def _context(trace_id: str, span_id: str, *, is_remote: bool = False) -> SpanContext:
    return SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=is_remote, trace_flags=_SAMPLED)


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
    attributes = _attributes(span.attributes)
    end_ns = span.end_ns
    if span.status == "open":
        attributes[ATTR_SPAN_OPEN] = True
        end_ns = max(last_seen_ns, span.start_ns)
    parent = (
        _context(span.trace_id, span.parent_span_id, is_remote=parent_is_remote)
        if span.parent_span_id
        else None
    )
    return ReadableSpan(
        name=span.name,
        context=_context(span.trace_id, span.span_id),
        parent=parent,
        resource=shared.resource(span.resource),
        attributes=attributes,
        events=[
            Event(
                str(e.get("name", "")),
                _attributes(e.get("attributes")),
                int(e.get("timestamp_ns") or span.start_ns),
            )
            for e in span.events
        ],
        links=[
            Link(_context(link["trace_id"], link["span_id"]), _attributes(link.get("attributes")))
            for link in span.links
            if link.get("trace_id") and link.get("span_id")
        ],
        kind=SpanKind.__members__.get(span.span_kind, SpanKind.INTERNAL),
        status=_status(span),
        start_time=span.start_ns,
        end_time=end_ns if end_ns is not None else span.start_ns,
        instrumentation_scope=shared.scope(span.scope),
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


def batched(spans: Iterable[ReadableSpan], size: int) -> Iterator[list[ReadableSpan]]:
    """Lists of up to ``size`` spans (itertools.batched is Python 3.12+)."""
    batch: list[ReadableSpan] = []
    for span in spans:
        batch.append(span)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


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


def otlp_json_lines(spans: Iterable[ReadableSpan], batch_size: int = DEFAULT_BATCH_SIZE) -> Iterator[str]:
    """OTLP/JSON: one ``ExportTraceServiceRequest`` of up to ``batch_size`` spans a line.

    Encoded by the OpenTelemetry exporter's ``encode_spans`` (which groups by resource and scope),
    then protobuf's ProtoJSON with integer enums, then ids rewritten to hex.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    for batch in batched(spans, batch_size):
        request = json_format.MessageToDict(encode_spans(batch), use_integers_for_enums=True)
        yield json.dumps(_ids_to_hex(request), ensure_ascii=False, separators=(",", ":"))


def rebuilt_spans(
    conn: sqlite3.Connection, trace_ids: Sequence[str], last_seen: dict[str, int]
) -> Iterator[ReadableSpan]:
    """The stored spans of these traces as SDK spans, one trace in memory at a time."""
    for trace_id in trace_ids:
        yield from readable_spans(queries.iter_spans(conn, trace_id), last_seen)
