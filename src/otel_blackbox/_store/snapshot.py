"""Turning an SDK span into plain data: what crosses from the agent's interpreter to the writer.

A snapshot is a tuple of ints, strings, dicts and tuples (cheap to build, cheap to pickle), read
on the other side by store.rows. Resources and instrumentation scopes are shared by many spans:
each is sent once, as a definition, and every snapshot refers to it by a small number.

No OpenTelemetry import at run time: the writer process reads snapshots without loading the SDK.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from otel_blackbox._spans.sdk_limits import (
    ATTR_DROPPED_ATTRIBUTES,
    ATTR_DROPPED_EVENTS,
    ATTR_DROPPED_LINKS,
    SdkCut,
)

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = [
    "ATTRIBUTES",
    "DEFERRED_SPAN_BYTES",
    "END_NS",
    "EVENTS",
    "NAME",
    "SPAN_ID",
    "START_NS",
    "STATUS",
    "TRACE_ID",
    "Definition",
    "Snapshot",
    "Snapshotter",
    "attribute_storage",
    "attributes_bytes",
    "queued_bytes",
]

# (trace_id, span_id, parent_span_id | None, name, kind, status | None (open), status_message,
#  start_ns, end_ns | None, attributes, events, links, resource_ref, scope_ref)
# events: ((name, timestamp_ns, attributes), ...); links: ((trace_id, span_id, attributes), ...)
# A plain tuple (a NamedTuple costs a Python call to build on the agent's thread): its fields are
# read by these names, never by a bare number.
Snapshot = tuple[Any, ...]
(
    TRACE_ID, SPAN_ID, PARENT_ID, NAME, KIND, STATUS, STATUS_MESSAGE, START_NS, END_NS, ATTRIBUTES,
    EVENTS, LINKS, RESOURCE_REF, SCOPE_REF,
) = range(14)  # fmt: skip
# ("resource", ref, attributes) or ("scope", ref, {name, version, schema_url})
Definition = tuple[str, int, dict[str, Any]]

logger = logging.getLogger("otel_blackbox")

_STATUS_NAMES = {"OK": "ok", "ERROR": "error", "UNSET": "unset"}
_MAX_SHARED = 256  # distinct resources or scopes remembered; past it, numbering starts over
_NOTHING = object()


class Snapshotter:
    """Snapshots spans; numbers each resource and scope the first time it is seen.

    Safe to call from several threads at once (the processor snapshots each span on the thread that
    ends it): a span's resource and scope are nearly always the last ones seen, read lock-free from
    one (object, ref) pair; a new one is numbered under a lock.
    """

    def __init__(self) -> None:
        # Keyed by id() with the object kept alive in the value, so an id is never reused wrongly.
        self._refs: dict[int, tuple[object, int, str]] = {}
        self._next_ref = 0
        self._definitions: list[Definition] = []
        self._lock = threading.Lock()
        self._last_resource: tuple[object, int] = (_NOTHING, -1)
        self._last_scope: tuple[object, int] = (_NOTHING, -1)

    def take_definitions(self) -> list[Definition]:
        """The resources and scopes first seen since the last call (send them before the snapshots
        taken before this call)."""
        with self._lock:
            taken, self._definitions = self._definitions, []
        return taken

    def all_definitions(self) -> list[Definition]:
        """Every resource and scope remembered (for a writer that takes over from another)."""
        with self._lock:
            self._definitions.clear()
            return [_definition(kind, ref, obj) for obj, ref, kind in self._refs.values()]

    def snapshot(self, span: ReadableSpan, *, is_open: bool) -> Snapshot:
        """The span as plain data. Raises on a span that is not a recordable SDK span."""
        try:
            # The SDK's own fields: each public property is a Python call, and events / links
            # copy their list. This runs on the agent's threads, where every microsecond counts.
            context, parent, name, kind = span._context, span._parent, span._name, span._kind
            start_ns, end_ns, status = span._start_time, span._end_time, span._status
            events, links = span._events, span._links
            resource, scope = span._resource, span._instrumentation_scope
            bounded = span._attributes
            storage = bounded._dict  # type: ignore[union-attr]  # AttributeError below if not
            # What the SDK's span limits dropped: a plain int field of BoundedAttributes (the events'
            # and links' counts are read below, only when there are events or links).
            cut = bounded.dropped  # type: ignore[union-attr]
        except AttributeError:  # another ReadableSpan implementation: its public face
            context, parent, name, kind = span.context, span.parent, span.name, span.kind
            start_ns, end_ns, status = span.start_time, span.end_time, span.status
            events, links = span.events, span.links
            resource, scope = span.resource, span.instrumentation_scope
            storage = attribute_storage(span)
            cut = 1  # the counts below, read through the public properties
        if context is None:
            raise ValueError(f"span {name!r} has no context")
        # A live span's attributes may change on another thread: copy them (dict() of a dict with
        # string keys runs without releasing the GIL). An ended span's never change.
        attributes = storage if not is_open and storage.__class__ is dict else dict(storage or {})
        event_items = tuple((e.name, e.timestamp, dict(e.attributes or {})) for e in events) if events else ()
        link_items = (
            tuple((k.context.trace_id, k.context.span_id, dict(k.attributes or {})) for k in links)
            if links
            else ()
        )
        if (
            cut
            or (event_items and getattr(events, "dropped", 0))
            or (link_items and getattr(links, "dropped", 0))
        ):
            attributes = _with_sdk_counts(span, attributes)  # rare: the SDK cut the span
        if is_open:
            status_name, message, end_ns = None, None, None
        else:
            try:
                status_name, message = _STATUS_NAMES[status._status_code._name_], status._description
            except AttributeError:
                status_name, message = _STATUS_NAMES[status.status_code._name_], status.description
        last = self._last_resource
        resource_ref = last[1] if last[0] is resource else self._ref("resource", resource)
        last = self._last_scope
        scope_ref = last[1] if last[0] is scope else self._ref("scope", scope)
        return (
            context[0],  # SpanContext is a tuple: (trace_id, span_id, ...); its properties cost a call
            context[1],
            parent[1] if parent is not None else None,
            name,
            kind._name_,
            status_name,
            message,
            start_ns,
            end_ns,
            attributes,
            event_items,
            link_items,
            resource_ref,
            scope_ref,
        )

    def _ref(self, kind: str, obj: Any) -> int:
        with self._lock:
            hit = self._refs.get(id(obj))
            if hit is not None and hit[0] is obj:
                ref = hit[1]
            else:
                if len(self._refs) >= _MAX_SHARED:
                    self._refs.clear()
                ref = self._next_ref
                self._next_ref += 1
                self._refs[id(obj)] = (obj, ref, kind)
                self._definitions.append(_definition(kind, ref, obj))
            if kind == "resource":
                self._last_resource = (obj, ref)
            else:
                self._last_scope = (obj, ref)
            return ref


_warned_cut = False  # once per process: the first cut span says it, never each one


def _with_sdk_counts(span: Any, attributes: dict[str, Any]) -> dict[str, Any]:
    """The attributes with what the SDK's span limits dropped, first (so the writer's own size limit
    never leaves the counts out); a new dict: the SDK's own is never changed. Warns once."""
    found = SdkCut(
        _sdk_count(span, "dropped_attributes"),
        _sdk_count(span, "dropped_events"),
        _sdk_count(span, "dropped_links"),
    )
    if not found:
        return attributes
    counts = {
        key: n
        for key, n in (
            (ATTR_DROPPED_ATTRIBUTES, found.attributes),
            (ATTR_DROPPED_EVENTS, found.events),
            (ATTR_DROPPED_LINKS, found.links),
        )
        if n
    }
    global _warned_cut
    if not _warned_cut:
        _warned_cut = True
        with contextlib.suppress(Exception):  # a broken log handler of the host's: never raised
            logger.warning(
                "otel-blackbox: span %r was cut by the OpenTelemetry SDK's span limits (%s, the oldest "
                "first; said once, every such span is marked): %s",
                getattr(span, "name", "?"),
                found.counts(),
                found.settings(),
            )
    return {**counts, **attributes}


