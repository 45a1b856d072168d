"""The OpenTelemetry SDK's own span JSON, read into OTLP/JSON ``TracesData`` documents for ``import``.

The shape is the Python SDK's ``ReadableSpan.to_json()``, what ``ConsoleSpanExporter`` prints::

    {"name": "chat", "context": {"trace_id": "0x5b8e...", "span_id": "0xeee1...", "trace_state": "[]"},
     "kind": "SpanKind.CLIENT", "parent_id": "0x0102..." | null,
     "start_time": "2025-01-02T03:04:05.123456Z", "end_time": ... | null,
     "status": {"status_code": "UNSET" | "OK" | "ERROR", "description": "..."},
     "attributes": {"key": str | bool | int | float | [those]},
     "events": [{"name", "timestamp", "attributes"}], "links": [{"context", "attributes"}],
     "resource": {"attributes": {...}, "schema_url": ""}}

A file holds them as the exporter's stream (each span indented over many lines, one after the
other: no array), as a JSON array, or as JSON Lines. Ids with or without ``0x``; a span with no
``end_time`` stays open; a ``resource`` that is the bare attribute mapping (SDKs before 1.12) is
read too. ``to_json`` writes no instrumentation scope: the scope is left empty (an
``instrumentation_scope`` object some tools add is read). Spans of one resource are one
ResourceSpans entry, in the file's order. A bad span is an ``ImportInputError``: one line naming
the file, the span's number and line, the field and what was expected, raised before anything is
stored.
"""

from __future__ import annotations

import ast
import calendar
import json
import re
from datetime import datetime
from typing import Any

from otel_blackbox._spans.otlp_in.json_fields import array_of, object_of, text_of
from otel_blackbox._spans.otlp_in.span import MAX_DEPTH, OtlpError
from otel_blackbox.errors import ImportInputError

__all__ = ["SDK_JSON", "SDK_JSON_WHAT", "is_sdk_span", "looks_like_sdk_json", "sdk_json_documents"]

