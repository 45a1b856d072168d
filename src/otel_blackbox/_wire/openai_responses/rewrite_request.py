"""A fork's rewrite of an OpenAI Responses API request (``replace_tool_result``): the ``output`` of
the ``function_call_output`` items whose ``call_id`` is the id is replaced; a string stays a string,
a list of parts becomes one ``input_text`` part. A string ``input`` holds no results.
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
        return [i for i in objects_of(body.get("input")) if _is_output_of(i, tool_call_id)]

    def rewrite(item: JsonObject) -> None:
        item["output"] = replaced_content(item.get("output"), result, "input_text")

    return rewritten(request, targets, rewrite)


def _is_output_of(item: JsonObject, tool_call_id: str) -> bool:
    return item.get("type") == "function_call_output" and str(item.get("call_id", "")) == tool_call_id
