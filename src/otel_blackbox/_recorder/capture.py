"""HTTP capture: each wire exchange of the process becomes a ``blackbox.http`` span in the black box.

``BlackboxConfig(capture_http=True)`` (``OTEL_BLACKBOX_CAPTURE_HTTP=true``) makes the processor add an
``HttpCapture`` to the observers of the HTTP hook (http.hook). An observer never serves and never
changes a request. When a request is about to be sent it notes, on the caller's thread or task, the
span current then and the clock; once the response was read (or served by a session's interceptor)
it queues a finished span, as ``on_end`` would: a child of that span (or the root of a new trace),
kind CLIENT, status UNSET. The span goes to this processor's writer only, not to the provider's
other processors or exporters, unless ``capture_http_export`` (``OTEL_BLACKBOX_CAPTURE_HTTP_EXPORT``)
is on: then they get it too, its attributes redacted as the database stores them
(capture_export.py).

The caller pays for the two timestamps and one object. What costs (bodies to text or base64, the
provider translation to the neutral model_input / model_output) runs the first time the span's
attributes are read: on the shipper thread (_recorder.shipper), or with the export on an exporter's
thread, whichever reads first (once: a lock), never the caller's (unless a SimpleSpanProcessor
exports there). Redaction and the max_attribute_bytes bound are the writer's, as for every span.
No request header is kept, so no Authorization, API key or cookie.
"""

from __future__ import annotations

import base64
import json
import logging
import random
import threading
import time
import weakref
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, get_value
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, TraceFlags, get_current_span

from otel_blackbox._cost.usage import with_usage
from otel_blackbox._playback import active
from otel_blackbox._playback.http import hook
from otel_blackbox._playback.http.exchange import ExchangeWatch, HttpRequest, HttpResponse
from otel_blackbox._recorder.capture_export import CapturingProcessor, OtherProcessors
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
    ATTR_MODEL_PROVIDER,
    ATTR_SESSION_MODE,
    HTTP_SPAN_NAME,
)
from otel_blackbox._store.snapshot import DEFERRED_SPAN_BYTES
from otel_blackbox._version import __version__
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.protocol import read_usage
from otel_blackbox._wire.registry import provider_for

__all__ = ["HttpCapture"]

logger = logging.getLogger("otel_blackbox")

_SCOPE = InstrumentationScope("otel_blackbox.replay.capture", __version__)
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
# Provider tool-call ids remembered for numbering: past this many, the oldest are forgotten (the
# numbering goes on from where it was), so a long-lived service does not grow without bound.
_MAX_REMEMBERED_IDS = 50_000


class HttpCapture:
    """One processor's observer in the HTTP hook. ``start()`` adds it, ``stop()`` removes it."""

    def __init__(self, processor: CapturingProcessor) -> None:
        # Weak: a processor dropped without shutdown() must not be kept alive by the hook.
        self._processor = weakref.ref(processor)
        self._ids = CallIds()  # one numbering of tool-call ids (call-N) per processor
        self._ids_lock = threading.Lock()
        self.compute_lock = threading.Lock()  # each span's attributes are worked out once, by one reader
        # With capture_http_export: the provider's other span processors get each span too.
        self._export = OtherProcessors(processor) if processor.config.capture_http_export else None
        self._resource = Resource.create()  # for exchanges made outside any SDK span
        self._warned = False
        self._finalizer = weakref.finalize(processor, hook.remove_observer, self)

    def start(self) -> HttpCapture:
        hook.add_observer(self)
        return self

    def stop(self) -> None:
        self._finalizer.detach()
        hook.remove_observer(self)

    # -- the hook's observer (caller's thread) -----------------------------------------------------

    def begin(self) -> ExchangeWatch | None:
        if self._processor() is None or get_value(_SUPPRESS_INSTRUMENTATION_KEY):
            return None  # the telemetry pipeline's own requests run with instrumentation suppressed
        span = get_current_span()
        resource = span.resource if isinstance(span, ReadableSpan) else self._resource
        # With the export on, where the current span came from: its provider's multi span processor.
        hint = getattr(span, "_span_processor", None) if self._export is not None else None
        return _Watch(self, span.get_span_context(), resource, time.time_ns(), hint)

    def _queue(self, span: ReadableSpan) -> None:
        processor = self._processor()
        if processor is not None:
            processor.on_end(span)

    def _hand_over(self, span: ReadableSpan, hint: object) -> None:
        """After _queue (our database first): the provider's other processors, with the export on."""
        processor, export = self._processor(), self._export
        if export is not None and processor is not None and not processor._shutdown:
            export.hand_over(span, hint)

    # -- attributes (writer thread) ----------------------------------------------------------------

    def attributes(self, exchange: _Exchange) -> dict[str, Any]:
        request, response = exchange.request, exchange.response
        attributes: dict[str, Any] = {
            ATTR_HTTP_METHOD: request.method,
            ATTR_HTTP_URL: request.url,
            ATTR_HTTP_STATUS: response.status,
        }
        _put_body(attributes, ATTR_HTTP_REQUEST_BODY, ATTR_HTTP_REQUEST_BODY_ENCODING, request.body)
        _put_body(attributes, ATTR_HTTP_RESPONSE_BODY, ATTR_HTTP_RESPONSE_BODY_ENCODING, response.body)
        attributes[ATTR_HTTP_RESPONSE_CONTENT_TYPE] = response.header("content-type") or ""
        if exchange.served:
            attributes[ATTR_HTTP_REPLAYED] = True
        if exchange.session_mode is not None:
            attributes[ATTR_SESSION_MODE] = exchange.session_mode
        attributes.update(self._model_call(request, response))
        return attributes

    def _model_call(self, request: HttpRequest, response: HttpResponse) -> dict[str, Any]:
        """The neutral payloads of a model call a translation understands; {} for anything else."""
        provider = provider_for(request.method, request.url)
        if provider is None:
            return {}
        # A model endpoint's exchange is named even when it failed: a refused call is retried by
        # the SDK, not a step, and a cassette must not serve it back as another exchange.
        named = {ATTR_MODEL_PROVIDER: provider.name}
        if not 200 <= response.status < 300:
            return named
        try:
            body = json.loads(request.body or b"null")
            if not isinstance(body, dict):
                return named
            with self._ids_lock:
                model_input = provider.model_input(body, self._ids)
                streamed = provider.is_streaming(body)
                output = provider.model_output(response.body, streamed=streamed, ids=self._ids)
                output = with_usage(output, read_usage(provider, response.body, streamed=streamed))
                _forget_oldest(self._ids)
            return {**named, ATTR_MODEL_INPUT: _json(model_input), ATTR_MODEL_OUTPUT: _json(output)}
        except (ValueError, RecursionError):
            return named  # not the shape the API documents: the raw bodies are still there
        except Exception:  # a bug in a translation: the exchange is still recorded
            if not self._warned:
                self._warned = True
                logger.warning("otel-blackbox: could not translate a model call (logged once)", exc_info=True)
            return named


