"""From a request body to its answer: decode, admit into the intake, wait until committed.

A request is answered 200 only once its spans are committed, and is taken whole or refused whole:

* the queue full: 503 with Retry-After, nothing of it taken (a partial success would not be sent
  again: OTLP exporters retry 429, 502, 503 and 504 only, and honour Retry-After);
* more spans than the whole queue holds: 413 (it never could fit);
* not committed within ``commit_timeout_s`` (the database locked by another process): 503 with
  Retry-After. The exporter sends it again, and storing a span twice is harmless (its final row is
  an upsert on trace id + span id).

Only malformed spans in an otherwise valid request make a partial success: sending them again
would not help. A request with no spans (an empty protobuf body, ``{}``, a JSON object with no
``resourceSpans``: unknown fields are ignored, as the OTLP/JSON specification says) is a valid,
empty export in either encoding: 200, with a warning in ``partialSuccess`` (0 rejected).
"""

from __future__ import annotations

import json
import logging
import threading

from otel_blackbox._receiver.answers import JSON, Answer, failure, success
from otel_blackbox._receiver.intake import Intake, IntakeClosed, LargerThanQueue, QueueFull
from otel_blackbox._spans.otlp_in.decoder import Decoded, OtlpDecoder
from otel_blackbox._spans.otlp_in.json_fields import has_field
from otel_blackbox._spans.otlp_in.span import OtlpError

__all__ = ["COMMIT_TIMEOUT_S", "TraceService"]

logger = logging.getLogger("otel_blackbox")

# Below the OpenTelemetry exporters' default timeout (10 s), so that the 503 reaches them.
COMMIT_TIMEOUT_S = 8.0
RETRY_AFTER_S = 2
NO_SPANS = "the request holds no spans: nothing was stored"


class TraceService:
    """The receiver's one job: ``export(body, encoding)`` -> the answer. Thread-safe."""

    def __init__(self, intake: Intake, *, commit_timeout_s: float = COMMIT_TIMEOUT_S) -> None:
        self.intake = intake
        self.commit_timeout_s = commit_timeout_s
        self.decoder = OtlpDecoder()
        self._lock = threading.Lock()
        self.requests = 0  # export requests answered 200
        self.rejected = 0  # spans rejected as malformed (a bad id in a valid request...)
        self.refused = 0  # requests refused whole because the queue was full (503)

    def export(self, body: bytes, encoding: str) -> Answer:
        intake = self.intake
        try:
            document = _json(body) if encoding == JSON else None
            with intake.order:  # from decoding to admitting: see Intake.order
                decoded = self._decode(body, document)
                ticket = intake.admit(decoded.definitions, decoded.snapshots)
        except OtlpError as exc:
            return failure(400, f"not an OTLP trace export request: {_abridged(str(exc))}", encoding)
        except IntakeClosed as exc:
            return _unavailable(str(exc), encoding)
        except QueueFull as exc:
            with self._lock:
                self.refused += 1
            return _unavailable(str(exc), encoding)
        except LargerThanQueue as exc:
            return failure(413, str(exc), encoding)
        with self._lock:
            self.rejected += decoded.rejected
        if ticket is not None:
            if not ticket.done.wait(self.commit_timeout_s):
                return _unavailable(
                    f"the spans were not committed within {self.commit_timeout_s:g} s (the database is busy "
                    "or locked); send them again",
                    encoding,
                )
            if ticket.error is not None and ticket.retryable:
                return _unavailable(ticket.error, encoding)
            if ticket.error is not None:
                return failure(500, ticket.error, encoding)
        with self._lock:
            self.requests += 1
        if decoded.rejected:
            first = _abridged(decoded.first_error or "")
            message = f"spans rejected as malformed: {decoded.rejected} (the first: {first})"
            return success(encoding, decoded.rejected, message)
        return success(encoding, message="" if decoded.snapshots else NO_SPANS)

    def _decode(self, body: bytes, document: object) -> Decoded:
        try:
            if document is None:
                return self.decoder.from_protobuf(body)
            if isinstance(document, dict) and not has_field(document, "resourceSpans"):
                # An ExportTraceServiceRequest has no other field, and OTLP/JSON receivers ignore
                # unknown ones: an empty request, as an empty protobuf body is.
                return Decoded()
            return self.decoder.from_json(document, strict=False)
        except RecursionError:
            raise OtlpError("", "nested too deeply to read") from None


def _json(body: bytes) -> object:
    try:
        return json.loads(body)
    except RecursionError:
        raise OtlpError("", "nested too deeply to read") from None
    except UnicodeDecodeError as exc:
        raise OtlpError("", f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise OtlpError("", f"not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None


def _abridged(text: str, keep: int = 160) -> str:
    """A long message (a deeply nested field's path) with its middle left out: the start says
    where, the end says what is wrong."""
    return text if len(text) <= 2 * keep else f"{text[:keep]} ... {text[-keep:]}"


def _unavailable(message: str, encoding: str) -> Answer:
    return failure(503, message, encoding, (("Retry-After", str(RETRY_AFTER_S)),))
