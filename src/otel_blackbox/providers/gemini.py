"""Google Gemini ``generateContent`` (``POST .../models/MODEL:generateContent``, and
``:streamGenerateContent``): wire <-> neutral v2 payloads, pure functions.

The URL names the model (``/v1beta/models/gemini-2.5-flash:...``, ``/v1/...``, Vertex AI's
``.../publishers/google/models/NAME:...``) and whether the answer streams (SSE with ``alt=sse``, else
one JSON array): ``registry.provider_for`` hands out the translation bound to the request's URL
(``at``); ``url_with_model`` renames the model for ``rerun --model``. Field names are read in both
spellings the API's JSON takes (``functionCall``, ``function_call``: the SDK sends a Python
function's schema as ``parameters_json_schema``); the data below them is kept as sent.

Requests (``model_input``):

* ``systemInstruction``'s text parts, joined with a blank line, are ``systemPrompt``.
* ``contents``: role ``model`` is ``assistant``, any other is ``user``. A part holds one of ``text``,
  ``functionCall``, ``functionResponse``, ``inlineData``, ``fileData``, ``executableCode``,
  ``codeExecutionResult``, ``toolCall``, ``toolResponse``. A part with none of them is a
  ``ValueError``, as the API refuses it, unless it holds metadata only (a lone ``thoughtSignature``):
  then it is skipped. Thoughts (``thought: true``) are dropped.
* A model turn (the model contents that follow each other: a streamed chat keeps one a chunk) is
  canonicalized to the shape replay sends back: its texts joined, as a string when it made no call,
  else one leading text part (none when empty) then a ``tool_use`` part per ``functionCall``. Its other
  parts (``executableCode``...) are dropped, as ``model_output`` drops them.
* A user turn of one text part is a string, else a list: ``text`` -> ``{type: text, text}``,
  ``functionResponse`` -> ``{type: tool_result, toolCallId, toolName, result}``, any other part
  ``{type: KIND, KIND: value}``. ``result`` is ``response`` as sent, or what its only field holds when
  that is ``result`` or ``output`` (the API's fields for a function's output; the SDK's automatic
  function calling sends ``{result: ...}``); a lone ``error`` field is ``error``. Turns of results only
  that follow each other are one user turn.
* ``tools``: ``functionDeclarations`` -> ``{name, description, inputSchema}`` (``parameters`` or
  ``parametersJsonSchema``); a built-in tool (``googleSearch``...) is named by its field.
* ``generationConfig`` -> ``params``: ``maxOutputTokens`` -> ``maxTokens``, ``temperature``, ``topP``,
  ``stopSequences`` -> ``stop``, ``responseMimeType`` / ``responseSchema`` / ``responseJsonSchema`` ->
  ``responseFormat`` (an object of those fields), every other setting under its own name but
  ``responseLogprobs`` / ``logprobs``; ``toolConfig`` -> ``toolChoice``. ``safetySettings``,
  ``cachedContent`` and ``labels`` are not kept.

Ids. A call usually has no ``id``. A response's calls are then numbered on, and ``CallIds.made`` keeps
them by signature (name and canonical arguments); a request's history calls are matched with the
calls of the same signature the model made, from the latest back, so a history that dropped its
oldest turns still matches, and a call the model never made in this run is numbered on. A call with
an ``id`` uses it. A ``functionResponse`` with an ``id`` answers that call; without, the first
unanswered call of its name in the model turn before it. Synthesized responses carry ``id: call-N``,
which the SDK sends back.

A fork's rewrite (``replace_tool_result``) replaces the ``response`` of the ``functionResponse`` parts
that answer the id (numbered as ``model_input`` numbers them: by the ids the request carries, else in
order): the replacement goes under ``result`` / ``output`` where the agent sent that field alone,
under ``result`` where it sent a lone ``error`` (the replacement is a success), else it is the
response itself when it is an object, or ``{result: replacement}``.

Responses (``model_output``), a ``GenerateContentResponse`` or its stream: the first candidate's text
parts joined (thoughts dropped) and its function calls. Ids, ``usageMetadata``, ``finishReason``,
``modelVersion`` and ``responseId`` are dropped. An ``error``, a blocked prompt, a candidate with no
text and no call that did not stop normally, or a stream with no ``finishReason`` raise ``ValueError``.
"""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..cassette.model import tool_calls_of
from .base import CallIds, JsonObject, WireResponse, call_signature, rewritten, wire_errors
from .openai_chat import (
    JSON_HEADERS,
    SSE_HEADERS,
    add_tool_result,
    digest,
    dumps,
    error_text,
    pieces,
    sse_data,
    tool_use,
)

