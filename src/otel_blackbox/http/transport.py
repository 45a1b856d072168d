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

from .exchange import Interceptor
from .hook import (
    AsyncTeeStream,
    Chunks,
    Observation,
    TeeStream,
    ask,
    exchange_request,
    interceptor_for,
    served_chunks,
    served_extensions,
    served_headers,
    suspended,
)

__all__: list[str] = []

try:
    import httpx
except ImportError:  # pragma: no cover - httpx is optional
    pass
else:

    class _HttpxTee(TeeStream, httpx.SyncByteStream):
        pass

    class _AsyncHttpxTee(AsyncTeeStream, httpx.AsyncByteStream):
        pass

    class _HttpxChunks(Chunks, httpx.SyncByteStream, httpx.AsyncByteStream):
        pass

    class BlackboxTransport(httpx.BaseTransport):
        """Wraps a sync httpx transport."""

        def __init__(self, inner: httpx.BaseTransport, interceptor: Interceptor | None = None) -> None:
            self.inner = inner
            self.interceptor = interceptor

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            interceptor = interceptor_for(request.headers.raw, self.interceptor)
            if interceptor is None:
                return self.inner.handle_request(request)
            exchange = exchange_request(request.method, str(request.url), request.headers.raw, request.read())
            served = ask(interceptor, exchange)
            if served is not None:
                chunks = _HttpxChunks(served_chunks(served))
                extensions = served_extensions(served.status)
                return httpx.Response(
                    served.status, headers=served_headers(served), stream=chunks, extensions=extensions
                )
            with suspended():
                response = self.inner.handle_request(request)
            assert isinstance(response.stream, httpx.SyncByteStream)
            observation = Observation(interceptor, exchange, response.status_code, response.headers.raw)
            tee = _HttpxTee(response.stream, observation)
            return httpx.Response(
                response.status_code, headers=response.headers.raw, stream=tee, extensions=response.extensions
            )

        def close(self) -> None:
            self.inner.close()

    class AsyncBlackboxTransport(httpx.AsyncBaseTransport):
        """Wraps an async httpx transport."""

        def __init__(self, inner: httpx.AsyncBaseTransport, interceptor: Interceptor | None = None) -> None:
            self.inner = inner
            self.interceptor = interceptor

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            interceptor = interceptor_for(request.headers.raw, self.interceptor)
            if interceptor is None:
                return await self.inner.handle_async_request(request)
            body = await request.aread()
            exchange = exchange_request(request.method, str(request.url), request.headers.raw, body)
            served = ask(interceptor, exchange)
            if served is not None:
                chunks = _HttpxChunks(served_chunks(served))
                extensions = served_extensions(served.status)
                return httpx.Response(
                    served.status, headers=served_headers(served), stream=chunks, extensions=extensions
                )
            with suspended():
                response = await self.inner.handle_async_request(request)
            assert isinstance(response.stream, httpx.AsyncByteStream)
            observation = Observation(interceptor, exchange, response.status_code, response.headers.raw)
            tee = _AsyncHttpxTee(response.stream, observation)
            return httpx.Response(
                response.status_code, headers=response.headers.raw, stream=tee, extensions=response.extensions
            )

        async def aclose(self) -> None:
            await self.inner.aclose()

    __all__ += ["AsyncBlackboxTransport", "BlackboxTransport"]

try:
    import httpx2
except ImportError:  # pragma: no cover - httpx2 is optional
    pass
else:

    class _Httpx2Tee(TeeStream, httpx2.SyncByteStream):
        pass

    class _AsyncHttpx2Tee(AsyncTeeStream, httpx2.AsyncByteStream):
        pass

    class _Httpx2Chunks(Chunks, httpx2.SyncByteStream, httpx2.AsyncByteStream):
        pass

    class Httpx2BlackboxTransport(httpx2.BaseTransport):
        """Wraps a sync httpx2 transport."""

        def __init__(self, inner: httpx2.BaseTransport, interceptor: Interceptor | None = None) -> None:
            self.inner = inner
            self.interceptor = interceptor

        def handle_request(self, request: httpx2.Request) -> httpx2.Response:
            interceptor = interceptor_for(request.headers.raw, self.interceptor)
            if interceptor is None:
                return self.inner.handle_request(request)
            exchange = exchange_request(request.method, str(request.url), request.headers.raw, request.read())
            served = ask(interceptor, exchange)
            if served is not None:
                chunks = _Httpx2Chunks(served_chunks(served))
                extensions = served_extensions(served.status)
                return httpx2.Response(
                    served.status, headers=served_headers(served), stream=chunks, extensions=extensions
                )
            with suspended():
                response = self.inner.handle_request(request)
            assert isinstance(response.stream, httpx2.SyncByteStream)
            observation = Observation(interceptor, exchange, response.status_code, response.headers.raw)
            tee = _Httpx2Tee(response.stream, observation)
            return httpx2.Response(
                response.status_code, headers=response.headers.raw, stream=tee, extensions=response.extensions
            )

        def close(self) -> None:
            self.inner.close()

    class AsyncHttpx2BlackboxTransport(httpx2.AsyncBaseTransport):
        """Wraps an async httpx2 transport."""

        def __init__(self, inner: httpx2.AsyncBaseTransport, interceptor: Interceptor | None = None) -> None:
            self.inner = inner
            self.interceptor = interceptor

        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            interceptor = interceptor_for(request.headers.raw, self.interceptor)
            if interceptor is None:
                return await self.inner.handle_async_request(request)
            body = await request.aread()
            exchange = exchange_request(request.method, str(request.url), request.headers.raw, body)
            served = ask(interceptor, exchange)
            if served is not None:
                chunks = _Httpx2Chunks(served_chunks(served))
                extensions = served_extensions(served.status)
                return httpx2.Response(
                    served.status, headers=served_headers(served), stream=chunks, extensions=extensions
                )
            with suspended():
                response = await self.inner.handle_async_request(request)
            assert isinstance(response.stream, httpx2.AsyncByteStream)
            observation = Observation(interceptor, exchange, response.status_code, response.headers.raw)
            tee = _AsyncHttpx2Tee(response.stream, observation)
            return httpx2.Response(
                response.status_code, headers=response.headers.raw, stream=tee, extensions=response.extensions
            )

        async def aclose(self) -> None:
            await self.inner.aclose()

    __all__ += ["AsyncHttpx2BlackboxTransport", "Httpx2BlackboxTransport"]
