"""OpenAI Responses (``POST .../responses``): wire <-> neutral v2 payloads, pure functions.

Requests (``model_input``):

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
  status?}`` part per hosted call (the table below), the text of the messages joined into one text
  part, their refusal parts joined into one ``{type: refusal, refusal}`` part, then a ``tool_use``
  part per call (``call_id`` -> ``call-N``, ``arguments`` JSON-parsed). A turn that is a single
  message with string content stays a string. Item ids are dropped, and statuses but a hosted call's.
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
  other field is classified by ``REQUEST_FIELDS``: ``max_output_tokens`` -> ``params.maxTokens``,
  ``temperature``, ``top_p`` -> ``topP``, ``tool_choice`` -> ``toolChoice``, ``text.format`` ->
  ``responseFormat`` (``text``'s other keys, such as ``verbosity``, under ``params.text``); the
  transport-only fields (each with its reason in the table) are not compared; everything else
  (``reasoning``, ``parallel_tool_calls``... and any field the table does not know) is under
  ``params`` with its own name. With ``previous_response_id`` the history lives on the server: the
  messages are only what this request sent.

A fork's rewrite (``replace_tool_result``) replaces the ``output`` of the ``function_call_output``
items whose ``call_id`` is the id: a string stays a string, a list of parts becomes one
``input_text`` part. A string ``input`` holds no results.

Responses (``model_output``), a JSON ``response`` or its event stream: the ``output_text`` of the
``message`` items joined, and the ``function_call`` items as calls with ``call-N`` ids; besides them
(``cassette/output.py``), a ``status: incomplete`` response's ``incomplete_details.reason`` as
``stopReason`` (``max_output_tokens`` -> ``max_tokens``, ``content_filter``, any other reason as
sent, ``incomplete`` when it names none), the messages' refusal parts joined as ``refusal``, each
``reasoning`` item as a ``reasoning`` entry, each hosted tool call as a ``hostedTools`` entry (the
table below), and, when the items are not in the canonical order or the text came in several pieces,
``sequence`` and ``textParts``: each non-empty output_text part of each message is one text piece (a
message of only a refusal is no part), each ``reasoning``, hosted call and ``function_call`` one part:

* ``web_search_call`` -> ``toolName: web_search``, ``toolInput``: its ``action``;
* ``file_search_call`` -> ``file_search``, ``toolInput``: its ``queries``, ``result``: its ``results``;
* ``code_interpreter_call`` -> ``code_interpreter``, ``toolInput``: ``{code?, container_id}``,
  ``result``: its ``outputs``;
* any other ``*_call`` (``image_generation_call``, ``mcp_call``...) -> its type less ``_call``,
  ``toolInput``: every field but ``id``, ``type`` and ``status``, nulls left out.

A reasoning entry always has ``summary`` (``[]`` when the item's is empty); its ``text`` is there
when the item has ``reasoning_text`` content. ``status`` is the item's own; a hosted call is a
``*_call`` item that is not one the program answers (``function_call`` and the others listed under
Requests, or a ``tool_search_call`` with ``execution: client``). The Responses API has no ``n``
choices. A stream is read as the SDK reads it: the ``response.completed`` (or
``response.incomplete``) output, or the items rebuilt from ``output_item`` events and deltas when it
has none. Dropped: ids, usage, timestamps, the served model's name, ``output_text`` annotations (web
search citations) and logprobs, a message's ``phase``. ``usage`` reads the token counts apart (a
stream's from its final response), as ``tokenUsage``: ``input_tokens`` (cached included),
``output_tokens``, ``input_tokens_details.cached_tokens`` / ``cache_write_tokens``. A failed
response, an ``error`` event or a stream cut short raises ``ValueError``.

Synthesized responses (``wire_response``) list the items in the output's ``sequence``, else the
neutral order (reasoning, hosted calls, the message, function calls). Text pieces that follow each
other are the ``output_text`` parts of one message (two adjacent messages come back as one message of
two parts); the refusal is a part of the last message; with no text, a message (for a refusal, or
when there is nothing else) goes before the calls. Ids are derived from the output:
``resp_blackbox_<digest>``, ``rs_blackbox_<digest>_<n>`` for the n-th reasoning entry, ``ws_`` /
``fs_`` / ``ci_`` / ``ig_`` / ``mcp_`` (else ``htc_``) ``blackbox_<digest>_<n>`` for the n-th hosted
call, ``msg_blackbox_<digest>`` (``_<n>`` for the n-th message after the first), ``fc_blackbox_...``. They
carry the neutral ids as ``call_id``, ``created_at`` 0 and zero usage, and echo the request's
settings the API echoes (tools, tool_choice, reasoning, text...). A ``stopReason`` makes the response
``incomplete`` with that ``incomplete_details.reason`` (``max_tokens`` -> ``max_output_tokens``;
``incomplete`` -> no details; ``refusal`` and ``stop_sequence``, which this API does not have, leave
it completed), and a trailing message ``incomplete``. A message is sent when there is text or a
refusal, or nothing else to send. A hosted tool named like a call the program runs (``function``...)
is refused. A stream has every event the SDK's stream helper checks, in order: the reasoning text and
summary parts and their deltas, each hosted call's own lifecycle events
(``web_search_call.searching``, ``code_interpreter_call_code.delta``...), refusal deltas, and
``response.incomplete`` in place of ``response.completed`` for an incomplete response.

Neutral -> wire (``wire_request``), the inverse of ``model_input``: responses_requests.py
"""

