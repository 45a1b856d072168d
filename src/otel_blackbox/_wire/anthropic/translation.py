"""Anthropic Messages (``POST /v1/messages``): wire <-> neutral v2 payloads, pure functions.

Requests (``model_input``), top-level fields as ``REQUEST_FIELDS`` sorts them:

* ``messages``, ``model``, ``system`` and ``tools`` are read (below). ``system``, a string or a list
  of text blocks (joined with a blank line), is ``systemPrompt``.
* ``params`` under neutral names: ``max_tokens`` -> ``maxTokens``, ``temperature``, ``top_p`` ->
  ``topP``, ``tool_choice`` -> ``toolChoice``, ``stop_sequences`` -> ``stop``, and
  ``output_config.format`` -> ``responseFormat`` (``output_config``'s other keys, ``effort``...,
  stay under ``params.output_config``).
* Not compared (transport: how the request is delivered, billed, cached or attributed, not what the
  model is asked): ``stream``, ``metadata``, ``service_tier``, ``container``, ``inference_geo``,
  ``cache_control``, ``diagnostics``, ``user_profile_id``, ``workspace_id``, ``speed``,
  ``billing_policy``, ``fallback_credit_token``, ``thread``; each reason is in the table. A
  ``container`` object's ``skills`` do change what the model can run: they are kept as
  ``params.container.skills``, its id is not.
* Every other field, those known to change what the model does (``thinking``, ``top_k``,
  ``mcp_servers``, ``context_management``, ``compaction``, ``fallbacks``) and any the table does not
  know, goes under ``params`` with its own name, so it is compared, never dropped.

A message keeps string content as a string. Block content becomes parts:

* ``text`` -> ``{type: text, text}`` (citations and ``cache_control`` dropped: the neutral text is
  one string, and the passages a citation points at are in the hosted tools' results);
  ``tool_use`` -> ``{type: tool_use, toolCallId, toolName, toolInput}``; ``tool_result`` ->
  ``{type: tool_result, toolCallId, toolName, result}``, the content as sent (a string, a list of
  blocks, or ``""`` when absent), or ``error`` (a string) when ``is_error`` is true.
* An assistant turn is canonicalized to the shape replay sends back: its ``thinking`` blocks as
  ``{type: reasoning, text, signature}`` and ``redacted_thinking`` as ``{type: reasoning, redacted}``,
  in order; then each hosted tool call, a ``server_tool_use`` / ``mcp_tool_use`` block with the block
  that answers it (its ``tool_use_id`` is the use's id: ``web_search_tool_result``,
  ``code_execution_tool_result``, ``mcp_tool_result``...) as ``{type: hosted_tool, toolName,
  toolInput, result, resultType}`` (``resultType`` the result block's type, ``status: "error"`` for
  an MCP result with ``is_error``; an MCP call's ``toolName`` is ``<server_name>/<name>``); then its
  text blocks joined into one text part; then its tool uses in order. Provider ids, ``caller`` and
  ``cache_control`` are dropped. Other blocks only a response holds (``container_upload``...) are
  dropped, as ``model_output`` drops them, so a request that echoes a replayed response normalizes
  like the recorded one.
* Passthrough: any other block in a user turn (``image``, ``document``, ``search_result``, ...) is
  kept as sent, under its own ``type``, less ``cache_control``.
* ``tools`` -> ``{name, description, inputSchema}`` (server tools have no schema: name and description
  only).

A fork's rewrite (``replace_tool_result``) replaces the ``content`` of the ``tool_result`` blocks whose
``tool_use_id`` is the id: a string (or no content) becomes the string, a list of blocks one ``text``
block. It also removes ``is_error``: the replacement is a successful result, so it normalizes to a
``result``, never an ``error``. The block's other fields (``cache_control``...) stay as sent.

Responses (``model_output``), a JSON ``message`` or its SSE stream: ``text`` blocks are joined into
the text, ``tool_use`` blocks become calls with ``call-N`` ids; ``thinking`` / ``redacted_thinking``
blocks are ``reasoning`` (``{text, signature}`` / ``{redacted}``), hosted tool calls with their
results ``hostedTools`` (the same entries as the request parts above). When the blocks are not in
the canonical order (a web search's text, search, result, text...; thinking between tool calls) or
there are several non-empty text blocks (citations split the answer), ``sequence`` keeps their order
(a hosted call where its use is) and ``textParts`` the text of each block; empty text blocks are no
part. ``stop_reason`` is ``stopReason`` unless it is ``end_turn`` or ``tool_use`` (``max_tokens``,
``stop_sequence`` with the matched ``stopSequence``, ``refusal``, and any other reason as sent:
``pause_turn``, ``model_context_window_exceeded``...); a refusal's ``stop_details.explanation`` is
``refusal`` (its ``category`` is not kept). Dropped: ids, ``usage``, ``container``, citations,
``caller`` and other blocks (``container_upload``...). Anthropic has no ``n``: a message is one
choice, never ``choices``. A body that is not a complete message (an ``error``, a stream cut
short) raises ``ValueError``. ``usage`` reads the token counts apart, as ``tokenUsage``:
``input_tokens`` leaves the cache out, so ``inputTokens`` is it plus ``cache_read_input_tokens``
(``cacheReadTokens``) plus ``cache_creation_input_tokens`` (``cacheWriteTokens``); a stream's are
``message_start``'s, updated by each ``message_delta``'s.

Synthesized responses (``wire_response``) hold the blocks in the output's ``sequence``, one text block
a piece, else in the canonical order (thinking, hosted tool use then its result, text, tool use); a
hosted call is always its use then its result. Ids derived from the output (``msg_blackbox_<digest>``,
``srvtoolu_blackbox_<digest>_<n>`` / ``mcptoolu_blackbox_<digest>_<n>`` with the result's
``tool_use_id`` pointing at it), the neutral ``call-N`` ids on tool uses, the stop reason (the
default from the calls, else ``stopReason``; OpenAI's ``content_filter`` is ``refusal``), zero usage.
A stream has every event the API sends: thinking as ``thinking_delta`` + ``signature_delta``,
redacted thinking and hosted results whole in their ``content_block_start``, tool inputs as one
``input_json_delta``.

Neutral -> wire (``wire_request``), the other direction of ``model_input``: anthropic_requests.py
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

from otel_blackbox._cassette.output import (
    Extras,
    Hosted,
    Reasoning,
    extras_of,
    ordered,
    sequence_of,
    with_extras,
)
from otel_blackbox._cost.usage import count, usage_json, without_usage
from otel_blackbox._wire.anthropic.blocks import MCP_RESULT, hosted_blocks, thinking_block
from otel_blackbox._wire.anthropic.requests import anthropic_request
from otel_blackbox._wire.protocol import (
    CallIds,
    JsonObject,
    WireRequest,
    WireResponse,
    add_piece,
    join_pieces,
    replaced_content,
    rewritten,
    tool_settings,
    wire_errors,
)
from otel_blackbox._wire.request_fields import ANTHROPIC_FIELDS

__all__ = ["REQUEST_FIELDS", "AnthropicMessages"]

# The table lives on the analysis side: a cassette built from spans reads recorded settings with it.
REQUEST_FIELDS = ANTHROPIC_FIELDS
_DEFAULT_STOPS = ("end_turn", "tool_use")
_HOSTED_USES = ("server_tool_use", "mcp_tool_use")
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
        params = REQUEST_FIELDS.params(request)
        skills = _container_skills(request.get("container"))
        if skills is not None:
            params["container"] = {"skills": skills}
        if params:
            payload["params"] = params
        return payload

    def is_streaming(self, request: JsonObject) -> bool:
        return bool(request.get("stream"))

    @wire_errors("an Anthropic Messages response")
    def model_output(self, body: bytes, *, streamed: bool, ids: CallIds) -> JsonObject:
        message = _stream_message(body) if streamed else _json_message(body)
        return _neutral_output(message, ids)

    @wire_errors("an Anthropic Messages response")
    def usage(self, body: bytes, *, streamed: bool) -> JsonObject | None:
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

    @wire_errors("a model_output to send as an Anthropic Messages response")
    def wire_response(self, output: JsonObject, request: JsonObject) -> WireResponse:
        output = without_usage(output)  # not behaviour: replay sends zero usage, ids as before
        message = _wire_message(output, str(request.get("model") or ""))
        if self.is_streaming(request):
            return WireResponse(200, list(_SSE_HEADERS), b"".join(_sse(message)))
        return WireResponse(200, list(_JSON_HEADERS), _dumps(message).encode())

    @wire_errors("a model_input to send as an Anthropic Messages request")
    def wire_request(self, model_input: JsonObject, *, stream: bool, native: bool) -> WireRequest:
        return anthropic_request(model_input, stream=stream, native=native)

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


def _container_skills(container: Any) -> Any:
    """A container object's skills (what the model can run there), or None: its id is transport."""
    return container.get("skills") if isinstance(container, dict) else None


