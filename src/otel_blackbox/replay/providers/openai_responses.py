"""OpenAI Responses (``POST .../responses``): wire <-> neutral v2 payloads, pure functions.

Requests (``model_input``):

* ``instructions`` and the texts of the leading ``system`` / ``developer`` messages of ``input``,
  joined with a blank line, are ``systemPrompt``.
* ``input`` as a string is one user message. As a list of items: a message keeps string content as a
  string; list content becomes parts (``input_text`` / ``output_text`` -> ``{type: text, text}``,
  ``input_image`` -> ``{type: image, url, detail?}`` or ``{type: image, fileId, detail?}``, any other
  part kept as sent).
* An assistant turn, the assistant messages and ``function_call`` items that follow each other
  (items between them that are not conversation, such as ``reasoning``, do not break it), is
  canonicalized to the shape replay sends back: its text joined into one leading text part, then a
  ``tool_use`` part per call (``call_id`` -> ``call-N``, ``arguments`` JSON-parsed). A turn that is a
  single message with string content stays a string.
* ``function_call_output`` items that follow each other become one user turn of ``tool_result``
  parts, ``output`` as sent; the tool name comes from the call earlier in the same request, else the
  item's own ``name``.
* Items that are not conversation (``reasoning``, ``item_reference``, built-in tool calls) are
  dropped, as ``model_output`` drops them; so are item ids and statuses, ``previous_response_id``,
  ``store`` and ``include``. With ``previous_response_id`` the history lives on the server: the
  messages are only what this request sent.
* ``tools`` -> ``{name, description, inputSchema?}`` (a built-in tool is named by its type);
  ``max_output_tokens``, ``temperature``, ``top_p``, ``tool_choice``, ``text.format`` -> ``params``.

A fork's rewrite (``replace_tool_result``) replaces the ``output`` of the ``function_call_output``
items whose ``call_id`` is the id: a string stays a string, a list of parts becomes one
``input_text`` part. A string ``input`` holds no results.

Responses (``model_output``), a JSON ``response`` or its event stream: the text of the ``message``
items (``output_text``, or a ``refusal``) joined, and the ``function_call`` items as calls with
``call-N`` ids. A stream is read as the SDK reads it: the ``response.completed`` output, or the items
rebuilt from ``output_item`` events and deltas when it has none. A failed response, an ``error``
event or a stream cut short raises ``ValueError``.

Synthesized responses (``wire_response``) use ids derived from the output (``resp_blackbox_...``,
``msg_blackbox_...``, ``fc_blackbox_...``), the neutral ids as ``call_id``, ``created_at`` 0 and zero
usage; a stream has every event the SDK's stream helper checks, in order.
"""

from __future__ import annotations

import copy
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
from .openai_chat import (
    JSON_HEADERS,
    SSE_HEADERS,
    Turn,
    add_tool_result,
    digest,
    dumps,
    error_text,
    image_part,
    neutral_tool,
    objects_of,
    pieces,
    sse_data,
    text_of,
    tool_input,
    tool_result,
    tool_use,
    wire_turn,
)

__all__ = ["OpenAIResponses"]

_SYSTEM_ROLES = ("system", "developer")
_PARAMS = {
    "max_output_tokens": "maxTokens",
    "temperature": "temperature",
    "top_p": "topP",
    "tool_choice": "toolChoice",
}
_TEXT_PARTS = ("input_text", "output_text", "text")
# The SDK's ResponseUsage requires every one of these fields; replay has no token counts to give.
_ZERO_USAGE = {
    "input_tokens": 0,
    "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
    "output_tokens": 0,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 0,
}


class OpenAIResponses:
    """The OpenAI Responses API, JSON and streamed."""

    name = "openai-responses"

    def handles(self, method: str, path: str) -> bool:
        return method.upper() == "POST" and path.split("?", 1)[0].rstrip("/").endswith("/responses")

    @wire_errors("an OpenAI Responses API request")
    def model_input(self, request: JsonObject, ids: CallIds) -> JsonObject:
        system, items = _split_system(request)
        payload: JsonObject = {
            "messages": _messages(items, ids),
            "tools": [neutral_tool(t) for t in request.get("tools") or [] if isinstance(t, dict)],
        }
        if system is not None:
            payload["systemPrompt"] = system
        if request.get("model") is not None:
            payload["model"] = request["model"]
        params = _params(request)
        if params:
            payload["params"] = params
        return payload

    def is_streaming(self, request: JsonObject) -> bool:
        return bool(request.get("stream"))

    @wire_errors("an OpenAI Responses API response")
    def model_output(self, body: bytes, *, streamed: bool, ids: CallIds) -> JsonObject:
        items = _stream_items(body) if streamed else _response_items(body)
        return _turn(items).neutral(ids)

    @wire_errors("a model_output to send as an OpenAI Responses API response")
    def wire_response(self, output: JsonObject, request: JsonObject) -> WireResponse:
        response = _response(output, request)
        if not self.is_streaming(request):
            return WireResponse(200, list(JSON_HEADERS), dumps(response).encode())
        events = [
            f"event: {kind}\ndata: {dumps({'type': kind, 'sequence_number': seq, **data})}\n\n"
            for seq, (kind, data) in enumerate(_events(response))
        ]
        return WireResponse(200, list(SSE_HEADERS), "".join(events).encode())

    @wire_errors("an OpenAI Responses API request")
    def replace_tool_result(self, request: JsonObject, tool_call_id: str, result: Any) -> JsonObject | None:
        def targets(body: JsonObject) -> list[JsonObject]:
            return [i for i in objects_of(body.get("input")) if _is_output_of(i, tool_call_id)]

        def rewrite(item: JsonObject) -> None:
            item["output"] = replaced_content(item.get("output"), result, "input_text")

        return rewritten(request, targets, rewrite)


