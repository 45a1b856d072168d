"""A fork's rewrite of an Anthropic Messages request (``replace_tool_result``): the ``content`` of the
``tool_result`` blocks whose ``tool_use_id`` is the id is replaced; a string (or no content) becomes
the string, a list of blocks one ``text`` block. It also removes ``is_error``: the replacement is a
successful result, so it normalizes to a ``result``, never an ``error``. The block's other fields
(``cache_control``...) stay as sent.
"""

from __future__ import annotations

from typing import Any

from otel_blackbox._types import JsonObject
from otel_blackbox._wire.protocol import replaced_content, rewritten

__all__ = ["replace_tool_result"]


def replace_tool_result(request: JsonObject, tool_call_id: str, result: Any) -> JsonObject | None:
    """The request with the result for ``tool_call_id`` replaced (``Provider.replace_tool_result``)."""

    def targets(body: JsonObject) -> list[JsonObject]:
        return [b for b in _blocks(body) if _is_result_for(b, tool_call_id)]

    def rewrite(block: JsonObject) -> None:
        block["content"] = replaced_content(block.get("content"), result, "text")
        block.pop("is_error", None)  # the replacement is a successful result

    return rewritten(request, targets, rewrite)


def _blocks(request: JsonObject) -> list[JsonObject]:
    """Every content block of every message that has block content."""
    messages = request.get("messages")
    return [
        block
        for message in (messages if isinstance(messages, list) else [])
        if isinstance(message, dict) and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict)
    ]


def _is_result_for(block: JsonObject, tool_call_id: str) -> bool:
    return block.get("type") == "tool_result" and str(block.get("tool_use_id")) == tool_call_id
