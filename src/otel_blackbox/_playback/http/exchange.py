"""One HTTP exchange as the interceptor sees it, independent of httpx/httpcore flavour.

Header names and values are str (latin-1, as HTTP defines them). A response body is always
decoded: gzip/deflate content-encoding removed and the headers adjusted to match, so an
interceptor can parse and store it as is and a served response never has to be re-encoded.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "ExchangeObserver",
    "ExchangeWatch",
    "HttpRequest",
    "HttpResponse",
    "InterceptError",
    "Interceptor",
    "Rewrite",
    "RewritingInterceptor",
    "decode_body",
]

Headers = list[tuple[str, str]]

# zlib window bits: gzip framing, zlib framing, and raw deflate (which some servers send as "deflate").
_WBITS = {
    "gzip": (zlib.MAX_WBITS | 16,),
    "x-gzip": (zlib.MAX_WBITS | 16,),
    "deflate": (zlib.MAX_WBITS, -zlib.MAX_WBITS),
}


def _find(headers: Headers, name: str) -> str | None:
    return next((value for key, value in headers if key.lower() == name), None)


@dataclass
class HttpRequest:
    """The request as sent: the body is exactly the bytes that go on the wire."""

    method: str
    url: str
    headers: Headers
    body: bytes

    def header(self, name: str) -> str | None:
        """The first value of a header, by case-insensitive name."""
        return _find(self.headers, name.lower())


@dataclass
class HttpResponse:
    """A response with a decoded body (see the module docstring)."""

    status: int
    headers: Headers
    body: bytes

    def header(self, name: str) -> str | None:
        """The first value of a header, by case-insensitive name."""
        return _find(self.headers, name.lower())


class InterceptError(Exception):
    """Raised by ``Interceptor.intercept`` to refuse a request: ``response`` is served instead."""

    def __init__(self, response: HttpResponse, message: str = "") -> None:
        super().__init__(message or f"request refused with HTTP {response.status}")
        self.response = response


class Interceptor(Protocol):
    def intercept(self, request: HttpRequest) -> HttpResponse | None:
        """A response to serve with no network I/O, or None to let the request go out."""
        ...

    def observe(self, request: HttpRequest, response: HttpResponse) -> None:
        """Called once per request that went out, when its body was read to the end or closed."""
        ...


class ExchangeWatch(Protocol):
    def __call__(self, request: HttpRequest, response: HttpResponse, *, served: bool) -> None:
        """The exchange, once its response was read to the end or closed (``served``: by the interceptor,
        not the network)."""
        ...


class ExchangeObserver(Protocol):
    """Sees every exchange and changes none (the processor's HTTP capture): any number may be installed
    beside the one interceptor, and they see what it serves as well as what goes out."""

    def begin(self) -> ExchangeWatch | None:
        """Called as a request is about to be sent, on the caller's thread or task (its context is the
        request's): what to call once the exchange is complete, or None to let this one pass unseen."""
        ...


@dataclass(frozen=True)
class Rewrite:
    """What ``RewritingInterceptor.rewrite`` changes in a request: its body, its URL, or both (None
    keeps it). The URL's path and query may change, not where it goes: a URL with another scheme,
    host or port is not used."""

    body: bytes | None = None
    url: str | None = None


class RewritingInterceptor(Interceptor, Protocol):
    """An interceptor that may also change a request before it is intercepted or sent.

    Optional: the hook calls ``rewrite`` only when the interceptor has it (the fork uses it to put
    the replacement tool result into the agent's next request; a rerun to name another model, which
    Gemini names in the URL). Pool level only: the explicit transports do not rewrite.
    """

    def rewrite(self, request: HttpRequest) -> bytes | Rewrite | None:
        """A new body to use instead of ``request.body`` (or a ``Rewrite``), or None to keep it."""
        ...


def _inflate(data: bytes, coding: str) -> bytes:
    last: zlib.error | None = None
    for wbits in _WBITS[coding]:
        decoder = zlib.decompressobj(wbits)
        try:
            # flush() rather than a strict check: a stream closed early still yields what it has.
            return decoder.decompress(data) + decoder.flush()
        except zlib.error as exc:
            last = exc
    assert last is not None
    raise last


def decode_body(headers: Iterable[tuple[str, str]], raw: bytes) -> tuple[Headers, bytes]:
    """Remove the gzip/deflate content-codings from a body and adjust the headers to match.

    An unknown coding (br, zstd) or a corrupt body stops decoding there: that coding stays in the
    content-encoding header and the body keeps it, so nothing is ever silently mislabelled.
    """
    headers = list(headers)
    codings = [c.strip().lower() for k, v in headers if k.lower() == "content-encoding" for c in v.split(",")]
    codings = [c for c in codings if c and c != "identity"]
    body = raw
    while codings and codings[-1] in _WBITS:  # applied left to right, so undone right to left
        try:
            body = _inflate(body, codings[-1])
        except zlib.error:
            break
        codings.pop()
    if body is raw:
        return headers, raw
    kept = [(k, v) for k, v in headers if k.lower() not in ("content-encoding", "content-length")]
    if codings:
        kept.append(("content-encoding", ", ".join(codings)))
    if _find(headers, "content-length") is not None:
        kept.append(("content-length", str(len(body))))
    return kept, body