# --- requests ---------------------------------------------------------------------------------


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


def _params(request: JsonObject) -> JsonObject:
    params = {_PARAMS[k]: v for k, v in request.items() if k in _PARAMS and v is not None}
    text = request.get("text")
    if isinstance(text, dict) and text.get("format") is not None:
        params["responseFormat"] = text["format"]
    return params


def _is_output_of(item: JsonObject, tool_call_id: str) -> bool:
    return item.get("type") == "function_call_output" and str(item.get("call_id", "")) == tool_call_id


def _is_assistant(item: JsonObject) -> bool:
    return item.get("type") == "function_call" or (_is_message(item) and item["role"] == "assistant")


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
    messages = [i for i in turn if _is_message(i)]
    calls = [i for i in turn if i.get("type") == "function_call"]
    if not calls and len(messages) == 1 and isinstance(messages[0].get("content"), str):
        return {"role": "assistant", "content": messages[0]["content"]}
    text = "".join(text_of(m.get("content")) for m in messages)
    parts: list[JsonObject] = [{"type": "text", "text": text}] if text else []
    for call in calls:
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
    if kind in _TEXT_PARTS:
        return {"type": "text", "text": part.get("text", "")}
    if kind == "input_image" and part.get("image_url") is not None:
        return image_part(part["image_url"], part.get("detail"))
    if kind == "input_image" and part.get("file_id") is not None:
        image: JsonObject = {"type": "image", "fileId": part["file_id"]}
        return {**image, "detail": part["detail"]} if part.get("detail") is not None else image
    return dict(part)


# --- responses --------------------------------------------------------------------------------


def _checked(response: Any) -> JsonObject:
    if not isinstance(response, dict):
        raise ValueError(f"not an OpenAI response: {error_text(response)}")
    if response.get("error") or response.get("status") == "failed":
        raise ValueError(f"the response failed: {error_text(response)}")
    return response


def _response_items(body: bytes) -> list[JsonObject]:
    response = _checked(json.loads(body))
    if response.get("object") != "response" or not isinstance(response.get("output"), list):
        raise ValueError(f"not an OpenAI response: {error_text(response)}")
    return [i for i in response["output"] if isinstance(i, dict)]


def _stream_items(body: bytes) -> list[JsonObject]:
    items: dict[int, JsonObject] = {}
    final: JsonObject | None = None
    for data in sse_data(body):
        if data.startswith("[DONE]"):
            break
        event = json.loads(data)
        kind = event.get("type") if isinstance(event, dict) else None
        if kind is None or kind in ("error", "response.failed"):
            raise ValueError(f"the stream reported an error: {_event_error(event)}")
        if kind in ("response.completed", "response.incomplete"):
            final = _checked(event.get("response"))
        elif kind in ("response.output_item.added", "response.output_item.done"):
            items[event["output_index"]] = copy.deepcopy(event["item"])  # the deltas change it
        elif kind in _DELTAS:
            if event.get("output_index") not in items:
                raise ValueError(f"an event for output item {event.get('output_index')} before the item")
            _DELTAS[kind](items[event["output_index"]], event)
    if final is None:
        raise ValueError("the stream ended before response.completed")
    # As the SDK does: the completed output, or the items the events built when it has none.
    output = final.get("output")
    if isinstance(output, list):
        return [i for i in output if isinstance(i, dict)]
    return [_joined(items[i]) for i in sorted(items)]


def _joined(item: JsonObject) -> JsonObject:
    join_pieces(item, "arguments")
    for part in item.get("content") or []:
        if isinstance(part, dict):
            join_pieces(part, "text")
    return item


def _event_error(event: Any) -> str:
    if isinstance(event, dict) and isinstance(event.get("response"), dict):
        return error_text(event["response"])
    return error_text(event)


