"""One stored span as readers get it: ``SpanRecord``, its JSON columns parsed.

Attributes and events stored apart (schema version 6, ``_store.contents``) are parsed when read,
not when the row is: a long run's model calls each hold the conversation before them, so all of
them parsed at once would hold its square. The reader keeps the last few parsed (``ContentReader``);
what a span means (``view``) is kept once read, and its messages are shared between the calls
(``_spans.view``), so a whole trace is held in proportion to its conversation.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from otel_blackbox._store.contents import STORED_APART_MARK, ContentReader

__all__ = ["SpanRecord"]

# A row's columns that are not fields: its id, and the roots of what is stored apart.
_APART = {"attributes": "attributes_content", "events": "events_content"}
_NOT_FIELDS = frozenset(("id", *_APART.values()))
_JSON_COLUMNS: dict[str, Any] = {
    "attributes": dict,
    "events": list,
    "links": list,
    "resource": dict,
    "scope": dict,
}
T = TypeVar("T")


class _StoredApart:
    """A JSON column kept in ``contents``: where to read it, what it is when it reads as nothing, and
    what the row's own text kept of it (short unindexed members: ``SpanRecord.kept_attributes``)."""

    __slots__ = ("contents", "empty", "kept", "root")

    def __init__(self, contents: ContentReader, root: int, empty: type, kept: Any) -> None:
        self.contents, self.root, self.empty, self.kept = contents, root, empty, kept

    def load(self) -> Any:
        try:
            return self.contents.parsed(self.root) or self.empty()
        except ValueError:  # not JSON: as a hand-edited row's text (from_row)
            text = self.contents.text(self.root)
            return {"blackbox.unreadable": text} if self.empty is dict else self.empty()


def _kept(text: Any, empty: type) -> Any:
    """The row's own text of a column stored apart, parsed, the mark left out."""
    try:
        kept = json.loads(text or "null")
    except ValueError:
        return empty()
    if isinstance(kept, dict):
        kept.pop(STORED_APART_MARK, None)
    return kept if isinstance(kept, empty) else empty()


class _ReadWhenAsked(Generic[T]):
    """A dataclass field whose value may be ``_StoredApart``: parsed each time it is read (the
    reader's cache answers a repeated read), never kept on the record."""

    def __init__(self, empty: type) -> None:
        self.empty = empty

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = f"_{name}_value"

    def __get__(self, obj: object, objtype: type | None = None) -> T:
        if obj is None:
            return None  # type: ignore[return-value]  # the dataclass's default: an empty value
        value = obj.__dict__[self.slot]
        return value.load() if type(value) is _StoredApart else value  # type: ignore[no-any-return]

    def __set__(self, obj: object, value: Any) -> None:
        obj.__dict__[self.slot] = self.empty() if value is None else value


@dataclass
class SpanRecord:
    """One stored span, JSON columns parsed."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    span_kind: str
    oi_span_kind: str | None
    status: str
    status_message: str | None
    start_ns: int
    end_ns: int | None
    duration_ns: int | None
    written_ns: int
    session_id: str | None
    user_id: str | None
    model: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    total_tokens: int | None
    tool_name: str | None
    pid: int | None
    attributes: _ReadWhenAsked[dict[str, Any]] = _ReadWhenAsked(dict)
    events: _ReadWhenAsked[list[dict[str, Any]]] = _ReadWhenAsked(list)
    links: list[dict[str, Any]] = field(default_factory=list)
    resource: dict[str, Any] = field(default_factory=dict)
    scope: dict[str, Any] = field(default_factory=dict)
    # Read, not stored in this row: the log records that carry the span's content (joined by its ids),
    # and what the span means (``_spans.view``), kept once read.
    logs: list[dict[str, Any]] = field(default_factory=list, repr=False, compare=False)
    view: object = field(default=None, repr=False, compare=False)

    @classmethod
    def from_row(
        cls, row: sqlite3.Row | Mapping[str, Any], contents: ContentReader | None = None
    ) -> SpanRecord:
        """From a stored row, or from the column -> value mapping of a row about to be stored;
        attributes and events stored apart (schema version 6) are read through ``contents``."""
        keys = row.keys()
        values = {k: row[k] for k in keys if k not in _NOT_FIELDS}
        for key, empty in _JSON_COLUMNS.items():
            root = row[_APART[key]] if key in _APART and _APART[key] in keys else None
            if root is not None:
                if contents is None:
                    raise ValueError(f"span {values.get('span_id')}: its {key} are stored apart")
                values[key] = _StoredApart(contents, int(root), empty, _kept(values.get(key), empty))
                continue
            try:
                values[key] = json.loads(values[key] or "null") or empty()
            except ValueError:  # a hand-edited row: keep the text visible rather than fail
                values[key] = {"blackbox.unreadable": values[key]} if key == "attributes" else empty()
        return cls(**values)

    @property
    def kept_attributes(self) -> dict[str, Any]:
        """The attributes, or for attributes stored apart what the row's own text kept of them (the
        short members whose key holds no index: model, token counts, the SDK's dropped counts)
        without reading the rest: for a look at those keys across a long run's spans."""
        value = self.__dict__["_attributes_value"]
        return value.kept if type(value) is _StoredApart else self.attributes

    @property
    def exception_events(self) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("name") == "exception"]
