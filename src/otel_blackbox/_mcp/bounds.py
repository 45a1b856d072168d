"""What every tool result keeps to: at most ``MAX_CHARS`` characters, long values shortened, and a
way to ask for the rest (an ``offset`` of items, or a ``char_offset`` into one long text); and the
checks of the arguments several tools take (``text_arg``, ``usd_arg``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from otel_blackbox._render.text import clip, safe_json
from otel_blackbox.errors import BadArgument

__all__ = [
    "MAX_CHARS",
    "VALUE_CHARS",
    "clip_strings",
    "dumps",
    "fit",
    "text_arg",
    "text_page",
    "usd_arg",
]

MAX_CHARS = 20_000  # one tool result, all told
VALUE_CHARS = 2_000  # one string inside a result, unless the call asks for it in full
_ROOM = 600  # kept for what surrounds the items of a page (counts, offsets, the note)


def text_arg(name: str, value: str | None) -> str | None:
    """A text argument that is looked up (a session id): one with a lone surrogate, which no UTF-8
    text can hold, matches nothing and SQLite cannot take it."""
    if value is not None and not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise BadArgument(f"{name} is not UTF-8 text: {value!r}") from None
    return value


def usd_arg(name: str, value: str | None) -> Decimal | None:
    """A budget argument (``0.50``, ``$2``) as the CLI's ``--max-cost`` takes it."""
    from otel_blackbox._playback.budget import parse_usd  # the execution side: only for the tools that run

    try:
        return None if value is None else parse_usd(value)
    except ValueError as exc:
        raise BadArgument(f"{name}: {exc}") from None


def dumps(value: Any) -> str:
    """JSON for a model to read: indented, UTF-8, with the characters a terminal or a viewer could be
    tricked by (bidi overrides, controls) as escapes."""
    return safe_json(json.dumps(value, indent=1, ensure_ascii=False, default=str))


def clip_strings(value: Any, limit: int | None) -> Any:
    """``value`` with every string longer than ``limit`` shortened, saying how much was left out."""
    if limit is None:
        return value
    if isinstance(value, str):
        return clip(value, limit)
    if isinstance(value, dict):
        return {key: clip_strings(item, limit) for key, item in value.items()}
    if isinstance(value, list):
        return [clip_strings(item, limit) for item in value]
    return value


def fit(pieces: Sequence[str], budget: int = MAX_CHARS - _ROOM) -> int:
    """How many of ``pieces``, from the first, fit in ``budget`` characters (at least one: a single
    piece too long for it is the caller's to cut)."""
    used = 0
    for count, piece in enumerate(pieces):
        used += len(piece) + 2
        if used > budget and count > 0:
            return count
    return len(pieces)


def text_page(text: str, char_offset: int, *, again: str) -> str:
    """The ``MAX_CHARS`` characters of ``text`` from ``char_offset``, and how to ask for what follows
    (``again`` names the call: ``get_span with the same trace_id and span_id``)."""
    if char_offset < 0 or (char_offset and char_offset >= len(text)):
        raise BadArgument(f"char_offset {char_offset} is past the end ({len(text)} characters)")
    end = char_offset + MAX_CHARS - _ROOM
    page = text[char_offset:end]
    if end < len(text):
        page += (
            f"\n[cut: characters {char_offset}..{end} of {len(text)} shown; {len(text) - end} more: "
            f"call {again} and char_offset={end}]"
        )
    return page