def _part_added(item: JsonObject, event: JsonObject) -> None:
    item.setdefault("content", []).append(dict(event["part"]))


def _text_delta(item: JsonObject, event: JsonObject) -> None:
    add_piece(item["content"][event.get("content_index", 0)], "text", event.get("delta", ""))


def _arguments_delta(item: JsonObject, event: JsonObject) -> None:
    add_piece(item, "arguments", event.get("delta", ""))


def _arguments_done(item: JsonObject, event: JsonObject) -> None:
    item["arguments"] = event.get("arguments", item.get("arguments", ""))


# The events that fill in an item; the others (lifecycle, annotations, reasoning) change nothing the
# neutral output keeps.
_DELTAS = {
    "response.content_part.added": _part_added,
    "response.output_text.delta": _text_delta,
    "response.function_call_arguments.delta": _arguments_delta,
    "response.function_call_arguments.done": _arguments_done,
}


def _turn(items: list[JsonObject]) -> Turn:
    text = "".join(text_of(i.get("content")) for i in items if i.get("type") == "message")
    calls = [
        (str(i.get("call_id") or ""), str(i.get("name", "")), i.get("arguments", ""))
        for i in items
        if i.get("type") == "function_call"
    ]
    return Turn(text, calls)


# --- synthesized responses --------------------------------------------------------------------


def _output_items(output: JsonObject) -> list[JsonObject]:
    text, calls = wire_turn(output)
    tag = digest(output)
    items: list[JsonObject] = []
    if text or not calls:
        part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
        message = {"id": f"msg_blackbox_{tag}", "type": "message", "role": "assistant", "content": [part]}
        items.append({**message, "status": "completed"})
    for n, (call_id, name, arguments) in enumerate(calls):
        call = {"id": f"fc_blackbox_{tag}_{n}", "type": "function_call", "call_id": call_id, "name": name}
        items.append({**call, "arguments": arguments, "status": "completed"})
    return items


def _response(output: JsonObject, request: JsonObject) -> JsonObject:
    """The whole response; what it echoes of the request (tools, tool_choice...) the SDK requires."""
    instructions = request.get("instructions")
    return {
        "id": f"resp_blackbox_{digest(output)}",
        "object": "response",
        "created_at": 0,
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "instructions": instructions if isinstance(instructions, str) else None,
        "model": str(request.get("model") or ""),
        "output": _output_items(output),
        "parallel_tool_calls": request.get("parallel_tool_calls") is not False,
        "tool_choice": request.get("tool_choice") or "auto",
        "tools": list(request.get("tools") or []),
        "temperature": request.get("temperature"),
        "top_p": request.get("top_p"),
        "max_output_tokens": request.get("max_output_tokens"),
        "usage": copy.deepcopy(_ZERO_USAGE),
    }


def _events(response: JsonObject) -> Iterator[tuple[str, JsonObject]]:
    """The stream the API would send; the SDK's helper insists on response.created first, each
    item added before its deltas and done after them, and one response id throughout."""
    started = {**response, "status": "in_progress", "output": [], "usage": None}
    yield "response.created", {"response": started}
    yield "response.in_progress", {"response": started}
    for index, item in enumerate(response["output"]):
        if item["type"] == "message":
            yield from _message_events(index, item)
        else:
            yield from _call_events(index, item)
    yield "response.completed", {"response": response}


def _message_events(index: int, item: JsonObject) -> Iterator[tuple[str, JsonObject]]:
    where = {"item_id": item["id"], "output_index": index, "content_index": 0}
    part = item["content"][0]
    added = {**item, "status": "in_progress", "content": []}
    yield "response.output_item.added", {"output_index": index, "item": added}
    # The helper appends text deltas to a part that content_part.added must have opened.
    yield "response.content_part.added", {**where, "part": {**part, "text": ""}}
    for piece in pieces(part["text"]):
        yield "response.output_text.delta", {**where, "delta": piece, "logprobs": []}
    yield "response.output_text.done", {**where, "text": part["text"], "logprobs": []}
    yield "response.content_part.done", {**where, "part": part}
    yield "response.output_item.done", {"output_index": index, "item": item}


def _call_events(index: int, item: JsonObject) -> Iterator[tuple[str, JsonObject]]:
    where = {"item_id": item["id"], "output_index": index}
    added = {**item, "status": "in_progress", "arguments": ""}
    yield "response.output_item.added", {"output_index": index, "item": added}
    for piece in pieces(item["arguments"]):
        yield "response.function_call_arguments.delta", {**where, "delta": piece}
    yield "response.function_call_arguments.done", {**where, "arguments": item["arguments"]}
    yield "response.output_item.done", {"output_index": index, "item": item}
