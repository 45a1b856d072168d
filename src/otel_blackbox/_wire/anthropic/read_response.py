"""Anthropic Messages responses read into a neutral ``model_output`` and their token counts: pure
functions.

A JSON ``message`` or its SSE stream: ``text`` blocks are joined into the text, ``tool_use`` blocks
become calls with ``call-N`` ids; ``thinking`` / ``redacted_thinking`` blocks are ``reasoning``
(``{text, signature}`` / ``{redacted}``), hosted tool calls with their results ``hostedTools`` (the
same entries as a request's parts: ``blocks.py``). When the blocks are not in the canonical order (a
web search's text, search, result, text...; thinking between tool calls) or there are several
non-empty text blocks (citations split the answer), ``sequence`` keeps their order (a hosted call
where its use is) and ``textParts`` the text of each block; empty text blocks are no part.
``stop_reason`` is ``stopReason`` unless it is ``end_turn`` or ``tool_use`` (``max_tokens``,
``stop_sequence`` with the matched ``stopSequence``, ``refusal``, and any other reason as sent:
``pause_turn``, ``model_context_window_exceeded``...); a refusal's ``stop_details.explanation`` is
``refusal`` (its ``category`` is not kept). Dropped: ids, ``usage``, ``container``, citations,
``caller`` and other blocks (``container_upload``...). Anthropic has no ``n``: a message is one
choice, never ``choices``. A body that is not a complete message (an ``error``, a stream cut
short) raises ``ValueError``.

``usage`` reads the token counts apart, as ``tokenUsage``: ``input_tokens`` leaves the cache out, so
``inputTokens`` is it plus ``cache_read_input_tokens`` (``cacheReadTokens``) plus
``cache_creation_input_tokens`` (``cacheWriteTokens``); a stream's are ``message_start``'s, updated
by each ``message_delta``'s.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from otel_blackbox._cassette.output import Extras, sequence_of, with_extras
from otel_blackbox._cost.usage import count, usage_json
from otel_blackbox._types import JsonObject
from otel_blackbox._wire.anthropic.blocks import hosted_at, reasonings, string_field
from otel_blackbox._wire.anthropic.stop_reasons import DEFAULT_STOPS
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.protocol import add_piece, join_pieces

__all__ = ["anthropic_usage", "model_output", "usage"]


def model_output(body: bytes, *, streamed: bool, ids: CallIds) -> JsonObject:
    """A response body as ``model_output`` (``Provider.model_output``)."""
    message = _stream_message(body) if streamed else _json_message(body)
    return _neutral_output(message, ids)


def usage(body: bytes, *, streamed: bool) -> JsonObject | None:
    """A response body's ``tokenUsage`` (``Provider.usage``)."""
    if not streamed:
        message = json.loads(body)
        return anthropic_usage(message.get("usage") if isinstance(message, dict) else None)
    usage: JsonObject = {}
    for event in _sse_events(body):
        kind = event.get("type") if isinstance(event, dict) else None
        if kind == "message_start" and isinstance(event.get("message"), dict):
            usage = dict(event["message"].get("usage") or {})
        elif kind == "message_delta" and isinstance(event.get("usage"), dict):
            usage.update(event["usage"])  # the counts so far: they replace message_start's
    return anthropic_usage(usage)


def _json_message(body: bytes) -> JsonObject:
    message = json.loads(body)
    if not isinstance(message, dict) or message.get("type") != "message":
        raise ValueError(f"not an Anthropic message: {_error_text(message)}")
    return message


def _error_text(value: Any) -> str:
    error = value.get("error") if isinstance(value, dict) else None
    return str(error.get("message")) if isinstance(error, dict) else type(value).__name__


def _sse_events(body: bytes) -> Iterator[JsonObject]:
    """The JSON data of each event. Each carries its own ``type``, so the ``event:`` lines are redundant."""
    for chunk in body.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n").split("\n\n"):
        data = [line[5:].removeprefix(" ") for line in chunk.split("\n") if line.startswith("data:")]
        if data:
            yield json.loads("\n".join(data))


