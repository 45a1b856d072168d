"""Log records of an OTLP/JSON ExportLogsServiceRequest as log snapshots (store.log_rows).

Ids are read as protobuf's JSON mapping writes them (base64) or as the OTLP/JSON specification does
(hex); values from their AnyValue form. Records without a span context are left out, as the
recorder leaves them out.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator, Mapping
from typing import Any

from otel_blackbox._store.log_rows import LogSnapshot

__all__ = ["any_value", "log_snapshots"]

_SEVERITY_PREFIX = "SEVERITY_NUMBER_"


def _id(text: Any, hex_digits: int) -> int:
    if not text:
        return 0
    text = str(text)
    if len(text) == hex_digits:
        try:
            return int(text, 16)
        except ValueError:
            pass
    try:
        return int.from_bytes(base64.b64decode(text, validate=True), "big")
    except (binascii.Error, ValueError):
        return 0


def any_value(value: Mapping[str, Any] | None) -> Any:
    """The Python value of an OTLP/JSON AnyValue."""
    if not value:
        return None
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "bytesValue" in value:
        return base64.b64decode(value["bytesValue"])
    if "arrayValue" in value:
        return [any_value(v) for v in value["arrayValue"].get("values", [])]
    if "kvlistValue" in value:
        return _attributes(value["kvlistValue"].get("values", []))
    return None


def _attributes(pairs: list[Mapping[str, Any]]) -> dict[str, Any]:
    return {str(p.get("key", "")): any_value(p.get("value")) for p in pairs}


def _severity(record: Mapping[str, Any]) -> str | None:
    text = record.get("severityText")
    if text:
        return str(text)
    number = record.get("severityNumber")
    if isinstance(number, str) and number.startswith(_SEVERITY_PREFIX):
        name = number[len(_SEVERITY_PREFIX) :]
        return None if name == "UNSPECIFIED" else name
    return str(number) if number else None


def log_snapshots(request: Mapping[str, Any]) -> Iterator[LogSnapshot]:
    """Every record of the request that names a span, as a log snapshot."""
    for resource_logs in request.get("resourceLogs", []):
        for scope_logs in resource_logs.get("scopeLogs", []):
            for record in scope_logs.get("logRecords", []):
                trace_id = _id(record.get("traceId"), 32)
                span_id = _id(record.get("spanId"), 16)
                if not trace_id or not span_id:
                    continue
                timestamp = int(record.get("timeUnixNano") or record.get("observedTimeUnixNano") or 0)
                yield (
                    trace_id,
                    span_id,
                    timestamp,
                    record.get("eventName") or None,
                    _severity(record),
                    any_value(record.get("body")),
                    _attributes(record.get("attributes", [])),
                )
