"""Google Gemini ``generateContent`` (``POST .../models/MODEL:generateContent``, and
``:streamGenerateContent``): wire <-> neutral v2 payloads, pure functions.

The URL names the model (``/v1beta/models/gemini-2.5-flash:...``, ``/v1/...``, Vertex AI's
``.../publishers/google/models/NAME:...``) and whether the answer streams (SSE with ``alt=sse``, else
one JSON array): ``registry.provider_for`` hands out the translation bound to the request's URL
(``at``); ``url_with_model`` renames the model for ``rerun --model``. Field names are read in both
spellings the API's JSON takes (``generationConfig``, ``generation_config``).

Requests (``model_input``):

* ``contents`` -> ``messages``, and the ids of calls and results: see gemini_contents.py. A model turn
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
  are sorted by ``REQUEST_FIELDS``: ``safetySettings``, ``cachedContent`` and any field it does not
  know under their own names; ``labels``, ``serviceTier``, ``store`` and ``continuationToken`` are
  transport, not kept.

A fork's rewrite (``replace_tool_result``) replaces the ``response`` of the ``functionResponse`` parts
that answer the id (numbered as ``model_input`` numbers them: by the ids the request carries, else in
order): the replacement goes under ``result`` / ``output`` where the agent sent that field alone,
under ``result`` where it sent a lone ``error`` (the replacement is a success), else it is the
response itself when it is an object, or ``{result: replacement}``.

Responses (``model_output``), a ``GenerateContentResponse`` or its stream (SSE with ``alt=sse``, else
one JSON array), read whole; each candidate's parts are read as a request's model turn is
(gemini_contents.py's ``ModelParts``), so that what a program sends back normalizes alike:

* its texts joined (``text``) and its function calls (``calls``), numbered on (``CallIds.made_call``);
* ``thought: true`` parts -> ``reasoning`` ``{text?, signature?}``: their text joined until a
  ``thoughtSignature`` or a part of another kind ends one;
* a ``thoughtSignature`` on a function call -> that call's ``signature``; on a text part (or alone on
  a part of metadata only) -> ``textSignature``;
* ``hostedTools``, in order: ``executableCode`` + ``codeExecutionResult`` ->
  ``{toolName: code_execution, toolInput: {language, code}, result: {outcome, output}}``; a server-side
  ``toolCall`` + ``toolResponse`` -> ``{toolName: <toolType, lower case>, toolInput: args, result:
  response}``; then the candidate's ``groundingMetadata`` -> ``{toolName: google_search, result:
  <the groundingMetadata as sent>}`` (``grounding`` when it holds neither ``webSearchQueries`` nor a
  ``searchEntryPoint``: Maps, a retrieval store) and its ``urlContextMetadata`` ->
  ``{toolName: url_context, result: ...}``. The parts' and results' ``id`` are not kept;
* the parts' order, when it is not the canonical one (thoughts, hosted tools, text, calls) or the text
  came in several pieces -> ``sequence`` and ``textParts``: text parts with no other part between them
  are one piece (a stream's many text parts, as the SDK's ``response.text`` joins them), an empty piece
  is no part, and what the candidate's metadata found comes after the parts' hosted tools;
* ``finishReason`` -> ``stopReason``: ``MAX_TOKENS`` is ``max_tokens``, ``SAFETY`` is
  ``content_filter``, any other but ``STOP`` (``RECITATION``, ``PROHIBITED_CONTENT``,
  ``MALFORMED_FUNCTION_CALL``...) as sent. A candidate that stopped with nothing said (``SAFETY``
  with no content) is a ``final_answer`` whose ``text`` is ``""``;
* with ``candidateCount`` > 1, the candidate of the lowest ``index`` is the output and the others, in
  ``index`` order, its ``choices``, their calls numbered after its own;
* a prompt blocked outright (no candidates, ``promptFeedback.blockReason``) is a ``final_answer``
  with ``text`` ``""`` and ``stopReason`` ``prompt_blocked:<blockReason>``, so a program that handles
  the block replays.

Dropped: ids, ``usageMetadata``, ``modelVersion``, ``responseId``, ``safetyRatings`` (the prompt's and
the candidates': a classifier's scores, not what the model said; ``stopReason`` keeps the verdict),
``citationMetadata``, ``finishMessage``, ``avgLogprobs`` / ``logprobsResult``, ``tokenCount``, and a
``thought`` flag or signature on a hosted tool's part. An ``error``, a response with no candidates
that is not a blocked prompt, or a stream whose first candidate has no ``finishReason`` raise
``ValueError``. ``usage`` reads the token counts apart (a stream's last ``usageMetadata``), as
``tokenUsage``: ``promptTokenCount`` (cached included; ``cachedContentTokenCount`` is
``cacheReadTokens``), ``candidatesTokenCount`` plus ``thoughtsTokenCount`` (the thinking is output).

Synthesized responses (``wire_response``) rebuild each candidate's parts in the order ``sequence``
says, else the canonical one: thought parts (``{text, thought: true, thoughtSignature}``, one a
reasoning entry), hosted tools' parts, the text (one part a piece; its signature on the last part of
the last piece, or on an empty text part before the calls where only the signature is), the calls
(with the neutral ids as their ``id``: the SDK sends them back, and their signatures); the
candidate's ``finishReason`` (``STOP`` by default; ``max_tokens`` -> ``MAX_TOKENS``,
``content_filter`` -> ``SAFETY``, ``stop_sequence`` and ``refusal``, which Gemini reports as
``STOP``, -> ``STOP``, any other as it is), ``groundingMetadata`` / ``urlContextMetadata``; the choices
as candidates 1, 2...; zero usage and an id derived from the output. An empty plain answer has one
empty text part, one that stopped otherwise no content (as the API sends a blocked answer); a
blocked prompt is a response with no candidates and its ``promptFeedback``. A stream sends each
candidate's parts in the same order: each piece of text spread over chunks of its own, the calls in a
row together, the parts between together, the finishReason on its last chunk.

Neutral -> wire (``wire_request``), the other direction of ``model_input``: gemini_requests.py
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from otel_blackbox._cassette.model import tool_calls_of
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
from otel_blackbox._spans.messages import FUNCTION_OUTPUT_FIELDS
from otel_blackbox._wire.gemini.contents import (
    CODE_EXECUTION,
    ModelParts,
    fields,
    objects,
    read_contents,
    texts,
)
from otel_blackbox._wire.gemini.fields import GENERATION_PARAMS
from otel_blackbox._wire.gemini.requests import gemini_request
from otel_blackbox._wire.neutral_parts import (
    JSON_HEADERS,
    SSE_HEADERS,
    digest,
    dumps,
    error_text,
    pieces,
    sse_data,
)
from otel_blackbox._wire.protocol import (
    CallIds,
    JsonObject,
    WireRequest,
    WireResponse,
    call_signature,
    rewritten,
    tool_settings,
    wire_errors,
)
from otel_blackbox._wire.request_fields import GEMINI_FIELDS

__all__ = ["REQUEST_FIELDS", "GeminiGenerateContent"]

# The table lives on the analysis side, beside the other APIs'.
REQUEST_FIELDS = GEMINI_FIELDS

_ENDPOINT = re.compile(r"/(models|tunedModels)/([^/:]+):(generateContent|streamGenerateContent)$")
_FORMAT = ("responseMimeType", "responseSchema", "responseJsonSchema")
# How log-probabilities are reported, not what is asked; "logprobs" is also a key verify refuses.
_NOT_KEPT = ("responseLogprobs", "logprobs")
# finishReason -> stopReason; STOP, the normal end (tool use included), is not stored.
_STOP_REASONS = {"MAX_TOKENS": "max_tokens", "SAFETY": "content_filter"}
# stopReason -> finishReason: Gemini reports a stop sequence as STOP, and has no refusal of its own.
_FINISH_REASONS = {"max_tokens": "MAX_TOKENS", "content_filter": "SAFETY", "stop_sequence": "STOP",
                   "refusal": "STOP"}  # fmt: skip
_BLOCKED = "prompt_blocked:"  # the stopReason of a prompt blocked outright, before its blockReason
# The hostedTools a candidate's metadata holds (not parts), and the field each one is.
_FOUND_FIELDS = {"google_search": "groundingMetadata", "grounding": "groundingMetadata",
                 "url_context": "urlContextMetadata"}  # fmt: skip
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
        return turn.neutral(ids, streamed=streamed)

    @wire_errors("a Gemini generateContent response")
    def usage(self, body: bytes, *, streamed: bool) -> JsonObject | None:
        usage: Any = None  # a stream's chunks each carry the counts so far: the last wins
        for chunk in _stream_chunks(body) if streamed else [json.loads(body)]:
            usage = (chunk.get("usageMetadata") if isinstance(chunk, dict) else None) or usage
        return gemini_usage(usage)

    @wire_errors("a model_output to send as a Gemini generateContent response")
    def wire_response(self, output: JsonObject, request: JsonObject) -> WireResponse:
        output = without_usage(output)  # not behaviour: replay sends zero usage, ids as before
        chunks = _wire_chunks(output, self.model or "", streamed=self.is_streaming(request))
        if not self.is_streaming(request):
            return WireResponse(200, list(JSON_HEADERS), dumps(chunks[0]).encode())
        if "alt=sse" not in urlsplit(self.url).query:  # without it the API streams one JSON array
            return WireResponse(200, list(JSON_HEADERS), dumps(chunks).encode())
        events = "".join(f"data: {dumps(chunk)}\r\n\r\n" for chunk in chunks)
        return WireResponse(200, list(SSE_HEADERS), events.encode())

    @wire_errors("a model_input to send as a Gemini generateContent request")
    def wire_request(self, model_input: JsonObject, *, stream: bool, native: bool) -> WireRequest:
        return gemini_request(model_input, native=native)  # the URL says whether it streams

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


def _stop_reason(finish: Any) -> str | None:
    if finish is None or finish == "STOP":
        return None
    if not isinstance(finish, str):
        raise ValueError("a candidate's finishReason is not a string")
    return _STOP_REASONS.get(finish, finish)


def _found_tools(found: JsonObject) -> list[Hosted]:
    """The hosted tools a candidate's metadata reports: what grounding and URL context fetched."""
    tools: list[Hosted] = []
    grounding = found.get("groundingMetadata")
    if grounding is not None:
        searched = {"webSearchQueries", "searchEntryPoint"} & set(fields(grounding, "groundingMetadata"))
        tools.append(Hosted("google_search" if searched else "grounding", result=grounding))
    if found.get("urlContextMetadata") is not None:
        tools.append(Hosted("url_context", result=found["urlContextMetadata"]))
    return tools


