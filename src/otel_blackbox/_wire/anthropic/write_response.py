"""Anthropic Messages responses synthesized from a neutral ``model_output``, for replay: pure
functions.

The blocks are in the output's ``sequence``, one text block a piece, else in the canonical order
(thinking, hosted tool use then its result, text, tool use); a hosted call is always its use then its
result. Ids derived from the output (``msg_blackbox_<digest>``, ``srvtoolu_blackbox_<digest>_<n>`` /
``mcptoolu_blackbox_<digest>_<n>`` with the result's ``tool_use_id`` pointing at it), the neutral
``call-N`` ids on tool uses, the stop reason (the default from the calls, else ``stopReason``;
OpenAI's ``content_filter`` is ``refusal``), zero usage. A stream has every event the API sends:
thinking as ``thinking_delta`` + ``signature_delta``, redacted thinking and hosted results whole in
their ``content_block_start``, tool inputs as one ``input_json_delta``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

from otel_blackbox._cassette.output import Extras, extras_of, ordered
from otel_blackbox._cost.usage import without_usage
from otel_blackbox._types import JsonObject
from otel_blackbox._wire.anthropic.blocks import HOSTED_USES, hosted_blocks, thinking_block
from otel_blackbox._wire.anthropic.stop_reasons import DEFAULT_STOPS
from otel_blackbox._wire.protocol import WireResponse

__all__ = ["wire_response"]

_JSON_HEADERS = [("content-type", "application/json")]
_SSE_HEADERS = [("content-type", "text/event-stream"), ("cache-control", "no-cache")]
# The SDK's Message and stream-delta models require usage; replay has no token counts to give.
_ZERO_USAGE = {"input_tokens": 0, "output_tokens": 0}


def wire_response(output: JsonObject, request: JsonObject, *, streamed: bool) -> WireResponse:
    """``model_output`` as a response, a stream when ``streamed`` (``Provider.wire_response``)."""
    output = without_usage(output)  # not behaviour: replay sends zero usage, ids as before
    message = _wire_message(output, str(request.get("model") or ""))
    if streamed:
        return WireResponse(200, list(_SSE_HEADERS), b"".join(_sse(message)))
    return WireResponse(200, list(_JSON_HEADERS), _dumps(message).encode())


def _dumps(value: Any) -> str:
    # ASCII escapes keep every SSE data line one line for any decoder (U+2028 is a line break to
    # str.splitlines) and survive lone surrogates, which UTF-8 cannot encode.
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"))


def _calls(output: JsonObject) -> list[JsonObject]:
    if output.get("type") == "tool_call":  # the single-call shape the TypeScript tool writes
        return [output]
    return list(output.get("calls") or []) if output.get("type") == "tool_calls" else []


def _wire_message(output: JsonObject, model: str) -> JsonObject:
    calls, extras = _calls(output), extras_of(output)
    digest = hashlib.sha256(json.dumps(output, sort_keys=True).encode()).hexdigest()[:24]
    content: list[JsonObject] = []
    hosted_count = 0
    for kind, value in ordered(output, extras, calls):
        if kind == "reasoning":
            content.append(thinking_block(value))
        elif kind == "hosted":
            content += hosted_blocks(value, f"blackbox_{digest}_{hosted_count}")
            hosted_count += 1
        elif kind == "text":
            content.append({"type": "text", "text": value})
        else:
            content.append(_tool_use_block(value))
    stop_reason = _stop_reason(extras, bool(calls))
    # A plain answer is one text block, even empty; a refusal or a turn of thinking can have none.
    if not content and stop_reason in DEFAULT_STOPS:
        content.append({"type": "text", "text": ""})
    message: JsonObject = {
        "id": f"msg_blackbox_{digest}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": extras.stop_sequence,
        "usage": dict(_ZERO_USAGE),
    }
    if extras.refusal is not None:
        message["stop_details"] = {"type": "refusal", "category": None, "explanation": extras.refusal}
    return message


def _tool_use_block(call: JsonObject) -> JsonObject:
    return {
        "type": "tool_use",
        "id": call["toolCallId"],
        "name": call["toolName"],
        "input": call.get("toolInput", {}),
    }


def _stop_reason(extras: Extras, has_calls: bool) -> str:
    if extras.stop_reason is None and extras.refusal is not None:
        return "refusal"  # a refusal written without its stop reason (a fork's script)
    if extras.stop_reason is None:
        return "tool_use" if has_calls else "end_turn"
    # Another provider's neutral name (a fork's script): Anthropic calls a filtered answer a refusal.
    return "refusal" if extras.stop_reason == "content_filter" else extras.stop_reason


def _event(kind: str, data: JsonObject) -> bytes:
    return f"event: {kind}\ndata: {_dumps({'type': kind, **data})}\n\n".encode()


def _sse(message: JsonObject) -> Iterator[bytes]:
    """The stream the API would send for ``message``: text, thinking and tool inputs opened empty and
    filled by deltas; redacted thinking and hosted results whole in their start event."""
    start = {k: v for k, v in message.items() if k not in ("stop_details", "stop_sequence")}
    yield _event(
        "message_start", {"message": {**start, "content": [], "stop_reason": None, "stop_sequence": None}}
    )
    for index, block in enumerate(message["content"]):
        opened, deltas = _opened(block)
        yield _event("content_block_start", {"index": index, "content_block": opened})
        for delta in deltas:
            yield _event("content_block_delta", {"index": index, "delta": delta})
        yield _event("content_block_stop", {"index": index})
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": message["stop_sequence"]}
    if "stop_details" in message:
        stop["stop_details"] = message["stop_details"]
    yield _event("message_delta", {"delta": stop, "usage": {"output_tokens": 0}})
    yield _event("message_stop", {})


def _opened(block: JsonObject) -> tuple[JsonObject, list[JsonObject]]:
    """A block as its ``content_block_start`` carries it, and the deltas that fill it."""
    kind = block["type"]
    if kind == "text":
        return {"type": "text", "text": ""}, [{"type": "text_delta", "text": block["text"]}]
    if kind == "thinking":
        deltas = [
            {"type": "thinking_delta", "thinking": block["thinking"]},
            {"type": "signature_delta", "signature": block["signature"]},
        ]
        return {"type": "thinking", "thinking": "", "signature": ""}, deltas
    if kind in ("tool_use", *HOSTED_USES):
        return {**block, "input": {}}, [{"type": "input_json_delta", "partial_json": _dumps(block["input"])}]
    return block, []