__all__ = ["GeminiGenerateContent"]

_ENDPOINT = re.compile(r"/(models|tunedModels)/([^/:]+):(generateContent|streamGenerateContent)$")
_DATA = (
    "text", "functionCall", "functionResponse", "inlineData", "fileData", "executableCode",
    "codeExecutionResult", "toolCall", "toolResponse",
)  # fmt: skip
_METADATA = frozenset(
    {
        "thought", "thoughtSignature", "videoMetadata", "mediaResolution", "partMetadata",
        "audioTranscription", "mediaProcessing", "speechMetadata", "documentMetadata",
        "spreadsheetMetadata", "audioMetadata",
    }
)  # fmt: skip
_PARAMS = {
    "maxOutputTokens": "maxTokens",
    "temperature": "temperature",
    "topP": "topP",
    "stopSequences": "stop",
}
_FORMAT = ("responseMimeType", "responseSchema", "responseJsonSchema")
# How log-probabilities are reported, not what is asked; "logprobs" is also a key verify refuses.
_NOT_KEPT = ("responseLogprobs", "logprobs")
_STOPPED = ("STOP", "MAX_TOKENS")  # an empty answer that stopped so is still an answer
_WRAPPERS = ("result", "output")  # the API's fields for a function's output
# Agents that log cost read usage without a None check; replay has no token counts to give.
_ZERO_USAGE = {"promptTokenCount": 0, "candidatesTokenCount": 0, "totalTokenCount": 0}


class GeminiGenerateContent:
    """The Gemini API's generateContent, JSON and streamed; ``at(url)`` for a request's own URL."""

    name = "gemini"

    def __init__(self, url: str = "") -> None:
        self.url = url

    def at(self, url: str) -> GeminiGenerateContent:
        return GeminiGenerateContent(url)

    def handles(self, method: str, path: str) -> bool:
        return method.upper() == "POST" and _ENDPOINT.search(path.split("?", 1)[0]) is not None

    @property
    def model(self) -> str | None:
        """The model the URL names (``gemini-2.5-flash``; ``tunedModels/NAME`` for a tuned one)."""
        match = _ENDPOINT.search(urlsplit(self.url).path)
        if match is None:
            return None
        return match[2] if match[1] == "models" else f"{match[1]}/{match[2]}"

    def url_with_model(self, model: str) -> str:
        """This request's URL naming ``model`` instead (``rerun --model``)."""
        parts = urlsplit(self.url)
        match = _ENDPOINT.search(parts.path)
        if match is None:
            return self.url
        path = parts.path[: match.start(2)] + model.removeprefix("models/") + parts.path[match.end(2) :]
        return urlunsplit(parts._replace(path=path))

    @wire_errors("a Gemini generateContent request")
    def model_input(self, request: JsonObject, ids: CallIds) -> JsonObject:
        fields = _fields(request, "the request")
        messages, _ = _read_contents(fields.get("contents"), ids)
        payload: JsonObject = {"messages": messages, "tools": _tools(fields.get("tools"))}
        if fields.get("systemInstruction") is not None:
            payload["systemPrompt"] = _system(fields["systemInstruction"])
        if self.model is not None:
            payload["model"] = self.model
        params = _params(fields)
        if params:
            payload["params"] = params
        return payload

    def is_streaming(self, request: JsonObject) -> bool:
        return urlsplit(self.url).path.endswith(":streamGenerateContent")

    @wire_errors("a Gemini generateContent response")
    def model_output(self, body: bytes, *, streamed: bool, ids: CallIds) -> JsonObject:
        turn = _Turn()
        for chunk in _stream_chunks(body) if streamed else [json.loads(body)]:
            turn.add(chunk)
        if streamed and turn.finish is None:
            raise ValueError("the stream ended before a finishReason")
        return turn.neutral(ids)

    @wire_errors("a model_output to send as a Gemini generateContent response")
    def wire_response(self, output: JsonObject, request: JsonObject) -> WireResponse:
        chunks = _wire_chunks(output, self.model or "", streamed=self.is_streaming(request))
        if not self.is_streaming(request):
            return WireResponse(200, list(JSON_HEADERS), dumps(chunks[0]).encode())
        if "alt=sse" not in urlsplit(self.url).query:  # without it the API streams one JSON array
            return WireResponse(200, list(JSON_HEADERS), dumps(chunks).encode())
        events = "".join(f"data: {dumps(chunk)}\r\n\r\n" for chunk in chunks)
        return WireResponse(200, list(SSE_HEADERS), events.encode())

    @wire_errors("a Gemini generateContent request")
    def replace_tool_result(self, request: JsonObject, tool_call_id: str, result: Any) -> JsonObject | None:
        def targets(body: JsonObject) -> list[JsonObject]:
            _, answered = _read_contents(_fields(body, "the request").get("contents"), CallIds())
            return [response for response, call_id in answered if call_id == tool_call_id]

        def rewrite(response: JsonObject) -> None:
            # A copy each time: the new request shares nothing with the caller's value either.
            response["response"] = _replaced(response.get("response"), copy.deepcopy(result))

        return rewritten(request, targets, rewrite)


