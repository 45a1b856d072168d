"""Gemini generateContent requests from a neutral ``model_input`` (``wire_request``), pure functions:
the other direction of ``read_request.model_input``. The body holds no model and does not say whether
to stream: the URL does (the built-in agent's SDK call builds it).

* ``messages`` -> ``contents`` (below): calls and results carry the neutral ids as their ``id``, so
  they pair, and read back, by id.
* ``systemPrompt`` -> ``systemInstruction`` ``{parts: [{text}]}`` (from another API, none when empty).
* ``tools`` -> consecutive function declarations as one ``{functionDeclarations}`` tool (``name``,
  ``description`` when there is one, the schema as ``parametersJsonSchema``, or ``parameters`` for a
  recorded OpenAPI schema with upper-case types, and, recorded here, the settings); a tool recorded
  here whose name is one of this API's built-in tools (``googleSearch``...) and has no description
  nor schema is that tool again, its settings its options.
* ``params``, recorded here: ``toolChoice`` is ``toolConfig``, ``safetySettings`` and
  ``cachedContent`` top-level fields again, and every other setting goes in ``generationConfig``
  (``maxTokens`` -> ``maxOutputTokens``, ``stop`` -> ``stopSequences``, ``responseFormat``'s fields,
  the others under their own names; a top-level field nobody knows, which ``model_input`` also keeps
  under its own name, goes there too). Recorded on another API: ``maxOutputTokens``, ``temperature``,
  ``topP``, ``stopSequences``, ``responseMimeType`` (``text/plain``, or ``application/json`` with the
  schema as ``responseJsonSchema``) and ``toolConfig.functionCallingConfig`` (``AUTO``, ``NONE``,
  ``ANY`` with the one name allowed; none without tools) from the neutral settings
  (``_wire/settings.py``); every other setting, the tools' settings, and the parts this API cannot say
  (reasoning, hosted tools, refusals, signatures, images given by URL...) are left out and named in
  ``dropped``. Messages of one role in a row stay apart, as this API takes them.
* A tool name is sent as it is, even one this API refuses (``^[a-zA-Z_][a-zA-Z0-9_.:-]*$``, 64
  characters): renamed, the model's calls would no longer be those of the recorded tool. The API then
  refuses the request, naming it.

The contents, as ``contents.py`` reads them back: each message one content, ``assistant`` as
``model``. A string is one text part. A model turn's parts in the canonical order: thoughts
(``{text?, thought: true, thoughtSignature?}``; an empty text part between two thoughts when the
first has no signature, which would otherwise run on into the next), hosted tools (``executableCode``
/ ``codeExecutionResult``, else ``toolCall`` / ``toolResponse`` under the upper-case ``toolType``;
what a response's metadata found, grounding and URL context, is no part and is not sent back), the
text (its signature as ``thoughtSignature``), then each call as a ``functionCall`` whose ``id`` is
the neutral id, so that calls and results pair by id, as they read back, whatever the history. A
result is a ``functionResponse`` ``{id, name, response}`` (``response_of``): an error is ``{error:
text}``; a JSON object, or text that parses as one (what a Chat tool's message carries), is the
response itself, as an object (``{result: object}`` when its one field is ``result``, ``output`` or
``error``, which would read back as what they hold); anything else ``{result: value}``, another API's
list of text parts as their text (in either mode: results are the incident's, in its API's shape).
Such text reads back as the object, not as the text. The other parts of a user turn are ``{KIND:
value}`` again. From another API (not ``native``): text, calls (an input that is no object is sent
as ``{}``), results and images given inline (an OpenAI data URL, an Anthropic base64 block) as
``inlineData``; empty messages are left out, and everything else is named as dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from otel_blackbox._spans.messages import FUNCTION_OUTPUT_FIELDS
from otel_blackbox._types import JsonObject
from otel_blackbox._wire.gemini.contents import CODE_EXECUTION
from otel_blackbox._wire.gemini.fields import GEMINI_FIELDS as REQUEST_FIELDS
from otel_blackbox._wire.gemini.fields import GENERATION_PARAMS
from otel_blackbox._wire.neutral_parts import tool_input
from otel_blackbox._wire.protocol import WireRequest
from otel_blackbox._wire.settings import (
    NEUTRAL_PARAMS,
    is_text_part,
    own_params,
    part_phrase,
    response_format_of,
    result_text,
    stop_list,
    tool_choice_of,
)

__all__ = ["GeminiContents", "gemini_body", "gemini_request", "response_of"]

Drop = Callable[[str], None]

_WIRE_NAMES = {neutral: wire for wire, neutral in GENERATION_PARAMS.items()}  # maxTokens -> maxOutputTokens
# The built-in tools a Tool holds beside functionDeclarations (the google-genai SDK's Tool fields).
_BUILT_IN_TOOLS = frozenset({
    "googleSearch", "googleSearchRetrieval", "codeExecution", "urlContext", "googleMaps", "fileSearch",
    "computerUse", "retrieval", "enterpriseWebSearch", "mcpServers", "exaAiSearch", "parallelAiSearch",
})  # fmt: skip
_MODES = {"auto": "AUTO", "none": "NONE", "required": "ANY"}  # a neutral tool choice -> functionCallingConfig


def gemini_request(model_input: JsonObject, *, native: bool) -> WireRequest:
    """A generateContent request body for ``model_input`` (the module docstring), and what it drops."""
    return gemini_body(model_input, GeminiContents(native).extended(model_input.get("messages")))


def gemini_body(model_input: JsonObject, written: GeminiContents) -> WireRequest:
    """The request around the contents ``written`` holds (``model_input``'s messages, written before:
    the built-in agent keeps them from one turn to the next, see ``_wire/memo.py``)."""
    native, dropped = written.native, list(written.dropped)

    def drop(what: str) -> None:
        if what not in dropped:
            dropped.append(what)

    body: JsonObject = {"contents": list(written.out)}  # a list of its own: the next turn's go on ``out``
    system = model_input.get("systemPrompt")
    if system is not None and (native or system):
        body["systemInstruction"] = {"parts": [{"text": system}]}
    tools = _wire_tools(model_input.get("tools") or [], native, drop)
    if tools:
        body["tools"] = tools
    body.update(_wire_params(model_input.get("params") or {}, native, drop))
    # A function calling mode without functions to call: one that asked for a call says what is lost.
    calling = body.pop("toolConfig", {}) if not native and not tools else {}
    if calling.get("functionCallingConfig", {}).get("mode") == "ANY":
        drop("params.toolChoice")
    return WireRequest(body, dropped)


@dataclass
class GeminiContents:
    """A conversation's messages written one after the other as ``contents`` (below), and what they
    leave out; each message is written on its own, whatever follows it."""

    native: bool
    dropped: list[str] = field(default_factory=list)
    out: list[JsonObject] = field(default_factory=list)

    def drop(self, what: str) -> None:
        if what not in self.dropped:
            self.dropped.append(what)

    def extended(self, messages: Any) -> GeminiContents:
        """These messages written after those written so far."""
        self.out += _contents(messages or [], native=self.native, drop=self.drop)
        return self


# --- tools and settings ---------------------------------------------------------------------------


def _wire_tools(tools: list[JsonObject], native: bool, drop: Drop) -> list[JsonObject]:
    """The ``tools`` of neutral tools (the module docstring): the declarations that follow each other in
    one tool, as ``model_input`` reads them back in order."""
    out: list[JsonObject] = []
    for tool in tools:
        name, description = tool["name"], tool.get("description") or ""
        settings = tool.get("settings") or {}
        if native and name in _BUILT_IN_TOOLS and not description and "inputSchema" not in tool:
            out.append({name: dict(settings)})
            continue
        if settings and not native:
            drop(f"the settings of tool {name}")
        declaration: JsonObject = {"name": name}
        if description:
            declaration["description"] = description
        if "inputSchema" in tool:
            declaration[_schema_field(tool["inputSchema"], native)] = tool["inputSchema"]
        if native:
            declaration.update(settings)
        if out and "functionDeclarations" in out[-1]:
            out[-1]["functionDeclarations"].append(declaration)
        else:
            out.append({"functionDeclarations": [declaration]})
    return out


def _schema_field(schema: Any, native: bool) -> str:
    """``parameters`` for an OpenAPI schema as this API's SDK writes one (``"type": "OBJECT"``),
    ``parametersJsonSchema`` for JSON Schema, which every other API's tools are."""
    kind = schema.get("type") if isinstance(schema, dict) else None
    return "parameters" if native and isinstance(kind, str) and kind.isupper() else "parametersJsonSchema"


