"""The pages of "Edit and continue": a run's steps (``/run/<id>/steps``), a job's cassette with each
step's link (``/job/<id>/child``, ``/job/<id>/incident``), and a step's editor (``.../edit/<N>``):
what the step holds, each change that fits it with its content to edit (JSON for a tool result or
tool calls, text for a message or the system prompt), and the provider, model and cost limit to
continue on. The form goes to ``POST /fork`` (``fork_action.py``). Escaped as every page is; the
editor's one script fills the tool definition field when another tool is chosen, as text.
"""

from __future__ import annotations

import json
from typing import Any

from otel_blackbox._cassette.model import Step, tool_calls_of
from otel_blackbox._playback.agent.incident import Incident
from otel_blackbox._playback.agent.sdk import available_apis
from otel_blackbox._render.cassette_text import describe_step
from otel_blackbox._render.html_report import EDITABLE_STEPS, cassette_report
from otel_blackbox._web.fork_action import ForkParent
from otel_blackbox._web.request_context import NotFound
from otel_blackbox._web.workbench_pages import (
    cost_field,
    e,
    hidden_field,
    provider_select,
    shell,
    stub_field,
    under_bar,
    workbench_bar,
)
from otel_blackbox._web.workspace import StubField, stub_fields

__all__ = ["editor_page", "steps_page"]

# The changes that fit each editable step, and what each does, as its choice says.
_FITS = {
    "tool_result": ("set", "set-error"),
    "model_output": ("calls", "answer"),
    "model_input": ("user", "insert-user", "system", "tool"),
}
_SAYS = {
    "set": "the tool returns this instead (JSON: a string in quotes)",
    "set-error": "the tool fails with this error instead",
    "calls": 'the model makes these tool calls instead (a JSON list of {"toolName", "toolInput"})',
    "answer": "the model gives this final answer instead (the run ends there)",
    "user": "its last user message says this instead",
    "insert-user": "a user message added after its messages",
    "system": "the system prompt, of this request and every later one",
    "tool": 'a tool\'s definition ({"description", "inputSchema"}), in this request and every later one',
}


def steps_page(parent: ForkParent, back: tuple[str, str]) -> str:
    """The parent's steps, each editable one with its "Edit and continue"; ``back``: (href, text)."""
    page = cassette_report(parent.cassette, edit_base=f"/{parent.name}/edit")
    return under_bar(page, workbench_bar(back))


def editor_page(parent: ForkParent, index: int, *, token: str, read_only: bool) -> str:
    """Step ``index`` of the parent, and the form that changes it and lets the run go on."""
    steps = parent.cassette.steps
    if not 0 <= index < len(steps):
        raise NotFound(f"{parent.label} has steps 0 to {len(steps) - 1}, not {index}")
    step = steps[index]
    if step.type not in EDITABLE_STEPS:
        raise NotFound(
            f"step {index} is a {step.type}: a model_input, model_output or tool_result can be edited"
        )
    incident = parent.incident
    values = _prefill(step)
    fits = [change for change in _FITS[step.type] if change in values]
    choices = "".join(_choice(change, values[change], checked=n == 0) for n, change in enumerate(fits))
    apis = available_apis()
    api = incident.api if incident.api in apis else (apis[0] if apis else None)
    stubs = "".join(stub_field(f, None, required=False) for f in _stubbable(incident))
    stub_part = (
        f"<details><summary>answers for calls the recording has no result for</summary>{stubs}</details>"
        if stubs
        else ""
    )
    disabled = " disabled" if read_only or not apis else ""
    note = '<span class="note">read-only: no edit</span>' if read_only else ""
    body = (
        f"<h1>Edit step {index} of {e(parent.label)} and continue</h1>"
        f'<p><a href="/{e(parent.name)}">all its steps</a></p>'
        f'<p data-testid="edit-step-type">{e(step.type)}: {e(describe_step(step, 300))}</p>'
        f"<details><summary>what it holds</summary><pre>{e(_json(step.payload))}</pre></details>"
        '<form method="post" action="/fork" class="panel" data-testid="edit-form">'
        + hidden_field(token, parent=parent.name, step=str(index))
        + choices
        + "<h2>Continue on</h2>"
        + provider_select(apis, api)
        + f'<label>model<input type="text" name="model" value="{e(incident.model or "")}" size="24"></label>'
        + cost_field()
        + stub_part
        + f'<p><button type="submit" data-testid="edit-submit"{disabled}>Edit and continue</button> {note}'
        '<span class="hint">the steps before it are copied, this one changed, and the built-in agent '
        "goes on; every tool answered from the recording, never run</span></p></form>"
    )
    return shell(f"edit step {index}", body, script=_TOOL_SCRIPT if "tool" in fits else "")


