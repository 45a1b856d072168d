"""OTLP in: OTLP/JSON documents and OTLP/protobuf requests decoded into the store's span snapshots.

What ``export --format otlp`` writes, what the Collector's ``file`` exporter writes, what an OTLP/HTTP
exporter posts, and the trace bodies of the backends a fleet uses, all become the plain tuples the
recorder's writer stores (store.snapshot), so redaction, bounds and columns are those of recorded
spans. Read from JSON:

* ``ExportTraceServiceRequest`` / ``TracesData``: ``{"resourceSpans": [...]}``;
* Jaeger's ``/api/v3/traces``: ``{"result": {"resourceSpans": [...]}}``;
* Tempo's ``/api/traces/<id>``: ``{"batches": [...]}`` (older Tempo: ``instrumentationLibrarySpans``);
* Tempo's ``/api/v2/traces/<id>``: ``{"trace": {"resourceSpans": [...]}}``.

Field names in camelCase or snake_case; ids as hex (OTLP/JSON) or base64 (ProtoJSON); 64-bit integers
as strings or numbers; enums as numbers or names. A span with no end is open, and so is a span
``export`` wrote with ``blackbox.span.open = true`` (it ended there only to be exportable): a round
trip gives back what was recorded.

Strict decoding (``import``) stops at the first bad field with an ``OtlpError`` naming its path;
lenient decoding (``serve``) skips a bad span, counts it, and keeps the first reason.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from otel_blackbox._spans.semconv import ATTR_SPAN_OPEN
from otel_blackbox._store.snapshot import Definition, Snapshot

__all__ = ["Decoded", "OtlpDecoder", "OtlpError", "read_documents"]

_KINDS = ("INTERNAL", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")  # 0 is UNSPECIFIED
_STATUSES = ("unset", "ok", "error")
_MAX_DEPTH = 64  # nested arrays / kvlists in one attribute value
_MAX_SHARED = 256  # distinct resources or scopes remembered; past it, numbering starts over
_U64 = 2**64
_I64 = range(-(2**63), 2**63)
_DOUBLES = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


class OtlpError(ValueError):
    """Input that is not OTLP: the message starts with the path of the field that is wrong."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}" if where else message)
        self.where = where


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
        where, batches = _resource_spans(document)
        for i, resource_spans in enumerate(_items(batches, where)):
            path = f"{where}[{i}]"
            resource_spans = _object(resource_spans, path)
            resource = _object(_get(resource_spans, "resource") or {}, f"{path}.resource")
            resource_ref = self._ref(
                decoded,
                "resource",
                _json_attributes(resource.get("attributes"), f"{path}.resource.attributes"),
            )
            scope_key = "scopeSpans" if _has(resource_spans, "scopeSpans") else "instrumentationLibrarySpans"
            for j, scope_spans in enumerate(_items(_get(resource_spans, scope_key), f"{path}.{scope_key}")):
                scope_path = f"{path}.{scope_key}[{j}]"
                scope_spans = _object(scope_spans, scope_path)
                scope = _object(
                    _get(scope_spans, "scope") or _get(scope_spans, "instrumentationLibrary") or {},
                    f"{scope_path}.scope",
                )
                scope_ref = self._ref(
                    decoded,
                    "scope",
                    _scope(_text(scope.get("name"), f"{scope_path}.scope.name"),
                           _text(scope.get("version"), f"{scope_path}.scope.version"),
                           _text(_get(scope_spans, "schemaUrl"), f"{scope_path}.schemaUrl")),
                )  # fmt: skip
                for k, span in enumerate(_items(_get(scope_spans, "spans"), f"{scope_path}.spans")):
                    span_path = f"{scope_path}.spans[{k}]"
                    try:
                        _add(decoded, _json_span(span, span_path), resource_ref, scope_ref)
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
            resource_ref = self._ref(decoded, "resource", _pb_attributes(resource_spans.resource.attributes))
            for j, scope_spans in enumerate(resource_spans.scope_spans):
                scope_path = f"{path}.scopeSpans[{j}]"
                scope = scope_spans.scope
                scope_ref = self._ref(
                    decoded, "scope", _scope(scope.name, scope.version, scope_spans.schema_url)
                )
                for k, span in enumerate(scope_spans.spans):
                    try:
                        _add(decoded, _pb_span(span, f"{scope_path}.spans[{k}]"), resource_ref, scope_ref)
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


