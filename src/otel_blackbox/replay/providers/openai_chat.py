"""OpenAI Chat Completions (``POST .../chat/completions``): wire <-> neutral v2 payloads, pure functions.

Requests (``model_input``):

* The leading ``system`` / ``developer`` messages are ``systemPrompt``: their texts (a string, or the
  text parts of a list) joined with a blank line. A later one stays a message.
* A message keeps string content as a string (``None`` becomes ``""``). List content becomes parts:
  ``text`` -> ``{type: text, text}``; ``image_url`` -> ``{type: image, url, detail?}`` (the same
  neutral image part as the Responses API's ``input_image``); any other part (``input_audio``,
  ``file``, ...) is kept as sent.
* An assistant turn with ``tool_calls`` or list content is canonicalized to the shape replay sends
  back: its text joined into one leading text part (none when empty), then ``{type: tool_use,
  toolCallId, toolName, toolInput}`` per function call, the arguments JSON-parsed (the raw text when
  not JSON).
* Consecutive ``tool`` messages become one user turn of ``{type: tool_result, toolCallId, toolName,
  result}`` parts, the content as sent (a string stays a string); the tool name comes from the
  assistant call earlier in the same request.
* ``tools`` -> ``{name, description, inputSchema?}``; ``max_tokens`` / ``max_completion_tokens``,
  ``temperature``, ``top_p``, ``tool_choice``, ``response_format``, ``stop`` -> ``params``.

A fork's rewrite (``replace_tool_result``) replaces the ``content`` of the ``tool`` messages whose
``tool_call_id`` is the id: a string stays a string, a list of parts becomes one ``text`` part.

Responses (``model_output``), a JSON ``chat.completion`` or its ``chat.completion.chunk`` stream:
choice 0's text (its refusal when it has no text) and its function calls, reassembled from deltas by
``index`` as the SDK does; ids become ``call-N``. Ids, usage, finish reasons and fingerprints are
dropped. A body that is not a complete completion (an ``error``, a stream with no finish reason)
raises ``ValueError``.

Synthesized responses (``wire_response``) carry the neutral ids as tool-call ids, ``created`` 0,
zero usage and an id derived from the output, so the same output always gives the same bytes.

The helpers below the provider are shared with ``openai_responses``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ...cassette.model import tool_calls_of
from .base import CallIds, JsonObject, WireResponse, replaced_content, rewritten, wire_errors

__all__ = ["OpenAIChat"]

_SYSTEM_ROLES = ("system", "developer")
_PARAMS = {
    "max_tokens": "maxTokens",
    "max_completion_tokens": "maxTokens",
    "temperature": "temperature",
    "top_p": "topP",
    "tool_choice": "toolChoice",
    "response_format": "responseFormat",
    "stop": "stop",
}
JSON_HEADERS = [("content-type", "application/json")]
SSE_HEADERS = [("content-type", "text/event-stream"), ("cache-control", "no-cache")]
# Agents that log cost read usage without a None check; replay has no token counts to give.
_ZERO_USAGE = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
_PIECE = 16  # characters per streamed delta: several deltas, so clients really accumulate


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
        params = {_PARAMS[k]: v for k, v in request.items() if k in _PARAMS and v is not None}
        if params:
            payload["params"] = params
        return payload

    def is_streaming(self, request: JsonObject) -> bool:
        return bool(request.get("stream"))

    @wire_errors("an OpenAI Chat Completions response")
    def model_output(self, body: bytes, *, streamed: bool, ids: CallIds) -> JsonObject:
        turn = _stream_turn(body) if streamed else _completion_turn(body)
        return turn.neutral(ids)

    @wire_errors("a model_output to send as an OpenAI Chat Completions response")
    def wire_response(self, output: JsonObject, request: JsonObject) -> WireResponse:
        if not self.is_streaming(request):
            return WireResponse(200, list(JSON_HEADERS), dumps(_completion(output, request)).encode())
        data = [f"data: {dumps(chunk)}\n\n" for chunk in _chunks(output, request)]
        return WireResponse(200, list(SSE_HEADERS), ("".join(data) + "data: [DONE]\n\n").encode())

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


def _messages(messages: list[JsonObject], ids: CallIds) -> list[JsonObject]:
    names: dict[str, str] = {}  # neutral id -> tool name, from the assistant calls seen so far
    out: list[JsonObject] = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            call_id = ids.neutral(str(message.get("tool_call_id", "")))
            name = names.get(call_id) or str(message.get("name") or "unknown")
            add_tool_result(out, tool_result(call_id, name, message.get("content")))
        elif role == "assistant" and (message.get("tool_calls") or isinstance(message.get("content"), list)):
            out.append(_assistant(message, ids, names))
        else:
            out.append({"role": role, "content": _content(message.get("content"))})
    return out


def _assistant(message: JsonObject, ids: CallIds, names: dict[str, str]) -> JsonObject:
    text = text_of(message.get("content"))
    parts: list[JsonObject] = [{"type": "text", "text": text}] if text else []
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            call_id = ids.neutral(str(call.get("id", "")))
            names[call_id] = str(function.get("name", ""))
            parts.append(tool_use(call_id, names[call_id], tool_input(function.get("arguments", ""))))
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


# --- shared with openai_responses: request pieces ---------------------------------------------


def objects_of(items: Any) -> list[JsonObject]:
    """The objects of a list field (``messages``, ``input``); nothing when it is not a list."""
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


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


def image_part(url: Any, detail: Any) -> JsonObject:
    part: JsonObject = {"type": "image", "url": url}
    if detail is not None:
        part["detail"] = detail
    return part


def tool_use(call_id: str, name: str, tool_input: Any) -> JsonObject:
    return {"type": "tool_use", "toolCallId": call_id, "toolName": name, "toolInput": tool_input}


def tool_result(call_id: str, name: str, result: Any) -> JsonObject:
    return {"type": "tool_result", "toolCallId": call_id, "toolName": name, "result": _or_empty(result)}


def _or_empty(value: Any) -> Any:
    return "" if value is None else value


def add_tool_result(out: list[JsonObject], part: JsonObject) -> None:
    """Results that follow each other form one user turn, as in the format's tool rounds."""
    content = out[-1].get("content") if out and out[-1].get("role") == "user" else None
    if isinstance(content, list) and content and all(_is_result(p) for p in content):
        content.append(part)
    else:
        out.append({"role": "user", "content": [part]})


