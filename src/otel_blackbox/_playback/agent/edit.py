"""A change at one step of a recorded run, and where the built-in agent takes the run up after it.

Every branch of a run (``blame``'s, ``fork --at N`` with no program) is the same operation: copy
the parent's steps up to a point verbatim (same payloads and timestamps, so the same hashes: the
child's prefix proves where it came from), change one thing, and let the built-in agent go on
(branch.py). ``start_of`` makes the child's seed steps and its first request from the parent and an
``Edit``; it refuses an edit that does not fit its step before anything runs (BlackboxError).

The kinds, by the step they change:

- ``resend`` (a model_output, blame's decision): nothing changed; the request that produced it is
  sent again, live.
- ``tool_result``: a new result or error; the rest of that tool round as recorded, then the model
  goes on from the next request (blame's intervention).
- ``model_output``: a different answer (the child ends there, no model call) or different tool
  calls (numbered after the parent's highest call id; each to a tool its request offered, or, when
  the request lists none, one the recording called), answered as the run's other calls are.
- ``user_message`` (a model_input): its last user message replaced, or a new one appended.
- ``system_prompt``, ``tool_definition`` (a model_input): for that request and every later one.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, replace
from typing import Any, Literal

from otel_blackbox._cassette.model import Cassette, highest_call_index
from otel_blackbox._playback.agent.incident import Incident
from otel_blackbox._playback.agent.loop import Resume
from otel_blackbox._types import JsonObject
from otel_blackbox.errors import BlackboxError

__all__ = ["CHANGES", "EDIT_OPTIONS", "Edit", "EditKind", "Start", "edit_from", "start_of"]

EditKind = Literal[
    "resend", "tool_result", "model_output", "user_message", "system_prompt", "tool_definition"
]

# The step type each kind changes, and the options that ask for it (for what a refusal says).
_STEP_OF: dict[str, str] = {
    "resend": "model_output",
    "tool_result": "tool_result",
    "model_output": "model_output",
    "user_message": "model_input",
    "system_prompt": "model_input",
    "tool_definition": "model_input",
}
EDIT_OPTIONS: dict[str, str] = {
    "tool_result": "--set/--set-error",
    "model_output": "--answer/--calls",
    "user_message": "--user/--insert-user",
    "system_prompt": "--system",
    "tool_definition": "--tool",
}
_TOOL_FIELDS = {"description", "inputSchema"}
# The changes a person names (the CLI's options without their dashes, the workbench's and the MCP
# tool's "change"), each given as text: JSON for set, calls and tool's NAME=JSON.
CHANGES = ("set", "set-error", "answer", "calls", "user", "insert-user", "system", "tool")


@dataclass(frozen=True)
class Edit:
    """One change at parent step ``step``. ``value`` by kind: tool_result ``{"result": ...}`` or
    ``{"error": "..."}``; model_output ``{"text": "..."}`` or ``{"calls": [{"toolName", "toolInput"}]}``;
    user_message ``{"text": "...", "insert": bool}``; system_prompt the text; tool_definition
    ``{"name": ..., "definition": {"description"?, "inputSchema"?}}``; resend None."""

    kind: EditKind
    step: int
    value: Any = None
    description: str = ""  # what changed, for people: "tool result of lookup_order" (start_of fills it)

    def hint(self, by: str = "command") -> JsonObject:
        """The child's ``edit`` field: what changed, where, and who asked (a command, a page)."""
        return {"step": self.step, "kind": self.kind, "description": self.description, "by": by}


@dataclass(frozen=True)
class Start:
    """Where a child leaves its parent: its seed steps (type, payload, timestamp), the conversation its
    agent takes up, the incident as that agent follows it (settings edited from the edit's turn on)."""

    edit: Edit  # with its description
    seed: list[tuple[str, Any, int | float]]
    resume: Resume
    incident: Incident


def edit_from(step: int, change: str, text: str) -> Edit:
    """The Edit that ``change`` (one of CHANGES) with ``text`` asks for at ``step``; BlackboxError
    (one line naming the option) for an unknown change or JSON that does not parse."""
    if change == "set":
        return Edit("tool_result", step, {"result": _json(text, change)})
    if change == "set-error":
        return Edit("tool_result", step, {"error": text})
    if change == "answer":
        return Edit("model_output", step, {"text": text})
    if change == "calls":
        return Edit("model_output", step, {"calls": _json(text, change)})
    if change in ("user", "insert-user"):
        return Edit("user_message", step, {"text": text, "insert": change == "insert-user"})
    if change == "system":
        return Edit("system_prompt", step, text)
    if change != "tool":
        raise BlackboxError(f"{change!r}: not a change (one of: {', '.join(CHANGES)})")
    name, sep, definition = text.partition("=")
    if not sep or not name.strip():
        raise BlackboxError(f"--tool {text!r}: expected NAME=JSON")
    return Edit("tool_definition", step, {"name": name.strip(), "definition": _json(definition, "tool")})


