"""OpenAI Chat Completions (``POST .../chat/completions``): wire <-> neutral v2 payloads, pure functions.

Requests (``model_input``):

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
* ``tools`` -> ``{name, description, inputSchema?}``. Every other field is in ``REQUEST_FIELDS``:
  ``max_tokens`` / ``max_completion_tokens``, ``temperature``, ``top_p``, ``tool_choice``,
  ``response_format``, ``stop`` -> ``params`` under their neutral names; streaming, identifiers,
  caching, billing and log-probability fields are not compared (each with its reason below); every
  other field, known (``seed``, ``n``, ``reasoning_effort``...) or not, goes under ``params`` with its
  own name.
* Not kept, as before: a message's ``name``, an assistant message's ``audio`` (a reference to an
  earlier spoken answer), and ``custom`` tool calls (only function calls are read, here and in
  responses).

A fork's rewrite (``replace_tool_result``) replaces the ``content`` of the ``tool`` messages whose
``tool_call_id`` is the id: a string stays a string, a list of parts becomes one ``text`` part.

Responses (``model_output``), a JSON ``chat.completion`` or its ``chat.completion.chunk`` stream,
reassembled per choice ``index`` from deltas as the SDK does. Choice 0 is the payload: its text, its
function calls (ids become ``call-N``; a legacy ``function_call`` is a call too, numbered by name and
arguments), and the extras (cassette/output.py) when they say something: ``finish_reason`` ``length``
-> ``stopReason: max_tokens``, ``content_filter`` -> ``content_filter``, any other value but the
defaults ``stop`` and ``tool_calls`` kept as is (the legacy ``function_call`` among them: it tells
replay to send the call back as a ``function_call``); ``refusal`` apart from the text (a
refusal-only answer is a ``final_answer`` with text ``""``); a web-search answer's
``annotations`` (url_citation) as ``hostedTools: [{toolName: web_search, result: [annotations as
sent]}]``. With ``n`` > 1 every later choice, in index order, is a whole output of its own in
``choices``, its calls numbered after those of the choices before it. Chat has no reasoning items
and no hosted tool calls beyond web-search annotations. Ids, usage, logprobs, fingerprints, the
service tier and moderation results are dropped. ``usage`` reads the token counts apart (a stream's
usage chunk, when it asked for one), as ``tokenUsage``: ``prompt_tokens`` (cached included),
``completion_tokens``, ``prompt_tokens_details.cached_tokens``. A body that is not a complete completion (an
``error``, a stream in which a choice has no finish reason) raises ``ValueError``.

Synthesized responses (``wire_response``) carry every choice in order with its own finish reason,
refusal (content ``null`` when the answer is only a refusal or only calls) and annotations (``[]``
in JSON when there are none, as the API sends), the neutral ids as tool-call ids, ``created`` 0,
zero usage and an id derived from the output, so the same output always gives the same bytes. A
stream sends each choice whole, one after the other (the SDK's accumulator places a choice by its
index, so the first must come first), its annotations in one delta. The neutral stop reasons Chat
has no value for are sent as ``stop`` (``refusal``, ``stop_sequence``); a provider's own reason is
sent as is. Hosted tools other than web search have no place in a Chat answer and are not sent.

Neutral -> wire (``wire_request``), the inverse of ``model_input``: chat_requests.py

The pieces shared with ``openai_responses`` (and Gemini's framing) are in ``shared.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from otel_blackbox._cassette.output import Extras, Hosted, extras_of, with_extras
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
    pieces,
    sse_data,
    text_of,
    tool_input,
    tool_result,
    tool_use,
    wire_turn,
)
from otel_blackbox._wire.openai_chat.requests import chat_request
from otel_blackbox._wire.protocol import (
    CallIds,
    JsonObject,
    WireRequest,
    WireResponse,
    call_signature,
    replaced_content,
    rewritten,
    wire_errors,
)
from otel_blackbox._wire.request_fields import CHAT_FIELDS

__all__ = ["REQUEST_FIELDS", "OpenAIChat"]

_SYSTEM_ROLES = ("system", "developer")
# The table lives on the analysis side: a cassette built from spans reads recorded settings with it.
REQUEST_FIELDS = CHAT_FIELDS
# Agents that log cost read usage without a None check; replay has no token counts to give.
_ZERO_USAGE = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
_DEFAULT_FINISHES = ("stop", "tool_calls")
_STOP_REASONS = {"length": "max_tokens", "content_filter": "content_filter"}
# The inverse, and the neutral reasons Chat has no value of its own for (it says "stop" for both).
_FINISH_REASONS = {"max_tokens": "length", "content_filter": "content_filter", "refusal": "stop",
                   "stop_sequence": "stop"}  # fmt: skip
_LEGACY = "function_call"  # the deprecated functions API's finish reason and message field
_WEB_SEARCH = "web_search"


class OpenAIChat:
    """The OpenAI Chat Completions API, JSON and streamed."""

    name = "openai-chat"

    def handles(self, method: str, path: str) -> bool:
        return method.upper() == "POST" and path.split("?", 1)[0].rstrip("/").endswith("/chat/completions")

    @wire_errors("an OpenAI Chat Completions request")
    def model_input(self, request: JsonObject, ids: CallIds) -> JsonObject:
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

    def is_streaming(self, request: JsonObject) -> bool:
        return bool(request.get("stream"))

    @wire_errors("an OpenAI Chat Completions response")
    def model_output(self, body: bytes, *, streamed: bool, ids: CallIds) -> JsonObject:
        answers = _stream_answers(body) if streamed else _completion_answers(body)
        first, *rest = answers  # numbered in choice order: choice 0's calls first
        output = first.neutral(ids)
        return with_extras(output, Extras(choices=[a.neutral(ids) for a in rest]))

    @wire_errors("an OpenAI Chat Completions response")
    def usage(self, body: bytes, *, streamed: bool) -> JsonObject | None:
        if not streamed:
            completion = json.loads(body)
            return chat_usage(completion.get("usage") if isinstance(completion, dict) else None)
        usage: Any = None  # with stream_options.include_usage: null on every chunk but the last
        for data in sse_data(body):
            if data.startswith("[DONE]"):
                break
            chunk = json.loads(data)
            usage = (chunk.get("usage") if isinstance(chunk, dict) else None) or usage
        return chat_usage(usage)

    @wire_errors("a model_output to send as an OpenAI Chat Completions response")
    def wire_response(self, output: JsonObject, request: JsonObject) -> WireResponse:
        output = without_usage(output)  # not behaviour: replay sends zero usage, ids as before
        if not self.is_streaming(request):
            return WireResponse(200, list(JSON_HEADERS), dumps(_completion(output, request)).encode())
        data = [f"data: {dumps(chunk)}\n\n" for chunk in _chunks(output, request)]
        return WireResponse(200, list(SSE_HEADERS), ("".join(data) + "data: [DONE]\n\n").encode())

    @wire_errors("a model_input to send as an OpenAI Chat Completions request")
    def wire_request(self, model_input: JsonObject, *, stream: bool, native: bool) -> WireRequest:
        return chat_request(model_input, stream=stream, native=native)

    @wire_errors("an OpenAI Chat Completions request")
    def replace_tool_result(self, request: JsonObject, tool_call_id: str, result: Any) -> JsonObject | None:
        def targets(body: JsonObject) -> list[JsonObject]:
            return [m for m in objects_of(body.get("messages")) if _is_tool_message(m, tool_call_id)]

        def rewrite(message: JsonObject) -> None:
            message["content"] = replaced_content(message.get("content"), result, "text")

        return rewritten(request, targets, rewrite)


# --- requests ---------------------------------------------------------------------------------


def _is_tool_message(message: JsonObject, tool_call_id: str) -> bool:
    return message.get("role") == "tool" and str(message.get("tool_call_id", "")) == tool_call_id


def _split_system(messages: list[JsonObject]) -> tuple[str | None, list[JsonObject]]:
    leading = 0
    while leading < len(messages) and messages[leading].get("role") in _SYSTEM_ROLES:
        leading += 1
    if not leading:
        return None, messages
    return "\n\n".join(text_of(m.get("content")) for m in messages[:leading]), messages[leading:]


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
    function = message.get(_LEGACY) if message.get("role") == "assistant" else None
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
        or isinstance(message.get(_LEGACY), dict)
    )


def _assistant(message: JsonObject, history: _History) -> JsonObject:
    text, refusal = texts_and_refusal(message.get("content"))
    if message.get("refusal"):
        refusal += str(message["refusal"])
    parts: list[JsonObject] = []
    annotations = message.get("annotations")
    if isinstance(annotations, list) and annotations:
        parts.append({"type": "hosted_tool", **Hosted(_WEB_SEARCH, result=annotations).to_json()})
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


def texts_and_refusal(content: Any) -> tuple[str, str]:
    """An assistant message's text and its refusal apart: the string itself, or the text parts and
    the refusal parts of a list, each joined (``text_of`` folds refusals into the text)."""
    if isinstance(content, str):
        return content, ""
    text: list[str] = []
    refusal: list[str] = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and part.get("type") in ("text", "input_text", "output_text"):
            text.append(str(part.get("text", "")))
        elif isinstance(part, dict) and part.get("type") == "refusal":
            refusal.append(str(part.get("refusal", "")))
    return "".join(text), "".join(refusal)


def refusal_part(refusal: str) -> JsonObject:
    """The neutral part of a refusal the program sends back in an assistant turn."""
    return {"type": "refusal", "refusal": refusal}


def _stop_reason(finish_reason: Any) -> str | None:
    """The neutral stopReason of a finish reason: none for the defaults (the end, tool use)."""
    if finish_reason is None or finish_reason == "" or finish_reason in _DEFAULT_FINISHES:
        return None
    return _STOP_REASONS.get(str(finish_reason), str(finish_reason))


@dataclass
class _Answer:
    """One choice as the wire gave it, JSON or reassembled from a stream."""

    text: str = ""
    refusal: str = ""
    calls: list[tuple[str, str, Any]] = field(default_factory=list)  # (provider id, name, arguments)
    function_call: tuple[str, Any] | None = None  # the legacy call: (name, raw arguments)
    finish_reason: Any = None
    annotations: list[Any] = field(default_factory=list)

    def neutral(self, ids: CallIds) -> JsonObject:
        output = Turn(self.text, self.calls).neutral(ids)
        if self.function_call is not None:
            output = _with_legacy_call(output, ids, *self.function_call)
        hosted = [Hosted(_WEB_SEARCH, result=list(self.annotations))] if self.annotations else []
        extras = Extras(
            stop_reason=_stop_reason(self.finish_reason), refusal=self.refusal or None, hosted=hosted
        )
        return with_extras(output, extras)


def _with_legacy_call(output: JsonObject, ids: CallIds, name: str, arguments: Any) -> JsonObject:
    """``output`` with the legacy call added: it has no id, so it is known by name and arguments."""
    parsed = tool_input(arguments)
    call = {
        "toolCallId": ids.made_call(call_signature(name, parsed), None),
        "toolName": name,
        "toolInput": parsed,
    }
    calls = [*output.get("calls", []), call]
    text = output.get("text")
    return {"type": "tool_calls", "calls": calls, **({"text": text} if text else {})}


def _completion_answers(body: bytes) -> list[_Answer]:
    completion = json.loads(body)
    choices = completion.get("choices") if isinstance(completion, dict) else None
    if not isinstance(choices, list) or not choices:
        raise ValueError(f"not a chat completion: {error_text(completion)}")
    return [_answer(c) for c in sorted(choices, key=lambda c: c.get("index", 0))]


def chat_usage(usage: Any) -> JsonObject | None:
    """The ``tokenUsage`` of Chat's ``usage``: ``prompt_tokens`` (cached included, as
    ``prompt_tokens_details.cached_tokens`` says), ``completion_tokens`` (reasoning included)."""
    if not isinstance(usage, dict):
        return None
    details = usage.get("prompt_tokens_details")
    cached = count(details.get("cached_tokens")) if isinstance(details, dict) else None
    return usage_json(count(usage.get("prompt_tokens")), count(usage.get("completion_tokens")), cached)


def _answer(choice: JsonObject) -> _Answer:
    message = choice.get("message") or {}
    calls = [
        (str(c.get("id") or ""), str(c["function"].get("name", "")), c["function"].get("arguments", ""))
        for c in message.get("tool_calls") or []
        if isinstance(c, dict) and isinstance(c.get("function"), dict)
    ]
    text, refusal = texts_and_refusal(message.get("content"))
    function = message.get(_LEGACY)
    legacy = (
        (str(function.get("name", "")), function.get("arguments", "")) if isinstance(function, dict) else None
    )
    return _Answer(
        text=text,
        refusal=str(message.get("refusal") or "") + refusal,
        calls=calls,
        function_call=legacy,
        finish_reason=choice.get("finish_reason"),
        annotations=_annotation_list(message.get("annotations")),
    )


def _annotation_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"annotations must be a list, not {type(value).__name__}")
    return value


@dataclass
class _StreamState:
    """One choice of a stream, as its deltas arrive."""

    text: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    # Each call's id, name and arguments as the pieces the deltas carried: joined once at the end,
    # so a stream of many small deltas costs linear time, not quadratic.
    calls: dict[int, dict[str, list[str]]] = field(default_factory=dict)
    function_call: dict[str, list[str]] | None = None
    annotations: list[Any] = field(default_factory=list)
    finish_reason: Any = None

    def add(self, choice: JsonObject) -> None:
        delta = choice.get("delta") or {}
        self.text.append(delta.get("content") or "")
        self.refusal.append(delta.get("refusal") or "")
        for piece in delta.get("tool_calls") or []:
            call = self.calls.setdefault(piece.get("index", 0), {"id": [], "name": [], "arguments": []})
            function = piece.get("function") or {}
            # Strings are concatenated, as the SDK's accumulate_delta does.
            call["id"].append(piece.get("id") or "")
            call["name"].append(function.get("name") or "")
            call["arguments"].append(function.get("arguments") or "")
        legacy = delta.get(_LEGACY)
        if isinstance(legacy, dict):
            if self.function_call is None:
                self.function_call = {"name": [], "arguments": []}
            self.function_call["name"].append(legacy.get("name") or "")
            self.function_call["arguments"].append(legacy.get("arguments") or "")
        self.annotations.extend(_annotation_list(delta.get("annotations")))
        self.finish_reason = choice.get("finish_reason") or self.finish_reason

    def answer(self) -> _Answer:
        calls = [
            ("".join(c["id"]), "".join(c["name"]), "".join(c["arguments"]))
            for _, c in sorted(self.calls.items())
        ]
        legacy = self.function_call
        return _Answer(
            text="".join(self.text),
            refusal="".join(self.refusal),
            calls=calls,
            function_call=("".join(legacy["name"]), "".join(legacy["arguments"])) if legacy else None,
            finish_reason=self.finish_reason,
            annotations=self.annotations,
        )


def _stream_answers(body: bytes) -> list[_Answer]:
    states: dict[int, _StreamState] = {}
    for data in sse_data(body):
        if data.startswith("[DONE]"):
            break
        chunk = json.loads(data)
        if not isinstance(chunk, dict) or chunk.get("error"):
            raise ValueError(f"the stream reported an error: {error_text(chunk)}")
        for choice in chunk.get("choices") or []:
            states.setdefault(choice.get("index", 0), _StreamState()).add(choice)
    if not states or not all(s.finish_reason for s in states.values()):
        raise ValueError("the stream ended before a finish_reason")
    return [states[index].answer() for index in sorted(states)]


# --- synthesized responses --------------------------------------------------------------------


@dataclass
class _Sent:
    """One choice to send: what a neutral output says, in Chat's terms."""

    text: str
    refusal: str | None
    calls: list[tuple[str, str, str]]  # (neutral id, name, arguments text)
    finish_reason: str
    annotations: list[Any]
    legacy: bool  # its one call goes as the deprecated functions API's function_call

    @property
    def content(self) -> str | None:
        """``null`` when the answer is only calls or only a refusal, as the API sends it."""
        return self.text if self.text or not (self.calls or self.refusal) else None


