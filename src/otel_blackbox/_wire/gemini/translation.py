"""Google Gemini ``generateContent`` (``POST .../models/MODEL:generateContent``, and
``:streamGenerateContent``): the translation, composed of its directions, each a module of pure
functions:

* ``read_request``: a request -> the neutral ``model_input``;
* ``read_response``: a response (JSON, or its stream) -> ``model_output``, and its token counts;
* ``write_response``: a ``model_output`` -> a response the SDK accepts, synthesized for replay;
* ``write_request``: a ``model_input`` -> a request body, for the built-in agent's rerun;
* ``rewrite_request``: a fork's rewrites of a request (a function response, a model_input change).

The URL names the model (``/v1beta/models/gemini-2.5-flash:...``, ``/v1/...``, Vertex AI's
``.../publishers/google/models/NAME:...``) and whether the answer streams (SSE with ``alt=sse``, else
one JSON array): ``registry.provider_for`` hands out the translation bound to the request's URL
(``at``); ``url_with_model`` renames the model for ``rerun --model``.

A request's ``contents`` and a model turn's parts, which a response's candidates hold too, are read
in ``contents``; the request's field tables and the candidate fields that report hosted tools are in
``fields``, the ``stopReason`` of a blocked prompt in ``stop_reasons``.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from otel_blackbox._types import JsonObject
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.gemini import (
    read_request,
    read_response,
    rewrite_request,
    write_request,
    write_response,
)
from otel_blackbox._wire.protocol import WireRequest, WireResponse, wire_errors

__all__ = ["GeminiGenerateContent"]

_ENDPOINT = re.compile(r"/(models|tunedModels)/([^/:]+):(generateContent|streamGenerateContent)$")


class GeminiGenerateContent:
    """The Gemini API's generateContent, JSON and streamed; ``at(url)`` for a request's own URL."""

    name = "gemini"

    def __init__(self, url: str = "") -> None:
        self.url = url

    def at(self, url: str) -> GeminiGenerateContent:
        return GeminiGenerateContent(url)

    def handles(self, method: str, path: str) -> bool:
        return method.upper() == "POST" and _ENDPOINT.search(path.split("?", 1)[0]) is not None

    @property
    def model(self) -> str | None:
        """The model the URL names (``gemini-2.5-flash``; ``tunedModels/NAME`` for a tuned one)."""
        match = _ENDPOINT.search(urlsplit(self.url).path)
        if match is None:
            return None
        return match[2] if match[1] == "models" else f"{match[1]}/{match[2]}"

    def url_with_model(self, model: str) -> str:
        """This request's URL naming ``model`` instead (``rerun --model``)."""
        parts = urlsplit(self.url)
        match = _ENDPOINT.search(parts.path)
        if match is None:
            return self.url
        path = parts.path[: match.start(2)] + model.removeprefix("models/") + parts.path[match.end(2) :]
        return urlunsplit(parts._replace(path=path))

    @wire_errors("a Gemini generateContent request")
    def model_input(self, request: JsonObject, ids: CallIds) -> JsonObject:
        return read_request.model_input(request, ids, self.model)

    def is_streaming(self, request: JsonObject) -> bool:
        return urlsplit(self.url).path.endswith(":streamGenerateContent")

    @wire_errors("a Gemini generateContent response")
    def model_output(self, body: bytes, *, streamed: bool, ids: CallIds) -> JsonObject:
        return read_response.model_output(body, streamed=streamed, ids=ids)

    @wire_errors("a Gemini generateContent response")
    def usage(self, body: bytes, *, streamed: bool) -> JsonObject | None:
        return read_response.usage(body, streamed=streamed)

    @wire_errors("a model_output to send as a Gemini generateContent response")
    def wire_response(self, output: JsonObject, request: JsonObject) -> WireResponse:
        streamed = self.is_streaming(request)
        return write_response.wire_response(output, model=self.model, url=self.url, streamed=streamed)

    @wire_errors("a model_input to send as a Gemini generateContent request")
    def wire_request(self, model_input: JsonObject, *, stream: bool, native: bool) -> WireRequest:
        return write_request.gemini_request(model_input, native=native)  # the URL says whether it streams

    @wire_errors("a Gemini generateContent request")
    def replace_tool_result(
        self, request: JsonObject, tool_call_id: str, result: Any, *, error: bool = False
    ) -> JsonObject | None:
        return rewrite_request.replace_tool_result(request, tool_call_id, result, error=error)

    @wire_errors("a Gemini generateContent request")
    def edit_request(self, request: JsonObject, kind: str, value: Any) -> JsonObject | None:
        return rewrite_request.edit_request(request, kind, value)