from __future__ import annotations

import copy
import json
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
from otel_blackbox._wire.neutral_parts import (
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
    sse_data,
    tool_input,
    tool_result,
    tool_use,
    wire_turn,
)
from otel_blackbox._wire.openai_responses.events import events
from otel_blackbox._wire.openai_responses.items import HOSTED_INPUT, HOSTED_RESULT, PROGRAM_CALLS, hosted_item
from otel_blackbox._wire.openai_responses.requests import responses_request
from otel_blackbox._wire.protocol import (
    CallIds,
    JsonObject,
    WireRequest,
    WireResponse,
    add_piece,
    join_pieces,
    replaced_content,
    rewritten,
    wire_errors,
)
from otel_blackbox._wire.request_fields import RESPONSES_FIELDS

__all__ = ["REQUEST_FIELDS", "OpenAIResponses"]

# The table lives on the analysis side: a cassette built from spans reads recorded settings with it.
REQUEST_FIELDS = RESPONSES_FIELDS

_SYSTEM_ROLES = ("system", "developer")
_TEXT_PARTS = ("input_text", "output_text", "text")
_NOT_INPUT = ("id", "type", "status")
_ID_PREFIXES = {
    "web_search_call": "ws",
    "file_search_call": "fs",
    "code_interpreter_call": "ci",
    "image_generation_call": "ig",
    "mcp_call": "mcp",
}
# incomplete_details.reason <-> the neutral stopReason; any other reason is kept as sent.
_STOP_REASONS = {"max_output_tokens": "max_tokens", "content_filter": "content_filter"}
_WIRE_REASONS = {neutral: wire for wire, neutral in _STOP_REASONS.items()}
_COMPLETE = ("refusal", "stop_sequence")  # neutral reasons this API has no incomplete reason for
_NO_REASON = "incomplete"  # an incomplete response whose details name no reason
# The request settings a response echoes (besides tools, tool_choice and the sampling settings).
_ECHOED = (
    "reasoning",
    "text",
    "truncation",
    "max_tool_calls",
    "top_logprobs",
    "previous_response_id",
    "metadata",
    "user",
    "safety_identifier",
    "prompt_cache_key",
)
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
        params = REQUEST_FIELDS.params(request)
        if params:
            payload["params"] = params
        return payload

    def is_streaming(self, request: JsonObject) -> bool:
        return bool(request.get("stream"))

    @wire_errors("an OpenAI Responses API response")
    def model_output(self, body: bytes, *, streamed: bool, ids: CallIds) -> JsonObject:
        response = _stream_response(body) if streamed else _json_response(body)
        items = [i for i in response["output"] if isinstance(i, dict)]
        return with_extras(_turn(items).neutral(ids), _extras(response, items))

    @wire_errors("an OpenAI Responses API response")
    def usage(self, body: bytes, *, streamed: bool) -> JsonObject | None:
        if not streamed:
            response = json.loads(body)
            return responses_usage(response.get("usage") if isinstance(response, dict) else None)
        for data in sse_data(body):  # the usage is the final response's
            event = json.loads(data) if not data.startswith("[DONE]") else None
            if isinstance(event, dict) and event.get("type") in ("response.completed", "response.incomplete"):
                final = event.get("response")
                return responses_usage(final.get("usage") if isinstance(final, dict) else None)
        return None

    @wire_errors("a model_output to send as an OpenAI Responses API response")
    def wire_response(self, output: JsonObject, request: JsonObject) -> WireResponse:
        output = without_usage(output)  # not behaviour: replay sends zero usage, ids as before
        response = _response(output, request)
        if not self.is_streaming(request):
            return WireResponse(200, list(JSON_HEADERS), dumps(response).encode())
        sent = [
            f"event: {kind}\ndata: {dumps({'type': kind, 'sequence_number': seq, **data})}\n\n"
            for seq, (kind, data) in enumerate(events(response))
        ]
        return WireResponse(200, list(SSE_HEADERS), "".join(sent).encode())

    @wire_errors("a model_input to send as an OpenAI Responses API request")
    def wire_request(self, model_input: JsonObject, *, stream: bool, native: bool) -> WireRequest:
        return responses_request(model_input, stream=stream, native=native)

    @wire_errors("an OpenAI Responses API request")
    def replace_tool_result(self, request: JsonObject, tool_call_id: str, result: Any) -> JsonObject | None:
        def targets(body: JsonObject) -> list[JsonObject]:
            return [i for i in objects_of(body.get("input")) if _is_output_of(i, tool_call_id)]

        def rewrite(item: JsonObject) -> None:
            item["output"] = replaced_content(item.get("output"), result, "input_text")

        return rewritten(request, targets, rewrite)


