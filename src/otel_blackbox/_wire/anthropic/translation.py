"""Anthropic Messages (``POST /v1/messages``): the translation, composed of its directions, each a
module of pure functions:

* ``read_request``: a request -> the neutral ``model_input``;
* ``read_response``: a response (JSON or its SSE stream) -> ``model_output``, and its token counts;
* ``write_response``: a ``model_output`` -> a response the SDK accepts, synthesized for replay;
* ``write_request``: a ``model_input`` -> a request, for the built-in agent's rerun;
* ``rewrite_request``: a fork's rewrites of a request (a tool result, a model_input change).

The thinking and hosted tool blocks a request and a response both carry are read and written in
``blocks``, the stop reasons both directions take as the default named in ``stop_reasons``, the
request's field table in ``fields``.
"""

from __future__ import annotations

from typing import Any

from otel_blackbox._types import JsonObject
from otel_blackbox._wire.anthropic import (
    read_request,
    read_response,
    rewrite_request,
    write_request,
    write_response,
)
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.protocol import WireRequest, WireResponse, wire_errors

__all__ = ["AnthropicMessages"]


class AnthropicMessages:
    """The Anthropic Messages API, JSON and streamed."""

    name = "anthropic"

    def handles(self, method: str, path: str) -> bool:
        return method.upper() == "POST" and path.split("?", 1)[0].rstrip("/").endswith("/messages")

    @wire_errors("an Anthropic Messages request")
    def model_input(self, request: JsonObject, ids: CallIds) -> JsonObject:
        return read_request.model_input(request, ids)

    def is_streaming(self, request: JsonObject) -> bool:
        return bool(request.get("stream"))

    @wire_errors("an Anthropic Messages response")
    def model_output(self, body: bytes, *, streamed: bool, ids: CallIds) -> JsonObject:
        return read_response.model_output(body, streamed=streamed, ids=ids)

    @wire_errors("an Anthropic Messages response")
    def usage(self, body: bytes, *, streamed: bool) -> JsonObject | None:
        return read_response.usage(body, streamed=streamed)

    @wire_errors("a model_output to send as an Anthropic Messages response")
    def wire_response(self, output: JsonObject, request: JsonObject) -> WireResponse:
        return write_response.wire_response(output, request, streamed=self.is_streaming(request))

    @wire_errors("a model_input to send as an Anthropic Messages request")
    def wire_request(self, model_input: JsonObject, *, stream: bool, native: bool) -> WireRequest:
        return write_request.anthropic_request(model_input, stream=stream, native=native)

    @wire_errors("an Anthropic Messages request")
    def replace_tool_result(
        self, request: JsonObject, tool_call_id: str, result: Any, *, error: bool = False
    ) -> JsonObject | None:
        return rewrite_request.replace_tool_result(request, tool_call_id, result, error=error)

    @wire_errors("an Anthropic Messages request")
    def edit_request(self, request: JsonObject, kind: str, value: Any) -> JsonObject | None:
        return rewrite_request.edit_request(request, kind, value)
