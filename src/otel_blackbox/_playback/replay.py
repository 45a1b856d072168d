"""Replay: every request is answered from a cassette, never sent.

A model request is normalized and compared with the recorded step (``match="exact"``), or simply
served in order (``match="sequence"``); any other request is answered by a recorded exchange with
the same method, URL and body (only method and URL in sequence; exchanges.py). Both sides are
compared masked, as the recording was masked, so a run that sends the same credential again still
matches. The first difference is answered with an HTTP 400 whose message starts with
``[blackbox]``, and the session ends with ReplayDivergence; a run that stops short of the recorded
model calls, or ends otherwise than the recording did, ends with ReplayIncomplete.

``Player`` serves a cassette; a fork serves its parent's steps before the fork point with it too.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from otel_blackbox._cassette.diff.json_paths import first_difference
from otel_blackbox._cassette.model import (
    OBSERVED,
    Cassette,
    Step,
    comparable_results,
    observed_view,
    terminal_outcome,
)
from otel_blackbox._cassette.output import check_outputs
from otel_blackbox._cassette.trusted import checked_cassette
from otel_blackbox._playback.exchanges import ExchangeBook, ExchangeRequest, recorded_exchanges, short
from otel_blackbox._playback.http.exchange import HttpRequest, HttpResponse
from otel_blackbox._playback.interceptor import (
    Diverged,
    Match,
    Mode,
    Session,
    json_body,
    masked,
    provider_of,
    same_json,
    tag_current_span,
)
from otel_blackbox._spans.redact import Redactor
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.protocol import Provider
from otel_blackbox.errors import CassetteError, ReplayIncomplete

if TYPE_CHECKING:
    from otel_blackbox._playback.tool_stubs.answers import ToolStubber

__all__ = ["Player", "ReplaySession", "load_recording"]


def load_recording(path: str | Path, *, allow_unverified: bool = False) -> Cassette:
    """The cassette a replay or a fork serves, checked before use (CassetteError for one that fails
    verify's hash_chain, unless ``allow_unverified``)."""
    if not Path(path).is_file():
        raise CassetteError(f"{path}: no such cassette (record it first)")
    return checked_cassette(path, allow_unverified=allow_unverified)


class Player:
    """Answers a run's requests from ``cassette``, its model calls from step ``after`` up to step
    ``before``."""

    def __init__(
        self,
        cassette: Cassette,
        source: str,
        *,
        match: Match,
        redactor: Redactor,
        ids: CallIds,
        before: int | None = None,
        after: int = 0,
    ) -> None:
        self.match = match
        self.ids = ids
        self._redactor = redactor
        self.model_steps: list[tuple[Step, Step]] = [
            (s, nxt)
            for s, nxt in zip(cassette.steps, cassette.steps[1:], strict=False)
            if s.type == "model_input"
            and nxt.type == "model_output"
            and (before is None or s.index < before)
            and s.index >= after  # a branch's child: the incident's calls before its point are not replayed
        ]
        check_outputs(cassette, source)  # a malformed field: refused before anything is answered
        # Exact: method, URL and body must match; sequence: method and URL (exchanges.py).
        self._exchanges = ExchangeBook(recorded_exchanges(cassette, source), compare_body=match == "exact")
        self.served_models = 0
        self.final_answer: str | None = None
        self.last_output: dict[str, Any] | None = None  # the latest model output served

    @property
    def models_left(self) -> bool:
        return self.served_models < len(self.model_steps)

    def serve_model(self, provider: Provider, body: dict[str, Any]) -> HttpResponse:
        if not self.models_left:
            raise Diverged(f"model call {self.served_models + 1} was not recorded (the cassette has "
                           f"{len(self.model_steps)})")  # fmt: skip
        recorded_input, recorded_output = self.model_steps[self.served_models]
        if self.match == "exact":
            # Both masked: the recording holds masks where the program sends credentials again.
            # Only what the recording observed (all of it, unless it was built from spans); tool
            # results that are JSON on both sides compared as JSON values.
            observed = recorded_input.payload.get(OBSERVED)
            got = masked(observed_view(provider.model_input(body, self.ids), observed), self._redactor)
            recorded = masked(observed_view(recorded_input.payload, observed), self._redactor)
            got, recorded = comparable_results(got), comparable_results(recorded)
            if not same_json(got, recorded):
                diff = first_difference(recorded, got, "$")
                where = (
                    f"{diff.path}: recorded {short(diff.parent)}, got {short(diff.child)}" if diff else "?"
                )
                raise Diverged(f"step {recorded_input.index} (model_input) differs at {where}")
        self.served_models += 1
        tag_current_span(recorded_input.index)
        if recorded_output.payload.get("type") == "final_answer":
            self.final_answer = str(recorded_output.payload.get("text", ""))
        self.last_output = recorded_output.payload
        self.ids.learn(recorded_output.payload)  # its calls, for a program that sends them back without ids
        wire = provider.wire_response(recorded_output.payload, body)
        return HttpResponse(wire.status, wire.headers, wire.body)

    def serve_exchange(self, request: HttpRequest) -> HttpResponse:
        """The first unused recorded exchange that matches, or a divergence naming the closest one."""
        wanted = ExchangeRequest.of(request, self._redactor)  # masked as the recording masked it
        found = self._exchanges.take(wanted)
        if found is None:
            raise Diverged(self._exchanges.miss(wanted).divergence())
        return found.response()

    def check_complete(self) -> None:
        """ReplayIncomplete when the run made fewer model calls than were recorded."""
        if self.models_left:
            missing = self.model_steps[self.served_models][0]
            raise ReplayIncomplete(
                f"[blackbox] the run made {self.served_models} of {len(self.model_steps)} recorded model "
                f"calls; the next one was step {missing.index} (model_input)"
            )


class ReplaySession(Session):
    """``session(mode="replay")``: answers the run from the cassette at ``path`` and checks it ended alike."""

    mode: ClassVar[Mode] = "replay"

    def __init__(
        self,
        path: str | Path,
        *,
        match: Match = "exact",
        stub_tools: bool = False,
        after: int = 0,
        allow_unverified: bool = False,
    ) -> None:
        super().__init__(path, match=match, stub_tools=stub_tools)
        self.cassette = load_recording(self.path, allow_unverified=allow_unverified)
        self.player = Player(
            self.cassette, str(self.path), match=self.match, redactor=self.redactor, ids=self.ids, after=after
        )

    def intercept(self, request: HttpRequest) -> HttpResponse | None:
        return self._answered(request, self._answer)

    def _tool_stubber(self) -> ToolStubber:
        """Each tool call by its call id, as the recording answered it; a miss diverges."""
        from otel_blackbox._playback.agent.incident import recorded_results
        from otel_blackbox._playback.tool_stubs.answers import ToolStubber

        return ToolStubber(
            ids=self.ids,
            by_id=recorded_results(self.cassette),
            on_miss="diverge",
            diverge=self._tool_diverged,
            compare_arguments=self.match == "exact",
        )

    def observe(self, request: HttpRequest, response: HttpResponse) -> None:
        """Never called: a replay lets no request out."""
        return None

    def _answer(self, request: HttpRequest) -> HttpResponse:
        provider = provider_of(request)
        body = json_body(request) if provider else None
        if provider is not None and body is not None:
            return self.player.serve_model(provider, body)
        return self.player.serve_exchange(request)

    def _conclude(self, error: BaseException | None) -> None:
        if self.error is not None:
            raise self.error
        self.player.check_complete()
        recorded = terminal_outcome(self.cassette)
        if recorded.status == "success" and error is not None:
            raise ReplayIncomplete(
                f"[blackbox] the recording succeeded, the replay raised {type(error).__name__}"
            )
        # A run with no model answer records "" and replays None: both mean "no answer".
        if recorded.status == "success" and (recorded.final_answer or None) != (
            self.player.final_answer or None
        ):
            raise ReplayIncomplete("[blackbox] the replay ended with another final answer than the recording")
