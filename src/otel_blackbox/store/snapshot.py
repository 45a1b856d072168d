"""Turning an SDK span into plain data: what crosses from the agent's interpreter to the writer.

A snapshot is a tuple of ints, strings, dicts and tuples (cheap to build, cheap to pickle), read
on the other side by store.rows. Resources and instrumentation scopes are shared by many spans:
each is sent once, as a definition, and every snapshot refers to it by a small number.

No OpenTelemetry import at run time: the writer process reads snapshots without loading the SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["Definition", "Snapshot", "Snapshotter", "attribute_storage"]

# (trace_id, span_id, parent_span_id | None, name, kind, status | None (open), status_message,
#  start_ns, end_ns | None, attributes, events, links, resource_ref, scope_ref)
# events: ((name, timestamp_ns, attributes), ...); links: ((trace_id, span_id, attributes), ...)
Snapshot = tuple[Any, ...]
# ("resource", ref, attributes) or ("scope", ref, {name, version, schema_url})
Definition = tuple[str, int, dict[str, Any]]

_STATUS_NAMES = {"OK": "ok", "ERROR": "error", "UNSET": "unset"}
_MAX_SHARED = 256  # distinct resources or scopes remembered; past it, numbering starts over


class Snapshotter:
    """Snapshots spans; numbers each resource and scope the first time it is seen."""

    def __init__(self) -> None:
        # Keyed by id() with the object kept alive in the value, so an id is never reused wrongly.
        self._refs: dict[int, tuple[object, int, str]] = {}
        self._next_ref = 0
        self._definitions: list[Definition] = []

    def take_definitions(self) -> list[Definition]:
        """The resources and scopes first seen since the last call (send them before the snapshots)."""
        taken, self._definitions = self._definitions, []
        return taken

    def all_definitions(self) -> list[Definition]:
        """Every resource and scope remembered (for a writer that takes over from another)."""
        self._definitions.clear()
        return [_definition(kind, ref, obj) for obj, ref, kind in self._refs.values()]

    def snapshot(self, span: ReadableSpan, *, is_open: bool) -> Snapshot:
        """The span as plain data. Raises on a span that is not a recordable SDK span."""
        try:
            # The SDK's own fields: each public property is a Python call, and events / links
            # copy their list. This is the agent's interpreter, where every microsecond counts.
            context, parent, name, kind = span._context, span._parent, span._name, span._kind
            start_ns, end_ns, status = span._start_time, span._end_time, span._status
            events, links = span._events, span._links
            resource, scope = span._resource, span._instrumentation_scope
        except AttributeError:  # another ReadableSpan implementation: its public face
            context, parent, name, kind = span.context, span.parent, span.name, span.kind
            start_ns, end_ns, status = span.start_time, span.end_time, span.status
            events, links = span.events, span.links
            resource, scope = span.resource, span.instrumentation_scope
        if context is None:
            raise ValueError(f"span {name!r} has no context")
        storage = attribute_storage(span)
        # A live span's attributes may change on another thread: copy them (dict() of a dict with
        # string keys runs without releasing the GIL). An ended span's never change.
        attributes = storage if isinstance(storage, dict) and not is_open else dict(storage or {})
        if is_open:
            status_name, message, end_ns = None, None, None
        else:
            status_name = _STATUS_NAMES[status.status_code._name_]
            message = status.description
        return (
            context.trace_id,
            context.span_id,
            parent.span_id if parent is not None else None,
            name,
            kind._name_,
            status_name,
            message,
            start_ns,
            end_ns,
            attributes,
            tuple((e.name, e.timestamp, dict(e.attributes or {})) for e in events) if events else (),
            tuple((k.context.trace_id, k.context.span_id, dict(k.attributes or {})) for k in links)
            if links
            else (),
            self._ref("resource", resource),
            self._ref("scope", scope),
        )

    def _ref(self, kind: str, obj: Any) -> int:
        hit = self._refs.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        if len(self._refs) >= _MAX_SHARED:
            self._refs.clear()
        ref = self._next_ref
        self._next_ref += 1
        self._refs[id(obj)] = (obj, ref, kind)
        self._definitions.append(_definition(kind, ref, obj))
        return ref


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
