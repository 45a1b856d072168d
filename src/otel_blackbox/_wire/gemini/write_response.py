"""Gemini ``generateContent`` responses synthesized from a neutral ``model_output``, for replay: pure
functions.

Each candidate's parts are rebuilt in the order ``sequence`` says, else the canonical one: thought
parts (``{text, thought: true, thoughtSignature}``, one a reasoning entry), hosted tools' parts, the
text (one part a piece; its signature on the last part of the last piece, or on an empty text part
before the calls where only the signature is), the calls (with the neutral ids as their ``id``: the
SDK sends them back, and their signatures); the candidate's ``finishReason`` (``STOP`` by default;
``max_tokens`` -> ``MAX_TOKENS``, ``content_filter`` -> ``SAFETY``, ``stop_sequence`` and
``refusal``, which Gemini reports as ``STOP``, -> ``STOP``, any other as it is),
``groundingMetadata`` / ``urlContextMetadata``; the choices as candidates 1, 2...; zero usage and an
id derived from the output. An empty plain answer has one empty text part, one that stopped otherwise
no content (as the API sends a blocked answer); a blocked prompt is a response with no candidates and
its ``promptFeedback``. A stream (SSE with ``alt=sse`` in the URL, else one JSON array) sends each
candidate's parts in the same order: each piece of text spread over chunks of its own, the calls in a
row together, the parts between together, the finishReason on its last chunk.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from otel_blackbox._cassette.model import tool_calls_of
from otel_blackbox._cassette.output import Hosted, Reasoning, extras_of, ordered
from otel_blackbox._cost.usage import without_usage
from otel_blackbox._types import JsonObject
from otel_blackbox._wire.gemini.contents import CODE_EXECUTION
from otel_blackbox._wire.gemini.fields import FOUND_FIELDS
from otel_blackbox._wire.gemini.stop_reasons import BLOCKED
from otel_blackbox._wire.neutral_parts import JSON_HEADERS, SSE_HEADERS, digest, dumps, pieces
from otel_blackbox._wire.protocol import WireResponse

__all__ = ["wire_response"]

# stopReason -> finishReason: Gemini reports a stop sequence as STOP, and has no refusal of its own.
_FINISH_REASONS = {"max_tokens": "MAX_TOKENS", "content_filter": "SAFETY", "stop_sequence": "STOP",
                   "refusal": "STOP"}  # fmt: skip
# Agents that log cost read usage without a None check; replay has no token counts to give.
_ZERO_USAGE = {"promptTokenCount": 0, "candidatesTokenCount": 0, "totalTokenCount": 0}


def wire_response(output: JsonObject, *, model: str | None, url: str, streamed: bool) -> WireResponse:
    """``model_output`` as a response for the request to ``url``, a stream when ``streamed``, ``model``
    the one the URL names (``Provider.wire_response``)."""
    output = without_usage(output)  # not behaviour: replay sends zero usage, ids as before
    chunks = _wire_chunks(output, model or "", streamed=streamed)
    if not streamed:
        return WireResponse(200, list(JSON_HEADERS), dumps(chunks[0]).encode())
    if "alt=sse" not in urlsplit(url).query:  # without it the API streams one JSON array
        return WireResponse(200, list(JSON_HEADERS), dumps(chunks).encode())
    events = "".join(f"data: {dumps(chunk)}\r\n\r\n" for chunk in chunks)
    return WireResponse(200, list(SSE_HEADERS), events.encode())


def _wire_chunks(output: JsonObject, model: str, *, streamed: bool) -> list[JsonObject]:
    """The response (one chunk) or the stream's chunks: chunk N holds each candidate's Nth."""
    head = {"modelVersion": model, "responseId": f"blackbox-{digest(output)}"}
    extras = extras_of(output)
    if extras.stop_reason is not None and extras.stop_reason.startswith(BLOCKED):
        feedback = {"blockReason": extras.stop_reason.removeprefix(BLOCKED)}
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
        where = FOUND_FIELDS.get(tool.tool_name)
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
    if name in FOUND_FIELDS:
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
