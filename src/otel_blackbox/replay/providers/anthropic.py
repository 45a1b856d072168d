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
short) raises ``ValueError``.

Synthesized responses (``wire_response``) hold the blocks in the output's ``sequence``, one text block
a piece, else in the canonical order (thinking, hosted tool use then its result, text, tool use); a
hosted call is always its use then its result. Ids derived from the output (``msg_blackbox_<digest>``,
``srvtoolu_blackbox_<digest>_<n>`` / ``mcptoolu_blackbox_<digest>_<n>`` with the result's
``tool_use_id`` pointing at it), the neutral ``call-N`` ids on tool uses, the stop reason (the
default from the calls, else ``stopReason``; OpenAI's ``content_filter`` is ``refusal``), zero usage.
A stream has every event the API sends: thinking as ``thinking_delta`` + ``signature_delta``,
redacted thinking and hosted results whole in their ``content_block_start``, tool inputs as one
``input_json_delta``.

Neutral -> wire (``wire_request``), the other direction of ``model_input``:

* Recorded here (``native``): its exact inverse. String content stays a string; an assistant turn's
  parts become blocks in the canonical order (thinking / redacted_thinking, each hosted tool as its
  use then the block that answers it, under ids of our making, ``srvtoolu_blackbox_<n>`` /
  ``mcptoolu_blackbox_<n>``; the text; the tool uses, under the neutral ids); a user turn's blocks as
  they were (``tool_result`` with ``is_error: true`` for an error). ``systemPrompt`` is ``system`` as
  one string (a list of text blocks was joined: the string says the same). Tools get their settings
  back; ``params`` their wire names (``output_config.format`` for ``responseFormat``, ``container``
  for the skills, every other setting under its own name).
* Recorded on another API: text, tool uses (``toolInput`` not an object is sent as ``{}``) and
  results (an error as its text with ``is_error``), with their neutral ids; the system prompt (none
  when empty); the tools' name, description and schema (an empty object schema when there is none,
  as the API requires one; a Gemini OpenAPI schema's upper-case types lower-cased); the neutral
  settings in this API's shape (``portable.py``; a temperature above 1, this API's top, is sent as
  1; no tool choice without tools) and those of the table's names. Empty messages are left out, a
  message of another role (a later system message) is a user turn, and messages of one role in a
  row are merged into one, the tool results first, as the API requires. An OpenAI image (a URL, or
  a data URL) and a Gemini ``inlineData`` image are image blocks. Everything else is left out and
  named in ``dropped``: reasoning, hosted tool and refusal parts, signatures, other parts, the tools'
  settings, params this API has no name for.
* In either case a tool result's content is a string, or blocks this API takes there, as they are;
  another API's text parts are their text, anything else its compact JSON. A result is the
  incident's (or a stub's), in its own API's shape whatever the mode, and a replay of a rerun on this
  API (native) must send what the rerun sent.