def _system(system: Any) -> str:
    if isinstance(system, str):
        return system
    return "\n\n".join(b.get("text", "") for b in system if isinstance(b, dict) and b.get("type") == "text")


def _tool(tool: JsonObject) -> JsonObject:
    neutral: JsonObject = {"name": tool.get("name", ""), "description": tool.get("description") or ""}
    if "input_schema" in tool:
        neutral["inputSchema"] = tool["input_schema"]
    # The rest (a server tool's versioned type and limits, strict, input_examples...) are settings;
    # cache_control is a prompt-cache marker, not what the model does.
    return tool_settings(neutral, tool, ("name", "description", "input_schema", "cache_control"))


def _message(message: JsonObject, ids: CallIds, names: dict[str, str]) -> JsonObject:
    role, content = message.get("role"), message.get("content")
    if not isinstance(content, list):
        return {"role": role, "content": content}
    blocks = [b for b in content if isinstance(b, dict)]
    if role == "assistant":
        return {"role": role, "content": _assistant_parts(blocks, ids, names)}
    return {"role": role, "content": [_user_part(b, ids, names) for b in blocks]}


def _assistant_parts(blocks: list[JsonObject], ids: CallIds, names: dict[str, str]) -> list[JsonObject]:
    """The canonical order replay sends back: reasoning, hosted tools, the text, the tool uses."""
    parts: list[JsonObject] = [{"type": "reasoning", **r.to_json()} for r in _reasonings(blocks)]
    parts += [{"type": "hosted_tool", **h.to_json()} for h in _hosted_calls(blocks)]
    text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
    if text:
        parts.append({"type": "text", "text": text})
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


