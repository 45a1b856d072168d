"""What HTTP capture stored, read back as cassette payloads (analysis side: pure, no I/O).

A ``blackbox.http`` span (capture.py, ``OTEL_BLACKBOX_CAPTURE_HTTP``) holds one wire exchange. These
functions turn its stored attributes into the payloads a recorded session writes, so a cassette
built from spans can take its model steps and its other exchanges from the wire:

* ``captured_exchange``: the ``metadata`` payload of event ``http_exchange``, as sessions.py
  ``_record_exchange`` writes it;
* ``captured_model_call``: the neutral ``model_input`` and ``model_output`` payloads.

A value the writer truncated (past ``max_attribute_bytes``) cannot be replayed: both return None
for a span holding one where they need it. An exchange a session served rather than the network
(``blackbox.http.replayed``) is returned like any other; ``captured_replayed`` tells it apart.
"""

from __future__ import annotations

import json
from typing import Any

from otel_blackbox._spans.redact import TRUNCATION_KEY
from otel_blackbox._spans.semconv import (
    ATTR_HTTP_METHOD,
    ATTR_HTTP_REPLAYED,
    ATTR_HTTP_REQUEST_BODY,
    ATTR_HTTP_REQUEST_BODY_ENCODING,
    ATTR_HTTP_RESPONSE_BODY,
    ATTR_HTTP_RESPONSE_BODY_ENCODING,
    ATTR_HTTP_RESPONSE_CONTENT_TYPE,
    ATTR_HTTP_STATUS,
    ATTR_HTTP_URL,
    ATTR_MODEL_INPUT,
    ATTR_MODEL_OUTPUT,
)
from otel_blackbox._store.queries import SpanRecord

__all__ = ["HTTP_EXCHANGE_EVENT", "captured_exchange", "captured_model_call", "captured_replayed"]

HTTP_EXCHANGE_EVENT = "http_exchange"  # sessions.HTTP_EXCHANGE, which the analysis side cannot import


def captured_exchange(span: SpanRecord) -> dict[str, Any] | None:
    """The ``http_exchange`` metadata payload of a captured exchange, or None when ``span`` holds none
    (or a part of it was truncated). A body is its text, or ``{"base64": ...}`` when it was not UTF-8."""
    attributes = span.attributes
    method, url, status = (attributes.get(k) for k in (ATTR_HTTP_METHOD, ATTR_HTTP_URL, ATTR_HTTP_STATUS))
    if not (isinstance(method, str) and isinstance(url, str)):
        return None
    if isinstance(status, bool) or not isinstance(status, int):
        return None
    request_body = _body(attributes, ATTR_HTTP_REQUEST_BODY, ATTR_HTTP_REQUEST_BODY_ENCODING)
    response_body = _body(attributes, ATTR_HTTP_RESPONSE_BODY, ATTR_HTTP_RESPONSE_BODY_ENCODING)
    content_type = attributes.get(ATTR_HTTP_RESPONSE_CONTENT_TYPE, "")
    if request_body is None or response_body is None or any(map(_truncated, (url, content_type))):
        return None
    return {
        "event": HTTP_EXCHANGE_EVENT,
        "request": {"method": method, "url": url, "body": request_body},
        "response": {
            "status": status,
            "contentType": content_type if isinstance(content_type, str) else "",
            "body": response_body,
        },
    }


def captured_model_call(span: SpanRecord) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(model_input, model_output) of a captured model call, or None when ``span`` has not both as
    JSON objects (not a model call, a translation that failed, or a payload truncated)."""
    payloads = []
    for key in (ATTR_MODEL_INPUT, ATTR_MODEL_OUTPUT):
        text = span.attributes.get(key)
        if not isinstance(text, str):
            return None
        try:
            payload = json.loads(text)
        except (ValueError, RecursionError):
            return None
        if not isinstance(payload, dict) or payload.get(TRUNCATION_KEY) is True:
            return None
        payloads.append(payload)
    return payloads[0], payloads[1]


def captured_replayed(span: SpanRecord) -> bool:
    """True when a session in the process served this exchange: it is not what the network said."""
    return span.attributes.get(ATTR_HTTP_REPLAYED) is True


def _body(attributes: dict[str, Any], key: str, encoding_key: str) -> str | dict[str, str] | None:
    """The body as a session records it; None when it was truncated (or is not text at all)."""
    value = attributes.get(key, "")
    if not isinstance(value, str) or _truncated(value):
        return None
    if attributes.get(encoding_key) == "base64":
        return {"base64": value}
    return value


def _truncated(value: Any) -> bool:
    """Whether a stored value is the writer's truncation marker (redact.Redactor.bounded)."""
    if not isinstance(value, str) or not value.startswith('{"' + TRUNCATION_KEY + '"'):
        return False
    try:
        marker = json.loads(value)
    except (ValueError, RecursionError):
        return False
    return isinstance(marker, dict) and marker.get(TRUNCATION_KEY) is True
