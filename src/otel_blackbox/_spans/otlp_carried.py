"""What OTLP says of a span that the store has no column for, carried in attributes, so that ``import``
then ``export --format otlp`` (or ``push``) gives it back.

Set by the decoders (``carry``) on the attributes of the span, event or link it belongs to, taken out
again when spans are rebuilt for export (``take``); set only when there is something to say:

* ``blackbox.otlp.trace_state``: the ``traceState`` of a span or a link (W3C tracestate text);
* ``blackbox.otlp.dropped_attributes_count`` (span, event, link), ``blackbox.otlp.dropped_events_count``
  and ``blackbox.otlp.dropped_links_count`` (span): what the sender's SDK had already dropped;
* ``blackbox.otlp.bytes``: where ``bytesValue`` values were, as JSON Pointers (RFC 6901) into the
  attributes (``/key``, ``/key/0``). Stored attributes are JSON, which has no bytes: such a value is
  kept as its base64 text, and this list tells export to send it as bytes again.

No column and no schema change: attributes, as ``blackbox.span.open`` carries an open span through an
export. ``show`` lists them with the span's other attributes. Registered in semconv/registry.yaml.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from otel_blackbox._spans.sdk_limits import ATTR_DROPPED_ATTRIBUTES, ATTR_DROPPED_EVENTS, ATTR_DROPPED_LINKS

__all__ = [
    "ATTR_BYTES",
    "ATTR_DROPPED_ATTRIBUTES",
    "ATTR_DROPPED_EVENTS",
    "ATTR_DROPPED_LINKS",
    "ATTR_TRACE_STATE",
    "Base64Text",
    "Carried",
    "carry",
    "take",
]

ATTR_TRACE_STATE = "blackbox.otlp.trace_state"
ATTR_BYTES = "blackbox.otlp.bytes"
_KEYS = (ATTR_TRACE_STATE, ATTR_DROPPED_ATTRIBUTES, ATTR_DROPPED_EVENTS, ATTR_DROPPED_LINKS, ATTR_BYTES)


class Base64Text(str):
    """The base64 text of a ``bytesValue``, as the decoders read it: ``carry`` finds it by its type."""

    __slots__ = ()


def carry(
    attributes: dict[str, Any],
    *,
    trace_state: str = "",
    dropped_attributes: int = 0,
    dropped_events: int = 0,
    dropped_links: int = 0,
) -> dict[str, Any]:
    """``attributes`` (changed in place) with what OTLP said beside them, and their bytes values marked."""
    pointers: list[str] = []
    for key, value in attributes.items():
        if value.__class__ is Base64Text:
            attributes[key] = str(value)
            pointers.append(_pointer("", key))
        elif isinstance(value, (list, dict)):
            _mark(value, _pointer("", key), pointers)
    if pointers:
        attributes[ATTR_BYTES] = pointers
    if trace_state:
        attributes[ATTR_TRACE_STATE] = trace_state
    for key, count in (
        (ATTR_DROPPED_ATTRIBUTES, dropped_attributes),
        (ATTR_DROPPED_EVENTS, dropped_events),
        (ATTR_DROPPED_LINKS, dropped_links),
    ):
        if count:
            attributes[key] = count
    return attributes


def _pointer(parent: str, key: str | int) -> str:
    return f"{parent}/{str(key).replace('~', '~0').replace('/', '~1')}"


def _mark(container: list[Any] | dict[str, Any], at: str, pointers: list[str]) -> None:
    """Bytes values inside an array or a kvlist: made plain text, their pointers noted."""
    keys: list[Any] = list(container) if isinstance(container, dict) else list(range(len(container)))
    holder: Any = container
    for key in keys:
        value = holder[key]
        if value.__class__ is Base64Text:
            holder[key] = str(value)
            pointers.append(_pointer(at, key))
        elif isinstance(value, (list, dict)):
            _mark(value, _pointer(at, key), pointers)


@dataclass(frozen=True)
class Carried:
    """Stored attributes split again: the span's own (bytes values as bytes) and the OTLP fields."""

    attributes: Mapping[str, Any]
    trace_state: str = ""
    dropped_attributes: int = 0
    dropped_events: int = 0
    dropped_links: int = 0


def take(stored: Mapping[str, Any]) -> Carried:
    """The inverse of ``carry``. What a hand edit or redaction made unreadable is left as it is stored."""
    if not any(key in stored for key in _KEYS):
        return Carried(stored)
    attributes = {k: v for k, v in stored.items() if k not in _KEYS}
    pointers = stored.get(ATTR_BYTES)
    if isinstance(pointers, list) and pointers:
        attributes = copy.deepcopy(attributes)  # nested lists and objects are changed below
        for pointer in pointers:
            if isinstance(pointer, str):
                _as_bytes(attributes, pointer)
    trace_state = stored.get(ATTR_TRACE_STATE)
    return Carried(
        attributes,
        trace_state if isinstance(trace_state, str) else "",
        _count(stored.get(ATTR_DROPPED_ATTRIBUTES)),
        _count(stored.get(ATTR_DROPPED_EVENTS)),
        _count(stored.get(ATTR_DROPPED_LINKS)),
    )


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _as_bytes(attributes: dict[str, Any], pointer: str) -> None:
    """The base64 text at ``pointer`` decoded in place; nothing when it is not there or not base64
    (redacted, or bounded into a truncation marker)."""
    holder: Any = None
    index: Any = None
    value: Any = attributes
    for part in pointer.split("/")[1:]:
        key = part.replace("~1", "/").replace("~0", "~")
        if isinstance(value, dict) and key in value:
            holder, index = value, key
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            holder, index = value, int(key)
        else:
            return
        value = holder[index]
    if holder is not None and isinstance(value, str):
        with contextlib.suppress(binascii.Error, ValueError):
            holder[index] = base64.b64decode(value, validate=True)
