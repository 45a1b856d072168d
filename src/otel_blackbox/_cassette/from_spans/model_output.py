"""An LLM span's answer as a ``model_output``.

A final answer, or the tool calls the model made (with its text), with what the spans saw beyond
them: why the model stopped, its reasoning texts (spans record no signatures), and the tools the
provider ran. The span's token counts (with its cached, cache-write and reasoning details) are its
``tokenUsage``; the providers' stop metadata never enters a payload.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from otel_blackbox._cassette.from_spans.calls import CallNumbering, json_or_text
from otel_blackbox._cassette.from_spans.sources import with_arguments
from otel_blackbox._cassette.output import Extras, Hosted, Reasoning, neutral_stop_reason, with_extras
from otel_blackbox._cost.spans import usage_of_tokens
from otel_blackbox._cost.usage import usage_json, with_usage
from otel_blackbox._spans.messages import HostedCall, Message
from otel_blackbox._spans.view.registry import view_of
from otel_blackbox._store.queries import SpanRecord


def model_output_of(span: SpanRecord, calls: CallNumbering) -> dict[str, Any] | None:
    messages = with_arguments(span, view_of(span).output_messages)
    if not messages:
        return None
    return with_usage(with_extras(_turn_of(messages, calls), _extras_of(span, messages)), _usage_of(span))


def _usage_of(span: SpanRecord) -> dict[str, Any] | None:
    """The span's token counts as ``tokenUsage``: its prompt and completion columns, with the cached,
    cache-write and reasoning details its attributes hold (otel_blackbox._cost.spans reads them)."""
    tokens = usage_of_tokens(view_of(span).tokens)
    if tokens is None:
        return None
    return usage_json(tokens.input, tokens.output, tokens.cache_read, tokens.cache_write)


def _extras_of(span: SpanRecord, messages: list[Message]) -> Extras:
    """What the spans saw beyond text and calls: why the model stopped, its reasoning texts (spans
    record no signatures), and the tools the provider ran (GenAI's builtin calls)."""
    recorded = [m.finish_reason for m in messages if m.finish_reason] + view_of(span).finish_reasons
    return Extras(
        stop_reason=next((r for r in map(neutral_stop_reason, recorded) if r), None),
        reasoning=[Reasoning(text=text) for m in messages for text in m.reasoning],
        hosted=[_hosted(h) for m in messages for h in m.hosted],
    )


def _hosted(call: HostedCall) -> Hosted:
    hosted = Hosted(call.name)
    if call.arguments is not None:
        hosted = replace(hosted, tool_input=json_or_text(call.arguments))
    return hosted if call.result is None else replace(hosted, result=call.result)


def _turn_of(messages: list[Message], calls: CallNumbering) -> dict[str, Any]:
    text = "\n".join(m.content for m in messages if m.content)
    tool_calls = [c for m in messages for c in m.tool_calls]
    if not tool_calls:
        return {"type": "final_answer", "text": text}
    payload: dict[str, Any] = {
        "type": "tool_calls",
        "calls": [
            {
                "toolCallId": calls.made(c),
                "toolName": c.tool_name or "unknown",
                "toolInput": json_or_text(c.tool_input),
            }
            for c in tool_calls
        ],
    }
    if text:
        payload["text"] = text
    return payload
