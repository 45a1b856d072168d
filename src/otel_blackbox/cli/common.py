"""Helpers every command module shares: styling, the database path, JSON output."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click

from ..render.text import safe_json
from ..store.connection import connect_reader, describe_sqlite_error

__all__ = ["db_path", "echo_json", "progress", "reader", "style", "utf8_text"]

_STATUS_COLORS = {"ok": "green", "error": "red", "open": "yellow", "unset": None, "pass": "green",
                  "fail": "red", "skip": None, "success": "green", "incomplete": "yellow"}  # fmt: skip


def style(text: str, status: str) -> str:
    return click.style(text, fg=_STATUS_COLORS.get(status))


def utf8_text(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """An option callback for text that is looked up, not a path: bytes that are not UTF-8 (which
    Python hands over as lone surrogates) can match nothing recorded, and SQLite cannot take them."""
    if value is not None and not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise click.BadParameter(f"not UTF-8 text: {value!r}", ctx, param) from None
    return value


def db_path(ctx: click.Context) -> Path:
    return Path(ctx.find_root().params["db"])


@contextlib.contextmanager
def reader(ctx: click.Context) -> Iterator[sqlite3.Connection]:
    path = db_path(ctx)
    conn = connect_reader(path)
    try:
        yield conn
    except sqlite3.Error as exc:
        raise describe_sqlite_error(path, exc) from None
    finally:
        conn.close()


def echo_json(value: Any) -> None:
    click.echo(safe_json(json.dumps(value, indent=2, ensure_ascii=False, default=str)))


@contextlib.contextmanager
def progress(length: int, label: str) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr when it is a terminal, advanced by the callable; silent otherwise."""
    if length <= 0 or not sys.stderr.isatty():
        yield lambda _done: None
        return
    with click.progressbar(length=length, label=label, file=sys.stderr) as bar:
        yield bar.update
