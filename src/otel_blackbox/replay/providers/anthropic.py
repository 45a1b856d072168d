"""Anthropic Messages (``POST /v1/messages``): wire <-> neutral v2 payloads, pure functions.

Requests (``model_input``):

* ``system``, a string or a list of text blocks (joined with a blank line), is ``systemPrompt``.
* A message keeps string content as a string. Block content becomes parts:
  ``text`` -> ``{type: text, text}`` (citations and ``cache_control`` dropped);
  ``tool_use`` -> ``{type: tool_use, toolCallId, toolName, toolInput}``;
  ``tool_result`` -> ``{type: tool_result, toolCallId, toolName, result}``, the content as sent (a
  string, a list of blocks, or ``""`` when absent), or ``error`` (a string) when ``is_error`` is true.
* An assistant turn is canonicalized to the shape replay sends back: its text blocks joined into one
  leading text part, then its tool uses in order. Blocks only a response holds (``thinking``,
  ``redacted_thinking``, server-tool blocks) are dropped, as ``model_output`` drops them, so a
  request that echoes a replayed response normalizes like the recorded one.
* Passthrough: any other block in a user turn (``image``, ``document``, ``search_result``, ...) is
  kept as sent, under its own ``type``, less ``cache_control``.
* ``tools`` -> ``{name, description, inputSchema}`` (server tools have no schema: name and description
  only); ``max_tokens``, ``temperature``, ``top_p``, ``tool_choice``, ``stop_sequences`` and
  ``output_config.format`` -> ``params`` (``effort``, ``thinking`` and other settings are not kept).

A fork's rewrite (``replace_tool_result``) replaces the ``content`` of the ``tool_result`` blocks whose
``tool_use_id`` is the id: a string (or no content) becomes the string, a list of blocks one ``text``
block. It also removes ``is_error``: the replacement is a successful result, so it normalizes to a
``result``, never an ``error``. The block's other fields (``cache_control``...) stay as sent.

Responses (``model_output``), a JSON ``message`` or its SSE stream: ``text`` blocks are joined into
the text, ``tool_use`` blocks become calls with ``call-N`` ids; ``thinking`` and server-tool blocks
are ignored, as are ids, ``usage`` and ``stop_reason``. A body that is not a complete message (an
``error``, a stream cut short) raises ``ValueError``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

from .base import (
    CallIds,
    JsonObject,
    WireResponse,
    add_piece,
    join_pieces,
    replaced_content,
    rewritten,
    wire_errors,
)

__all__ = ["AnthropicMessages"]

_PARAMS = {
    "max_tokens": "maxTokens",
    "temperature": "temperature",
    "top_p": "topP",
    "tool_choice": "toolChoice",
    "stop_sequences": "stop",
}
_JSON_HEADERS = [("content-type", "application/json")]
_SSE_HEADERS = [("content-type", "text/event-stream"), ("cache-control", "no-cache")]
# The SDK's Message and stream-delta models require usage; replay has no token counts to give.
_ZERO_USAGE = {"input_tokens": 0, "output_tokens": 0}


class AnthropicMessages:
    """The Anthropic Messages API, JSON and streamed."""

    name = "anthropic"

    def handles(self, method: str, path: str) -> bool:
        return method.upper() == "POST" and path.split("?", 1)[0].rstrip("/").endswith("/messages")

    @wire_errors("an Anthropic Messages request")
    def model_input(self, request: JsonObject, ids: CallIds) -> JsonObject:
        names: dict[str, str] = {}  # neutral id -> tool name, from the tool uses seen so far
        payload: JsonObject = {
            "messages": [_message(m, ids, names) for m in request.get("messages") or []],
            "tools": [_tool(t) for t in request.get("tools") or []],
        }
        if request.get("system") is not None:
            payload["systemPrompt"] = _system(request["system"])
        if request.get("model") is not None:
            payload["model"] = request["model"]
        params = {_PARAMS[k]: v for k, v in request.items() if k in _PARAMS and v is not None}
        output_format = (request.get("output_config") or {}).get("format")
        if output_format is not None:
            params["responseFormat"] = output_format
        if params:
            payload["params"] = params
        return payload

    def is_streaming(self, request: JsonObject) -> bool:
        return bool(request.get("stream"))

    @wire_errors("an Anthropic Messages response")
    def model_output(self, body: bytes, *, streamed: bool, ids: CallIds) -> JsonObject:
        blocks = _stream_blocks(body) if streamed else _message_blocks(body)
        return _neutral_output(blocks, ids)

    @wire_errors("a model_output to send as an Anthropic Messages response")
    def wire_response(self, output: JsonObject, request: JsonObject) -> WireResponse:
        message = _wire_message(output, str(request.get("model") or ""))
        if self.is_streaming(request):
            return WireResponse(200, list(_SSE_HEADERS), b"".join(_sse(message)))
        return WireResponse(200, list(_JSON_HEADERS), _dumps(message).encode())

    @wire_errors("an Anthropic Messages request")
    def replace_tool_result(self, request: JsonObject, tool_call_id: str, result: Any) -> JsonObject | None:
        def targets(body: JsonObject) -> list[JsonObject]:
            return [b for b in _blocks(body) if _is_result_for(b, tool_call_id)]

        def rewrite(block: JsonObject) -> None:
            block["content"] = replaced_content(block.get("content"), result, "text")
            block.pop("is_error", None)  # the replacement is a successful result

        return rewritten(request, targets, rewrite)


# --- requests ---------------------------------------------------------------------------------


def _blocks(request: JsonObject) -> list[JsonObject]:
    """Every content block of every message that has block content."""
    messages = request.get("messages")
    return [
        block
        for message in (messages if isinstance(messages, list) else [])
        if isinstance(message, dict) and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict)
    ]


def _is_result_for(block: JsonObject, tool_call_id: str) -> bool:
    return block.get("type") == "tool_result" and str(block.get("tool_use_id")) == tool_call_id


def _system(system: Any) -> str:
    if isinstance(system, str):
        return system
    return "\n\n".join(b.get("text", "") for b in system if isinstance(b, dict) and b.get("type") == "text")


def _tool(tool: JsonObject) -> JsonObject:
    neutral: JsonObject = {"name": tool.get("name", ""), "description": tool.get("description") or ""}
    if "input_schema" in tool:
        neutral["inputSchema"] = tool["input_schema"]
    return neutral


def _message(message: JsonObject, ids: CallIds, names: dict[str, str]) -> JsonObject:
    role, content = message.get("role"), message.get("content")
    if not isinstance(content, list):
        return {"role": role, "content": content}
    blocks = [b for b in content if isinstance(b, dict)]
    if role == "assistant":
        return {"role": role, "content": _assistant_parts(blocks, ids, names)}
    return {"role": role, "content": [_user_part(b, ids, names) for b in blocks]}


def _assistant_parts(blocks: list[JsonObject], ids: CallIds, names: dict[str, str]) -> list[JsonObject]:
    text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
    parts: list[JsonObject] = [{"type": "text", "text": text}] if text else []
    for block in blocks:
        if block.get("type") == "tool_use":
            call_id = ids.neutral(str(block.get("id")))
            names[call_id] = str(block.get("name", ""))
            parts.append(_tool_use(call_id, names[call_id], block.get("input", {})))
    return parts


def _tool_use(call_id: str, name: str, tool_input: Any) -> JsonObject:
    return {"type": "tool_use", "toolCallId": call_id, "toolName": name, "toolInput": tool_input}


def _user_part(block: JsonObject, ids: CallIds, names: dict[str, str]) -> JsonObject:
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": block.get("text", "")}
    if kind == "tool_result":
        call_id = ids.neutral(str(block.get("tool_use_id")))
        part: JsonObject = {
            "type": "tool_result",
            "toolCallId": call_id,
            "toolName": names.get(call_id, "unknown"),
        }
        content = block.get("content", "")
        if block.get("is_error"):
            part["error"] = content if isinstance(content, str) else _joined_text(content)
        else:
            part["result"] = content
        return part
    if kind == "tool_use":  # only assistants call tools, but keep the id neutral wherever it is
        return _tool_use(
            ids.neutral(str(block.get("id"))), str(block.get("name", "")), block.get("input", {})
        )
    return {k: v for k, v in block.items() if k != "cache_control"}


def _joined_text(content: Any) -> str:
    blocks = content if isinstance(content, list) else []
    return "\n".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")


# --- responses --------------------------------------------------------------------------------


def _message_blocks(body: bytes) -> list[JsonObject]:
    message = json.loads(body)
    if not isinstance(message, dict) or message.get("type") != "message":
        raise ValueError(f"not an Anthropic message: {_error_text(message)}")
    return [b for b in message.get("content") or [] if isinstance(b, dict)]


def _error_text(value: Any) -> str:
    error = value.get("error") if isinstance(value, dict) else None
    return str(error.get("message")) if isinstance(error, dict) else type(value).__name__


def _sse_events(body: bytes) -> Iterator[JsonObject]:
    """The JSON data of each event. Each carries its own ``type``, so the ``event:`` lines are redundant."""
    for chunk in body.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n").split("\n\n"):
        data = [line[5:].removeprefix(" ") for line in chunk.split("\n") if line.startswith("data:")]
        if data:
            yield json.loads("\n".join(data))


def _stream_blocks(body: bytes) -> list[JsonObject]:
    """Rebuild the content blocks from a whole stream: deltas appended, tool input JSON parsed at the end."""
    blocks: dict[int, JsonObject] = {}
    partial_json: dict[int, list[str]] = {}
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
        stopped = stopped or kind == "message_stop"
    if not stopped:
        raise ValueError("the stream ended before message_stop")
    for index, pieces in partial_json.items():
        if "".join(pieces).strip():
            blocks[index]["input"] = json.loads("".join(pieces))
    for block in blocks.values():
        join_pieces(block, "text")
    return [blocks[i] for i in sorted(blocks)]


def _apply_delta(block: JsonObject, partial_json: list[str], delta: JsonObject) -> None:
    if delta.get("type") == "text_delta":
        add_piece(block, "text", delta.get("text", ""))
    elif delta.get("type") == "input_json_delta":
        partial_json.append(delta.get("partial_json", ""))
    # thinking, signature and citations deltas change nothing the neutral output keeps


def _neutral_output(blocks: list[JsonObject], ids: CallIds) -> JsonObject:
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
    if not calls:
        return {"type": "final_answer", "text": text}
    output: JsonObject = {"type": "tool_calls", "calls": calls}
    if text:
        output["text"] = text
    return output


# --- synthesized responses --------------------------------------------------------------------


def _dumps(value: Any) -> str:
    # ASCII escapes keep every SSE data line one line for any decoder (U+2028 is a line break to
    # str.splitlines) and survive lone surrogates, which UTF-8 cannot encode.
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"))


def _calls(output: JsonObject) -> list[JsonObject]:
    if output.get("type") == "tool_call":  # the single-call shape the TypeScript tool writes
        return [output]
    return list(output.get("calls") or []) if output.get("type") == "tool_calls" else []


def _wire_message(output: JsonObject, model: str) -> JsonObject:
    calls = _calls(output)
    text = output.get("text") or ""
    content: list[JsonObject] = [{"type": "text", "text": text}] if text or not calls else []
    content += [
        {"type": "tool_use", "id": c["toolCallId"], "name": c["toolName"], "input": c.get("toolInput", {})}
        for c in calls
    ]
    digest = hashlib.sha256(json.dumps(output, sort_keys=True).encode()).hexdigest()[:24]
    return {
        "id": f"msg_blackbox_{digest}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        "usage": dict(_ZERO_USAGE),
    }


def _event(kind: str, data: JsonObject) -> bytes:
    return f"event: {kind}\ndata: {_dumps({'type': kind, **data})}\n\n".encode()


def _sse(message: JsonObject) -> Iterator[bytes]:
    """The stream the API would send for ``message``: each block opened empty, filled by one delta."""
    yield _event("message_start", {"message": {**message, "content": [], "stop_reason": None}})
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield _event(
                "content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}}
            )
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            yield _event("content_block_start", {"index": index, "content_block": {**block, "input": {}}})
            delta = {"type": "input_json_delta", "partial_json": _dumps(block["input"])}
        yield _event("content_block_delta", {"index": index, "delta": delta})
        yield _event("content_block_stop", {"index": index})
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    yield _event("message_delta", {"delta": stop, "usage": {"output_tokens": 0}})
    yield _event("message_stop", {})
