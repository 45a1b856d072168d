"""A fork's rewrites of an OpenAI Chat Completions request.

``replace_tool_result``: the ``content`` of the ``tool`` messages whose ``tool_call_id`` is the id is
replaced; a string stays a string, a list of parts becomes one ``text`` part. An error is its text,
as the built-in agent sends one (``write_request.result_content``): Chat has no mark for it.

``edit_request`` (``protocol.edited_request``): the system prompt is the leading ``system`` /
``developer`` messages, made one message of the first's role (a ``system`` message first when there
is none); a user message is a ``user`` message (tool results are ``tool`` messages); a tool is a
``{type: function, function: {name, description, parameters}}``.
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

_SYSTEM_ROLES = ("system", "developer")
_MESSAGES = list_field("messages")


def replace_tool_result(
    request: JsonObject, tool_call_id: str, result: Any, *, error: bool = False
) -> JsonObject | None:
    """The request with the result for ``tool_call_id`` replaced (``Provider.replace_tool_result``)."""

    def targets(body: JsonObject) -> list[JsonObject]:
        return [m for m in objects_of(body.get("messages")) if _is_tool_message(m, tool_call_id)]

    def rewrite(message: JsonObject) -> None:
        message["content"] = replaced_content(message.get("content"), result, "text")

    return rewritten(request, targets, rewrite)


def edit_request(request: JsonObject, kind: str, value: Any) -> JsonObject | None:
    """The request with a model_input change made (``Provider.edit_request``)."""
    return edited_request(request, kind, value, _SHAPE)


def _is_tool_message(message: JsonObject, tool_call_id: str) -> bool:
    return message.get("role") == "tool" and str(message.get("tool_call_id", "")) == tool_call_id


def _system(body: JsonObject, text: str) -> None:
    messages = _MESSAGES(body)
    leading = 0
    while leading < len(messages) and isinstance(messages[leading], dict):
        if messages[leading].get("role") not in _SYSTEM_ROLES:
            break
        leading += 1
    first = messages[0] if leading else {"role": "system"}
    messages[:leading] = [{**first, "content": text}]


def _functions(body: JsonObject) -> list[JsonObject]:
    return [t["function"] for t in objects_of(body.get("tools")) if isinstance(t.get("function"), dict)]


_SHAPE = RequestShape(
    conversation=_MESSAGES,
    said=lambda message: message.get("role") == "user",
    saying=content_saying,
    system=_system,
    functions=_functions,
    schema_keys=("parameters",),
)
