"""The trace list's filters, read from a URL query string: errors, open, session, a text search, a
time window (``since``) and a limit. A value the viewer cannot use is a ``BadRequest``."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from urllib.parse import parse_qs, urlencode

from otel_blackbox._config import parse_duration
from otel_blackbox.errors import ConfigError

__all__ = ["BadRequest", "TraceFilter", "parse_filter"]

DEFAULT_LIMIT = 50
MAX_LIMIT = 1000

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}


class BadRequest(ValueError):
    """A filter value the viewer cannot use: answered with 400 and this one-line message."""


@dataclass(frozen=True)
class TraceFilter:
    errors: bool = False
    open: bool = False
    session: str | None = None
    q: str | None = None
    since: str | None = None
    since_ns: int | None = None
    limit: int = DEFAULT_LIMIT

    def query_string(self) -> str:
        params: dict[str, str] = {}
        if self.errors:
            params["errors"] = "1"
        if self.open:
            params["open"] = "1"
        if self.session:
            params["session"] = self.session
        if self.q:
            params["q"] = self.q
        if self.since:
            params["since"] = self.since
        if self.limit != DEFAULT_LIMIT:
            params["limit"] = str(self.limit)
        return urlencode(params)


def _flag(name: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise BadRequest(f"{name}: expected 1 or 0, got {value!r}")


def parse_filter(query: str, *, now_ns: int | None = None) -> TraceFilter:
    """The list filters from a URL query string; BadRequest on a value that cannot be used."""
    raw = {k: v[-1] for k, v in parse_qs(query, keep_blank_values=True).items()}
    limit = DEFAULT_LIMIT
    if raw.get("limit", "").strip():
        text = raw["limit"].strip()
        # ASCII digits only, and few of them: int() would take "²" or "١" and choke on 5,000 digits.
        if not re.fullmatch("[0-9]{1,9}", text) or not 1 <= int(text) <= MAX_LIMIT:
            raise BadRequest(f"limit: expected a whole number from 1 to {MAX_LIMIT}, got {raw['limit']!r}")
        limit = int(text)
    since = raw.get("since", "").strip() or None
    since_ns = None
    if since is not None:
        try:
            seconds = parse_duration(since, name="since")
        except ConfigError as exc:
            raise BadRequest(str(exc)) from None
        if seconds is not None:
            now = time.time_ns() if now_ns is None else now_ns
            # Before the epoch (99999999d, infinity): every trace. SQLite's integers stop at 2**63.
            since_ns = now - int(seconds * 1e9) if seconds * 1e9 < now else 0
    return TraceFilter(
        errors=_flag("errors", raw.get("errors", "")),
        open=_flag("open", raw.get("open", "")),
        session=raw.get("session", "").strip() or None,
        q=raw.get("q", "").strip() or None,
        since=since,
        since_ns=since_ns,
        limit=limit,
    )
