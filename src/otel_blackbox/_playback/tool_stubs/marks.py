"""``blackbox.tool.stubbed = true`` on the span of each tool invocation a stubbing session answered.

The framework's own tool span still happens; it is marked. When that span is the current one while
the tool is answered (pydantic-ai's, a program's own), it is marked at once; otherwise (the Agents
SDK's spans reach OpenTelemetry through OpenInference's processor, never made current) the
invocation waits, by tool name and canonical arguments, for the first tool span of that tool to
end, and that span is marked just before it ends.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import Span

from otel_blackbox._cassette.canonical import canonical_or_none
from otel_blackbox._playback import tool_spans
from otel_blackbox._spans.semconv import ATTR_TOOL_STUBBED

__all__ = ["start", "stop", "stubbed"]

_MAX_WAITING = 1024  # invocations whose span never ends (a tool without one) are forgotten, oldest first
_lock = threading.Lock()
_waiting: list[tuple[str, str | None]] = []  # (tool name, canonical arguments), oldest first


def start() -> None:
    """Mark tool spans from now on (until ``stop``)."""
    with _lock:
        _waiting.clear()
    tool_spans.mark_before_end(_mark)


def stop() -> None:
    with _lock:
        _waiting.clear()
    tool_spans.stop_marking()


def stubbed(name: str, arguments: Any) -> None:
    """An invocation of ``name`` was answered from the recording: mark its span."""
    current = trace.get_current_span()
    if isinstance(current, Span) and current.is_recording() and _tool_name(current) == name:
        current.set_attribute(ATTR_TOOL_STUBBED, True)
        return
    with _lock:
        _waiting.append((name, canonical_or_none(arguments)))
        del _waiting[:-_MAX_WAITING]


def _mark(span: Span) -> None:
    if not _waiting:
        return
    name = _tool_name(span)
    attributes = span.attributes or {}
    if name is None or attributes.get(ATTR_TOOL_STUBBED):
        return
    arguments = _arguments_of(attributes)
    with _lock:
        for position, (waiting_name, waiting_arguments) in enumerate(_waiting):
            if waiting_name == name and (arguments is None or waiting_arguments in (None, arguments)):
                del _waiting[position]
                span.set_attribute(ATTR_TOOL_STUBBED, True)
                return


def _tool_name(span: Span) -> str | None:
    """The tool a span runs, if it is a tool span (OpenInference TOOL, or gen_ai execute_tool)."""
    attributes = span.attributes or {}
    if attributes.get("openinference.span.kind") == "TOOL":
        return str(attributes.get("tool.name") or span.name)
    name = attributes.get("gen_ai.tool.name")
    if name is not None and attributes.get("gen_ai.operation.name", "execute_tool") == "execute_tool":
        return str(name)
    return None


def _arguments_of(attributes: Any) -> str | None:
    """The span's tool arguments as canonical JSON, when it records them as a JSON object."""
    for key in ("input.value", "gen_ai.tool.call.arguments", "tool_arguments"):
        text = attributes.get(key)
        if isinstance(text, str):
            try:
                value = json.loads(text)
            except ValueError:
                continue
            if isinstance(value, dict):
                return canonical_or_none(value)
    return None
