"""OpenAI Chat Completions requests from a neutral ``model_input`` (``wire_request``), pure functions:
the inverse of ``read_request.model_input``, for the built-in agent.

* ``systemPrompt`` is one leading ``system`` message: ``model_input`` joined the leading ones, and
  which of them were ``developer`` messages is not kept (``system`` is the role every model takes).
* A message with string content goes as it is. A user turn's ``tool_result`` parts are ``tool``
  messages (``tool_call_id``, the result as recorded, or an error's text), before its other parts.
  An assistant turn of parts is one message: the text as ``content``, the refusal as ``refusal``,
  the web-search ``hosted_tool`` part's annotations as ``annotations``, the ``tool_use`` parts as
  ``tool_calls`` (neutral ids, arguments as compact JSON; a legacy ``function_call`` goes as a tool
  call). With none of the last three, the text stays a list of one text part, as it reads back as
  parts. Parts go back as ``text`` and ``image_url``, any other as recorded.
* ``tools`` are ``{type: function, function: {name, description?, parameters?, ...settings}}`` (a
  custom tool under its own type). ``maxTokens`` is ``max_completion_tokens`` (both fields read back
  as ``maxTokens``; the models that take only one, o-series and gpt-5, take that one), ``topP``
  ``top_p``; every other setting goes under its own wire name.

Recorded on another API (``native=False``): tool results are sent as text (``result_text``), and an
error as its text; the neutral settings are read with ``_wire/settings.py`` and written in Chat's shape (a
JSON schema recorded with no name is named ``response``; four stop sequences at most);
Responses' ``reasoning.effort`` and ``text.verbosity`` become ``reasoning_effort`` and
``verbosity``; Anthropic's and Gemini's inline images become ``data:`` URLs, and Gemini's
upper-case schema types lower case. Left out and named in ``dropped``: reasoning parts, hosted
tool parts, other parts (an image by file id, a document), signatures, a tool's settings, a tool
that is not a function there (a server tool, a custom tool), ``toolChoice`` and
``parallel_tool_calls`` with no tools, and any setting Chat's table does not name.

The pieces the Responses API's writer (``openai_responses/write_request.py``) shares are here:
``Building``, the tool, part and result helpers, ``openai_tool_choice``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from otel_blackbox._types import JsonObject
from otel_blackbox._wire.neutral_parts import arguments_text, objects_of
from otel_blackbox._wire.openai_chat.fields import CHAT_FIELDS as REQUEST_FIELDS
from otel_blackbox._wire.openai_chat.message import WEB_SEARCH
from otel_blackbox._wire.openai_chat.written import Building, WrittenMessages
from otel_blackbox._wire.protocol import WireRequest
from otel_blackbox._wire.settings import (
    ResponseFormat,
    ToolChoice,
    json_schema_of,
    own_params,
    part_phrase,
    response_format_of,
    result_text,
    stop_list,
    tool_choice_of,
)

__all__ = ["ChatMessages", "chat_body", "chat_request"]

# maxTokens goes as max_completion_tokens (both read back as maxTokens): the models that take only
# one of the two (o-series, gpt-5) take that one.
_WIRE_NEUTRAL = {"maxTokens": "max_completion_tokens", "temperature": "temperature", "topP": "top_p"}
_NATIVE_SETTINGS = {"toolChoice": "tool_choice", "responseFormat": "response_format", "stop": "stop"}
_STOP_LIMIT = 4  # Chat takes at most four stop sequences
# The name both OpenAI APIs require of a JSON schema, for one recorded without (Anthropic, Gemini).
SCHEMA_NAME = "response"


def chat_request(model_input: JsonObject, *, stream: bool, native: bool) -> WireRequest:
    """A Chat Completions request body for ``model_input`` (the module docstring), and what it drops."""
    return chat_body(model_input, ChatMessages(native).extended(model_input.get("messages")), stream=stream)


def chat_body(model_input: JsonObject, written: ChatMessages, *, stream: bool) -> WireRequest:
    """The request around the messages ``written`` holds (``model_input``'s, written before: the
    built-in agent keeps them from one turn to the next, see ``_wire/memo.py``)."""
    build = Building(written.build.native, list(written.build.dropped))
    body: JsonObject = {}
    if isinstance(model_input.get("model"), str):
        body["model"] = model_input["model"]
    # One system message: model_input joined the leading ones, and which were developer ones is lost.
    system = model_input.get("systemPrompt")
    head = [{"role": "system", "content": system}] if isinstance(system, str) else []
    body["messages"] = [*head, *written.out]  # a list of its own: the next turn's messages go on ``out``
    tools = [w for w in (_wire_tool(t, build) for t in objects_of(model_input.get("tools"))) if w is not None]
    if tools:  # the API refuses an empty list
        body["tools"] = tools
    params = model_input.get("params")
    body.update(_wire_params(params if isinstance(params, dict) else {}, bool(tools), build))
    if stream:
        body["stream"] = True
    return WireRequest(body, build.dropped)


# --- the pieces openai_responses/write_request.py shares ------------------------------------


def image_url_of(part: JsonObject) -> str | None:
    """The URL of an image part recorded on any API: the neutral part's ``url`` (Chat, Responses),
    Anthropic's block ``source`` (a base64 one as a ``data:`` URL), Gemini's ``inlineData`` of an
    image type (as a ``data:`` URL); None for anything else (a file id, a Gemini file URI)."""
    kind = part.get("type")
    if kind == "image" and isinstance(part.get("url"), str):
        return str(part["url"])
    source = part.get("source")
    if kind == "image" and isinstance(source, dict):
        if source.get("type") == "url" and isinstance(source.get("url"), str):
            return str(source["url"])
        if source.get("type") == "base64" and isinstance(source.get("data"), str):
            return f"data:{source.get('media_type') or 'image/png'};base64,{source['data']}"
    inline = part.get("inlineData")
    if kind == "inlineData" and isinstance(inline, dict):
        mime = inline.get("mimeType", inline.get("mime_type"))
        if isinstance(mime, str) and mime.startswith("image/") and isinstance(inline.get("data"), str):
            return f"data:{mime};base64,{inline['data']}"
    return None


def split_results(content: list[Any]) -> tuple[list[JsonObject], list[JsonObject]]:
    """A user turn's tool results, and its other parts: the results go first on the wire, as both
    OpenAI APIs need them right after the calls they answer."""
    parts = objects_of(content)
    results = [p for p in parts if p.get("type") == "tool_result"]
    return results, [p for p in parts if p.get("type") != "tool_result"]


def result_content(part: JsonObject, build: Building) -> Any:
    """What a tool result part sends back: the error text for an error; natively the result as
    recorded when it is text or parts, else its text (``result_text``)."""
    if "error" in part:
        return result_text(part["error"])
    result = part.get("result", "")
    if build.native and isinstance(result, (str, list)):
        return result
    return result_text(result)


def tool_answer(
    part: JsonObject, names: dict[str, str], build: Building, head: JsonObject, id_key: str, content_key: str
) -> JsonObject:
    """A tool result as the request's own message or item: ``head``, the call's id under ``id_key``,
    the result under ``content_key``, and the tool's name when no earlier call in the request tells it."""
    answer: JsonObject = {
        **head,
        id_key: str(part.get("toolCallId", "")),
        content_key: result_content(part, build),
    }
    name = answered_name(part, names)
    if name is not None:
        answer["name"] = name
    return answer


