"""Fork a recorded program's run at step N: "what if this step had been otherwise?".

The program is replayed from the parent cassette up to step N. The child cassette holds the
parent's steps 0..N-1 verbatim (same timestamps, same hashes), then the change, recorded as its
``edit`` field, then whatever the run does next: model calls sent to the real upstream (``live``) or
answered from a script of neutral model outputs. The program's other HTTP requests are answered from
the parent's exchanges as a replay answers them (same method, URL and body in exact mode;
exchanges.py) up to the fork point and, with a script, after it too: a tool called with other
arguments than the parent's diverges. Live, they go out after the fork.

Each change means what it means for the built-in agent (agent/edit.py) and reaches the model as
fork_edits.py says: a tool_result step's new result or error is in every request that carries that
result, rewritten before it is matched or sent (the child's step N, with the parent's timestamp); a
model_output step's new answer or calls answer the program's model call at that turn (checked
against the parent's request first), recorded as step N; a model_input step's new user message,
system prompt or tool definition is in the request at that turn and every later one, and the child's
step N is that rewritten request. The program's own variables still hold what really happened: what
the tool returned, what it sent.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from otel_blackbox._cassette.model import Cassette, choice_calls, highest_call_index, tool_calls_of
from otel_blackbox._playback.agent.edit import Edit
from otel_blackbox._playback.fork_edits import RequestChange, plan_edit, program_start
from otel_blackbox._playback.http.exchange import HttpRequest, HttpResponse
from otel_blackbox._playback.interceptor import Match, Mode, Session, json_body, now_ms, provider_of
from otel_blackbox._playback.record import Recorder
from otel_blackbox._playback.replay import Player, load_recording
from otel_blackbox._playback.script import check_replies, scripted_reply
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.protocol import Provider
from otel_blackbox.errors import BlackboxError, SessionError

if TYPE_CHECKING:
    from otel_blackbox._playback.tool_stubs.answers import ToolStubber

__all__ = ["ForkPlan", "ForkSession", "set_point_error"]


@dataclass(frozen=True)
class ForkPlan:
    at: int  # the step to change
    result: Any  # --set: the replacement result (JSON); None for the other changes
    output: Path  # where the child cassette goes
    replies: list[dict[str, Any]] | None = None  # scripted model outputs; None: live upstream
    change: str = "set"  # one of edit.py's CHANGES
    text: str | None = None  # the change's value as given (all but set)
    by: str = "command"  # who asked: the child's edit.by

    def edit(self) -> Edit:
        return plan_edit(self.at, self.change, self.text, self.result)


class ForkSession(Session):
    """Replays ``parent`` up to ``plan.at``, changes that step, records what follows."""

    mode: ClassVar[Mode] = "fork"

    def __init__(
        self,
        parent: str | Path,
        plan: ForkPlan,
        *,
        match: Match = "exact",
        stub_tools: bool = False,
        run_unrecorded_tools: bool = False,
        allow_unverified: bool = False,
    ) -> None:
        super().__init__(
            plan.output, match=match, stub_tools=stub_tools, run_unrecorded_tools=run_unrecorded_tools
        )
        self.plan = plan
        self.parent = load_recording(parent, allow_unverified=allow_unverified)
        steps = self.parent.steps
        if plan.change == "set" and (refused := set_point_error(self.parent, plan.at)) is not None:
            raise SessionError(refused)
        self.edit, self._output = _described(self.parent, str(parent), plan)
        forked = steps[plan.at]
        self._call_id = str(forked.payload.get("toolCallId")) if self.edit.kind == "tool_result" else None
        self.cassette = Cassette(
            id=f"{self.parent.id}-fork",
            created_at=now_ms(),
            parent_id=self.parent.id,
            forked_from_step_id=forked.id,
            api=self.parent.api,  # the prefix's first model call is the parent's
            edit=self.edit.hint(plan.by),
        )
        for step in steps[: plan.at]:  # verbatim: same timestamps, so the same hashes
            self.cassette.append(step.type, step.payload, step.timestamp)
        if self._call_id is not None:
            head = {"toolCallId": self._call_id, "toolName": forked.payload.get("toolName")}
            self.cassette.append("tool_result", {**head, **self.edit.value}, forked.timestamp)
        elif self._output is not None:
            self.cassette.append("model_output", self._output, forked.timestamp)
        self.ids = CallIds(start=highest_call_index(self.cassette.steps) + 1)
        # Before the fork point: the parent's answers. After it: a recording of the child.
        self.player = Player(
            self.parent,
            str(parent),
            match=self.match,
            redactor=self.redactor,
            ids=self.ids,
            before=plan.at,  # an edited output's turn too: its request is checked, then answered so
        )
        self.recorder = Recorder(
            self.cassette,
            self.path,
            self.redactor,
            self.ids,
            masked_from=plan.at,  # the copied steps keep the parent's hashes
            pending=_unresolved_calls(self.cassette),
        )
        self.change = RequestChange(self.edit, self._call_id)
        self._replies = check_replies(list(plan.replies)) if plan.replies is not None else None
        self._continued = False

    def _tool_stubber(self) -> ToolStubber:
        """The calls the parent's model made before the fork point by call id (a forked tool result's
        call gets the new outcome); the calls made after it (an edited output's among them) by name
        and arguments, among the parent's later results. A miss is a tool error the model sees (or
        runs, with --run-unrecorded-tools)."""
        from otel_blackbox._playback.agent.incident import recorded_results
        from otel_blackbox._playback.tool_stubs.answers import ToolStubber

        before = {
            call.tool_call_id
            for step in self.parent.steps[: self.plan.at]
            if step.type == "model_output"
            for calls in choice_calls(step.payload)
            for call in calls
        }
        results = [
            replace(r, outcome=dict(self.edit.value)) if r.step == self.plan.at and self._call_id else r
            for r in recorded_results(self.parent)
        ]
        return ToolStubber(
            ids=self.ids,
            by_id=[r for r in results if r.call_id in before],
            by_arguments=[r for r in results if r.call_id not in before and r.step > self.plan.at],
            on_miss="run" if self.run_unrecorded_tools else "error",
            recording="the parent run",
            compare_arguments=self.match == "exact",
        )

    # -- the interceptor ---------------------------------------------------------------------------

    def rewrite(self, request: HttpRequest) -> bytes | None:
        """The change in every request it reaches (fork_edits.py), before it is matched or sent."""
        provider = provider_of(request)
        body = json_body(request) if provider else None
        if provider is None or body is None:
            return None
        with self._lock:
            changed = self.change.rewrite(provider, body, reached=not self.player.models_left)
        return None if changed is None else json.dumps(changed, ensure_ascii=False).encode("utf-8")

    def intercept(self, request: HttpRequest) -> HttpResponse | None:
        return self._answered(request, self._answer)

    def _answer(self, request: HttpRequest) -> HttpResponse | None:
        provider = provider_of(request)
        body = json_body(request) if provider else None
        if provider is not None and body is not None:
            if self._output is not None and self.player.served_models == len(self.player.model_steps) - 1:
                return self._edited(provider, body, self._output)
            if self.player.models_left:
                return self.player.serve_model(provider, body)
            return self._continue(provider, body)
        if not self._continued or self._replies is not None:
            return self.player.serve_exchange(request)
        self.recorder.remember_keys(request)
        return None  # live: a tool's own HTTP call after the fork goes out and is recorded

    def _edited(self, provider: Provider, body: dict[str, Any], output: dict[str, Any]) -> HttpResponse:
        """The model call at an edited output's turn: the request checked as the parent's answers
        check theirs, then answered with the edited output, the child's step N."""
        made = copy.deepcopy(self.ids.made)
        self.player.serve_model(provider, body)  # Diverged when it is not the parent's request
        self.ids.made = made  # the parent's calls at that turn were never handed to the program
        self.ids.learn(output)  # its calls, for a program that sends them back without ids
        self.recorder.took_output(output)
        self._continued = True
        wire = provider.wire_response(output, body)
        return HttpResponse(wire.status, wire.headers, wire.body)

    def _continue(self, provider: Provider, body: dict[str, Any]) -> HttpResponse | None:
        self._continued = True
        if self._replies is None:  # live: send it; observe() records the answer
            return None
        return scripted_reply(self.recorder, self._replies, provider, body)

    def observe(self, request: HttpRequest, response: HttpResponse) -> None:
        if self._continued and self._replies is None:
            with self._lock:
                self.recorder.record_observed(request, response)

    # -- the end -----------------------------------------------------------------------------------

    def _conclude(self, error: BaseException | None) -> None:
        if self.error is not None:
            raise self.error
        if not self._continued:
            raise SessionError(
                f"the run ended before the fork point: it made {self.player.served_models} of the "
                f"{len(self.player.model_steps)} model calls before step {self.plan.at}"
            )
        self.recorder.close(error)


