"""OpenAI Responses API responses synthesized from a neutral ``model_output``, for replay: pure
functions.

The items are listed in the output's ``sequence``, else the neutral order (reasoning, hosted calls,
the message, function calls). Text pieces that follow each other are the ``output_text`` parts of one
message (two adjacent messages come back as one message of two parts); the refusal is a part of the
last message; with no text, a message (for a refusal, or when there is nothing else) goes before the
calls. Ids are derived from the output: ``resp_blackbox_<digest>``, ``rs_blackbox_<digest>_<n>`` for
the n-th reasoning entry, ``ws_`` / ``fs_`` / ``ci_`` / ``ig_`` / ``mcp_`` (else ``htc_``)
``blackbox_<digest>_<n>`` for the n-th hosted call, ``msg_blackbox_<digest>`` (``_<n>`` for the n-th
message after the first), ``fc_blackbox_...``. They carry the neutral ids as ``call_id``,
``created_at`` 0 and zero usage, and echo the request's settings the API echoes (tools, tool_choice,
reasoning, text...). A ``stopReason`` makes the response ``incomplete`` with that
``incomplete_details.reason`` (``max_tokens`` -> ``max_output_tokens``; ``incomplete`` -> no
details; ``refusal`` and ``stop_sequence``, which this API does not have, leave it completed), and a
trailing message ``incomplete``. A message is sent when there is text or a refusal, or nothing else
to send. A hosted tool named like a call the program runs (``function``...) is refused. A stream
(``events.py``) has every event the SDK's stream helper checks, in order: the reasoning text and
summary parts and their deltas, each hosted call's own lifecycle events
(``web_search_call.searching``, ``code_interpreter_call_code.delta``...), refusal deltas, and
``response.incomplete`` in place of ``response.completed`` for an incomplete response.
"""

from __future__ import annotations

import copy

from otel_blackbox._cassette.output import Extras, Reasoning, extras_of, ordered
from otel_blackbox._cost.usage import without_usage
from otel_blackbox._types import JsonObject
from otel_blackbox._wire.neutral_parts import JSON_HEADERS, SSE_HEADERS, digest, dumps, wire_turn
from otel_blackbox._wire.openai_responses.events import events
from otel_blackbox._wire.openai_responses.items import hosted_item
from otel_blackbox._wire.openai_responses.stop_reasons import NO_REASON, STOP_REASONS
from otel_blackbox._wire.protocol import WireResponse

__all__ = ["wire_response"]

_ID_PREFIXES = {
    "web_search_call": "ws",
    "file_search_call": "fs",
    "code_interpreter_call": "ci",
    "image_generation_call": "ig",
    "mcp_call": "mcp",
}
# stopReason -> incomplete_details.reason: stop_reasons.py's table inverted.
_WIRE_REASONS = {neutral: wire for wire, neutral in STOP_REASONS.items()}
_COMPLETE = ("refusal", "stop_sequence")  # neutral reasons this API has no incomplete reason for
# The request settings a response echoes (besides tools, tool_choice and the sampling settings).
_ECHOED = (
    "reasoning",
    "text",
    "truncation",
    "max_tool_calls",
    "top_logprobs",
    "previous_response_id",
    "metadata",
    "user",
    "safety_identifier",
    "prompt_cache_key",
)
# The SDK's ResponseUsage requires every one of these fields; replay has no token counts to give.
_ZERO_USAGE = {
    "input_tokens": 0,
    "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
    "output_tokens": 0,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 0,
}


def wire_response(output: JsonObject, request: JsonObject, *, streamed: bool) -> WireResponse:
    """``model_output`` as a response, a stream when ``streamed`` (``Provider.wire_response``)."""
    output = without_usage(output)  # not behaviour: replay sends zero usage, ids as before
    response = _response(output, request)
    if not streamed:
        return WireResponse(200, list(JSON_HEADERS), dumps(response).encode())
    sent = [
        f"event: {kind}\ndata: {dumps({'type': kind, 'sequence_number': seq, **data})}\n\n"
        for seq, (kind, data) in enumerate(events(response))
    ]
    return WireResponse(200, list(SSE_HEADERS), "".join(sent).encode())