class _Exchange:
    __slots__ = ("request", "response", "served", "session_mode")

    def __init__(self, request: HttpRequest, response: HttpResponse, served: bool) -> None:
        self.request = request
        self.response = response
        self.served = served
        self.session_mode = active.mode


class _Watch:
    """One request on its way: where and when it was sent."""

    __slots__ = ("_capture", "_hint", "_parent", "_resource", "_start_ns")

    def __init__(
        self, capture: HttpCapture, parent: SpanContext, resource: Resource, start_ns: int, hint: object
    ) -> None:
        self._capture = capture
        self._parent = parent
        self._resource = resource
        self._start_ns = start_ns
        self._hint = hint

    def __call__(self, request: HttpRequest, response: HttpResponse, *, served: bool) -> None:
        parent: SpanContext | None = self._parent
        if parent is not None and parent.is_valid:
            trace_id = parent.trace_id
        else:
            parent, trace_id = None, random.getrandbits(128) or 1
        context = SpanContext(trace_id, random.getrandbits(64) or 1, is_remote=False, trace_flags=_SAMPLED)
        span = _ExchangeSpan(
            self._capture,
            _Exchange(request, response, served),
            context=context,
            parent=parent,
            resource=self._resource,
            start_time=self._start_ns,
            end_time=time.time_ns(),
        )
        capture = self._capture
        capture._queue(span)
        if capture._export is not None:
            capture._hand_over(span, self._hint)


class _ExchangeSpan(ReadableSpan):
    """A finished ``blackbox.http`` span whose attributes are worked out when first read."""

    def __init__(self, capture: HttpCapture, exchange: _Exchange, **span: Any) -> None:
        super().__init__(HTTP_SPAN_NAME, kind=SpanKind.CLIENT, instrumentation_scope=_SCOPE, **span)
        self._capture: HttpCapture | None = capture
        self._exchange: _Exchange | None = exchange
        self._computed: dict[str, Any] = {}

    @property
    def queued_bytes(self) -> int:
        """What it holds while queued, for the processor's memory bound: mostly the two bodies."""
        exchange = self._exchange
        bodies = len(exchange.request.body) + len(exchange.response.body) if exchange is not None else 0
        return DEFERRED_SPAN_BYTES + bodies

    @property
    def attributes(self) -> Mapping[str, Any]:
        capture = self._capture
        if capture is not None:
            # Once, whoever reads first: our shipper, or an exporter's thread with the export on (a
            # lock, so two readers never both number the tool calls), and a batch retried after a
            # write failure must not number them again. _computed is set before _capture is cleared.
            with capture.compute_lock:
                exchange = self._exchange
                if exchange is not None:
                    self._computed = capture.attributes(exchange)
                    self._exchange = self._capture = None  # the bodies are text now: let the bytes go
        return MappingProxyType(self._computed)


def _forget_oldest(ids: CallIds) -> None:
    """Past the bound, drop the older half of the remembered ids; numbering carries on after them."""
    if len(ids.to_neutral) > _MAX_REMEMBERED_IDS:
        oldest = list(ids.to_neutral)[: len(ids.to_neutral) // 2]
        for provider_id in oldest:
            del ids.to_neutral[provider_id]
        ids.start += len(oldest)


def _put_body(attributes: dict[str, Any], key: str, encoding_key: str, body: bytes) -> None:
    try:
        attributes[key] = body.decode("utf-8")
    except UnicodeDecodeError:
        attributes[key] = base64.b64encode(body).decode("ascii")
        attributes[encoding_key] = "base64"


def _json(payload: Any) -> str:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
