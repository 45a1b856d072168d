"""``fork_from_step``: ``otel-blackbox fork CASSETTE --at N <change> -o CHILD`` with no program. The
parent copied up to step N, changed there (``_playback/agent/edit.py``), and continued by the
built-in agent (``fork_run.fork_built_in``), every tool answered from the recording, never run; the
answer is the child, how it ended, and ``diff_cassettes``' verdict on it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from otel_blackbox._cassette.diff.outcome import outcome_label
from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.model import Cassette, terminal_outcome
from otel_blackbox._cost.cassettes import cassette_cost
from otel_blackbox._mcp.bounds import VALUE_CHARS, clip_strings, dumps, usd_arg
from otel_blackbox._mcp.cassettes import carrying, checked_cassettes, diff_result, output_target
from otel_blackbox._render.text import clip
from otel_blackbox.errors import BadArgument, BlackboxError

if TYPE_CHECKING:
    from otel_blackbox._playback.agent.edit import Edit

__all__ = ["fork_from_step"]

_EXITS = {0: "completed", 1: "stopped", 130: "interrupted"}  # fork_built_in's exit codes
_JSON_TEXT = ("set", "calls")  # the changes whose string value is JSON text


def fork_from_step(
    db: Path,
    cassette: str,
    step: int,
    change: str,
    value: Any,
    output: str,
    *,
    provider: str | None = None,
    model: str | None = None,
    max_cost: str | None = None,
    stubs: dict[str, Any] | None = None,
    overwrite: bool = False,
    allow_unverified: bool = False,
) -> str:
    """Fork ``cassette`` at ``step`` with ``change`` and continue it; every argument checked, and
    every setup error raised, before any model call. ``db``: the server's, never written over."""
    from otel_blackbox._playback.agent.fork_run import fork_built_in  # the execution side
    from otel_blackbox._playback.agent.run import BuiltInRerun

    budget = usd_arg("max_cost", max_cost)
    if model is not None and not model.strip():
        raise BadArgument("model: give a model name (or leave it out: the cassette's)")
    edit = _edit(step, change, value)
    (parent,), warning = checked_cassettes([cassette], allow_unverified)
    target = _child_path(db, cassette, output, overwrite)
    plan = BuiltInRerun(
        output=target, provider=provider, model=model, stubs=dict(stubs or {}), max_cost=budget,
        allow_unverified=allow_unverified,
    )  # fmt: skip
    code = fork_built_in(Path(cassette), edit, plan, by="mcp")  # says its summary on stderr, not stdout
    return dumps(carrying(warning, _forked(cassette, parent, target, code, allow_unverified)))


def _edit(step: int, change: str, value: Any) -> Edit:
    """The Edit ``change`` with ``value`` asks for (``edit_from``); BadArgument when it cannot be one."""
    from otel_blackbox._playback.agent.edit import edit_from

    try:
        return edit_from(step, change, _change_text(change, value))
    except BlackboxError as exc:
        raise BadArgument(f"value: {exc}") from None


def _change_text(change: str, value: Any) -> str:
    """The text ``edit_from`` takes: a string as given (for set and calls, JSON text), any other
    JSON value as its JSON (set, calls, tool), a tool's ``{"name", "definition"}`` as NAME=JSON."""
    if isinstance(value, str):
        if change in _JSON_TEXT:
            try:
                json.loads(value)
            except ValueError:
                raise BadArgument(
                    f"value: not JSON: {clip(value, 80)!r}: for {change}, a string is JSON text (the "
                    f"string itself is {json.dumps(value)!r}), or give the JSON value as it is"
                ) from None
        return value
    if change == "tool":
        return _tool_text(value)
    if change not in _JSON_TEXT:
        raise BadArgument(f"value: {change} takes a string, not {clip(json.dumps(value), 80)}")
    return json.dumps(value)


def _tool_text(value: Any) -> str:
    """A tool's ``{"name", "definition"}`` as the NAME=JSON ``edit_from`` takes."""
    if isinstance(value, dict) and set(value) == {"name", "definition"} and isinstance(value["name"], str):
        return f"{value['name']}={json.dumps(value['definition'])}"
    raise BadArgument('value: tool takes {"name": NAME, "definition": {...}}, or the text NAME=JSON')


def _child_path(db: Path, parent: str, output: str, overwrite: bool) -> Path:
    """Where the child goes: never over its parent, nor (as write_cassette's) over another file
    unless ``overwrite``."""
    if Path(output).expanduser().resolve() == Path(parent).expanduser().resolve():
        raise BadArgument(f"output {output}: the child would overwrite the parent cassette")
    return output_target(output, db, overwrite)


def _forked(
    parent_path: str, parent: Cassette, child_path: Path, code: int, allow_unverified: bool
) -> dict[str, Any]:
    """The answer: the child, how it ended, its edit, both outcomes and diff_cassettes' verdict."""
    from otel_blackbox._playback.agent.fork_run import own_part  # the execution side, loaded already

    child = load_cassette(child_path)
    diff = diff_result(parent_path, str(child_path), allow_unverified=allow_unverified)
    ended = terminal_outcome(child)
    cost = cassette_cost(own_part(child))  # the child's own model calls
    result: dict[str, Any] = {
        "child": str(child_path),
        "exit": _EXITS.get(code, "stopped"),
        **({"stopped": ended.failure_reason} if code == 1 else {}),
        "edit": child.edit,
        "outcome": {"parent": outcome_label(parent), "child": outcome_label(child)},
        "verdict": diff["verdict"],
        "sharedPrefix": diff["shared_prefix"],
        "cost_usd": cost.dollars,
        "cost": cost.describe(),
        "report": diff["report"],
        **({"contract": diff["contract"]} if "contract" in diff else {}),
    }
    clipped: dict[str, Any] = clip_strings(result, VALUE_CHARS)
    return clipped
