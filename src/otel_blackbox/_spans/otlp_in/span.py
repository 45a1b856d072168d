"""What decoding OTLP in either encoding shares: the error that names the field that is wrong, and a
decoded span made the store's snapshot fields. A span with no end is open, and so is a span
``export`` wrote with ``blackbox.span.open = true`` (it ended there only to be exportable): a round
trip gives back what was recorded."""

from __future__ import annotations

from typing import Any

from otel_blackbox._spans.semconv import ATTR_SPAN_OPEN

__all__ = ["KINDS", "MAX_DEPTH", "STATUSES", "OtlpError", "Span", "finish"]

KINDS = ("INTERNAL", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")  # 0 is UNSPECIFIED
STATUSES = ("unset", "ok", "error")
MAX_DEPTH = 64  # nested arrays / kvlists in one attribute value


class OtlpError(ValueError):
    """Input that is not OTLP: the message starts with the path of the field that is wrong."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}" if where else message)
        self.where = where


# A span before its resource and scope are known: the snapshot's fields, and when it was last seen
# if `export` ended it only to export it.
Span = tuple[tuple[Any, ...], int | None]


def finish(
    trace_id: int, span_id: int, parent: int | None, name: str, kind: str, status: str, message: str | None,
    start_ns: int, end_ns: int, attributes: dict[str, Any], events: tuple[Any, ...], links: tuple[Any, ...],
    path: str,
) -> Span:  # fmt: skip
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
