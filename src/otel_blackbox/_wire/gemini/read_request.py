"""Gemini ``generateContent`` requests read into a neutral ``model_input``: pure functions. The model
is the one the URL names (the translation's ``model``). Field names are read in both spellings the
API's JSON takes (``generationConfig``, ``generation_config``).

* ``contents`` -> ``messages``, and the ids of calls and results: see ``contents.py``. A model turn
  the program sends back keeps its thoughts with their signatures, the signatures of its calls and
  text, and its code execution and server-side tool parts, in the canonical order.
* ``systemInstruction``'s text parts, joined with a blank line, are ``systemPrompt``.
* ``tools``: ``functionDeclarations`` -> ``{name, description, inputSchema}`` (``parameters`` or
  ``parametersJsonSchema``); a built-in tool (``googleSearch``...) is named by its field.
* ``generationConfig`` -> ``params``: ``maxOutputTokens`` -> ``maxTokens``, ``temperature``, ``topP``,
  ``stopSequences`` -> ``stop``, ``responseMimeType`` / ``responseSchema`` / ``responseJsonSchema`` ->
  ``responseFormat`` (an object of those fields), every other setting under its own name
  (``candidateCount``, ``thinkingConfig``, ``seed``, a setting nobody knows yet...) but
  ``responseLogprobs`` / ``logprobs``; ``toolConfig`` -> ``toolChoice``. The other top-level fields
  are sorted by ``GEMINI_FIELDS`` (``fields.py``): ``safetySettings``, ``cachedContent`` and any
  field it does not know under their own names; ``labels``, ``serviceTier``, ``store`` and
  ``continuationToken`` are transport, not kept.
"""

from __future__ import annotations

from typing import Any

from otel_blackbox._types import JsonObject
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.gemini.contents import fields, objects, read_contents, texts
from otel_blackbox._wire.gemini.fields import GEMINI_FIELDS as REQUEST_FIELDS
from otel_blackbox._wire.gemini.fields import GENERATION_PARAMS
from otel_blackbox._wire.protocol import tool_settings

__all__ = ["model_input"]

_FORMAT = ("responseMimeType", "responseSchema", "responseJsonSchema")
# How log-probabilities are reported, not what is asked; "logprobs" is also a key verify refuses.
_NOT_KEPT = ("responseLogprobs", "logprobs")


def model_input(request: JsonObject, ids: CallIds, model: str | None) -> JsonObject:
    """A request body as ``model_input``, ``model`` the one its URL names (``Provider.model_input``)."""
    wire = fields(request, "the request")
    messages, _ = read_contents(wire.get("contents"), ids)
    payload: JsonObject = {"messages": messages, "tools": _tools(wire.get("tools"))}
    if wire.get("systemInstruction") is not None:
        payload["systemPrompt"] = _system(wire["systemInstruction"])
    if model is not None:
        payload["model"] = model
    params = _params(wire)
    if params:
        payload["params"] = params
    return payload


def _system(value: Any) -> str:
    if isinstance(value, str):  # the SDK sends a Content; a string is what a user means
        return value
    return "\n\n".join(texts(objects(fields(value, "systemInstruction").get("parts"), "its parts")))


def _tools(value: Any) -> list[JsonObject]:
    tools: list[JsonObject] = []
    for tool in objects(value, "tools"):
        for key, spec in fields(tool, "a tool").items():
            if key != "functionDeclarations":  # a built-in tool: googleSearch..., its options its settings
                options = spec if isinstance(spec, dict) else {}
                tools.append(tool_settings({"name": key, "description": ""}, options, ()))
                continue
            for declaration in objects(spec, "functionDeclarations"):
                d = fields(declaration, "a function declaration")
                neutral: JsonObject = {
                    "name": str(d.get("name", "")),
                    "description": d.get("description") or "",
                }
                schema = d.get("parameters", d.get("parametersJsonSchema"))
                if schema is not None:
                    neutral["inputSchema"] = schema
                taken = ("name", "description", "parameters", "parametersJsonSchema")
                tools.append(tool_settings(neutral, d, taken))  # behavior, responseJsonSchema...
    return tools


def _params(request: JsonObject) -> JsonObject:
    params: JsonObject = {}
    response_format: JsonObject = {}
    config = request.get("generationConfig")
    for key, value in (fields(config, "generationConfig") if config is not None else {}).items():
        if value is None or key in _NOT_KEPT:
            continue
        if key in _FORMAT:
            response_format[key] = value
        else:
            params[GENERATION_PARAMS.get(key, key)] = value
    if response_format:
        params["responseFormat"] = response_format
    if request.get("toolConfig") is not None:
        params["toolChoice"] = request["toolConfig"]
    params.update(REQUEST_FIELDS.params(request))  # safetySettings, cachedContent, a field nobody knows
    return params
