"""Recorded ``http_exchange`` steps, matched against the requests a program makes again.

One rule for every place that answers a non-model request from a recording (replay, fork, the
pytest plugin, rerun). A request is taken as a recording stores it: the method, the URL masked by
the redactor, the body masked and kept as text (``{"base64": ...}`` when not UTF-8). Each recorded
exchange answers once, the first unused one that matches in recorded order:

* exact: same method, URL and body (JSON bodies compared as canonical JSON, others as bytes);
* sequence: same method and URL, the body not compared.

No headers are compared: none are stored. When nothing matches, ``ExchangeBook.miss`` names the
closest recorded exchange and the first thing that differs; the caller words it.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from otel_blackbox._cassette.canonical import same_canonical
from otel_blackbox._cassette.diff.json_paths import ABSENT, first_difference
from otel_blackbox._cassette.model import Cassette, Step
from otel_blackbox._playback.http.exchange import HttpRequest, HttpResponse
from otel_blackbox._render.words import counted
from otel_blackbox._spans.redact import Redactor
from otel_blackbox.errors import CassetteError

__all__ = [
    "HTTP_EXCHANGE",
    "ExchangeBook",
    "ExchangeRequest",
    "Miss",
    "RecordedExchange",
    "body_bytes",
    "body_value",
    "is_exchange",
    "recorded_exchanges",
    "short",
    "stored_request_body",
]

HTTP_EXCHANGE = "http_exchange"


class _NotJson:
    def __repr__(self) -> str:
        return "NOT_JSON"


NOT_JSON: Any = _NotJson()  # a body that does not parse as JSON (or is empty, or base64)


def is_exchange(step: Step) -> bool:
    return (
        step.type == "metadata"
        and isinstance(step.payload, dict)
        and step.payload.get("event") == HTTP_EXCHANGE
    )


def body_value(body: bytes) -> Any:
    """A body as JSON data: the text when it is UTF-8, else ``{"base64": ...}``."""
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(body).decode("ascii")}


def body_bytes(value: Any) -> bytes:
    if isinstance(value, dict) and isinstance(value.get("base64"), str):
        return base64.b64decode(value["base64"])
    return str(value).encode("utf-8", "surrogatepass")  # a hand-written "\ud800" must not raise


def stored_request_body(body: bytes, redactor: Redactor) -> Any:
    """A request body as an http_exchange step holds it: masked text, or base64 when not UTF-8."""
    value = body_value(body) if body else ""
    return redactor.redact_text(value) if isinstance(value, str) else value


def _parsed(body: Any) -> Any:
    if not isinstance(body, str) or not body:
        return NOT_JSON
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return NOT_JSON


def short(value: Any, limit: int = 120) -> str:
    """A value for a one-line message: JSON, cut at ``limit`` characters."""
    if value is ABSENT:
        return "(absent)"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class ExchangeRequest:
    """A request the program makes, as a recording would store it."""

    method: str
    url: str
    body: Any  # masked text, or {"base64": ...}
    parsed: Any  # the body as JSON, or NOT_JSON

    @classmethod
    def of(cls, request: HttpRequest, redactor: Redactor) -> ExchangeRequest:
        body = stored_request_body(request.body, redactor)
        return cls(request.method, redactor.redact_text(request.url), body, _parsed(body))


@dataclass(frozen=True)
class RecordedExchange:
    """One http_exchange step, ready to match and to answer with."""

    step: int
    method: str
    url: str
    body: Any
    parsed: Any
    status: int
    content_type: str
    response_body: bytes

    def response(self) -> HttpResponse:
        headers = [("content-type", self.content_type)] if self.content_type else []
        return HttpResponse(self.status, headers, self.response_body)

    def same_body(self, request: ExchangeRequest) -> bool:
        if self.body == request.body:
            return True
        if self.parsed is not NOT_JSON and request.parsed is not NOT_JSON:
            return same_canonical(self.parsed, request.parsed)
        return body_bytes(self.body) == body_bytes(request.body)  # one as text, the other as base64


def recorded_exchanges(cassette: Cassette, source: str) -> list[RecordedExchange]:
    """The cassette's http_exchange steps in order; CassetteError naming the first malformed one."""
    return [
        _recorded(step, f"{source}: step {step.index} (http_exchange)")
        for step in cassette.steps
        if is_exchange(step)
    ]


def _recorded(step: Step, where: str) -> RecordedExchange:
    request, response = step.payload.get("request"), step.payload.get("response")
    if not isinstance(request, dict) or not isinstance(response, dict):
        raise CassetteError(f"{where}: 'request' and 'response' must be objects")
    method, url = request.get("method"), request.get("url")
    if not isinstance(method, str) or not isinstance(url, str):
        raise CassetteError(f"{where}: the request's 'method' and 'url' must be strings")
    status = response.get("status")
    if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 999:
        raise CassetteError(f"{where}: the response's 'status' must be an HTTP status code")
    content_type = response.get("contentType", "")
    if not isinstance(content_type, str):
        raise CassetteError(f"{where}: the response's 'contentType' must be a string")
    body = _checked_body(request.get("body", ""), f"{where}: the request's 'body'")
    answer = body_bytes(_checked_body(response.get("body", ""), f"{where}: the response's 'body'"))
    return RecordedExchange(step.index, method, url, body, _parsed(body), status, content_type, answer)


