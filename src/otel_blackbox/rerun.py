"""Rerun a recorded incident: the program runs again, its model live, its other HTTP from the recording.

The road from a recorded failure to a verified fix: run the same unmodified program again with the
model called live (``--model NAME`` makes every model request name NAME before it is sent), or
answered from a script of neutral model outputs, while every other HTTP request the incident
recorded (its ``http_exchange`` steps: a tool's API, a refund, an email) is answered from the
recording and never sent again.

A non-model request is matched on method, URL and body (JSON bodies as canonical JSON, others as
they are stored), both masked as the recording masked them; each recorded exchange answers once,
the first unused one that matches. A request the incident did not record is refused with an HTTP
400 whose message starts with ``[blackbox]``, names the request and the closest recorded one, and
is reported again when the run ends; with ``allow_network`` it goes out and is recorded.

The child cassette is a recording like ``record`` makes (model steps from the wire, tool rounds,
http_exchange steps, masking, the credential-leak refusal) whose ``parentId`` is the incident's id.
It has no ``forkedFromStepId``: nothing of the incident is copied into it, the rerun starts over.
A refused request is recorded as the 400 the program received, so a replay of the child serves
the program exactly what it saw.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import tool_spans
from .cassette.canonical import same_canonical
from .cassette.diff import first_difference
from .cassette.io import load_cassette
from .cassette.model import Cassette
from .errors import SessionError
from .fork import check_replies, serve_reply
from .http.exchange import HttpRequest, HttpResponse
from .sessions import (
    Session,
    _body_bytes,
    _error_response,
    _is_exchange,
    _json_body,
    _now_ms,
    _provider_for,
    _short,
    stop_intercepting,
    stored_request_body,
)

__all__ = ["RerunPlan", "RerunSession"]

_NOT_JSON = object()


@dataclass(frozen=True)
class RerunPlan:
    output: Path  # where the child cassette goes
    model: str | None = None  # the model every model request names instead; None: the program's own
    replies: list[dict[str, Any]] | None = None  # scripted model outputs; None: the live upstream
    allow_network: bool = False  # send (and record) the non-model requests the incident did not record


@dataclass(frozen=True)
class _Recorded:
    """One http_exchange of the incident, ready to match."""

    step: int
    method: str
    url: str
    body: Any  # as stored: masked text, or {"base64": ...}
    parsed: Any  # the body as JSON, or _NOT_JSON
    response: HttpResponse


def _parsed(body: Any) -> Any:
    if not isinstance(body, str) or not body:
        return _NOT_JSON
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return _NOT_JSON


def _same_body(recorded: _Recorded, body: Any, parsed: Any) -> bool:
    if recorded.body == body:
        return True
    both_json = recorded.parsed is not _NOT_JSON and parsed is not _NOT_JSON
    return both_json and same_canonical(recorded.parsed, parsed)


def _recorded_exchanges(incident: Cassette) -> list[_Recorded]:
    found = []
    for step in incident.steps:
        if not _is_exchange(step):
            continue
        request, answer = step.payload.get("request"), step.payload.get("response")
        status = answer.get("status") if isinstance(answer, dict) else None
        if not isinstance(request, dict) or isinstance(status, bool) or not isinstance(status, int):
            continue  # not an exchange this version wrote: it can answer nothing
        content_type = answer.get("contentType")
        headers = [("content-type", content_type)] if isinstance(content_type, str) and content_type else []
        body = request.get("body", "")
        response = HttpResponse(status, headers, _body_bytes(answer.get("body", "")))
        method, url = str(request.get("method")), str(request.get("url"))
        found.append(_Recorded(step.index, method, url, body, _parsed(body), response))
    return found


class RerunSession(Session):
    """The session of ``otel-blackbox rerun``: records a child of ``incident`` into ``plan.output``."""

    def __init__(self, incident: str | Path, plan: RerunPlan) -> None:
        if plan.model is not None and plan.replies is not None:
            raise SessionError("--model chooses the live model and --script answers instead of one: give one")
        if plan.model is not None and not plan.model.strip():
            raise SessionError("--model: give a model name")
        super().__init__("record", plan.output)
        self.mode = "rerun"
        self.plan = plan
        self.incident = load_cassette(incident)
        now = _now_ms()
        self.cassette = Cassette(
            id=f"{self.incident.id}-rerun-{now}", created_at=now, parent_id=self.incident.id
        )
        self._recorded = _recorded_exchanges(self.incident)
        self._used: set[int] = set()
        self._replies = check_replies(list(plan.replies)) if plan.replies is not None else None
        self.model_calls = 0
        self._refusals: dict[str, int] = {}  # message -> times, in order

    # -- the interceptor ---------------------------------------------------------------------------

    def rewrite(self, request: HttpRequest) -> bytes | None:
        """With a model name, every model request names it before it is sent or recorded."""
        if self.plan.model is None:
            return None
        body = _json_body(request) if _provider_for(request) else None
        if body is None or body.get("model") == self.plan.model:
            return None
        return json.dumps({**body, "model": self.plan.model}, ensure_ascii=False).encode("utf-8")

    def intercept(self, request: HttpRequest) -> HttpResponse | None:
        with self._lock:
            if self.error is not None:
                return _error_response(str(self.error))
            self._remember_keys(request)
            try:
                provider = _provider_for(request)
                body = _json_body(request) if provider else None
                if provider is not None and body is not None:
                    self.model_calls += 1
                    if self._replies is None:
                        return None  # live: observe() records the answer
                    return serve_reply(self, self._replies, provider, body)
                return self._answer_from_incident(request)
            except Exception as exc:  # a recorded request must not go out because of a bug here
                return self._diverge(
                    f"could not answer {request.method} {request.url}: {type(exc).__name__}: {exc}"
                )

    def observe(self, request: HttpRequest, response: HttpResponse) -> None:
        self._record_observed(request, response)  # live model calls, and --allow-network requests

    def _answer_from_incident(self, request: HttpRequest) -> HttpResponse | None:
        url = self._redactor.redact_text(request.url)
        body = stored_request_body(request.body, self._redactor)
        parsed = _parsed(body)
        for position, recorded in enumerate(self._recorded):
            if (
                position not in self._used
                and (recorded.method, recorded.url) == (request.method, url)
                and _same_body(recorded, body, parsed)
            ):
                self._used.add(position)
                self._record_exchange(request, recorded.response)
                return recorded.response
        if self.plan.allow_network:
            return None  # observe() records it
        message = self._refusal(request.method, url, body, parsed)
        self._refusals[message] = self._refusals.get(message, 0) + 1
        refused = _error_response(message)
        self._record_exchange(request, refused)  # the child replays what the program received
        return refused

    def _refusal(self, method: str, url: str, body: Any, parsed: Any) -> str:
        head = (
            f"[blackbox] {method} {url} was not recorded by the incident, so it was not sent "
            "(--allow-network sends it)"
        )
        same = [(n, r) for n, r in enumerate(self._recorded) if (r.method, r.url) == (method, url)]
        if not same:
            other = next((r for r in self._recorded if r.url == url), None)
            if other is None:
                return f"{head}; the incident recorded no request to this URL"
            return f"{head}; closest recorded: step {other.step}, {other.method} to the same URL"
        identical = [r for _, r in same if _same_body(r, body, parsed)]
        if identical:  # else it would have matched: every one was used
            times = f"{len(identical)} time{'s' if len(identical) > 1 else ''}"
            return f"{head}; the incident made it {times}, already answered (step {identical[0].step})"
        closest = next((r for n, r in same if n not in self._used), same[0][1])
        difference = _body_difference(closest, body, parsed)
        return f"{head}; closest recorded: step {closest.step}, whose body {difference}"

    # -- the end -----------------------------------------------------------------------------------

    def start(self) -> RerunSession:
        super().start()
        tool_spans.watch(self._on_tool_run)  # tool rounds from TOOL spans, as a recording takes them
        return self

    def finish(self, error: BaseException | None = None) -> None:
        if self._finished:
            return
        self._finished = True
        stop_intercepting()
        with self._lock:
            if self.error is not None:
                raise self.error
            self._close_recording(error)

    def notes(self) -> list[str]:
        """What the launcher reports on stderr: each refused request, and a run that re-ran nothing."""
        lines = [message if n == 1 else f"{message} ({n} times)" for message, n in self._refusals.items()]
        if self.model_calls == 0:
            lines.append(
                f"[blackbox] the program made no model call: nothing was re-run ({self.path} holds the run)"
            )
        return lines


def _body_difference(recorded: _Recorded, body: Any, parsed: Any) -> str:
    if recorded.parsed is not _NOT_JSON and parsed is not _NOT_JSON:
        diff = first_difference(recorded.parsed, parsed, "$")
        if diff is not None:
            return f"differs at {diff.path}: recorded {_short(diff.parent)}, got {_short(diff.child)}"
    return f"differs: recorded {_short(recorded.body)}, got {_short(body)}"
