"""A Markdown document within its bounds, every value in it escaped.

Bounded unless ``full``: a value longer than ``Limits.value_chars`` is cut with a visible marker
(``… [+1234 chars, --full]``), the tree, the list of failures and the details stop at their limits
and near ``Limits.total_chars`` characters (60,000 by default: an issue or a comment on GitHub
holds 65,536), and a last line says what was left out and the command that shows all of it.

Every value comes from the database and is untrusted (it is shown as stored: redacted where the
recorder redacted it), and goes through ``md_escape``. Text within a line (names, roles, statuses,
exception messages) has its control, bidi and invisible characters shown as escapes and every
ASCII punctuation character Markdown gives a meaning backslash-escaped: it stays on its line and
opens no heading, list, link, image, emphasis, code span, HTML tag or entity. Bodies (message
texts, tool arguments and results, JSON, stack traces) go in fenced code blocks with a fence longer
than any run of backticks in them, so that no body can close its block early or hide text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from otel_blackbox._render.md_escape import code, fenced, inline
from otel_blackbox._render.repeats import ModelCalls
from otel_blackbox._render.words import counted

__all__ = ["LAST_LINE_ROOM", "Document", "Limits", "utc_text"]

_MARKER = "… [+{} chars, --full]"
LAST_LINE_ROOM = 1000  # characters kept for the line that says what was left out
_ONE_LINE_JSON = 100  # JSON up to this long stays on one line; longer is indented


@dataclass(frozen=True)
class Limits:
    """How much is shown; ``None``: no limit (``--full``)."""

    value_chars: int | None = 1000  # one message text, argument, result, stack trace, error message
    name_chars: int | None = 200  # one span name, role, id, model or tool name
    total_chars: int | None = 60_000  # the whole document, roughly (details stop before it)
    tree_spans: int | None = 300  # entries of the span tree(s)
    detail_spans: int | None = 100  # spans whose details are shown
    errors: int | None = 20  # failed spans listed at the top
    tree_depth: int = 8  # nesting of the tree list; deeper spans are listed at that depth, marked

    @classmethod
    def unbounded(cls) -> Limits:
        return cls(None, None, None, None, None, None)


# --- values ------------------------------------------------------------------------------------


def utc_text(ns: int | None) -> str:
    if ns is None:
        return "-"
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):  # parsed, the JSON would lose a value: shown as it is instead
        raise _DuplicateKey
    return found


def _as_body(value: Any) -> tuple[str, str]:
    """(text, info string) of a value for a code block: JSON text as it is when short and on one
    line, else indented; other text as it is."""
    parsed: Any = value
    if isinstance(value, str):
        stripped = value.strip()
        if not stripped.startswith(("{", "[")):
            return value, "text"
        try:
            parsed = json.loads(stripped, object_pairs_hook=_no_duplicates)
        except (ValueError, RecursionError):
            return value, "text"
        if len(stripped) <= _ONE_LINE_JSON and "\n" not in stripped:
            return stripped, "json"
    try:
        text = json.dumps(parsed, ensure_ascii=False, default=str)
        if len(text) > _ONE_LINE_JSON:
            text = json.dumps(parsed, indent=2, ensure_ascii=False, default=str)
    except (ValueError, RecursionError):
        return str(value), "text"
    return text, "json"


@dataclass
class _Left:
    """What the bounds left out, for the last line."""

    values: int = 0
    tree: int = 0
    details: int = 0
    errors: int = 0
    traces: int = 0
    trace_total: int = 0
    detail_total: int = 0
    tree_total: int = 0
    error_total: int = 0

    def any(self) -> bool:
        return bool(self.values or self.tree or self.details or self.errors or self.traces)


@dataclass
class Document:
    limits: Limits
    as_model: str | None
    again: str  # the command that shows everything
    several: bool = False  # several traces: each span says which
    lines: list[str] = field(default_factory=list)
    size: int = 0
    left: _Left = field(default_factory=_Left)
    details_shown: int = 0
    details_stopped: bool = False
    tree_shown: int = 0
    errors_shown: int = 0
    calls: ModelCalls = field(default_factory=ModelCalls)  # numbered, with their repeats
    span_numbers: dict[tuple[str, str], int] = field(default_factory=dict)  # (trace, span) -> number

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)
        self.size += sum(len(line) + 1 for line in lines)

    def clip(self, text: str, limit: int | None) -> tuple[str, str | None]:
        """``text`` within ``limit``, and the marker saying what was cut (or None)."""
        if limit is None or len(text) <= limit:
            return text, None
        self.left.values += 1
        return text[:limit], _MARKER.format(len(text) - limit)

    def inline_value(self, text: object) -> str:
        """A message or value within a line: literal text, shortened past ``value_chars``."""
        cut, marker = self.clip(str(text), self.limits.value_chars)
        return inline(cut) + ("" if marker is None else " " + inline(marker))

    def name(self, text: object) -> str:
        """A name within a line: literal text, shortened past ``name_chars``."""
        cut, marker = self.clip(str(text), self.limits.name_chars)
        return inline(cut) + ("" if marker is None else " " + inline(marker))

    def code_value(self, text: object) -> str:
        """An id, a model or a tool name as a code span, shortened past ``name_chars``."""
        cut, marker = self.clip(str(text), self.limits.name_chars)
        return code(cut) + ("" if marker is None else " " + inline(marker))

    def room(self) -> bool:
        """Whether the document is still short of its bound (less what the last line needs)."""
        total = self.limits.total_chars
        return total is None or self.size < total - LAST_LINE_ROOM

    def block(self, value: Any) -> list[str]:
        body, info = _as_body(value)
        cut, marker = self.clip(body, self.limits.value_chars)
        lines = fenced(cut if marker is None else f"{cut}\n{marker}", info)
        return ["", *lines]

    def text(self) -> str:
        if self.left.any():
            self.lines += ["", self._left_out_line()]
        return "\n".join(self.lines) + "\n"

    def _left_out_line(self) -> str:
        left, limits = self.left, self.limits
        parts = []
        if left.traces:
            parts.append(f"{left.traces} of {counted(left.trace_total, 'trace')}")
        if left.details:
            parts.append(f"the details of {left.details} of {counted(left.detail_total, 'span')}")
        if left.tree:
            parts.append(f"{left.tree} of {left.tree_total} span tree entries")
        if left.errors:
            parts.append(f"{left.errors} of {left.error_total} failed spans in the list of failures")
        said = ""
        if parts:
            bound = (
                f" (the output stops near {limits.total_chars:,} characters)" if limits.total_chars else ""
            )
            said = f"Left out{bound}: " + ", ".join(parts) + "."
        if left.values:
            said += f" {counted(left.values, 'value')} shortened (the marker says by how much)."
        return f"*{inline(said.strip())} All of it: {code(self.again)}*"
