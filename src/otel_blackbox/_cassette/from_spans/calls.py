"""Tool-call ids in the cassette's order, and tool arguments read from their JSON text.

Provider ids become ``call-0, call-1, ...`` in the order the model produced them (the wire
translations' ``CallIds``, so a call without an id is numbered as a replay numbers it); a history's
calls are matched with the calls the model made; a captured payload's ids are numbered anew. Ids
never enter a payload otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from otel_blackbox._spans.messages import Message, ToolCall
from otel_blackbox._wire.call_ids import CallIds, call_signature


def json_or_text(value: Any) -> Any:
    """Tool arguments arrive as JSON text; keep the parsed value, or the text when it is not JSON."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


@dataclass
class CallNumbering:
    """Provider tool-call ids -> neutral ids, numbered in the order the model produced them (the
    wire translations' ``CallIds``, so a call without an id is numbered as a replay numbers it),
    and the tool name of each."""

    ids: CallIds = field(default_factory=CallIds)
    names: dict[str, str] = field(default_factory=dict)

    def id_for(self, provider_id: str | None, name: str | None) -> str:
        neutral = self.ids.neutral(provider_id or f"anonymous-{self.ids.next_index()}")
        if name:
            self.names[neutral] = name
        return neutral

    def made(self, call: ToolCall) -> str:
        """A call in a model's answer."""
        neutral = self.ids.made_call(_signature(call), call.tool_call_id)
        self.names[neutral] = call.tool_name or "unknown"
        return neutral

    def in_history(self, messages: list[Message]) -> Iterator[str]:
        """The ids of a request's history calls, in order (matched with the calls the model made)."""
        history = [call for message in messages for call in message.tool_calls]
        found = self.ids.in_history([(_signature(call), call.tool_call_id or None) for call in history])
        for call, neutral in zip(history, found, strict=True):
            self.names[neutral] = call.tool_name or "unknown"
        return iter(found)


def _signature(call: ToolCall) -> str:
    return call_signature(call.tool_name or "unknown", json_or_text(call.tool_input))


def renumbered(payload: Any, calls: CallNumbering) -> Any:
    """A captured payload's ids (the recording process's ``call-N``, counted over all its runs)
    renumbered in this cassette's order, as a replay will number them."""
    if isinstance(payload, list):
        return [renumbered(item, calls) for item in payload]
    if not isinstance(payload, dict):
        return payload
    out = {key: renumbered(value, calls) for key, value in payload.items()}
    if isinstance(payload.get("toolCallId"), str):
        name = payload.get("toolName")
        # Prefixed: CallIds keeps a "call-N" as it is, and these must be numbered anew.
        captured = f"captured\x00{payload['toolCallId']}"
        out["toolCallId"] = calls.id_for(captured, name if isinstance(name, str) else None)
    return out