def _stream_message(body: bytes) -> JsonObject:
    """Rebuild the message from a whole stream: blocks from their deltas (tool input JSON parsed at
    the end), the stop reason from the last ``message_delta``."""
    blocks: dict[int, JsonObject] = {}
    partial_json: dict[int, list[str]] = {}
    message: JsonObject = {}
    stopped = False
    for event in _sse_events(body):
        kind = event.get("type")
        if kind == "error":
            raise ValueError(f"the stream reported an error: {_error_text(event)}")
        if kind == "content_block_start":
            blocks[event["index"]] = dict(event["content_block"])
        elif kind == "content_block_delta":
            if event.get("index") not in blocks:
                raise ValueError(f"a delta for content block {event.get('index')} before its start")
            _apply_delta(blocks[event["index"]], partial_json.setdefault(event["index"], []), event["delta"])
        elif kind == "message_delta":
            message.update(event["delta"])
        stopped = stopped or kind == "message_stop"
    if not stopped:
        raise ValueError("the stream ended before message_stop")
    for index, pieces in partial_json.items():
        if "".join(pieces).strip():
            blocks[index]["input"] = json.loads("".join(pieces))
    for block in blocks.values():
        join_pieces(block, "text")
        join_pieces(block, "thinking")
    message["content"] = [blocks[i] for i in sorted(blocks)]
    return message


def anthropic_usage(usage: Any) -> JsonObject | None:
    """The ``tokenUsage`` of a message's ``usage``. Anthropic's ``input_tokens`` excludes the cached
    tokens; ``inputTokens`` includes them, as the other APIs count."""
    if not isinstance(usage, dict):
        return None
    read = count(usage.get("cache_read_input_tokens")) or 0
    written = count(usage.get("cache_creation_input_tokens")) or 0
    given = count(usage.get("input_tokens"))
    total = None if given is None and not (read or written) else (given or 0) + read + written
    return usage_json(total, count(usage.get("output_tokens")), read, written)


def _apply_delta(block: JsonObject, partial_json: list[str], delta: JsonObject) -> None:
    kind = delta.get("type")
    if kind == "text_delta":
        add_piece(block, "text", delta.get("text", ""))
    elif kind == "input_json_delta":
        partial_json.append(delta.get("partial_json", ""))
    elif kind == "thinking_delta":
        add_piece(block, "thinking", delta.get("thinking", ""))
    elif kind == "signature_delta":
        block["signature"] = delta.get("signature", "")  # the SDK keeps the last one, whole


def _neutral_output(message: JsonObject, ids: CallIds) -> JsonObject:
    blocks = [b for b in message.get("content") or [] if isinstance(b, dict)]
    text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
    calls = [
        {
            "toolCallId": ids.neutral(str(b.get("id"))),
            "toolName": b.get("name", ""),
            "toolInput": b.get("input", {}),
        }
        for b in blocks
        if b.get("type") == "tool_use"
    ]
    output: JsonObject = {"type": "final_answer", "text": text}
    if calls:
        output = {"type": "tool_calls", "calls": calls, **({"text": text} if text else {})}
    return with_extras(output, _extras(message, blocks))


def _extras(message: JsonObject, blocks: list[JsonObject]) -> Extras:
    stop = message.get("stop_reason")
    details = message.get("stop_details")
    explanation = details.get("explanation") if isinstance(details, dict) else None
    hosted = hosted_at(blocks)
    sequence, text_parts = sequence_of(*_parts_order(blocks, {at for at, _ in hosted}))
    return Extras(
        stop_reason=None if stop in DEFAULT_STOPS or stop is None else str(stop),
        stop_sequence=string_field(message, "stop_sequence") if stop == "stop_sequence" else None,
        refusal=explanation if stop == "refusal" and isinstance(explanation, str) else None,
        reasoning=reasonings(blocks),
        hosted=[h for _, h in hosted],
        sequence=sequence,
        text_parts=text_parts,
    )


def _parts_order(blocks: list[JsonObject], hosted_at: set[int]) -> tuple[list[str], list[str]]:
    """The kinds of the parts in block order, and the text pieces. A hosted call is where its use (or
    its lone result) is; an empty text block is no piece (the replay's one text block of a plain
    answer holds the empty text)."""
    kinds: list[str] = []
    texts: list[str] = []
    for index, block in enumerate(blocks):
        kind = block.get("type")
        if index in hosted_at:
            kinds.append("hosted")
        elif kind in ("thinking", "redacted_thinking"):
            kinds.append("reasoning")
        elif kind == "tool_use":
            kinds.append("call")
        elif kind == "text" and block.get("text"):
            kinds.append("text")
            texts.append(str(block["text"]))
    return kinds, texts