# --- items, both ways -------------------------------------------------------------------------


def _text_of(content: Any) -> str:
    """A message's text: the string itself, or its text parts joined (refusals are apart)."""
    if isinstance(content, str):
        return content
    return "".join(str(p.get("text", "")) for p in objects_of(content) if p.get("type") in _TEXT_PARTS)


def _refusal_of(content: Any) -> str | None:
    """A message's refusal parts joined; None when it has none."""
    refusals = [p for p in objects_of(content) if p.get("type") == "refusal"]
    return "".join(str(p.get("refusal", "")) for p in refusals) if refusals else None


def _is_hosted(item: JsonObject) -> bool:
    kind = item.get("type")
    if not isinstance(kind, str) or not kind.endswith("_call") or kind in PROGRAM_CALLS:
        return False
    return item.get("execution") != "client"  # a tool search the program runs itself


def _reasoning(item: JsonObject) -> Reasoning:
    """A reasoning item's summary texts, its reasoning_text content joined, its encrypted content."""
    summary = [str(p.get("text", "")) for p in objects_of(item.get("summary"))]
    content = objects_of(item.get("content"))
    encrypted = item.get("encrypted_content")
    return Reasoning(
        text="".join(str(p.get("text", "")) for p in content) if content else None,
        summary=summary,
        encrypted_content=encrypted if isinstance(encrypted, str) else None,
    )


def _hosted(item: JsonObject) -> Hosted:
    """A hosted tool call by the table of the module docstring."""
    kind = str(item["type"])
    name = kind.removesuffix("_call")
    status = item["status"] if isinstance(item.get("status"), str) else None
    fields = HOSTED_INPUT.get(kind)
    if fields is None:
        rest = {k: v for k, v in item.items() if k not in _NOT_INPUT and v is not None}
        return Hosted(name, tool_input=rest, status=status)
    if isinstance(fields, tuple):
        given: Any = {k: item[k] for k in fields if item.get(k) is not None}
    else:
        given = item.get(fields)
    result = item.get(HOSTED_RESULT[kind]) if kind in HOSTED_RESULT else None
    if result is None:
        return Hosted(name, tool_input=given, status=status)
    return Hosted(name, tool_input=given, result=result, status=status)


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
        texts.append(_text_of(items[leading].get("content")))
        leading += 1
    return ("\n\n".join(texts) if texts else None), items[leading:]


