"""A session: the HTTP hook's interceptor for one run of a program over one cassette.

What every mode shares lives here: installing the hook and the active-mode flag, the lock the hook's
threads take, the call ids, masking as the database masks, a divergence (an HTTP 400 whose message
starts with ``[blackbox]``, then the error the session ends with), and the end. Each mode reads on
its own in its module:

* ``record.py``: every request goes out; the model calls, tool rounds and other exchanges it saw
  become a cassette (``Recorder``, also used by fork and rerun to write their child).
* ``replay.py``: every request is answered from a cassette, never sent (``Player``, also used by a
  fork up to its fork point).
* ``fork.py``: replays a parent up to a tool result, replaces it, and records what follows.
* ``rerun.py``: records a new run whose non-model requests are answered from an incident.

With ``stub_tools`` a replay, fork or rerun also answers the program's framework tools from the
recording (tool_stubs/): the mode's ``_tool_stubber`` says how its calls are matched.

The modes are made outside this base class (session.py: ``session()``, the public context manager,
and ``open_session``); the launcher and the pytest plugin call ``start`` and ``finish``.
"""

from __future__ import annotations

import json
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from opentelemetry import trace

from otel_blackbox._cassette.canonical import same_canonical
from otel_blackbox._cassette.model import Cassette
from otel_blackbox._config import BlackboxConfig
from otel_blackbox._playback import active
from otel_blackbox._playback.http.exchange import HttpRequest, HttpResponse
from otel_blackbox._spans.redact import Redactor
from otel_blackbox._spans.semconv import ATTR_CASSETTE_STEP, ATTR_SESSION_MODE
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.protocol import Provider
from otel_blackbox._wire.registry import provider_for
from otel_blackbox.errors import ReplayDivergence, SessionError

if TYPE_CHECKING:
    from otel_blackbox._playback.tool_stubs.answers import ToolStubber

__all__ = ["Match", "Mode", "Session", "stop_intercepting"]

Mode = Literal["record", "replay", "fork", "rerun"]
Match = Literal["exact", "sequence"]
_S = TypeVar("_S", bound="Session")


class Diverged(Exception):
    """Raised by a mode's answering code: the request is not the one recorded (the message says how)."""


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def provider_of(request: HttpRequest) -> Provider | None:
    return provider_for(request.method, request.url)


def json_body(request: HttpRequest) -> dict[str, Any] | None:
    try:
        value = json.loads(request.body or b"null")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def header(headers: list[tuple[str, str]], name: str) -> str | None:
    return next((v for k, v in headers if k.lower() == name), None)


def error_response(message: str) -> HttpResponse:
    # Every SDK reads error.message from this shape (google-genai also error.status); a 400 is
    # never retried.
    error = {"type": "invalid_request_error", "status": "INVALID_ARGUMENT", "message": message}
    body = {"type": "error", "error": error}
    return HttpResponse(400, [("content-type", "application/json")], json.dumps(body).encode())


def check_match(match: str) -> Match:
    if match not in ("exact", "sequence"):
        raise SessionError(f"match must be exact or sequence, not {match!r}")
    return "exact" if match == "exact" else "sequence"


def same_json(a: Any, b: Any) -> bool:
    """Equal as JSON values. The C encoder settles almost every case; canonical JSON the rest (1 == 1.0)."""
    fast_a = json.dumps(a, sort_keys=True, ensure_ascii=False)
    fast_b = json.dumps(b, sort_keys=True, ensure_ascii=False)
    return fast_a == fast_b or same_canonical(a, b)


def masked(payload: Any, redactor: Redactor) -> Any:
    """``payload`` with its credentials masked; the very same object when it has none."""
    if not redactor.might_redact(json.dumps(payload, ensure_ascii=False)):
        return payload
    return _masked_json(payload, redactor)


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


def tag_current_span(step_index: int) -> None:
    """The span of this request (HTTP client span, or the LLM span) names the step that answered it."""
    span = trace.get_current_span()
    if span.is_recording():
        span.set_attribute(ATTR_CASSETTE_STEP, step_index)
        if active.mode is not None:
            span.set_attribute(ATTR_SESSION_MODE, active.mode)