def answered_name(part: JsonObject, names: dict[str, str]) -> str | None:
    """The tool name a result must carry itself: when no call earlier in the request tells it
    (``model_input`` reads it from the result then, else says ``unknown``)."""
    name = str(part.get("toolName", ""))
    call_id = str(part.get("toolCallId", ""))
    return None if names.get(call_id) == name or name == "unknown" else name


def tool_parts(tool: JsonObject) -> tuple[str, JsonObject, JsonObject]:
    """A neutral tool's name, its function fields (description when it has one, parameters) and
    its settings."""
    name = str(tool.get("name", ""))
    spec: JsonObject = {"name": name}
    if tool.get("description"):
        spec["description"] = tool["description"]
    if tool.get("inputSchema") is not None:
        spec["parameters"] = tool["inputSchema"]
    settings = tool.get("settings")
    return name, spec, dict(settings) if isinstance(settings, dict) else {}


def portable_function(tool: JsonObject, build: Building) -> JsonObject | None:
    """A tool recorded on another API as a function's fields (name, description, parameters), its
    settings named as not sent; None, and named, for a tool of another kind there (Anthropic's server
    tools, a custom tool: their type is a setting), which is no function to offer the model."""
    name, spec, settings = tool_parts(tool)
    if "type" in settings:
        build.drop(f"tool {name} (a {settings['type']} tool)")
        return None
    if settings:
        build.drop(f"the settings of tool {name}")
    if "parameters" in spec:
        spec["parameters"] = json_schema_of(spec["parameters"])
    return spec


