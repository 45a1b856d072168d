"""OpenAI Responses API requests from a neutral ``model_input`` (``wire_request``), pure functions:
the inverse of ``read_request.model_input``, for the built-in agent.

* ``systemPrompt`` is ``instructions``: ``model_input`` joined them with the leading ``system`` /
  ``developer`` items, which are not told apart. ``input`` is always a list of items.
* A message with string content goes as it is (``{role, content}``). A user turn's ``tool_result``
  parts are ``function_call_output`` items (``call_id``, ``output`` as recorded, or an error's
  text), before its other parts (``input_text``, ``input_image``, any other as recorded). An
  assistant turn of parts is its items in the canonical order: a ``reasoning`` item per reasoning
  part, a hosted call item per hosted tool part (``items.py``'s table of hosted calls,
  inverted), one assistant message of ``output_text`` and ``refusal`` parts, a ``function_call`` per
  tool use (``call_id`` the neutral id, arguments as compact JSON). No item carries an id: the API's
  ids are not in the model_input, and a status is sent only where one was recorded.
* ``tools``: a function flat (``{type: function, name, description?, parameters?, ...settings}``),
  a tool of another type (``custom``...) the same under its type, and a built-in tool (a neutral
  tool named like one, such as ``web_search``, with no description, schema or ``strict``) as
  ``{type: NAME, ...settings}``. ``maxTokens`` is ``max_output_tokens``, ``topP`` ``top_p``,
  ``responseFormat`` ``text.format`` (beside ``params.text``); every other setting goes under its
  own wire name.

Recorded on another API (``native=False``): functions carry ``parameters`` (``null`` when there is
no schema) and ``strict: false``, as another API's schema is not written for strict mode; tool
results and errors are text; the neutral settings are read with ``_wire/settings.py`` (a JSON schema with
no name is named ``response``); Chat's ``reasoning_effort`` and ``verbosity`` become
``reasoning.effort`` and ``text.verbosity``; Anthropic's and Gemini's inline images become
``data:`` URLs, an image without a detail asks for ``auto``, and Gemini's upper-case schema types
are lower case. Left out and named in ``dropped``: ``stop`` (the Responses API has no stop
sequences), a JSON schema format with no schema, reasoning and hosted tool parts, other parts,
signatures, a tool's settings and a tool that is not a function there, ``toolChoice`` and
``parallel_tool_calls`` with no tools, and any setting this API's table does not name.

The pieces shared with Chat's writer are in ``openai_chat/write_request.py``; the hosted call items,
which a response holds too, in ``items.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from otel_blackbox._cassette.output import Hosted
from otel_blackbox._types import JsonObject
from otel_blackbox._wire.neutral_parts import arguments_text, objects_of
from otel_blackbox._wire.openai_chat.write_request import (
    SCHEMA_NAME,
    image_url_of,
    openai_tool_choice,
    portable_function,
    split_results,
    tool_answer,
    tool_parts,
)
from otel_blackbox._wire.openai_chat.written import Building, WrittenMessages
from otel_blackbox._wire.openai_responses.fields import RESPONSES_FIELDS as REQUEST_FIELDS
from otel_blackbox._wire.openai_responses.items import HOSTED_INPUT, PROGRAM_CALLS, hosted_item
from otel_blackbox._wire.protocol import WireRequest
from otel_blackbox._wire.settings import (
    ResponseFormat,
    own_params,
    part_phrase,
    response_format_of,
    tool_choice_of,
)

__all__ = ["ResponsesInput", "responses_body", "responses_request"]

# The built-in tools (named by their type, no ``name`` of their own), as the SDK lists them: a
# neutral tool so named, with no description, schema or ``strict``, is one of them.
_BUILT_IN_TOOLS = frozenset({
    "apply_patch", "code_interpreter", "computer", "computer_use_preview", "file_search",
    "image_generation", "local_shell", "mcp", "programmatic_tool_calling", "shell", "tool_search",
    "web_search", "web_search_2025_08_26", "web_search_preview", "web_search_preview_2025_03_11",
})  # fmt: skip
_WIRE_NEUTRAL = {"maxTokens": "max_output_tokens", "temperature": "temperature", "topP": "top_p"}
# A stop the program sent is no Responses field: it was recorded under its own name, "stop".
_NATIVE_SETTINGS = {"toolChoice": "tool_choice", "stop": "stop"}
_OUTPUT = {"type": "function_call_output"}  # the head of a tool result item


def responses_request(model_input: JsonObject, *, stream: bool, native: bool) -> WireRequest:
    """A Responses API request body for ``model_input`` (the module docstring), and what it drops."""
    written = ResponsesInput(native).extended(model_input.get("messages"))
    return responses_body(model_input, written, stream=stream)


def responses_body(model_input: JsonObject, written: ResponsesInput, *, stream: bool) -> WireRequest:
    """The request around the input items ``written`` holds (``model_input``'s messages, written
    before: the built-in agent keeps them from one turn to the next, see ``_wire/memo.py``)."""
    build = Building(written.build.native, list(written.build.dropped))
    body: JsonObject = {}
    if isinstance(model_input.get("model"), str):
        body["model"] = model_input["model"]
    # instructions: model_input joined them with the leading system / developer items, which are lost.
    if isinstance(model_input.get("systemPrompt"), str):
        body["instructions"] = model_input["systemPrompt"]
    body["input"] = list(written.out)  # a list of its own: the next turn's items go on ``out``
    tools = [w for w in (_wire_tool(t, build) for t in objects_of(model_input.get("tools"))) if w is not None]
    if tools:
        body["tools"] = tools
    params = model_input.get("params")
    body.update(_wire_params(params if isinstance(params, dict) else {}, bool(tools), build))
    if stream:
        body["stream"] = True
    return WireRequest(body, build.dropped)


@dataclass
class ResponsesInput(WrittenMessages):
    """The messages as Responses input items."""

    def add(self, message: JsonObject) -> None:
        build, names, items = self.build, self.names, self.out
        role, content = message.get("role"), message.get("content")
        if role == "assistant":
            items += _wire_turn(content, names, build)
        elif isinstance(content, list):
            results, rest = split_results(content)
            items += [tool_answer(p, names, build, _OUTPUT, "call_id", "output") for p in results]
            parts = [w for w in (_wire_part(p, build) for p in rest) if w is not None]
            if parts or not (rest or results):  # a turn all of whose parts were dropped is not sent
                items.append({"role": role, "content": parts})
        else:
            items.append({"role": role, "content": "" if content is None else content})


def _wire_turn(content: Any, names: dict[str, str], build: Building) -> list[JsonObject]:
    """The inverse of read_request.py's ``_assistant``: an item per reasoning part, hosted call
    and call, and one message for the text and the refusal, in the parts' order; no item ids (the
    API's ids are not in the model_input)."""
    if not isinstance(content, list):
        return [{"role": "assistant", "content": "" if content is None else content}]
    items: list[JsonObject] = []
    message: JsonObject | None = None
    for part in objects_of(content):
        kind = part.get("type")
        if kind in ("text", "refusal"):
            if message is None:
                message = {"role": "assistant", "content": []}
                items.append(message)
            message["content"].append(_said(part))
            if part.get("signature") is not None:
                build.drop("a text signature")
        elif kind == "tool_use":
            call_id, name = str(part.get("toolCallId", "")), str(part.get("toolName", ""))
            names[call_id] = name
            arguments = arguments_text(part.get("toolInput"))
            items.append({"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments})
            if part.get("signature") is not None:
                build.drop("a tool call signature")
        elif build.native and kind == "reasoning":
            items.append(_reasoning_input(part))
        elif build.native and kind == "hosted_tool" and (item := _hosted_input(part)) is not None:
            items.append(item)
        else:
            build.drop(part_phrase(part))
    if (
        message is not None
        and not build.native
        and all(p["type"] == "output_text" for p in message["content"])
    ):
        message["content"] = "".join(p["text"] for p in message["content"])  # the plain shape
    if not items and build.native:
        items.append({"role": "assistant", "content": []})  # an empty turn reads back as one
    return items


def _said(part: JsonObject) -> JsonObject:
    """A text or refusal part as a part of an assistant message sent back."""
    if part.get("type") == "refusal":
        return {"type": "refusal", "refusal": str(part.get("refusal", ""))}
    return {"type": "output_text", "text": str(part.get("text", "")), "annotations": []}


def _reasoning_input(part: JsonObject) -> JsonObject:
    """The reasoning item ``items.reasoning_of`` read, less its id."""
    summary = part.get("summary")
    texts = [s for s in summary if isinstance(s, str)] if isinstance(summary, list) else []
    item: JsonObject = {"type": "reasoning", "summary": [{"type": "summary_text", "text": s} for s in texts]}
    if isinstance(part.get("text"), str):
        item["content"] = [{"type": "reasoning_text", "text": part["text"]}]
    if isinstance(part.get("encryptedContent"), str):
        item["encrypted_content"] = part["encryptedContent"]
    return item


def _hosted_input(part: JsonObject) -> JsonObject | None:
    """The hosted call item ``items.hosted_of`` read, less its id, its status only when
    it had one; None for a part no item reads back as."""
    name = part.get("toolName")
    if not isinstance(name, str) or f"{name}_call" in PROGRAM_CALLS:
        return None
    kind = f"{name}_call"
    if kind not in HOSTED_INPUT and not isinstance(part.get("toolInput"), dict):
        return None
    given = {"tool_input": part["toolInput"]} if "toolInput" in part else {}
    if "result" in part:
        given["result"] = part["result"]
    hosted = Hosted(name, **given, status=part["status"] if isinstance(part.get("status"), str) else None)
    item = hosted_item(hosted, "")
    del item["id"]
    if hosted.status is None:
        item.pop("status", None)
    return item


def _wire_part(part: JsonObject, build: Building) -> JsonObject | None:
    kind = part.get("type")
    if kind == "text":
        return {"type": "input_text", "text": part.get("text", "")}
    if kind == "image" and (isinstance(part.get("url"), str) or isinstance(part.get("fileId"), str)):
        image: JsonObject = {"type": "input_image"}
        if isinstance(part.get("url"), str):
            image["image_url"] = part["url"]
        else:
            image["file_id"] = part["fileId"]
        if part.get("detail") is not None:
            image["detail"] = part["detail"]
        elif not build.native:
            image["detail"] = "auto"  # the SDK's type requires it
        return image
    if build.native:
        return dict(part)  # kept as sent
    url = image_url_of(part)
    if url is not None:
        return {"type": "input_image", "image_url": url, "detail": "auto"}
    build.drop(part_phrase(part))
    return None


def _wire_tool(tool: JsonObject, build: Building) -> JsonObject | None:
    """The inverse of ``neutral_tool``: a function; natively a tool of another type (its type a
    setting) or a built-in one (named by its type), with the settings beside the name."""
    if not build.native:
        function = portable_function(tool, build)
        if function is None:
            return None
        # Both fields the SDK requires; strict off as in Chat: another API's schema is not written
        # for strict mode.
        return {"type": "function", **function, "parameters": function.get("parameters"), "strict": False}
    name, spec, settings = tool_parts(tool)
    if "type" in settings:
        return {"type": settings.pop("type"), **spec, **settings}
    if name in _BUILT_IN_TOOLS and spec == {"name": name} and "strict" not in settings:
        return {"type": name, **settings}
    return {"type": "function", **spec, **settings}


def _wire_params(params: JsonObject, has_tools: bool, build: Building) -> JsonObject:
    body = {wire: params[neutral] for neutral, wire in _WIRE_NEUTRAL.items() if neutral in params}
    own = dict(params)
    text: JsonObject = {}
    if build.native:
        body.update((wire, own[neutral]) for neutral, wire in _NATIVE_SETTINGS.items() if neutral in own)
        if "responseFormat" in own:
            text["format"] = own["responseFormat"]
    else:
        _portable_settings(own, has_tools, body, text, build)
    kept, dropped = own_params(own, REQUEST_FIELDS, native=build.native)
    for what in dropped:
        build.drop(what)
    body.update(kept)
    if text:
        given = body.get("text")
        body["text"] = {**(given if isinstance(given, dict) else {}), **text}
    return body


def _portable_settings(
    params: JsonObject, has_tools: bool, body: JsonObject, text: JsonObject, build: Building
) -> None:
    """The neutral settings of another API, read (settings.py) and written in this API's shape, and
    Chat's reasoning_effort and verbosity as ``reasoning.effort`` and ``text.verbosity``."""
    if "stop" in params:
        build.drop("params.stop")  # the Responses API has no stop sequences
    if "toolChoice" in params:
        choice = tool_choice_of(params["toolChoice"]) if has_tools else None
        if choice is None:
            build.drop("params.toolChoice")
        else:
            body["tool_choice"] = openai_tool_choice(choice, nested=False)
    if not has_tools and params.pop("parallel_tool_calls", None) is not None:
        build.drop("params.parallel_tool_calls")
    if "responseFormat" in params:
        answer = response_format_of(params["responseFormat"])
        if answer is None or (answer.kind == "json_schema" and answer.schema is None):
            build.drop("params.responseFormat")
        else:
            text["format"] = _text_format(answer)
    if params.get("reasoning_effort") is not None:
        body["reasoning"] = {"effort": params.pop("reasoning_effort")}
    if params.get("verbosity") is not None:
        text["verbosity"] = params.pop("verbosity")


def _text_format(answer: ResponseFormat) -> JsonObject:
    if answer.kind != "json_schema":
        return {"type": answer.kind}
    text: JsonObject = {"type": "json_schema", "name": answer.name or SCHEMA_NAME, "schema": answer.schema}
    if answer.strict is not None:
        text["strict"] = answer.strict
    return text
