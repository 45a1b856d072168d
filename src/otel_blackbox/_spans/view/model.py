"""What a span means, whatever convention wrote it: one neutral view.

A convention's reader (``otel_blackbox._spans.conventions``) fills a ``Reading`` with what it found
on a span; the registry merges the readings of every reader in its order into the span's
``SpanView`` (the first reader to find a field gives it). Nothing here knows an attribute name.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from otel_blackbox._spans.messages import Message

__all__ = ["KINDS", "Reading", "SpanView", "Tokens", "ToolUse"]

# The kinds a view tells apart (OpenInference's words, which `show` prints): an agent, a model call,
# a tool, or another step (CHAIN, EMBEDDING, RETRIEVER... as the span says).
KINDS = ("AGENT", "LLM", "TOOL")


@dataclass(frozen=True)
class Tokens:
    """A model call's token counts: ``input`` includes the cached tokens, ``output`` the reasoning
    ones (the conventions agree on both); None where the span did not say."""

    input: int | None = None
    output: int | None = None
    total: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None
    reasoning: int | None = None

    @property
    def counted(self) -> bool:
        return self.input is not None or self.output is not None

    @property
    def sum(self) -> int | None:
        """The total the span gave, else input plus output (None when it counted nothing)."""
        if self.total is not None:
            return self.total
        return (self.input or 0) + (self.output or 0) if self.counted else None


@dataclass(frozen=True)
class ToolUse:
    """What a tool span says of its call: the tool's name, the arguments (JSON text or a value, as
    recorded), what it returned (unwrapped from a framework's envelope) and its error."""

    name: str | None = None
    arguments: Any = None
    result: Any = None
    error: str | None = None


@dataclass
class Reading:
    """What one convention's reader found on a span; None (or empty) where it found nothing."""

    kind: str | None = None
    name: str | None = None  # the name to show, when the span's own is a template
    model: str | None = None
    provider: str | None = None
    system: str | None = None
    input_messages: list[Message] = field(default_factory=list)
    output_messages: list[Message] = field(default_factory=list)
    input_text: str | None = None  # the input as one text (OpenInference's input.value), when no messages
    output_text: str | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    tool: ToolUse | None = None
    tokens: Tokens | None = None
    finish_reasons: list[str] = field(default_factory=list)
    # Not a model call though the span is marked LLM (it made none), with why.
    not_a_call: str | None = None
    # The span is a model call whose content its instrumentation did not record: what turns it on.
    no_content: str | None = None


_MERGED = tuple(f.name for f in fields(Reading))


def _filled(first: Any, second: Any) -> Any:
    """``first`` (a ToolUse, Tokens) with the fields it lacks taken from ``second``."""
    missing = {
        f.name: getattr(second, f.name)
        for f in fields(first)
        if getattr(first, f.name) is None and getattr(second, f.name) is not None
    }
    return replace(first, **missing) if missing else first


@dataclass
class SpanView(Reading):
    """The merged readings of a span (a tool use and token counts field by field), with the readers
    that gave something and, for a model call another span already describes, that span's id
    (``same_call_as``: count and show it once)."""

    readers: tuple[str, ...] = ()
    same_call_as: str | None = None

    @classmethod
    def merged(cls, readings: list[tuple[str, Reading]]) -> SpanView:
        view = cls()
        used: list[str] = []
        for reader, reading in readings:
            gave = False
            for name in _MERGED:
                value, current = getattr(reading, name), getattr(view, name)
                if isinstance(value, (ToolUse, Tokens)) and isinstance(current, type(value)):
                    value = _filled(current, value)  # a tool's or a call's parts, field by field
                    if value is current:
                        continue
                elif value is None or value == [] or current not in (None, []):
                    continue
                setattr(view, name, value)
                gave = True
            if gave:
                used.append(reader)
        if view.not_a_call is not None and view.kind == "LLM":
            view.kind = None
        if view.has_content:  # one reader's "nothing recorded" is answered by another's content
            view.no_content = None
        view.readers = tuple(used)
        return view

    @property
    def is_model_call(self) -> bool:
        return self.kind == "LLM"

    @property
    def is_tool(self) -> bool:
        return self.kind == "TOOL" or (self.tool is not None and self.tool.name is not None)

    @property
    def has_content(self) -> bool:
        return bool(self.input_messages or self.output_messages or self.input_text or self.output_text)

    @property
    def counts(self) -> bool:
        """A model call whose tokens and cost count: not a repeat of another span's call."""
        return self.is_model_call and self.same_call_as is None
