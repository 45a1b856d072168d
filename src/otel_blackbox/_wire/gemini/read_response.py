"""Gemini ``generateContent`` responses read into a neutral ``model_output`` and their token counts:
pure functions.

A ``GenerateContentResponse`` or its stream (SSE with ``alt=sse``, else one JSON array), read whole;
each candidate's parts are read as a request's model turn is (``contents.py``'s ``ModelParts``), so
that what a program sends back normalizes alike:

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
``ValueError``.

``usage`` reads the token counts apart (a stream's last ``usageMetadata``), as ``tokenUsage``:
``promptTokenCount`` (cached included; ``cachedContentTokenCount`` is ``cacheReadTokens``),
``candidatesTokenCount`` plus ``thoughtsTokenCount`` (the thinking is output).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from otel_blackbox._cassette.output import Extras, Hosted, sequence_of, with_extras
from otel_blackbox._cost.usage import count, usage_json
from otel_blackbox._types import JsonObject
from otel_blackbox._wire.call_ids import CallIds, call_signature
from otel_blackbox._wire.gemini.contents import ModelParts, fields, objects
from otel_blackbox._wire.gemini.fields import FOUND_FIELDS
from otel_blackbox._wire.gemini.stop_reasons import BLOCKED
from otel_blackbox._wire.neutral_parts import error_text, sse_data

__all__ = ["gemini_usage", "model_output", "usage"]

# finishReason -> stopReason; STOP, the normal end (tool use included), is not stored.
_STOP_REASONS = {"MAX_TOKENS": "max_tokens", "SAFETY": "content_filter"}


def model_output(body: bytes, *, streamed: bool, ids: CallIds) -> JsonObject:
    """A response body as ``model_output`` (``Provider.model_output``)."""
    turn = _Turn()
    for chunk in _stream_chunks(body) if streamed else [json.loads(body)]:
        turn.add(chunk)
    return turn.neutral(ids, streamed=streamed)


def usage(body: bytes, *, streamed: bool) -> JsonObject | None:
    """A response body's ``tokenUsage`` (``Provider.usage``)."""
    usage: Any = None  # a stream's chunks each carry the counts so far: the last wins
    for chunk in _stream_chunks(body) if streamed else [json.loads(body)]:
        usage = (chunk.get("usageMetadata") if isinstance(chunk, dict) else None) or usage
    return gemini_usage(usage)


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
        self.found.update({k: candidate[k] for k in FOUND_FIELDS.values() if candidate.get(k) is not None})

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
                return {"type": "final_answer", "text": "", "stopReason": f"{BLOCKED}{self.blocked}"}
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
