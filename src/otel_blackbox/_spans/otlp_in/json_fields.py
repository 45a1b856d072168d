"""The fields of an OTLP/JSON document, read strictly: a bad one raises an ``OtlpError`` naming its path.

The bodies read:

* ``ExportTraceServiceRequest`` / ``TracesData``: ``{"resourceSpans": [...]}``;
* Jaeger's ``/api/v3/traces``: ``{"result": {"resourceSpans": [...]}}``;
* Tempo's ``/api/traces/<id>``: ``{"batches": [...]}`` (older Tempo: ``instrumentationLibrarySpans``);
* Tempo's ``/api/v2/traces/<id>``: ``{"trace": {"resourceSpans": [...]}}``.

Field names in camelCase or snake_case; ids as hex (OTLP/JSON) or base64 (ProtoJSON); 64-bit integers
as strings or numbers; enums as numbers or names. A ``traceState``, the dropped counts and where bytes
values were are carried in attributes (``_spans/otlp_carried.py``).
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Callable
from typing import Any

from otel_blackbox._spans.otlp_carried import Base64Text, carry
from otel_blackbox._spans.otlp_in.span import KINDS, MAX_DEPTH, STATUSES, OtlpError, Span, finish

_I64 = range(-(2**63), 2**63)
_DOUBLES = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def resource_spans_of(document: object) -> tuple[str, object]:
    """Where the list of ResourceSpans is, whichever body holds it."""
    if not isinstance(document, dict):
        raise OtlpError("", f"expected a JSON object with resourceSpans, got {_type(document)}")
    if "batches" in document:  # Tempo's /api/traces/<id>
        return "batches", document["batches"]
    for wrapper in ("result", "trace"):  # Jaeger's /api/v3/traces, Tempo's /api/v2/traces/<id>
        if wrapper in document and not has_field(document, "resourceSpans"):
            inner = object_of(document[wrapper], wrapper)
            if not has_field(inner, "resourceSpans"):
                raise OtlpError(wrapper, "expected an object with resourceSpans")
            return f"{wrapper}.resourceSpans", field_value(inner, "resourceSpans")
    if not has_field(document, "resourceSpans"):
        keys = ", ".join(sorted(map(str, document))[:5]) or "none"
        raise OtlpError(
            "", f"not OTLP: no resourceSpans (nor a Jaeger result, Tempo batches or trace); keys: {keys}"
        )
    return "resourceSpans", field_value(document, "resourceSpans")


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def has_field(obj: dict[str, Any], name: str) -> bool:
    return name in obj or _snake(name) in obj


def field_value(obj: dict[str, Any], name: str) -> Any:
    """A field by its ProtoJSON name or its proto name (parsers accept both)."""
    value = obj.get(name)
    return obj.get(_snake(name)) if value is None else value


def _type(value: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else "a number"
    )


def object_of(value: object, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise OtlpError(path, f"expected an object, got {_type(value)}")
    return value


def array_of(value: object, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise OtlpError(path, f"expected a list, got {_type(value)}")
    return value


def text_of(value: object, path: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise OtlpError(path, f"expected a string, got {_type(value)}")
    return value


def _unsigned(value: object, path: str, bits: int = 64) -> int:
    """A fixed64 (times) or a uint32 (dropped counts): a number or a string of digits; missing is 0."""
    if value is None:
        return 0
    number = _integer(value, path)
    if not 0 <= number < 2**bits:
        raise OtlpError(path, f"out of range for a {bits}-bit unsigned integer: {value!r}")
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
    if depth > MAX_DEPTH:
        raise OtlpError(path, f"nested deeper than {MAX_DEPTH} levels")
    obj = object_of(value, path)
    if not obj:
        return None
    for name, read in _VALUE_READERS:
        found = field_value(obj, name)
        if found is not None:
            return read(found, f"{path}.{name}", depth)
    raise OtlpError(path, f"not an AnyValue (keys: {', '.join(sorted(map(str, obj))[:5])})")


def _string_value(value: object, path: str, depth: int) -> str:
    return text_of(value, path)


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
    values = array_of(field_value(object_of(value, path), "values"), f"{path}.values")
    return [_json_value(v, f"{path}.values[{i}]", depth + 1) for i, v in enumerate(values)]


def _kvlist_value(value: object, path: str, depth: int) -> dict[str, Any]:
    return json_attributes(field_value(object_of(value, path), "values"), f"{path}.values", depth + 1)


def _bytes_value(value: object, path: str, depth: int) -> str:
    text = text_of(value, path)
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise OtlpError(path, "not base64") from None
    return Base64Text(text)  # kept as the base64 text (stored JSON has no bytes); `carry` notes where


_VALUE_READERS: tuple[tuple[str, Callable[[object, str, int], Any]], ...] = (
    ("stringValue", _string_value),
    ("boolValue", _bool_value),
    ("intValue", _int_value),
    ("doubleValue", _double_value),
    ("arrayValue", _array_value),
    ("kvlistValue", _kvlist_value),
    ("bytesValue", _bytes_value),
)


def json_attributes(values: object, path: str, depth: int = 0) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    for i, item in enumerate(array_of(values, path)):
        item = object_of(item, f"{path}[{i}]")
        key = item.get("key")
        if not isinstance(key, str):
            raise OtlpError(f"{path}[{i}].key", f"expected a string, got {_type(key)}")
        value = item.get("value")
        attributes[key] = None if value is None else _json_value(value, f"{path}[{i}].value", depth)
    return attributes


def json_span(value: object, path: str) -> Span:
    span = object_of(value, path)
    trace_id = _id(field_value(span, "traceId"), 16, f"{path}.traceId")
    span_id = _id(field_value(span, "spanId"), 8, f"{path}.spanId")
    assert trace_id is not None and span_id is not None  # required
    parent = _id(field_value(span, "parentSpanId"), 8, f"{path}.parentSpanId", required=False)
    status = object_of(field_value(span, "status") or {}, f"{path}.status")
    events = array_of(field_value(span, "events"), f"{path}.events")
    links = array_of(field_value(span, "links"), f"{path}.links")
    return finish(
        trace_id,
        span_id,
        parent,
        text_of(field_value(span, "name"), f"{path}.name"),
        KINDS[_enum(field_value(span, "kind"), KINDS, "SPAN_KIND_", f"{path}.kind")],
        STATUSES[_enum(field_value(status, "code"), STATUSES, "STATUS_CODE_", f"{path}.status.code")],
        text_of(field_value(status, "message"), f"{path}.status.message"),
        _unsigned(field_value(span, "startTimeUnixNano"), f"{path}.startTimeUnixNano"),
        _unsigned(field_value(span, "endTimeUnixNano"), f"{path}.endTimeUnixNano"),
        carry(
            json_attributes(field_value(span, "attributes"), f"{path}.attributes"),
            trace_state=text_of(field_value(span, "traceState"), f"{path}.traceState"),
            dropped_attributes=_dropped(span, "Attributes", path),
            dropped_events=_dropped(span, "Events", path),
            dropped_links=_dropped(span, "Links", path),
        ),
        tuple(_json_event(event, f"{path}.events[{i}]") for i, event in enumerate(events)),
        tuple(_json_link(link, f"{path}.links[{i}]") for i, link in enumerate(links)),
        path,
    )


def _dropped(obj: dict[str, Any], what: str, path: str) -> int:
    name = f"dropped{what}Count"
    return _unsigned(field_value(obj, name), f"{path}.{name}", 32)


def _json_event(value: object, path: str) -> tuple[str, int, dict[str, Any]]:
    event = object_of(value, path)
    attributes = json_attributes(field_value(event, "attributes"), f"{path}.attributes")
    return (
        text_of(field_value(event, "name"), f"{path}.name"),
        _unsigned(field_value(event, "timeUnixNano"), f"{path}.timeUnixNano"),
        carry(attributes, dropped_attributes=_dropped(event, "Attributes", path)),
    )


def _json_link(value: object, path: str) -> tuple[int, int, dict[str, Any]]:
    link = object_of(value, path)
    trace_id = _id(field_value(link, "traceId"), 16, f"{path}.traceId")
    span_id = _id(field_value(link, "spanId"), 8, f"{path}.spanId")
    assert trace_id is not None and span_id is not None  # required
    attributes = carry(
        json_attributes(field_value(link, "attributes"), f"{path}.attributes"),
        trace_state=text_of(field_value(link, "traceState"), f"{path}.traceState"),
        dropped_attributes=_dropped(link, "Attributes", path),
    )
    return trace_id, span_id, attributes
