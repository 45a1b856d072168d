"""The one rule for a URL a user gives (push's endpoint, pull's server, rerun's --base-url):
http(s)://host[:port][/path], with a host and a port that can be one."""

from __future__ import annotations

from urllib.parse import SplitResult, urlsplit

__all__ = ["http_url"]


def http_url(value: str) -> SplitResult:
    """``value`` split, when it is an http(s) URL with a host; ValueError naming it otherwise."""
    text = value.strip()
    try:
        parts = urlsplit(text)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
    except ValueError:  # a port that is not a number or out of range, a broken [IPv6] host
        valid = False
    if not valid or any(c.isspace() for c in text):
        raise ValueError(f"expected http(s)://host[:port][/path], got {value!r}")
    return parts
