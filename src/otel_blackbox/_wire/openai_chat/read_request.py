"""OpenAI Chat Completions requests read into a neutral ``model_input``: pure functions.

* The leading ``system`` / ``developer`` messages are ``systemPrompt``: their texts (a string, or the
  text parts of a list) joined with a blank line. A later one stays a message.
* A message keeps string content as a string (``None`` becomes ``""``). List content becomes parts:
  ``text`` -> ``{type: text, text}``; ``image_url`` -> ``{type: image, url, detail?}`` (the same
  neutral image part as the Responses API's ``input_image``); any other part (``input_audio``,
  ``file``, ...) is kept as sent.
* An assistant turn with ``tool_calls``, list content, a ``refusal``, ``annotations`` or a legacy
  ``function_call`` is canonicalized to the shape replay sends back, in the format's order: a
  ``{type: hosted_tool, toolName: web_search, result: [annotations as sent]}`` part when it carries
  web-search annotations, its text joined into one text part (none when empty), its refusal (the
  message's ``refusal`` and its ``refusal`` parts, joined) as ``{type: refusal, refusal}``, then
  ``{type: tool_use, toolCallId, toolName, toolInput}`` per function call, the arguments JSON-parsed
  (the raw text when not JSON). A plain assistant message with string content stays a string.
* Consecutive ``tool`` messages become one user turn of ``{type: tool_result, toolCallId, toolName,
  result}`` parts, the content as sent (a string stays a string); the tool name comes from the
  assistant call earlier in the same request. A legacy ``function`` message is a ``tool_result`` too,
  answering the latest ``function_call`` of its name; legacy calls carry no id, so they are known by
  name and arguments (``CallIds.in_history``).
* ``tools`` -> ``{name, description, inputSchema?}``. Every other field is in ``CHAT_FIELDS``
  (``fields.py``): ``max_tokens`` / ``max_completion_tokens``, ``temperature``, ``top_p``,
  ``tool_choice``, ``response_format``, ``stop`` -> ``params`` under their neutral names; streaming,
  identifiers, caching, billing and log-probability fields are not compared (each with its reason
  in the table); every other field, known (``seed``, ``n``, ``reasoning_effort``...) or not, goes
  under ``params`` with its own name.
* Not kept, as before: a message's ``name``, an assistant message's ``audio`` (a reference to an
  earlier spoken answer), and ``custom`` tool calls (only function calls are read, here and in
  responses).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from otel_blackbox._cassette.output import Hosted
from otel_blackbox._types import JsonObject
from otel_blackbox._wire.call_ids import CallIds, call_signature
from otel_blackbox._wire.neutral_parts import (
    add_tool_result,
    image_part,
    neutral_tool,
    tool_input,
    tool_result,
    tool_use,
)
from otel_blackbox._wire.openai_chat.fields import CHAT_FIELDS as REQUEST_FIELDS
from otel_blackbox._wire.openai_chat.message import LEGACY, WEB_SEARCH, texts_and_refusal

__all__ = ["model_input", "text_of"]

_SYSTEM_ROLES = ("system", "developer")


def model_input(request: JsonObject, ids: CallIds) -> JsonObject:
    """A request body as ``model_input`` (``Provider.model_input``)."""
    system, rest = _split_system([m for m in request.get("messages") or [] if isinstance(m, dict)])
    payload: JsonObject = {
        "messages": _messages(rest, ids),
        "tools": [neutral_tool(t) for t in request.get("tools") or [] if isinstance(t, dict)],
    }
    if system is not None:
        payload["systemPrompt"] = system
    if request.get("model") is not None:
        payload["model"] = request["model"]
    params = REQUEST_FIELDS.params(request)
    if params:
        payload["params"] = params
    return payload


def _split_system(messages: list[JsonObject]) -> tuple[str | None, list[JsonObject]]:
    leading = 0
    while leading < len(messages) and messages[leading].get("role") in _SYSTEM_ROLES:
        leading += 1
    if not leading:
        return None, messages
    return "\n\n".join(text_of(m.get("content")) for m in messages[:leading]), messages[leading:]


def text_of(content: Any) -> str:
    """A message's text: the string itself, or its text (or refusal) parts joined."""
    if isinstance(content, str):
        return content
    texts = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and part.get("type") in ("text", "input_text", "output_text"):
            texts.append(str(part.get("text", "")))
        elif isinstance(part, dict) and part.get("type") == "refusal":
            texts.append(str(part.get("refusal", "")))
    return "".join(texts)