def _described(parent: Cassette, source: str, plan: ForkPlan) -> tuple[Edit, dict[str, Any] | None]:
    """The plan's Edit with its description, and an edited model output (None for the other changes);
    SessionError when the change does not fit its step (edit.py's ``start_of``: the CLI refused it
    before the program started). ``--set`` keeps forking at a last tool result, which the built-in
    agent refuses (no model call follows it): the program may make one."""
    try:
        edit = plan.edit()
        start = program_start(parent, source, edit)
    except BlackboxError as exc:
        if plan.change != "set":
            raise SessionError(str(exc)) from None
        name = parent.steps[plan.at].payload.get("toolName")
        return replace(edit, description=f"tool result of {name}"), None
    return start.edit, start.resume.output if edit.kind == "model_output" else None


def set_point_error(parent: Cassette, at: int) -> str | None:
    """Why ``--set`` cannot replace step ``at`` of ``parent`` (not a tool_result), or None."""
    steps = parent.steps
    if 0 <= at < len(steps) and steps[at].type == "tool_result":
        return None
    found = steps[at].type if 0 <= at < len(steps) else "beyond the last step"
    return f"--at {at}: a fork starts at a tool_result step, this is {found}"


def _unresolved_calls(child: Cassette) -> list[dict[str, Any]]:
    """Calls of the last copied model output whose results are not in the child yet."""
    outputs = [s for s in child.steps if s.type == "model_output"]
    if not outputs:
        return []
    done = {s.payload.get("toolCallId") for s in child.steps if s.type == "tool_result"}
    return [c.__dict__ for c in tool_calls_of(outputs[-1].payload) if c.tool_call_id not in done]