def _sent(output: JsonObject) -> list[_Sent]:
    """Every choice of an output, the payload itself first."""
    return [_sent_choice(o) for o in [output, *extras_of(output).choices]]


def _sent_choice(output: JsonObject) -> _Sent:
    text, calls = wire_turn(output)
    extras = extras_of(output)
    reason = extras.stop_reason
    finish = _FINISH_REASONS.get(reason, reason) if reason else ("tool_calls" if calls else "stop")
    return _Sent(
        text=text,
        refusal=extras.refusal,
        calls=calls,
        finish_reason=finish,
        annotations=_annotations(extras.hosted),
        legacy=reason == _LEGACY and len(calls) == 1,
    )


def _annotations(hosted: list[Hosted]) -> list[Any]:
    """The message's annotations: the results of its web searches (Chat has no other hosted tool)."""
    found: list[Any] = []
    for item in hosted:
        if item.tool_name == _WEB_SEARCH and item.has_result:
            if not isinstance(item.result, list):
                raise ValueError("a web_search result must be the list of the message's annotations")
            found.extend(item.result)
    return found


def _function(name: str, arguments: str) -> JsonObject:
    return {"name": name, "arguments": arguments}


def _message(choice: _Sent) -> JsonObject:
    message: JsonObject = {
        "role": "assistant",
        "content": choice.content,
        "refusal": choice.refusal,
        "annotations": choice.annotations,
    }
    if choice.legacy:
        _, name, arguments = choice.calls[0]
        message[_LEGACY] = _function(name, arguments)
    elif choice.calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": _function(name, arguments)}
            for call_id, name, arguments in choice.calls
        ]
    return message


