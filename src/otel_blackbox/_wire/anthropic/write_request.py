"""Anthropic Messages requests from a neutral ``model_input`` (``wire_request``), pure functions: the
other direction of ``read_request.model_input``.

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
  settings in this API's shape (``_wire/settings.py``; a temperature above 1, this API's top, is sent as
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

import json
from dataclasses import dataclass, field, replace
from typing import Any

from otel_blackbox._cassette.output import Hosted, Reasoning, extras_of
from otel_blackbox._types import JsonObject
from otel_blackbox._wire.anthropic.blocks import MCP_RESULT, hosted_blocks, thinking_block
from otel_blackbox._wire.anthropic.fields import ANTHROPIC_FIELDS as REQUEST_FIELDS
from otel_blackbox._wire.protocol import WireRequest
from otel_blackbox._wire.settings import (
    NEUTRAL_PARAMS,
    is_text_part,
    json_schema_of,
    own_params,
    part_phrase,
    response_format_of,
    result_text,
    stop_list,
    tool_choice_of,
)

__all__ = ["DEFAULT_MAX_TOKENS", "AnthropicMessagesWriter", "anthropic_request"]

# The API requires max_tokens; a model_input recorded without one (another API's) is sent this.
DEFAULT_MAX_TOKENS = 4096
_WIRE_NAMES = {neutral: wire for wire, neutral in REQUEST_FIELDS.neutral.items()}  # maxTokens -> max_tokens
# A custom tool needs an input_schema; a function of another API that takes no arguments has none.
_NO_ARGUMENTS: JsonObject = {"type": "object", "properties": {}}
# The blocks a tool_result's content may hold.
_RESULT_BLOCKS = frozenset({"text", "image", "document", "search_result", "tool_reference"})


def anthropic_request(model_input: JsonObject, *, stream: bool, native: bool) -> WireRequest:
    """A Messages request body for ``model_input`` (the module docstring), and what it drops."""
    return AnthropicMessagesWriter(native).extended(model_input.get("messages")).request(model_input, stream)


@dataclass
class AnthropicMessagesWriter:
    """Writes a model_input's messages one after the other, then the request around them;
    ``dropped`` names what it leaves out, once each. What a message becomes never depends on what
    follows it (but for another API's, merged into the turn before: ``out``'s last message is
    replaced then), so the built-in agent keeps a writer from one turn to the next (``_wire/memo.py``)."""

    native: bool
    dropped: list[str] = field(default_factory=list)
    hosted: int = 0  # hosted tool uses written so far: each gets an id of its own
    out: list[JsonObject] = field(default_factory=list)  # the messages written

    def drop(self, what: str) -> None:
        if what not in self.dropped:
            self.dropped.append(what)

    def extended(self, messages: Any) -> AnthropicMessagesWriter:
        """These messages written after those written so far."""
        for message in messages or []:
            written = self.message(message)
            if self.native:
                self.out.append(written)
            elif written:
                _alternate(self.out, written)
        return self

    def request(self, model_input: JsonObject, stream: bool) -> WireRequest:
        """The request body of ``model_input``, whose messages are those written; this writer is
        left as it was (the next turn's messages go on)."""
        writer = replace(self, dropped=list(self.dropped))
        return WireRequest(writer.body(model_input, stream), writer.dropped)

    def body(self, model_input: JsonObject, stream: bool) -> JsonObject:
        body: JsonObject = {}
        if model_input.get("model") is not None:
            body["model"] = model_input["model"]
        body["messages"] = list(self.out)
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
            return [thinking_block(_reasoning_of(part))]
        if kind == "hosted_tool" and self.native:
            self.hosted += 1
            return _request_hosted_blocks(_hosted_of(part), f"blackbox_{self.hosted - 1}")
        self.drop(part_phrase(part))
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
            self.drop(part_phrase(part))
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
            wire["input_schema"] = json_schema_of(schema) if isinstance(schema, dict) else dict(_NO_ARGUMENTS)
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


def _alternate(out: list[JsonObject], message: JsonObject) -> None:
    """A message after ``out``'s, merged into the last when of its role (the API takes turns that
    alternate), tool results first; the merged turn is a new message, the old one untouched."""
    if not out or out[-1]["role"] != message["role"]:
        out.append(message)
        return
    blocks = _as_blocks(out[-1]["content"]) + _as_blocks(message["content"])
    if message["role"] == "user":  # sorted is stable: each kind keeps its order
        blocks.sort(key=lambda block: block.get("type") != "tool_result")
    out[-1] = {"role": message["role"], "content": blocks}


def _result_content(result: Any) -> Any:
    """A tool result as a ``tool_result``'s content: a string, or blocks this API takes there, as they
    are; another API's text parts as their text; anything else as compact JSON text.

    Whatever the mode: a tool result is the incident's (or a stub's), in any API's shape, and a
    replay of a rerun on this API (native) must send what the rerun sent."""
    if isinstance(result, str):
        return result
    if isinstance(result, list) and result and all(_is_result_block(b) for b in result):
        return result
    if isinstance(result, list) and result and all(is_text_part(p) for p in result):
        return "".join(p["text"] for p in result)
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"))


def _is_result_block(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") in _RESULT_BLOCKS


def _as_blocks(content: Any) -> list[JsonObject]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _reasoning_of(part: JsonObject) -> Reasoning:
    (reasoning,) = extras_of({"reasoning": [{k: v for k, v in part.items() if k != "type"}]}).reasoning
    return reasoning


def _hosted_of(part: JsonObject) -> Hosted:
    (hosted,) = extras_of({"hostedTools": [{k: v for k, v in part.items() if k != "type"}]}).hosted
    return hosted


def _request_hosted_blocks(hosted: Hosted, suffix: str) -> list[JsonObject]:
    """A hosted tool of a request's assistant turn as the blocks ``blocks.hosted_at`` reads
    back into it: its use and the result block, or the result alone when it answered no use of this
    turn."""
    result_type = hosted.result_type
    if result_type is None:
        return hosted_blocks(hosted, suffix)  # a use with no answer (yet)
    blocks: list[JsonObject]
    if not hosted.has_input and hosted.tool_name == result_type.removesuffix("_tool_result"):
        blocks = [{"type": result_type, "tool_use_id": f"srvtoolu_{suffix}"}]
    else:
        blocks = hosted_blocks(Hosted(hosted.tool_name, hosted.tool_input, result_type=result_type), suffix)
        blocks[1:] = [{"type": result_type, "tool_use_id": blocks[0]["id"]}]
    if hosted.has_result:
        blocks[-1]["content"] = hosted.result
    if hosted.status == "error":
        blocks[-1]["is_error"] = True
    elif result_type == MCP_RESULT:
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


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
