"""Untrusted text made literal Markdown: within a line, as a code span, or as a fenced code block.

Shared by ``show --format markdown`` (_render/markdown/). Every character that a terminal would
act on or a reader would not see is shown as its escape first: the terminal view's escapes
(``text.safe``: C0 and C1 controls, bidi controls, line and paragraph separators, lone surrogates)
and the invisible format characters. Then, within a line, every ASCII punctuation character that
Markdown gives a meaning is backslash-escaped (CommonMark allows it for any), and a code span or a
fence is delimited by a backtick run longer than any in the text (CommonMark closes one only on a
run as long).
"""

from __future__ import annotations

import re

from otel_blackbox._render.text import safe

__all__ = ["code", "fenced", "inline", "visible"]

# Invisible format characters ``safe`` leaves as they are (it escapes the bidi ones): soft hyphen,
# zero-width space / joiners, word joiner and invisible operators, the BOM, interlinear annotation
# marks, the Unicode tag characters (text a model reads and a person does not see) and the
# variation selectors supplement. Each is shown as its escape.
_INVISIBLE = re.compile(
    "[\u00ad\u0600-\u0605\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200d\u2060-\u2064"
    "\u206a-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f\U000e0100-\U000e01ef]"
)
# ASCII punctuation Markdown gives a meaning within a line (CommonMark's inlines, GitHub's tables,
# strikethrough and math): each is backslash-escaped, which CommonMark allows for any of them.
_ACTIVE = re.compile(r"([\\`*_\[\]<>#!|~&$])")
# What opens a block at the start of a line: a list item, a setext underline, an ordered item.
_LEADING = re.compile(r"^(?:[-+=]|\d+(?=[.)]))")
_BACKTICKS = re.compile("`+")


def _escape_char(match: re.Match[str]) -> str:
    point = ord(match.group(0))
    return f"\\u{point:04x}" if point <= 0xFFFF else f"\\U{point:08x}"


def visible(text: object, *, single_line: bool = True) -> str:
    """``text`` with every control, bidi and invisible format character shown as its escape (and,
    on one line, line breaks as ``\\n``)."""
    return _INVISIBLE.sub(_escape_char, safe(text, single_line=single_line))


def inline(text: object) -> str:
    """Untrusted text as literal Markdown text on one line."""
    escaped = _ACTIVE.sub(r"\\\1", visible(text))
    lead = _LEADING.match(escaped)
    if lead is None:
        return escaped
    at = lead.end() if lead.group(0)[0].isdigit() else 0  # before the "." of "1.", or the "-"
    return f"{escaped[:at]}\\{escaped[at:]}"


def code(text: object) -> str:
    """Untrusted text as one code span: delimited by a backtick run longer than any in it."""
    content = visible(text)
    if not content.strip():
        return inline(content) or "(empty)"
    ticks = "`" * (max((len(run) for run in _BACKTICKS.findall(content)), default=0) + 1)
    if content[0] in "` " or content[-1] in "` ":  # CommonMark strips one space at each end
        content = f" {content} "
    return f"{ticks}{content}{ticks}"


def fenced(body: str, info: str = "text") -> list[str]:
    """Untrusted text as the lines of a fenced code block, its fence longer than any backtick run."""
    content = visible(body, single_line=False)
    if content.endswith("\n"):
        content = content[:-1]
    longest = max((len(run) for run in _BACKTICKS.findall(content)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + info, *content.split("\n"), fence]