# Gemini's schema types (an OpenAPI subset), which the SDK writes in upper case; JSON Schema's are
# the same in lower case, and the other APIs take only those.


def openai_tool_choice(choice: ToolChoice, *, nested: bool) -> Any:
    """A tool choice in OpenAI's shape: the mode's string, or the one function (nested under
    ``function`` in Chat, flat in Responses)."""
    if choice.name is None:
        return choice.mode
    if nested:
        return {"type": "function", "function": {"name": choice.name}}
    return {"type": "function", "name": choice.name}


# --- Chat's messages, tools and settings -----------------------------------------------------


@dataclass
class ChatMessages(WrittenMessages):
    """The messages as Chat messages."""

    def add(self, message: JsonObject) -> None:
        build, names, messages = self.build, self.names, self.out
        role, content = message.get("role"), message.get("content")
        if role == "assistant" and isinstance(content, list):
            assistant = _wire_assistant(content, names, build)
            if assistant is not None:
                messages.append(assistant)
        elif isinstance(content, list):
            results, rest = split_results(content)
            messages += [
                tool_answer(p, names, build, {"role": "tool"}, "tool_call_id", "content") for p in results
            ]
            parts = [w for w in (_wire_part(p, build) for p in rest) if w is not None]
            if parts or not (rest or results):  # a turn all of whose parts were dropped is not sent
                messages.append({"role": role, "content": parts})
        else:
            messages.append({"role": role, "content": "" if content is None else content})


def _wire_assistant(parts: list[Any], names: dict[str, str], build: Building) -> JsonObject | None:
    """The inverse of read_request.py's ``_assistant``: the text as content, the refusal, the
    web-search annotations and the calls in their fields. With none of the last three, natively, the
    text stays a list of parts (a string would read back as a string)."""
    text: list[str] = []
    refusal: list[str] = []
    annotations: list[Any] = []
    calls: list[JsonObject] = []
    for part in objects_of(parts):
        kind = part.get("type")
        if kind == "text":
            text.append(str(part.get("text", "")))
            if part.get("signature") is not None:
                build.drop("a text signature")
        elif kind == "refusal":
            refusal.append(str(part.get("refusal", "")))
        elif kind == "tool_use":
            call_id, name = str(part.get("toolCallId", "")), str(part.get("toolName", ""))
            names[call_id] = name
            arguments = arguments_text(part.get("toolInput"))
            calls.append(
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
            )
            if part.get("signature") is not None:
                build.drop("a tool call signature")
        elif (
            build.native
            and kind == "hosted_tool"
            and part.get("toolName") == WEB_SEARCH
            and isinstance(part.get("result"), list)
        ):
            annotations.extend(part["result"])
        else:
            build.drop(part_phrase(part))
    joined = "".join(text)
    if not (calls or refusal or annotations):
        if not build.native:
            return {"role": "assistant", "content": joined} if joined else None
        return {"role": "assistant", "content": [{"type": "text", "text": joined}] if joined else []}
    message: JsonObject = {"role": "assistant", "content": joined or None}
    if refusal:
        message["refusal"] = "".join(refusal)
    if annotations:
        message["annotations"] = annotations
    if calls:
        message["tool_calls"] = calls
    return message


