"""What every module that puts tools on the server (``server``, ``playback_tools``) shares: the
annotations, the argument types the tools have in common (pydantic, with bounds and a description),
and ``answer``, which turns a tool's text, or its failure, into what the client reads."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Annotated, Literal

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from otel_blackbox._mcp.bounds import MAX_CHARS
from otel_blackbox._render.text import safe
from otel_blackbox._store.connection import describe_sqlite_error
from otel_blackbox.errors import BlackboxError

__all__ = ["LIVE", "READ", "WRITE", "AllowUnverified", "CassettePath", "Provider", "answer"]

READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
# blame and fork_from_step call the model provider: paid, and outside this machine.
LIVE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True)

AllowUnverified = Annotated[
    bool,
    Field(
        description="Go on with a cassette that fails verify's schema_version or hash_chain check (edited "
        "by hand, or broken): the answer carries the warning. Default: such a cassette is refused."
    ),
]
CassettePath = Annotated[
    str, Field(min_length=1, max_length=4096, description="A cassette file (absolute path is best).")
]
Provider = Annotated[
    Literal["openai-chat", "openai-responses", "anthropic", "gemini"] | None,
    Field(description="The API to call (default: the incident's)."),
]


def _one_line(exc: Exception) -> str:
    if isinstance(exc, BlackboxError):
        return str(exc)
    if isinstance(exc, sqlite3.Error):
        return str(describe_sqlite_error("the database", exc))
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc)
    return f"internal error: {type(exc).__name__}: {exc}"


def answer(call: Callable[[], str]) -> str:
    """The tool's text, cut to the bound if it ever passes it; any failure as one line."""
    try:
        text = call()
    except Exception as exc:  # every failure is the caller's to read, and the server goes on
        raise ToolError(safe(_one_line(exc))) from None
    if len(text) > MAX_CHARS:
        text = (
            text[: MAX_CHARS - 200] + f"\n[cut at {MAX_CHARS - 200} of {len(text)} characters: ask for fewer]"
        )
    return text