def _sdk_count(span: Any, name: str) -> int:
    try:
        value = getattr(span, name, 0)
    except Exception:  # a ReadableSpan of another kind whose property fails
        return 0
    return value if isinstance(value, int) and value > 0 else 0


def _definition(kind: str, ref: int, obj: Any) -> Definition:
    if kind == "resource":
        data: dict[str, Any] = dict(obj.attributes) if obj is not None else {}
    else:
        data = {"name": obj.name, "version": obj.version, "schema_url": obj.schema_url} if obj else {}
    return (kind, ref, data)


def attribute_storage(span: Any) -> Mapping[str, Any] | None:
    """The span's attributes, read from the SDK's own dict where it has one.

    ``span.attributes`` is a read-only proxy over BoundedAttributes, whose every lookup takes a
    lock; its backing dict gives the same items several times faster. Any other shape falls back
    to the public property.
    """
    storage = getattr(getattr(span, "_attributes", None), "_dict", None)
    return storage if isinstance(storage, dict) else span.attributes


# What a queued snapshot holds beyond its strings, from tracemalloc over 10,000 held snapshots of
# SDK 1.45 spans on CPython 3.11: 465 bytes with no attributes (the tuples, ids, times, an empty
# dict, the queue's slot), 897 with one 200-character value and a name of its own, 851 with
# bench_recorder's five attributes. The estimate is within a few tens of per cent of those, mostly
# above. A whole SDK span (what the queue held before) measured 2,850.
SNAPSHOT_BYTES = 550
ENTRY_BYTES = 80  # an attribute: its dict slot, its value object (its text counted apart)
EVENT_BYTES = 300  # an event or a link: its tuple, its attributes dict
DEFERRED_SPAN_BYTES = 3000  # a whole SDK span left for the shipper to snapshot
LARGE_TEXT = 1024  # past this, a string's real size (a non-ASCII one takes 2 or 4 bytes a character)


def queued_bytes(snapshot: Snapshot) -> int:
    """An estimate of the memory a queued snapshot keeps alive: what bounds the processor's queue.

    Strings are counted by their length (their real size past LARGE_TEXT), everything else by the
    measured averages above: one pass over the attribute values, on the agent's thread.
    """
    size = SNAPSHOT_BYTES + len(snapshot[NAME]) + attributes_bytes(snapshot[ATTRIBUTES])
    if snapshot[STATUS_MESSAGE]:
        size += len(snapshot[STATUS_MESSAGE])
    if snapshot[EVENTS] or snapshot[LINKS]:
        for item in (*snapshot[EVENTS], *snapshot[LINKS]):
            size += EVENT_BYTES + attributes_bytes(item[2])
    return size


def attributes_bytes(attributes: Mapping[str, Any]) -> int:
    """The estimate of queued_bytes for one attributes mapping (a span's, an event's, a link's)."""
    size = ENTRY_BYTES * len(attributes)
    for value in attributes.values():
        if isinstance(value, str):
            size += len(value) if len(value) < LARGE_TEXT else sys.getsizeof(value)
        elif isinstance(value, tuple):
            size += _sequence_bytes(value)
    return size


def _sequence_bytes(values: tuple[Any, ...]) -> int:
    return 8 * len(values) + sum(sys.getsizeof(v) if isinstance(v, str) else 32 for v in values)
