"""The hook for transports that own no connection pool (``MockTransport``, custom transports).

The pool hook (``hook.py``) sees every request that reaches httpcore / httpcore2; a custom
transport answers before that, so wrap it instead::

    httpx.Client(transport=BlackboxTransport(httpx.MockTransport(handler)))
    httpx.AsyncClient(transport=AsyncBlackboxTransport(inner))
    httpx2.Client(transport=Httpx2BlackboxTransport(inner))
    httpx2.AsyncClient(transport=AsyncHttpx2BlackboxTransport(inner))

Each takes an optional ``interceptor``; without one it uses the hook's (``current_interceptor()``)
at each request, and passes requests through untouched while no hook is installed. Requests
the inner transport sends on through a pool are not intercepted a second time there.
A flavour's classes exist only when that library (httpx, httpx2) is importable.
"""

from __future__ import annotations

from typing import Any

from otel_blackbox._playback.http.audience import (
    Observation,
    ask,
    exchange_request,
    interceptor_for,
    suspended,
)
from otel_blackbox._playback.http.exchange import HttpResponse, Interceptor
from otel_blackbox._playback.http.streams import (
    AsyncTeeStream,
    Chunks,
    TeeStream,
    served_chunks,
    served_extensions,
    served_headers,
)

__all__: list[str] = []


def _flavour(lib: Any, prefix: str) -> tuple[type, type]:
    """The sync and async wrapper transports for one library (httpx or httpx2): same API, same code."""

    class Tee(TeeStream, lib.SyncByteStream):  # type: ignore[misc]
        pass

    class AsyncTee(AsyncTeeStream, lib.AsyncByteStream):  # type: ignore[misc]
        pass

    class ServedChunks(Chunks, lib.SyncByteStream, lib.AsyncByteStream):  # type: ignore[misc]
        pass

    def served_response(served: HttpResponse) -> Any:
        chunks = ServedChunks(served_chunks(served))
        extensions = served_extensions(served.status)
        return lib.Response(
            served.status, headers=served_headers(served), stream=chunks, extensions=extensions
        )

    def teed(response: Any, tee: TeeStream | AsyncTeeStream) -> Any:
        return lib.Response(
            response.status_code, headers=response.headers.raw, stream=tee, extensions=response.extensions
        )

    class Sync(lib.BaseTransport):  # type: ignore[misc]
        def __init__(self, inner: Any, interceptor: Interceptor | None = None) -> None:
            self.inner = inner
            self.interceptor = interceptor

        def handle_request(self, request: Any) -> Any:
            interceptor = interceptor_for(request.headers.raw, self.interceptor)
            if interceptor is None:
                return self.inner.handle_request(request)
            exchange = exchange_request(request.method, str(request.url), request.headers.raw, request.read())
            served = ask(interceptor, exchange)
            if served is not None:
                return served_response(served)
            with suspended():
                response = self.inner.handle_request(request)
            assert isinstance(response.stream, lib.SyncByteStream)
            observation = Observation(interceptor, exchange, response.status_code, response.headers.raw)
            return teed(response, Tee(response.stream, observation))

        def close(self) -> None:
            self.inner.close()

    class Async(lib.AsyncBaseTransport):  # type: ignore[misc]
        def __init__(self, inner: Any, interceptor: Interceptor | None = None) -> None:
            self.inner = inner
            self.interceptor = interceptor

        async def handle_async_request(self, request: Any) -> Any:
            interceptor = interceptor_for(request.headers.raw, self.interceptor)
            if interceptor is None:
                return await self.inner.handle_async_request(request)
            body = await request.aread()
            exchange = exchange_request(request.method, str(request.url), request.headers.raw, body)
            served = ask(interceptor, exchange)
            if served is not None:
                return served_response(served)
            with suspended():
                response = await self.inner.handle_async_request(request)
            assert isinstance(response.stream, lib.AsyncByteStream)
            observation = Observation(interceptor, exchange, response.status_code, response.headers.raw)
            return teed(response, AsyncTee(response.stream, observation))

        async def aclose(self) -> None:
            await self.inner.aclose()

    for cls, name in ((Sync, f"{prefix}BlackboxTransport"), (Async, f"Async{prefix}BlackboxTransport")):
        cls.__name__ = cls.__qualname__ = name
        cls.__doc__ = f"Wraps a {'sync' if cls is Sync else 'async'} {lib.__name__} transport."
    return Sync, Async


try:
    import httpx
except ImportError:  # pragma: no cover - httpx is optional
    pass
else:
    BlackboxTransport, AsyncBlackboxTransport = _flavour(httpx, "")
    __all__ += ["AsyncBlackboxTransport", "BlackboxTransport"]

try:
    import httpx2
except ImportError:  # pragma: no cover - httpx2 is optional
    pass
else:
    Httpx2BlackboxTransport, AsyncHttpx2BlackboxTransport = _flavour(httpx2, "Httpx2")
    __all__ += ["AsyncHttpx2BlackboxTransport", "Httpx2BlackboxTransport"]