* ``max_tokens``, which the API requires, is 4096 when the model_input has no ``maxTokens``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ...cassette.output import Extras, Hosted, Reasoning, extras_of, ordered, sequence_of, with_extras
from ...cassette.request_fields import ANTHROPIC_FIELDS
from .base import (
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
from .portable import NEUTRAL_PARAMS, own_params, response_format_of, result_text, stop_list, tool_choice_of

__all__ = ["DEFAULT_MAX_TOKENS", "REQUEST_FIELDS", "AnthropicMessages"]

# The table lives on the analysis side: a cassette built from spans reads recorded settings with it.
REQUEST_FIELDS = ANTHROPIC_FIELDS
_DEFAULT_STOPS = ("end_turn", "tool_use")
_HOSTED_USES = ("server_tool_use", "mcp_tool_use")
_MCP_RESULT = "mcp_tool_result"
_JSON_HEADERS = [("content-type", "application/json")]
_SSE_HEADERS = [("content-type", "text/event-stream"), ("cache-control", "no-cache")]
# The SDK's Message and stream-delta models require usage; replay has no token counts to give.
_ZERO_USAGE = {"input_tokens": 0, "output_tokens": 0}
# The API requires max_tokens; a model_input recorded without one (another API's) is sent this.
DEFAULT_MAX_TOKENS = 4096
_WIRE_NAMES = {neutral: wire for wire, neutral in REQUEST_FIELDS.neutral.items()}  # maxTokens -> max_tokens
# A custom tool needs an input_schema; a function of another API that takes no arguments has none.
_NO_ARGUMENTS: JsonObject = {"type": "object", "properties": {}}
# Gemini's OpenAPI schemas spell types in upper case; JSON Schema, which this API takes, in lower.
_OPENAPI_TYPES = frozenset({"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"})
# The blocks a tool_result's content may hold.
_RESULT_BLOCKS = frozenset({"text", "image", "document", "search_result", "tool_reference"})


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

    @wire_errors("a model_output to send as an Anthropic Messages response")
    def wire_response(self, output: JsonObject, request: JsonObject) -> WireResponse:
        message = _wire_message(output, str(request.get("model") or ""))
        if self.is_streaming(request):
            return WireResponse(200, list(_SSE_HEADERS), b"".join(_sse(message)))
        return WireResponse(200, list(_JSON_HEADERS), _dumps(message).encode())

    @wire_errors("a model_input to send as an Anthropic Messages request")
    def wire_request(self, model_input: JsonObject, *, stream: bool, native: bool) -> WireRequest:
        writer = _RequestWriter(native)
        return WireRequest(writer.body(model_input, stream), writer.dropped)

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


# --- neutral -> wire requests -----------------------------------------------------------------


@dataclass
class _RequestWriter:
    """Writes one model_input as a request body; ``dropped`` names what it leaves out, once each."""

    native: bool
    dropped: list[str] = field(default_factory=list)
    hosted: int = 0  # hosted tool uses written so far: each gets an id of its own

    def drop(self, what: str) -> None:
        if what not in self.dropped:
            self.dropped.append(what)

    def body(self, model_input: JsonObject, stream: bool) -> JsonObject:
        body: JsonObject = {}
        if model_input.get("model") is not None:
            body["model"] = model_input["model"]
        messages = [self.message(m) for m in model_input.get("messages") or []]
        body["messages"] = messages if self.native else _alternating([m for m in messages if m])
        system = model_input.get("systemPrompt")
        if system is not None and (self.native or system):
            body["system"] = system
        tools = [self.tool(t) for t in model_input.get("tools") or []]
        if tools:
            body["tools"] = tools
        body.update(self.params(model_input.get("params") or {}))
        # The API takes no tool choice without tools; one that asked for a call says what is lost.
        if not self.native and not tools and body.pop("tool_choice", {}).get("type") in ("any", "tool"):
            self.drop("params.toolChoice")
        if stream:
            body["stream"] = True
        return body

    # messages

    def message(self, message: JsonObject) -> JsonObject:
        role, content = message["role"], message.get("content")
        if self.native:
            if not isinstance(content, list):
                return {"role": role, "content": content}
            write = self.assistant_block if role == "assistant" else self.user_block
            return {"role": role, "content": [block for part in content for block in write(part)]}
        if role not in ("user", "assistant"):
            self.drop(f"the {role} role of a message (sent as a user turn)")
            role = "user"
        if not isinstance(content, list):
            return {"role": role, "content": content} if content else {}
        write = self.assistant_block if role == "assistant" else self.user_block
        blocks = [block for part in content for block in write(part)]
        return {"role": role, "content": blocks} if blocks else {}

    def assistant_block(self, part: JsonObject) -> list[JsonObject]:
        kind = part.get("type")
        if kind == "text":
            self.signed(part)
            return [{"type": "text", "text": part["text"]}] if part["text"] or self.native else []
        if kind == "tool_use":
            self.signed(part)
            return [self.tool_use(part)]
        if kind == "reasoning" and self.native:
            return [_thinking_block(_reasoning_of(part))]
        if kind == "hosted_tool" and self.native:
            self.hosted += 1
            return _request_hosted_blocks(_hosted_of(part), f"blackbox_{self.hosted - 1}")
        self.drop(_part_name(kind))
        return []

    def user_block(self, part: JsonObject) -> list[JsonObject]:
        kind = part.get("type")
        if kind == "text":
            return [{"type": "text", "text": part["text"]}] if part["text"] or self.native else []
        if kind == "tool_result":
            return [self.tool_result(part)]
        if self.native:  # a tool use, or a block kept as it was sent (image, document...)
            return [self.tool_use(part)] if kind == "tool_use" else [part]
        image = _image_block(part)
        if image is None:
            self.drop(_part_name(kind))
        return [image] if image else []

    def signed(self, part: JsonObject) -> None:
        if "signature" in part and not self.native:  # Gemini's thoughtSignature: no block holds one
            self.drop("a thought signature")

    def tool_use(self, part: JsonObject) -> JsonObject:
        tool_input = part.get("toolInput")
        if not self.native and not isinstance(tool_input, dict):
            self.drop(f"the input of {part['toolCallId']} (not a JSON object)")
            tool_input = {}
        return {"type": "tool_use", "id": part["toolCallId"], "name": part["toolName"], "input": tool_input}

    def tool_result(self, part: JsonObject) -> JsonObject:
        block: JsonObject = {"type": "tool_result", "tool_use_id": part["toolCallId"]}
        if "error" in part:
            block["content"] = part["error"] if isinstance(part["error"], str) else result_text(part["error"])
            block["is_error"] = True
        else:
            block["content"] = _result_content(part.get("result", ""))
        return block

    # tools and settings

    def tool(self, tool: JsonObject) -> JsonObject:
        name, description, settings = tool["name"], tool.get("description") or "", tool.get("settings")
        wire: JsonObject = {**settings} if self.native and isinstance(settings, dict) else {}
        if settings and not self.native:
            self.drop(f"the settings of tool {name}")
        wire["name"] = name
        if description:
            wire["description"] = description
        if self.native:
            if "inputSchema" in tool:
                wire["input_schema"] = tool["inputSchema"]
        else:
            schema = tool.get("inputSchema")
            wire["input_schema"] = _json_schema(schema) if isinstance(schema, dict) else dict(_NO_ARGUMENTS)
        return wire

    def params(self, params: JsonObject) -> JsonObject:
        kept, dropped = own_params(params, REQUEST_FIELDS, native=self.native)
        for name in dropped:
            self.drop(name)
        wire: JsonObject = dict(kept)
        if self.native:  # each neutral setting is already in this API's shape
            wire.update({_WIRE_NAMES[k]: v for k, v in params.items() if k in _WIRE_NAMES})
            if "responseFormat" in params:
                rest = kept.get("output_config")
                wire["output_config"] = {
                    **(rest if isinstance(rest, dict) else {}),
                    "format": params["responseFormat"],
                }
        else:
            self.portable(params, wire)
        wire.setdefault("max_tokens", DEFAULT_MAX_TOKENS)
        return wire

    def portable(self, params: JsonObject, wire: JsonObject) -> None:
        """The neutral settings of another API, written in this one's shape."""
        for key in (k for k in NEUTRAL_PARAMS if k in params):
            value = params[key]
            if key == "maxTokens" and _is_int(value) and value > 0:
                wire["max_tokens"] = value
            elif key in ("temperature", "topP") and _is_number(value):
                if key == "temperature" and value > 1:
                    self.drop("params.temperature above 1 (sent as 1)")
                wire["top_p" if key == "topP" else key] = min(max(value, 0), 1)
            elif key == "toolChoice" and (choice := _tool_choice(value)) is not None:
                wire["tool_choice"] = choice
            elif key == "responseFormat" and (form := response_format_of(value)) is not None:
                if form.kind == "json_schema" and form.schema is not None:
                    wire["output_config"] = {"format": {"type": "json_schema", "schema": form.schema}}
                elif form.kind != "text":  # this API has no JSON mode without a schema
                    self.drop("params.responseFormat")
            elif key == "stop" and (stops := stop_list(value)) is not None:
                wire["stop_sequences"] = stops
            else:
                self.drop(f"params.{key}")


def _alternating(messages: list[JsonObject]) -> list[JsonObject]:
    """Messages of one role in a row as one (the API takes turns that alternate), tool results first."""
    out: list[JsonObject] = []
    for message in messages:
        if not out or out[-1]["role"] != message["role"]:
            out.append(message)
            continue
        blocks = _as_blocks(out[-1]["content"]) + _as_blocks(message["content"])
        if message["role"] == "user":  # sorted is stable: each kind keeps its order
            blocks.sort(key=lambda block: block.get("type") != "tool_result")
        out[-1] = {"role": message["role"], "content": blocks}
    return out


def _result_content(result: Any) -> Any:
    """A tool result as a ``tool_result``'s content: a string, or blocks this API takes there, as they
    are; another API's text parts as their text; anything else as compact JSON text.

    Whatever the mode: a tool result is the incident's (or a stub's), in any API's shape, and a
    replay of a rerun on this API (native) must send what the rerun sent."""
    if isinstance(result, str):
        return result
    if isinstance(result, list) and result and all(_is_result_block(b) for b in result):
        return result
    if isinstance(result, list) and result and all(_is_text_part(p) for p in result):
        return "".join(p["text"] for p in result)
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"))


def _is_result_block(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") in _RESULT_BLOCKS


def _is_text_part(part: Any) -> bool:
    """A text part of any API (``{type: text | input_text | output_text, text}``), nothing more."""
    return (
        isinstance(part, dict)
        and set(part) == {"type", "text"}
        and part["type"] in ("text", "input_text", "output_text")
        and isinstance(part["text"], str)
    )


def _as_blocks(content: Any) -> list[JsonObject]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _part_name(kind: Any) -> str:
    names = {"reasoning": "a reasoning part", "hosted_tool": "a hosted tool part", "image": "an image part"}
    return names.get(str(kind), f"{'an' if str(kind)[:1] in 'aeiou' else 'a'} {kind} part")


def _reasoning_of(part: JsonObject) -> Reasoning:
    (reasoning,) = extras_of({"reasoning": [{k: v for k, v in part.items() if k != "type"}]}).reasoning
    return reasoning


def _hosted_of(part: JsonObject) -> Hosted:
    (hosted,) = extras_of({"hostedTools": [{k: v for k, v in part.items() if k != "type"}]}).hosted
    return hosted


def _request_hosted_blocks(hosted: Hosted, suffix: str) -> list[JsonObject]:
    """A hosted tool of a request's assistant turn as the blocks ``_hosted_at`` reads back into it:
    its use and the result block, or the result alone when it answered no use of this turn."""
    result_type = hosted.result_type
    if result_type is None:
        return _hosted_blocks(hosted, suffix)  # a use with no answer (yet)
    blocks: list[JsonObject]
    if not hosted.has_input and hosted.tool_name == result_type.removesuffix("_tool_result"):
        blocks = [{"type": result_type, "tool_use_id": f"srvtoolu_{suffix}"}]
    else:
        blocks = _hosted_blocks(Hosted(hosted.tool_name, hosted.tool_input, result_type=result_type), suffix)
        blocks[1:] = [{"type": result_type, "tool_use_id": blocks[0]["id"]}]
    if hosted.has_result:
        blocks[-1]["content"] = hosted.result
    if hosted.status == "error":
        blocks[-1]["is_error"] = True
    elif result_type == _MCP_RESULT:
        blocks[-1]["is_error"] = False
    return blocks


def _image_block(part: JsonObject) -> JsonObject | None:
    """An image block for another API's image: OpenAI's URL (or data URL), Gemini's inline image."""
    if part.get("type") == "image" and isinstance(part.get("url"), str):
        url: str = part["url"]
        if url.startswith("data:") and ";base64," in url:
            media_type, data = url[5:].split(";base64,", 1)
            return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}
        if url.startswith(("http://", "https://")):
            return {"type": "image", "source": {"type": "url", "url": url}}
    inline = part.get("inlineData") if part.get("type") == "inlineData" else None
    mime = inline.get("mimeType", inline.get("mime_type")) if isinstance(inline, dict) else None
    if isinstance(inline, dict) and isinstance(mime, str) and mime.startswith("image/"):
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": mime, "data": inline.get("data", "")},
        }
    return None


