"""A fork's rewrite of an OpenAI Chat Completions request (``replace_tool_result``): the ``content``
of the ``tool`` messages whose ``tool_call_id`` is the id is replaced; a string stays a string, a list
of parts becomes one ``text`` part.
"""

from __future__ import annotations

from typing import Any

from otel_blackbox._types import JsonObject
from otel_blackbox._wire.neutral_parts import objects_of
from otel_blackbox._wire.protocol import replaced_content, rewritten

__all__ = ["replace_tool_result"]


def replace_tool_result(request: JsonObject, tool_call_id: str, result: Any) -> JsonObject | None:
    """The request with the result for ``tool_call_id`` replaced (``Provider.replace_tool_result``)."""

    def targets(body: JsonObject) -> list[JsonObject]:
        return [m for m in objects_of(body.get("messages")) if _is_tool_message(m, tool_call_id)]

    def rewrite(message: JsonObject) -> None:
        message["content"] = replaced_content(message.get("content"), result, "text")

    return rewritten(request, targets, rewrite)


def _is_tool_message(message: JsonObject, tool_call_id: str) -> bool:
    return message.get("role") == "tool" and str(message.get("tool_call_id", "")) == tool_call_id
