"""The cassette: one run as hash-chained, provider-neutral steps (Blackbox trace format v2).

Plain dataclasses over JSON values. A payload is kept exactly as read (ints stay ints, key order
is irrelevant because hashes use canonical JSON), so a cassette written elsewhere re-hashes to
the hashes it carries.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from otel_blackbox._cassette.canonical import canonical_or_none, hash_step
from otel_blackbox._spans.messages import ToolCall
from otel_blackbox._types import JsonObject

__all__ = [
    "FORMAT_VERSION",
    "OBSERVED",
    "STEP_TYPES",
    "Cassette",
    "Outcome",
    "Step",
    "choice_calls",
    "comparable_results",
    "highest_call_index",
    "observed_view",
    "terminal_outcome",
    "tool_call_sequence",
    "tool_calls_of",
]

FORMAT_VERSION = 2
# In a model_input built from spans: the fields (``params.temperature`` for one setting) that the
# spans saw of the request. A replay compares only those; a payload without it saw everything.
OBSERVED = "observed"
STEP_TYPES = ("model_input", "model_output", "tool_call", "tool_result", "metadata")
# hash_step's signature: (index, type, timestamp, payload, prevHash) -> the step's hash.
StepHash = Callable[[int, str, int | float, Any, str | None], str]


@dataclass
class Step:
    id: str
    index: int
    type: str
    timestamp: int | float
    payload: Any
    prev_hash: str | None
    hash: str

    def expected_hash(self) -> str:
        return hash_step(self.index, self.type, self.timestamp, self.payload, self.prev_hash)

    def to_json(self) -> JsonObject:
        return {
            "id": self.id,
            "index": self.index,
            "type": self.type,
            "timestamp": self.timestamp,
            "payload": self.payload,
            "prevHash": self.prev_hash,
            "hash": self.hash,
        }


@dataclass
class Cassette:
    id: str
    created_at: int | float
    steps: list[Step] = field(default_factory=list)
    version: int = FORMAT_VERSION
    parent_id: str | None = None
    forked_from_step_id: str | None = None
    # Hints, outside the hash chain: the API of the run's first model call and whether it streamed
    # (``{"name": "openai-chat", "stream": false}``), and for a run of the built-in agent, what ran it
    # (``{"kind": "built-in", "provider", "model", "toolMatch"}``).
    api: JsonObject | None = None
    agent: JsonObject | None = None
    # Links between an agent's cassette and its sub-agents' (a conversation each, see
    # ``from_spans/conversations.py``): ``subagents`` in the parent, one per sub-agent, and
    # ``subagent_of`` in a sub-agent's: ``{"id", "cassette" (the file, when written beside), "step"
    # (the parent's step that started it), "toolCallId", "toolName" (the call its result answers)}``.
    subagents: list[JsonObject] | None = None
    subagent_of: JsonObject | None = None
    # A fork's change at its branch point (``fork --at N``): ``{"step", "kind", "description", "by"}``.
    edit: JsonObject | None = None

    def append(
        self, step_type: str, payload: Any, timestamp: int | float, *, hasher: StepHash = hash_step
    ) -> Step:
        """Add a step at the end of the chain, hashing it onto the previous one (with ``hasher``: a
        recorder's ``StepHasher.hash_step``, the same hash)."""
        index = len(self.steps)
        prev = self.steps[-1].hash if self.steps else None
        step = Step(
            id=f"{self.id}:{index}",
            index=index,
            type=step_type,
            timestamp=timestamp,
            payload=payload,
            prev_hash=prev,
            hash=hasher(index, step_type, timestamp, payload, prev),
        )
        self.steps.append(step)
        return step

    @property
    def head(self) -> str | None:
        """The last step's hash: keep it elsewhere to detect a truncated tail."""
        return self.steps[-1].hash if self.steps else None

    def to_json(self) -> JsonObject:
        data: JsonObject = {"version": self.version, "id": self.id}
        if self.parent_id is not None:
            data["parentId"] = self.parent_id
        if self.forked_from_step_id is not None:
            data["forkedFromStepId"] = self.forked_from_step_id
        data["createdAt"] = self.created_at
        hints = (
            ("api", self.api), ("agent", self.agent), ("subagents", self.subagents),
            ("subagentOf", self.subagent_of), ("edit", self.edit),
        )  # fmt: skip
        data.update((key, value) for key, value in hints if value is not None)
        data["steps"] = [s.to_json() for s in self.steps]
        return data

    def steps_of(self, step_type: str) -> Iterator[Step]:
        return (s for s in self.steps if s.type == step_type)


def tool_calls_of(payload: Any) -> list[ToolCall]:
    """The calls of a model_output, in either shape: one ``tool_call`` or ``tool_calls`` with ``calls``."""
    if not isinstance(payload, dict):
        return []
    if payload.get("type") == "tool_call":
        raw = [payload]
    elif payload.get("type") == "tool_calls" and isinstance(payload.get("calls"), list):
        raw = payload["calls"]
    else:
        return []
    return [
        ToolCall(str(c.get("toolCallId", "")), str(c.get("toolName", "")), c.get("toolInput"))
        for c in raw
        if isinstance(c, dict)
    ]


def choice_calls(payload: Any) -> list[list[ToolCall]]:
    """The calls of each choice of a model_output: the payload's own first, then those of every
    later choice (``choices``, when the model was asked for several), in order."""
    others = payload.get("choices") if isinstance(payload, dict) else None
    return (
        [tool_calls_of(payload), *(tool_calls_of(c) for c in others if isinstance(c, dict))]
        if (isinstance(others, list))
        else [tool_calls_of(payload)]
    )


@dataclass(frozen=True)
class Outcome:
    """How a run ended, read from its last step (the format's single rule)."""

    status: Literal["success", "error", "incomplete"]
    final_answer: str | None = None
    failure_reason: str | None = None

    @property
    def result(self) -> str | None:
        """The terminal result that identifies the outcome: the answer, or the failure reason."""
        return self.final_answer if self.status == "success" else self.failure_reason


def terminal_outcome(cassette: Cassette) -> Outcome:
    last = cassette.steps[-1] if cassette.steps else None
    if last is not None and last.type == "metadata" and isinstance(last.payload, dict):
        meta = last.payload
        if meta.get("event") == "run_completed" and meta.get("status") == "success":
            result = meta.get("result")
            return Outcome("success", final_answer=result if isinstance(result, str) else None)
        if meta.get("event") == "run_failed":
            reason = meta.get("reason")
            return Outcome("error", failure_reason=reason if isinstance(reason, str) else None)
    return Outcome("incomplete")


def tool_call_sequence(cassette: Cassette) -> list[str]:
    """The tools the agent requested, in order, from its tool_call steps."""
    names = []
    for step in cassette.steps_of("tool_call"):
        name = step.payload.get("toolName") if isinstance(step.payload, dict) else None
        names.append(name if isinstance(name, str) else "unknown")
    return names


def observed_view(model_input: Any, observed: Any) -> Any:
    """What of ``model_input`` a replay compares: the ``observed`` fields (as listed in a recorded
    model_input built from spans), or the whole payload when the recording observed everything."""
    if not isinstance(observed, list) or not isinstance(model_input, dict):
        return model_input
    view: dict[str, Any] = {}
    if "messages" in observed and isinstance(model_input.get("messages"), list):
        view["messages"] = _seen_by_spans(model_input["messages"])
    if "tools" in observed and isinstance(model_input.get("tools"), list):
        # Spans record a tool's name, description and schema, not its settings (strict...).
        view["tools"] = [_without_settings(t) for t in model_input["tools"]]
    for path in observed:
        head, _, key = str(path).partition(".")
        if not key:
            if head in model_input and head not in view:
                view[head] = model_input[head]
            continue
        inner = model_input.get(head)
        part = view.setdefault(head, {})  # present even when empty: a setting added shows at its path
        if isinstance(inner, dict) and key in inner and isinstance(part, dict):
            part[key] = inner[key]
    return view


# Parts of a conversation that no span records in its messages: a replay of a cassette built from
# spans cannot compare them (the wire's model_input has them when a program sends them back).
_UNSEEN_BY_SPANS = ("reasoning", "hosted_tool")


def _seen_by_spans(messages: list[Any]) -> list[Any]:
    out = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and any(_unseen(p) for p in content):
            message = {**message, "content": [p for p in content if not _unseen(p)]}
        out.append(message)
    return out


def _without_settings(tool: Any) -> Any:
    return {k: v for k, v in tool.items() if k != "settings"} if isinstance(tool, dict) else tool


def _unseen(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") in _UNSEEN_BY_SPANS


def comparable_results(model_input: Any) -> Any:
    """``model_input`` with each tool result that is JSON text (an object or an array) as canonical
    JSON, so that a replay compares such results as values: a span records a tool's dict as
    ``{"a": 1}``, the wire as ``{"a":1}``. Other text is compared as text (``1.50`` is not ``1.5``).
    The very same object when no result changes."""
    messages = model_input.get("messages") if isinstance(model_input, dict) else None
    if not isinstance(messages, list):
        return model_input
    changed = False
    out = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            parts = [_canonical_result(part) for part in content]
            if any(new is not old for new, old in zip(parts, content, strict=True)):
                message = {**message, "content": parts}
                changed = True
        out.append(message)
    return {**model_input, "messages": out} if changed else model_input


def _canonical_result(part: Any) -> Any:
    if not isinstance(part, dict) or part.get("type") != "tool_result":
        return part
    result = part.get("result")
    if not isinstance(result, str) or result.lstrip()[:1] not in ("{", "["):
        return part
    try:
        canonical = canonical_or_none(json.loads(result))
    except (ValueError, RecursionError):  # not JSON after all: text, compared as text
        return part
    return part if canonical is None or canonical == result else {**part, "result": canonical}


def highest_call_index(steps: list[Step]) -> int:
    """The highest neutral ``call-N`` these steps use (-1: none): a child's new calls number after it."""
    highest = -1
    for step in steps:
        ids = [step.payload.get("toolCallId")] if isinstance(step.payload, dict) else []
        ids += [c.tool_call_id for calls in choice_calls(step.payload) for c in calls]
        for call_id in ids:
            if isinstance(call_id, str) and call_id.startswith("call-") and call_id[5:].isdigit():
                highest = max(highest, int(call_id[5:]))
    return highest
