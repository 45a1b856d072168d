"""Record and replay an unmodified agent's HTTP traffic as a cassette.

A ``Session`` is the interceptor of the HTTP hook (http.hook). Recording lets every request go
out and, once a model response has been read, appends ``model_input`` and ``model_output`` steps
(tool rounds in between come from the tool results of the next request); other HTTP exchanges
become ``metadata`` steps with event ``http_exchange``, so a replay needs no network. Replaying
answers every request from the cassette, never opening a socket: a model request is normalized and
compared with the recorded step (``match="exact"``) or simply served in order
(``match="sequence"``); any other request is answered by a recorded exchange with the same method,
URL and body (only method and URL in sequence; exchanges.py). The first difference is answered
with an HTTP 400 whose message starts with ``[blackbox]``, and the session ends with
ReplayDivergence.

A recording is masked as the database is (otel_blackbox.redact, with the OTEL_BLACKBOX_REDACT_*
settings) before it is written: credentials in prompts, tool arguments and results, answers and
error messages become ``[REDACTED:<kind>]``. A replay compares the masked forms, so a run that sends
the same credential again still matches. A key the program sent in a request header (or holds in a
``*_API_KEY`` / ``*_TOKEN`` / ``*_SECRET`` variable) found anywhere in the recording is not masked
but refused (CredentialLeak): that is the program's own key in its data, a mistake to fix.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from opentelemetry import trace

from . import _active, tool_spans
from .cassette.canonical import same_canonical
from .cassette.diff import first_difference
from .cassette.io import load_cassette, save_cassette
from .cassette.model import OBSERVED, Cassette, observed_view, terminal_outcome, tool_calls_of
from .config import BlackboxConfig
from .errors import CassetteError, CredentialLeak, ReplayDivergence, ReplayIncomplete, SessionError
from .exchanges import HTTP_EXCHANGE, ExchangeBook, ExchangeRequest, recorded_exchanges, stored_request_body
from .exchanges import body_value as _body_value
from .exchanges import short as _short
from .http.exchange import HttpRequest, HttpResponse
from .providers.base import CallIds, Provider
from .providers.registry import provider_for
from .redact import Redactor
from .semconv import ATTR_CASSETTE_STEP, ATTR_SESSION_MODE
from .tool_spans import ToolRun

__all__ = ["HTTP_EXCHANGE", "Session", "session"]

Mode = Literal["record", "replay", "fork", "rerun"]
Match = Literal["exact", "sequence"]
_SECRET_HEADERS = ("authorization", "x-api-key", "api-key", "proxy-authorization", "x-goog-api-key")
_MIN_KEY_LEN = 8


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _provider_for(request: HttpRequest) -> Provider | None:
    return provider_for(request.method, request.url)


def _json_body(request: HttpRequest) -> dict[str, Any] | None:
    try:
        value = json.loads(request.body or b"null")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _header(headers: list[tuple[str, str]], name: str) -> str | None:
    return next((v for k, v in headers if k.lower() == name), None)


def _error_response(message: str) -> HttpResponse:
    # Every SDK reads error.message from this shape (google-genai also error.status); a 400 is
    # never retried.
    error = {"type": "invalid_request_error", "status": "INVALID_ARGUMENT", "message": message}
    body = {"type": "error", "error": error}
    return HttpResponse(400, [("content-type", "application/json")], json.dumps(body).encode())


@dataclass
class _Pending:
    """Calls of the last model output, waiting for their results in the next request."""

    calls: list[dict[str, Any]] = field(default_factory=list)


class Session:
    """One record or replay run over one cassette file; use ``session()`` or the launcher."""

    def __init__(self, mode: Mode, cassette: str | Path, *, match: Match = "exact") -> None:
        if mode not in ("record", "replay"):
            raise SessionError(f"mode must be record or replay, not {mode!r} (a fork is a ForkSession)")
        if match not in ("exact", "sequence"):
            raise SessionError(f"match must be exact or sequence, not {match!r}")
        self.mode: Mode = mode
        self.match: Match = match
        self.path = Path(cassette)
        self.ids = CallIds()
        self.error: SessionError | None = None
        self._lock = threading.Lock()
        config = BlackboxConfig.from_env()
        self._redactor = Redactor(
            enabled=config.redact, patterns=config.redact_patterns, fields=config.redact_fields
        )
        self._masked_from = 0  # steps before this one are a parent's, masked when it was recorded
        self._seen_keys: set[str] = set()
        self._final_answer: str | None = None
        self._finished = False
        self._tool_runs: list[ToolRun] = []  # finished TOOL spans not yet matched to a call
        if mode == "record":
            self.cassette = Cassette(id=f"run-{_now_ms()}-{os.getpid()}", created_at=_now_ms())
            self._pending = _Pending()
        else:
            if not self.path.is_file():
                raise CassetteError(f"{self.path}: no such cassette (record it first)")
            self.cassette = load_cassette(self.path)
            self._model_steps = [
                (s, nxt)
                for s, nxt in zip(self.cassette.steps, self.cassette.steps[1:], strict=False)
                if s.type == "model_input" and nxt.type == "model_output"
            ]
            # Exact: method, URL and body must match; sequence: method and URL (exchanges.py).
            exchanges = recorded_exchanges(self.cassette, str(self.path))
            self._exchanges = ExchangeBook(exchanges, compare_body=match == "exact")
            self._served_models = 0

    # -- the interceptor ---------------------------------------------------------------------------

    def intercept(self, request: HttpRequest) -> HttpResponse | None:
        if self.mode == "record":
            self._remember_keys(request)
            return None
        with self._lock:
            if self.error is not None:
                return _error_response(str(self.error))
            try:
                provider = _provider_for(request)
                body = _json_body(request) if provider else None
                if provider is not None and body is not None:
                    return self._serve_model(provider, body)
                return self._serve_exchange(request)
            except Exception as exc:  # never let a replayed request reach the network, even on a bug
                return self._diverge(
                    f"could not answer {request.method} {request.url}: {type(exc).__name__}: {exc}"
                )

    def observe(self, request: HttpRequest, response: HttpResponse) -> None:
        if self.mode == "record":
            self._record_observed(request, response)

    def _record_observed(self, request: HttpRequest, response: HttpResponse) -> None:
        """A request that went out, as steps: a model call that succeeded, or an http_exchange."""
        with self._lock:
            provider = _provider_for(request)
            body = _json_body(request) if provider else None
            if provider is not None and body is not None:
                if 200 <= response.status < 300:  # a failed call is retried by the SDK, not a step
                    self._record_model(provider, body, response)
            else:
                self._record_exchange(request, response)

    # -- recording ---------------------------------------------------------------------------------

    def _remember_keys(self, request: HttpRequest) -> None:
        for name in _SECRET_HEADERS:
            value = _header(request.headers, name)
            if value:
                token = value.split(" ", 1)[-1].strip()
                if len(token) >= _MIN_KEY_LEN:
                    self._seen_keys.add(token)

    def _record_model(self, provider: Provider, body: dict[str, Any], response: HttpResponse) -> None:
        model_input = provider.model_input(body, self.ids)
        self._record_tool_round(model_input)
        output = provider.model_output(response.body, streamed=provider.is_streaming(body), ids=self.ids)
        self.cassette.append("model_input", model_input, _now_ms())
        self.cassette.append("model_output", output, _now_ms())
        self._after_output(output)

    def _after_output(self, output: dict[str, Any]) -> None:
        """A final answer ends the run so far; tool calls wait for their results."""
        if output.get("type") == "final_answer":
            self._final_answer = str(output.get("text", ""))
            self._pending = _Pending()
        else:
            self._pending = _Pending([c.__dict__ for c in tool_calls_of(output)])

    def _record_tool_round(self, model_input: dict[str, Any]) -> None:
        """The calls the model asked for last time, with the results this request carries."""
        if not self._pending.calls:
            return
        results = {
            part.get("toolCallId"): part
            for message in model_input.get("messages", [])
            if isinstance(message, dict) and isinstance(message.get("content"), list)
            for part in message["content"]
            if isinstance(part, dict) and part.get("type") == "tool_result"
        }
        now = _now_ms()
        for call in self._pending.calls:
            head = {"toolCallId": call["tool_call_id"], "toolName": call["tool_name"]}
            self.cassette.append("tool_call", {**head, "toolInput": call["tool_input"]}, now)
            outcome = self._tool_outcome(call["tool_name"], results.get(call["tool_call_id"]))
            if outcome is not None:
                self.cassette.append("tool_result", {**head, **outcome}, now)
        self._pending = _Pending()
        self._tool_runs.clear()

    def _tool_outcome(self, name: str, part: dict[str, Any] | None) -> dict[str, Any] | None:
        """What the tool returned: its TOOL span when the program has one, else what it sent the model."""
        run = next((r for r in self._tool_runs if r.name == name), None)
        if run is not None:
            self._tool_runs.remove(run)
            return {"error": run.error} if run.error is not None else {"result": run.result}
        if part is None:
            return None
        return {"error": part["error"]} if "error" in part else {"result": part.get("result")}

    def _on_tool_run(self, run: ToolRun) -> None:
        with self._lock:
            self._tool_runs.append(run)

    def _record_exchange(self, request: HttpRequest, response: HttpResponse) -> None:
        redact = self._redactor.redact_text
        payload = {
            "event": HTTP_EXCHANGE,
            "request": {
                "method": request.method,
                "url": redact(request.url),
                "body": stored_request_body(request.body, self._redactor),
            },
            "response": {
                "status": response.status,
                "contentType": _header(response.headers, "content-type") or "",
                "body": _body_value(response.body),
            },
        }
        self.cassette.append("metadata", payload, _now_ms())

    def _close_recording(self, error: BaseException | None) -> None:
        if self._pending.calls and self._tool_runs:  # tools ran, but no model saw their results
            self._record_tool_round({"messages": []})
        end: dict[str, Any]
        if error is None and self._final_answer is None:
            # It ended cleanly but no model gave a final answer: not a success the format can claim.
            end = {"event": "run_ended", "reason": "no_final_answer"}
        elif error is None:
            end = {"event": "run_completed", "status": "success", "result": self._final_answer}
        else:
            reasons = {KeyboardInterrupt: "interrupted", SystemExit: "terminated"}
            reason = reasons.get(type(error), type(error).__name__)
            end = {"event": "run_failed", "status": "error", "reason": reason, "message": str(error)[:500]}
        self.cassette.append("metadata", end, _now_ms())
        self._refuse_leaks()
        self._mask_steps()
        save_cassette(self.cassette, self.path)

    def _masked(self, payload: Any) -> Any:
        """``payload`` with its credentials masked; the very same object when it has none."""
        if not self._redactor.might_redact(json.dumps(payload, ensure_ascii=False)):
            return payload
        return _masked_json(payload, self._redactor)

    def _mask_steps(self) -> None:
        """Mask the steps this run recorded, re-hashing the chain from the first one that changed."""
        steps = self.cassette.steps
        for position in range(self._masked_from, len(steps)):
            payload = self._masked(steps[position].payload)
            if payload is not steps[position].payload and payload != steps[position].payload:
                break
        else:
            return
        rest = steps[position:]
        del steps[position:]
        for step in rest:
            self.cassette.append(step.type, self._masked(step.payload), step.timestamp)

    def _refuse_leaks(self) -> None:
        keys = set(self._seen_keys)
        for name, value in os.environ.items():
            if name.endswith(("_API_KEY", "_TOKEN", "_SECRET")) and len(value) >= _MIN_KEY_LEN:
                keys.add(value)
        text = json.dumps(self.cassette.to_json(), ensure_ascii=False)
        leaked = sorted(k for k in keys if k in text)
        if leaked:
            shown = leaked[0][:6] + "…"
            raise CredentialLeak(
                f"refusing to write {self.path}: it would contain a key seen in a request header or the "
                f"environment ({shown}); remove it from the prompt or tool output and record again"
            )

    # -- replaying ---------------------------------------------------------------------------------

    def _diverge(self, message: str) -> HttpResponse:
        self.error = ReplayDivergence(f"[blackbox] {message}")
        return _error_response(str(self.error))

    def _serve_model(self, provider: Provider, body: dict[str, Any]) -> HttpResponse:
        if self._served_models >= len(self._model_steps):
            return self._diverge(f"model call {self._served_models + 1} was not recorded (the cassette has "
                                 f"{len(self._model_steps)})")  # fmt: skip
        recorded_input, recorded_output = self._model_steps[self._served_models]
        if self.match == "exact":
            # Both masked: the recording holds masks where the program sends credentials again.
            # Only what the recording observed (all of it, unless it was built from spans).
            observed = recorded_input.payload.get(OBSERVED)
            got = self._masked(observed_view(provider.model_input(body, self.ids), observed))
            recorded = self._masked(observed_view(recorded_input.payload, observed))
            if not _same_json(got, recorded):
                diff = first_difference(recorded, got, "$")
                where = (
                    f"{diff.path}: recorded {_short(diff.parent)}, got {_short(diff.child)}" if diff else "?"
                )
                return self._diverge(f"step {recorded_input.index} (model_input) differs at {where}")
        self._served_models += 1
        _tag_current_span(recorded_input.index)
        if recorded_output.payload.get("type") == "final_answer":
            self._final_answer = str(recorded_output.payload.get("text", ""))
        self.ids.learn(recorded_output.payload)  # its calls, for a program that sends them back without ids
        wire = provider.wire_response(recorded_output.payload, body)
        return HttpResponse(wire.status, wire.headers, wire.body)

    def _serve_exchange(self, request: HttpRequest) -> HttpResponse:
        """The first unused recorded exchange that matches, or a divergence naming the closest one."""
        wanted = ExchangeRequest.of(request, self._redactor)  # masked as the recording masked it
        found = self._exchanges.take(wanted)
        if found is None:
            return self._diverge(self._exchanges.miss(wanted).divergence())
        return found.response()

    def _check_replay(self, error: BaseException | None) -> None:
        if self.error is not None:
            raise self.error
        if self._served_models < len(self._model_steps):
            missing = self._model_steps[self._served_models][0]
            raise ReplayIncomplete(
                f"[blackbox] the run made {self._served_models} of {len(self._model_steps)} recorded model "
                f"calls; the next one was step {missing.index} (model_input)"
            )
        recorded = terminal_outcome(self.cassette)
        if recorded.status == "success" and error is not None:
            raise ReplayIncomplete(
                f"[blackbox] the recording succeeded, the replay raised {type(error).__name__}"
            )
        # A run with no model answer records "" and replays None: both mean "no answer".
        if recorded.status == "success" and (recorded.final_answer or None) != (self._final_answer or None):
            raise ReplayIncomplete("[blackbox] the replay ended with another final answer than the recording")

    # -- lifecycle -----------------------------------------------------------------------------------

    def start(self) -> Session:
        from .http.hook import BlackboxHTTPInstrumentor  # the hook imports httpcore: only when used

        BlackboxHTTPInstrumentor().instrument(interceptor=self)
        _active.mode = self.mode
        if self.mode == "record":
            tool_spans.watch(self._on_tool_run)
        return self

    def finish(self, error: BaseException | None = None) -> None:
        """Stop intercepting; write the recording, or check the replay. Raises SessionError."""
        if self._finished:
            return
        self._finished = True
        stop_intercepting()
        with self._lock:
            self._conclude(error)

    def _conclude(self, error: BaseException | None) -> None:
        """What ending the run means for this mode (the lock held, the hook removed)."""
        if self.mode == "record":
            self._close_recording(error)
        else:
            self._check_replay(error)


def stop_intercepting() -> None:
    """Remove the hook and the tool-span watch a session installed."""
    from .http.hook import BlackboxHTTPInstrumentor

    BlackboxHTTPInstrumentor().uninstrument()
    tool_spans.unwatch()
    _active.mode = None


def _same_json(a: Any, b: Any) -> bool:
    """Equal as JSON values. The C encoder settles almost every case; canonical JSON the rest (1 == 1.0)."""
    fast_a = json.dumps(a, sort_keys=True, ensure_ascii=False)
    fast_b = json.dumps(b, sort_keys=True, ensure_ascii=False)
    return fast_a == fast_b or same_canonical(a, b)


def _masked_json(value: Any, redactor: Redactor) -> Any:
    """JSON data masked as the database masks attributes: each string, and whole under a secret's name."""
    if isinstance(value, str):
        return redactor.redact_text(value)
    if isinstance(value, list):
        return [_masked_json(item, redactor) for item in value]
    if isinstance(value, dict):
        return {
            key: "[REDACTED]"
            if isinstance(item, str) and redactor.is_secret_field(str(key))
            else _masked_json(item, redactor)
            for key, item in value.items()
        }
    return value


def _tag_current_span(step_index: int) -> None:
    """The span of this request (HTTP client span, or the LLM span) names the step that answered it."""
    span = trace.get_current_span()
    if span.is_recording():
        span.set_attribute(ATTR_CASSETTE_STEP, step_index)
        if _active.mode is not None:
            span.set_attribute(ATTR_SESSION_MODE, _active.mode)


@contextlib.contextmanager
def session(mode: Mode, cassette: str | Path, *, match: Match = "exact") -> Iterator[Session]:
    """Record or replay the HTTP traffic of the code inside the block::

    with otel_blackbox.session(mode="replay", cassette="tests/cassettes/run.json"):
        run_agent()
    """
    active = Session(mode, cassette, match=match).start()
    try:
        yield active
    except BaseException as exc:
        try:
            active.finish(exc)
        except SessionError as session_error:  # the typed cause beats the SDK's 400 it provoked
            raise session_error from exc
        raise
    active.finish()
