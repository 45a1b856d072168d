"""A diff on a job's page: ``diff``'s lines (``format_diff``, the command's own) given structure,
a heading per section, each fact's label apart from its value, a change's parent and child lines
coloured, the first divergence marked; plain text inside, so it selects and copies as printed.
"""

from __future__ import annotations

import html

__all__ = ["DIFF_CSS", "diff_block"]

e = html.escape

DIFF_CSS = """
.diff{background:#fff;border:1px solid #ddd;border-radius:4px;padding:.2em .8em .6em}
.diff h3{font-size:.95em;margin:.7em 0 .3em;color:#444}
.diff .dl{font-family:ui-monospace,monospace;font-size:12px;white-space:pre-wrap;word-break:break-word;
padding:1px .4em;border-radius:2px}.diff .dm{display:inline-block;width:1.2em;color:#888}
.diff .dk{color:#555}.diff .del{background:#ffebe9}.diff .del .dm{color:#cf222e}
.diff .add{background:#dafbe1}.diff .add .dm{color:#1a7f37}
.diff .first{background:#fff8c5;border-left:3px solid #d4a72c;font-weight:600}
.diff .verdict-line{font-weight:600;margin-top:.3em}
"""

# The lines of ``format_diff`` that tell the first divergence; after them, the outcome's.
_DIVERGENCE = ("first divergence", "no divergence", "parent step", "child step", "differs at",
               "parent value", "child value", "the hashed fields")  # fmt: skip


def diff_block(lines: list[str]) -> str:
    """``diff``'s lines, with structure: a heading per section (the two runs, the first divergence,
    the outcome), each fact's label apart from its value, the parent's and the child's lines of a
    change coloured (− and +), the first divergence marked. Plain text inside: it selects and copies
    as the command prints it."""
    sections: list[tuple[str, list[str]]] = [("The two runs", [])]
    for line in lines:
        if line.startswith(("first divergence", "no divergence")):
            sections.append(("First divergence", []))
        elif sections[-1][0] == "First divergence" and not line.startswith(_DIVERGENCE):
            sections.append(("Outcome", []))
        sections[-1][1].append(line)
    parts = []
    for title, section in sections:
        rows = "".join(_diff_line(line, changed=title != "The two runs") for line in section)
        slug = title.split()[-1].lower()
        parts.append(f'<section class="diff-{slug}"><h3>{e(title)}</h3>{rows}</section>')
    return f'<div class="diff" data-testid="diff">{"".join(parts)}</div>'


def _diff_line(line: str, *, changed: bool) -> str:
    label, sep, value = line.partition(": ")
    side = label.split(" ", 1)[0] if changed and label.startswith(("parent ", "child ")) else ""
    kind = {"parent": " del", "child": " add"}.get(side, "")
    if line.startswith(("first divergence", "differs at")):
        kind = " first"
    elif line.startswith("outcome"):
        kind = " verdict-line"
    mark = {" del": "−", " add": "+"}.get(kind, " ")
    if not sep:
        return f'<div class="dl{kind}"><span class="dm">{mark}</span>{e(line)}</div>'
    return (
        f'<div class="dl{kind}"><span class="dm">{mark}</span><span class="dk">{e(label)}:</span> '
        f'<span class="dv">{e(value)}</span></div>'
    )
