"""What a stubbing session answers a tool invocation with, from the cassette's ``tool_result`` steps.

A framework seam (or ``stubbable``) asks ``ToolStubber.answer(name, arguments, call_id)`` before the
tool's function would run, and gets the recorded result, the recorded error, or a miss; or ``runs``
when the tool must run for real (``--run-unrecorded-tools``). How a call finds its recorded result:

* by call id, for the calls of model outputs served from the recording (a replay, and a fork before
  its fork point): the call's neutral id names its ``tool_result``. The call must be the recorded
  one (same tool, same canonical arguments, unless the replay matches in sequence), else it is a
  miss. A seam with no call id to give (a plain ``tool.invoke(args)``, a ``stubbable`` function)
  is matched on name and arguments among the same results;
* by tool name and canonical arguments, for the calls of a live or scripted model (a rerun, a fork
  after its fork point), among the results nothing answered yet.

Each recorded result answers once. A miss in a replay is a divergence (the session ends with it,
exit 1) and the tool raises a ``[blackbox]`` error; in a rerun or a fork the tool raises that error
into the framework, so the model is told the call failed, and the end report names the call.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from otel_blackbox._cassette.canonical import canonical_or_none
from otel_blackbox._playback.agent.incident import RecordedResult
from otel_blackbox._playback.agent.tools import ToolBook, describe_call
from otel_blackbox._playback.tool_stubs import marks
from otel_blackbox._render.hints import suggest
from otel_blackbox._wire.call_ids import CallIds

__all__ = ["OnMiss", "ToolAnswer", "ToolStubber"]

OnMiss = Literal["diverge", "error", "run"]


@dataclass(frozen=True)
class ToolAnswer:
    """A recorded ``value``; or an ``error`` (recorded, or a miss's ``[blackbox]`` message); or ``runs``."""

    value: Any = None
    error: str | None = None
    runs: bool = False
    miss: bool = False

    @property
    def text(self) -> str:
        """The value as the text a framework hands the model (JSON for a JSON value)."""
        return self.value if isinstance(self.value, str) else json.dumps(self.value, ensure_ascii=False)

    def exception(
        self, base: type[Exception], *, kinds: dict[str, type[Exception]] | None = None
    ) -> Exception:
        """The recorded error raised again: ``ValueError: boom`` is an exception whose class is named
        ValueError and whose message is "boom", so a framework formats it as it formatted the first
        one. ``kinds`` maps a recorded class name to the framework's own class (its tool error)."""
        message = self.error or ""
        name, sep, rest = message.partition(": ")
        if self.miss or not sep or not name.isidentifier():
            return base(message)
        own = (kinds or {}).get(name)
        if own is not None:
            return own(rest)
        recorded: type[Exception] = type(name, (base,), {"__module__": "otel_blackbox.recorded"})
        return recorded(rest)


class ToolStubber:
    """The answers of one stubbing session (thread-safe: frameworks run tools on threads)."""

    def __init__(
        self,
        *,
        ids: CallIds,
        by_id: Sequence[RecordedResult] = (),
        by_arguments: Sequence[RecordedResult] = (),
        on_miss: OnMiss,
        recording: str = "the incident",
        diverge: Callable[[str], None] | None = None,
        compare_arguments: bool = True,
        run_hint: bool = True,
    ) -> None:
        self._ids = ids
        self._run_hint = run_hint  # a miss suggests --run-unrecorded-tools (not where the command has none)
        self._by_id = {r.call_id: r for r in by_id if r.call_id}
        self._arguments = ToolBook(list(by_arguments), match="arguments")
        self._recording = recording  # what the messages call the cassette
        self._on_miss = on_miss
        self._diverge = diverge
        self._compare = compare_arguments
        self._lock = threading.Lock()
        self._notes: list[str] = []
        self.answered = 0  # calls answered from the recording (or a fork's replacement)
        self.missed = 0

    def answer(self, name: str, arguments: Any, call_id: str | None, *, framework: str) -> ToolAnswer:
        """The answer to one invocation of tool ``name`` (``framework``: the seam, for messages)."""
        wanted = _json_arguments(arguments)
        with self._lock:
            neutral = self._ids.known(call_id) if call_id else None
            answer = self._answer(name, wanted, neutral)
            if answer.miss:
                self.missed += 1
                if self._on_miss != "diverge":
                    self._notes.append(answer.error or "")
                elif self._diverge is not None:  # the session ends with it: no note besides
                    self._diverge(answer.error or "")
            elif not answer.runs:
                self.answered += 1
        if not answer.runs:
            marks.stubbed(name, wanted)
        return answer

    def _answer(self, name: str, arguments: Any, neutral: str | None) -> ToolAnswer:
        if neutral is not None and neutral in self._by_id:
            recorded = self._by_id.pop(neutral)
            if not self._same_call(recorded, name, arguments):
                return self._missed(
                    f"[blackbox] tool call {neutral} is {describe_call(name, arguments)}; the recording "
                    f"has {describe_call(recorded.tool_name, recorded.tool_input)} (step {recorded.step})",
                    name,
                    arguments,
                )
            return _recorded(recorded.outcome)
        if neutral is None:  # no id to go by: the same tool and arguments among the calls served
            for key, recorded in self._by_id.items():
                if self._same_call(recorded, name, arguments):
                    del self._by_id[key]
                    return _recorded(recorded.outcome)
        found = self._arguments.answer(name, arguments)
        if found is not None:
            return _recorded(found.outcome)
        if neutral is not None and self._on_miss == "diverge":
            return self._missed(
                f"[blackbox] tool call {neutral} {describe_call(name, arguments)} has no recorded result",
                name,
                arguments,
            )
        return self._missed(None, name, arguments)

    def _same_call(self, recorded: RecordedResult, name: str, arguments: Any) -> bool:
        """The recorded call is this one: the same tool, and (matching exactly) the same arguments."""
        if recorded.tool_name != name:
            return False
        return not self._compare or canonical_or_none(recorded.tool_input) == canonical_or_none(arguments)

    def _missed(self, message: str | None, name: str, arguments: Any) -> ToolAnswer:
        if message is None:
            if self._on_miss == "diverge":
                message = f"[blackbox] {describe_call(name, arguments)} has no recorded result"
            else:
                hint = "the tool did not run"
                if self._run_hint:
                    hint += f"; {suggest('--run-unrecorded-tools')} runs it"
                message = self._arguments.miss(name, arguments, hint=hint, recording=self._recording)
        if self._on_miss == "run":
            self._notes.append(
                f"[blackbox] {describe_call(name, arguments)} was not recorded: it ran for real "
                "(--run-unrecorded-tools)"
            )
            return ToolAnswer(runs=True)
        return ToolAnswer(error=message, miss=True)

    def notes(self) -> list[str]:
        """What the end report says: each call that had no recorded answer."""
        with self._lock:
            return list(dict.fromkeys(self._notes))


def _recorded(outcome: dict[str, Any]) -> ToolAnswer:
    if "error" in outcome:
        return ToolAnswer(error=str(outcome["error"]))
    return ToolAnswer(value=outcome.get("result"))


def _json_arguments(arguments: Any) -> Any:
    """A seam's arguments as JSON data: a JSON text (the Agents SDK's) is parsed."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments or "{}")
        except ValueError:
            return arguments
    return arguments
