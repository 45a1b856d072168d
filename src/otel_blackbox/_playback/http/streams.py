"""Streams for the hook: request bodies that can be sent again, response bodies that are observed
as they pass, and served bodies cut the way a server would flush them."""

from __future__ import annotations

import re
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from http import HTTPStatus
from typing import Any, Protocol

from otel_blackbox._playback.http.exchange import HttpResponse

__all__ = [
    "AsyncTeeStream",
    "Chunks",
    "Observer",
    "RawHeaders",
    "TeeStream",
    "raw_headers",
    "read_async",
    "served_chunks",
    "served_extensions",
    "served_headers",
]

RawHeaders = list[tuple[bytes, bytes]]


class Observer(Protocol):
    """Collects a response body (audience.Observation) and reports it once, at the end."""

    def add(self, chunk: bytes) -> None: ...

    def finish(self) -> None: ...


def raw_headers(headers: Iterable[tuple[str, str]]) -> RawHeaders:
    return [(k.encode("latin-1", "replace"), v.encode("latin-1", "replace")) for k, v in headers]


class TeeStream:
    """A sync response stream, passed through byte for byte; observed at its end or close."""

    def __init__(self, inner: Iterable[bytes], observation: Observer) -> None:
        self._inner = inner
        self._observation = observation

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            self._observation.add(chunk)
            yield chunk
        self._observation.finish()

    def close(self) -> None:
        try:
            close = getattr(self._inner, "close", None)
            if close is not None:
                close()
        finally:
            self._observation.finish()


class AsyncTeeStream:
    """The async ``TeeStream``."""

    def __init__(self, inner: AsyncIterable[bytes], observation: Observer) -> None:
        self._inner = inner
        self._observation = observation

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self._observation.add(chunk)
            yield chunk
        self._observation.finish()

    async def aclose(self) -> None:
        try:
            aclose = getattr(self._inner, "aclose", None)
            if aclose is not None:
                await aclose()
        finally:
            self._observation.finish()


class Chunks:
    """Bytes already in memory, iterable sync and async, again and again (a pool may resend a body)."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._chunks)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk


async def read_async(stream: Iterable[bytes] | AsyncIterable[bytes]) -> bytes:
    if isinstance(stream, AsyncIterable):
        return b"".join([chunk async for chunk in stream])
    return b"".join(stream)


_EVENT_END = re.compile(rb"(?<=\n\n)|(?<=\r\r)|(?<=\r\n\r\n)")
_CHUNK = 16 * 1024


def served_chunks(response: HttpResponse) -> list[bytes]:
    """A served body in the pieces a server would flush: one per SSE event, else 16 KiB blocks."""
    body = response.body
    if (response.header("content-type") or "").lower().startswith("text/event-stream"):
        return [part for part in _EVENT_END.split(body) if part]
    return [body[i : i + _CHUNK] for i in range(0, len(body), _CHUNK)]


def served_headers(response: HttpResponse) -> RawHeaders:
    """The headers of a served (decoded) body: no content-encoding, a true content-length."""
    kept = [(k, v) for k, v in response.headers if k.lower() not in ("content-encoding", "content-length")]
    if not any(k.lower() == "transfer-encoding" for k, _ in kept):
        kept.append(("content-length", str(len(response.body))))
    return raw_headers(kept)


def served_extensions(status: int) -> dict[str, Any]:
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = ""
    return {"http_version": b"HTTP/1.1", "reason_phrase": reason.encode("ascii")}