@dataclass
class _Candidate:
    """What one candidate said, over a whole stream, and why it stopped."""

    parts: ModelParts = field(default_factory=ModelParts)
    finish: Any = None
    found: JsonObject = field(default_factory=dict)  # its groundingMetadata... (the last sent)

    def add(self, candidate: JsonObject) -> None:
        content = candidate.get("content")
        for part in objects(fields(content, "content").get("parts"), "parts") if content else []:
            self.parts.add(part, strict=False)
        self.finish = candidate.get("finishReason") or self.finish
        self.found.update({k: candidate[k] for k in _FOUND_FIELDS.values() if candidate.get(k) is not None})

    def neutral(self, ids: CallIds) -> JsonObject:
        calls: list[JsonObject] = []
        for name, args, provider_id, signature in self.parts.calls:
            call = {"toolCallId": ids.made_call(call_signature(name, args), provider_id), "toolName": name,
                    "toolInput": args}  # fmt: skip
            calls.append(call if signature is None else {**call, "signature": signature})
        text = self.parts.text
        output: JsonObject = {"type": "final_answer", "text": text}
        if calls:
            output = {"type": "tool_calls", "calls": calls, **({"text": text} if text else {})}
        found = _found_tools(self.found)
        kinds, pieces = self.parts.order()
        # What the metadata found is no part: after the parts' hosted tools (each takes the next), where
        # the canonical order has them.
        at = len(kinds) - kinds[::-1].index("hosted") if "hosted" in kinds else _leading(kinds, "reasoning")
        sequence, text_parts = sequence_of(kinds[:at] + ["hosted"] * len(found) + kinds[at:], pieces)
        extras = Extras(
            stop_reason=_stop_reason(self.finish),
            reasoning=self.parts.reasoning,
            hosted=[*self.parts.hosted, *found],
            text_signature=self.parts.text_signature,
            sequence=sequence,
            text_parts=text_parts,
        )
        return with_extras(output, extras)


