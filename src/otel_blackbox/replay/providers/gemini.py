"""Google Gemini ``generateContent`` (``POST .../models/MODEL:generateContent``, and
``:streamGenerateContent``): wire <-> neutral v2 payloads, pure functions.

The URL names the model (``/v1beta/models/gemini-2.5-flash:...``, ``/v1/...``, Vertex AI's
``.../publishers/google/models/NAME:...``) and whether the answer streams (SSE with ``alt=sse``, else
one JSON array): ``registry.provider_for`` hands out the translation bound to the request's URL
(``at``); ``url_with_model`` renames the model for ``rerun --model``. Field names are read in both
spellings the API's JSON takes (``generationConfig``, ``generation_config``).

Requests (``model_input``):

* ``contents`` -> ``messages``, and the ids of calls and results: see gemini_contents.py.
* ``systemInstruction``'s text parts, joined with a blank line, are ``systemPrompt``.
* ``tools``: ``functionDeclarations`` -> ``{name, description, inputSchema}`` (``parameters`` or
  ``parametersJsonSchema``); a built-in tool (``googleSearch``...) is named by its field.
* ``generationConfig`` -> ``params``: ``maxOutputTokens`` -> ``maxTokens``, ``temperature``, ``topP``,
  ``stopSequences`` -> ``stop``, ``responseMimeType`` / ``responseSchema`` / ``responseJsonSchema`` ->
  ``responseFormat`` (an object of those fields), every other setting under its own name but
  ``responseLogprobs`` / ``logprobs``; ``toolConfig`` -> ``toolChoice``. ``safetySettings``,
  ``cachedContent`` and ``labels`` are not kept.

A fork's rewrite (``replace_tool_result``) replaces the ``response`` of the ``functionResponse`` parts
that answer the id (numbered as ``model_input`` numbers them: by the ids the request carries, else in
order): the replacement goes under ``result`` / ``output`` where the agent sent that field alone,
under ``result`` where it sent a lone ``error`` (the replacement is a success), else it is the
response itself when it is an object, or ``{result: replacement}``.

Responses (``model_output``), a ``GenerateContentResponse`` or its stream: the first candidate's text
parts joined (thoughts dropped) and its function calls, numbered on (``CallIds.made_call``). Ids,
``usageMetadata``, ``finishReason``, ``modelVersion`` and ``responseId`` are dropped. An ``error``, a
blocked prompt, a candidate with no text and no call that did not stop normally, or a stream with
no ``finishReason`` raise ``ValueError``.

Synthesized responses (``wire_response``) carry the neutral ids as the calls' ``id`` (the SDK sends
them back), ``finishReason: STOP``, zero usage and an id derived from the output; a stream spreads
the text over several chunks and sends the calls in the last.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ...cassette.model import tool_calls_of
from ...messages import FUNCTION_OUTPUT_FIELDS
from .base import CallIds, JsonObject, WireResponse, call_signature, rewritten, wire_errors
from .gemini_contents import call_of, fields, objects, part_kind, read_contents, texts
from .openai_chat import JSON_HEADERS, SSE_HEADERS, digest, dumps, error_text, pieces, sse_data

__all__ = ["GeminiGenerateContent"]

_ENDPOINT = re.compile(r"/(models|tunedModels)/([^/:]+):(generateContent|streamGenerateContent)$")
_PARAMS = {"maxOutputTokens": "maxTokens", "temperature": "temperature", "topP": "topP",
           "stopSequences": "stop"}  # fmt: skip
_FORMAT = ("responseMimeType", "responseSchema", "responseJsonSchema")
# How log-probabilities are reported, not what is asked; "logprobs" is also a key verify refuses.
_NOT_KEPT = ("responseLogprobs", "logprobs")
_STOPPED = ("STOP", "MAX_TOKENS")  # an empty answer that stopped so is still an answer
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
        wire = fields(request, "the request")
        messages, _ = read_contents(wire.get("contents"), ids)
        payload: JsonObject = {"messages": messages, "tools": _tools(wire.get("tools"))}
        if wire.get("systemInstruction") is not None:
            payload["systemPrompt"] = _system(wire["systemInstruction"])
        if self.model is not None:
            payload["model"] = self.model
        params = _params(wire)
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
            _, answered = read_contents(fields(body, "the request").get("contents"), CallIds())
            return [response for response, call_id in answered if call_id == tool_call_id]

        def rewrite(response: JsonObject) -> None:
            # A copy each time: the new request shares nothing with the caller's value either.
            response["response"] = _replaced(response.get("response"), copy.deepcopy(result))

        return rewritten(request, targets, rewrite)


# --- requests ---------------------------------------------------------------------------------


def _system(value: Any) -> str:
    if isinstance(value, str):  # the SDK sends a Content; a string is what a user means
        return value
    return "\n\n".join(texts(objects(fields(value, "systemInstruction").get("parts"), "its parts")))


def _tools(value: Any) -> list[JsonObject]:
    tools: list[JsonObject] = []
    for tool in objects(value, "tools"):
        for key, spec in fields(tool, "a tool").items():
            if key != "functionDeclarations":
                tools.append({"name": key, "description": ""})  # a built-in tool: googleSearch...
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
                tools.append(neutral)
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
            params[_PARAMS.get(key, key)] = value
    if response_format:
        params["responseFormat"] = response_format
    if request.get("toolConfig") is not None:
        params["toolChoice"] = request["toolConfig"]
    return params


def _replaced(sent: Any, result: Any) -> JsonObject:
    """A functionResponse's ``response`` carrying ``result``, in the shape the agent used."""
    if isinstance(sent, dict) and len(sent) == 1:
        key = next(iter(sent))
        if key in FUNCTION_OUTPUT_FIELDS:
            return {key: result}
        if key == "error":
            return {"result": result}  # the replacement is a successful result
    return result if isinstance(result, dict) else {"result": result}


