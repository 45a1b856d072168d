"""OpenAI Chat Completions responses synthesized from a neutral ``model_output``, for replay: pure
functions.

A response carries every choice in order with its own finish reason, refusal (content ``null`` when
the answer is only a refusal or only calls) and annotations (``[]`` in JSON when there are none, as
the API sends), the neutral ids as tool-call ids, ``created`` 0, zero usage and an id derived from
the output, so the same output always gives the same bytes. A stream sends each choice whole, one
after the other (the SDK's accumulator places a choice by its index, so the first must come first),
its annotations in one delta. The neutral stop reasons Chat has no value for are sent as ``stop``
(``refusal``, ``stop_sequence``); a provider's own reason is sent as is. Hosted tools other than
web search have no place in a Chat answer and are not sent.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from otel_blackbox._cassette.output import Hosted, extras_of
from otel_blackbox._cost.usage import without_usage
from otel_blackbox._types import JsonObject
from otel_blackbox._wire.neutral_parts import JSON_HEADERS, SSE_HEADERS, digest, dumps, pieces, wire_turn
from otel_blackbox._wire.openai_chat.message import LEGACY, WEB_SEARCH
from otel_blackbox._wire.protocol import WireResponse

__all__ = ["wire_response"]

# Agents that log cost read usage without a None check; replay has no token counts to give.
_ZERO_USAGE = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
# stopReason -> finish_reason (read_response's table inverted), and the neutral reasons Chat has
# no value of its own for (it says "stop" for both).
_FINISH_REASONS = {"max_tokens": "length", "content_filter": "content_filter", "refusal": "stop",
                   "stop_sequence": "stop"}  # fmt: skip


def wire_response(output: JsonObject, request: JsonObject, *, streamed: bool) -> WireResponse:
    """``model_output`` as a response, a stream when ``streamed`` (``Provider.wire_response``)."""
    output = without_usage(output)  # not behaviour: replay sends zero usage, ids as before
    if not streamed:
        return WireResponse(200, list(JSON_HEADERS), dumps(_completion(output, request)).encode())
    data = [f"data: {dumps(chunk)}\n\n" for chunk in _chunks(output, request)]
    return WireResponse(200, list(SSE_HEADERS), ("".join(data) + "data: [DONE]\n\n").encode())


@dataclass
class _Sent:
    """One choice to send: what a neutral output says, in Chat's terms."""

    text: str
    refusal: str | None
    calls: list[tuple[str, str, str]]  # (neutral id, name, arguments text)
    finish_reason: str
    annotations: list[Any]
    legacy: bool  # its one call goes as the deprecated functions API's function_call

    @property
    def content(self) -> str | None:
        """``null`` when the answer is only calls or only a refusal, as the API sends it."""
        return self.text if self.text or not (self.calls or self.refusal) else None


def _sent(output: JsonObject) -> list[_Sent]:
    """Every choice of an output, the payload itself first."""
    return [_sent_choice(o) for o in [output, *extras_of(output).choices]]


def _sent_choice(output: JsonObject) -> _Sent:
    text, calls = wire_turn(output)
    extras = extras_of(output)
    reason = extras.stop_reason
    finish = _FINISH_REASONS.get(reason, reason) if reason else ("tool_calls" if calls else "stop")
    return _Sent(
        text=text,
        refusal=extras.refusal,
        calls=calls,
        finish_reason=finish,
        annotations=_annotations(extras.hosted),
        legacy=reason == LEGACY and len(calls) == 1,
    )


def _annotations(hosted: list[Hosted]) -> list[Any]:
    """The message's annotations: the results of its web searches (Chat has no other hosted tool)."""
    found: list[Any] = []
    for item in hosted:
        if item.tool_name == WEB_SEARCH and item.has_result:
            if not isinstance(item.result, list):
                raise ValueError("a web_search result must be the list of the message's annotations")
            found.extend(item.result)
    return found


def _function(name: str, arguments: str) -> JsonObject:
    return {"name": name, "arguments": arguments}


def _message(choice: _Sent) -> JsonObject:
    message: JsonObject = {
        "role": "assistant",
        "content": choice.content,
        "refusal": choice.refusal,
        "annotations": choice.annotations,
    }
    if choice.legacy:
        _, name, arguments = choice.calls[0]
        message[LEGACY] = _function(name, arguments)
    elif choice.calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": _function(name, arguments)}
            for call_id, name, arguments in choice.calls
        ]
    return message


def _completion(output: JsonObject, request: JsonObject) -> JsonObject:
    choices = [
        {"index": index, "message": _message(c), "logprobs": None, "finish_reason": c.finish_reason}
        for index, c in enumerate(_sent(output))
    ]
    return {**_head(output, request, "chat.completion"), "choices": choices, "usage": dict(_ZERO_USAGE)}


def _head(output: JsonObject, request: JsonObject, kind: str) -> JsonObject:
    model = str(request.get("model") or "")
    return {"id": f"chatcmpl-blackbox-{digest(output)}", "object": kind, "created": 0, "model": model}


def _chunks(output: JsonObject, request: JsonObject) -> Iterator[JsonObject]:
    """The stream the API would send: each choice whole, in order, then the usage chunk if asked."""
    base = _head(output, request, "chat.completion.chunk")
    include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
    if include_usage:
        base["usage"] = None  # the API's shape: null on every chunk but the last
    for index, choice in enumerate(_sent(output)):
        yield from _choice_chunks(base, index, choice)
    if include_usage:
        yield {**base, "choices": [], "usage": dict(_ZERO_USAGE)}


def _choice_chunks(base: JsonObject, index: int, choice: _Sent) -> Iterator[JsonObject]:
    """One choice's chunks: role first, text and refusal deltas, its annotations in one delta (the SDK
    cannot merge a list of them sent in parts), each call's id and name once then its arguments in
    pieces (the SDK concatenates every string it sees twice), the finish reason."""

    def chunk(delta: JsonObject, finish_reason: str | None = None) -> JsonObject:
        return {
            **base,
            "choices": [{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        }

    content = "" if choice.content is not None else None
    yield chunk({"role": "assistant", "content": content, "refusal": None})
    for piece in pieces(choice.text):
        yield chunk({"content": piece})
    for piece in pieces(choice.refusal or ""):
        yield chunk({"refusal": piece})
    if choice.annotations:
        yield chunk({"annotations": choice.annotations})
    if choice.legacy:
        _, name, arguments = choice.calls[0]
        yield chunk({LEGACY: _function(name, "")})
        for piece in pieces(arguments):
            yield chunk({LEGACY: {"arguments": piece}})
    else:
        for call_index, (call_id, name, arguments) in enumerate(choice.calls):
            head = {"index": call_index, "id": call_id, "type": "function", "function": _function(name, "")}
            yield chunk({"tool_calls": [head]})
            for piece in pieces(arguments):
                yield chunk({"tool_calls": [{"index": call_index, "function": {"arguments": piece}}]})
    yield chunk({}, choice.finish_reason)
