"""OpenAI Responses API requests read into a neutral ``model_input``: pure functions.

* ``instructions`` and the texts of the leading ``system`` / ``developer`` messages of ``input``,
  joined with a blank line, are ``systemPrompt``.
* ``input`` as a string is one user message. As a list of items: a message keeps string content as a
  string; list content becomes parts (``input_text`` / ``output_text`` -> ``{type: text, text}``,
  ``input_image`` -> ``{type: image, url, detail?}`` or ``{type: image, fileId, detail?}``, any other
  part kept as sent).
* An assistant turn is the items the model produced that follow each other: assistant messages,
  ``function_call`` items, ``reasoning`` items and hosted tool calls (items that are not
  conversation, such as ``item_reference``, do not break it). It is canonicalized to the shape replay
  sends back, the order of every provider's history: a ``{type: reasoning, summary, text?,
  encryptedContent?}`` part per reasoning item (its summary texts, its ``reasoning_text`` content
  joined, its ``encrypted_content``), a ``{type: hosted_tool, toolName, toolInput?, result?,
  status?}`` part per hosted call (``items.py``'s table), the text of the messages joined into one
  text part, their refusal parts joined into one ``{type: refusal, refusal}`` part, then a
  ``tool_use`` part per call (``call_id`` -> ``call-N``, ``arguments`` JSON-parsed). A turn that is a
  single message with string content stays a string. Item ids are dropped, and statuses but a hosted
  call's.
* ``function_call_output`` items that follow each other become one user turn of ``tool_result``
  parts, ``output`` as sent; the tool name comes from the call earlier in the same request, else the
  item's own ``name``.
* ``item_reference`` items are dropped: one names an item stored on the server by its id, and in
  replay that is an id the replay made up (as for ``previous_response_id``), while what it names is
  an item of the run's earlier steps. Calls the program itself answers other than ``function_call``
  (``custom_tool_call``, ``computer_call``, ``local_shell_call``, ``shell_call``, ``apply_patch_call``)
  and the other items (``mcp_list_tools``, ``compaction``...) are dropped as well, as ``model_output``
  drops them.
* ``tools`` -> ``{name, description, inputSchema?}`` (a built-in tool is named by its type). Every
  other field is classified by ``RESPONSES_FIELDS`` (``fields.py``): ``max_output_tokens`` ->
  ``params.maxTokens``, ``temperature``, ``top_p`` -> ``topP``, ``tool_choice`` -> ``toolChoice``,
  ``text.format`` -> ``responseFormat`` (``text``'s other keys, such as ``verbosity``, under
  ``params.text``); the transport-only fields (each with its reason in the table) are not compared;
  everything else (``reasoning``, ``parallel_tool_calls``... and any field the table does not know)
  is under ``params`` with its own name. With ``previous_response_id`` the history lives on the
  server: the messages are only what this request sent.
"""

from __future__ import annotations

from typing import Any

from otel_blackbox._types import JsonObject
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.neutral_parts import (
    add_tool_result,
    image_part,
    neutral_tool,
    tool_input,
    tool_result,
    tool_use,
)
from otel_blackbox._wire.openai_responses.fields import RESPONSES_FIELDS as REQUEST_FIELDS
from otel_blackbox._wire.openai_responses.items import (
    TEXT_PARTS,
    hosted_of,
    is_hosted,
    reasoning_of,
    refusal_of,
    text_of,
)

__all__ = ["model_input"]

_SYSTEM_ROLES = ("system", "developer")


