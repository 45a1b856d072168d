"""What the receiver answers, as the OTLP/HTTP specification says, in the request's encoding.

* 200 with an ``ExportTraceServiceResponse``: ``partial_success`` unset when every span was taken,
  else set with the count of rejected spans and why, or with 0 rejected and a warning (the
  specification's way to say something of a request taken whole);
* every 4xx / 5xx with a ``google.rpc.Status`` (its ``code`` the closest gRPC code, which clients
  may log; the HTTP status is what they act on).

A request sent as JSON is answered in JSON (``application/json``), any other in binary protobuf.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from google.rpc.status_pb2 import Status  # type: ignore[import-untyped]  # no types-protobuf here
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

__all__ = ["JSON", "PROTOBUF", "Answer", "failure", "success"]

PROTOBUF = "application/x-protobuf"
JSON = "application/json"

# The gRPC code of each HTTP status (google.rpc.Code), for Status.code.
_GRPC_CODES = {
    400: 3,  # INVALID_ARGUMENT
    401: 16,  # UNAUTHENTICATED
    404: 5,  # NOT_FOUND
    405: 12,  # UNIMPLEMENTED
    411: 3,
    413: 8,  # RESOURCE_EXHAUSTED
    414: 3,
    415: 3,
    431: 3,
    500: 13,  # INTERNAL
    503: 14,  # UNAVAILABLE
    505: 12,
}
_MAX_MESSAGE = 1000  # characters of a message: it may quote what the client sent


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    content_type: str
    headers: tuple[tuple[str, str], ...] = ()
    rejected: int = 0  # spans rejected (a partial success)
    message: str = ""  # the error, or why spans were rejected


def success(encoding: str, rejected: int = 0, message: str = "") -> Answer:
    """200: every span taken, or (``rejected`` > 0) a partial success saying why the rest was not;
    a ``message`` with nothing rejected is a warning."""
    message = _bounded(message)
    if encoding == JSON:
        document: dict[str, object] = {}
        if rejected or message:  # proto3 JSON writes an int64 as a string
            document["partialSuccess"] = {"rejectedSpans": str(rejected), "errorMessage": message}
        body = json.dumps(document).encode()
    else:
        response = ExportTraceServiceResponse()
        if rejected or message:
            response.partial_success.rejected_spans = rejected
            response.partial_success.error_message = message
        body = response.SerializeToString()
    return Answer(200, body, encoding, rejected=rejected, message=message)


def failure(
    status: int, message: str, encoding: str = PROTOBUF, headers: tuple[tuple[str, str], ...] = ()
) -> Answer:
    """A 4xx / 5xx answer: a google.rpc.Status whose message says what was wrong."""
    message = _bounded(message)
    code = _GRPC_CODES.get(status, 2)  # UNKNOWN
    if encoding == JSON:
        body = json.dumps({"code": code, "message": message}).encode()
    else:
        body = Status(code=code, message=message).SerializeToString()
    return Answer(status, body, encoding, headers, message=message)


def _bounded(message: str) -> str:
    return message if len(message) <= _MAX_MESSAGE else message[: _MAX_MESSAGE - 3] + "..."
