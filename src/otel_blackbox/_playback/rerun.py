"""Rerun a recorded incident: the program runs again, its model live, its other HTTP from the recording.

The road from a recorded failure to a verified fix: run the same unmodified program again with the
model called live (``--model NAME`` makes every model request name NAME before it is sent), or
answered from a script of neutral model outputs, while every other HTTP request the incident
recorded (its ``http_exchange`` steps: a tool's API, a refund, an email) is answered from the
recording and never sent again.

A non-model request is matched as an exact replay matches it (exchanges.py): on method, URL and
body (JSON bodies as canonical JSON, others as bytes), both masked as the recording masked them;
each recorded exchange answers once, the first unused one that matches. A request the incident did
not record is refused with an HTTP 400 whose message starts with ``[blackbox]``, names the request
and the closest recorded one, and is reported again when the run ends; with ``allow_network`` it
goes out and is recorded. A malformed http_exchange step is a CassetteError naming it.

The child cassette is a recording like ``record`` makes (model steps from the wire, tool rounds,
http_exchange steps, masking, the credential-leak refusal) whose ``parentId`` is the incident's id.
It has no ``forkedFromStepId``: nothing of the incident is copied into it, the rerun starts over.
A refused request is recorded as the 400 the program received, so a replay of the child serves
the program exactly what it saw.

A branch of ``blame -- CMD`` reruns the program from a point of the incident: its first
``replay_turns`` model calls are answered with the incident's own outputs (as a script answers),
the rest live; with a ``correction`` (a tool call's id and its corrected outcome), every model
request that carries that tool's result carries the correction instead, as a fork's does.

With a budget (``max_cost``, budget.py), each live model call is first checked against what the
child's calls so far cost: once they reach it, or once a call cannot be priced, the call gets a
``[blackbox]`` HTTP 400 instead of going out, the child ends ``run_failed`` / ``max_cost``, and the
session ends with a SessionError saying so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from otel_blackbox._cassette.model import Cassette
from otel_blackbox._cassette.trusted import checked_cassette
from otel_blackbox._cost.cassettes import cassette_cost
from otel_blackbox._playback.budget import Budget
from otel_blackbox._playback.exchanges import ExchangeBook, ExchangeRequest, Miss, recorded_exchanges, short
from otel_blackbox._playback.http.exchange import HttpRequest, HttpResponse, Rewrite
from otel_blackbox._playback.interceptor import Mode, Session, error_response, json_body, now_ms, provider_of
from otel_blackbox._playback.record import Recorder, RunStopped
from otel_blackbox._playback.script import check_replies, scripted_reply
from otel_blackbox._render.hints import suggest
from otel_blackbox._render.words import counted
from otel_blackbox._wire.gemini.translation import GeminiGenerateContent
from otel_blackbox._wire.protocol import Provider
from otel_blackbox.errors import SessionError

if TYPE_CHECKING:
    from otel_blackbox._playback.tool_stubs.answers import ToolStubber

__all__ = ["RerunPlan", "RerunSession"]


@dataclass(frozen=True)
class RerunPlan:
    output: Path  # where the child cassette goes
    model: str | None = None  # the model every model request names instead; None: the program's own
    replies: list[dict[str, Any]] | None = None  # scripted model outputs; None: the live upstream
    allow_network: bool = False  # send (and record) the non-model requests the incident did not record
    max_cost: Decimal | None = None  # the budget of the live model calls, in US dollars
    allow_unverified: bool = False  # an incident that fails verify's hash_chain: go on (the caller warns)
    replay_turns: int = 0  # the first model calls answered with the incident's own outputs (blame)
    correction: dict[str, Any] | None = None  # {"toolCallId", "result"}: what the model sees instead
    # A branch of blame -- CMD: its messages suggest no --allow-network or --run-unrecorded-tools,
    # which blame does not take.
    blame_branch: bool = False


class RerunSession(Session):
    """The session of ``otel-blackbox rerun``: records a child of ``incident`` into ``plan.output``."""

    mode: ClassVar[Mode] = "rerun"

    def __init__(
        self,
        incident: str | Path,
        plan: RerunPlan,
        *,
        stub_tools: bool = False,
        run_unrecorded_tools: bool = False,
    ) -> None:
        if plan.model is not None and plan.replies is not None:
            raise SessionError("--model chooses the live model and --script answers instead of one: give one")
        if plan.model is not None and not plan.model.strip():
            raise SessionError("--model: give a model name")
        if plan.max_cost is not None and plan.replies is not None:
            raise SessionError("--max-cost is a budget for a live model: --script answers without one")
        super().__init__(plan.output, stub_tools=stub_tools, run_unrecorded_tools=run_unrecorded_tools)
        self.plan = plan
        self.incident = checked_cassette(incident, allow_unverified=plan.allow_unverified)
        now = now_ms()
        self.cassette = Cassette(
            id=f"{self.incident.id}-rerun-{now}", created_at=now, parent_id=self.incident.id
        )
        self.recorder = Recorder(self.cassette, self.path, self.redactor, self.ids)
        self._exchanges = ExchangeBook(recorded_exchanges(self.incident, str(incident)))
        self._replies = check_replies(list(plan.replies)) if plan.replies is not None else None
        outputs = [step.payload for step in self.incident.steps_of("model_output")]
        self._replayed = check_replies(outputs[: plan.replay_turns])  # the incident's, before a branch point
        self.model_calls = 0
        self._refusals: dict[str, int] = {}  # message -> times, in order
        self._budget = Budget(plan.max_cost) if plan.max_cost is not None else None
        self.stopped: RunStopped | None = None  # the budget's stop: the child ends with it

    def _tool_stubber(self) -> ToolStubber:
        """Each tool call by name and canonical arguments among the incident's results; a miss is a
        tool error the model sees (or runs, with --run-unrecorded-tools)."""
        from otel_blackbox._playback.agent.incident import recorded_results
        from otel_blackbox._playback.tool_stubs.answers import ToolStubber

        return ToolStubber(
            ids=self.ids,
            by_arguments=recorded_results(self.incident),
            on_miss="run" if self.run_unrecorded_tools else "error",
            run_hint=not self.plan.blame_branch,
        )

    # -- the interceptor ---------------------------------------------------------------------------

    def rewrite(self, request: HttpRequest) -> Rewrite | None:
        """With a model name, every live model request names it before it is sent or recorded: in
        its body, or in its URL for Gemini. With a correction, the corrected tool result in place of
        the one the program sends."""
        provider = provider_of(request)
        body = json_body(request) if provider is not None else None
        if provider is None or body is None:
            return None
        changed = body
        correction = self.plan.correction
        if correction is not None:
            replaced = provider.replace_tool_result(body, str(correction["toolCallId"]), correction["result"])
            changed = body if replaced is None else replaced
        model = None if self._replayed else self.plan.model  # a replayed call is the incident's own
        if model is not None and isinstance(provider, GeminiGenerateContent):
            url = provider.url_with_model(model)
            if url != request.url:
                return Rewrite(url=url, body=None if changed is body else _encoded(changed))
        elif model is not None and changed.get("model") != model:
            changed = {**changed, "model": model}
        return None if changed is body else Rewrite(body=_encoded(changed))

    def intercept(self, request: HttpRequest) -> HttpResponse | None:
        return self._answered(request, self._answer)

    def _answer(self, request: HttpRequest) -> HttpResponse | None:
        self.recorder.remember_keys(request)
        provider = provider_of(request)
        body = json_body(request) if provider else None
        if provider is not None and body is not None:
            if self._replayed:  # before the branch point: the incident's own answer, not a live call
                return scripted_reply(self.recorder, self._replayed, provider, body)
            if self._budget is not None:
                refused = self._over_budget(provider, body)
                if refused is not None:
                    return refused
            self.model_calls += 1
            if self._replies is None:
                return None  # live: observe() records the answer
            return scripted_reply(self.recorder, self._replies, provider, body)
        return self._answer_from_incident(request)

    def _over_budget(self, provider: Provider, body: dict[str, Any]) -> HttpResponse | None:
        """The [blackbox] 400 for a model call the budget does not allow, or None to make it."""
        assert self._budget is not None
        model = provider.model if isinstance(provider, GeminiGenerateContent) else body.get("model")
        try:
            self._budget.before_call(
                self.cassette,
                model=model if isinstance(model, str) else None,
                api=provider.name,
                call=self.model_calls + 1,
            )
        except RunStopped as stopped:
            self.stopped = self.stopped or stopped  # the first stop is the child's end
            return error_response(str(stopped))
        return None

    def observe(self, request: HttpRequest, response: HttpResponse) -> None:
        with self._lock:  # live model calls, and --allow-network requests
            self.recorder.record_observed(request, response)

    def _answer_from_incident(self, request: HttpRequest) -> HttpResponse | None:
        wanted = ExchangeRequest.of(request, self.redactor)
        found = self._exchanges.take(wanted)
        if found is not None:
            response = found.response()
            self.recorder.record_exchange(request, response)
            return response
        if self.plan.allow_network:
            return None  # observe() records it
        message = _refusal(self._exchanges.miss(wanted), hint=not self.plan.blame_branch)
        self._refusals[message] = self._refusals.get(message, 0) + 1
        refused = error_response(message)
        self.recorder.record_exchange(request, refused)  # the child replays what the program received
        return refused

    # -- the end -----------------------------------------------------------------------------------

    def _started(self) -> None:
        self.recorder.watch_tool_spans(self._lock)  # tool rounds from TOOL spans, as a recording takes them

    def _conclude(self, error: BaseException | None) -> None:
        if self.error is not None:
            raise self.error
        if self.stopped is not None:
            self.recorder.close(self.stopped)  # run_failed / max_cost, whatever the program did next
            raise SessionError(f"{self.stopped} ({self.path} holds the rerun so far)")
        self.recorder.close(error)

    def notes(self) -> list[str]:
        """What the launcher reports on stderr: each refused request, a run that re-ran nothing, and
        under a budget what the model calls cost."""
        lines = [message if n == 1 else f"{message} ({n} times)" for message, n in self._refusals.items()]
        lines += super().notes()
        if self._budget is not None:
            cost = cassette_cost(self.cassette)
            calls = counted(len(cost.calls), "model call")
            lines.append(
                f"[blackbox] the rerun's {calls} cost {cost.describe()} (--max-cost {self._budget.shown})"
            )
        if self.model_calls == 0:
            lines.append(
                f"[blackbox] the program made no model call: nothing was re-run ({self.path} holds the run)"
            )
        return lines


def _encoded(body: dict[str, Any]) -> bytes:
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


def _refusal(miss: Miss, *, hint: bool) -> str:
    """The refusal of a request the incident did not record, naming the closest one it did (``hint``:
    and the option that sends it)."""
    request, closest = miss.request, miss.closest
    head = f"[blackbox] {request.method} {request.url} was not recorded by the incident, so it was not sent"
    if hint:
        head += f" ({suggest('--allow-network')} sends it)"
    if closest is None:
        return f"{head}; the incident recorded no request to this URL"
    if miss.kind == "served":
        times = counted(miss.times, "time")
        return f"{head}; the incident made it {times}, already answered (step {closest.step})"
    if miss.kind == "method":
        return f"{head}; closest recorded: step {closest.step}, {closest.method} to the same URL"
    if miss.kind == "url":
        return f"{head}; closest recorded: step {closest.step}, {closest.method} {closest.url}"
    where = f" at {miss.path}" if miss.kind == "json" else ""
    difference = f"differs{where}: recorded {short(miss.recorded)}, got {short(miss.got)}"
    return f"{head}; closest recorded: step {closest.step}, whose body {difference}"