def _reasoning_item(reasoning: Reasoning, item_id: str) -> JsonObject:
    item: JsonObject = {"id": item_id, "type": "reasoning"}
    item["summary"] = [{"type": "summary_text", "text": s} for s in reasoning.summary or []]
    if reasoning.text is not None:
        item["content"] = [{"type": "reasoning_text", "text": reasoning.text}]
    if reasoning.encrypted_content is not None:
        item["encrypted_content"] = reasoning.encrypted_content
    return item


def _text_part(text: str) -> JsonObject:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _message_item(texts: list[str], item_id: str) -> JsonObject:
    content = [_text_part(t) for t in texts]
    message = {"id": item_id, "type": "message", "role": "assistant", "content": content}
    return {**message, "status": "completed"}


def _output_items(output: JsonObject, extras: Extras) -> list[JsonObject]:
    """The items in the output's order (``ordered``): text pieces that follow each other are the
    output_text parts of one message; the refusal is a part of the last message."""
    _, calls = wire_turn(output)
    tag = digest(output)
    items: list[JsonObject] = []
    counts = {"reasoning": 0, "hosted": 0, "call": 0, "text": 0}
    messages: list[JsonObject] = []
    for kind, value in ordered(output, extras, calls):
        n = counts[kind]
        counts[kind] += 1
        if kind == "reasoning":
            items.append(_reasoning_item(value, f"rs_blackbox_{tag}_{n}"))
        elif kind == "hosted":
            prefix = _ID_PREFIXES.get(f"{value.tool_name}_call", "htc")
            items.append(hosted_item(value, f"{prefix}_blackbox_{tag}_{n}"))
        elif kind == "text" and messages and items[-1] is messages[-1]:
            items[-1]["content"].append(_text_part(value))
        elif kind == "text":
            suffix = f"_{len(messages)}" if messages else ""
            messages.append(_message_item([value], f"msg_blackbox_{tag}{suffix}"))
            items.append(messages[-1])
        else:
            call_id, name, arguments = value
            call = {"id": f"fc_blackbox_{tag}_{n}", "type": "function_call", "call_id": call_id, "name": name}
            items.append({**call, "arguments": arguments, "status": "completed"})
    if not messages and (extras.refusal is not None or not items):
        # No text: an empty message (for a refusal, or a response of nothing) before the calls.
        messages.append(_message_item([] if extras.refusal is not None else [""], f"msg_blackbox_{tag}"))
        at = next((i for i, item in enumerate(items) if item["type"] == "function_call"), len(items))
        items.insert(at, messages[-1])
    if extras.refusal is not None:
        messages[-1]["content"].append({"type": "refusal", "refusal": extras.refusal})
    return items


def _status(stop_reason: str | None) -> tuple[str, JsonObject | None]:
    """The response's status and incomplete_details for a neutral stopReason."""
    if stop_reason is None or stop_reason in _COMPLETE:
        return "completed", None
    if stop_reason == NO_REASON:
        return "incomplete", None
    return "incomplete", {"reason": _WIRE_REASONS.get(stop_reason, stop_reason)}


def _response(output: JsonObject, request: JsonObject) -> JsonObject:
    """The whole response; what it echoes of the request (tools, tool_choice...) the SDK requires."""
    extras = extras_of(output)
    items = _output_items(output, extras)
    status, details = _status(extras.stop_reason)
    if status == "incomplete" and items[-1]["type"] == "message":
        items[-1]["status"] = "incomplete"  # the message the limit cut short
    instructions = request.get("instructions")
    response: JsonObject = {
        "id": f"resp_blackbox_{digest(output)}",
        "object": "response",
        "created_at": 0,
        "status": status,
        "error": None,
        "incomplete_details": details,
        "instructions": instructions if isinstance(instructions, str) else None,
        "model": str(request.get("model") or ""),
        "output": items,
        "parallel_tool_calls": request.get("parallel_tool_calls") is not False,
        "tool_choice": request.get("tool_choice") or "auto",
        "tools": list(request.get("tools") or []),
        "temperature": request.get("temperature"),
        "top_p": request.get("top_p"),
        "max_output_tokens": request.get("max_output_tokens"),
        "usage": copy.deepcopy(_ZERO_USAGE),
    }
    echoed = {k: copy.deepcopy(request[k]) for k in _ECHOED if request.get(k) is not None}
    return {**response, **echoed}
