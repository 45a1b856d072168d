"""A fork's rewrites of a Gemini ``generateContent`` request.

``replace_tool_result``: the ``response`` of the ``functionResponse`` parts that answer the id
(numbered as ``model_input`` numbers them: by the ids the request carries, else in order) is
replaced. The replacement goes under ``result`` / ``output`` where the agent sent that field alone,
under ``result`` where it sent a lone ``error`` (the replacement is a success), else as a rerun
writes a result (``write_request.response_of``: an object, or JSON text of one, is the response
itself, anything else ``{result: replacement}``). An error is ``{error: text}``, as the built-in
agent sends one (``write_request``).

``edit_request`` (``protocol.edited_request``): the system prompt is ``systemInstruction``'s one
text part; a user message is a ``user`` content (or one with no role) that holds no
``functionResponse``, its text one text part; a tool is a function declaration of ``tools``, its
schema ``parametersJsonSchema`` (JSON Schema, as every change's is).
"""

from __future__ import annotations

import copy
from typing import Any

from otel_blackbox._spans.messages import FUNCTION_OUTPUT_FIELDS
from otel_blackbox._types import JsonObject
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.gemini.contents import fields, read_contents
from otel_blackbox._wire.gemini.write_request import response_of
from otel_blackbox._wire.neutral_parts import objects_of
from otel_blackbox._wire.protocol import RequestShape, edited_request, list_field, rewritten

__all__ = ["edit_request", "replace_tool_result"]


def replace_tool_result(
    request: JsonObject, tool_call_id: str, result: Any, *, error: bool = False
) -> JsonObject | None:
    """The request with the result for ``tool_call_id`` replaced (``Provider.replace_tool_result``)."""

    def targets(body: JsonObject) -> list[JsonObject]:
        _, answered = read_contents(fields(body, "the request").get("contents"), CallIds())
        return [response for response, call_id in answered if call_id == tool_call_id]

    def rewrite(response: JsonObject) -> None:
        # A copy each time: the new request shares nothing with the caller's value either.
        if error:
            response["response"] = {"error": str(result)}
        else:
            response["response"] = _replaced(response.get("response"), copy.deepcopy(result))

    return rewritten(request, targets, rewrite)


def edit_request(request: JsonObject, kind: str, value: Any) -> JsonObject | None:
    """The request with a model_input change made (``Provider.edit_request``)."""
    return edited_request(request, kind, value, _SHAPE)


def _replaced(sent: Any, result: Any) -> JsonObject:
    """A functionResponse's ``response`` carrying ``result``, in the shape the agent used."""
    if isinstance(sent, dict) and len(sent) == 1:
        key = next(iter(sent))
        if key in FUNCTION_OUTPUT_FIELDS:
            return {key: result}
        if key == "error":
            return {"result": result}  # the replacement is a successful result
    return response_of(result)


def _said(content: JsonObject) -> bool:
    """A user's content: not the function responses of a tool round."""
    return content.get("role", "user") == "user" and not any(
        "functionResponse" in p for p in objects_of(content.get("parts"))
    )


def _saying(content: JsonObject | None, text: str) -> JsonObject:
    return {**(content or {"role": "user"}), "parts": [{"text": text}]}


def _system(body: JsonObject, text: str) -> None:
    given = body.get("systemInstruction")
    body["systemInstruction"] = {**(given if isinstance(given, dict) else {}), "parts": [{"text": text}]}


def _functions(body: JsonObject) -> list[JsonObject]:
    return [d for t in objects_of(body.get("tools")) for d in objects_of(t.get("functionDeclarations"))]


_SHAPE = RequestShape(
    conversation=list_field("contents"),
    said=_said,
    saying=_saying,
    system=_system,
    functions=_functions,
    schema_keys=("parametersJsonSchema", "parameters"),
)