@dataclass
class _History:
    """What the messages of one request said so far about its calls, to name their results."""

    ids: CallIds
    names: dict[str, str] = field(default_factory=dict)  # neutral id -> tool name
    functions: dict[str, str] = field(default_factory=dict)  # legacy function name -> its latest call
    legacy: Iterator[str] = field(default_factory=lambda: iter(()))  # the legacy calls' ids, in order


def _messages(messages: list[JsonObject], ids: CallIds) -> list[JsonObject]:
    # Legacy calls carry no id: the request's are matched all at once, by name and arguments.
    history = _History(ids, legacy=iter(ids.in_history([(s, None) for s in _legacy_signatures(messages)])))
    out: list[JsonObject] = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            call_id = ids.neutral(str(message.get("tool_call_id", "")))
            name = history.names.get(call_id) or str(message.get("name") or "unknown")
            add_tool_result(out, tool_result(call_id, name, message.get("content")))
        elif role == "function":
            name = str(message.get("name") or "")
            call_id = history.functions.get(name) or ids.neutral(f"function:{name}")
            add_tool_result(out, tool_result(call_id, name, message.get("content")))
        elif role == "assistant" and _is_structured(message):
            out.append(_assistant(message, history))
        else:
            out.append({"role": role, "content": _content(message.get("content"))})
    return out


def _legacy_call(message: JsonObject) -> tuple[str, Any] | None:
    """An assistant message's legacy ``function_call``, as (name, parsed arguments)."""
    function = message.get(LEGACY) if message.get("role") == "assistant" else None
    if not isinstance(function, dict):
        return None
    return str(function.get("name", "")), tool_input(function.get("arguments", ""))


def _legacy_signatures(messages: list[JsonObject]) -> list[str]:
    calls = [_legacy_call(m) for m in messages]
    return [call_signature(name, arguments) for name, arguments in filter(None, calls)]


def _is_structured(message: JsonObject) -> bool:
    """An assistant message that says more than a string: it becomes parts."""
    return bool(
        message.get("tool_calls")
        or isinstance(message.get("content"), list)
        or message.get("refusal")
        or message.get("annotations")
        or isinstance(message.get(LEGACY), dict)
    )


def _assistant(message: JsonObject, history: _History) -> JsonObject:
    text, refusal = texts_and_refusal(message.get("content"))
    if message.get("refusal"):
        refusal += str(message["refusal"])
    parts: list[JsonObject] = []
    annotations = message.get("annotations")
    if isinstance(annotations, list) and annotations:
        parts.append({"type": "hosted_tool", **Hosted(WEB_SEARCH, result=annotations).to_json()})
    if text:
        parts.append({"type": "text", "text": text})
    if refusal:
        parts.append(refusal_part(refusal))
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            call_id = history.ids.neutral(str(call.get("id", "")))
            history.names[call_id] = str(function.get("name", ""))
            parts.append(tool_use(call_id, history.names[call_id], tool_input(function.get("arguments", ""))))
    legacy = _legacy_call(message)
    if legacy is not None:
        name, arguments = legacy
        call_id = history.functions[name] = next(history.legacy)
        history.names[call_id] = name
        parts.append(tool_use(call_id, name, arguments))
    return {"role": "assistant", "content": parts}


def _content(content: Any) -> Any:
    if content is None:
        return ""
    if not isinstance(content, list):
        return content
    return [_part(p) for p in content if isinstance(p, dict)]


def _part(part: JsonObject) -> JsonObject:
    kind = part.get("type")
    if kind == "text":
        return {"type": "text", "text": part.get("text", "")}
    image = part.get("image_url")
    if kind == "image_url" and isinstance(image, dict):
        return image_part(image.get("url"), image.get("detail"))
    return dict(part)


def refusal_part(refusal: str) -> JsonObject:
    """The neutral part of a refusal the program sends back in an assistant turn."""
    return {"type": "refusal", "refusal": refusal}