def _json(text: str, change: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        from otel_blackbox._render.hints import as_string

        shown = text if len(text) <= 80 else text[:77] + "..."
        raise BlackboxError(
            f"--{change}: not JSON: {shown!r} (as a string: {as_string('--' + change, text)})"
        ) from None


def start_of(parent: Cassette, reader: Incident, edit: Edit) -> Start:
    """The child of ``parent`` changed by ``edit``; BlackboxError when the edit does not fit its step."""
    steps = parent.steps
    if not 0 <= edit.step < len(steps):
        raise BlackboxError(f"--at {edit.step}: the cassette has steps 0 to {len(steps) - 1}")
    step = steps[edit.step]
    if step.type != _STEP_OF[edit.kind]:
        option = EDIT_OPTIONS.get(edit.kind, edit.kind)
        raise BlackboxError(
            f"--at {edit.step}: {option} changes a {_STEP_OF[edit.kind]} step; step {edit.step} is a "
            f"{step.type} ({_fitting(step.type)})"
        )
    inputs = [s.index for s in steps if s.type == "model_input"]
    kept = [(s.type, s.payload, s.timestamp) for s in steps[: edit.step]]
    if edit.kind in ("resend", "model_output"):
        turn = sum(1 for i in inputs if i < edit.step) - 1
        if turn < 0:
            raise BlackboxError(f"--at {edit.step}: no model request before it to answer")
        resume = Resume(_messages(reader, turn), turn, reader.user_turns_after(turn))
        if edit.kind == "resend":
            seed = [(s.type, s.payload, s.timestamp) for s in steps[: inputs[turn]]]
            return Start(replace(edit, description="model call sent again"), seed, resume, reader)
        tools = _callable(reader, turn, inputs[turn])
        output, described = _new_output(edit, highest_call_index(steps) + 1, tools)
        seed = [*kept, ("model_output", output, step.timestamp)]
        return Start(replace(edit, description=described), seed, replace(resume, output=output), reader)
    if edit.kind == "tool_result":
        return _tool_result(parent, reader, edit, inputs)
    turn = inputs.index(edit.step)
    messages = _messages(reader, turn)
    incident = reader
    if edit.kind == "user_message":
        described = _edit_user(messages, edit)
    elif edit.kind == "system_prompt":
        incident = _from_turn(reader, turn, lambda source: {**source, "systemPrompt": str(edit.value)})
        described = "system prompt"
    else:
        incident, described = _edit_tool(reader, turn, edit)
    resume = Resume(messages, turn, reader.user_turns_after(turn))
    return Start(replace(edit, description=described), kept, resume, incident)


def _fitting(step_type: str) -> str:
    """The options that change a step of this type."""
    kinds = [k for k, t in _STEP_OF.items() if t == step_type and k in EDIT_OPTIONS]
    return "there: " + ", ".join(EDIT_OPTIONS[k] for k in kinds) if kinds else "no change fits it"


def _messages(reader: Incident, turn: int) -> list[JsonObject]:
    return copy.deepcopy(list(reader.model_inputs[turn].get("messages", [])))


def _tool_result(parent: Cassette, reader: Incident, edit: Edit, inputs: list[int]) -> Start:
    """The new outcome in the recorded one's place, the rest of its round as recorded, and the next
    request carrying it."""
    later = [i for i in inputs if i > edit.step]
    if not later:
        raise BlackboxError(f"step {edit.step}: no model call follows it to branch from")
    turn = inputs.index(later[0])
    forked = parent.steps[edit.step]
    outcome = dict(edit.value)
    head = {k: forked.payload[k] for k in ("toolCallId", "toolName") if k in forked.payload}
    seed = [
        *[(s.type, s.payload, s.timestamp) for s in parent.steps[: edit.step]],
        ("tool_result", {**head, **outcome}, forked.timestamp),
        *[(s.type, s.payload, s.timestamp) for s in parent.steps[edit.step + 1 : later[0]]],
    ]
    messages = _messages(reader, turn)
    call_id = forked.payload.get("toolCallId")
    for message in messages:
        content = message.get("content")
        for part in content if isinstance(content, list) else []:
            if (
                isinstance(part, dict)
                and part.get("type") == "tool_result"
                and part.get("toolCallId") == call_id
            ):
                part.pop("result", None)
                part.pop("error", None)
                part.update(outcome)
    name = forked.payload.get("toolName")
    described = f"tool {'error' if 'error' in outcome else 'result'} of {name}"
    resume = Resume(messages, turn, reader.user_turns_after(turn))
    return Start(replace(edit, description=described), seed, resume, reader)


def _callable(reader: Incident, turn: int, at: int) -> tuple[list[str], str, str] | None:
    """The tools a new call answering request ``turn`` (step ``at``) may name, with what a refusal
    says of a name not among them and of those that are; None when there is nothing to check against."""
    tools = reader.model_inputs[turn].get("tools")
    offered = [
        str(t["name"])
        for t in (tools if isinstance(tools, list) else [])
        if isinstance(t, dict) and isinstance(t.get("name"), str)
    ]
    if offered:
        return offered, f"the request at step {at} offers no such tool", "it offers"
    # A request that lists no tools (an import that recorded no tool definitions): the tools the
    # recording's model called anywhere are the ones it had.
    if reader.called:
        return (
            sorted(reader.called),
            f"the request at step {at} lists no tools, the recording never calls it",
            "it calls",
        )
    return None  # no tool offered, none called: nothing to check a name against, any is taken


def _new_output(
    edit: Edit, first_id: int, tools: tuple[list[str], str, str] | None = None
) -> tuple[JsonObject, str]:
    """The edited model output (new calls numbered from ``call-<first_id>``) and its description;
    ``tools``: the names a call may have and the refusal's words for one it may not (``_callable``)."""
    value = edit.value if isinstance(edit.value, dict) else {}
    if "text" in value:
        return {"type": "final_answer", "text": str(value["text"])}, "model output: an answer"
    calls = value.get("calls")
    if not isinstance(calls, list) or not calls:
        raise BlackboxError('--calls: expected a non-empty JSON list of {"toolName", "toolInput"}')
    made = []
    for n, call in enumerate(calls):
        name = call.get("toolName") if isinstance(call, dict) else None
        if not isinstance(name, str) or not name:
            raise BlackboxError(f'--calls: call {n} has no "toolName" (expected {{"toolName", "toolInput"}})')
        if tools is not None and name not in tools[0]:
            allowed, why, which = tools
            raise BlackboxError(f"--calls {name}: {why} ({which}: {', '.join(allowed)})")
        made.append(
            {"toolCallId": f"call-{first_id + n}", "toolName": name, "toolInput": call.get("toolInput", {})}
        )
    names = ", ".join(c["toolName"] for c in made)
    return {"type": "tool_calls", "calls": made}, f"model output: tool calls {names}"


def _edit_user(messages: list[JsonObject], edit: Edit) -> str:
    """Replace the request's last user message (not a tool round's results), or append one."""
    value = edit.value if isinstance(edit.value, dict) else {}
    text = str(value.get("text", ""))
    if value.get("insert"):
        messages.append({"role": "user", "content": text})
        return "user message inserted"
    said = [
        n
        for n, m in enumerate(messages)
        if m.get("role") == "user"
        and not (
            isinstance(m.get("content"), list)
            and any(isinstance(p, dict) and p.get("type") == "tool_result" for p in m["content"])
        )
    ]
    if not said:
        raise BlackboxError(
            f"--at {edit.step}: the request has no user message to replace (--insert-user adds one)"
        )
    messages[said[-1]] = {**messages[said[-1]], "content": text}
    return "user message"


def _from_turn(reader: Incident, turn: int, change: Any) -> Incident:
    """The incident with ``change`` applied to the settings of request ``turn`` and every later one."""
    inputs = [source if n < turn else change(source) for n, source in enumerate(reader.model_inputs)]
    return replace(reader, model_inputs=inputs)


def _edit_tool(reader: Incident, turn: int, edit: Edit) -> tuple[Incident, str]:
    value = edit.value if isinstance(edit.value, dict) else {}
    name, definition = value.get("name"), value.get("definition")
    offered = [t.get("name") for t in reader.model_inputs[turn].get("tools") or [] if isinstance(t, dict)]
    if name not in offered:
        shown = ", ".join(str(n) for n in offered) or "none"
        raise BlackboxError(
            f"--tool {name}: the request at step {edit.step} offers no such tool (it offers: {shown})"
        )
    if not isinstance(definition, dict) or not definition or set(definition) - _TOOL_FIELDS:
        raise BlackboxError(f'--tool {name}: expected a JSON object of "description" and/or "inputSchema"')
    if "description" in definition and not isinstance(definition["description"], str):
        raise BlackboxError(f'--tool {name}: "description" is a string')
    if "inputSchema" in definition and not isinstance(definition["inputSchema"], dict):
        raise BlackboxError(f'--tool {name}: "inputSchema" is a JSON object')

    def change(source: JsonObject) -> JsonObject:
        tools = source.get("tools")
        if not isinstance(tools, list):
            return source
        return {
            **source,
            "tools": [
                {**t, **definition} if isinstance(t, dict) and t.get("name") == name else t for t in tools
            ],
        }

    return _from_turn(reader, turn, change), f"definition of tool {name}"
