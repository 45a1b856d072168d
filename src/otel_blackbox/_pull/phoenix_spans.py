"""One span of Phoenix's REST span API (``GET /v1/projects/{project}/spans``) as an OTLP/JSON span.

Phoenix answers in its own shape: ids as hex, times as ISO 8601 strings (microseconds: Phoenix keeps
no finer), ``status_code`` as a name, the OpenInference kind taken out of the attributes into
``span_kind``, and attributes flattened (``llm.input_messages.0.message.role``), primitive arrays
left as arrays. The OTLP/JSON written here: camelCase names, lowercase hex ids, times as unix
nanosecond strings, enums as integers, attributes as ``{"key", "value": AnyValue}`` lists.

What Phoenix does not keep cannot come back: the OpenTelemetry span kind (every span is written
INTERNAL, as Phoenix's own OTLP answer does), links, the resource and the instrumentation scope.
Phoenix parses the attributes it treats as JSON strings (keys ending in ``metadata``,
``tool.parameters``, ``llm.prompt_template.variables``) into objects and the API flattens them
like the others; they are rebuilt into JSON strings here, as Phoenix's own OTLP encoder does (an
empty object, ``"{}"``, flattens to nothing and is lost).
"""

from __future__ import annotations

import calendar
import json
import math
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from otel_blackbox.errors import SpanShapeError

__all__ = ["iso_ns", "otlp_span"]

# Phoenix's JSON_STRING_ATTRIBUTES (phoenix.trace.attributes): matched with str.endswith, as Phoenix does.
_JSON_STRING_SUFFIXES = ("document.metadata", "llm.prompt_template.variables", "metadata", "tool.parameters")
_OI_KIND = "openinference.span.kind"
_STATUS_CODES = {"UNSET": 0, "OK": 1, "ERROR": 2}
_SPAN_KIND_INTERNAL = 1
_TRACE_ID = re.compile(r"[0-9a-fA-F]{32}")
_SPAN_ID = re.compile(r"[0-9a-fA-F]{16}")
_ISO = re.compile(
    r"(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:[.,](\d{1,9}))?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?"
)


def iso_ns(text: object, field: str) -> int:
    """An ISO 8601 time as unix nanoseconds, exactly (no float on the way). No zone means UTC."""
    match = _ISO.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise SpanShapeError(f"{field}: expected an ISO 8601 time, got {text!r}")
    date, clock, fraction, zone = match.groups()
    try:
        moment = datetime.fromisoformat(f"{date}T{clock}")
    except ValueError:
        raise SpanShapeError(f"{field}: not a valid time: {text!r}") from None
    offset = 0
    if zone and zone not in ("Z", "z"):
        digits = zone[1:].replace(":", "")
        offset = (int(digits[:2]) * 3600 + int(digits[2:4] or 0) * 60) * (-1 if zone[0] == "-" else 1)
    seconds = calendar.timegm(moment.timetuple()) - offset
    return seconds * 1_000_000_000 + int((fraction or "").ljust(9, "0"))


def _hex_id(value: object, pattern: re.Pattern[str], field: str) -> str:
    if not isinstance(value, str) or not pattern.fullmatch(value):
        digits = 32 if pattern is _TRACE_ID else 16
        raise SpanShapeError(f"{field}: expected {digits} hex digits, got {value!r}")
    return value.lower()