# --- blocks a request and a response share: thinking, hosted tools ---------------------------


def _reasonings(blocks: list[JsonObject]) -> list[Reasoning]:
    """The thinking and redacted_thinking blocks, in order."""
    found: list[Reasoning] = []
    for block in blocks:
        if block.get("type") == "thinking":
            found.append(Reasoning(text=_text(block, "thinking"), signature=_text(block, "signature")))
        elif block.get("type") == "redacted_thinking":
            found.append(Reasoning(redacted=_text(block, "data")))
    return found


def _text(block: JsonObject, key: str) -> str | None:
    value = block.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"the {key} of a {block.get('type')} is not a string")
    return value


def _hosted_calls(blocks: list[JsonObject]) -> list[Hosted]:
    return [hosted for _, hosted in _hosted_at(blocks)]


def _hosted_at(blocks: list[JsonObject]) -> list[tuple[int, Hosted]]:
    """Each server_tool_use / mcp_tool_use with the block that answers it, in the uses' order, with
    the index of the block it starts at (the use, or a result that stands alone).

    A result is the block whose ``tool_use_id`` is a use's id, or any ``*_tool_result`` block other
    than a client's ``tool_result`` (one that answers no use here stands alone, named by its type).
    """
    calls: list[JsonObject] = []
    open_uses: dict[str, JsonObject | None] = {}  # provider id -> its entry, until its result comes
    for index, block in enumerate(blocks):
        kind = str(block.get("type"))
        if kind in _HOSTED_USES:
            entry = {"tool_name": _hosted_name(block), "tool_input": block.get("input", {}), "at": index}
            calls.append(entry)
            open_uses[str(block.get("id"))] = entry
        elif kind != "tool_result" and (
            kind.endswith("_tool_result") or block.get("tool_use_id") in open_uses
        ):
            entry = open_uses.pop(str(block.get("tool_use_id")), None) or _orphan(calls, kind, index)
            entry["result_type"] = kind
            if "content" in block:
                entry["result"] = block["content"]
            if kind == MCP_RESULT and block.get("is_error"):
                entry["status"] = "error"
    return [(entry.pop("at"), Hosted(**entry)) for entry in calls]


def _orphan(calls: list[JsonObject], kind: str, index: int) -> JsonObject:
    """The entry of a result whose use is not in the same turn."""
    entry: JsonObject = {"tool_name": kind.removesuffix("_tool_result"), "at": index}
    calls.append(entry)
    return entry


def _hosted_name(block: JsonObject) -> str:
    name = str(block.get("name", ""))
    # MCP tool names hold no "/" (the MCP spec's characters), so the last "/" splits the two again.
    return f"{block.get('server_name', '')}/{name}" if block.get("type") == "mcp_tool_use" else name


# --- responses --------------------------------------------------------------------------------


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
    # citations deltas change nothing the neutral output keeps


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
    hosted = _hosted_at(blocks)
    sequence, text_parts = sequence_of(*_parts_order(blocks, {at for at, _ in hosted}))
    return Extras(
        stop_reason=None if stop in _DEFAULT_STOPS or stop is None else str(stop),
        stop_sequence=_text(message, "stop_sequence") if stop == "stop_sequence" else None,
        refusal=explanation if stop == "refusal" and isinstance(explanation, str) else None,
        reasoning=_reasonings(blocks),
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
    if not content and stop_reason in _DEFAULT_STOPS:
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
    if kind in ("tool_use", *_HOSTED_USES):
        return {**block, "input": {}}, [{"type": "input_json_delta", "partial_json": _dumps(block["input"])}]
    return block, []