def _is_result(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") == "tool_result"


def neutral_tool(tool: JsonObject) -> JsonObject:
    """Chat nests a tool under its type (``{type: function, function: {...}}``); Responses does not."""
    nested = tool.get(str(tool.get("type")))
    spec: JsonObject = nested if isinstance(nested, dict) else tool
    neutral: JsonObject = {
        "name": str(spec.get("name") or tool.get("type") or ""),
        "description": spec.get("description") or "",
    }
    if spec.get("parameters") is not None:
        neutral["inputSchema"] = spec["parameters"]
    return neutral


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _strict_json(text: str) -> Any:
    return json.loads(text, parse_constant=_no_constants)


def tool_input(arguments: Any) -> Any:
    """Arguments arrive as JSON text: the parsed value, or the text itself when it is not JSON."""
    if not isinstance(arguments, str):
        return arguments
    try:
        return _strict_json(arguments)
    except ValueError:
        return arguments


def arguments_text(value: Any) -> str:
    """The inverse of ``tool_input``: a string that is not JSON was the model's raw text."""
    if isinstance(value, str):
        try:
            _strict_json(value)
        except ValueError:
            return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# --- shared with openai_responses: responses ---------------------------------------------------


@dataclass
class Turn:
    """What one response said: its text and its calls as (provider id, name, raw arguments)."""

    text: str = ""
    calls: list[tuple[str, str, Any]] = field(default_factory=list)

    def neutral(self, ids: CallIds) -> JsonObject:
        calls = [
            {
                # A call with no id (some compatible servers) still gets its own neutral id.
                "toolCallId": ids.neutral(call_id or f"missing-{ids.next_index()}"),
                "toolName": name,
                "toolInput": tool_input(arguments),
            }
            for call_id, name, arguments in self.calls
        ]
        if not calls:
            return {"type": "final_answer", "text": self.text}
        output: JsonObject = {"type": "tool_calls", "calls": calls}
        if self.text:
            output["text"] = self.text
        return output


def error_text(value: Any) -> str:
    """The message of an error body (``{error: {message}}``, or a stream's ``{message}``)."""
    error = value.get("error") if isinstance(value, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    if isinstance(value, dict) and isinstance(value.get("message"), str):
        return str(value["message"])
    return type(value).__name__


def sse_data(body: bytes) -> Iterator[str]:
    """The data of each server-sent event (``event:`` names and comments are not needed)."""
    for chunk in body.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n").split("\n\n"):
        data = [line[5:].removeprefix(" ") for line in chunk.split("\n") if line.startswith("data:")]
        if data:
            yield "\n".join(data)


def _completion_turn(body: bytes) -> Turn:
    completion = json.loads(body)
    choices = completion.get("choices") if isinstance(completion, dict) else None
    if not isinstance(choices, list) or not choices:
        raise ValueError(f"not a chat completion: {error_text(completion)}")
    choice = next((c for c in choices if c.get("index", 0) == 0), choices[0])
    message = choice.get("message") or {}
    calls = [
        (str(c.get("id") or ""), str(c["function"].get("name", "")), c["function"].get("arguments", ""))
        for c in message.get("tool_calls") or []
        if isinstance(c, dict) and isinstance(c.get("function"), dict)
    ]
    return Turn(text_of(message.get("content")) or str(message.get("refusal") or ""), calls)


@dataclass
class _StreamState:
    text: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    # Each call's id, name and arguments as the pieces the deltas carried: joined once at the end,
    # so a stream of many small deltas costs linear time, not quadratic.
    calls: dict[int, dict[str, list[str]]] = field(default_factory=dict)
    finished: bool = False

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
        self.finished = self.finished or bool(choice.get("finish_reason"))

    def turn(self) -> Turn:
        calls = [
            ("".join(c["id"]), "".join(c["name"]), "".join(c["arguments"]))
            for _, c in sorted(self.calls.items())
        ]
        return Turn("".join(self.text) or "".join(self.refusal), calls)


def _stream_turn(body: bytes) -> Turn:
    state = _StreamState()
    for data in sse_data(body):
        if data.startswith("[DONE]"):
            break
        chunk = json.loads(data)
        if not isinstance(chunk, dict) or chunk.get("error"):
            raise ValueError(f"the stream reported an error: {error_text(chunk)}")
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) == 0:
                state.add(choice)
    if not state.finished:
        raise ValueError("the stream ended before a finish_reason")
    return state.turn()


# --- synthesized responses --------------------------------------------------------------------


def dumps(value: Any) -> str:
    # ASCII escapes keep every SSE data line one line for any decoder (U+2028 is a line break to
    # str.splitlines) and survive lone surrogates, which UTF-8 cannot encode.
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"))


def digest(output: JsonObject) -> str:
    """An id part derived from the output: deterministic, and different for different answers."""
    return hashlib.sha256(json.dumps(output, sort_keys=True).encode()).hexdigest()[:24]


def pieces(text: str) -> list[str]:
    return [text[i : i + _PIECE] for i in range(0, len(text), _PIECE)]


def wire_turn(output: JsonObject) -> tuple[str, list[tuple[str, str, str]]]:
    """The text and the (neutral id, name, arguments text) calls to send, from either output shape."""
    text = output.get("text")
    calls = [(c.tool_call_id, c.tool_name, arguments_text(c.tool_input)) for c in tool_calls_of(output)]
    return (text if isinstance(text, str) else ""), calls


def _completion(output: JsonObject, request: JsonObject) -> JsonObject:
    text, calls = wire_turn(output)
    message: JsonObject = {
        "role": "assistant",
        "content": text if text or not calls else None,
        "refusal": None,
    }
    if calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
            for call_id, name, arguments in calls
        ]
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": _finish(calls)}
    return {**_head(output, request, "chat.completion"), "choices": [choice], "usage": dict(_ZERO_USAGE)}


