"""While a session runs, watch the program's spans end, whatever TracerProvider the program uses.

A recording takes a tool round's results from the program's OpenInference TOOL spans when it has
them (what the tool really returned, or the exception it raised), else from the tool results of the
next model request (``watch``). A stubbing session marks the spans of the tools it answered just
before they end (``mark_before_end``). The SDK's ``Span.end`` is wrapped only while either is on.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from openinference.semconv.trace import OpenInferenceSpanKindValues, SpanAttributes
from opentelemetry.sdk.trace import Span
from opentelemetry.trace import StatusCode

from otel_blackbox._cassette.tool_output import tool_output

__all__ = ["ToolRun", "mark_before_end", "stop_marking", "unwatch", "watch"]


@dataclass(frozen=True)
class ToolRun:
    name: str
    result: Any = None
    error: str | None = None


_lock = threading.Lock()
_original_end: Callable[..., None] | None = None
_listener: Callable[[ToolRun], None] | None = None
_marker: Callable[[Span], None] | None = None  # sets attributes on a span about to end


def _run_of(span: Span) -> ToolRun | None:
    attributes = span.attributes or {}
    if attributes.get(SpanAttributes.OPENINFERENCE_SPAN_KIND) != OpenInferenceSpanKindValues.TOOL.value:
        return None
    name = str(attributes.get(SpanAttributes.TOOL_NAME) or span.name)
    if span.status.status_code is StatusCode.ERROR:
        exception = next((e for e in span.events if e.name == "exception"), None)
        details = (exception.attributes or {}) if exception else {}
        if details:
            return ToolRun(
                name,
                error=f"{details.get('exception.type', 'Error')}: {details.get('exception.message', '')}",
            )
        return ToolRun(name, error=span.status.description or "error")
    return ToolRun(name, result=tool_output(attributes.get(SpanAttributes.OUTPUT_VALUE, "")))


def _end(self: Span, end_time: int | None = None) -> None:
    assert _original_end is not None
    marker = _marker
    if marker is not None and self.is_recording():
        with contextlib.suppress(Exception):  # marking must never break the program's span handling
            marker(self)
    _original_end(self, end_time)
    listener = _listener
    if listener is not None:
        try:
            run = _run_of(self)
            if run is not None:
                listener(run)
        except Exception:  # watching must never break the program's own span handling
            pass


def _wrap_end() -> None:
    global _original_end
    if _original_end is None:
        _original_end = Span.end
        Span.end = _end  # type: ignore[method-assign]


def watch(listener: Callable[[ToolRun], None]) -> None:
    global _listener
    with _lock:
        _wrap_end()
        _listener = listener


def mark_before_end(marker: Callable[[Span], None]) -> None:
    global _marker
    with _lock:
        _wrap_end()
        _marker = marker


def stop_marking() -> None:
    """Stop marking spans; ``Span.end`` is restored unless a recording still watches."""
    global _marker
    with _lock:
        _marker = None
        if _listener is None:
            _restore_end()


def unwatch() -> None:
    """Stop both watches, and restore ``Span.end``."""
    global _listener, _marker
    with _lock:
        _listener = None
        _marker = None
        _restore_end()


def _restore_end() -> None:
    global _original_end
    if _original_end is not None and Span.end is _end:
        Span.end = _original_end  # type: ignore[method-assign]
        _original_end = None
