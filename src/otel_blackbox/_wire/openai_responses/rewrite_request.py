"""A fork's rewrites of an OpenAI Responses API request.

``replace_tool_result``: the ``output`` of the ``function_call_output`` items whose ``call_id`` is
the id is replaced; a string stays a string, a list of parts becomes one ``input_text`` part. A
string ``input`` holds no results. An error is its text, as the built-in agent sends one: the API
has no mark for it.

``edit_request`` (``protocol.edited_request``): the system prompt is ``instructions`` (the leading
``system`` / ``developer`` messages of ``input`` removed), or, where the agent sent those messages
and no ``instructions``, one message of the first's role; a user message is a ``user`` message item
(a string ``input`` is one); a tool is a ``{type: function, name, description, parameters}``.
"""

from __future__ import annotations

from typing import Any

from otel_blackbox._types import JsonObject
from otel_blackbox._wire.neutral_parts import objects_of
from otel_blackbox._wire.protocol import (
    RequestShape,
    content_saying,
    edited_request,
    replaced_content,
    rewritten,
)

__all__ = ["edit_request", "replace_tool_result"]

_SYSTEM_ROLES = ("system", "developer")


def replace_tool_result(
    request: JsonObject, tool_call_id: str, result: Any, *, error: bool = False
) -> JsonObject | None:
    """The request with the result for ``tool_call_id`` replaced (``Provider.replace_tool_result``)."""

    def targets(body: JsonObject) -> list[JsonObject]:
        return [i for i in objects_of(body.get("input")) if _is_output_of(i, tool_call_id)]

    def rewrite(item: JsonObject) -> None:
        item["output"] = replaced_content(item.get("output"), result, "input_text")

    return rewritten(request, targets, rewrite)


def edit_request(request: JsonObject, kind: str, value: Any) -> JsonObject | None:
    """The request with a model_input change made (``Provider.edit_request``)."""
    return edited_request(request, kind, value, _SHAPE)


def _is_output_of(item: JsonObject, tool_call_id: str) -> bool:
    return item.get("type") == "function_call_output" and str(item.get("call_id", "")) == tool_call_id


def _items(body: JsonObject) -> list[Any]:
    given = body.get("input")
    if isinstance(given, str):  # the user's one message
        body["input"] = [{"role": "user", "content": given}]
    elif not isinstance(given, list):
        body["input"] = []
    items: list[Any] = body["input"]
    return items


def _is_message(item: Any, roles: tuple[str, ...]) -> bool:
    return isinstance(item, dict) and item.get("type", "message") == "message" and item.get("role") in roles


def _system(body: JsonObject, text: str) -> None:
    items = _items(body)
    leading = 0
    while leading < len(items) and _is_message(items[leading], _SYSTEM_ROLES):
        leading += 1
    if leading and not isinstance(body.get("instructions"), str):
        items[:leading] = [{**items[0], "content": text}]
    else:
        del items[:leading]
        body["instructions"] = text


def _functions(body: JsonObject) -> list[JsonObject]:
    return [t for t in objects_of(body.get("tools")) if t.get("type") == "function"]


_SHAPE = RequestShape(
    conversation=_items,
    said=lambda item: _is_message(item, ("user",)),
    saying=content_saying,
    system=_system,
    functions=_functions,
    schema_keys=("parameters",),
)
