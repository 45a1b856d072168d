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

import contextlib
import functools
import logging
import threading
from collections.abc import (
    AsyncIterable,
    Awaitable,
    Callable,
    Collection,
    Iterable,
    Iterator,
    MutableMapping,
    Sequence,
)
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol, SupportsBytes, TypeVar
from urllib.parse import urlsplit

# The module says `# type: ignore` at its top, so mypy sees nothing in it.
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]

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
from otel_blackbox._playback.http.streams import (
    AsyncTeeStream,
    Chunks,
    RawHeaders,
    TeeStream,
    read_async,
    served_chunks,
    served_extensions,
    served_headers,
)

__all__ = ["BlackboxHTTPInstrumentor", "add_observer", "current_interceptor", "remove_observer", "suspended"]

logger = logging.getLogger(__name__)

_active: list[Interceptor] = []  # zero or one: the interceptor of the installed hook
# Replaced whole, never changed in place: each request reads it without taking a lock.
_observers: tuple[ExchangeObserver, ...] = ()
_installed: list[_Patch] = []  # the pool methods replaced, to put back
# Reentrant: a processor's finalizer (which removes its observer) may run inside add_observer.
_patch_lock = threading.RLock()
_suspended: ContextVar[bool] = ContextVar("otel_blackbox_http_suspended", default=False)
_logged: set[str] = set()  # failures already logged, since the hook was installed


def current_interceptor() -> Interceptor | None:
    """The interceptor the hook is installed with, or None when it is not."""
    return _active[0] if _active else None


def add_observer(observer: ExchangeObserver) -> None:
    """Let ``observer`` see every exchange from now on (patching the pools if nothing else has)."""
    global _observers
    with _patch_lock:
        if not any(o is observer for o in _observers):
            _observers = (*_observers, observer)
        _install_patches()


def remove_observer(observer: ExchangeObserver) -> None:
    """Stop showing exchanges to ``observer``; the last one out, with no interceptor, unpatches."""
    global _observers
    with _patch_lock:
        _observers = tuple(o for o in _observers if o is not observer)
        if not _observers and not _active:
            _remove_patches()


@contextlib.contextmanager
def suspended() -> Iterator[None]:
    """Requests made in this block (and tasks it starts) pass through unseen: no intercept, no observe."""
    token = _suspended.set(True)
    try:
        yield
    finally:
        _suspended.reset(token)


# --- talking to the interceptor -----------------------------------------------------------------


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


def _audience(headers: RawHeaders) -> tuple[Interceptor | None, list[ExchangeWatch]]:
    """The interceptor and the observers' watches for a request the pool is about to send."""
    interceptor, observers = current_interceptor(), _observers
    if (interceptor is None and not observers) or _unseen(headers):
        return None, []
    watches = []
    for observer in observers:
        try:
            watch = observer.begin()
        except Exception:
            _log_once("begin", observer)
            continue
        if watch is not None:
            watches.append(watch)
    return interceptor, watches


def _tell(
    watches: Sequence[ExchangeWatch], request: HttpRequest, response: HttpResponse, served: bool
) -> None:
    for watch in watches:
        try:
            watch(request, response, served=served)
        except Exception:
            _log_once("watch", watch)