def _leading(kinds: list[str], kind: str) -> int:
    return next((n for n, k in enumerate(kinds) if k != kind), len(kinds))


@dataclass
class _Turn:
    """What a response (or a whole stream) said: each candidate by its index, or the prompt's block."""

    candidates: dict[int, _Candidate] = field(default_factory=dict)
    blocked: str | None = None

    def add(self, chunk: Any) -> None:
        response = fields(chunk, "a GenerateContentResponse")
        if response.get("error") is not None:
            raise ValueError(f"the API reported an error: {error_text(response)}")
        candidates = objects(response.get("candidates"), "candidates")
        if not candidates:
            feedback = response.get("promptFeedback")
            blocked = fields(feedback, "promptFeedback").get("blockReason") if feedback else None
            if blocked:
                self.blocked = str(blocked)
            return  # a stream's chunk with only usage
        for position, value in enumerate(candidates):
            candidate = fields(value, "a candidate")
            index = candidate.get("index")
            index = position if index is None else index  # proto3 JSON leaves out an index of 0
            if not isinstance(index, int):
                raise ValueError("a candidate's index is not an integer")
            self.candidates.setdefault(index, _Candidate()).add(candidate)

    def neutral(self, ids: CallIds, *, streamed: bool) -> JsonObject:
        if not self.candidates:
            if self.blocked is not None:
                return {"type": "final_answer", "text": "", "stopReason": f"{_BLOCKED}{self.blocked}"}
            raise ValueError(
                "the stream ended before a finishReason"
                if streamed
                else "the model gave no answer (no candidates)"
            )
        first, *others = (self.candidates[index] for index in sorted(self.candidates))
        if streamed and first.finish is None:
            raise ValueError("the stream ended before a finishReason")
        output = first.neutral(ids)  # first: the choices' calls are numbered after its own
        choices = [choice.neutral(ids) for choice in others]
        return {**output, "choices": choices} if choices else output