# --- wire fields ------------------------------------------------------------------------------


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def _fields(value: Any, what: str) -> JsonObject:
    """A wire object with its field names as the API spells them (JSON also takes snake_case)."""
    if not isinstance(value, dict):
        raise ValueError(f"{what} is not a JSON object")
    return {_camel(str(k)) if "_" in str(k) else str(k): v for k, v in value.items()}


def _objects(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{what} is not a list")
    return value


def _kind(part: Any, *, strict: bool = True) -> tuple[str | None, Any, JsonObject]:
    """A part's kind (its data field) and value; (None, None, ...) for a part of metadata only or, in a
    response (not ``strict``), of a kind this version does not know."""
    fields = _fields(part, "a part")
    kind = next((k for k in _DATA if k in fields), None)
    if kind is not None:
        if kind == "text" and not isinstance(fields[kind], str):
            raise ValueError("a text part's text is not a string")
        return kind, fields[kind], fields
    unknown = sorted(k for k in fields if k not in _METADATA)
    if strict and (unknown or not fields):
        raise ValueError(f"a part of a kind Gemini does not have: {', '.join(unknown) or 'an empty part'}")
    return None, None, fields


def _texts(parts: list[Any]) -> list[str]:
    texts = []
    for part in parts:
        kind, value, fields = _kind(part)
        if kind == "text" and not fields.get("thought"):
            texts.append(value)
    return texts


# --- requests ---------------------------------------------------------------------------------


def _system(value: Any) -> str:
    if isinstance(value, str):  # the SDK sends a Content; a string is what a user means
        return value
    return "\n\n".join(_texts(_objects(_fields(value, "systemInstruction").get("parts"), "its parts")))


def _tools(value: Any) -> list[JsonObject]:
    tools: list[JsonObject] = []
    for tool in _objects(value, "tools"):
        for key, spec in _fields(tool, "a tool").items():
            if key != "functionDeclarations":
                tools.append({"name": key, "description": ""})  # a built-in tool: googleSearch...
                continue
            for declaration in _objects(spec, "functionDeclarations"):
                d = _fields(declaration, "a function declaration")
                neutral: JsonObject = {
                    "name": str(d.get("name", "")),
                    "description": d.get("description") or "",
                }
                schema = d.get("parameters", d.get("parametersJsonSchema"))
                if schema is not None:
                    neutral["inputSchema"] = schema
                tools.append(neutral)
    return tools


def _params(request: JsonObject) -> JsonObject:
    params: JsonObject = {}
    response_format: JsonObject = {}
    config = request.get("generationConfig")
    for key, value in (_fields(config, "generationConfig") if config is not None else {}).items():
        if value is None or key in _NOT_KEPT:
            continue
        if key in _FORMAT:
            response_format[key] = value
        else:
            params[_PARAMS.get(key, key)] = value
    if response_format:
        params["responseFormat"] = response_format
    if request.get("toolConfig") is not None:
        params["toolChoice"] = request["toolConfig"]
    return params


def _call(fields: JsonObject) -> tuple[str, Any, str | None]:
    """A functionCall's name, arguments and id (None when it has none)."""
    call = _fields(fields["functionCall"], "a functionCall")
    args = call.get("args")
    provider_id = call.get("id")
    return (
        str(call.get("name", "")),
        ({} if args is None else args),
        (str(provider_id) if provider_id else None),
    )


def _history_ids(contents: list[JsonObject], ids: CallIds) -> Iterator[str]:
    """The neutral id of each call in the model turns, in order (see the module docstring)."""
    calls = [
        _call(fields)
        for content in contents
        if content.get("role") == "model"
        for kind, _, fields in map(_kind, _objects(content.get("parts"), "parts"))
        if kind == "functionCall"
    ]
    signatures = [call_signature(name, args) for name, args, _ in calls]
    total, seen = Counter(signatures), Counter[str]()
    for (_, _, provider_id), signature in zip(calls, signatures, strict=True):
        made = ids.made.get(signature, [])
        position = len(made) - total[signature] + seen[signature]  # matched from the latest back
        seen[signature] += 1
        if provider_id is not None:
            yield ids.neutral(provider_id)
        elif position >= 0:
            yield made[position]
        else:  # a call the model did not make in this run: numbered on, once
            yield ids.neutral(f"{signature}\x00#{seen[signature]}")


@dataclass
class _Reader:
    """One request's contents, in order: the neutral messages, and the call each response answers."""

    ids: CallIds
    history: Iterator[str]
    messages: list[JsonObject] = field(default_factory=list)
    answered: list[tuple[JsonObject, str]] = field(default_factory=list)  # (functionResponse, call id)
    pending: list[tuple[str, str]] = field(default_factory=list)  # the last model turn's calls unanswered
    texts: list[str] = field(default_factory=list)  # the model turn being read
    uses: list[JsonObject] = field(default_factory=list)
    in_model_turn: bool = False
    orphans: int = 0

    def model(self, parts: list[Any]) -> None:
        if not self.in_model_turn:
            self.in_model_turn, self.pending = True, []
        for part in parts:
            kind, value, fields = _kind(part)
            if kind == "text" and not fields.get("thought"):
                self.texts.append(value)
            elif kind == "functionCall":
                name, args, _ = _call(fields)
                call_id = next(self.history)
                self.uses.append(tool_use(call_id, name, args))
                self.pending.append((name, call_id))

    def end_model_turn(self) -> None:
        if not self.in_model_turn:
            return
        text = "".join(self.texts)
        content: Any = ([{"type": "text", "text": text}] if text else []) + self.uses if self.uses else text
        self.messages.append({"role": "assistant", "content": content})
        self.texts, self.uses, self.in_model_turn = [], [], False

    def user(self, parts: list[Any]) -> None:
        self.end_model_turn()
        out: list[JsonObject] = []
        for part in parts:
            kind, value, fields = _kind(part)
            if kind == "text" and not fields.get("thought"):
                out.append({"type": "text", "text": value})
            elif kind == "functionResponse":
                out.append(self._result(value))
            elif kind is not None and kind != "text":
                out.append({"type": kind, kind: value})
        if out and all(p["type"] == "tool_result" for p in out):
            for result in out:
                add_tool_result(self.messages, result)
        elif len(out) == 1 and out[0]["type"] == "text":
            self.messages.append({"role": "user", "content": out[0]["text"]})
        else:
            self.messages.append({"role": "user", "content": out or ""})

    def _result(self, value: Any) -> JsonObject:
        response = _fields(value, "a functionResponse")
        name, provider_id = str(response.get("name", "")), response.get("id")
        if provider_id:
            call_id = self.ids.neutral(str(provider_id))
        else:
            call_id = next((c for n, c in self.pending if n == name), "")
            if not call_id:  # nothing to answer: numbered on, once
                self.orphans += 1
                call_id = self.ids.neutral(f"{name}\x00answer#{self.orphans}")
        self.pending = [(n, c) for n, c in self.pending if c != call_id]
        self.answered.append((value, call_id))
        sent = response.get("response")
        key, inner = next(iter(sent.items())) if isinstance(sent, dict) and len(sent) == 1 else ("", None)
        part: JsonObject = {"type": "tool_result", "toolCallId": call_id, "toolName": name}
        if key == "error":
            return {**part, "error": _text(inner)}
        return {**part, "result": inner if key in _WRAPPERS else sent}  # JSON as sent, null included


def _read_contents(value: Any, ids: CallIds) -> tuple[list[JsonObject], list[tuple[JsonObject, str]]]:
    contents = [_fields(c, "a content") for c in _objects(value, "contents")]
    reader = _Reader(ids, _history_ids(contents, ids))
    for content in contents:
        parts = _objects(content.get("parts"), "parts")
        if content.get("role") == "model":
            reader.model(parts)
        else:
            reader.user(parts)
    reader.end_model_turn()
    return reader.messages, reader.answered


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _replaced(sent: Any, result: Any) -> JsonObject:
    """A functionResponse's ``response`` carrying ``result``, in the shape the agent used."""
    if isinstance(sent, dict) and len(sent) == 1:
        key = next(iter(sent))
        if key in _WRAPPERS:
            return {key: result}
        if key == "error":
            return {"result": result}  # the replacement is a successful result
    return result if isinstance(result, dict) else {"result": result}


# --- responses --------------------------------------------------------------------------------


def _stream_chunks(body: bytes) -> list[Any]:
    text = body.decode("utf-8")
    if text.lstrip().startswith("["):  # streamed without alt=sse: one JSON array
        chunks = json.loads(text)
        return list(chunks)
    return [json.loads(data) for data in sse_data(body)]


@dataclass
class _Turn:
    """What a response (or a whole stream) said: candidate 0's texts and calls, and why it stopped."""

    texts: list[str] = field(default_factory=list)
    calls: list[tuple[str, Any, str | None]] = field(default_factory=list)
    finish: str | None = None

    def add(self, chunk: Any) -> None:
        fields = _fields(chunk, "a GenerateContentResponse")
        if fields.get("error") is not None:
            raise ValueError(f"the API reported an error: {error_text(fields)}")
        candidates = _objects(fields.get("candidates"), "candidates")
        if not candidates:
            feedback = fields.get("promptFeedback")
            blocked = _fields(feedback, "promptFeedback").get("blockReason") if feedback else None
            if blocked:
                raise ValueError(f"the prompt was blocked ({blocked})")
            return  # a stream's chunk with only usage
        first = [_fields(c, "a candidate") for c in candidates]
        candidate = next((c for c in first if c.get("index", 0) == 0), first[0])
        content = candidate.get("content")
        for part in _objects(_fields(content, "content").get("parts"), "parts") if content else []:
            kind, value, fields = _kind(part, strict=False)
            if kind == "text" and not fields.get("thought"):
                self.texts.append(value)
            elif kind == "functionCall":
                self.calls.append(_call(fields))
        self.finish = candidate.get("finishReason") or self.finish

    def neutral(self, ids: CallIds) -> JsonObject:
        text = "".join(self.texts)
        if not text and not self.calls and self.finish not in _STOPPED:
            raise ValueError(f"the model gave no answer (finishReason {self.finish or 'missing'})")
        calls = [
            {"toolCallId": ids.made_call(call_signature(name, args), provider_id), "toolName": name,
             "toolInput": args}
            for name, args, provider_id in self.calls
        ]  # fmt: skip
        if not calls:
            return {"type": "final_answer", "text": text}
        output: JsonObject = {"type": "tool_calls", "calls": calls}
        if text:
            output["text"] = text
        return output


# --- synthesized responses --------------------------------------------------------------------


def _wire_chunks(output: JsonObject, model: str, *, streamed: bool) -> list[JsonObject]:
    """The response (one chunk) or the stream's chunks: text in several, the calls in the last."""
    text = output.get("text") if isinstance(output.get("text"), str) else ""
    calls: list[JsonObject] = []
    for call in tool_calls_of(output):
        if not isinstance(call.tool_input, dict):
            raise ValueError(
                f"the toolInput of {call.tool_call_id} is not a JSON object, as Gemini's args are"
            )
        calls.append(
            {"functionCall": {"id": call.tool_call_id, "name": call.tool_name, "args": call.tool_input}}
        )
    head = {"modelVersion": model, "responseId": f"blackbox-{digest(output)}"}

    def chunk(parts: list[JsonObject], last: bool) -> JsonObject:
        candidate: JsonObject = {"content": {"role": "model", "parts": parts}, "index": 0}
        if last:
            candidate["finishReason"] = "STOP"
        return {"candidates": [candidate], "usageMetadata": dict(_ZERO_USAGE), **head}

    texts = [{"text": t} for t in (pieces(str(text)) if streamed else [str(text)]) if t or not calls]
    if not streamed:
        return [chunk(texts + calls, True)]
    if calls:
        return [*(chunk([t], False) for t in texts), chunk(calls, True)]
    texts = texts or [{"text": ""}]
    return [chunk([t], position == len(texts) - 1) for position, t in enumerate(texts)]