def _is_output_of(item: JsonObject, tool_call_id: str) -> bool:
    return item.get("type") == "function_call_output" and str(item.get("call_id", "")) == tool_call_id


def _is_assistant(item: JsonObject) -> bool:
    """An item the model produced: it belongs to an assistant turn."""
    if item.get("type") in ("function_call", "reasoning") or _is_hosted(item):
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
        {"type": "reasoning", **_reasoning(i).to_json()} for i in turn if i.get("type") == "reasoning"
    ]
    parts += [{"type": "hosted_tool", **_hosted(i).to_json()} for i in turn if _is_hosted(i)]
    text = "".join(_text_of(m.get("content")) for m in messages)
    if text:
        parts.append({"type": "text", "text": text})
    refusals = [r for r in (_refusal_of(m.get("content")) for m in messages) if r is not None]
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
    if kind in _TEXT_PARTS:
        return {"type": "text", "text": part.get("text", "")}
    if kind == "input_image" and part.get("image_url") is not None:
        return image_part(part["image_url"], part.get("detail"))
    if kind == "input_image" and part.get("file_id") is not None:
        image: JsonObject = {"type": "image", "fileId": part["file_id"]}
        return {**image, "detail": part["detail"]} if part.get("detail") is not None else image
    return dict(part)


# --- responses --------------------------------------------------------------------------------


def responses_usage(usage: Any) -> JsonObject | None:
    """The ``tokenUsage`` of a response's ``usage``: ``input_tokens`` (cached included),
    ``output_tokens`` (reasoning included), ``input_tokens_details.cached_tokens`` and
    ``cache_write_tokens``."""
    if not isinstance(usage, dict):
        return None
    details = usage.get("input_tokens_details")
    details = details if isinstance(details, dict) else {}
    return usage_json(
        count(usage.get("input_tokens")),
        count(usage.get("output_tokens")),
        count(details.get("cached_tokens")),
        count(details.get("cache_write_tokens")),
    )


def _checked(response: Any) -> JsonObject:
    if not isinstance(response, dict):
        raise ValueError(f"not an OpenAI response: {error_text(response)}")
    if response.get("error") or response.get("status") == "failed":
        raise ValueError(f"the response failed: {error_text(response)}")
    return response


def _json_response(body: bytes) -> JsonObject:
    response = _checked(json.loads(body))
    if response.get("object") != "response" or not isinstance(response.get("output"), list):
        raise ValueError(f"not an OpenAI response: {error_text(response)}")
    return response


def _stream_response(body: bytes) -> JsonObject:
    """The stream's final response, its output as the SDK takes it."""
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
            if kind == "response.incomplete":
                final.setdefault("status", "incomplete")
        elif kind in ("response.output_item.added", "response.output_item.done"):
            items[event["output_index"]] = copy.deepcopy(event["item"])  # the deltas change it
        elif kind in _DELTAS:
            if event.get("output_index") not in items:
                raise ValueError(f"an event for output item {event.get('output_index')} before the item")
            _DELTAS[kind](items[event["output_index"]], event)
    if final is None:
        raise ValueError("the stream ended before response.completed")
    # As the SDK does: the final output, or the items the events built when it has none.
    if isinstance(final.get("output"), list):
        return final
    return {**final, "output": [_joined(items[i]) for i in sorted(items)]}


def _joined(item: JsonObject) -> JsonObject:
    join_pieces(item, "arguments")
    join_pieces(item, "code")
    for part in objects_of(item.get("content")) + objects_of(item.get("summary")):
        join_pieces(part, "text")
        join_pieces(part, "refusal")
    return item


def _event_error(event: Any) -> str:
    if isinstance(event, dict) and isinstance(event.get("response"), dict):
        return error_text(event["response"])
    return error_text(event)


def _part_added(item: JsonObject, event: JsonObject) -> None:
    item.setdefault("content", []).append(dict(event["part"]))


def _summary_added(item: JsonObject, event: JsonObject) -> None:
    item.setdefault("summary", []).append(dict(event["part"]))