# A span before its resource and scope are known: the snapshot's fields, and when it was last seen
# if `export` ended it only to export it.
_Span = tuple[tuple[Any, ...], int | None]


def _add(decoded: Decoded, span: _Span, resource_ref: int, scope_ref: int) -> None:
    fields, seen_ns = span
    decoded.snapshots.append((*fields, resource_ref, scope_ref))
    if seen_ns is not None:
        decoded.seen_ns[(fields[0], fields[1])] = seen_ns


def _reject(decoded: Decoded, exc: OtlpError) -> None:
    decoded.rejected += 1
    if decoded.first_error is None:
        decoded.first_error = str(exc)


def _finish(
    trace_id: int, span_id: int, parent: int | None, name: str, kind: str, status: str, message: str | None,
    start_ns: int, end_ns: int, attributes: dict[str, Any], events: tuple[Any, ...], links: tuple[Any, ...],
    path: str,
) -> _Span:  # fmt: skip
    """The snapshot fields of a decoded span: open when it has no end, or `export` marked it open."""
    if not start_ns:
        raise OtlpError(f"{path}.startTimeUnixNano", "missing: a span has a start time")
    seen_ns = None
    if attributes.get(ATTR_SPAN_OPEN) is True:
        del attributes[ATTR_SPAN_OPEN]
        seen_ns, end_ns = end_ns or None, 0
    if not end_ns:
        return (
            trace_id,
            span_id,
            parent,
            name,
            kind,
            None,
            None,
            start_ns,
            None,
            attributes,
            events,
            links,
        ), seen_ns
    if end_ns < start_ns:
        raise OtlpError(f"{path}.endTimeUnixNano", f"before the span's start ({end_ns} < {start_ns})")
    fields = (trace_id, span_id, parent, name, kind, status, message or None, start_ns, end_ns, attributes)
    return (*fields, events, links), None


# -- JSON fields -----------------------------------------------------------------------------------


def _resource_spans(document: object) -> tuple[str, object]:
    """Where the list of ResourceSpans is, whichever body holds it."""
    if not isinstance(document, dict):
        raise OtlpError("", f"expected a JSON object with resourceSpans, got {_type(document)}")
    if "batches" in document:  # Tempo's /api/traces/<id>
        return "batches", document["batches"]
    for wrapper in ("result", "trace"):  # Jaeger's /api/v3/traces, Tempo's /api/v2/traces/<id>
        if wrapper in document and not _has(document, "resourceSpans"):
            inner = _object(document[wrapper], wrapper)
            if not _has(inner, "resourceSpans"):
                raise OtlpError(wrapper, "expected an object with resourceSpans")
            return f"{wrapper}.resourceSpans", _get(inner, "resourceSpans")
    if not _has(document, "resourceSpans"):
        keys = ", ".join(sorted(map(str, document))[:5]) or "none"
        raise OtlpError(
            "", f"not OTLP: no resourceSpans (nor a Jaeger result, Tempo batches or trace); keys: {keys}"
        )
    return "resourceSpans", _get(document, "resourceSpans")


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def _has(obj: dict[str, Any], name: str) -> bool:
    return name in obj or _snake(name) in obj


def _get(obj: dict[str, Any], name: str) -> Any:
    """A field by its ProtoJSON name or its proto name (parsers accept both)."""
    value = obj.get(name)
    return obj.get(_snake(name)) if value is None else value


def _type(value: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else "a number"
    )


