"""OpenAI Chat Completions responses read into a neutral ``model_output`` and their token counts:
pure functions.

A JSON ``chat.completion`` or its ``chat.completion.chunk`` stream, reassembled per choice ``index``
from deltas as the SDK does. Choice 0 is the payload: its text, its function calls (ids become
``call-N``; a legacy ``function_call`` is a call too, numbered by name and arguments), and the
extras (``_cassette/output.py``) when they say something: ``finish_reason`` ``length`` ->
``stopReason: max_tokens``, ``content_filter`` -> ``content_filter``, any other value but the
defaults ``stop`` and ``tool_calls`` kept as is (the legacy ``function_call`` among them: it tells
replay to send the call back as a ``function_call``); ``refusal`` apart from the text (a
refusal-only answer is a ``final_answer`` with text ``""``); a web-search answer's ``annotations``
(url_citation) as ``hostedTools: [{toolName: web_search, result: [annotations as sent]}]``. With
``n`` > 1 every later choice, in index order, is a whole output of its own in ``choices``, its calls
numbered after those of the choices before it. Chat has no reasoning items and no hosted tool calls
beyond web-search annotations. Ids, usage, logprobs, fingerprints, the service tier and moderation
results are dropped. A body that is not a complete completion (an ``error``, a stream in which a
choice has no finish reason) raises ``ValueError``.

``usage`` reads the token counts apart (a stream's usage chunk, when it asked for one), as
``tokenUsage``: ``prompt_tokens`` (cached included), ``completion_tokens``,
``prompt_tokens_details.cached_tokens``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from otel_blackbox._cassette.output import Extras, Hosted, with_extras
from otel_blackbox._cost.usage import count, usage_json
from otel_blackbox._types import JsonObject
from otel_blackbox._wire.call_ids import CallIds, call_signature
from otel_blackbox._wire.neutral_parts import Turn, error_text, sse_data, tool_input
from otel_blackbox._wire.openai_chat.message import LEGACY, WEB_SEARCH, texts_and_refusal

__all__ = ["chat_usage", "model_output", "usage"]

_DEFAULT_FINISHES = ("stop", "tool_calls")
_STOP_REASONS = {"length": "max_tokens", "content_filter": "content_filter"}


def model_output(body: bytes, *, streamed: bool, ids: CallIds) -> JsonObject:
    """A response body as ``model_output`` (``Provider.model_output``)."""
    answers = _stream_answers(body) if streamed else _completion_answers(body)
    first, *rest = answers  # numbered in choice order: choice 0's calls first
    output = first.neutral(ids)
    return with_extras(output, Extras(choices=[a.neutral(ids) for a in rest]))


def usage(body: bytes, *, streamed: bool) -> JsonObject | None:
    """A response body's ``tokenUsage`` (``Provider.usage``)."""
    if not streamed:
        completion = json.loads(body)
        return chat_usage(completion.get("usage") if isinstance(completion, dict) else None)
    usage: Any = None  # with stream_options.include_usage: null on every chunk but the last
    for data in sse_data(body):
        if data.startswith("[DONE]"):
            break
        chunk = json.loads(data)
        usage = (chunk.get("usage") if isinstance(chunk, dict) else None) or usage
    return chat_usage(usage)


def _stop_reason(finish_reason: Any) -> str | None:
    """The neutral stopReason of a finish reason: none for the defaults (the end, tool use)."""
    if finish_reason is None or finish_reason == "" or finish_reason in _DEFAULT_FINISHES:
        return None
    return _STOP_REASONS.get(str(finish_reason), str(finish_reason))


@dataclass
class _Answer:
    """One choice as the wire gave it, JSON or reassembled from a stream."""

    text: str = ""
    refusal: str = ""
    calls: list[tuple[str, str, Any]] = field(default_factory=list)  # (provider id, name, arguments)
    function_call: tuple[str, Any] | None = None  # the legacy call: (name, raw arguments)
    finish_reason: Any = None
    annotations: list[Any] = field(default_factory=list)

    def neutral(self, ids: CallIds) -> JsonObject:
        output = Turn(self.text, self.calls).neutral(ids)
        if self.function_call is not None:
            output = _with_legacy_call(output, ids, *self.function_call)
        hosted = [Hosted(WEB_SEARCH, result=list(self.annotations))] if self.annotations else []
        extras = Extras(
            stop_reason=_stop_reason(self.finish_reason), refusal=self.refusal or None, hosted=hosted
        )
        return with_extras(output, extras)


