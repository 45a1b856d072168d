"""How the built-in agent answers a tool call: from the incident's recorded results, or a stub.

A call matches a recorded ``tool_result`` on the tool's name and its canonical arguments (with
``--tool-match name``, on the name alone); each recorded result answers once, in recorded order. A
call with no match is answered by the ``--stub NAME=JSON`` of its tool, marked as a stub. Any other
call is a miss, named with the closest recorded call and what would answer it: a ``--stub`` for a
tool the incident offered or called (the only names a stub may give), nothing for a tool the model
made up. Nothing here runs a tool, ever.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from otel_blackbox._cassette.canonical import canonical_or_none
from otel_blackbox._playback.agent.incident import RecordedResult, UnansweredCall
from otel_blackbox._render.hints import as_string, stub_example, stub_hint
from otel_blackbox._types import JsonObject
from otel_blackbox.errors import SessionError

__all__ = ["Answer", "ToolBook", "ToolMatch", "describe_call", "parse_stub"]

ToolMatch = Literal["arguments", "name"]


@dataclass(frozen=True)
class Answer:
    outcome: JsonObject  # {"result": ...} or {"error": "..."}, with "stub": true for a stub
    step: int | None  # the recorded tool_result step that answered, None for a stub


def parse_stub(text: str) -> tuple[str, Any]:
    """``NAME=JSON`` of ``--stub``; SessionError naming what is wrong."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise SessionError(f"--stub {text!r}: expected NAME=JSON, e.g. {stub_example(name)}")
    try:
        return name.strip(), json.loads(value)
    except ValueError:
        quoted = as_string("--stub", value, name.strip())
        raise SessionError(f"--stub {name.strip()}: {value!r} is not JSON (as a string: {quoted})") from None


def describe_call(name: str, arguments: Any) -> str:
    """``refund_order({"amount":"12.OO"})``: a call as one short line."""
    shown = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return f"{name}({shown if len(shown) <= 200 else shown[:199] + '…'})"


class ToolBook:
    """The recorded results a run's calls are answered from, each once."""

    def __init__(
        self,
        results: list[RecordedResult],
        *,
        match: ToolMatch,
        stubs: dict[str, Any] | None = None,
        unanswered: Sequence[UnansweredCall] = (),
        stubbable: Collection[str] | None = None,
    ) -> None:
        self._unused = list(results)
        self._unanswered = list(unanswered)  # recorded calls with no result, for what a miss says
        # The tools a --stub may name, for what a miss suggests; None: no --stub to suggest (a replay).
        self.stubbable = stubbable
        self.match = match
        self.stubs = dict(stubs or {})
        self.answered = 0
        self.stubbed = 0

    def answer(self, name: str, arguments: Any) -> Answer | None:
        """The answer to a call, or None when neither a recorded result nor a stub answers it."""
        wanted = canonical_or_none(arguments)
        for position, recorded in enumerate(self._unused):
            if recorded.tool_name != name:
                continue
            if self.match == "name" or canonical_or_none(recorded.tool_input) == wanted:
                del self._unused[position]
                self.answered += 1
                return Answer(dict(recorded.outcome), recorded.step)
        if name in self.stubs:
            self.stubbed += 1
            return Answer({"result": self.stubs[name], "stub": True}, None)
        return None

    def miss(
        self, name: str, arguments: Any, hint: str | None = None, recording: str = "the incident"
    ) -> str:
        """Why a call has no answer: the call, the closest recorded one, and what answers it (``hint``:
        the caller's own; by default a ``--stub`` where one may answer it)."""
        call = describe_call(name, arguments)
        if hint is None:
            hint = "" if self.stubbable is None else stub_hint([name], self.stubbable, recording)
        hint = f" ({hint})" if hint else ""
        wanted = canonical_or_none(arguments)
        for cut in self._unanswered:  # the incident made this call, but ended before its result
            same_input = self.match == "name" or canonical_or_none(cut.tool_input) == wanted
            if cut.tool_name == name and same_input:
                return (
                    f"[blackbox] the model called {call}; {recording} recorded that call (step {cut.step}) "
                    f"but no result for it: the run ended before the tool returned{hint}"
                )
        same_name = [r for r in self._unused if r.tool_name == name]
        closest = same_name[0] if same_name else (self._unused[0] if self._unused else None)
        head = f"[blackbox] the model called {call}, which {recording} did not record"
        if closest is None:
            return f"{head}, and every recorded result was already used{hint}"
        recorded = describe_call(closest.tool_name, closest.tool_input)
        return f"{head}; closest recorded: step {closest.step}, {recorded}{hint}"
