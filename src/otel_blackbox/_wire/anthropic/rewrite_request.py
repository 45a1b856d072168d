"""A fork's rewrites of an Anthropic Messages request.

``replace_tool_result``: the ``content`` of the ``tool_result`` blocks whose ``tool_use_id`` is the
id is replaced; a string (or no content) becomes the string, a list of blocks one ``text`` block.
A result removes ``is_error``: it normalizes to a ``result``, never an ``error``; an error sets it,
as the built-in agent sends one (``write_request``). The block's other fields (``cache_control``...)
stay as sent.

``edit_request`` (``protocol.edited_request``): the system prompt is ``system`` (a string, or one
text block keeping the first block's other fields where the agent sent blocks); a user message is a
``user`` message that holds no ``tool_result`` block; a tool is a ``{name, description,
input_schema}`` (a server tool, which has a ``type``, is left as it is).
"""

from __future__ import annotations

from typing import Any

from otel_blackbox._types import JsonObject
from otel_blackbox._wire.neutral_parts import objects_of
from otel_blackbox._wire.protocol import (
    RequestShape,
    content_saying,
    edited_request,
    list_field,
    replaced_content,
    rewritten,
)

__all__ = ["edit_request", "replace_tool_result"]


def replace_tool_result(
    request: JsonObject, tool_call_id: str, result: Any, *, error: bool = False
) -> JsonObject | None:
    """The request with the result for ``tool_call_id`` replaced (``Provider.replace_tool_result``)."""

    def targets(body: JsonObject) -> list[JsonObject]:
        return [b for b in _blocks(body) if _is_result_for(b, tool_call_id)]

    def rewrite(block: JsonObject) -> None:
        block["content"] = replaced_content(block.get("content"), result, "text")
        if error:
            block["is_error"] = True
        else:
            block.pop("is_error", None)  # the replacement is a successful result

    return rewritten(request, targets, rewrite)


def edit_request(request: JsonObject, kind: str, value: Any) -> JsonObject | None:
    """The request with a model_input change made (``Provider.edit_request``)."""
    return edited_request(request, kind, value, _SHAPE)


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


def _said(message: JsonObject) -> bool:
    """A user's message: not the results of a tool round."""
    return message.get("role") == "user" and not any(
        b.get("type") == "tool_result" for b in objects_of(message.get("content"))
    )


def _system(body: JsonObject, text: str) -> None:
    blocks = objects_of(body.get("system"))
    body["system"] = [{**blocks[0], "type": "text", "text": text}] if blocks else text


def _functions(body: JsonObject) -> list[JsonObject]:
    return [t for t in objects_of(body.get("tools")) if t.get("type") in (None, "custom")]


_SHAPE = RequestShape(
    conversation=list_field("messages"),
    said=_said,
    saying=content_saying,
    system=_system,
    functions=_functions,
    schema_keys=("input_schema",),
)