def _wire_part(part: JsonObject, build: Building) -> JsonObject | None:
    kind = part.get("type")
    if kind == "text":
        return {"type": "text", "text": part.get("text", "")}
    if kind == "image" and isinstance(part.get("url"), str):  # the neutral image part
        image: JsonObject = {"url": part["url"]}
        if part.get("detail") is not None:
            image["detail"] = part["detail"]
        return {"type": "image_url", "image_url": image}
    if build.native:
        return dict(part)  # kept as sent
    url = image_url_of(part)
    if url is not None:
        return {"type": "image_url", "image_url": {"url": url}}
    build.drop(part_phrase(part))
    return None


def _wire_tool(tool: JsonObject, build: Building) -> JsonObject | None:
    """The inverse of ``neutral_tool``: a function, or natively a custom tool (its type a setting),
    the other settings beside the name in the nested definition (where ``strict`` goes)."""
    if not build.native:
        function = portable_function(tool, build)
        return {"type": "function", "function": function} if function is not None else None
    _, spec, settings = tool_parts(tool)
    kind = str(settings.pop("type", "function"))
    return {"type": kind, kind: {**spec, **settings}}


def _wire_params(params: JsonObject, has_tools: bool, build: Building) -> JsonObject:
    body = {wire: params[neutral] for neutral, wire in _WIRE_NEUTRAL.items() if neutral in params}
    own = dict(params)
    if not build.native:
        _from_responses(own, build)
        if not has_tools:  # the API takes neither without tools
            for key in ("toolChoice", "parallel_tool_calls"):
                if key in own:
                    del own[key]
                    build.drop(f"params.{key}")
    kept, dropped = own_params(own, REQUEST_FIELDS, native=build.native)
    for what in dropped:
        build.drop(what)
    body.update(_wire_settings(own, build))
    body.update(kept)
    return body


def _from_responses(params: JsonObject, build: Building) -> None:
    """Responses' ``reasoning.effort`` and ``text.verbosity`` as Chat's ``reasoning_effort`` and
    ``verbosity``, in place; their other keys are named as not sent."""
    for field_name, key, chat_name in (
        ("reasoning", "effort", "reasoning_effort"),
        ("text", "verbosity", "verbosity"),
    ):
        given = params.pop(field_name, None)
        if given is not None and not isinstance(given, dict):
            build.drop(f"params.{field_name}")
        for name, value in (given if isinstance(given, dict) else {}).items():
            if name == key:
                params[chat_name] = value
            else:
                build.drop(f"params.{field_name}.{name}")


def _wire_settings(params: JsonObject, build: Building) -> JsonObject:
    """toolChoice, responseFormat and stop: as recorded natively, else read (settings.py) and
    written in Chat's shape."""
    if build.native:
        return {wire: params[neutral] for neutral, wire in _NATIVE_SETTINGS.items() if neutral in params}
    body: JsonObject = {}
    if "toolChoice" in params:
        choice = tool_choice_of(params["toolChoice"])
        if choice is None:
            build.drop("params.toolChoice")
        else:
            body["tool_choice"] = openai_tool_choice(choice, nested=True)
    if "responseFormat" in params:
        answer = response_format_of(params["responseFormat"])
        if answer is None:
            build.drop("params.responseFormat")
        else:
            body["response_format"] = _response_format(answer)
    if "stop" in params:
        stops = stop_list(params["stop"])
        if stops is None:
            build.drop("params.stop")
        else:
            if len(stops) > _STOP_LIMIT:
                build.drop(f"params.stop beyond {_STOP_LIMIT} sequences")
            body["stop"] = stops[:_STOP_LIMIT]
    return body


def _response_format(answer: ResponseFormat) -> JsonObject:
    if answer.kind != "json_schema":
        return {"type": answer.kind}
    schema: JsonObject = {"name": answer.name or SCHEMA_NAME}
    if answer.schema is not None:
        schema["schema"] = answer.schema
    if answer.strict is not None:
        schema["strict"] = answer.strict
    return {"type": "json_schema", "json_schema": schema}