def any_value(value: Any) -> dict[str, Any]:
    """A JSON value as an OTLP/JSON AnyValue (64-bit integers as strings, non-finite doubles named)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        if math.isfinite(value):
            return {"doubleValue": value}
        return {"doubleValue": "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    if isinstance(value, Mapping):
        return {"kvlistValue": {"values": key_values(value)}}
    if value is None:
        return {}
    return {"stringValue": str(value)}


def key_values(attributes: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"key": str(k), "value": any_value(v)} for k, v in attributes.items() if v is not None]


def _nested(pairs: list[tuple[list[str], Any]]) -> Any:
    """Flattened (path, value) pairs as the object Phoenix parsed: a digit segment with more after
    it is a list index (Phoenix's rule: arrays only hold objects), any other segment a key."""
    root: dict[str, Any] = {}
    for path, value in pairs:
        node = root
        for segment in path[:-1]:
            child = node.get(segment)
            if not isinstance(child, dict):
                child = node[segment] = {}
            node = child
        node[path[-1]] = value

    def lists(node: Any) -> Any:
        if not isinstance(node, dict):
            return node
        items = {k: lists(v) for k, v in node.items()}
        if items and all(k.isdigit() and isinstance(v, dict) for k, v in items.items()):
            return [items[k] for k in sorted(items, key=int)]
        return items

    return lists(root)


def _json_string_prefix(key: str) -> tuple[str, list[str]] | None:
    """The attribute Phoenix parsed as JSON that ``key`` was flattened out of, and the path below it."""
    segments = key.split(".")
    for i in range(1, len(segments) + 1):
        prefix = ".".join(segments[:i])
        if prefix.endswith(_JSON_STRING_SUFFIXES):
            return prefix, segments[i:]
    return None


def restore_attributes(flat: Mapping[str, Any]) -> dict[str, Any]:
    """Phoenix's flattened attributes with its JSON-string attributes made JSON strings again."""
    out: dict[str, Any] = {}
    parsed: dict[str, list[tuple[list[str], Any]]] = {}
    for key, value in flat.items():
        if value is None:
            continue
        found = _json_string_prefix(key)
        if found is None:
            out[key] = value
            continue
        prefix, path = found
        if not path and isinstance(value, str):
            out[prefix] = value  # text Phoenix could not parse, kept as it was
        elif not path:
            out[prefix] = json.dumps(value)  # a JSON array or number
        else:
            parsed.setdefault(prefix, []).append((path, value))
            out.setdefault(prefix, None)  # keeps the key's place
    for prefix, pairs in parsed.items():
        out[prefix] = json.dumps(_nested(pairs))
    return out


def _events(value: object, field: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise SpanShapeError(f"{field}: expected a list, got {type(value).__name__}")
    events = []
    for i, event in enumerate(value):
        where = f"{field}[{i}]"
        if not isinstance(event, dict):
            raise SpanShapeError(f"{where}: expected an object, got {type(event).__name__}")
        attributes = event.get("attributes") or {}
        if not isinstance(attributes, dict):
            raise SpanShapeError(f"{where}.attributes: expected an object, got {type(attributes).__name__}")
        events.append(
            {
                "timeUnixNano": str(iso_ns(event.get("timestamp"), f"{where}.timestamp")),
                "name": str(event.get("name") or ""),
                "attributes": key_values(attributes),
            }
        )
    return events


def otlp_span(span: object, field: str) -> dict[str, Any]:
    """One Phoenix span as an OTLP/JSON span. ``field`` names it in errors ("data[3]")."""
    if not isinstance(span, dict):
        raise SpanShapeError(f"{field}: expected a span object, got {type(span).__name__}")
    context = span.get("context")
    if not isinstance(context, dict):
        raise SpanShapeError(f"{field}.context: expected an object with trace_id and span_id")
    name = span.get("name")
    if not isinstance(name, str):
        raise SpanShapeError(f"{field}.name: expected a string, got {name!r}")
    status = span.get("status_code") or "UNSET"
    code = _STATUS_CODES.get(status.upper()) if isinstance(status, str) else None
    if code is None:
        raise SpanShapeError(f"{field}.status_code: expected OK, ERROR or UNSET, got {status!r}")
    attributes = span.get("attributes") or {}
    if not isinstance(attributes, dict):
        raise SpanShapeError(f"{field}.attributes: expected an object, got {type(attributes).__name__}")
    attributes = restore_attributes(attributes)
    kind = span.get("span_kind")
    if isinstance(kind, str) and kind and kind.upper() != "UNKNOWN":  # UNKNOWN: the span had none
        attributes[_OI_KIND] = kind
    out: dict[str, Any] = {
        "traceId": _hex_id(context.get("trace_id"), _TRACE_ID, f"{field}.context.trace_id"),
        "spanId": _hex_id(context.get("span_id"), _SPAN_ID, f"{field}.context.span_id"),
    }
    if span.get("parent_id") is not None:
        out["parentSpanId"] = _hex_id(span["parent_id"], _SPAN_ID, f"{field}.parent_id")
    out["name"] = name
    out["kind"] = _SPAN_KIND_INTERNAL
    out["startTimeUnixNano"] = str(iso_ns(span.get("start_time"), f"{field}.start_time"))
    if span.get("end_time") is not None:
        out["endTimeUnixNano"] = str(iso_ns(span["end_time"], f"{field}.end_time"))
    out["attributes"] = key_values(attributes)
    out["events"] = _events(span.get("events") or [], f"{field}.events")
    message = span.get("status_message")
    out["status"] = {"code": code, **({"message": str(message)} if message else {})}
    return out
