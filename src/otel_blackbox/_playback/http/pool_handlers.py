"""The replacement pool methods: ``ConnectionPool.handle_request`` and
``AsyncConnectionPool.handle_async_request`` of httpcore and httpcore2, each reading the request
body into a replayable stream, asking the interceptor (which may rewrite the request, or serve a
response with no socket opened), and otherwise sending it and showing the decoded response to the
interceptor and the observers once it was read. hook.py installs them.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any, Protocol, SupportsBytes, TypeVar
from urllib.parse import urlsplit

from otel_blackbox._playback.http.audience import (
    Observation,
    ask,
    audience,
    exchange_request,
    rewritten,
    suspended,
    tell,
)
from otel_blackbox._playback.http.exchange import HttpRequest, HttpResponse, Interceptor
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

__all__ = ["Patch", "patches"]

logger = logging.getLogger("otel_blackbox._playback.http.hook")


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
        interceptor, watches = audience(request.headers)
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
                tell(watches, exchange, served, served=True)
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
        interceptor, watches = audience(request.headers)
        if interceptor is None and not watches:
            return await original(pool, request)
        body = await read_async(request.stream)
        request.stream = Chunks([body])
        exchange = exchange_request(request.method, bytes(request.url), request.headers, body)
        if interceptor is not None:
            exchange = _rewrite(interceptor, request, exchange)
            served = ask(interceptor, exchange)
            if served is not None:
                tell(watches, exchange, served, served=True)
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
class Patch:
    owner: type
    name: str
    original: object
    replacement: object


def _patch(owner: type, name: str, replacement: object) -> Patch:
    return Patch(owner, name, owner.__dict__[name], replacement)


def patches() -> list[Patch]:
    """The four pool methods, for whichever of httpcore / httpcore2 is importable."""
    found: list[Patch] = []
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