def _wire_params(params: JsonObject, native: bool, drop: Drop) -> JsonObject:
    """``generationConfig``, ``toolConfig`` and the top-level settings of neutral ``params``."""
    kept, dropped = own_params(params, REQUEST_FIELDS, native=native)
    for name in dropped:
        drop(name)
    body: JsonObject = {k: v for k, v in kept.items() if k in REQUEST_FIELDS.behaviour}
    config: JsonObject = {k: v for k, v in kept.items() if k not in REQUEST_FIELDS.behaviour}
    if native:  # each neutral setting is already in this API's shape
        config.update({_WIRE_NAMES[k]: v for k, v in params.items() if k in _WIRE_NAMES})
        if isinstance(params.get("responseFormat"), dict):
            config.update(params["responseFormat"])
        if params.get("toolChoice") is not None:
            body["toolConfig"] = params["toolChoice"]
    else:
        _portable(params, body, config, drop)
    if config:
        body["generationConfig"] = config
    return body


def _portable(params: JsonObject, body: JsonObject, config: JsonObject, drop: Drop) -> None:
    """Another API's neutral settings, written in this one's shape."""
    for key in (k for k in NEUTRAL_PARAMS if k in params):
        value = params[key]
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if key == "maxTokens" and number and isinstance(value, int) and value > 0:
            config["maxOutputTokens"] = value
        elif key in ("temperature", "topP") and number:
            config[key] = value
        elif key == "toolChoice" and (choice := tool_choice_of(value)) is not None:
            calling: JsonObject = {"mode": _MODES[choice.mode]}
            if choice.name is not None:
                calling["allowedFunctionNames"] = [choice.name]
            body["toolConfig"] = {"functionCallingConfig": calling}
        elif key == "responseFormat" and (form := response_format_of(value)) is not None:
            config["responseMimeType"] = "text/plain" if form.kind == "text" else "application/json"
            if form.schema is not None:
                config["responseJsonSchema"] = form.schema
        elif key == "stop" and (stops := stop_list(value)) is not None:
            config["stopSequences"] = stops
        else:
            drop(f"params.{key}")