def _stubbable(incident: Incident) -> list[StubField]:
    """A stub field for each tool offered: those with no good recorded answer first (stub_fields),
    then the others, whose calls after an edit may ask what the recording never answered."""
    first = stub_fields(incident)
    named = {f.tool for f in first}
    return first + [StubField(tool, None, False) for tool in sorted(incident.offered_tools() - named)]


def _choice(change: str, value: Any, *, checked: bool) -> str:
    """One change: its radio, what it does, and its field (a tool's: which tool, then its definition)."""
    radio = (
        f'<label class="change"><input type="radio" name="change" value="{e(change)}"'
        f'{" checked" if checked else ""} data-testid="change-{e(change)}"> <b>{e(change)}</b>: '
        f"{e(_SAYS[change])}</label>"
    )
    if change == "tool":
        tools: list[tuple[str, str]] = value
        options = "".join(
            f'<option value="{e(name)}" data-definition="{e(text)}">{e(name)}</option>'
            for name, text in tools
        )
        field = (
            f'<label>tool<select name="tool_name" id="tool-name">{options}</select></label>'
            f'<textarea name="value:tool" id="tool-definition" rows="8" cols="100" '
            f'data-testid="value-tool">{e(tools[0][1])}</textarea>'
        )
    else:
        rows = max(3, min(16, str(value).count("\n") + 2))
        field = (
            f'<textarea name="value:{e(change)}" rows="{rows}" cols="100" data-testid="value-{e(change)}">'
            f"{e(value)}</textarea>"
        )
    return f'<div class="panel">{radio}{field}</div>'


def _prefill(step: Step) -> dict[str, Any]:
    """What each change's field starts with: the step as it is (an empty field for what it lacks)."""
    payload = step.payload if isinstance(step.payload, dict) else {}
    if step.type == "tool_result":
        result = _json(payload["result"]) if "result" in payload else ""
        return {"set": result, "set-error": str(payload.get("error") or "")}
    if step.type == "model_output":
        calls = [{"toolName": c.tool_name, "toolInput": c.tool_input} for c in tool_calls_of(payload)]
        return {"calls": _json(calls) if calls else "", "answer": _text(payload.get("text"))}
    messages = [m for m in payload.get("messages") or [] if isinstance(m, dict)]
    said = [m for m in messages if m.get("role") == "user" and _text(m.get("content"))]
    values: dict[str, Any] = {
        "user": _text(said[-1].get("content")) if said else "",
        "insert-user": "",
        "system": _text(payload.get("systemPrompt")),
    }
    tools = [
        (str(t["name"]), _json({k: t[k] for k in ("description", "inputSchema") if k in t}))
        for t in payload.get("tools") or []
        if isinstance(t, dict) and isinstance(t.get("name"), str)
    ]
    if tools:
        values["tool"] = tools
    return values


def _text(content: Any) -> str:
    """A message's (or system prompt's) text: a string, or its text parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text")) for part in content if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


# Another tool chosen: its definition in the field (text only, from the option's data attribute).
_TOOL_SCRIPT = """
(function(){var s=document.getElementById('tool-name'),t=document.getElementById('tool-definition');
s.addEventListener('change',function(){t.value=s.options[s.selectedIndex].getAttribute('data-definition');});})();
"""
