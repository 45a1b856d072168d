"""OTLP in: OTLP/JSON documents and OTLP/protobuf requests decoded into the store's span snapshots.

What ``export --format otlp`` writes, what the Collector's ``file`` exporter writes, what an OTLP/HTTP
exporter posts, and the trace bodies of the backends a fleet uses, all become the plain tuples the
recorder's writer stores (store.snapshot), so redaction, bounds and columns are those of recorded
spans. Each distinct resource and scope is numbered once, across calls. The fields are read by
``json_fields`` and ``protobuf_fields``.

Strict decoding (``import``) stops at the first bad field with an ``OtlpError`` naming its path;
lenient decoding (``serve``) skips a bad span, counts it, and keeps the first reason.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

from otel_blackbox._spans.otlp_in.json_fields import (
    array_of,
    field_value,
    has_field,
    json_attributes,
    json_span,
    object_of,
    resource_spans_of,
    text_of,
)
from otel_blackbox._spans.otlp_in.protobuf_fields import pb_attributes, pb_span
from otel_blackbox._spans.otlp_in.span import OtlpError, Span
from otel_blackbox._store.snapshot import Definition, Snapshot

__all__ = ["Decoded", "OtlpDecoder"]

_MAX_SHARED = 256  # distinct resources or scopes remembered; past it, numbering starts over


@dataclass
class Decoded:
    """The spans of one document or request, ready for ``SpanWriter.receive`` / the importer."""

    definitions: list[Definition] = field(default_factory=list)
    snapshots: list[Snapshot] = field(default_factory=list)
    rejected: int = 0  # spans skipped (lenient decoding only)
    first_error: str | None = None
    # Spans ``export`` had ended only to export them (blackbox.span.open): when they were last seen.
    seen_ns: dict[tuple[int, int], int] = field(default_factory=dict)


class OtlpDecoder:
    """Decodes documents and requests; numbers each distinct resource and scope once across calls.

    Thread-safe: ``serve`` decodes on its handler threads and sends the definitions with the spans.
    """

    def __init__(self) -> None:
        self._refs: dict[tuple[str, str], int] = {}
        self._next_ref = 0
        self._lock = threading.Lock()

    # -- JSON ----------------------------------------------------------------------------------------

    def from_json(self, document: object, *, strict: bool = True) -> Decoded:
        decoded = Decoded()
        where, batches = resource_spans_of(document)
        for i, resource_spans in enumerate(array_of(batches, where)):
            path = f"{where}[{i}]"
            resource_spans = object_of(resource_spans, path)
            resource = object_of(field_value(resource_spans, "resource") or {}, f"{path}.resource")
            resource_ref = self._ref(
                decoded,
                "resource",
                json_attributes(resource.get("attributes"), f"{path}.resource.attributes"),
            )
            scope_key = (
                "scopeSpans" if has_field(resource_spans, "scopeSpans") else "instrumentationLibrarySpans"
            )
            for j, scope_spans in enumerate(
                array_of(field_value(resource_spans, scope_key), f"{path}.{scope_key}")
            ):
                scope_path = f"{path}.{scope_key}[{j}]"
                scope_spans = object_of(scope_spans, scope_path)
                scope = object_of(
                    field_value(scope_spans, "scope")
                    or field_value(scope_spans, "instrumentationLibrary")
                    or {},
                    f"{scope_path}.scope",
                )
                scope_ref = self._ref(
                    decoded,
                    "scope",
                    _scope(text_of(scope.get("name"), f"{scope_path}.scope.name"),
                           text_of(scope.get("version"), f"{scope_path}.scope.version"),
                           text_of(field_value(scope_spans, "schemaUrl"), f"{scope_path}.schemaUrl")),
                )  # fmt: skip
                for k, span in enumerate(array_of(field_value(scope_spans, "spans"), f"{scope_path}.spans")):
                    span_path = f"{scope_path}.spans[{k}]"
                    try:
                        _add(decoded, json_span(span, span_path), resource_ref, scope_ref)
                    except OtlpError as exc:
                        if strict:
                            raise
                        _reject(decoded, exc)
        return decoded

    # -- protobuf ------------------------------------------------------------------------------------

    def from_protobuf(self, body: bytes, *, strict: bool = False) -> Decoded:
        # Imported here: `import` of JSON files never loads the protobuf classes.
        from google.protobuf.message import DecodeError  # type: ignore[import-untyped]  # no types-protobuf here
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        try:
            request = ExportTraceServiceRequest.FromString(body)
        except (DecodeError, RecursionError) as exc:
            raise OtlpError("", f"not an OTLP ExportTraceServiceRequest: {exc}") from None
        decoded = Decoded()
        for i, resource_spans in enumerate(request.resource_spans):
            path = f"resourceSpans[{i}]"
            resource_ref = self._ref(decoded, "resource", pb_attributes(resource_spans.resource.attributes))
            for j, scope_spans in enumerate(resource_spans.scope_spans):
                scope_path = f"{path}.scopeSpans[{j}]"
                scope = scope_spans.scope
                scope_ref = self._ref(
                    decoded, "scope", _scope(scope.name, scope.version, scope_spans.schema_url)
                )
                for k, span in enumerate(scope_spans.spans):
                    try:
                        _add(decoded, pb_span(span, f"{scope_path}.spans[{k}]"), resource_ref, scope_ref)
                    except OtlpError as exc:
                        if strict:
                            raise
                        _reject(decoded, exc)
        return decoded

    # -- shared --------------------------------------------------------------------------------------

    def _ref(self, decoded: Decoded, kind: str, data: dict[str, Any]) -> int:
        key = (kind, json.dumps(data, sort_keys=True, default=str))
        with self._lock:
            ref = self._refs.get(key)
            if ref is not None:
                return ref
            if len(self._refs) >= _MAX_SHARED:
                self._refs.clear()  # the writer keeps more than this: refs in flight stay defined
            ref = self._refs[key] = self._next_ref
            self._next_ref += 1
        decoded.definitions.append((kind, ref, data))
        return ref


def _add(decoded: Decoded, span: Span, resource_ref: int, scope_ref: int) -> None:
    fields, seen_ns = span
    decoded.snapshots.append((*fields, resource_ref, scope_ref))
    if seen_ns is not None:
        decoded.seen_ns[(fields[0], fields[1])] = seen_ns


def _reject(decoded: Decoded, exc: OtlpError) -> None:
    decoded.rejected += 1
    if decoded.first_error is None:
        decoded.first_error = str(exc)


def _scope(name: str, version: str, schema_url: str) -> dict[str, Any]:
    """As the recorder stores a scope from `get_tracer`: {} for none, else name, version and schema_url."""
    if not (name or version or schema_url):
        return {}
    return {"name": name, "version": version, "schema_url": schema_url}
