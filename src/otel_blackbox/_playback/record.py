"""Record: every request goes out, and what the program exchanged becomes a cassette.

Once a model response has been read, its call becomes ``model_input`` and ``model_output`` steps
(the output with the response's token counts as its ``tokenUsage``);
the tool round in between comes from the program's TOOL spans when it has them, else from the tool
results the next request carries. Other HTTP exchanges become ``metadata`` steps with event
``http_exchange``, so a replay needs no network. A failed model call is not a step: the SDK
retries it.

A recording is masked as the database is (otel_blackbox._spans.redact, with the OTEL_BLACKBOX_REDACT_*
settings) before it is written: credentials in prompts, tool arguments and results, answers and
error messages become ``[REDACTED:<kind>]``. A key the program sent in a request header (or holds in
a ``*_API_KEY`` / ``*_TOKEN`` / ``*_SECRET`` variable) found anywhere in the recording is not masked
but refused (CredentialLeak): that is the program's own key in its data, a mistake to fix.

``Recorder`` writes a cassette; a fork and a rerun write their child with it too.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any, ClassVar

from otel_blackbox._cassette.canonical import StepHasher
from otel_blackbox._cassette.io import save_cassette
from otel_blackbox._cassette.model import Cassette, choice_calls
from otel_blackbox._cost.usage import with_usage
from otel_blackbox._output_file import write_keeping
from otel_blackbox._playback import tool_spans
from otel_blackbox._playback.exchanges import HTTP_EXCHANGE, body_value, stored_request_body
from otel_blackbox._playback.http.exchange import HttpRequest, HttpResponse
from otel_blackbox._playback.interceptor import (
    Match,
    Mode,
    Session,
    header,
    json_body,
    masked,
    now_ms,
    provider_of,
)
from otel_blackbox._playback.tool_spans import ToolRun
from otel_blackbox._spans.redact import Redactor
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.protocol import read_usage
from otel_blackbox.errors import CredentialLeak

__all__ = ["RecordSession", "Recorder", "RunStopped"]

_SECRET_HEADERS = ("authorization", "x-api-key", "api-key", "proxy-authorization", "x-goog-api-key")
_MIN_KEY_LEN = 8


class RunStopped(Exception):
    """How a run the built-in agent drove stopped: the ``run_failed`` reason, and fields naming why."""

    def __init__(self, reason: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.reason = reason
        self.details = details


class Recorder:
    """Appends a run's steps to ``cassette`` and writes it to ``path`` when the run ends."""

    def __init__(
        self,
        cassette: Cassette,
        path: Path,
        redactor: Redactor,
        ids: CallIds,
        *,
        masked_from: int = 0,
        pending: list[dict[str, Any]] | None = None,
    ) -> None:
        self.cassette = cassette
        self.path = path
        self.ids = ids
        self._redactor = redactor
        self._masked_from = masked_from  # steps before this one are a parent's, masked when it was recorded
        # The last output's calls awaiting results, one list per choice (the program runs one of them).
        self._pending: list[list[dict[str, Any]]] = [pending] if pending else []
        # Rounds waiting on a conversation their tools started (an agent used as a tool), innermost last.
        self._suspended: list[list[list[dict[str, Any]]]] = []
        self._seen_keys: set[str] = set()
        self._final_answer: str | None = None
        self._tool_runs: list[ToolRun] = []  # finished TOOL spans not yet matched to a call
        self._answered: dict[str, dict[str, Any]] = {}  # call id -> the outcome the built-in agent gave it
        self.last_output: dict[str, Any] | None = None  # the latest model output recorded
        # Each request repeats the messages of the one before: they are kept as the objects already
        # recorded (``_shared``), whose canonical bytes the hasher keeps, so a turn hashes its new ones.
        self._hasher = StepHasher()
        self._messages: list[Any] = []  # the messages of the latest model_input recorded

    # -- what the run does ---------------------------------------------------------------------------

    def remember_keys(self, request: HttpRequest) -> None:
        for name in _SECRET_HEADERS:
            value = header(request.headers, name)
            if value:
                token = value.split(" ", 1)[-1].strip()
                if len(token) >= _MIN_KEY_LEN:
                    self._seen_keys.add(token)

    def record_observed(self, request: HttpRequest, response: HttpResponse) -> None:
        """A request that went out, as steps: a model call that succeeded, or an http_exchange."""
        provider = provider_of(request)
        body = json_body(request) if provider else None
        if provider is None or body is None:
            self.record_exchange(request, response)
        elif 200 <= response.status < 300:  # a failed call is retried by the SDK, not a step
            if self.cassette.api is None:  # the hint the built-in agent reruns on by default
                self.cassette.api = {"name": provider.name, "stream": provider.is_streaming(body)}
            model_input = provider.model_input(body, self.ids)  # first: it numbers the calls it sends back
            streamed = provider.is_streaming(body)
            output = provider.model_output(response.body, streamed=streamed, ids=self.ids)
            self.record_model(
                model_input, with_usage(output, read_usage(provider, response.body, streamed=streamed))
            )

    def record_model(self, model_input: dict[str, Any], output: dict[str, Any]) -> None:
        """A model call: the tool round its input closes, then its input and output.

        A request whose history holds none of the waiting calls is another conversation, started by
        one of those calls (an agent used as a tool): their round waits until a request carries them.
        """
        mentioned = _call_ids_in(model_input)
        if self._pending and not any(
            c["tool_call_id"] in mentioned for choice in self._pending for c in choice
        ):
            self._suspended.append(self._pending)
            self._pending = []
        self._record_tool_round(model_input)
        while self._suspended and any(
            c["tool_call_id"] in mentioned for choice in self._suspended[-1] for c in choice
        ):
            self._pending = self._suspended.pop()
            self._record_tool_round(model_input)
        model_input = self._shared(model_input)
        self.cassette.append("model_input", model_input, now_ms(), hasher=self._hasher.hash_step)
        self.cassette.append("model_output", output, now_ms())
        self.took_output(output)

    def took_output(self, output: dict[str, Any]) -> None:
        """``output`` is the run's latest model output (also one a fork's child starts with, edited):
        its calls wait for their results, or its answer ends the run so far."""
        self.last_output = output
        if output.get("type") == "final_answer":  # a final answer ends the run so far
            self._final_answer = str(output.get("text", ""))
            self._pending = []
        else:  # its tool calls wait for their results
            self._pending = [[c.__dict__ for c in calls] for calls in choice_calls(output)]

    def _shared(self, model_input: dict[str, Any]) -> dict[str, Any]:
        """``model_input`` with the messages it repeats from the last one recorded as those very
        objects (one C-level comparison of the lists: a request read from the wire is new objects
        every turn), so that their canonical form is not computed again. Equal as Python values, which
        JSON's are but for ``true`` resent as ``1``: the first one sent is kept then."""
        messages, before = model_input.get("messages"), self._messages
        if not isinstance(messages, list):
            return model_input
        if before and len(messages) >= len(before) and messages[: len(before)] == before:
            model_input = {**model_input, "messages": [*before, *messages[len(before) :]]}
        self._messages = model_input["messages"]
        return model_input

    def record_exchange(self, request: HttpRequest, response: HttpResponse) -> None:
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
                "contentType": header(response.headers, "content-type") or "",
                "body": body_value(response.body),
            },
        }
        self.cassette.append("metadata", payload, now_ms())

    def watch_tool_spans(self, lock: threading.Lock) -> None:
        """Take tool results from the program's TOOL spans as they end (``lock``: the session's)."""

        def ran(run: ToolRun) -> None:
            with lock:
                self._tool_runs.append(run)

        tool_spans.watch(ran)

    def tool_answered(self, call_id: str, outcome: dict[str, Any]) -> None:
        """The outcome (``{"result"}`` or ``{"error"}``, ``"stub": true`` for a stub) the built-in agent
        answered a call with: the call's tool_result step, whatever the next request carries."""
        self._answered[call_id] = outcome

    def end_tool_round(self) -> None:
        """The calls awaiting results as steps now, with the outcomes given so far: a run that stops
        at a call shows the call it stopped at."""
        self._record_tool_round({"messages": []})

    def _record_tool_round(self, model_input: dict[str, Any]) -> None:
        """The calls the model asked for last time, with the results this request carries."""
        if not self._pending:
            return
        results = {
            part.get("toolCallId"): part
            for message in model_input.get("messages", [])
            if isinstance(message, dict) and isinstance(message.get("content"), list)
            for part in message["content"]
            if isinstance(part, dict) and part.get("type") == "tool_result"
        }
        now = now_ms()
        # The choice the program ran: the first whose calls this request answers, else the first.
        ran = next((c for c in self._pending if any(call["tool_call_id"] in results for call in c)), None)
        for call in ran if ran is not None else self._pending[0]:
            head = {"toolCallId": call["tool_call_id"], "toolName": call["tool_name"]}
            self.cassette.append("tool_call", {**head, "toolInput": call["tool_input"]}, now)
            outcome = self._answered.pop(call["tool_call_id"], None) or self._tool_outcome(
                call["tool_name"], results.get(call["tool_call_id"])
            )
            if outcome is not None:
                self.cassette.append("tool_result", {**head, **outcome}, now)
        self._pending = []
        if not self._suspended:  # an outer round's tools may have finished already: keep theirs
            self._tool_runs.clear()
            self._answered.clear()

    def _tool_outcome(self, name: str, part: dict[str, Any] | None) -> dict[str, Any] | None:
        """What the tool returned: its TOOL span when the program has one, else what it sent the model."""
        run = next((r for r in self._tool_runs if r.name == name), None)
        if run is not None:
            self._tool_runs.remove(run)
            return {"error": run.error} if run.error is not None else {"result": run.result}
        if part is None:
            return None
        return {"error": part["error"]} if "error" in part else {"result": part.get("result")}

    # -- the end -------------------------------------------------------------------------------------

    def close(self, error: BaseException | None) -> None:
        """The run's end step, then the masked cassette written (CredentialLeak instead of a leak)."""
        if self._pending and (self._tool_runs or self._answered):  # tools ran, but no model saw their results
            self._record_tool_round({"messages": []})
        while self._suspended:  # a run that ended inside an agent used as a tool: the calls it was in
            self._pending = self._suspended.pop()
            self._record_tool_round({"messages": []})
        end: dict[str, Any]
        if error is None and self._final_answer is None:
            # It ended cleanly but no model gave a final answer: not a success the format can claim.
            end = {"event": "run_ended", "reason": "no_final_answer"}
        elif error is None:
            end = {"event": "run_completed", "status": "success", "result": self._final_answer}
        else:
            reasons = {KeyboardInterrupt: "interrupted", SystemExit: "terminated"}
            stopped = error if isinstance(error, RunStopped) else None
            reason = stopped.reason if stopped else reasons.get(type(error), type(error).__name__)
            end = {"event": "run_failed", "status": "error", "reason": reason, "message": str(error)[:500]}
            end.update(stopped.details if stopped else {})
        self.cassette.append("metadata", end, now_ms())
        self._refuse_leaks()
        self._mask_steps()
        # The run is done (paid for, its side effects made): a failed write keeps it elsewhere.
        write_keeping(lambda path: save_cassette(self.cassette, path), self.path, "cassette")

    def _mask_steps(self) -> None:
        """Mask the steps this run recorded, re-hashing the chain from the first one that changed."""
        steps = self.cassette.steps
        for position in range(self._masked_from, len(steps)):
            payload = masked(steps[position].payload, self._redactor)
            if payload is not steps[position].payload and payload != steps[position].payload:
                break
        else:
            return
        rest = steps[position:]
        del steps[position:]
        for step in rest:
            self.cassette.append(step.type, masked(step.payload, self._redactor), step.timestamp)

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


class RecordSession(Session):
    """``session(mode="record")``: lets every request out and records the run into ``path``."""

    mode: ClassVar[Mode] = "record"

    def __init__(self, path: str | Path, *, match: Match = "exact") -> None:
        super().__init__(path, match=match)
        self.cassette = Cassette(id=f"run-{now_ms()}-{os.getpid()}", created_at=now_ms())
        self.recorder = Recorder(self.cassette, self.path, self.redactor, self.ids)

    def intercept(self, request: HttpRequest) -> HttpResponse | None:
        self.recorder.remember_keys(request)
        return None

    def observe(self, request: HttpRequest, response: HttpResponse) -> None:
        with self._lock:
            self.recorder.record_observed(request, response)

    def _started(self) -> None:
        self.recorder.watch_tool_spans(self._lock)

    def _conclude(self, error: BaseException | None) -> None:
        self.recorder.close(error)


def _call_ids_in(model_input: dict[str, Any]) -> set[str]:
    """The ids of the tool calls and results a request's history holds."""
    return {
        str(part["toolCallId"])
        for message in model_input.get("messages", [])
        if isinstance(message, dict) and isinstance(message.get("content"), list)
        for part in message["content"]
        if isinstance(part, dict) and part.get("toolCallId") is not None
    }