def _text_delta(item: JsonObject, event: JsonObject) -> None:
    add_piece(item["content"][event.get("content_index", 0)], "text", event.get("delta", ""))


def _refusal_delta(item: JsonObject, event: JsonObject) -> None:
    add_piece(item["content"][event.get("content_index", 0)], "refusal", event.get("delta", ""))


def _summary_delta(item: JsonObject, event: JsonObject) -> None:
    add_piece(item["summary"][event.get("summary_index", 0)], "text", event.get("delta", ""))


def _arguments_delta(item: JsonObject, event: JsonObject) -> None:
    add_piece(item, "arguments", event.get("delta", ""))


def _arguments_done(item: JsonObject, event: JsonObject) -> None:
    item["arguments"] = event.get("arguments", item.get("arguments", ""))


def _code_delta(item: JsonObject, event: JsonObject) -> None:
    add_piece(item, "code", event.get("delta", ""))


def _code_done(item: JsonObject, event: JsonObject) -> None:
    item["code"] = event.get("code", item.get("code", ""))


# The events that fill in an item; the others (lifecycle, annotations, a hosted call's progress)
# change nothing the neutral output keeps, and an item's output_item.done carries it whole anyway.
_DELTAS = {
    "response.content_part.added": _part_added,
    "response.output_text.delta": _text_delta,
    "response.refusal.delta": _refusal_delta,
    "response.reasoning_text.delta": _text_delta,
    "response.reasoning_summary_part.added": _summary_added,
    "response.reasoning_summary_text.delta": _summary_delta,
    "response.function_call_arguments.delta": _arguments_delta,
    "response.function_call_arguments.done": _arguments_done,
    "response.code_interpreter_call_code.delta": _code_delta,
    "response.code_interpreter_call_code.done": _code_done,
}


def _turn(items: list[JsonObject]) -> Turn:
    text = "".join(_text_of(i.get("content")) for i in items if i.get("type") == "message")
    calls = [
        (str(i.get("call_id") or ""), str(i.get("name", "")), i.get("arguments", ""))
        for i in items
        if i.get("type") == "function_call"
    ]
    return Turn(text, calls)


def _extras(response: JsonObject, items: list[JsonObject]) -> Extras:
    refusals = [_refusal_of(i.get("content")) for i in items if i.get("type") == "message"]
    found = [r for r in refusals if r is not None]
    sequence, text_parts = sequence_of(*_order(items))
    return Extras(
        stop_reason=_stop_reason(response),
        refusal="".join(found) if found else None,
        reasoning=[_reasoning(i) for i in items if i.get("type") == "reasoning"],
        hosted=[_hosted(i) for i in items if _is_hosted(i)],
        sequence=sequence,
        text_parts=text_parts,
    )


def _order(items: list[JsonObject]) -> tuple[list[str], list[str]]:
    """The kinds of the items in wire order, and the text pieces: each non-empty text part of each
    message is one piece (a message with none, such as a refusal, is no part)."""
    kinds: list[str] = []
    texts: list[str] = []
    for item in items:
        kind = item.get("type")
        if kind == "message":
            content = item.get("content")
            given = [content] if isinstance(content, str) else [_text_of([p]) for p in objects_of(content)]
            pieces = [t for t in given if t]
            kinds += ["text"] * len(pieces)
            texts += pieces
        elif kind == "reasoning":
            kinds.append("reasoning")
        elif kind == "function_call":
            kinds.append("call")
        elif _is_hosted(item):
            kinds.append("hosted")
    return kinds, texts


def _stop_reason(response: JsonObject) -> str | None:
    if response.get("status") != "incomplete":
        return None
    details = response.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, dict) else None
    if reason is None:
        return _NO_REASON
    return _STOP_REASONS.get(str(reason), str(reason))


# --- synthesized responses --------------------------------------------------------------------


def _reasoning_item(reasoning: Reasoning, item_id: str) -> JsonObject:
    item: JsonObject = {"id": item_id, "type": "reasoning"}
    item["summary"] = [{"type": "summary_text", "text": s} for s in reasoning.summary or []]
    if reasoning.text is not None:
        item["content"] = [{"type": "reasoning_text", "text": reasoning.text}]
    if reasoning.encrypted_content is not None:
        item["encrypted_content"] = reasoning.encrypted_content
    return item


