"""Capture export (``OTEL_BLACKBOX_CAPTURE_HTTP_EXPORT=true``): capture spans for the other processors too.

By default a ``blackbox.http`` span (capture.py) goes to this processor's writer only. With
``capture_http_export`` on, each one is also handed to the other span processors of the provider
this processor was added to (a BatchSpanProcessor with an OTLP exporter to a fleet's Collector,
say), so the backend holds the request and response bodies an offline replay needs.

* **What they see** is a ``CaptureView`` of the span: the same ids, parent, times, resource and
  scope, and the attributes the database stores, through a Redactor with the writer's settings
  (``redact``, ``redact_patterns``, ``redact_fields``, ``max_attribute_bytes``). The view works
  them out the first time they are read, on the reader's thread: a BatchSpanProcessor's worker at
  export, never the agent's thread. A SimpleSpanProcessor exports on the thread that ends the span,
  so there the agent pays for the bodies, the translation and the redaction: the user's choice.
* **Fail safe.** The span is queued for our database first. Each other processor is called on its
  own: one that raises is logged once and the others still get the span; a view whose attributes
  cannot be worked out shows none rather than raise into an exporter's batch.
* **Not exported:** a capture span whose parent was not sampled (the provider's sampler decided
  against that trace), and nothing goes to another CapturingProcessor (it captures for itself).
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Protocol

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

from otel_blackbox._config import BlackboxConfig
from otel_blackbox._spans.redact import redactor_for

__all__ = ["CaptureView", "CapturingProcessor", "OtherProcessors"]


class CapturingProcessor(Protocol):
    """What capture needs of the processor it records for (processor.py's CapturingProcessor)."""

    config: BlackboxConfig
    _shutdown: bool

    def on_end(self, span: ReadableSpan) -> None: ...


logger = logging.getLogger("otel_blackbox")


class OtherProcessors:
    """The span processors beside one CapturingProcessor on its provider, and the hand-over to them.

    How they are found. An SDK span's ``_span_processor`` is its provider's multi span processor,
    whose ``_span_processors`` tuple holds every processor added to that provider, ours included.
    A provider counts only if ours is in that tuple: that is the provider this processor was added
    to, whichever provider started the current span. In order:

    1. the provider of the span current when the request was sent (noted by ``begin()``): the
       trace the capture span joins is that provider's;
    2. the last provider found so (weakly held: a provider dropped is not kept alive);
    3. the global tracer provider (set by ``opentelemetry-instrument`` or ``set_tracer_provider``):
       a capture outside any span, before any span was current at a request.

    Otherwise the span stays in the black box only (said once). Learning the provider from the
    processor's ``on_start`` would add work to every span's start, for all users; this costs one
    attribute read per request, and only with the export on.
    """

    def __init__(self, processor: CapturingProcessor) -> None:
        self._processor = weakref.ref(processor)
        self._known: weakref.ref[Any] | None = None  # the provider's multi span processor
        # (its _span_processors tuple, the others of it): one tuple, so a reader never sees a torn pair.
        self._others: tuple[tuple[SpanProcessor, ...], tuple[SpanProcessor, ...]] = ((), ())
        config = processor.config
        # The writer's settings (store/writer.py): what the others see is what the database stores.
        self.redactor = redactor_for(config)
        # A Redactor is meant for one thread at a time; the views' one-time computation holds this too.
        self.redact_lock = threading.Lock()
        self._warned: set[str] = set()

    # -- finding them ------------------------------------------------------------------------------

    def _holds_ours(self, multi: object) -> bool:
        processors = getattr(multi, "_span_processors", None)
        ours = self._processor()
        return isinstance(processors, tuple) and any(p is ours for p in processors)

    def _multi(self, hint: object) -> Any:
        known = self._known() if self._known is not None else None
        if hint is not None and hint is not known and self._holds_ours(hint):
            self._known, known = weakref.ref(hint), hint
        if known is not None:
            return known
        multi = getattr(trace.get_tracer_provider(), "_active_span_processor", None)
        if multi is not None and self._holds_ours(multi):
            self._known = weakref.ref(multi)
            return multi
        return None

    def others(self, hint: object = None) -> tuple[SpanProcessor, ...]:
        """The other processors to hand a capture span to (``hint``: the current span's multi processor)."""
        multi = self._multi(hint)
        if multi is None:
            self._once(
                "none",
                logging.WARNING,
                "a capture span stays in the black box only: no provider holding this processor "
                "is known yet (none of its spans was current at a request, and the global tracer "
                "provider does not hold it)",
            )
            return ()
        processors = multi._span_processors
        source, others = self._others
        if processors is not source:  # a processor was added since (the tuple is replaced then)
            ours = self._processor()
            # Not ours, nor another black box (of our class): each records its own capture spans.
            others = tuple(p for p in processors if p is not ours and not isinstance(p, type(ours)))
            self._others = (processors, others)
        return others

    # -- handing over (the caller's thread) ----------------------------------------------------------

    def hand_over(self, span: ReadableSpan, hint: object = None) -> None:
        """Give ``span`` (already queued for our database) to the others; never raises."""
        try:
            parent = span.parent
            if parent is not None and not parent.trace_flags.sampled:
                return  # the sampler dropped this trace: its capture spans are not exported either
            others = self.others(hint)
            if not others:
                return
            view = CaptureView(span, self)
        except Exception:
            self._once("view", logging.WARNING, "could not hand a capture span on", exc_info=True)
            return
        for other in others:
            try:
                other.on_end(view)
            except Exception:
                self._once(
                    f"on_end:{type(other).__qualname__}",
                    logging.WARNING,
                    f"{type(other).__qualname__}.on_end raised on a capture span; the black box has it",
                    exc_info=True,
                )

    def _once(self, key: str, level: int, message: str, **kwargs: Any) -> None:
        if key not in self._warned:
            self._warned.add(key)
            logger.log(level, "otel-blackbox: capture export: %s (logged once)", message, **kwargs)


class CaptureView(ReadableSpan):
    """A capture span as the other processors see it: its attributes as the database stores them.

    ``_attributes`` is worked out the first time it is read (``attributes``, ``to_json``), once,
    whichever thread reads first.
    """

    def __init__(self, span: ReadableSpan, others: OtherProcessors) -> None:
        super().__init__(
            span.name,
            context=span.context,
            parent=span.parent,
            resource=span.resource,
            kind=span.kind,
            instrumentation_scope=span.instrumentation_scope,
            start_time=span.start_time,
            end_time=span.end_time,
        )
        self._span: ReadableSpan | None = span
        self._others: OtherProcessors | None = others
        self._redacted: Mapping[str, Any] | None = None

    @property
    def _attributes(self) -> Mapping[str, Any]:
        redacted = self._redacted
        if redacted is not None:
            return redacted
        others = self._others
        if others is not None:
            with others.redact_lock:  # once: the first reader works them out, the others wait for it
                if self._redacted is None:
                    self._redacted = MappingProxyType(self._work_out(others))
                    self._span = self._others = None  # the view holds only what it shows now
        return self._redacted or _EMPTY

    @_attributes.setter
    def _attributes(self, value: object) -> None:
        """ReadableSpan.__init__ sets None: the attributes are the captured span's, worked out later."""

    def _work_out(self, others: OtherProcessors) -> dict[str, Any]:
        span = self._span
        if span is None:
            return {}
        try:
            # The captured span's own one-time computation (bodies, translation), then the redaction.
            return others.redactor.attributes(span.attributes)
        except Exception:  # never raise into an exporter's batch: the span goes without attributes
            others._once("attributes", logging.WARNING, "could not redact a capture span", exc_info=True)
            return {}


_EMPTY: Mapping[str, Any] = MappingProxyType({})
