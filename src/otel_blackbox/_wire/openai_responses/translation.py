"""OpenAI Responses (``POST .../responses``): the translation, composed of its directions, each a
module of pure functions:

* ``read_request``: a request -> the neutral ``model_input``;
* ``read_response``: a response (JSON or its event stream) -> ``model_output``, and its token counts;
* ``write_response``: a ``model_output`` -> a response the SDK accepts, synthesized for replay (its
  event stream in ``events``);
* ``write_request``: a ``model_input`` -> a request, for the built-in agent's rerun;
* ``rewrite_request``: a fork's rewrites of a request (a tool result, a model_input change).

The items a request and a response both carry are read and written in ``items``, an incomplete
response's reason named in ``stop_reasons``, the request's field table in ``fields``; the pieces
shared with ``openai_chat`` are in ``_wire/neutral_parts.py``.
"""

from __future__ import annotations

from typing import Any

from otel_blackbox._types import JsonObject
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.openai_responses import (
    read_request,
    read_response,
    rewrite_request,
    write_request,
    write_response,
)
from otel_blackbox._wire.protocol import WireRequest, WireResponse, wire_errors

__all__ = ["OpenAIResponses"]


class OpenAIResponses:
    """The OpenAI Responses API, JSON and streamed."""

    name = "openai-responses"

    def handles(self, method: str, path: str) -> bool:
        return method.upper() == "POST" and path.split("?", 1)[0].rstrip("/").endswith("/responses")

    @wire_errors("an OpenAI Responses API request")
    def model_input(self, request: JsonObject, ids: CallIds) -> JsonObject:
        return read_request.model_input(request, ids)

    def is_streaming(self, request: JsonObject) -> bool:
        return bool(request.get("stream"))

    @wire_errors("an OpenAI Responses API response")
    def model_output(self, body: bytes, *, streamed: bool, ids: CallIds) -> JsonObject:
        return read_response.model_output(body, streamed=streamed, ids=ids)

    @wire_errors("an OpenAI Responses API response")
    def usage(self, body: bytes, *, streamed: bool) -> JsonObject | None:
        return read_response.usage(body, streamed=streamed)

    @wire_errors("a model_output to send as an OpenAI Responses API response")
    def wire_response(self, output: JsonObject, request: JsonObject) -> WireResponse:
        return write_response.wire_response(output, request, streamed=self.is_streaming(request))

    @wire_errors("a model_input to send as an OpenAI Responses API request")
    def wire_request(self, model_input: JsonObject, *, stream: bool, native: bool) -> WireRequest:
        return write_request.responses_request(model_input, stream=stream, native=native)

    @wire_errors("an OpenAI Responses API request")
    def replace_tool_result(
        self, request: JsonObject, tool_call_id: str, result: Any, *, error: bool = False
    ) -> JsonObject | None:
        return rewrite_request.replace_tool_result(request, tool_call_id, result, error=error)

    @wire_errors("an OpenAI Responses API request")
    def edit_request(self, request: JsonObject, kind: str, value: Any) -> JsonObject | None:
        return rewrite_request.edit_request(request, kind, value)
