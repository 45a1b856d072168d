"""Turning a span snapshot (store.snapshot) into the row written to the spans table.

Runs in the writer (the writer process, or the writer thread): serialization, redaction and column
mapping all happen here, never on the caller's thread.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from otel_blackbox._spans.redact import Redactor
from otel_blackbox._spans.semconv import columns_from_attributes
from otel_blackbox._store.snapshot import Definition, Snapshot, Snapshotter

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = [
    "ATTR_DROPPED",
    "ATTR_DROPPED_BYTES",
    "MAX_NAME_CHARS",
    "RowBuilder",
    "attributes_json_within",
    "dumps",
    "span_bytes_limit",
]

_STATUSES = frozenset(("ok", "error", "unset"))
_MAX_SHARED = 1024  # resources and scopes kept by number; past it, the oldest is forgotten

# A span's attributes together are stored in at most this many bytes of JSON: the larger of 4 MiB and
# 16 values at max_attribute_bytes. Past it, the attributes that do not fit are left out and counted
# in these two (10,000 attributes of 8 KB would otherwise make one 80 MB row).
_MIN_SPAN_BYTES = 4 * 1024 * 1024
_SPAN_BYTES_PER_VALUE = 16
ATTR_DROPPED = "blackbox.attributes.dropped"
ATTR_DROPPED_BYTES = "blackbox.attributes.dropped_bytes"
# The same limit holds for a span's events and for its links, each; what is left out is counted in
# these, set on the stored attributes.
_LEFT_OUT_KEYS = {
    "events": ("blackbox.events.dropped", "blackbox.events.dropped_bytes"),
    "links": ("blackbox.links.dropped", "blackbox.links.dropped_bytes"),
}
_SURROGATE = re.compile("[\ud800-\udfff]")
# A span name longer than this is cut here, with a plain-text mark (a status message over
# max_attribute_bytes, at a quarter of it in characters): no real name is this long.
MAX_NAME_CHARS = 1024


def span_bytes_limit(max_attribute_bytes: int) -> int:
    return max(_MIN_SPAN_BYTES, _SPAN_BYTES_PER_VALUE * max_attribute_bytes)


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _valid_utf8(text: str) -> str:
    """A lone surrogate (Python text can hold one; UTF-8 cannot) becomes U+FFFD: SQLite refuses the
    whole statement otherwise, and with it every span of the batch."""
    if not text.isascii():
        try:
            text.encode("utf-8")  # several times faster than a regex search when there is none
        except UnicodeEncodeError:
            return _SURROGATE.sub("\ufffd", text)
    return text


def _finite(value: Any) -> Any:
    """NaN and infinities are not JSON: keep them as strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


# One encoder for every row: json.dumps with options builds a new encoder on each call.
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str).encode


def _json(value: Any) -> str:
    try:
        return _ENCODE(value)
    except ValueError:
        return _ENCODE(_finite(value))


def dumps(value: Any) -> str:
    """Compact JSON that SQLite's json functions accept (no NaN, valid UTF-8); odd objects become strings."""
    return _valid_utf8(_json(value))


def attributes_json_within(attributes: dict[str, Any], max_bytes: int) -> str:
    """Attributes as JSON, within ``max_bytes``: in order, those that fit, and the counts of the rest."""
    text = _json(attributes)
    if len(text) * 4 <= max_bytes or _utf8_len(text) <= max_bytes:
        return text
    kept: dict[str, Any] = {}
    used, dropped, dropped_bytes = 2, 0, 0
    budget = max_bytes - 100  # room for the two counts
    for key, value in attributes.items():
        size = _utf8_len(dumps(key)) + _utf8_len(dumps(value)) + 2  # "key":value,
        if used + size <= budget:
            kept[key] = value
            used += size
        else:
            dropped += 1
            dropped_bytes += size
    kept[ATTR_DROPPED] = dropped
    kept[ATTR_DROPPED_BYTES] = dropped_bytes
    return _json(kept)


