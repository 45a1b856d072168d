"""What the built-in agent reads of a recorded run: its model turns, its user turns, its tool results.

Nothing here runs anything: it is the incident as the built-in agent follows it. Model turn k sends
the system prompt, tools and params of the incident's k-th ``model_input`` (the last one's once past
the end), so a run that handed off to another agent's instructions and tools is followed; a later
user turn (a ``model_input`` that, after a final answer, adds user messages no model or tool wrote)
is appended once the model has answered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from otel_blackbox._cassette.model import Cassette, tool_calls_of
from otel_blackbox._types import JsonObject
from otel_blackbox.errors import CassetteError

__all__ = ["API_OF_FAMILY", "Incident", "RecordedResult", "read_incident", "recorded_results"]


# The API a model name's family is served on when the cassette does not say (--provider chooses).
API_OF_FAMILY = (
    (re.compile(r"^(gpt|o\d|chatgpt|codex|text-|davinci)", re.IGNORECASE), "openai-chat"),
    (re.compile(r"^(claude|anthropic)", re.IGNORECASE), "anthropic"),
    (re.compile(r"^(models/)?(gemini|gemma|learnlm)", re.IGNORECASE), "gemini"),
)
_NEUTRAL_ID = re.compile(r"^call-(\d+)$")


@dataclass(frozen=True)
class RecordedResult:
    """One recorded ``tool_result``, with the arguments of the call it answered."""

    step: int
    tool_name: str
    tool_input: Any
    outcome: JsonObject  # {"result": ...} or {"error": "..."}
    call_id: str = ""  # the neutral id of the call it answered


@dataclass(frozen=True)
class UnansweredCall:
    """A ``tool_call`` step with no ``tool_result``: the run ended (was killed) before the tool returned."""

    step: int
    tool_name: str
    tool_input: Any


@dataclass(frozen=True)
class Incident:
    id: str
    source: str  # the file, for messages
    model_inputs: list[JsonObject]
    user_turns: list[list[JsonObject]]  # the user messages each later turn of the conversation adds
    results: list[RecordedResult]
    unanswered: list[UnansweredCall]
    model: str | None  # the model the first call named
    api: str | None  # the API the first call went to, where the cassette says
    stream: bool | None
    user_turn_at: tuple[int, ...] = ()  # the model input (from 0) each of user_turns is added at
    called: frozenset[str] = frozenset()  # the tools its model called (a call may have no result)

    def user_turns_after(self, turn: int) -> list[list[JsonObject]]:
        """The user turns added after model call ``turn``: what a branch from there still says."""
        return [list(t) for t, at in zip(self.user_turns, self.user_turn_at, strict=True) if at > turn]

    def settings_at(self, turn: int) -> JsonObject:
        """The system prompt, tools and params of model turn ``turn`` (from 0)."""
        source = self.model_inputs[min(turn, len(self.model_inputs) - 1)]
        return {key: source[key] for key in ("systemPrompt", "tools", "params") if key in source}

    def offered_tools(self) -> set[str]:
        """The names of the tools any model call of the incident offered, and of those it called:
        the tools a stub may answer (a cassette built from spans may not list the tools offered)."""
        names = {
            str(tool["name"])
            for source in self.model_inputs
            for tool in source.get("tools") or []
            if isinstance(tool, dict) and isinstance(tool.get("name"), str)
        }
        return names | self.called | {result.tool_name for result in self.results}

    def first_messages(self) -> list[JsonObject]:
        return [dict(m) for m in self.model_inputs[0].get("messages", [])]

    def next_call_index(self) -> int:
        """The first neutral ``call-N`` the conversation's own history does not use already."""
        used = [int(m.group(1)) for m in map(_NEUTRAL_ID.match, _ids_in(self.first_messages())) if m]
        return max(used, default=-1) + 1

    def family_api(self, model: str | None) -> str | None:
        name = model or self.model or ""
        return next((api for pattern, api in API_OF_FAMILY if pattern.match(name)), None)