def model_input(request: JsonObject, ids: CallIds) -> JsonObject:
    """A request body as ``model_input`` (``Provider.model_input``)."""
    system, items = _split_system(request)
    payload: JsonObject = {
        "messages": _messages(items, ids),
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


def _items(request: JsonObject) -> list[JsonObject]:
    given = request.get("input")
    if isinstance(given, str):
        return [{"type": "message", "role": "user", "content": given}]
    return [i for i in given or [] if isinstance(i, dict)]


def _is_message(item: JsonObject) -> bool:
    return item.get("type", "message") == "message" and "role" in item


def _split_system(request: JsonObject) -> tuple[str | None, list[JsonObject]]:
    items = _items(request)
    texts = [request["instructions"]] if isinstance(request.get("instructions"), str) else []
    leading = 0
    while leading < len(items) and _is_message(items[leading]) and items[leading]["role"] in _SYSTEM_ROLES:
        texts.append(text_of(items[leading].get("content")))
        leading += 1
    return ("\n\n".join(texts) if texts else None), items[leading:]


def _is_assistant(item: JsonObject) -> bool:
    """An item the model produced: it belongs to an assistant turn."""
    if item.get("type") in ("function_call", "reasoning") or is_hosted(item):
        return True
    return _is_message(item) and item["role"] == "assistant"


def _messages(items: list[JsonObject], ids: CallIds) -> list[JsonObject]:
    names: dict[str, str] = {}  # neutral id -> tool name, from the calls seen so far
    out: list[JsonObject] = []
    turn: list[JsonObject] = []  # the assistant turn being gathered
    for item in items:
        if _is_assistant(item):
            turn.append(item)
            continue
        if not _is_message(item) and item.get("type") != "function_call_output":
            continue  # not conversation: it neither shows nor ends a turn
        if turn:
            out.append(_assistant(turn, ids, names))
            turn = []
        if _is_message(item):
            out.append({"role": item["role"], "content": _content(item.get("content"))})
        else:
            call_id = ids.neutral(str(item.get("call_id", "")))
            name = names.get(call_id) or str(item.get("name") or "unknown")
            add_tool_result(out, tool_result(call_id, name, item.get("output")))
    if turn:
        out.append(_assistant(turn, ids, names))
    return out


def _assistant(turn: list[JsonObject], ids: CallIds, names: dict[str, str]) -> JsonObject:
    """One assistant turn in the neutral order: reasoning, hosted calls, text, refusal, tool uses."""
    messages = [i for i in turn if _is_message(i)]
    if len(turn) == 1 and messages and isinstance(messages[0].get("content"), str):
        return {"role": "assistant", "content": messages[0]["content"]}
    parts: list[JsonObject] = [
        {"type": "reasoning", **reasoning_of(i).to_json()} for i in turn if i.get("type") == "reasoning"
    ]
    parts += [{"type": "hosted_tool", **hosted_of(i).to_json()} for i in turn if is_hosted(i)]
    text = "".join(text_of(m.get("content")) for m in messages)
    if text:
        parts.append({"type": "text", "text": text})
    refusals = [r for r in (refusal_of(m.get("content")) for m in messages) if r is not None]
    if refusals:
        parts.append({"type": "refusal", "refusal": "".join(refusals)})
    for call in (i for i in turn if i.get("type") == "function_call"):
        call_id = ids.neutral(str(call.get("call_id", "")))
        names[call_id] = str(call.get("name", ""))
        parts.append(tool_use(call_id, names[call_id], tool_input(call.get("arguments", ""))))
    return {"role": "assistant", "content": parts}


def _content(content: Any) -> Any:
    if content is None:
        return ""
    if not isinstance(content, list):
        return content
    return [_part(p) for p in content if isinstance(p, dict)]


def _part(part: JsonObject) -> JsonObject:
    kind = part.get("type")
    if kind in TEXT_PARTS:
        return {"type": "text", "text": part.get("text", "")}
    if kind == "input_image" and part.get("image_url") is not None:
        return image_part(part["image_url"], part.get("detail"))
    if kind == "input_image" and part.get("file_id") is not None:
        image: JsonObject = {"type": "image", "fileId": part["file_id"]}
        return {**image, "detail": part["detail"]} if part.get("detail") is not None else image
    return dict(part)
