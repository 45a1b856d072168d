"""A fork's rewrite of a Gemini ``generateContent`` request (``replace_tool_result``): the ``response``
of the ``functionResponse`` parts that answer the id (numbered as ``model_input`` numbers them: by the
ids the request carries, else in order) is replaced. The replacement goes under ``result`` /
``output`` where the agent sent that field alone, under ``result`` where it sent a lone ``error``
(the replacement is a success), else as a rerun writes a result (``write_request.response_of``: an
object, or JSON text of one, is the response itself, anything else ``{result: replacement}``).
"""

from __future__ import annotations

import copy
from typing import Any

from otel_blackbox._spans.messages import FUNCTION_OUTPUT_FIELDS
from otel_blackbox._types import JsonObject
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.gemini.contents import fields, read_contents
from otel_blackbox._wire.gemini.write_request import response_of
from otel_blackbox._wire.protocol import rewritten

__all__ = ["replace_tool_result"]


def replace_tool_result(request: JsonObject, tool_call_id: str, result: Any) -> JsonObject | None:
    """The request with the result for ``tool_call_id`` replaced (``Provider.replace_tool_result``)."""

    def targets(body: JsonObject) -> list[JsonObject]:
        _, answered = read_contents(fields(body, "the request").get("contents"), CallIds())
        return [response for response, call_id in answered if call_id == tool_call_id]

    def rewrite(response: JsonObject) -> None:
        # A copy each time: the new request shares nothing with the caller's value either.
        response["response"] = _replaced(response.get("response"), copy.deepcopy(result))

    return rewritten(request, targets, rewrite)


def _replaced(sent: Any, result: Any) -> JsonObject:
    """A functionResponse's ``response`` carrying ``result``, in the shape the agent used."""
    if isinstance(sent, dict) and len(sent) == 1:
        key = next(iter(sent))
        if key in FUNCTION_OUTPUT_FIELDS:
            return {key: result}
        if key == "error":
            return {"result": result}  # the replacement is a successful result
    return response_of(result)
