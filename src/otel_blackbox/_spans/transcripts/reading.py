"""What the transcript readers share: loose JSON values taken safely, text parts, times, JSONL lines,
the files of a folder, and tool definitions inferred from the calls made."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from otel_blackbox.errors import ImportInputError

__all__ = [
    "Counts",
    "InferredTools",
    "as_int",
    "as_str",
    "decoded",
    "iso_time_ns",
    "jsonl_values",
    "parts_text",
    "transcript_files",
]

TEXT_PARTS = frozenset({"text", "input_text", "output_text"})  # Anthropic, OpenAI Responses


class Counts(dict[str, int]):
    """What a reader left out, counted by kind."""

    def add(self, kind: str, n: int = 1) -> None:
        self[kind] = self.get(kind, 0) + n


def as_str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def iso_time_ns(stamp: Any) -> int | None:
    """An ISO 8601 time (``2025-10-01T12:00:00.123Z``) in Unix nanoseconds; None when it is not one."""
    if not isinstance(stamp, str):
        return None
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return int(when.timestamp() * 1_000_000) * 1000


def parts_text(content: Any, counts: Counts) -> str:
    """The text of a message's content: a string, or the text parts of a list joined by newlines;
    the other parts (images, files, thinking...) are counted by type."""
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and part.get("type") in TEXT_PARTS:
            texts.append(as_str(part.get("text")))
        elif isinstance(part, dict):
            counts.add(str(part.get("type") or "part"))
    return "\n".join(t for t in texts if t)


def decoded(raw: bytes, name: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ImportInputError(f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def jsonl_values(raw: bytes, name: str, expected: str, counts: Counts) -> Iterator[tuple[int, Any]]:
    """Each non-blank line's JSON value, with its number. A line that is not JSON is refused (one line
    naming ``name``, the line and what was ``expected``), except a broken last line after a good
    one: a session still being written is read up to it (counted ``truncated line``)."""
    # Lines end at "\n" only: JSON text may hold U+2028 or U+0085 raw, which str.splitlines splits at.
    lines = decoded(raw, name).split("\n")
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    parsed = 0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            if number - 1 == last and parsed:
                counts.add("truncated line")
                continue
            raise ImportInputError(f"{name}, line {number}: not JSON; {expected}") from None
        parsed += 1
        yield number, value


def transcript_files(path: Path) -> list[Path]:
    """The transcript files of ``path``: itself, or every ``*.jsonl`` under it, sorted."""
    if path.is_dir():
        return sorted(p for p in path.rglob("*.jsonl") if p.is_file())
    return [path]


_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}


class InferredTools:
    """Tool definitions made from the calls (coding-agent files do not hold the definitions): each
    tool's input schema names every argument seen, typed by its first value."""

    def __init__(self) -> None:
        self._properties: dict[str, dict[str, Any]] = {}

    def note(self, name: str, arguments: dict[str, Any]) -> None:
        properties = self._properties.setdefault(name, {})
        for key, value in arguments.items():
            properties.setdefault(key, {"type": _JSON_TYPES.get(type(value), "string")})

    def anthropic(self) -> tuple[dict[str, Any], ...]:
        """As Anthropic's Messages API defines tools."""
        return tuple(
            {"name": name, "input_schema": {"type": "object", "properties": props}}
            for name, props in self._properties.items()
        )

    def openai_responses(self) -> tuple[dict[str, Any], ...]:
        """As OpenAI's Responses API defines function tools."""
        return tuple(
            {"type": "function", "name": name, "parameters": {"type": "object", "properties": props}}
            for name, props in self._properties.items()
        )