def _tool_choice(value: Any) -> JsonObject | None:
    choice = tool_choice_of(value)
    if choice is None:
        return None
    if choice.name is not None:
        return {"type": "tool", "name": choice.name}
    return {"type": {"auto": "auto", "none": "none", "required": "any"}[choice.mode]}


def _json_schema(schema: Any) -> Any:
    """A schema as JSON Schema: Gemini's OpenAPI upper-case type names lower-cased, the rest as is."""
    if isinstance(schema, list):
        return [_json_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: JsonObject = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str) and value in _OPENAPI_TYPES:
            out[key] = value.lower()
        elif key == "type" and isinstance(value, list):
            out[key] = [v.lower() if isinstance(v, str) and v in _OPENAPI_TYPES else v for v in value]
        else:
            out[key] = _json_schema(value)
    return out


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


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
            if kind == _MCP_RESULT and block.get("is_error"):
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
            content.append(_thinking_block(value))
        elif kind == "hosted":
            content += _hosted_blocks(value, f"blackbox_{digest}_{hosted_count}")
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


def _thinking_block(reasoning: Reasoning) -> JsonObject:
    if reasoning.redacted is not None:
        return {"type": "redacted_thinking", "data": reasoning.redacted}
    text = reasoning.text if reasoning.text is not None else "\n\n".join(reasoning.summary or [])
    return {"type": "thinking", "thinking": text, "signature": reasoning.signature or ""}


def _hosted_blocks(hosted: Hosted, suffix: str) -> list[JsonObject]:
    """The use block and, when the call has a result, the block answering it."""
    mcp = hosted.result_type == _MCP_RESULT or (hosted.result_type is None and "/" in hosted.tool_name)
    use: JsonObject = {"type": "mcp_tool_use" if mcp else "server_tool_use"}
    use["id"] = f"{'mcptoolu' if mcp else 'srvtoolu'}_{suffix}"
    if mcp:
        server, _, name = hosted.tool_name.rpartition("/")
        use.update(name=name, server_name=server)
    else:
        use["name"] = hosted.tool_name
    use["input"] = hosted.tool_input if hosted.has_input else {}
    if not hosted.has_result:
        return [use]
    kind = hosted.result_type or f"{hosted.tool_name}_tool_result"
    result: JsonObject = {"type": kind, "tool_use_id": use["id"], "content": hosted.result}
    if kind == _MCP_RESULT:
        result["is_error"] = hosted.status == "error"
    return [use, result]


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
