"""GET a JSON document over HTTP (urllib), every failure one line: what, the URL, the status, the answer."""

from __future__ import annotations

import gzip
import http.client
import json
import urllib.error
import urllib.request
import zlib
from typing import Any
from urllib.parse import urlunsplit

from otel_blackbox._urls import http_url
from otel_blackbox._version import __version__
from otel_blackbox.errors import PullError

__all__ = ["base_url", "get_json"]

_MESSAGE_CHARS = 300  # of the server's answer, in an error line


def base_url(value: str) -> str:
    """http(s)://host[:port][/prefix] without a trailing slash, query or fragment; PullError otherwise."""
    try:
        parts = http_url(value)
    except ValueError:
        raise PullError(f"expected a URL like http://localhost:6006, got {value!r}") from None
    if parts.username is not None or parts.password is not None:
        raise PullError("the URL holds a user name or password: give an API key in PHOENIX_API_KEY instead")
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MESSAGE_CHARS else text[: _MESSAGE_CHARS - 3] + "..."


def _server_message(body: bytes, content_type: str) -> str:
    """What the server said: FastAPI's {"detail": ...}, plain text, or what kind of page it was."""
    text = body.decode("utf-8", "replace").strip()
    if "html" in content_type or text.lower().startswith(("<!doctype", "<html")):
        return "an HTML page, not an API answer"
    try:
        parsed = json.loads(text)
    except ValueError:
        return _one_line(text) or "no message"
    detail = parsed.get("detail", parsed) if isinstance(parsed, dict) else parsed
    if isinstance(detail, list):  # FastAPI's validation errors: [{"loc": [...], "msg": ...}, ...]
        items = []
        for item in detail:
            if isinstance(item, dict):
                loc = ".".join(str(p) for p in item.get("loc", ()) if p not in ("query", "path"))
                items.append(f"{loc}: {item.get('msg', '')}" if loc else str(item.get("msg", "")))
            else:
                items.append(str(item))
        return _one_line("; ".join(items))
    return _one_line(detail if isinstance(detail, str) else json.dumps(detail))


def _decoded(body: bytes, encoding: str) -> bytes:
    if encoding == "gzip":
        return gzip.decompress(body)
    if encoding == "deflate":
        return zlib.decompress(body)
    return body


def get_json(url: str, *, what: str, token: str | None, timeout_s: float) -> Any:
    """The JSON body of GET ``url``. ``what`` starts each error line ("phoenix: GET URL (page 3)")."""
    headers = {"Accept": "application/json", "Accept-Encoding": "gzip",
               "User-Agent": f"otel-blackbox/{__version__}"}  # fmt: skip
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, headers=headers, method="GET")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:
            body = _decoded(answer.read(), answer.headers.get("Content-Encoding", "").strip().lower())
            content_type = answer.headers.get("Content-Type", "")
    except urllib.error.HTTPError as exc:
        try:
            raw = _decoded(exc.read(), (exc.headers.get("Content-Encoding") or "").strip().lower())
        except (OSError, zlib.error, EOFError):
            raw = b""
        message = _server_message(raw, exc.headers.get("Content-Type") or "")
        hint = ""
        if exc.code in (401, 403):
            hint = " (the API key was refused)" if token else " (set PHOENIX_API_KEY to an API key)"
        raise PullError(f"{what}: HTTP {exc.code}: {message}{hint}") from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, TimeoutError):
            raise PullError(f"{what}: no answer within {timeout_s:g}s") from None
        text = reason.strerror if isinstance(reason, OSError) and reason.strerror else str(reason)
        raise PullError(f"{what}: cannot connect: {_one_line(text)}") from None
    except TimeoutError:
        raise PullError(f"{what}: no answer within {timeout_s:g}s") from None
    except (OSError, http.client.HTTPException, zlib.error, EOFError) as exc:  # cut mid-body, bad gzip
        reason = _one_line(str(exc)) or type(exc).__name__
        raise PullError(f"{what}: the answer broke off: {reason}") from None
    try:
        return json.loads(body)
    except ValueError:
        kind = _server_message(body, content_type)
        raise PullError(f"{what}: the answer is not JSON ({kind}): is this the right URL?") from None