class Session(ABC):
    """One run over one cassette. A mode's class answers ``intercept`` / ``observe`` and ``_conclude``."""

    mode: ClassVar[Mode]
    cassette: Cassette  # the recording this session writes, or the one it replays

    def __init__(
        self,
        path: str | Path,
        *,
        match: str = "exact",
        stub_tools: bool = False,
        run_unrecorded_tools: bool = False,
    ) -> None:
        self.path = Path(path)
        self.match = check_match(match)  # how a replay compares (a recording keeps it for the fixture)
        # --stub-tools: the program's tools answered from the recording (tool_stubs/); in a rerun or
        # a fork, --run-unrecorded-tools lets a call with no recorded answer run for real.
        self.stub_tools = stub_tools
        self.run_unrecorded_tools = run_unrecorded_tools
        self.stubber: ToolStubber | None = None
        self.ids = CallIds()
        self.error: SessionError | None = None
        self._lock = threading.Lock()
        config = BlackboxConfig.from_env()
        self.redactor = Redactor(
            enabled=config.redact,
            patterns=config.redact_patterns,
            fields=config.redact_fields,
            pii=config.redact_pii,  # a cassette masks what the store masks
        )
        self._finished = False

    # -- the interceptor (http.exchange.Interceptor) -----------------------------------------------

    @abstractmethod
    def intercept(self, request: HttpRequest) -> HttpResponse | None:
        """A response to serve without sending the request, or None to let it go out."""

    @abstractmethod
    def observe(self, request: HttpRequest, response: HttpResponse) -> None:
        """A request that went out, once its response was read."""

    def _answered(
        self, request: HttpRequest, answer: Callable[[HttpRequest], HttpResponse | None]
    ) -> HttpResponse | None:
        """``answer(request)`` (the mode's response, or None to let it go out; Diverged on a difference)
        under the lock; after a divergence, or on one, the [blackbox] 400."""
        with self._lock:
            if self.error is not None:
                return error_response(str(self.error))
            try:
                return answer(request)
            except Diverged as diverged:
                return self._diverge(str(diverged))
            except Exception as exc:  # never let a recorded request reach the network, even on a bug
                return self._diverge(
                    f"could not answer {request.method} {request.url}: {type(exc).__name__}: {exc}"
                )

    def _diverge(self, message: str) -> HttpResponse:
        self.error = ReplayDivergence(f"[blackbox] {message}")
        return error_response(str(self.error))

    # -- lifecycle -----------------------------------------------------------------------------------

    def start(self: _S) -> _S:
        from otel_blackbox._playback.http.hook import (
            BlackboxHTTPInstrumentor,
        )  # the hook imports httpcore: only when used

        BlackboxHTTPInstrumentor().instrument(interceptor=self)
        active.mode = self.mode
        if self.stub_tools:
            self.stubber = self._tool_stubber()
            if self.stubber is not None:
                from otel_blackbox._playback import tool_stubs

                tool_stubs.install(self.stubber)
        self._started()
        return self

    def _started(self) -> None:
        """What the mode watches besides HTTP once the hook is in: nothing, unless it records."""
        return None

    def _tool_stubber(self) -> ToolStubber | None:
        """How this mode answers the program's tools under --stub-tools: not at all while recording."""
        return None

    def _tool_diverged(self, message: str) -> None:
        """A tool call a replay cannot answer: the session ends with it, as with a changed request."""
        with self._lock:
            if self.error is None:
                self.error = ReplayDivergence(message)

    def notes(self) -> list[str]:
        """What the end report says besides the outcome: the tool calls with no recorded answer."""
        return self.stubber.notes() if self.stubber is not None else []

    def finish(self, error: BaseException | None = None) -> None:
        """Stop intercepting; write the recording, or check the replay. Raises SessionError."""
        if self._finished:
            return
        self._finished = True
        stop_intercepting()
        with self._lock:
            self._conclude(error)

    @abstractmethod
    def _conclude(self, error: BaseException | None) -> None:
        """What ending the run means for this mode (the lock held, the hook removed)."""


def stop_intercepting() -> None:
    """Remove the hook, the tool-span watch and the tool seams a session installed."""
    from otel_blackbox._playback import tool_spans, tool_stubs
    from otel_blackbox._playback.http.hook import BlackboxHTTPInstrumentor

    BlackboxHTTPInstrumentor().uninstrument()
    tool_spans.unwatch()
    tool_stubs.uninstall()
    active.mode = None