def _object(value: object, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise OtlpError(path, f"expected an object, got {_type(value)}")
    return value


def _items(value: object, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise OtlpError(path, f"expected a list, got {_type(value)}")
    return value


def _text(value: object, path: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise OtlpError(path, f"expected a string, got {_type(value)}")
    return value


def _uint64(value: object, path: str) -> int:
    """A fixed64 (times): a number or a string of digits; missing is 0."""
    if value is None:
        return 0
    number = _integer(value, path)
    if not 0 <= number < _U64:
        raise OtlpError(path, f"out of range for a 64-bit unsigned integer: {value!r}")
    return number


def _integer(value: object, path: str) -> int:
    if isinstance(value, bool):
        raise OtlpError(path, f"expected an integer, got {_type(value)}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip(), 10)
        except ValueError:
            pass
    raise OtlpError(path, f"expected an integer (a number or a string of digits), got {value!r:.60}")


def _id(value: object, size: int, path: str, *, required: bool = True) -> int | None:
    """A trace id (16 bytes) or span id (8): hex, or base64 as ProtoJSON writes bytes; 0 is none."""
    what = "trace id" if size == 16 else "span id"
    if value is None or value == "":
        if required:
            raise OtlpError(path, f"missing: a span has a {what}")
        return None
    if not isinstance(value, str):
        raise OtlpError(path, f"expected a {what} as a string, got {_type(value)}")
    raw: bytes | None = None
    if len(value) == 2 * size:
        try:
            raw = bytes.fromhex(value)
        except ValueError:
            raw = None
    if raw is None:
        try:
            padded = value + "=" * (-len(value) % 4)
            raw = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
        except (binascii.Error, ValueError):
            raw = None
    if raw is None or len(raw) != size:
        raise OtlpError(
            path, f"not a {what} ({2 * size} hex digits or {size} bytes in base64): {value!r:.60}"
        )
    number = int.from_bytes(raw, "big")
    if not number and required:
        raise OtlpError(path, f"an all-zero {what} is not valid")
    return number or None


def _enum(value: object, names: tuple[str, ...], prefix: str, path: str) -> int:
    """An enum as its number or its name (SPAN_KIND_SERVER, STATUS_CODE_ERROR)."""
    if value is None:
        return 0
    if isinstance(value, str) and not value.strip().isdigit():
        name = value.strip().upper().removeprefix(prefix)
        if name == "UNSPECIFIED" and prefix == "SPAN_KIND_":
            return 0
        for number, known in enumerate(names):
            if known.upper() == name and (number or prefix != "SPAN_KIND_"):
                return number
        raise OtlpError(path, f"unknown value {value!r:.60}")
    number = _integer(value, path)
    if not 0 <= number < len(names):
        raise OtlpError(path, f"unknown value {value!r}")
    return number


def _json_value(value: object, path: str, depth: int = 0) -> Any:
    """An AnyValue: the Python value the SDK would hold (arrays as lists, kvlists as dicts)."""
    if depth > _MAX_DEPTH:
        raise OtlpError(path, f"nested deeper than {_MAX_DEPTH} levels")
    obj = _object(value, path)
    if not obj:
        return None
    for name, read in _VALUE_READERS:
        found = _get(obj, name)
        if found is not None:
            return read(found, f"{path}.{name}", depth)
    raise OtlpError(path, f"not an AnyValue (keys: {', '.join(sorted(map(str, obj))[:5])})")


def _string_value(value: object, path: str, depth: int) -> str:
    return _text(value, path)


def _bool_value(value: object, path: str, depth: int) -> bool:
    if not isinstance(value, bool):
        raise OtlpError(path, f"expected a boolean, got {_type(value)}")
    return value


def _int_value(value: object, path: str, depth: int) -> int:
    number = _integer(value, path)
    if number not in _I64:
        raise OtlpError(path, f"out of range for a 64-bit integer: {value!r}")
    return number


def _double_value(value: object, path: str, depth: int) -> float:
    if isinstance(value, str) and value in _DOUBLES:
        return _DOUBLES[value]
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise OtlpError(path, f"expected a number, got {_type(value)}")
    try:
        return float(value)
    except ValueError:
        raise OtlpError(path, f"expected a number, got {value!r:.60}") from None


def _array_value(value: object, path: str, depth: int) -> list[Any]:
    values = _items(_get(_object(value, path), "values"), f"{path}.values")
    return [_json_value(v, f"{path}.values[{i}]", depth + 1) for i, v in enumerate(values)]


def _kvlist_value(value: object, path: str, depth: int) -> dict[str, Any]:
    return _json_attributes(_get(_object(value, path), "values"), f"{path}.values", depth + 1)


def _bytes_value(value: object, path: str, depth: int) -> str:
    text = _text(value, path)
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise OtlpError(path, "not base64") from None
    return text  # kept as the base64 text: span attributes have no bytes type


_VALUE_READERS: tuple[tuple[str, Callable[[object, str, int], Any]], ...] = (
    ("stringValue", _string_value),
    ("boolValue", _bool_value),
    ("intValue", _int_value),
    ("doubleValue", _double_value),
    ("arrayValue", _array_value),
    ("kvlistValue", _kvlist_value),
    ("bytesValue", _bytes_value),
)


def _json_attributes(values: object, path: str, depth: int = 0) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    for i, item in enumerate(_items(values, path)):
        item = _object(item, f"{path}[{i}]")
        key = item.get("key")
        if not isinstance(key, str):
            raise OtlpError(f"{path}[{i}].key", f"expected a string, got {_type(key)}")
        value = item.get("value")
        attributes[key] = None if value is None else _json_value(value, f"{path}[{i}].value", depth)
    return attributes


def _scope(name: str, version: str, schema_url: str) -> dict[str, Any]:
    """As the recorder stores a scope from `get_tracer`: {} for none, else name, version and schema_url."""
    if not (name or version or schema_url):
        return {}
    return {"name": name, "version": version, "schema_url": schema_url}


def _json_span(value: object, path: str) -> _Span:
    span = _object(value, path)
    trace_id = _id(_get(span, "traceId"), 16, f"{path}.traceId")
    span_id = _id(_get(span, "spanId"), 8, f"{path}.spanId")
    assert trace_id is not None and span_id is not None  # required
    parent = _id(_get(span, "parentSpanId"), 8, f"{path}.parentSpanId", required=False)
    status = _object(_get(span, "status") or {}, f"{path}.status")
    events = _items(_get(span, "events"), f"{path}.events")
    links = _items(_get(span, "links"), f"{path}.links")
    return _finish(
        trace_id,
        span_id,
        parent,
        _text(_get(span, "name"), f"{path}.name"),
        _KINDS[_enum(_get(span, "kind"), _KINDS, "SPAN_KIND_", f"{path}.kind")],
        _STATUSES[_enum(_get(status, "code"), _STATUSES, "STATUS_CODE_", f"{path}.status.code")],
        _text(_get(status, "message"), f"{path}.status.message"),
        _uint64(_get(span, "startTimeUnixNano"), f"{path}.startTimeUnixNano"),
        _uint64(_get(span, "endTimeUnixNano"), f"{path}.endTimeUnixNano"),
        _json_attributes(_get(span, "attributes"), f"{path}.attributes"),
        tuple(_json_event(event, f"{path}.events[{i}]") for i, event in enumerate(events)),
        tuple(_json_link(link, f"{path}.links[{i}]") for i, link in enumerate(links)),
        path,
    )


def _json_event(value: object, path: str) -> tuple[str, int, dict[str, Any]]:
    event = _object(value, path)
    return (
        _text(_get(event, "name"), f"{path}.name"),
        _uint64(_get(event, "timeUnixNano"), f"{path}.timeUnixNano"),
        _json_attributes(_get(event, "attributes"), f"{path}.attributes"),
    )


def _json_link(value: object, path: str) -> tuple[int, int, dict[str, Any]]:
    link = _object(value, path)
    trace_id = _id(_get(link, "traceId"), 16, f"{path}.traceId")
    span_id = _id(_get(link, "spanId"), 8, f"{path}.spanId")
    assert trace_id is not None and span_id is not None  # required
    return trace_id, span_id, _json_attributes(_get(link, "attributes"), f"{path}.attributes")


# -- protobuf fields -------------------------------------------------------------------------------


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
        return _pb_attributes(_deep(value.kvlist_value.values, depth), depth + 1)
    if which == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    return getattr(value, which)


def _deep(values: Any, depth: int) -> Any:
    if depth > _MAX_DEPTH:
        raise OtlpError("attributes", f"a value nested deeper than {_MAX_DEPTH} levels")
    return values


def _pb_attributes(values: Any, depth: int = 0) -> dict[str, Any]:
    return {kv.key: _pb_value(kv.value, depth) for kv in values}


def _pb_span(span: Any, path: str) -> _Span:
    trace_id = _pb_id(span.trace_id, 16, f"{path}.traceId")
    span_id = _pb_id(span.span_id, 8, f"{path}.spanId")
    assert trace_id is not None and span_id is not None  # required
    parent = _pb_id(span.parent_span_id, 8, f"{path}.parentSpanId", required=False)
    kind = span.kind if 0 <= span.kind < len(_KINDS) else 0  # an enum value from a newer proto
    code = span.status.code if 0 <= span.status.code < len(_STATUSES) else 0
    events = tuple((e.name, e.time_unix_nano, _pb_attributes(e.attributes)) for e in span.events)
    links = tuple(_pb_link(link, f"{path}.links[{i}]") for i, link in enumerate(span.links))
    return _finish(
        trace_id, span_id, parent, span.name, _KINDS[kind], _STATUSES[code], span.status.message,
        span.start_time_unix_nano, span.end_time_unix_nano, _pb_attributes(span.attributes), events, links,
        path,
    )  # fmt: skip


def _pb_link(link: Any, path: str) -> tuple[int, int, dict[str, Any]]:
    trace_id = _pb_id(link.trace_id, 16, f"{path}.traceId")
    span_id = _pb_id(link.span_id, 8, f"{path}.spanId")
    assert trace_id is not None and span_id is not None  # required
    return trace_id, span_id, _pb_attributes(link.attributes)


def read_documents(lines: Iterable[str]) -> Iterator[tuple[int | None, object]]:
    """The JSON documents of a file, read as it streams: one per line (JSON lines, as ``export`` and
    the Collector's ``file`` exporter write), or one document over many lines (a backend's body,
    pretty-printed or not).

    Yields (line number, document); the line is None for a document of many lines. Raises
    OtlpError naming the line of what is not JSON.
    """
    numbered = enumerate(lines, 1)
    for number, line in numbered:
        if not line.strip():
            continue
        try:
            first = json.loads(line)
        except RecursionError:
            raise OtlpError(f"line {number}", "nested too deeply to read") from None
        except json.JSONDecodeError:
            # Not a line of its own: the file is one document, read whole (blank lines before it
            # kept, so that an error's line number is the file's).
            text = "\n" * (number - 1) + line + "".join(rest for _, rest in numbered)
            yield None, _whole(text)
            return
        yield number, first
        for number, line in numbered:
            if line.strip():
                yield number, _line(line, number)


def _whole(text: str) -> object:
    try:
        return json.loads(text)
    except RecursionError:
        raise OtlpError("", "nested too deeply to read") from None
    except json.JSONDecodeError as exc:
        raise OtlpError(f"line {exc.lineno}", f"not JSON ({exc.msg}, column {exc.colno})") from None


def _line(line: str, number: int) -> object:
    try:
        return json.loads(line)
    except RecursionError:
        raise OtlpError(f"line {number}", "nested too deeply to read") from None
    except json.JSONDecodeError as exc:
        raise OtlpError(f"line {number}", f"not JSON ({exc.msg}, column {exc.colno})") from None
