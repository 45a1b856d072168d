"""Fork a recorded run at a tool result: "what if the tool had returned this instead?".

The program is replayed from the parent cassette up to step N (a ``tool_result``). The child
cassette holds the parent's steps 0..N-1 verbatim (same timestamps, same hashes), then at N the
replacement result with the parent's timestamp, then whatever the run does next: model calls sent
to the real upstream (``live``) or answered from a script of neutral model outputs. The program's
other HTTP requests are answered from the parent's exchanges as a replay answers them (same method,
URL and body in exact mode; exchanges.py) up to the fork point and, with a script, after it too: a
tool called with other arguments than the parent's diverges. Live, they go out after the fork.

The replacement reaches the model, not the program: every request that carries the forked tool
result is rewritten before it is matched or sent. The program's own variables still hold what
the tool really returned.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from otel_blackbox._cassette.model import Cassette, choice_calls, highest_call_index, tool_calls_of
from otel_blackbox._playback.http.exchange import HttpRequest, HttpResponse
from otel_blackbox._playback.interceptor import Match, Mode, Session, json_body, now_ms, provider_of
from otel_blackbox._playback.record import Recorder
from otel_blackbox._playback.replay import Player, load_recording
from otel_blackbox._playback.script import check_replies, scripted_reply
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.protocol import Provider
from otel_blackbox.errors import SessionError

if TYPE_CHECKING:
    from otel_blackbox._playback.tool_stubs.answers import ToolStubber

__all__ = ["ForkPlan", "ForkSession"]


@dataclass(frozen=True)
class ForkPlan:
    at: int  # the tool_result step to replace
    result: Any  # the replacement result (JSON)
    output: Path  # where the child cassette goes
    replies: list[dict[str, Any]] | None = None  # scripted model outputs; None: live upstream


class ForkSession(Session):
    """Replays ``parent`` up to ``plan.at``, replaces that tool result, records what follows."""

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
        if not 0 <= plan.at < len(steps) or steps[plan.at].type != "tool_result":
            found = steps[plan.at].type if 0 <= plan.at < len(steps) else "beyond the last step"
            raise SessionError(f"--at {plan.at}: a fork starts at a tool_result step, this is {found}")
        forked = steps[plan.at]
        self._call_id = str(forked.payload.get("toolCallId"))
        self.cassette = Cassette(
            id=f"{self.parent.id}-fork",
            created_at=now_ms(),
            parent_id=self.parent.id,
            forked_from_step_id=forked.id,
            api=self.parent.api,  # the prefix's first model call is the parent's
        )
        for step in steps[: plan.at]:  # verbatim: same timestamps, so the same hashes
            self.cassette.append(step.type, step.payload, step.timestamp)
        replaced = {
            "toolCallId": self._call_id,
            "toolName": forked.payload.get("toolName"),
            "result": plan.result,
        }
        self.cassette.append("tool_result", replaced, forked.timestamp)
        self.ids = CallIds(start=highest_call_index(self.parent.steps[: plan.at + 1]) + 1)
        # Before the fork point: the parent's answers. After it: a recording of the child.
        self.player = Player(
            self.parent,
            str(parent),
            match=self.match,
            redactor=self.redactor,
            ids=self.ids,
            before=plan.at,
        )
        self.recorder = Recorder(
            self.cassette,
            self.path,
            self.redactor,
            self.ids,
            masked_from=plan.at,  # the copied steps keep the parent's hashes
            pending=_unresolved_calls(self.cassette),
        )
        self._replies = check_replies(list(plan.replies)) if plan.replies is not None else None
        self._continued = False

    def _tool_stubber(self) -> ToolStubber:
        """The calls the parent's model made before the fork point by call id (the forked one gets
        the replacement); the calls made after it by name and arguments, among the parent's later
        results. A miss is a tool error the model sees (or runs, with --run-unrecorded-tools)."""
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
            replace(r, outcome={"result": self.plan.result}) if r.step == self.plan.at else r
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
        """Every request that carries the forked tool result carries the replacement instead."""
        provider = provider_of(request)
        body = json_body(request) if provider else None
        if provider is None or body is None:
            return None
        changed = provider.replace_tool_result(body, self._call_id, self.plan.result)
        return None if changed is None else json.dumps(changed, ensure_ascii=False).encode("utf-8")

    def intercept(self, request: HttpRequest) -> HttpResponse | None:
        return self._answered(request, self._answer)

    def _answer(self, request: HttpRequest) -> HttpResponse | None:
        provider = provider_of(request)
        body = json_body(request) if provider else None
        if provider is not None and body is not None:
            if self.player.models_left:
                return self.player.serve_model(provider, body)
            return self._continue(provider, body)
        if not self._continued or self._replies is not None:
            return self.player.serve_exchange(request)
        self.recorder.remember_keys(request)
        return None  # live: a tool's own HTTP call after the fork goes out and is recorded

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


def _unresolved_calls(child: Cassette) -> list[dict[str, Any]]:
    """Calls of the last copied model output whose results are not in the child yet."""
    outputs = [s for s in child.steps if s.type == "model_output"]
    if not outputs:
        return []
    done = {s.payload.get("toolCallId") for s in child.steps if s.type == "tool_result"}
    return [c.__dict__ for c in tool_calls_of(outputs[-1].payload) if c.tool_call_id not in done]