SDK_JSON = "otel-sdk-json"  # what `import --from` takes
SDK_JSON_WHAT = "the OpenTelemetry SDK's span JSON"
_SHAPE = 'an object with "context": {"trace_id", "span_id"}, as ReadableSpan.to_json() writes it'
_EXPECTED = "spans as ReadableSpan.to_json() writes them (ConsoleSpanExporter), an array or JSON Lines"
_KINDS = ("INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
_STATUSES = ("UNSET", "OK", "ERROR")
_I64 = range(-(2**63), 2**63)
_WHITESPACE = re.compile(r"\s*")
_HEX = {16: re.compile(r"[0-9a-fA-F]{16}"), 32: re.compile(r"[0-9a-fA-F]{32}")}
_TIME = re.compile(r"(\d{4}-\d\d-\d\d)[Tt ](\d\d:\d\d:\d\d)(?:[.,](\d{1,9}))?(Z|z|[+-]\d\d:?\d\d)?")
_STATE_PAIR = re.compile(r"\{key=([^,]*), value=(.*)\}")  # TraceState's repr: ['{key=k, value=v}']
# The start of a span too long to be read whole from a file's first bytes.
_SPAN_START = re.compile(
    r'\s*\[?\s*\{.*?"context"\s*:\s*\{\s*"trace_id"\s*:.*?"kind"\s*:\s*"SpanKind\.', re.S
)


def is_sdk_span(value: object) -> bool:
    """Whether a JSON value is a span of ``to_json`` (or a list that starts with one)."""
    if isinstance(value, list):
        return bool(value) and is_sdk_span(value[0])
    if not isinstance(value, dict):
        return False
    context, kind = value.get("context"), value.get("kind")
    return isinstance(context, dict) and "trace_id" in context and str(kind).startswith("SpanKind.")


def looks_like_sdk_json(head: bytes) -> bool:
    """Whether a file whose first bytes are ``head`` holds the SDK's span JSON: its first span read
    from them, or, cut short there, its start (``context.trace_id``, then a ``SpanKind`` kind)."""
    text = head.decode("utf-8", "replace").lstrip("\ufeff")
    at = _skip(text, 0)
    if text[at : at + 1] == "[":
        at = _skip(text, at + 1)
    try:
        first, _ = json.JSONDecoder().raw_decode(text, at)
    except (json.JSONDecodeError, RecursionError):
        return _SPAN_START.match(text) is not None
    return is_sdk_span(first)


def sdk_json_documents(raw: bytes, name: str) -> list[dict[str, Any]]:
    """The spans of a file of the SDK's span JSON as one TracesData document (none for no span).

    Raises ImportInputError naming ``name`` (and the span and its line) at the first bad one."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ImportInputError(f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    del raw
    resources: dict[str, dict[str, Any]] = {}  # the spans of one resource: one ResourceSpans
    scopes: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for number, (line, value) in enumerate(_values(text, name), 1):
        try:
            resource, scope, span = _span(value)
        except OtlpError as exc:
            raise ImportInputError(f"{name}, span {number} (line {line}): {exc}") from None
        key = (json.dumps(resource, sort_keys=True), json.dumps(scope, sort_keys=True))
        if key not in scopes:
            entry = resources.setdefault(key[0], {**resource, "scopeSpans": []})
            entry["scopeSpans"].append({**scope, "spans": scopes.setdefault(key, [])})
        scopes[key].append(span)
    return [{"resourceSpans": list(resources.values())}] if resources else []


# -- the JSON values of the file ------------------------------------------------------------------


def _skip(text: str, at: int) -> int:
    match = _WHITESPACE.match(text, at)
    return match.end() if match else at


def _values(text: str, name: str) -> list[tuple[int, object]]:
    """Every span value of the file with the line it starts on: the values one after the other
    (the exporter's stream, JSON Lines), the items of an array among them."""
    decoder = json.JSONDecoder()
    found: list[tuple[int, object]] = []
    counted, line = 0, 1

    def read(at: int) -> int:
        nonlocal counted, line
        line += text.count("\n", counted, at)
        counted = at
        try:
            value, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError as exc:
            where = f"{name}, line {exc.lineno}"
            raise ImportInputError(
                f"{where}: not JSON ({exc.msg}, column {exc.colno}); expected {_EXPECTED}"
            ) from None
        except RecursionError:
            raise ImportInputError(f"{name}, line {line}: nested too deeply to read") from None
        found.append((line, value))
        return end

    at = _skip(text, 0)
    while at < len(text):
        if text[at] != "[":
            at = _skip(text, read(at))
            continue
        at = _skip(text, at + 1)
        while text[at : at + 1] != "]":
            at = _skip(text, read(at))
            if text[at : at + 1] == ",":
                at = _skip(text, at + 1)
            elif text[at : at + 1] != "]":
                line += text.count("\n", counted, at)
                raise ImportInputError(f"{name}, line {line}: not JSON (expected , or ] after a span)")
        at = _skip(text, at + 1)
    return found


# -- one span --------------------------------------------------------------------------------------


def _span(value: object) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A span's resource (attributes and schema URL), scope and OTLP/JSON span."""
    if not isinstance(value, dict):
        raise OtlpError("", f"expected a span, {_SHAPE}; got {json.dumps(value)[:40]}")
    if value.get("context") is None:
        raise OtlpError("context", f"missing: expected a span, {_SHAPE}")
    span = value
    context = object_of(span["context"], "context")
    out: dict[str, Any] = {
        "traceId": _id(context.get("trace_id"), 32, "context.trace_id"),
        "spanId": _id(context.get("span_id"), 16, "context.span_id"),
        "traceState": _trace_state(context.get("trace_state"), "context.trace_state"),
        "name": text_of(span.get("name"), "name"),
        "kind": f"SPAN_KIND_{_name(span.get('kind'), 'kind', 'SpanKind.', _KINDS, 'SpanKind.')}",
    }
    if span.get("parent_id") is not None:
        out["parentSpanId"] = _id(span["parent_id"], 16, "parent_id")
    start = _time(span.get("start_time"), "start_time")
    out["startTimeUnixNano"] = str(start)
    if span.get("end_time") is not None:
        end = _time(span["end_time"], "end_time")
        if end < start:
            raise OtlpError("end_time", f"before start_time ({span['end_time']} < {span['start_time']})")
        out["endTimeUnixNano"] = str(end)
    status = object_of(span.get("status") or {}, "status")
    code = _name(status.get("status_code"), "status.status_code", "StatusCode.", _STATUSES)
    out["status"] = {
        "code": f"STATUS_CODE_{code}",
        "message": text_of(status.get("description"), "status.description"),
    }
    out["attributes"] = _attributes(span.get("attributes"), "attributes")
    out["events"] = [_event(e, f"events[{i}]") for i, e in enumerate(array_of(span.get("events"), "events"))]
    out["links"] = [_link(k, f"links[{i}]") for i, k in enumerate(array_of(span.get("links"), "links"))]
    return _resource(span.get("resource")), _scope(span.get("instrumentation_scope")), out


def _event(value: object, path: str) -> dict[str, Any]:
    event = object_of(value, path)
    return {
        "name": text_of(event.get("name"), f"{path}.name"),
        "timeUnixNano": str(_time(event.get("timestamp"), f"{path}.timestamp")),
        "attributes": _attributes(event.get("attributes"), f"{path}.attributes"),
    }


def _link(value: object, path: str) -> dict[str, Any]:
    link = object_of(value, path)
    context = object_of(link.get("context"), f"{path}.context")
    return {
        "traceId": _id(context.get("trace_id"), 32, f"{path}.context.trace_id"),
        "spanId": _id(context.get("span_id"), 16, f"{path}.context.span_id"),
        "traceState": _trace_state(context.get("trace_state"), f"{path}.context.trace_state"),
        "attributes": _attributes(link.get("attributes"), f"{path}.attributes"),
    }


def _resource(value: object) -> dict[str, Any]:
    """A ResourceSpans' resource and schema URL; a bare mapping of attributes in SDKs before 1.12."""
    resource = object_of(value or {}, "resource")
    if not (isinstance(resource.get("attributes"), dict) and set(resource) <= {"attributes", "schema_url"}):
        resource = {"attributes": resource}
    return {
        "resource": {"attributes": _attributes(resource["attributes"], "resource.attributes")},
        "schemaUrl": text_of(resource.get("schema_url"), "resource.schema_url"),
    }


def _scope(value: object) -> dict[str, Any]:
    """A ScopeSpans' scope and schema URL: none from ``to_json``, an ``instrumentation_scope`` if added."""
    scope = object_of({"name": value} if isinstance(value, str) else value or {}, "instrumentation_scope")
    name, version, schema_url = (
        text_of(scope.get(k), f"instrumentation_scope.{k}") for k in ("name", "version", "schema_url")
    )
    return {"scope": {"name": name, "version": version}, "schemaUrl": schema_url}


# -- fields ----------------------------------------------------------------------------------------


def _id(value: object, digits: int, path: str) -> str:
    """A trace id (32 hex digits) or span id (16), ``0x`` or not: lower-case hex."""
    what = "trace id" if digits == 32 else "span id"
    if value is None or value == "":
        raise OtlpError(path, f"missing: a span has a {what}")
    text = value[2:] if isinstance(value, str) and value[:2] in ("0x", "0X") else value
    if not isinstance(text, str) or not _HEX[digits].fullmatch(text):
        raise OtlpError(path, f"expected a {what} of {digits} hex digits (0x or not), got {value!r:.60}")
    if not int(text, 16):
        raise OtlpError(path, f"an all-zero {what} is not valid")
    return text.lower()


def _name(value: object, path: str, prefix: str, names: tuple[str, ...], written: str = "") -> str:
    """An enum's name, after the ``prefix`` of its class if written (to_json writes SpanKind.CLIENT
    but a bare status code, ``written`` in messages); a missing one is the first (INTERNAL, UNSET)."""
    if value is None:
        return names[0]
    name = value.removeprefix(prefix).upper() if isinstance(value, str) else None
    if name not in names:
        raise OtlpError(path, f"expected one of {', '.join(written + n for n in names)}, got {value!r:.60}")
    return name


def _time(value: object, path: str) -> int:
    """An ISO 8601 time as ``ns_to_iso_str`` writes it (2025-01-02T03:04:05.123456Z): Unix nanoseconds."""
    if value is None:
        raise OtlpError(path, "missing: expected an ISO 8601 time like 2025-01-02T03:04:05.123456Z")
    match = _TIME.fullmatch(value.strip()) if isinstance(value, str) else None
    try:
        if match is None:
            raise ValueError
        date, clock, fraction, offset = match.groups()
        seconds = calendar.timegm(datetime.strptime(f"{date} {clock}", "%Y-%m-%d %H:%M:%S").timetuple())
        if offset and offset not in "Zz":
            minutes = int(offset[1:3]) * 60 + int(offset[-2:])
            seconds -= minutes * 60 if offset[0] == "+" else -minutes * 60
    except ValueError:
        raise OtlpError(
            path, f"expected an ISO 8601 time like 2025-01-02T03:04:05.123456Z, got {value!r:.60}"
        ) from None
    nanoseconds = seconds * 10**9 + int((fraction or "").ljust(9, "0"))
    if nanoseconds <= 0:
        raise OtlpError(path, f"before 1970: {value!r:.60}")
    return nanoseconds


def _trace_state(value: object, path: str) -> str:
    """A W3C tracestate (k=v,k2=v2) from the repr ``to_json`` writes (['{key=k, value=v}'], "{}" in
    0.x SDKs); a text that is neither is kept as it is."""
    text = text_of(value, path).strip()
    if text[:1] not in ("[", "{") or len(text) > 4096:
        return text
    try:
        parsed = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text
    if isinstance(parsed, dict):
        return ",".join(f"{k}={v}" for k, v in parsed.items())
    if not isinstance(parsed, list):
        return text
    pairs = [_STATE_PAIR.fullmatch(p) if isinstance(p, str) else None for p in parsed]
    return ",".join(f"{m[1]}={m[2]}" for m in pairs if m) if all(pairs) else text


def _attributes(value: object, path: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    mapping = object_of(value, path)
    return [{"key": str(k), "value": _any(v, f"{path}.{k}", 0)} for k, v in mapping.items()]


def _any(value: object, path: str, depth: int) -> dict[str, Any]:
    """An attribute value as an OTLP/JSON AnyValue (None in a list: the empty AnyValue)."""
    if depth > MAX_DEPTH:
        raise OtlpError(path, f"nested deeper than {MAX_DEPTH} levels")
    if value is None:
        return {}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        if value not in _I64:
            raise OtlpError(path, f"out of range for a 64-bit integer: {value}")
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_any(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]}}
    items = object_of(value, path).items()
    return {
        "kvlistValue": {"values": [{"key": k, "value": _any(v, f"{path}.{k}", depth + 1)} for k, v in items]}
    }