# --- the contents ---------------------------------------------------------------------------------


def _contents(messages: list[JsonObject], *, native: bool, drop: Drop) -> list[JsonObject]:
    """The ``contents`` of neutral ``messages`` (the module docstring); ``drop`` is told what is left out."""
    contents: list[JsonObject] = []
    for message in messages:
        role, content = message["role"], message.get("content")
        if not native and role not in ("user", "assistant"):
            drop(f"the {role} role of a message (sent as a user turn)")
        if isinstance(content, list):
            write = _model_parts if role == "assistant" else _user_parts
            parts = write(content, native, drop)
        else:
            parts = [{"text": content if isinstance(content, str) else ""}] if native or content else []
        if parts or native:
            contents.append({"role": "model" if role == "assistant" else "user", "parts": parts})
    return contents


def _model_parts(content: list[JsonObject], native: bool, drop: Drop) -> list[JsonObject]:
    parts: list[JsonObject] = []
    for part in content:
        kind = part.get("type")
        if kind == "reasoning" and native:
            if parts and parts[-1].get("thought") and "thoughtSignature" not in parts[-1]:
                parts.append({"text": ""})  # ends the thought before: only a signature or a part does
            parts.append(_thought(part))
        elif kind == "hosted_tool" and native and not _found_by_metadata(part):
            parts += _hosted_parts(part)
        elif kind == "text" and (native or part["text"]):
            parts.append(_signed({"text": part["text"]}, part, native, drop))
        elif kind == "tool_use":
            args = part.get("toolInput")
            if not native and not isinstance(args, dict):
                drop(f"the input of {part['toolCallId']} (not a JSON object)")
                args = {}
            call = {"id": part["toolCallId"], "name": part["toolName"], "args": args}
            parts.append(_signed({"functionCall": call}, part, native, drop))
        elif kind != "text":
            drop(part_phrase(part))
    return parts


def _signed(wire: JsonObject, part: JsonObject, native: bool, drop: Drop) -> JsonObject:
    if "signature" in part:
        if native:
            wire["thoughtSignature"] = part["signature"]
        else:
            drop("a thought signature")
    return wire


def _thought(part: JsonObject) -> JsonObject:
    wire: JsonObject = {"text": part["text"]} if "text" in part else {}
    wire["thought"] = True
    if "signature" in part:
        wire["thoughtSignature"] = part["signature"]
    return wire