def _completion(output: JsonObject, request: JsonObject) -> JsonObject:
    choices = [
        {"index": index, "message": _message(c), "logprobs": None, "finish_reason": c.finish_reason}
        for index, c in enumerate(_sent(output))
    ]
    return {**_head(output, request, "chat.completion"), "choices": choices, "usage": dict(_ZERO_USAGE)}


def _head(output: JsonObject, request: JsonObject, kind: str) -> JsonObject:
    model = str(request.get("model") or "")
    return {"id": f"chatcmpl-blackbox-{digest(output)}", "object": kind, "created": 0, "model": model}


def _chunks(output: JsonObject, request: JsonObject) -> Iterator[JsonObject]:
    """The stream the API would send: each choice whole, in order, then the usage chunk if asked."""
    base = _head(output, request, "chat.completion.chunk")
    include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
    if include_usage:
        base["usage"] = None  # the API's shape: null on every chunk but the last
    for index, choice in enumerate(_sent(output)):
        yield from _choice_chunks(base, index, choice)
    if include_usage:
        yield {**base, "choices": [], "usage": dict(_ZERO_USAGE)}


def _choice_chunks(base: JsonObject, index: int, choice: _Sent) -> Iterator[JsonObject]:
    """One choice's chunks: role first, text and refusal deltas, its annotations in one delta (the SDK
    cannot merge a list of them sent in parts), each call's id and name once then its arguments in
    pieces (the SDK concatenates every string it sees twice), the finish reason."""

    def chunk(delta: JsonObject, finish_reason: str | None = None) -> JsonObject:
        return {
            **base,
            "choices": [{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        }

    content = "" if choice.content is not None else None
    yield chunk({"role": "assistant", "content": content, "refusal": None})
    for piece in pieces(choice.text):
        yield chunk({"content": piece})
    for piece in pieces(choice.refusal or ""):
        yield chunk({"refusal": piece})
    if choice.annotations:
        yield chunk({"annotations": choice.annotations})
    if choice.legacy:
        _, name, arguments = choice.calls[0]
        yield chunk({_LEGACY: _function(name, "")})
        for piece in pieces(arguments):
            yield chunk({_LEGACY: {"arguments": piece}})
    else:
        for call_index, (call_id, name, arguments) in enumerate(choice.calls):
            head = {"index": call_index, "id": call_id, "type": "function", "function": _function(name, "")}
            yield chunk({"tool_calls": [head]})
            for piece in pieces(arguments):
                yield chunk({"tool_calls": [{"index": call_index, "function": {"arguments": piece}}]})
    yield chunk({}, choice.finish_reason)