def gemini_usage(usage: Any) -> JsonObject | None:
    """The ``tokenUsage`` of ``usageMetadata``: the thoughts are output tokens, which
    ``candidatesTokenCount`` leaves out."""
    if not isinstance(usage, dict):
        return None
    candidates, thoughts = count(usage.get("candidatesTokenCount")), count(usage.get("thoughtsTokenCount"))
    output = None if candidates is None and thoughts is None else (candidates or 0) + (thoughts or 0)
    cached = count(usage.get("cachedContentTokenCount"))
    return usage_json(count(usage.get("promptTokenCount")), output, cached)


# --- synthesized responses --------------------------------------------------------------------


def _wire_chunks(output: JsonObject, model: str, *, streamed: bool) -> list[JsonObject]:
    """The response (one chunk) or the stream's chunks: chunk N holds each candidate's Nth."""
    head = {"modelVersion": model, "responseId": f"blackbox-{digest(output)}"}
    extras = extras_of(output)
    if extras.stop_reason is not None and extras.stop_reason.startswith(_BLOCKED):
        feedback = {"blockReason": extras.stop_reason.removeprefix(_BLOCKED)}
        return [{"promptFeedback": feedback, "usageMetadata": dict(_ZERO_USAGE), **head}]
    each = [
        _candidate_chunks(o, index, streamed=streamed) for index, o in enumerate([output, *extras.choices])
    ]
    return [
        {"candidates": [c[n] for c in each if n < len(c)], "usageMetadata": dict(_ZERO_USAGE), **head}
        for n in range(max(map(len, each)))
    ]