class RowBuilder:
    """Builds row tuples (in SPAN_COLUMNS order) from span snapshots (store.snapshot).

    Resources and scopes arrive once, as definitions; their redacted JSON is kept by number.
    """

    def __init__(self, redactor: Redactor, pid: int) -> None:
        self.redactor = redactor
        self.pid = pid
        self.max_span_bytes = span_bytes_limit(redactor.max_bytes)
        self._shared: dict[tuple[str, int], str] = {}
        self._snapshotter: Snapshotter | None = None  # for span_row(): one-off rows of SDK spans

    def define(self, definition: Definition) -> None:
        """Remember a resource's or scope's JSON (redacted) under its number."""
        kind, ref, data = definition
        if len(self._shared) >= _MAX_SHARED:
            del self._shared[next(iter(self._shared))]  # the oldest: dicts keep insertion order
        values = self._attributes(data) if kind == "resource" else data
        self._shared[(kind, ref)] = dumps(values)

    def span_row(self, span: ReadableSpan, written_ns: int, *, is_open: bool) -> tuple[Any, ...]:
        """The row of an SDK span, here and now (for exporters that hold no writer)."""
        if self._snapshotter is None:
            self._snapshotter = Snapshotter()
        snapshot = self._snapshotter.snapshot(span, is_open=is_open)
        for definition in self._snapshotter.take_definitions():
            self.define(definition)
        return self.row(snapshot, written_ns)

    def _attributes(self, attributes: Mapping[str, Any] | None) -> dict[str, Any]:
        # A live span's attributes may change on another thread while we copy them: retry.
        for _ in range(3):
            try:
                return self.redactor.attributes(attributes)
            except RuntimeError:
                continue
        return {}

    def _text(self, text: str, max_chars: int) -> str:
        """A span name or status message: redacted, valid UTF-8, and cut to ``max_chars`` characters
        when longer, ending then in a plain-text mark (never the JSON marker of an attribute value:
        a name is shown as text, in `list`, the tree, the report)."""
        if len(text) <= max_chars:
            return _valid_utf8(self.redactor.redact_text(text))
        mark = f"… [truncated: {len(text):,} characters]"
        return _valid_utf8(self.redactor.redact_text(text[:max_chars])) + mark

    def _message(self, text: str) -> str:
        """A status message: cut (``_text``) only when over max_attribute_bytes of UTF-8."""
        limit = self.redactor.max_bytes
        if len(text) * 4 <= limit or _utf8_len(text) <= limit:
            return self._text(text, len(text))
        return self._text(text, limit // 4)

    def row(self, snapshot: Snapshot, written_ns: int) -> tuple[Any, ...]:
        """The row of a snapshot: an open row when the snapshot was taken of a live span."""
        (
            trace_id, span_id, parent_id, name, kind, status, message, start_ns, end_ns,
            raw_attributes, events, links, resource_ref, scope_ref,
        ) = snapshot  # fmt: skip
        if not isinstance(name, str) or not isinstance(kind, str):
            raise TypeError(f"not a span snapshot: name {name!r}, kind {kind!r}")
        left_out: dict[str, int] = {}  # what of the events and links did not fit
        events_json = self._events_json(events, left_out) if events else "[]"
        links_json = self._links_json(links, left_out) if links else "[]"
        attributes = self._attributes(raw_attributes)
        if left_out:  # first, so that the attributes' own limit cannot leave them out
            attributes = {**left_out, **attributes}
        attributes_json = attributes_json_within(attributes, self.max_span_bytes)
        columns = columns_from_attributes(attributes)
        valid = _valid_utf8(attributes_json)
        if valid is not attributes_json:  # rare: the columns hold attribute values, fix them too
            attributes_json = valid
            columns = {k: _valid_utf8(v) if isinstance(v, str) else v for k, v in columns.items()}
        start_ns = start_ns or written_ns
        if status is None:
            status, message = "open", None
        else:
            status = status if status in _STATUSES else "unset"
        return (
            format(trace_id, "032x"),
            format(span_id, "016x"),
            format(parent_id, "016x") if parent_id is not None else None,
            self._text(name, MAX_NAME_CHARS),
            kind,
            columns["oi_span_kind"],
            status,
            self._message(message) if message else None,
            start_ns,
            end_ns,
            None if end_ns is None else end_ns - start_ns,
            written_ns,
            columns["session_id"],
            columns["user_id"],
            columns["model"],
            columns["prompt_tokens"],
            columns["completion_tokens"],
            columns["total_tokens"],
            columns["tool_name"],
            self.pid,
            attributes_json,
            events_json,
            links_json,
            self._shared.get(("resource", resource_ref), "{}"),
            self._shared.get(("scope", scope_ref), "{}"),
        )

    def _events_json(self, events: Sequence[tuple[Any, ...]], left_out: dict[str, int]) -> str:
        items = [
            {"name": name, "timestamp_ns": timestamp, "attributes": self._attributes(attributes)}
            for name, timestamp, attributes in events
        ]
        return self._bounded_list_json(items, "events", left_out)

    def _links_json(self, links: Sequence[tuple[Any, ...]], left_out: dict[str, int]) -> str:
        items = [
            {
                "trace_id": format(trace_id, "032x"),
                "span_id": format(span_id, "016x"),
                "attributes": self._attributes(attributes),
            }
            for trace_id, span_id, attributes in links
        ]
        return self._bounded_list_json(items, "links", left_out)

    def _bounded_list_json(self, items: list[dict[str, Any]], part: str, left_out: dict[str, int]) -> str:
        """A JSON list within max_span_bytes: in order, the items that fit; the rest counted in left_out."""
        text = dumps(items)
        if len(text) * 4 <= self.max_span_bytes or _utf8_len(text) <= self.max_span_bytes:
            return text
        kept: list[str] = []
        used, dropped, dropped_bytes = 2, 0, 0
        for item in items:
            piece = dumps(item)
            size = _utf8_len(piece) + 1  # and its comma
            if used + size <= self.max_span_bytes:
                kept.append(piece)
                used += size
            else:
                dropped += 1
                dropped_bytes += size
        count_key, bytes_key = _LEFT_OUT_KEYS[part]
        left_out[count_key], left_out[bytes_key] = dropped, dropped_bytes
        return "[" + ",".join(kept) + "]"
