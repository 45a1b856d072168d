"""OpenTelemetry log records as plain data, and the rows of the ``logs`` table built from them.

A log snapshot is taken on the caller's thread (``snapshot_log``: a few attribute reads and a dict
copy, no serialization); the row is built where the writer runs (``LogRowBuilder``): the body and
the attributes redacted and bounded as a span's attributes are (the same Redactor, the same
max_attribute_bytes, the same limit on a row's JSON), then written as JSON.

No OpenTelemetry import at run time: a record is read by its attributes' names.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from typing import Any

from otel_blackbox._spans.redact import TRUNCATION_KEY, Redactor
from otel_blackbox._store.rows import attributes_json_within, dumps, span_bytes_limit
from otel_blackbox._store.snapshot import LARGE_TEXT, attributes_bytes

__all__ = [
    "LOG_COLUMNS",
    "LogRowBuilder",
    "LogSnapshot",
    "log_queued_bytes",
    "snapshot_log",
]

# (trace_id, span_id, timestamp_ns, event_name, severity, body, attributes): ids as ints, the body
# as the record holds it (any OTel AnyValue), the attributes a dict copied from the record.
LogSnapshot = tuple[Any, ...]
TRACE_ID, SPAN_ID, TIMESTAMP_NS, EVENT_NAME, SEVERITY, BODY, ATTRIBUTES = range(7)

# Columns written for each record, in the order of the row tuples built here.
LOG_COLUMNS: tuple[str, ...] = (
    "trace_id", "span_id", "timestamp_ns", "event_name", "severity", "body", "attributes", "pid",
    "written_ns",
)  # fmt: skip

_RECORD_BYTES = 400  # a queued snapshot beyond its strings: the tuple, the ids, the dict
_MAX_DEPTH = 32  # nested bodies deeper than this are stored as text


def snapshot_log(record: Any) -> LogSnapshot | None:
    """The plain data of an SDK log record (a ReadWriteLogRecord / ReadableLogRecord, or the
    LogRecord it wraps); None when it carries no span context (not stored, counted as skipped)."""
    inner = getattr(record, "log_record", record)
    trace_id = inner.trace_id or 0
    span_id = inner.span_id or 0
    if not trace_id or not span_id:
        return None
    timestamp = inner.timestamp or inner.observed_timestamp or 0
    severity = inner.severity_text
    if not severity and inner.severity_number is not None:
        severity = getattr(inner.severity_number, "name", None) or str(inner.severity_number)
    attributes = inner.attributes
    return (
        trace_id,
        span_id,
        timestamp,
        getattr(inner, "event_name", None) or None,
        severity or None,
        inner.body,
        dict(attributes) if attributes else {},
    )


def log_queued_bytes(snapshot: LogSnapshot) -> int:
    """An estimate of the memory a queued log snapshot keeps alive (bounds the processor's queue)."""
    return _RECORD_BYTES + _value_bytes(snapshot[BODY], 0) + attributes_bytes(snapshot[ATTRIBUTES])


def _value_bytes(value: Any, depth: int) -> int:
    if isinstance(value, (str, bytes)):
        return len(value) if len(value) < LARGE_TEXT else len(value) * 2
    if depth > _MAX_DEPTH:
        return 64
    if isinstance(value, Mapping):
        return sum(80 + len(str(k)) + _value_bytes(v, depth + 1) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return sum(16 + _value_bytes(v, depth + 1) for v in value)
    return 32


class LogRowBuilder:
    """Builds ``logs`` row tuples (in LOG_COLUMNS order) from log snapshots."""

    def __init__(self, redactor: Redactor, pid: int) -> None:
        self.redactor = redactor
        self.pid = pid
        self.max_row_bytes = span_bytes_limit(redactor.max_bytes)

    def row(self, snapshot: LogSnapshot, written_ns: int) -> tuple[Any, ...]:
        trace_id, span_id, timestamp, event_name, severity, body, attributes = snapshot
        cleaned = {str(k): self.clean(str(k), v, 0) for k, v in attributes.items()}
        return (
            format(trace_id, "032x"),
            format(span_id, "016x"),
            timestamp or written_ns,
            self._text(event_name),
            self._text(severity),
            self._body_json(self.clean(None, body, 0)),
            attributes_json_within(cleaned, self.max_row_bytes),
            self.pid,
            written_ns,
        )

    def clean(self, key: str | None, value: Any, depth: int) -> Any:
        """A value redacted and bounded as a span attribute's is, at every depth: a secret's name
        masks its value whole; each string is bounded (a truncation marker past
        max_attribute_bytes) and masked; bytes are kept as base64 text."""
        redactor = self.redactor
        if key is not None and redactor.is_secret_field(key):
            return "[REDACTED]"
        if isinstance(value, (bool, int, float)) or value is None:
            return value if type(value) is not int else redactor.number(value)
        if isinstance(value, bytes):
            value = base64.b64encode(value).decode("ascii")
        if isinstance(value, str):
            return redactor.redact_text(redactor.bounded(value))
        if depth > _MAX_DEPTH:
            return redactor.redact_text(redactor.bounded(dumps(value)))
        if isinstance(value, Mapping):
            return {str(k): self.clean(str(k), v, depth + 1) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.clean(None, v, depth + 1) for v in value]
        return redactor.redact_text(redactor.bounded(str(value)))

    def _text(self, text: str | None) -> str | None:
        if text is None:
            return None
        cleaned = self.clean(None, str(text), 0)
        return str(cleaned)

    def _body_json(self, body: Any) -> str:
        """The body as JSON, within the row limit: past it, one truncation marker for the whole."""
        text = dumps(body)
        if len(text) * 4 <= self.max_row_bytes:
            return text
        raw = text.encode("utf-8", "surrogatepass")
        if len(raw) <= self.max_row_bytes:
            return text
        return dumps(
            {
                TRUNCATION_KEY: True,
                "original_bytes": len(raw),
                "sha256": hashlib.sha256(raw).hexdigest(),
                "head": text[:1024],
            }
        )