def _candidate_chunks(output: JsonObject, index: int, *, streamed: bool) -> list[JsonObject]:
    """One candidate's parts in the order ``sequence`` says, else the canonical one (thoughts, hosted
    tools, text, calls); the finishReason and what its hosted tools found on the last of its chunks."""
    extras = extras_of(output)
    parts: list[JsonObject] = []
    for kind, value in ordered(output, extras, _call_parts(output)):
        if kind == "reasoning":
            parts.append(_thought_part(value))
        elif kind == "hosted":
            parts += _hosted_parts(value)
        elif kind == "call":
            parts.append(value)
        else:
            parts += [{"text": t} for t in (pieces(value) if streamed else [value]) if t]
    said = [n for n, p in enumerate(parts) if _is_text(p)]
    if extras.text_signature is not None:
        if not said:  # the signature alone: an empty text part, before the calls
            at = next((n for n, p in enumerate(parts) if "functionCall" in p), len(parts))
            parts.insert(at, {"text": ""})
            said = [at]
        parts[said[-1]]["thoughtSignature"] = extras.text_signature
    finish = _FINISH_REASONS.get(extras.stop_reason or "STOP", extras.stop_reason or "STOP")
    if not parts and finish == "STOP":
        parts = [{"text": ""}]  # an empty answer, as the API sends one
    groups = _stream_groups(parts) if streamed else [parts]
    candidates: list[JsonObject] = [
        {"content": {"role": "model", "parts": group}, "index": index} for group in groups if group
    ] or [{"index": index}]  # nothing said: no content, as the API sends an answer it blocked
    candidates[-1]["finishReason"] = finish
    for tool in extras.hosted:
        where = _FOUND_FIELDS.get(tool.tool_name)
        if where is not None and tool.has_result:
            candidates[-1][where] = _object(tool.result, f"the result of {tool.tool_name}")
    return candidates


def _is_text(part: JsonObject) -> bool:
    return "text" in part and not part.get("thought")


def _stream_groups(parts: list[JsonObject]) -> list[list[JsonObject]]:
    """A stream's chunks of parts: each piece of text alone, the calls together, the parts between
    together."""
    groups: list[list[JsonObject]] = []
    for part in parts:
        last = groups[-1][-1] if groups else None
        if (
            last is None
            or _is_text(part)
            or _is_text(last)
            or ("functionCall" in part) != ("functionCall" in last)
        ):
            groups.append([part])
        else:
            groups[-1].append(part)
    return groups


def _thought_part(reasoning: Reasoning) -> JsonObject:
    part: JsonObject = {} if reasoning.text is None else {"text": reasoning.text}
    part["thought"] = True
    if reasoning.signature is not None:
        part["thoughtSignature"] = reasoning.signature
    return part


def _hosted_parts(tool: Hosted) -> list[JsonObject]:
    """A hosted tool's parts: the code and its result, or the server-side toolCall and toolResponse."""
    name = tool.tool_name
    if name in _FOUND_FIELDS:
        return []  # candidate metadata, not parts
    if name == CODE_EXECUTION:
        code = [{"executableCode": _object(tool.tool_input, "the code")}] if tool.has_input else []
        ran = [{"codeExecutionResult": _object(tool.result, "the code's result")}] if tool.has_result else []
        return code + ran
    call: JsonObject = {"toolType": name.upper()}  # the model sends no toolResponse without its toolCall
    if tool.has_input:
        call["args"] = _object(tool.tool_input, f"the input of {name}")
    if not tool.has_result:
        return [{"toolCall": call}]
    response = {"toolType": name.upper(), "response": _object(tool.result, f"the result of {name}")}
    return [{"toolCall": call}, {"toolResponse": response}]


def _object(value: Any, what: str) -> JsonObject:
    if not isinstance(value, dict):
        raise ValueError(f"{what} is not a JSON object, as Gemini's is")
    return value


def _call_parts(output: JsonObject) -> list[JsonObject]:
    """The functionCall parts, with the neutral ids and the calls' signatures."""
    raw = output.get("calls") if output.get("type") == "tool_calls" else [output]
    signed = [c for c in raw if isinstance(c, dict)] if isinstance(raw, list) else []
    parts: list[JsonObject] = []
    for call, sent in zip(tool_calls_of(output), signed, strict=False):
        if not isinstance(call.tool_input, dict):
            raise ValueError(
                f"the toolInput of {call.tool_call_id} is not a JSON object, as Gemini's args are"
            )
        part: JsonObject = {
            "functionCall": {"id": call.tool_call_id, "name": call.tool_name, "args": call.tool_input}
        }
        signature = sent.get("signature")
        if signature is not None:
            if not isinstance(signature, str):
                raise ValueError(f"the signature of {call.tool_call_id} is not a string")
            part["thoughtSignature"] = signature
        parts.append(part)
    return parts
