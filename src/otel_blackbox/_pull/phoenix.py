"""Spans of a running Phoenix, page by page, as OTLP/JSON documents (``import --from-phoenix``).

The endpoint is ``GET /v1/projects/{project}/spans`` (Phoenix's own span shape, the one its Python
client's ``spans.get_spans`` reads), not ``.../spans/otlpv1``: that one answers in snake_case rather
than OTLP/JSON anyway, so a conversion is needed either way, and it computes its nanosecond times
through a float (``...450535936`` for a span Phoenix holds as ``.450536``), where the ISO times of
this one are exact to the microsecond Phoenix keeps. Both flatten attributes the same way.

Pages go newest first and follow ``next_cursor`` until it is null; a cursor answered twice stops
the pull with an error rather than loop. ``trace_id`` and ``start_time`` are sent as Phoenix's
filters, and also applied here: a Phoenix older than 13.9 ignores ``trace_id`` (then the whole
project is paged through, and only that trace kept).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any
from urllib.parse import quote, urlencode

from otel_blackbox._pull.http_json import base_url, get_json
from otel_blackbox._pull.phoenix_spans import otlp_span
from otel_blackbox.errors import PullError

__all__ = ["MAX_PAGE_SIZE", "phoenix_documents"]

MAX_PAGE_SIZE = 1000  # Phoenix's own limit on ``limit``
_TRACE_ID = re.compile(r"[0-9a-fA-F]{32}")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _iso(ns: int) -> str:
    """Unix nanoseconds as the ISO time Phoenix's start_time filter takes (microseconds, UTC)."""
    return (_EPOCH + timedelta(microseconds=ns // 1000)).isoformat()


def phoenix_documents(
    url: str,
    *,
    project: str = "default",
    trace_id: str | None = None,
    since_ns: int | None = None,
    token: str | None = None,
    page_size: int = MAX_PAGE_SIZE,
    timeout_s: float = 30.0,
) -> Iterator[tuple[int | None, dict[str, Any]]]:
    """The spans of ``project`` at the Phoenix server ``url``: one OTLP/JSON document
    (``{"resourceSpans": [...]}``) per page that holds any, with the page number (from 1).

    ``trace_id`` (32 hex digits) pulls one trace, ``since_ns`` (unix nanoseconds) the spans that
    started at or after it; ``token`` is sent as a bearer API key (Phoenix's PHOENIX_API_KEY).
    The arguments are checked at once; the pages are fetched as the iterator is read. Raises
    PullError (one line: what failed, the URL, the HTTP status and Phoenix's message) on bad
    arguments, an HTTP or network failure, an answer of another shape, or a trace with no spans.
    """
    base = base_url(url)
    if not project.strip():
        raise PullError("the Phoenix project name is empty")
    if trace_id is not None:
        if not _TRACE_ID.fullmatch(trace_id.strip()):
            raise PullError(f"expected a trace id of 32 hex digits, got {trace_id!r}")
        trace_id = trace_id.strip().lower()
    if isinstance(page_size, bool) or not 1 <= page_size <= MAX_PAGE_SIZE:
        raise PullError(f"the page size must be 1 to {MAX_PAGE_SIZE} (Phoenix's limit), got {page_size!r}")
    if timeout_s <= 0:
        raise PullError(f"the timeout must be positive, got {timeout_s!r}")
    return _pages(base, project, trace_id, since_ns, token, page_size, timeout_s)


def _pages(
    base: str,
    project: str,
    trace_id: str | None,
    since_ns: int | None,
    token: str | None,
    page_size: int,
    timeout_s: float,
) -> Iterator[tuple[int | None, dict[str, Any]]]:
    endpoint = f"{base}/v1/projects/{quote(project, safe='')}/spans"
    params: list[tuple[str, str]] = [("limit", str(page_size))]
    if trace_id is not None:
        params.append(("trace_id", trace_id))
    since_us_ns = None
    if since_ns is not None:
        params.append(("start_time", _iso(since_ns)))
        since_us_ns = since_ns // 1000 * 1000  # Phoenix compares its microsecond times
    cursor: str | None = None
    seen: set[str] = set()
    found = 0
    page = 0
    while True:
        page += 1
        url = f"{endpoint}?{urlencode(params + ([('cursor', cursor)] if cursor else []))}"
        what = f"phoenix: GET {url} (page {page})"
        body = get_json(url, what=what, token=token, timeout_s=timeout_s)
        data, next_cursor = _page(body, what)
        spans = []
        for i, item in enumerate(data):
            try:
                span = otlp_span(item, f"data[{i}]")
            except PullError as exc:
                raise PullError(f"{what}: {exc}") from None
            if trace_id is not None and span["traceId"] != trace_id:
                continue
            if since_us_ns is not None and int(span["startTimeUnixNano"]) < since_us_ns:
                continue
            spans.append(span)
        if spans:
            found += len(spans)
            # Phoenix keeps no resource or scope: one empty resource, one scope without a name.
            yield page, {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": spans}]}]}
        if next_cursor is None:
            break
        if next_cursor in seen:
            raise PullError(f"{what}: Phoenix gave the cursor {next_cursor!r} twice: stopped, not looping")
        seen.add(next_cursor)
        cursor = next_cursor
    if trace_id is not None and not found:
        raise PullError(f"phoenix: no spans of trace {trace_id} in project {project!r} at {base}")


def _page(body: Any, what: str) -> tuple[list[Any], str | None]:
    """The spans and the next cursor of one answer; PullError if it is not a page of spans."""
    if not isinstance(body, dict) or not isinstance(body.get("data"), list):
        got = f"keys {sorted(body)[:5]}" if isinstance(body, dict) else type(body).__name__
        raise PullError(f'{what}: expected a page of spans {{"data": [...], "next_cursor": ...}}, got {got}')
    next_cursor = body.get("next_cursor")
    if next_cursor is not None and (not isinstance(next_cursor, str) or not next_cursor):
        raise PullError(f"{what}: next_cursor: expected a string or null, got {next_cursor!r}")
    return body["data"], next_cursor
