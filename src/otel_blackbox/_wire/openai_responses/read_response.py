"""OpenAI Responses API responses read into a neutral ``model_output`` and their token counts: pure
functions.

A JSON ``response`` or its event stream: the ``output_text`` of the ``message`` items joined, and the
``function_call`` items as calls with ``call-N`` ids; besides them (``_cassette/output.py``), a
``status: incomplete`` response's ``incomplete_details.reason`` as ``stopReason``
(``max_output_tokens`` -> ``max_tokens``, ``content_filter``, any other reason as sent,
``incomplete`` when it names none: ``stop_reasons.py``), the messages' refusal parts joined as
``refusal``, each ``reasoning`` item as a ``reasoning`` entry, each hosted tool call as a
``hostedTools`` entry (``items.py``'s table), and, when the items are not in the canonical order or
the text came in several pieces, ``sequence`` and ``textParts``: each non-empty output_text part of
each message is one text piece (a message of only a refusal is no part), each ``reasoning``, hosted
call and ``function_call`` one part.

The Responses API has no ``n`` choices. A stream is read as the SDK reads it: the
``response.completed`` (or ``response.incomplete``) output, or the items rebuilt from
``output_item`` events and deltas when it has none. Dropped: ids, usage, timestamps, the served
model's name, ``output_text`` annotations (web search citations) and logprobs, a message's
``phase``. A failed response, an ``error`` event or a stream cut short raises ``ValueError``.

``usage`` reads the token counts apart (a stream's from its final response), as ``tokenUsage``:
``input_tokens`` (cached included), ``output_tokens``, ``input_tokens_details.cached_tokens`` /
``cache_write_tokens``.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from otel_blackbox._cassette.output import Extras, sequence_of, with_extras
from otel_blackbox._cost.usage import count, usage_json
from otel_blackbox._types import JsonObject
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.neutral_parts import Turn, error_text, objects_of, sse_data
from otel_blackbox._wire.openai_responses.items import hosted_of, is_hosted, reasoning_of, refusal_of, text_of
from otel_blackbox._wire.openai_responses.stop_reasons import NO_REASON, STOP_REASONS
from otel_blackbox._wire.protocol import add_piece, join_pieces

__all__ = ["model_output", "responses_usage", "usage"]


def model_output(body: bytes, *, streamed: bool, ids: CallIds) -> JsonObject:
    """A response body as ``model_output`` (``Provider.model_output``)."""
    response = _stream_response(body) if streamed else _json_response(body)
    items = [i for i in response["output"] if isinstance(i, dict)]
    return with_extras(_turn(items).neutral(ids), _extras(response, items))


def usage(body: bytes, *, streamed: bool) -> JsonObject | None:
    """A response body's ``tokenUsage`` (``Provider.usage``)."""
    if not streamed:
        response = json.loads(body)
        return responses_usage(response.get("usage") if isinstance(response, dict) else None)
    for data in sse_data(body):  # the usage is the final response's
        event = json.loads(data) if not data.startswith("[DONE]") else None
        if isinstance(event, dict) and event.get("type") in ("response.completed", "response.incomplete"):
            final = event.get("response")
            return responses_usage(final.get("usage") if isinstance(final, dict) else None)
    return None


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
    text = "".join(text_of(i.get("content")) for i in items if i.get("type") == "message")
    calls = [
        (str(i.get("call_id") or ""), str(i.get("name", "")), i.get("arguments", ""))
        for i in items
        if i.get("type") == "function_call"
    ]
    return Turn(text, calls)


def _extras(response: JsonObject, items: list[JsonObject]) -> Extras:
    refusals = [refusal_of(i.get("content")) for i in items if i.get("type") == "message"]
    found = [r for r in refusals if r is not None]
    sequence, text_parts = sequence_of(*_order(items))
    return Extras(
        stop_reason=_stop_reason(response),
        refusal="".join(found) if found else None,
        reasoning=[reasoning_of(i) for i in items if i.get("type") == "reasoning"],
        hosted=[hosted_of(i) for i in items if is_hosted(i)],
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
            given = [content] if isinstance(content, str) else [text_of([p]) for p in objects_of(content)]
            pieces = [t for t in given if t]
            kinds += ["text"] * len(pieces)
            texts += pieces
        elif kind == "reasoning":
            kinds.append("reasoning")
        elif kind == "function_call":
            kinds.append("call")
        elif is_hosted(item):
            kinds.append("hosted")
    return kinds, texts


def _stop_reason(response: JsonObject) -> str | None:
    if response.get("status") != "incomplete":
        return None
    details = response.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, dict) else None
    if reason is None:
        return NO_REASON
    return STOP_REASONS.get(str(reason), str(reason))