def _found_by_metadata(part: JsonObject) -> bool:
    """What a response's candidate metadata found (grounding, URL context: read_response.py's hosted
    tools of no part), which a program sends back as no part either."""
    name, result = part["toolName"], part.get("result")
    if name in ("google_search", "grounding"):  # no part reads as these: a toolType says GOOGLE_SEARCH_WEB
        return True
    metadata = isinstance(result, dict) and bool({"urlMetadata", "url_metadata"} & set(result))
    return name == "url_context" and "toolInput" not in part and metadata


def _hosted_parts(part: JsonObject) -> list[JsonObject]:
    """A hosted tool as the parts ``ModelParts`` reads back into it: the code and its result, or a
    server-side ``toolCall`` and its ``toolResponse``; ids are not kept, so none are written."""
    name = str(part["toolName"])
    if name == CODE_EXECUTION:
        code = [{"executableCode": part["toolInput"]}] if "toolInput" in part else []
        return code + ([{"codeExecutionResult": part["result"]}] if "result" in part else [])
    call: JsonObject = {"toolType": name.upper()}
    if "toolInput" in part:
        call["args"] = part["toolInput"]
    parts: list[JsonObject] = [{"toolCall": call}]
    if "result" in part:
        parts.append({"toolResponse": {"toolType": name.upper(), "response": part["result"]}})
    return parts


def _user_parts(content: list[JsonObject], native: bool, drop: Drop) -> list[JsonObject]:
    parts: list[JsonObject] = []
    for part in content:
        kind = part.get("type")
        if kind == "text":
            if native or part["text"]:
                parts.append({"text": part["text"]})
        elif kind == "tool_result":
            parts.append({"functionResponse": _function_response(part)})
        elif native:  # a part kept as sent: {type: inlineData, inlineData: {...}}
            parts.append({str(kind): part[str(kind)]})
        elif (image := _inline_image(part)) is not None:
            parts.append(image)
        else:
            drop(part_phrase(part))
    return parts


def _function_response(part: JsonObject) -> JsonObject:
    """The inverse of ``function_response_outcome``."""
    if "error" in part:
        error = part["error"]
        response: Any = {"error": error if isinstance(error, str) else result_text(error)}
    else:
        result = part.get("result")
        # Whatever the mode: a result is the incident's, in its own API's shape (a replay of a rerun on
        # this API is native and must send what the rerun sent).
        if isinstance(result, list) and result and all(is_text_part(p) for p in result):
            result = "".join(p["text"] for p in result)
        response = response_of(result)
    return {"id": part["toolCallId"], "name": part["toolName"], "response": response}


def response_of(result: Any) -> JsonObject:
    """A tool's successful result as a ``functionResponse.response``, which is a JSON object.

    The API's FunctionResponse: "Use 'output' key to specify function output and 'error' key to
    specify error details (if any). If 'output' and 'error' keys are not specified, then whole
    'response' is treated as function output." google-genai's automatic function calling
    (``_extra_utils.get_function_response_parts``, 3.6.1) sends ``{'result': value}`` whatever the
    function returned (a dict as an object, nested) and a raised error as ``{'error': str(e)}``. Either
    way the model is handed an object as an object: JSON text of one (a Chat tool's message content)
    is parsed here, or it would reach the model as escaped JSON inside JSON. An object goes whole (the
    API's way), unless ``function_response_outcome`` would read it back as what its one field holds.
    """
    if isinstance(result, str) and result.lstrip().startswith("{"):
        result = tool_input(result)  # strict JSON (no NaN), else the text as it is
    return result if _reads_as_itself(result) else {"result": result}


def _reads_as_itself(result: Any) -> bool:
    """An object that ``function_response_outcome`` reads back as it is: not one lone field it reads
    inside (``result``, ``output``, ``error``)."""
    if not isinstance(result, dict):
        return False
    return not (len(result) == 1 and next(iter(result)) in (*FUNCTION_OUTPUT_FIELDS, "error"))


def _inline_image(part: JsonObject) -> JsonObject | None:
    """An image another API gave inline, as ``inlineData``: OpenAI's data URL, Anthropic's base64 block."""
    url = part.get("url") if part.get("type") == "image" else None
    if isinstance(url, str) and url.startswith("data:") and ";base64," in url:
        mime, data = url[5:].split(";base64,", 1)
        return {"inlineData": {"mimeType": mime, "data": data}}
    source = part.get("source") if part.get("type") == "image" else None
    if isinstance(source, dict) and source.get("type") == "base64":
        return {"inlineData": {"mimeType": source.get("media_type"), "data": source.get("data")}}
    return None
