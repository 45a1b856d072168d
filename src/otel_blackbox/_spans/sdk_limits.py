"""What the OpenTelemetry SDK's span limits cut from a span, and the setting that lifts each limit.

The SDK keeps 128 attributes, 128 events and 128 links a span by default and drops the oldest
beyond that (OpenInference's flattened messages pass 128 attributes after about 40 messages),
counting what it dropped on the span. The counts are stored in the span's attributes under the
keys OTLP import already uses for the same numbers (``_spans/otlp_carried.py``), so a span recorded
in process and one received over OTLP say it alike, and ``export --format otlp`` sends them back as
``droppedAttributesCount`` / ``droppedEventsCount`` / ``droppedLinksCount``.

``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT`` cuts values without counting anything: nothing here can see it.
Pure: no OpenTelemetry import (the recorder's snapshot reads these keys on the agent's thread).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from otel_blackbox._store.queries import SpanRecord

__all__ = [
    "ATTRIBUTES_SETTING",
    "ATTR_DROPPED_ATTRIBUTES",
    "ATTR_DROPPED_EVENTS",
    "ATTR_DROPPED_LINKS",
    "EVENTS_SETTING",
    "GLOBAL_ATTRIBUTES_SETTING",
    "LINKS_SETTING",
    "SdkCut",
    "cut_summary",
    "sdk_cut",
]

# The stored keys (OTLP import writes the same: _spans/otlp_carried.py). Kept here, not there: the
# recorder's own path reads them on the agent's thread and never loads the OTLP modules.
ATTR_DROPPED_ATTRIBUTES = "blackbox.otlp.dropped_attributes_count"
ATTR_DROPPED_EVENTS = "blackbox.otlp.dropped_events_count"
ATTR_DROPPED_LINKS = "blackbox.otlp.dropped_links_count"

# The settings, as the OpenTelemetry specification names them (every SDK reads them); the span's own
# attribute limit wins over the global one, which also bounds events' and links' attributes.
ATTRIBUTES_SETTING = "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT"
GLOBAL_ATTRIBUTES_SETTING = "OTEL_ATTRIBUTE_COUNT_LIMIT"
EVENTS_SETTING = "OTEL_SPAN_EVENT_COUNT_LIMIT"
LINKS_SETTING = "OTEL_SPAN_LINK_COUNT_LIMIT"


_KEYS = (ATTR_DROPPED_ATTRIBUTES, ATTR_DROPPED_EVENTS, ATTR_DROPPED_LINKS)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


@dataclass(frozen=True)
class SdkCut:
    """How many attributes, events and links the sender's SDK dropped from one span (or several)."""

    attributes: int = 0
    events: int = 0
    links: int = 0

    def __bool__(self) -> bool:
        return bool(self.attributes or self.events or self.links)

    def __add__(self, other: SdkCut) -> SdkCut:
        return SdkCut(
            self.attributes + other.attributes, self.events + other.events, self.links + other.links
        )

    def counts(self) -> str:
        """``212 attributes, 3 events dropped``."""
        parts = [
            f"{n} {noun if n == 1 else noun + 's'}"
            for n, noun in ((self.attributes, "attribute"), (self.events, "event"), (self.links, "link"))
            if n
        ]
        return ", ".join(parts) + " dropped"

    def settings(self) -> str:
        """What lifts the limits that cut: ``raise OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT (or ...)``."""
        names = []
        if self.attributes:
            names.append(f"{ATTRIBUTES_SETTING} (or {GLOBAL_ATTRIBUTES_SETTING})")
        if self.events:
            names.append(EVENTS_SETTING)
        if self.links:
            names.append(LINKS_SETTING)
        return "raise " + ", ".join(names)

    def text(self) -> str:
        """One line for a span: what was dropped, the oldest first, and what lifts the limit."""
        return f"cut by the OpenTelemetry SDK's span limits: {self.counts()} (the oldest); {self.settings()}"

    def json(self) -> dict[str, Any]:
        return {
            "attributes_dropped": self.attributes,
            "events_dropped": self.events,
            "links_dropped": self.links,
            "note": self.text(),
        }


def sdk_cut(attributes: Mapping[str, Any]) -> SdkCut:
    """What the SDK dropped from the span with these stored attributes (false when nothing)."""
    if not any(key in attributes for key in _KEYS):
        return _NONE
    return SdkCut(
        _count(attributes.get(ATTR_DROPPED_ATTRIBUTES)),
        _count(attributes.get(ATTR_DROPPED_EVENTS)),
        _count(attributes.get(ATTR_DROPPED_LINKS)),
    )


_NONE = SdkCut()


def cut_summary(spans: Iterable[SpanRecord]) -> str | None:
    """One line for a trace or a run: how many spans the SDK's limits cut, what they lost in all and
    what lifts the limits (None when none was cut)."""
    total, cut = _NONE, 0
    for span in spans:
        found = sdk_cut(span.kept_attributes)
        if found:
            total, cut = total + found, cut + 1
    if not cut:
        return None
    noun = "span" if cut == 1 else "spans"
    return f"{cut} {noun} cut by the OpenTelemetry SDK's span limits ({total.counts()}): {total.settings()}"
