"""From a request body to its answer: decode, admit into the intake, wait until committed.

A request is answered 200 only once its spans are committed. If that takes longer than
``commit_timeout_s`` (the database locked by another process), it is answered 503 with
Retry-After: the exporter sends it again, and storing a span twice is harmless (its final row is
an upsert on trace id + span id).
"""

from __future__ import annotations

import json
import logging
import threading

from otel_blackbox._receiver.answers import JSON, Answer, failure, success
from otel_blackbox._receiver.intake import Intake, IntakeClosed
from otel_blackbox._spans.otlp_in.decoder import Decoded, OtlpDecoder
from otel_blackbox._spans.otlp_in.span import OtlpError

__all__ = ["COMMIT_TIMEOUT_S", "TraceService"]

logger = logging.getLogger("otel_blackbox")

# Below the OpenTelemetry exporters' default timeout (10 s), so that the 503 reaches them.
COMMIT_TIMEOUT_S = 8.0
RETRY_AFTER_S = 2


class TraceService:
    """The receiver's one job: ``export(body, encoding)`` -> the answer. Thread-safe."""

    def __init__(self, intake: Intake, *, commit_timeout_s: float = COMMIT_TIMEOUT_S) -> None:
        self.intake = intake
        self.commit_timeout_s = commit_timeout_s
        self.decoder = OtlpDecoder()
        self._lock = threading.Lock()
        self.requests = 0  # export requests answered 200
        self.rejected = 0  # spans rejected as malformed (a bad id in a valid request...)

    def export(self, body: bytes, encoding: str) -> Answer:
        intake = self.intake
        try:
            document = _json(body) if encoding == JSON else None
            with intake.order:  # from decoding to admitting: see Intake.order
                decoded = self._decode(body, document)
                admission = intake.admit(decoded.definitions, decoded.snapshots)
        except OtlpError as exc:
            return failure(400, f"not an OTLP trace export request: {_abridged(str(exc))}", encoding)
        except IntakeClosed as exc:
            return _unavailable(str(exc), encoding)
        with self._lock:
            self.rejected += decoded.rejected
        reasons = []
        if decoded.rejected:
            first = _abridged(decoded.first_error or "")
            reasons.append(f"{decoded.rejected} malformed (the first: {first})")
        if admission.rejected:
            reasons.append(
                f"{admission.rejected} did not fit the queue ({intake.config.max_queue_size} spans waiting "
                "for the database); they are counted as dropped"
            )
        ticket = admission.ticket
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
        rejected = decoded.rejected + admission.rejected
        message = f"{rejected} spans rejected: " + "; ".join(reasons) if rejected else ""
        return success(encoding, rejected, message)

    def _decode(self, body: bytes, document: object) -> Decoded:
        try:
            if document is None:
                return self.decoder.from_protobuf(body)
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