def read_incident(cassette: Cassette, source: str) -> Incident:
    """The incident the built-in agent follows; CassetteError when it has no model step to start from."""
    steps = cassette.steps
    model_inputs = [s.payload for s in steps if s.type == "model_input" and isinstance(s.payload, dict)]
    if not model_inputs or not isinstance(model_inputs[0].get("messages"), list):
        raise CassetteError(f"{source}: the cassette has no model_input step to start a conversation from")
    outputs = [s.payload for s in steps if s.type == "model_output"]
    user_turns, user_turn_at = [], []
    for position in range(1, len(model_inputs)):
        answered = position - 1 < len(outputs) and _is_answer(outputs[position - 1])
        added = _added_user_messages(model_inputs[position]) if answered else []
        if added:
            user_turns.append(added)
            user_turn_at.append(position)
    model = model_inputs[0].get("model")
    api = cassette.api or {}
    return Incident(
        id=cassette.id,
        source=source,
        model_inputs=model_inputs,
        user_turns=user_turns,
        results=recorded_results(cassette),
        unanswered=unanswered_calls(cassette),
        model=model if isinstance(model, str) and model else None,
        api=api.get("name") if isinstance(api.get("name"), str) else None,
        stream=api.get("stream") if isinstance(api.get("stream"), bool) else None,
        user_turn_at=tuple(user_turn_at),
        called=called_tools(cassette),
    )


def _is_answer(output: Any) -> bool:
    return isinstance(output, dict) and output.get("type") == "final_answer"


def _added_user_messages(model_input: JsonObject) -> list[JsonObject]:
    """The user messages after the conversation's last assistant message: what the user said next."""
    messages = [m for m in model_input.get("messages", []) if isinstance(m, dict)]
    last_assistant = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    tail = messages[last_assistant + 1 :]
    return [dict(m) for m in tail if m.get("role") == "user" and not _has_tool_result(m)]


def _has_tool_result(message: JsonObject) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(p, dict) and p.get("type") == "tool_result" for p in content
    )


def recorded_results(cassette: Cassette) -> list[RecordedResult]:
    """Every tool_result step with its call's arguments, in recorded order."""
    inputs: dict[str, Any] = {}
    found = []
    for step in cassette.steps:
        payload = step.payload if isinstance(step.payload, dict) else {}
        if step.type == "tool_call":
            inputs[str(payload.get("toolCallId", ""))] = payload.get("toolInput")
        elif step.type == "tool_result":
            outcome = {"error": payload["error"]} if "error" in payload else {"result": payload.get("result")}
            found.append(
                RecordedResult(
                    step.index,
                    str(payload.get("toolName", "")),
                    inputs.get(str(payload.get("toolCallId", ""))),
                    outcome,
                    str(payload.get("toolCallId", "")),
                )
            )
    return found


def called_tools(cassette: Cassette) -> frozenset[str]:
    """The tools the run's model called: in its tool calls and model outputs, and in the history its
    first request carried (a run that took a conversation up)."""
    names = {
        str(s.payload.get("toolName", ""))
        for s in cassette.steps_of("tool_call")
        if isinstance(s.payload, dict)
    }
    for step in cassette.steps_of("model_output"):
        names.update(call.tool_name for call in tool_calls_of(step.payload))
    first = next(iter(cassette.steps_of("model_input")), None)
    messages = (
        first.payload.get("messages") if first is not None and isinstance(first.payload, dict) else None
    )
    for message in messages if isinstance(messages, list) else []:
        content = message.get("content") if isinstance(message, dict) else None
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and part.get("type") == "tool_use":
                names.add(str(part.get("toolName", "")))
    names.discard("")
    return frozenset(names)


def unanswered_calls(cassette: Cassette) -> list[UnansweredCall]:
    """The tool_call steps no tool_result answers, in recorded order."""
    calls: dict[str, UnansweredCall] = {}
    for step in cassette.steps:
        payload = step.payload if isinstance(step.payload, dict) else {}
        call_id = str(payload.get("toolCallId", ""))
        if step.type == "tool_call":
            name = str(payload.get("toolName", ""))
            calls[call_id] = UnansweredCall(step.index, name, payload.get("toolInput"))
        elif step.type == "tool_result":
            calls.pop(call_id, None)
    return list(calls.values())


def _ids_in(messages: list[JsonObject]) -> list[str]:
    return [
        str(part.get("toolCallId"))
        for message in messages
        if isinstance(message.get("content"), list)
        for part in message["content"]
        if isinstance(part, dict) and part.get("toolCallId") is not None
    ]