def _with_legacy_call(output: JsonObject, ids: CallIds, name: str, arguments: Any) -> JsonObject:
    """``output`` with the legacy call added: it has no id, so it is known by name and arguments."""
    parsed = tool_input(arguments)
    call = {
        "toolCallId": ids.made_call(call_signature(name, parsed), None),
        "toolName": name,
        "toolInput": parsed,
    }
    calls = [*output.get("calls", []), call]
    text = output.get("text")
    return {"type": "tool_calls", "calls": calls, **({"text": text} if text else {})}


def _completion_answers(body: bytes) -> list[_Answer]:
    completion = json.loads(body)
    choices = completion.get("choices") if isinstance(completion, dict) else None
    if not isinstance(choices, list) or not choices:
        raise ValueError(f"not a chat completion: {error_text(completion)}")
    return [_answer(c) for c in sorted(choices, key=lambda c: c.get("index", 0))]


def chat_usage(usage: Any) -> JsonObject | None:
    """The ``tokenUsage`` of Chat's ``usage``: ``prompt_tokens`` (cached included, as
    ``prompt_tokens_details.cached_tokens`` says), ``completion_tokens`` (reasoning included)."""
    if not isinstance(usage, dict):
        return None
    details = usage.get("prompt_tokens_details")
    cached = count(details.get("cached_tokens")) if isinstance(details, dict) else None
    return usage_json(count(usage.get("prompt_tokens")), count(usage.get("completion_tokens")), cached)


def _answer(choice: JsonObject) -> _Answer:
    message = choice.get("message") or {}
    calls = [
        (str(c.get("id") or ""), str(c["function"].get("name", "")), c["function"].get("arguments", ""))
        for c in message.get("tool_calls") or []
        if isinstance(c, dict) and isinstance(c.get("function"), dict)
    ]
    text, refusal = texts_and_refusal(message.get("content"))
    function = message.get(LEGACY)
    legacy = (
        (str(function.get("name", "")), function.get("arguments", "")) if isinstance(function, dict) else None
    )
    return _Answer(
        text=text,
        refusal=str(message.get("refusal") or "") + refusal,
        calls=calls,
        function_call=legacy,
        finish_reason=choice.get("finish_reason"),
        annotations=_annotation_list(message.get("annotations")),
    )


def _annotation_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"annotations must be a list, not {type(value).__name__}")
    return value


@dataclass
class _StreamState:
    """One choice of a stream, as its deltas arrive."""

    text: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    # Each call's id, name and arguments as the pieces the deltas carried: joined once at the end,
    # so a stream of many small deltas costs linear time, not quadratic.
    calls: dict[int, dict[str, list[str]]] = field(default_factory=dict)
    function_call: dict[str, list[str]] | None = None
    annotations: list[Any] = field(default_factory=list)
    finish_reason: Any = None

    def add(self, choice: JsonObject) -> None:
        delta = choice.get("delta") or {}
        self.text.append(delta.get("content") or "")
        self.refusal.append(delta.get("refusal") or "")
        for piece in delta.get("tool_calls") or []:
            call = self.calls.setdefault(piece.get("index", 0), {"id": [], "name": [], "arguments": []})
            function = piece.get("function") or {}
            # Strings are concatenated, as the SDK's accumulate_delta does.
            call["id"].append(piece.get("id") or "")
            call["name"].append(function.get("name") or "")
            call["arguments"].append(function.get("arguments") or "")
        legacy = delta.get(LEGACY)
        if isinstance(legacy, dict):
            if self.function_call is None:
                self.function_call = {"name": [], "arguments": []}
            self.function_call["name"].append(legacy.get("name") or "")
            self.function_call["arguments"].append(legacy.get("arguments") or "")
        self.annotations.extend(_annotation_list(delta.get("annotations")))
        self.finish_reason = choice.get("finish_reason") or self.finish_reason

    def answer(self) -> _Answer:
        calls = [
            ("".join(c["id"]), "".join(c["name"]), "".join(c["arguments"]))
            for _, c in sorted(self.calls.items())
        ]
        legacy = self.function_call
        return _Answer(
            text="".join(self.text),
            refusal="".join(self.refusal),
            calls=calls,
            function_call=("".join(legacy["name"]), "".join(legacy["arguments"])) if legacy else None,
            finish_reason=self.finish_reason,
            annotations=self.annotations,
        )


def _stream_answers(body: bytes) -> list[_Answer]:
    states: dict[int, _StreamState] = {}
    for data in sse_data(body):
        if data.startswith("[DONE]"):
            break
        chunk = json.loads(data)
        if not isinstance(chunk, dict) or chunk.get("error"):
            raise ValueError(f"the stream reported an error: {error_text(chunk)}")
        for choice in chunk.get("choices") or []:
            states.setdefault(choice.get("index", 0), _StreamState()).add(choice)
    if not states or not all(s.finish_reason for s in states.values()):
        raise ValueError("the stream ended before a finish_reason")
    return [states[index].answer() for index in sorted(states)]
