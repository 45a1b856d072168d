"""What a program's fork changes at step N (fork.py), each change meaning what it means for the
built-in agent (agent/edit.py, whose ``start_of`` checks that the change fits its step and says what
it changes: there is one home for both).

A program cannot be handed a new conversation as the built-in agent is: it sends its own requests.
So a change reaches the model as a rewrite of those requests (``RequestChange``), or as the answer
served for the program's model call at that turn (fork.py):

- a tool result (``--set`` / ``--set-error``): every request that carries that call's result carries
  the new result, or the error marked as the API marks a tool's failure
  (``Provider.replace_tool_result``);
- a model output (``--answer`` / ``--calls``): the program's call at that turn is answered with it
  (fork.py), no request rewritten;
- a user message, the system prompt, a tool's definition (a model_input): the request at that turn
  and every later one (``Provider.edit_request``); a user message again in a later request only at
  the same place of the same conversation (the later request's messages begin with the turn's).
"""

from __future__ import annotations

from typing import Any

from otel_blackbox._cassette.model import Cassette
from otel_blackbox._playback.agent.edit import Edit, Start, edit_from, start_of
from otel_blackbox._playback.agent.incident import read_incident
from otel_blackbox._types import JsonObject
from otel_blackbox._wire.protocol import REQUEST_EDITS, Provider

__all__ = ["RequestChange", "plan_edit", "program_start"]


def plan_edit(at: int, change: str, text: str | None, result: Any) -> Edit:
    """The Edit a fork plan asks for: ``--set``'s parsed ``result``, or ``change`` with its ``text``
    as the CLI took it (``edit_from``: BlackboxError for JSON that does not parse)."""
    if change == "set":
        return Edit("tool_result", at, {"result": result})
    return edit_from(at, change, text or "")


def program_start(parent: Cassette, source: str, edit: Edit) -> Start:
    """``start_of`` on the parent of a program's fork: the edit described (``Start.edit``) and, for a
    model output, the output itself, its calls numbered after the parent's (``Start.resume.output``);
    BlackboxError, one line, when the change does not fit its step."""
    return start_of(parent, read_incident(parent, source), edit)


class RequestChange:
    """What a fork rewrites in the program's model requests (``rewrite``). ``call_id``: the call
    whose result a tool_result change replaces."""

    def __init__(self, edit: Edit, call_id: str | None = None) -> None:
        self.edit = edit
        self._call_id = call_id
        self._since: JsonObject | None = None  # the request a user message was changed in, as sent

    def rewrite(self, provider: Provider, body: JsonObject, *, reached: bool) -> JsonObject | None:
        """The request with the change in it, or None to send it as it is. ``reached``: the request
        is the one at the changed step or a later one (not one the parent's answers serve)."""
        kind, value = self.edit.kind, self.edit.value
        if kind == "tool_result" and self._call_id is not None:
            error = "error" in value
            outcome = value["error"] if error else value.get("result")
            return provider.replace_tool_result(body, self._call_id, outcome, error=error)
        if kind not in REQUEST_EDITS or not reached:
            return None
        if kind == "user_message":
            if self._since is None:
                self._since = body
            else:
                value = {**value, "since": self._since}
        return provider.edit_request(body, kind, value)
