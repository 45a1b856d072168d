"""What a message tells the user to type: written one way, so that what is printed is what is accepted.

A suggestion is one shell line between backticks, quoted by ``shlex.join``: the options to add to
the command that printed it (`--stub 'lookup_order={"ok": true}'`), or a whole command
(`otel-blackbox replay branches/branch-d0011-1.json`). An upper-case word in it is the metavar the
command's --help gives that value (`--model NAME`, `-- CMD`, `--good GOOD.json`): the user's own
value goes there. A message suggests only what the command that printed it accepts there
(tests/unit/playback/test_hints_accepted*.py run each one).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Collection, Iterable
from typing import Any

__all__ = ["STUB_EXAMPLE", "as_string", "stub_example", "stub_hint", "stub_options", "suggest"]

# The JSON a suggested --stub shows: valid, so the line runs as printed; the user writes the answer the
# tool should give in its place.
STUB_EXAMPLE: Any = {"ok": True}
_TOOL_NAME = re.compile(r"^[\w.:-]+$")


def suggest(*argv: str) -> str:
    """``argv`` as one shell line, between backticks."""
    return f"`{shlex.join(argv)}`"


def stub_options(names: Iterable[str], value: Any = STUB_EXAMPLE) -> list[str]:
    """``--stub NAME=JSON`` for each tool name (each once), ``value`` as its JSON."""
    text = json.dumps(value, ensure_ascii=False)
    return [word for name in dict.fromkeys(names) for word in ("--stub", f"{name}={text}")]


def stub_example(name: str) -> str:
    """A ``--stub`` for a tool the user named (``NAME`` when what they gave is no tool name)."""
    shown = name.strip()
    return suggest(*stub_options([shown if _TOOL_NAME.match(shown) else "NAME"]))


def as_string(option: str, text: str, name: str | None = None) -> str:
    """A value that is not JSON, given again as the JSON string of its text: ``--set '"declined"'``,
    ``--stub 'refund_order="12.OO"'`` (``name``: the tool a ``--stub`` names)."""
    value = json.dumps(text, ensure_ascii=False)
    return suggest(option, value if name is None else f"{name}={value}")


def stub_hint(names: Iterable[str], stubbable: Collection[str], recording: str = "the incident") -> str:
    """What answers the calls of these tools: a ``--stub`` for each one the recording offered or
    called (a stub may name only those: any other name is a typo to refuse), and for the others,
    which the model made up, that nothing does. Empty when there are no names."""
    wanted = list(dict.fromkeys(names))
    known = [name for name in wanted if name in stubbable]
    made_up = [name for name in wanted if name not in stubbable]
    parts = []
    if known:
        parts.append(f"a stub answers {_it(known)}, e.g. {suggest(*stub_options(known))}")
    if made_up:
        parts.append(
            f"{recording} never offered {', '.join(made_up)}, so no --stub answers {_it(made_up)}: "
            f"the model made up {'that tool' if len(made_up) == 1 else 'those tools'}"
        )
    return "; ".join(parts)


def _it(names: list[str]) -> str:
    return "it" if len(names) == 1 else "them"