def _text(headers: RawHeaders) -> list[tuple[str, str]]:
    return [(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers]


def exchange_request(method: bytes | str, url: bytes | str, headers: RawHeaders, body: bytes) -> HttpRequest:
    method = method.decode("ascii") if isinstance(method, bytes) else method
    url = url.decode("ascii") if isinstance(url, bytes) else url
    return HttpRequest(method, url, _text(headers), body)


def _log_once(what: str, interceptor: object) -> None:
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
            _log_once("rewrite", interceptor)
            return None
    if isinstance(change, bytes):
        return Rewrite(body=change)
    return change if isinstance(change, Rewrite) else None


def _with_length(headers: RawHeaders, length: int) -> RawHeaders:
    kept = [(k, v) for k, v in headers if k.lower() != b"content-length"]
    return [*kept, (b"Content-Length", str(length).encode("ascii"))]


def _target(url: _CoreURL, new_url: str) -> bytes | None:
    """The request target (path and query) of ``new_url``, or None when it leaves ``url``'s origin."""
    try:
        new, old = urlsplit(new_url), urlsplit(bytes(url).decode("ascii"))
        if (new.scheme, new.netloc) != (old.scheme, old.netloc):
            return None
        return ((new.path or "/") + (f"?{new.query}" if new.query else "")).encode("ascii")
    except ValueError:  # not ASCII (UnicodeError is one), or not a URL
        return None


def _rewrite(interceptor: Interceptor, request: _CoreRequest, exchange: HttpRequest) -> HttpRequest:
    """Put the interceptor's changes, if it has any, into the request about to be sent."""
    change = rewritten(interceptor, exchange)
    if change is None:
        return exchange
    if change.url is not None:
        target = _target(request.url, change.url)
        if target is None:
            logger.warning(
                "a rewrite to another origin or a URL that is not ASCII was not used: %r", change.url
            )
        else:
            request.url.target = target
    body = exchange.body
    if change.body is not None:
        body = change.body
        request.stream = Chunks([body])
        request.headers = _with_length(request.headers, len(body))
    return exchange_request(request.method, bytes(request.url), request.headers, body)


def ask(interceptor: Interceptor, request: HttpRequest) -> HttpResponse | None:
    """The response to serve for a request, or None to send it."""
    with suspended():
        try:
            return interceptor.intercept(request)
        except InterceptError as refusal:
            return refusal.response
        except Exception:
            _log_once("intercept", interceptor)
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
                _log_once("decode", self)
                return
            response = HttpResponse(self._status, headers, body)
            if self._interceptor is not None:
                try:
                    self._interceptor.observe(self._request, response)
                except Exception:
                    _log_once("observe", self._interceptor)
            _tell(self._watches, self._request, response, served=False)


# --- the pool patches ---------------------------------------------------------------------------


class _CoreURL(SupportsBytes, Protocol):
    target: bytes  # path and query


class _CoreRequest(Protocol):
    method: bytes
    headers: RawHeaders
    stream: Iterable[bytes] | AsyncIterable[bytes]

    @property
    def url(self) -> _CoreURL: ...


class _CoreResponse(Protocol):
    status: int
    headers: RawHeaders
    stream: Iterable[bytes] | AsyncIterable[bytes]
    extensions: MutableMapping[str, Any]


Pool = TypeVar("Pool")
Req = TypeVar("Req", bound=_CoreRequest)
Resp = TypeVar("Resp", bound=_CoreResponse)
Resp_co = TypeVar("Resp_co", bound=_CoreResponse, covariant=True)


class _MakeResponse(Protocol[Resp_co]):
    """``httpcore.Response`` or ``httpcore2.Response``."""

    def __call__(
        self,
        status: int,
        *,
        headers: RawHeaders,
        content: Iterable[bytes] | AsyncIterable[bytes],
        extensions: MutableMapping[str, Any],
    ) -> Resp_co: ...


def _serve(make: _MakeResponse[Resp], response: HttpResponse) -> Resp:
    return make(
        response.status,
        headers=served_headers(response),
        content=Chunks(served_chunks(response)),
        extensions=served_extensions(response.status),
    )


def _sync_handler(
    original: Callable[[Pool, Req], Resp], make: _MakeResponse[Resp]
) -> Callable[[Pool, Req], Resp]:
    @functools.wraps(original)
    def handle_request(pool: Pool, request: Req) -> Resp:
        interceptor, watches = _audience(request.headers)
        stream = request.stream
        if (interceptor is None and not watches) or not isinstance(stream, Iterable):
            return original(pool, request)
        body = b"".join(stream)
        request.stream = Chunks([body])  # the original consumed; this one can be sent (and resent)
        exchange = exchange_request(request.method, bytes(request.url), request.headers, body)
        if interceptor is not None:
            exchange = _rewrite(interceptor, request, exchange)
            served = ask(interceptor, exchange)
            if served is not None:
                _tell(watches, exchange, served, served=True)
                return _serve(make, served)
        with suspended():  # a second hook layer beneath (patched over ours) must not ask again
            response = original(pool, request)
        inner = response.stream
        assert isinstance(inner, Iterable)
        observation = Observation(interceptor, exchange, response.status, response.headers, watches)
        tee = TeeStream(inner, observation)
        return make(response.status, headers=response.headers, content=tee, extensions=response.extensions)

    return handle_request


def _async_handler(
    original: Callable[[Pool, Req], Awaitable[Resp]], make: _MakeResponse[Resp]
) -> Callable[[Pool, Req], Awaitable[Resp]]:
    @functools.wraps(original)
    async def handle_async_request(pool: Pool, request: Req) -> Resp:
        interceptor, watches = _audience(request.headers)
        if interceptor is None and not watches:
            return await original(pool, request)
        body = await read_async(request.stream)
        request.stream = Chunks([body])
        exchange = exchange_request(request.method, bytes(request.url), request.headers, body)
        if interceptor is not None:
            exchange = _rewrite(interceptor, request, exchange)
            served = ask(interceptor, exchange)
            if served is not None:
                _tell(watches, exchange, served, served=True)
                return _serve(make, served)
        with suspended():
            response = await original(pool, request)
        inner = response.stream
        assert isinstance(inner, AsyncIterable)
        observation = Observation(interceptor, exchange, response.status, response.headers, watches)
        tee = AsyncTeeStream(inner, observation)
        return make(response.status, headers=response.headers, content=tee, extensions=response.extensions)

    return handle_async_request


@dataclass
class _Patch:
    owner: type
    name: str
    original: object
    replacement: object


def _patch(owner: type, name: str, replacement: object) -> _Patch:
    return _Patch(owner, name, owner.__dict__[name], replacement)


def _patches() -> list[_Patch]:
    """The four pool methods, for whichever of httpcore / httpcore2 is importable."""
    found: list[_Patch] = []
    with contextlib.suppress(ImportError):
        import httpcore

        sync, asyn = httpcore.ConnectionPool, httpcore.AsyncConnectionPool
        found += [
            _patch(sync, "handle_request", _sync_handler(sync.handle_request, httpcore.Response)),
            _patch(
                asyn, "handle_async_request", _async_handler(asyn.handle_async_request, httpcore.Response)
            ),
        ]
    with contextlib.suppress(ImportError):
        import httpcore2

        sync2, asyn2 = httpcore2.ConnectionPool, httpcore2.AsyncConnectionPool
        found += [
            _patch(sync2, "handle_request", _sync_handler(sync2.handle_request, httpcore2.Response)),
            _patch(
                asyn2, "handle_async_request", _async_handler(asyn2.handle_async_request, httpcore2.Response)
            ),
        ]
    return found


class BlackboxHTTPInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Installs the hook: ``BlackboxHTTPInstrumentor().instrument(interceptor=...)``.

    A singleton, like every BaseInstrumentor. Instrumenting again only swaps the interceptor.
    """

    def instrumentation_dependencies(self) -> Collection[str]:
        return ()  # httpcore and httpcore2 are both optional: whichever is importable is patched

    def instrument(self, **kwargs: Any) -> None:
        if self.is_instrumented_by_opentelemetry:
            _active[:] = [_interceptor_arg(kwargs)]
            _logged.clear()
            return
        super().instrument(**kwargs)

    def _instrument(self, **kwargs: Any) -> None:
        with _patch_lock:
            _active[:] = [_interceptor_arg(kwargs)]
            _logged.clear()
            _install_patches()

    def _uninstrument(self, **kwargs: Any) -> None:
        with _patch_lock:
            _active.clear()
            if not _observers:  # the processor's capture still watches: the patches stay
                _remove_patches()


def _install_patches() -> None:
    if _installed:
        return  # already in place (for the interceptor or an observer): never wrap our own wrapper
    for patch in _patches():
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