def _finish(calls: list[Any]) -> str:
    return "tool_calls" if calls else "stop"


def _head(output: JsonObject, request: JsonObject, kind: str) -> JsonObject:
    model = str(request.get("model") or "")
    return {"id": f"chatcmpl-blackbox-{digest(output)}", "object": kind, "created": 0, "model": model}


def _chunks(output: JsonObject, request: JsonObject) -> Iterator[JsonObject]:
    """The stream the API would send: role first, text deltas, each call's id and name once then its
    arguments in pieces (the SDK concatenates every string it sees twice), the finish reason."""
    text, calls = wire_turn(output)
    base = _head(output, request, "chat.completion.chunk")
    include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
    if include_usage:
        base["usage"] = None  # the API's shape: null on every chunk but the last

    def chunk(delta: JsonObject, finish_reason: str | None = None) -> JsonObject:
        return {
            **base,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        }

    yield chunk({"role": "assistant", "content": "" if text or not calls else None, "refusal": None})
    for piece in pieces(text):
        yield chunk({"content": piece})
    for index, (call_id, name, arguments) in enumerate(calls):
        head = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        yield chunk({"tool_calls": [head]})
        for piece in pieces(arguments):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, _finish(calls))
    if include_usage:
        yield {**base, "choices": [], "usage": dict(_ZERO_USAGE)}
