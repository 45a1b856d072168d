"""Splitting a large JSON text into the pieces its content is stored by (``_store.contents``).

A conversation grows by appending: the model call after this one sends every message again, and
one more. Cut at the JSON's own boundaries (the members of an object, the elements of an array),
the repeated messages are pieces seen before, and only the new ones are stored.

The pieces concatenate back to the text character for character: each item is the text from the
end of the item before it (the comma and any whitespace included) to the end of its value, so no
re-encoding is involved and any JSON layout survives. A string whose own content is JSON (OpenInference's
``input.value``, GenAI's ``gen_ai.input.messages``) is split inside: its decoded text is cut the
same way and each piece escaped again, kept only when the escaped pieces give back the original
characters exactly.

A piece is a ``str`` (stored as it is) or a ``Group`` (pieces stored one after the other).
"""

from __future__ import annotations

import json
import re
from json.decoder import scanstring  # type: ignore[attr-defined]  # public, though untyped
from typing import Union

__all__ = ["SPLIT_CHARS", "Group", "Piece", "split_json"]

# A value this long or longer is cut into its items; shorter ones are one piece (a message, a
# tool's output). Small enough that a conversation's messages are pieces of their own.
SPLIT_CHARS = 2048
_WHITESPACE = re.compile(r"[ \t\n\r]*")
# split_json's summary: members this short, whose key has no ".3." (a flattened list's index).
_SUMMARY_CHARS = 512
_SUMMARY_TOTAL_CHARS = 4096  # in all: past it, the rest is only in the text stored apart
# A member whose value is a string this long is two pieces: its lead-in ("key":) and its value.
_VALUE_CHARS = 256
_INDEXED = re.compile(r"\.[0-9]+(?:\.|$)")
_DECODE = json.JSONDecoder(strict=False).raw_decode
_ESCAPE = json.JSONEncoder(ensure_ascii=False).encode


class Group(list["Piece"]):
    """Pieces stored in order, one node of their own (a container's items, or the container)."""


Piece = Union[str, Group]  # noqa: UP007 (a type alias, evaluated at run time on Python 3.10)


def split_json(text: str, summary: list[str] | None = None) -> Piece:
    """``text`` (a JSON value) as pieces: a Group when it was worth cutting, else the text itself.

    ``summary`` gets the short members of a top-level object whose key holds no index (``"key":
    value``, as written): a span's model, provider and token counts, not its flattened messages
    (``llm.input_messages.3.message.content``), which is what a row keeps of the text stored apart.
    """
    try:
        if summary is not None and text[:1] == "{" and len(text) >= SPLIT_CHARS:
            return _container(text, 0, len(text), escaped=False, summary=summary)
        return _value(text, 0, len(text), escaped=False)
    except (ValueError, IndexError):  # not JSON after all (a hand-edited row): one piece
        if summary is not None:
            summary.clear()
        return text


def _value(text: str, start: int, end: int, *, escaped: bool) -> Piece:
    """The JSON value ``text[start:end]``, cut when long: a container into its items, a string
    holding JSON into that JSON's items (``escaped``: the pieces are inside a JSON string already,
    so a string inside them is not looked into again)."""
    if end - start < SPLIT_CHARS:
        return text[start:end]
    first = text[start]
    if first in "[{":
        return _container(text, start, end, escaped=escaped)
    if first == '"' and not escaped:
        return _json_in_string(text, start, end)
    return text[start:end]


def _container(text: str, start: int, end: int, *, escaped: bool, summary: list[str] | None = None) -> Piece:
    """An object or array: its opening, a Group of items, its closing (``summary``: split_json's).

    A member whose value is a long string is two pieces, its lead-in and its value, so the same
    text under another key is the same piece (a tool's output in its TOOL span and in the next
    call's messages). Short members of one flattened element (``llm.input_messages.5.message.role``,
    ``.tool_calls.0.tool_call.id``...) are one piece together: a message, not five.
    """
    closing = "}" if text[start] == "{" else "]"
    items = Group()
    run: list[str] = []  # short members of one flattened element, not yet a piece
    run_element: str | None = None
    count = summary_chars = 0
    at = start + 1
    item_start = at
    while True:
        at = _WHITESPACE.match(text, at).end()  # type: ignore[union-attr]  # * always matches
        if text[at] == closing:
            break
        if count:
            if text[at] != ",":
                raise ValueError(f"expected ',' at {at}")
            at = _WHITESPACE.match(text, at + 1).end()  # type: ignore[union-attr]
        key = None
        if closing == "}":
            key_start = at
            key, at = scanstring(text, at + 1)
            at = _WHITESPACE.match(text, at).end()  # type: ignore[union-attr]
            if text[at] != ":":
                raise ValueError(f"expected ':' at {at}")
            at = _WHITESPACE.match(text, at + 1).end()  # type: ignore[union-attr]
        value_start = at
        at = _DECODE(text, at)[1]
        count += 1
        size = at - value_start
        if size >= SPLIT_CHARS or (key is not None and size >= _VALUE_CHARS and text[value_start] == '"'):
            if run:
                items.append("".join(run))
                run = []
            value = (
                _value(text, value_start, at, escaped=escaped)
                if size >= SPLIT_CHARS
                else text[value_start:at]
            )
            items.append(Group([text[item_start:value_start], value]))
        else:
            element = _element(key)
            if run and (element is None or element != run_element):
                items.append("".join(run))
                run = []
            if element is None:
                items.append(text[item_start:at])
            else:
                run.append(text[item_start:at])
                run_element = element
            if (
                summary is not None
                and key is not None
                and element is None
                and at - key_start <= _SUMMARY_CHARS
            ):
                summary_chars += at - key_start
                if summary_chars <= _SUMMARY_TOTAL_CHARS:
                    summary.append(text[key_start:at])
        item_start = at
    if run:
        items.append("".join(run))
    if at + 1 > end:
        raise ValueError("unterminated container")
    if len(items) < 2 and not any(isinstance(i, Group) for i in items):
        return text[start:end]
    return Group([text[start : start + 1], items, text[item_start:end]])


def _element(key: str | None) -> str | None:
    """The flattened element a member belongs to (``llm.input_messages.5`` of
    ``llm.input_messages.5.message.role``); None for a key with no index (or an array's item)."""
    if key is None:
        return None
    found = _INDEXED.search(key)
    return None if found is None else key[: found.start() + len(found.group(0).rstrip("."))]


def _json_in_string(text: str, start: int, end: int) -> Piece:
    """A JSON string whose content is itself a long JSON container: that container cut, each piece
    escaped as it is inside the string; the whole string as one piece when escaping does not give
    the same characters back (another encoder's escapes)."""
    decoded, string_end = scanstring(text, start + 1)
    if string_end != end or decoded[:1] not in ("{", "["):
        return text[start:end]
    try:
        inner = _value(decoded, 0, len(decoded), escaped=True)
    except (ValueError, IndexError):
        return text[start:end]
    if isinstance(inner, str):
        return text[start:end]
    escaped = _escaped(inner)
    if _joined(escaped) != text[start + 1 : end - 1]:
        return text[start:end]
    return Group(['"', escaped, '"'])


def _escaped(piece: Piece) -> Piece:
    if isinstance(piece, str):
        return _ESCAPE(piece)[1:-1]  # per character, so the pieces' escapes join into the whole's
    return Group(_escaped(p) for p in piece)


def _joined(piece: Piece) -> str:
    if isinstance(piece, str):
        return piece
    return "".join(_joined(p) for p in piece)
