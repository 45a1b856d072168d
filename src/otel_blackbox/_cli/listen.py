"""Where a server command listens, and the token it asks for beyond this machine (serve, ui)."""

from __future__ import annotations

import ipaddress
import socket

import click

__all__ = ["check_host", "check_token", "is_loopback"]


def check_host(ctx: click.Context, param: click.Parameter, value: str) -> str:
    value = value.strip()
    if value.startswith("[") and value.endswith("]"):
        value = value[1:-1]  # [::1] as in a URL
    if any(c.isspace() or not c.isprintable() for c in value) or "/" in value:
        raise click.BadParameter(f"not a host name or address: {value!r}", ctx, param)
    return value


def check_token(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    if not value or not value.isascii() or any(c.isspace() or not c.isprintable() for c in value):
        raise click.BadParameter("the token must be non-empty printable ASCII without spaces", ctx, param)
    return value


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1, or a name (localhost) that resolves to loopback addresses only."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    if not host:
        return False  # every interface
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0]).is_loopback for info in infos)
