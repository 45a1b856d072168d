"""Who may read the workbench and who may act on it.

Reading: on a loopback address, anyone on this machine whose ``Host`` names the loopback (a web page
cannot reach the workbench by DNS rebinding); on any other address, only a holder of the access
token (``ui --token``, as ``serve`` has), sent as ``Authorization: Bearer TOKEN`` or as the cookie
that opening ``/?token=TOKEN`` once sets.

Acting (every POST: a rerun, a cancel, a saved contract, a run of all contracts): a per-launch token
that only the workbench's own pages carry (a form field, ``token``), a request from another Origin
refused, and nothing at all under ``--read-only``. Each refusal is 403 and starts nothing, so another
web page in the same browser cannot trigger a paid rerun.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Protocol
from urllib.parse import urlsplit

__all__ = ["ACCESS_COOKIE", "LOCAL_HOST", "LOCAL_NAMES", "Guard", "Refused"]

LOCAL_HOST = "127.0.0.1"
LOCAL_NAMES = frozenset({LOCAL_HOST, "localhost"})
ACCESS_COOKIE = "otel_blackbox_ui"


class Refused(Exception):
    """A request the guard turns away: 403, with this one-line reason."""


class _Headers(Protocol):
    def get(self, name: str, default: None = None) -> str | None: ...


def _host_name(host: str) -> str:
    host = host.strip().lower()
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.rsplit(":", 1)[0]


@dataclass
class Guard:
    local: bool  # bound to a loopback address
    access_token: str | None = None  # required to read when not local
    read_only: bool = False
    action_token: str = field(default_factory=lambda: secrets.token_urlsafe(32))  # one per launch

    def check_read(self, headers: _Headers, query_token: str | None = None) -> None:
        """Refused unless this request may see the workbench."""
        if self.access_token is None:
            if _host_name(headers.get("Host") or "") not in LOCAL_NAMES:
                raise Refused("the workbench answers only on 127.0.0.1")
            return
        given = query_token or _bearer(headers.get("Authorization")) or _cookie(headers.get("Cookie"))
        if not _same(given, self.access_token):
            raise Refused(
                "missing or wrong access token: open /?token=TOKEN once, or send Authorization: Bearer"
            )

    def check_action(self, headers: _Headers, form_token: str | None) -> None:
        """Refused unless this POST came from one of the workbench's own pages, and actions are allowed."""
        if self.read_only:
            raise Refused("the workbench is read-only (--read-only): no rerun, no saved contract")
        site = (headers.get("Sec-Fetch-Site") or "").lower()
        if site and site not in ("same-origin", "none"):
            raise Refused(f"a request from another site ({site}) is refused")
        origin = headers.get("Origin")
        if origin is not None and not self._same_origin(origin, headers.get("Host") or ""):
            raise Refused(f"a request from another origin ({origin}) is refused")
        if not _same(form_token, self.action_token):
            raise Refused("missing or wrong workbench token: reload the page and try again")

    @staticmethod
    def _same_origin(origin: str, host: str) -> bool:
        parts = urlsplit(origin)
        return parts.scheme == "http" and parts.netloc.lower() == host.strip().lower() != ""


def _same(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def _bearer(value: str | None) -> str | None:
    scheme, _, token = (value or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _cookie(value: str | None) -> str | None:
    if not value:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(value)
    except Exception:  # a malformed Cookie header: no token in it
        return None
    morsel = jar.get(ACCESS_COOKIE)
    return None if morsel is None else morsel.value