# --- responses --------------------------------------------------------------------------------


def _stream_chunks(body: bytes) -> list[Any]:
    if body.decode("utf-8").lstrip().startswith("["):  # streamed without alt=sse: one JSON array
        return list(json.loads(body))
    return [json.loads(data) for data in sse_data(body)]


@dataclass
class _Turn:
    """What a response (or a whole stream) said: candidate 0's texts and calls, and why it stopped."""

    texts: list[str] = field(default_factory=list)
    calls: list[tuple[str, Any, str | None]] = field(default_factory=list)
    finish: str | None = None

    def add(self, chunk: Any) -> None:
        response = fields(chunk, "a GenerateContentResponse")
        if response.get("error") is not None:
            raise ValueError(f"the API reported an error: {error_text(response)}")
        candidates = objects(response.get("candidates"), "candidates")
        if not candidates:
            feedback = response.get("promptFeedback")
            blocked = fields(feedback, "promptFeedback").get("blockReason") if feedback else None
            if blocked:
                raise ValueError(f"the prompt was blocked ({blocked})")
            return  # a stream's chunk with only usage
        first = [fields(c, "a candidate") for c in candidates]
        candidate = next((c for c in first if c.get("index", 0) == 0), first[0])
        content = candidate.get("content")
        for part in objects(fields(content, "content").get("parts"), "parts") if content else []:
            kind, value, found = part_kind(part, strict=False)
            if kind == "text" and not found.get("thought"):
                self.texts.append(value)
            elif kind == "functionCall":
                self.calls.append(call_of(found))
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

    said = [{"text": t} for t in (pieces(str(text)) if streamed else [str(text)]) if t or not calls]
    if not streamed:
        return [chunk(said + calls, True)]
    if calls:
        return [*(chunk([t], False) for t in said), chunk(calls, True)]
    said = said or [{"text": ""}]
    return [chunk([t], position == len(said) - 1) for position, t in enumerate(said)]