def _checked_body(value: Any, what: str) -> Any:
    if isinstance(value, str):
        return value
    encoded = value.get("base64") if isinstance(value, dict) else None
    if isinstance(encoded, str) and set(value) == {"base64"}:
        try:
            base64.b64decode(encoded, validate=True)
        except binascii.Error:
            raise CassetteError(f"{what} is not valid base64") from None
        return value
    raise CassetteError(f'{what} must be text or {{"base64": "..."}}')


MissKind = Literal["json", "body", "method", "url", "served", "none"]


@dataclass(frozen=True)
class Miss:
    """Why no recorded exchange answered ``request``: the closest one, and the first difference.

    ``json``: the bodies differ at ``path``, a JSON path into the body; ``body``: the bodies differ
    as a whole (``$.body``, one is not JSON); ``method``: the same URL was recorded with another
    method; ``url``: the same method and path with another query; ``served``: every matching
    exchange (``times`` of them) was already used; ``none``: nothing close was recorded.
    """

    kind: MissKind
    request: ExchangeRequest
    closest: RecordedExchange | None = None
    path: str = ""
    recorded: Any = None
    got: Any = None
    times: int = 0

    def divergence(self) -> str:
        """The replay's message (without the ``[blackbox]`` prefix)."""
        request = f"{self.request.method} {self.request.url}"
        if self.closest is None:
            return f"no recorded HTTP exchange for {request}"
        if self.kind == "served":
            times = counted(self.times, "time")
            return (
                f"no unused recorded HTTP exchange for {request}: the recording made it {times}, "
                f"already served (step {self.closest.step})"
            )
        return (
            f"step {self.closest.step} (http_exchange) differs at {self.path}: "
            f"recorded {short(self.recorded)}, got {short(self.got)}"
        )


class ExchangeBook:
    """The recorded exchanges of a run, and which of them have answered already."""

    def __init__(self, recorded: Iterable[RecordedExchange], *, compare_body: bool = True) -> None:
        self.recorded = list(recorded)
        self.compare_body = compare_body
        self._by_address: dict[tuple[str, str], list[RecordedExchange]] = {}
        for exchange in self.recorded:
            self._by_address.setdefault((exchange.method, exchange.url), []).append(exchange)
        self._used: set[int] = set()  # step indexes

    def take(self, request: ExchangeRequest) -> RecordedExchange | None:
        """The first unused recorded exchange that matches ``request``, now used; None if none does."""
        for exchange in self._by_address.get((request.method, request.url), []):
            if exchange.step not in self._used and (not self.compare_body or exchange.same_body(request)):
                self._used.add(exchange.step)
                return exchange
        return None

    def miss(self, request: ExchangeRequest) -> Miss:
        """What is closest to a request that ``take`` could not answer."""
        same = self._by_address.get((request.method, request.url), [])
        identical = [e for e in same if not self.compare_body or e.same_body(request)]
        if identical:  # else take() would have answered: every one is used
            return Miss("served", request, identical[0], times=len(identical))
        if same:
            return _body_miss(self._first_unused(same), request)
        other_method = [e for e in self.recorded if e.url == request.url]
        if other_method:
            closest = self._first_unused(other_method)
            return Miss("method", request, closest, "$.method", closest.method, request.method)
        place = _place(request.url)
        other_query = [e for e in self.recorded if e.method == request.method and _place(e.url) == place]
        if other_query:
            closest = self._first_unused(other_query)
            return Miss("url", request, closest, "$.url", closest.url, request.url)
        return Miss("none", request)

    def _first_unused(self, candidates: list[RecordedExchange]) -> RecordedExchange:
        return next((e for e in candidates if e.step not in self._used), candidates[0])


def _body_miss(closest: RecordedExchange, request: ExchangeRequest) -> Miss:
    if closest.parsed is not NOT_JSON and request.parsed is not NOT_JSON:
        diff = first_difference(closest.parsed, request.parsed, "$")
        if diff is not None:
            return Miss("json", request, closest, diff.path, diff.parent, diff.child)
    return Miss("body", request, closest, "$.body", closest.body, request.body)


def _place(url: str) -> tuple[str, str, str]:
    """Where a URL points, without its query: two requests there differ only in their arguments."""
    try:
        parts = urlsplit(url)
    except ValueError:  # a hand-edited URL (an unclosed IPv6 bracket): only itself is close to it
        return url, "", ""
    return parts.scheme, parts.netloc, parts.path