def _text_part(text: str) -> JsonObject:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _message_item(texts: list[str], item_id: str) -> JsonObject:
    content = [_text_part(t) for t in texts]
    message = {"id": item_id, "type": "message", "role": "assistant", "content": content}
    return {**message, "status": "completed"}


def _output_items(output: JsonObject, extras: Extras) -> list[JsonObject]:
    """The items in the output's order (``ordered``): text pieces that follow each other are the
    output_text parts of one message; the refusal is a part of the last message."""
    _, calls = wire_turn(output)
    tag = digest(output)
    items: list[JsonObject] = []
    counts = {"reasoning": 0, "hosted": 0, "call": 0, "text": 0}
    messages: list[JsonObject] = []
    for kind, value in ordered(output, extras, calls):
        n = counts[kind]
        counts[kind] += 1
        if kind == "reasoning":
            items.append(_reasoning_item(value, f"rs_blackbox_{tag}_{n}"))
        elif kind == "hosted":
            prefix = _ID_PREFIXES.get(f"{value.tool_name}_call", "htc")
            items.append(hosted_item(value, f"{prefix}_blackbox_{tag}_{n}"))
        elif kind == "text" and messages and items[-1] is messages[-1]:
            items[-1]["content"].append(_text_part(value))
        elif kind == "text":
            suffix = f"_{len(messages)}" if messages else ""
            messages.append(_message_item([value], f"msg_blackbox_{tag}{suffix}"))
            items.append(messages[-1])
        else:
            call_id, name, arguments = value
            call = {"id": f"fc_blackbox_{tag}_{n}", "type": "function_call", "call_id": call_id, "name": name}
            items.append({**call, "arguments": arguments, "status": "completed"})
    if not messages and (extras.refusal is not None or not items):
        # No text: an empty message (for a refusal, or a response of nothing) before the calls.
        messages.append(_message_item([] if extras.refusal is not None else [""], f"msg_blackbox_{tag}"))
        at = next((i for i, item in enumerate(items) if item["type"] == "function_call"), len(items))
        items.insert(at, messages[-1])
    if extras.refusal is not None:
        messages[-1]["content"].append({"type": "refusal", "refusal": extras.refusal})
    return items


def _status(stop_reason: str | None) -> tuple[str, JsonObject | None]:
    """The response's status and incomplete_details for a neutral stopReason."""
    if stop_reason is None or stop_reason in _COMPLETE:
        return "completed", None
    if stop_reason == _NO_REASON:
        return "incomplete", None
    return "incomplete", {"reason": _WIRE_REASONS.get(stop_reason, stop_reason)}


def _response(output: JsonObject, request: JsonObject) -> JsonObject:
    """The whole response; what it echoes of the request (tools, tool_choice...) the SDK requires."""
    extras = extras_of(output)
    items = _output_items(output, extras)
    status, details = _status(extras.stop_reason)
    if status == "incomplete" and items[-1]["type"] == "message":
        items[-1]["status"] = "incomplete"  # the message the limit cut short
    instructions = request.get("instructions")
    response: JsonObject = {
        "id": f"resp_blackbox_{digest(output)}",
        "object": "response",
        "created_at": 0,
        "status": status,
        "error": None,
        "incomplete_details": details,
        "instructions": instructions if isinstance(instructions, str) else None,
        "model": str(request.get("model") or ""),
        "output": items,
        "parallel_tool_calls": request.get("parallel_tool_calls") is not False,
        "tool_choice": request.get("tool_choice") or "auto",
        "tools": list(request.get("tools") or []),
        "temperature": request.get("temperature"),
        "top_p": request.get("top_p"),
        "max_output_tokens": request.get("max_output_tokens"),
        "usage": copy.deepcopy(_ZERO_USAGE),
    }
    echoed = {k: copy.deepcopy(request[k]) for k in _ECHOED if request.get(k) is not None}
    return {**response, **echoed}
