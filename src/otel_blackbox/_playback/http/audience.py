"""Who sees an HTTP exchange, and asking them: the hook's one interceptor (record, replay, fork,
rerun) and its observers (the processor's HTTP capture), read by each request without a lock.

The pool handlers (pool_handlers.py) and the transports (transport.py) call these; the hook
(hook.py) installs the interceptor and the observers. Their own traffic, and requests made in a
``suspended()`` block, pass through unseen.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from contextvars import ContextVar

from otel_blackbox._playback.http.exchange import (
    ExchangeObserver,
    ExchangeWatch,
    HttpRequest,
    HttpResponse,
    InterceptError,
    Interceptor,
    Rewrite,
    decode_body,
)
from otel_blackbox._playback.http.streams import RawHeaders

__all__ = [
    "Observation",
    "ask",
    "audience",
    "current_interceptor",
    "exchange_request",
    "interceptor_for",
    "log_once",
    "observers",
    "rewritten",
    "set_interceptor",
    "set_observers",
    "suspended",
    "tell",
]

logger = logging.getLogger("otel_blackbox._playback.http.hook")  # the name its warnings always had

_active: list[Interceptor] = []  # zero or one: the interceptor of the installed hook
# Replaced whole, never changed in place: each request reads it without taking a lock.
_observers: tuple[ExchangeObserver, ...] = ()
_suspended: ContextVar[bool] = ContextVar("otel_blackbox_http_suspended", default=False)
_logged: set[str] = set()  # failures already logged, since the hook was installed


def current_interceptor() -> Interceptor | None:
    """The interceptor the hook is installed with, or None when it is not."""
    return _active[0] if _active else None


def set_interceptor(interceptor: Interceptor | None) -> None:
    """The hook's interceptor from now on (None: none); a new one logs its failures afresh."""
    _active[:] = [interceptor] if interceptor is not None else []
    _logged.clear()


def observers() -> tuple[ExchangeObserver, ...]:
    return _observers


def set_observers(found: tuple[ExchangeObserver, ...]) -> None:
    """Replace the observers whole (never in place: each request reads them without a lock)."""
    global _observers
    _observers = found


@contextlib.contextmanager
def suspended() -> Iterator[None]:
    """Requests made in this block (and tasks it starts) pass through unseen: no intercept, no observe."""
    token = _suspended.set(True)
    try:
        yield
    finally:
        _suspended.reset(token)


# --- talking to the interceptor and the observers ------------------------------------------------


def _unseen(headers: RawHeaders) -> bool:
    if _suspended.get():
        return True  # the interceptor's own traffic, or an outer blackbox layer already saw it
    # A websocket is a byte stream, not a request/response exchange.
    return any(name.lower() == b"upgrade" for name, _ in headers)


def interceptor_for(headers: RawHeaders, chosen: Interceptor | None = None) -> Interceptor | None:
    """Who should see this request: None for a pass-through unseen."""
    if _unseen(headers):
        return None
    return chosen if chosen is not None else current_interceptor()


def audience(headers: RawHeaders) -> tuple[Interceptor | None, list[ExchangeWatch]]:
    """The interceptor and the observers' watches for a request the pool is about to send."""
    interceptor, observers = current_interceptor(), _observers
    if (interceptor is None and not observers) or _unseen(headers):
        return None, []
    watches = []
    for observer in observers:
        try:
            watch = observer.begin()
        except Exception:
            log_once("begin", observer)
            continue
        if watch is not None:
            watches.append(watch)
    return interceptor, watches


def tell(
    watches: Sequence[ExchangeWatch], request: HttpRequest, response: HttpResponse, served: bool
) -> None:
    for watch in watches:
        try:
            watch(request, response, served=served)
        except Exception:
            log_once("watch", watch)


def _text(headers: RawHeaders) -> list[tuple[str, str]]:
    return [(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers]


def exchange_request(method: bytes | str, url: bytes | str, headers: RawHeaders, body: bytes) -> HttpRequest:
    method = method.decode("ascii") if isinstance(method, bytes) else method
    url = url.decode("ascii") if isinstance(url, bytes) else url
    return HttpRequest(method, url, _text(headers), body)


def log_once(what: str, interceptor: object) -> None:
    key = f"{what}:{type(interceptor).__qualname__}"
    if key not in _logged:  # a broken interceptor would otherwise log on every request
        _logged.add(key)
        logger.warning(
            "%s.%s raised; ignored (logged once)", type(interceptor).__qualname__, what, exc_info=True
        )


def rewritten(interceptor: Interceptor, request: HttpRequest) -> Rewrite | None:
    """What the interceptor wants changed in the request (``RewritingInterceptor.rewrite``), or None."""
    rewrite = getattr(interceptor, "rewrite", None)
    if rewrite is None:
        return None
    with suspended():
        try:
            change = rewrite(request)
        except Exception:
            log_once("rewrite", interceptor)
            return None
    if isinstance(change, bytes):
        return Rewrite(body=change)
    return change if isinstance(change, Rewrite) else None


def ask(interceptor: Interceptor, request: HttpRequest) -> HttpResponse | None:
    """The response to serve for a request, or None to send it."""
    with suspended():
        try:
            return interceptor.intercept(request)
        except InterceptError as refusal:
            return refusal.response
        except Exception:
            log_once("intercept", interceptor)
            return None


class Observation:
    """The body of one response that went out, collected for the interceptor's ``observe`` call and
    the observers' watches."""

    def __init__(
        self,
        interceptor: Interceptor | None,
        request: HttpRequest,
        status: int,
        headers: RawHeaders,
        watches: Sequence[ExchangeWatch] = (),
    ):
        self._interceptor = interceptor
        self._request = request
        self._status = status
        self._headers = headers
        self._watches = watches
        self._parts: list[bytes] = []
        self._done = False

    def add(self, chunk: bytes) -> None:
        self._parts.append(chunk)

    def finish(self) -> None:
        if self._done:
            return
        self._done = True
        with suspended():
            try:
                headers, body = decode_body(_text(self._headers), b"".join(self._parts))
            except Exception:
                log_once("decode", self)
                return
            response = HttpResponse(self._status, headers, body)
            if self._interceptor is not None:
                try:
                    self._interceptor.observe(self._request, response)
                except Exception:
                    log_once("observe", self._interceptor)
            tell(self._watches, self._request, response, served=False)
