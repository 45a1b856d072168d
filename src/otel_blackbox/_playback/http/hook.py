"""The hook beneath httpx and httpx2: the connection pools of httpcore and httpcore2.

``BlackboxHTTPInstrumentor().instrument(interceptor=...)`` patches ``ConnectionPool.handle_request``
and ``AsyncConnectionPool.handle_async_request`` of whichever of httpcore / httpcore2 is installed.
The OTel httpx instrumentors wrap ``HTTPTransport`` one level up, so their client span still
surrounds every request here, served or not, whichever was installed first. Each request body is
read and put back as a replayable stream, then the interceptor either serves a response (no
socket is opened) or lets the request go out, and sees the decoded response once it was read.

Beside the one interceptor, any number of observers (``add_observer``: the processor's HTTP capture)
see every exchange, served or sent, and change none. The pool stays patched while either is there.

Custom transports (``httpx.MockTransport``...) own no pool: wrap them with ``transport.py``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection
from typing import Any

# The module says `# type: ignore` at its top, so mypy sees nothing in it.
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]

from otel_blackbox._playback.http import audience
from otel_blackbox._playback.http.exchange import ExchangeObserver, Interceptor
from otel_blackbox._playback.http.pool_handlers import Patch, patches

__all__ = ["BlackboxHTTPInstrumentor", "add_observer", "remove_observer"]

logger = logging.getLogger(__name__)

_installed: list[Patch] = []  # the pool methods replaced, to put back
# Reentrant: a processor's finalizer (which removes its observer) may run inside add_observer.
_patch_lock = threading.RLock()


def add_observer(observer: ExchangeObserver) -> None:
    """Let ``observer`` see every exchange from now on (patching the pools if nothing else has)."""
    with _patch_lock:
        present = audience.observers()
        if not any(o is observer for o in present):
            audience.set_observers((*present, observer))
        _install_patches()


def remove_observer(observer: ExchangeObserver) -> None:
    """Stop showing exchanges to ``observer``; the last one out, with no interceptor, unpatches."""
    with _patch_lock:
        audience.set_observers(tuple(o for o in audience.observers() if o is not observer))
        if not audience.observers() and audience.current_interceptor() is None:
            _remove_patches()


class BlackboxHTTPInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Installs the hook: ``BlackboxHTTPInstrumentor().instrument(interceptor=...)``.

    A singleton, like every BaseInstrumentor. Instrumenting again only swaps the interceptor.
    """

    def instrumentation_dependencies(self) -> Collection[str]:
        return ()  # httpcore and httpcore2 are both optional: whichever is importable is patched

    def instrument(self, **kwargs: Any) -> None:
        if self.is_instrumented_by_opentelemetry:
            audience.set_interceptor(_interceptor_arg(kwargs))
            return
        super().instrument(**kwargs)

    def _instrument(self, **kwargs: Any) -> None:
        with _patch_lock:
            audience.set_interceptor(_interceptor_arg(kwargs))
            _install_patches()

    def _uninstrument(self, **kwargs: Any) -> None:
        with _patch_lock:
            audience.set_interceptor(None)
            if not audience.observers():  # the processor's capture still watches: the patches stay
                _remove_patches()


def _install_patches() -> None:
    if _installed:
        return  # already in place (for the interceptor or an observer): never wrap our own wrapper
    for patch in patches():
        setattr(patch.owner, patch.name, patch.replacement)
        _installed.append(patch)


def _remove_patches() -> None:
    for patch in _installed:
        if patch.owner.__dict__.get(patch.name) is patch.replacement:
            setattr(patch.owner, patch.name, patch.original)
        else:  # someone patched over us: removing ours would drop theirs; with no interceptor it is inert
            logger.warning("%s.%s was patched over the blackbox hook; left in place", patch.owner, patch.name)
    _installed.clear()


def _interceptor_arg(kwargs: dict[str, Any]) -> Interceptor:
    interceptor: Interceptor | None = kwargs.get("interceptor")
    if interceptor is None:
        raise TypeError("BlackboxHTTPInstrumentor().instrument() needs interceptor=<an Interceptor>")
    return interceptor
