"""A neutral conversation (``conversation.py``) as OpenInference spans, written as OTLP/JSON ``TracesData``.

One AGENT root span (``input.value`` the first user message, ``output.value`` the last answer), one
LLM span per assistant turn (its request: the system prompt and every turn before it; its answer:
the turn's text and tool calls; the tools offered; the tokens when told), and one TOOL span per
tool call that has a result (its arguments and result; ERROR with the result's text when the result
was an error; the call's ``metadata`` when the reader gave it some). A call with no result in the
transcript has no TOOL span. The root of a conversation that stopped before the model's last word
(``conversation.incomplete``: a call never answered, a result or a user message with no answer
after it) says why in ``blackbox.run.incomplete`` and has status UNSET, never OK: it did not succeed.

Ids are derived (sha256): the trace's from its ``Keys.trace`` (a session's own id, so a session
imported again is the same trace), the spans' from ``Keys.spans`` (the content too) and their index,
so the same transcript imported twice gives the same spans, which the importer stores once, and a
session that grew gives new ones, which replace the trace (``Importer.store(replace=...)``;
``conversation_span_ids`` names them, and ``tool_span_ids`` each call's TOOL span, without making a
span). A conversation with a ``session_id`` in its metadata has it as ``session.id`` on every span.
Times: a turn's own time when the transcript tells it (the first one told starts the root), else
``base_ns`` (the file's mtime); every span starts at least 1 ms after the one before it, so the
spans' order is the conversation's, and the TOOL spans of one turn's calls, which ran at once, each
end at its result; ``end_ns`` is when the root ends, made without the spans.

Every LLM span holds the conversation before it, so the spans of a conversation together are the
square of its length (a 1,000-round session with 2 KB tool results: ~2.5 GB of attributes).
``otlp_documents`` makes them a few at a time, as documents of at most ``DOCUMENT_SPANS`` spans or
about ``DOCUMENT_BYTES`` of attribute text, which the importer stores as they come; ``otlp_document``
(every span in one) is for a short conversation, or a test.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

from openinference.semconv.trace import (
    MessageAttributes,
    OpenInferenceSpanKindValues,
    SpanAttributes,
    ToolAttributes,
    ToolCallAttributes,
)

from otel_blackbox._spans.semconv import ATTR_RUN_INCOMPLETE
from otel_blackbox._spans.transcripts.conversation import (
    Conversation,
    Keys,
    ToolCall,
    Turn,
    incomplete,
    matched_results,
)
from otel_blackbox._version import __version__

__all__ = [
    "DOCUMENT_BYTES",
    "DOCUMENT_SPANS",
    "Conversation",
    "Keys",
    "ToolCall",
    "Turn",
    "conversation_span_ids",
    "end_ns",
    "otlp_document",
    "otlp_documents",
    "root_ids",
    "tool_span_ids",
]

_MS = 1_000_000
_INTERNAL = 1  # SPAN_KIND_INTERNAL
_UNSET, _OK, _ERROR = 0, 1, 2  # STATUS_CODE_UNSET, STATUS_CODE_OK, STATUS_CODE_ERROR
SCOPE = "otel_blackbox.transcripts"
# A document of ``otlp_documents`` ends after this many spans, or once its attributes' text reaches
# about this many characters (a span is never split: one span can pass it alone).
DOCUMENT_SPANS = 64
DOCUMENT_BYTES = 4 * 1024 * 1024


# --- attributes -------------------------------------------------------------------------------------


def _value(value: str | int) -> dict[str, str]:
    if isinstance(value, int):
        return {"intValue": str(value)}
    return {"stringValue": value}


def _attributes(values: dict[str, str | int | None]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _value(v)} for k, v in values.items() if v is not None]


def _message(prefix: str, turn: Turn, calls: dict[str, str]) -> dict[str, str | int | None]:
    """One turn as OpenInference's flattened message attributes under ``prefix``
    (``llm.input_messages.3``); ``calls`` names the tool of each call id."""
    out: dict[str, str | int | None] = {f"{prefix}.{MessageAttributes.MESSAGE_ROLE}": turn.role}
    if turn.text or not turn.tool_calls:
        out[f"{prefix}.{MessageAttributes.MESSAGE_CONTENT}"] = turn.text
    for j, call in enumerate(turn.tool_calls):
        at = f"{prefix}.{MessageAttributes.MESSAGE_TOOL_CALLS}.{j}"
        out[f"{at}.{ToolCallAttributes.TOOL_CALL_ID}"] = call.call_id or None
        out[f"{at}.{ToolCallAttributes.TOOL_CALL_FUNCTION_NAME}"] = call.name
        out[f"{at}.{ToolCallAttributes.TOOL_CALL_FUNCTION_ARGUMENTS_JSON}"] = call.arguments
    if turn.role == "tool":
        out[f"{prefix}.{MessageAttributes.MESSAGE_TOOL_CALL_ID}"] = turn.call_id or None
        out[f"{prefix}.{MessageAttributes.MESSAGE_NAME}"] = turn.name or calls.get(turn.call_id) or None
    return out


# --- the spans --------------------------------------------------------------------------------------


class _Clock:
    """Strictly increasing times: a turn's own time when told, never earlier than 1 ms after the last."""

    def __init__(self, base_ns: int) -> None:
        self.last = base_ns - _MS

    def tick(self, told: int | None = None) -> int:
        self.last = max(self.last + _MS, told or 0)
        return self.last

    def calls(self, told: list[int | None]) -> list[tuple[int, int]]:
        """The times of one turn's calls, from their results' times: each starts 1 ms after the one
        before it and ends at its result (1 ms later if told none, or an earlier one). The model asked
        for them together and they ran at once (two subagents), so their spans overlap; what
        follows starts after the last of them ends."""
        times = []
        for when in told:
            start = self.tick()
            times.append((start, max(start + _MS, when or 0)))
        self.last = max([self.last, *(end for _, end in times)])
        return times


def _id(key: str, what: str, hex_digits: int) -> str:
    digest = hashlib.sha256(f"{key}\x00{what}".encode()).hexdigest()[:hex_digits]
    return digest if int(digest, 16) else "1".rjust(hex_digits, "0")  # an all-zero id is no id


def root_ids(keys: Keys) -> tuple[str, str]:
    """The trace id and root span id of the document ``otlp_document`` makes with ``keys``: a
    conversation started by another (a subagent's) is placed in that trace, under the root when the
    call that started it has no TOOL span (``tool_span_ids``)."""
    return _id(keys.trace, "trace", 32), _id(keys.spans, "span 0", 16)


def _span(
    key: str,
    index: int,
    name: str,
    times: tuple[int, int],
    attributes: dict[str, str | int | None],
    *,
    parent: str | None,
    trace_id: str,
    error: str | None = None,
    unset: bool = False,
) -> dict[str, Any]:
    status = {"code": _ERROR, "message": error} if error is not None else {"code": _UNSET if unset else _OK}
    span: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": _id(key, f"span {index}", 16),
        "name": name,
        "kind": _INTERNAL,
        "startTimeUnixNano": str(times[0]),
        "endTimeUnixNano": str(times[1]),
        "attributes": _attributes(attributes),
        "status": status,
    }
    if parent is not None:
        span["parentSpanId"] = parent
    return span


def _llm_attributes(
    conversation: Conversation, history: list[Turn], turn: Turn
) -> dict[str, str | int | None]:
    kind = OpenInferenceSpanKindValues.LLM.value
    attrs: dict[str, str | int | None] = {
        SpanAttributes.OPENINFERENCE_SPAN_KIND: kind,
        SpanAttributes.LLM_MODEL_NAME: turn.model or conversation.model,
        SpanAttributes.LLM_PROVIDER: conversation.provider,
        SpanAttributes.LLM_SYSTEM: conversation.provider,
        SpanAttributes.LLM_TOKEN_COUNT_PROMPT: turn.prompt_tokens,
        SpanAttributes.LLM_TOKEN_COUNT_COMPLETION: turn.completion_tokens,
        SpanAttributes.LLM_TOKEN_COUNT_PROMPT_DETAILS_CACHE_READ: turn.cache_read_tokens,
        SpanAttributes.LLM_TOKEN_COUNT_PROMPT_DETAILS_CACHE_WRITE: turn.cache_write_tokens,
    }
    if turn.prompt_tokens is not None and turn.completion_tokens is not None:
        attrs[SpanAttributes.LLM_TOKEN_COUNT_TOTAL] = turn.prompt_tokens + turn.completion_tokens
    names = {c.call_id: c.name for t in history for c in t.tool_calls if c.call_id}
    messages = ([Turn("system", conversation.system)] if conversation.system else []) + history
    for i, message in enumerate(messages):
        attrs.update(_message(f"{SpanAttributes.LLM_INPUT_MESSAGES}.{i}", message, names))
    if not turn.is_error:
        attrs.update(_message(f"{SpanAttributes.LLM_OUTPUT_MESSAGES}.0", turn, names))
    for i, tool in enumerate(conversation.tools):
        attrs[f"{SpanAttributes.LLM_TOOLS}.{i}.{ToolAttributes.TOOL_JSON_SCHEMA}"] = json.dumps(
            tool, ensure_ascii=False
        )
    return attrs


_Tools = list[tuple[int, ToolCall, Turn]]


def _plan(turns: tuple[Turn, ...]) -> Iterator[tuple[Turn, int, _Tools]]:
    """The spans after the root, by assistant turn (context-only ones make none): the turn, its LLM
    span's index, and (index, call, result) of the TOOL span of each of its calls with a result.
    The one numbering of a conversation's spans: ``_spans`` makes them by it, the ids are named by it."""
    results = matched_results(turns)
    index, numbered = 1, 0
    for turn in turns:
        if turn.role != "assistant" or turn.context_only:
            continue
        llm, index = index, index + 1
        tools: _Tools = []
        for call in turn.tool_calls:
            result = results.get(numbered)
            numbered += 1
            if result is not None:
                tools.append((index, call, result))
                index += 1
        yield turn, llm, tools


def _root_clock(conversation: Conversation, base_ns: int) -> tuple[_Clock, int]:
    """The clock of a conversation's spans, and its root's start: the transcript's own times when it
    tells them, else ``base_ns``."""
    told = next((t.time_ns for t in conversation.turns if t.time_ns), None)
    clock = _Clock(told or base_ns)
    return clock, clock.tick(told)


def _spans(
    conversation: Conversation, keys: Keys, base_ns: int, parent: tuple[str, str] | None
) -> Iterator[dict[str, Any]]:
    key = keys.spans
    trace_id = parent[0] if parent is not None else _id(keys.trace, "trace", 32)
    session = conversation.metadata.get("session_id")
    shared: dict[str, str | int | None] = {
        SpanAttributes.SESSION_ID: session if isinstance(session, str) else None
    }
    clock, root_start = _root_clock(conversation, base_ns)
    root_id = _id(key, "span 0", 16)
    plan = _plan(conversation.turns)
    history: list[Turn] = []
    for turn in conversation.turns:
        if turn.role == "compaction":
            history = []
            continue
        if turn.role != "assistant" or turn.context_only:
            history.append(turn)
            continue
        _, index, tools = next(plan)
        start = clock.tick(turn.time_ns)
        end = clock.tick()
        attrs = {**_llm_attributes(conversation, history, turn), **shared}
        model = turn.model or conversation.model or "model"
        error = (turn.text or "the model call failed") if turn.is_error else None
        yield _span(
            key, index, f"chat {model}", (start, end), attrs, parent=root_id, trace_id=trace_id, error=error
        )
        if not turn.is_error:  # a failed call's message is the client's, never sent to the model
            history.append(turn)
        times = clock.calls([result.time_ns for _, _, result in tools])
        for (index, call, result), (start, end) in zip(tools, times, strict=True):
            metadata = conversation.call_metadata.get(call.call_id) if call.call_id else None
            tool_attrs: dict[str, str | int | None] = {
                SpanAttributes.OPENINFERENCE_SPAN_KIND: OpenInferenceSpanKindValues.TOOL.value,
                SpanAttributes.TOOL_NAME: call.name,
                SpanAttributes.INPUT_VALUE: call.arguments,
                SpanAttributes.OUTPUT_VALUE: None if result.is_error else result.text,
                SpanAttributes.METADATA: json.dumps(metadata, ensure_ascii=False) if metadata else None,
                **shared,
            }
            error = (result.text or "error") if result.is_error else None
            yield _span(
                key,
                index,
                call.name,
                (start, end),
                tool_attrs,
                parent=root_id,
                error=error,
                trace_id=trace_id,
            )
    why = incomplete(conversation.turns)
    first_user = next((t.text for t in conversation.turns if t.role == "user" and t.text), None)
    answer = next((t.text for t in reversed(conversation.turns) if t.role == "assistant" and t.text), None)
    root_attrs: dict[str, str | int | None] = {
        ATTR_RUN_INCOMPLETE: why,  # first: a row stored apart keeps its first short members readable
        SpanAttributes.OPENINFERENCE_SPAN_KIND: OpenInferenceSpanKindValues.AGENT.value,
        SpanAttributes.INPUT_VALUE: first_user,
        SpanAttributes.OUTPUT_VALUE: answer,
        **shared,
    }
    metadata = {
        **conversation.metadata,
        **({"left_out": conversation.skipped} if conversation.skipped else {}),
    }
    if metadata:
        root_attrs[SpanAttributes.METADATA] = json.dumps(metadata, ensure_ascii=False)
    yield _span(
        key,
        0,
        conversation.source,
        (root_start, clock.tick()),
        root_attrs,
        parent=parent[1] if parent is not None else None,
        trace_id=trace_id,
        unset=why is not None,  # it did not succeed, nor fail: it stopped
    )


def _traces_data(conversation: Conversation, spans: list[dict[str, Any]]) -> dict[str, Any]:
    scope = {"name": f"{SCOPE}.{conversation.source}", "version": __version__}
    resource = {"attributes": _attributes({"service.name": f"{conversation.source} transcript"})}
    return {"resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": scope, "spans": spans}]}]}


def otlp_document(
    conversation: Conversation, keys: Keys, base_ns: int, *, parent: tuple[str, str] | None = None
) -> dict[str, Any]:
    """The conversation as one OTLP/JSON ``TracesData``: its spans, ids derived from ``keys``;
    ``parent`` (a trace id and span id, see ``root_ids``) places its root under another's. Every
    span at once: ``otlp_documents`` makes the same spans a few at a time."""
    return _traces_data(conversation, list(_spans(conversation, keys, base_ns, parent)))


def otlp_documents(
    conversation: Conversation,
    keys: Keys,
    base_ns: int,
    *,
    parent: tuple[str, str] | None = None,
    max_spans: int | None = None,
    max_bytes: int | None = None,
) -> Iterator[dict[str, Any]]:
    """The spans of ``otlp_document``, in its order, as ``TracesData`` documents of the same resource
    and scope, each made when asked for: at most ``max_spans`` spans (DOCUMENT_SPANS), or fewer once
    their attributes' text reaches ``max_bytes`` characters (DOCUMENT_BYTES). Only the turns and one
    document's spans are held."""
    max_spans = max_spans or DOCUMENT_SPANS
    max_bytes = max_bytes or DOCUMENT_BYTES
    spans: list[dict[str, Any]] = []
    size = 0
    for span in _spans(conversation, keys, base_ns, parent):
        spans.append(span)
        size += sum(len(a["value"].get("stringValue", "")) for a in span["attributes"])
        if len(spans) >= max_spans or size >= max_bytes:
            yield _traces_data(conversation, spans)
            spans, size = [], 0
    if spans:
        yield _traces_data(conversation, spans)


def conversation_span_ids(
    conversation: Conversation, keys: Keys, *, parent: tuple[str, str] | None = None
) -> tuple[str, set[str]]:
    """The trace id and the span ids the documents of ``otlp_documents`` hold, made without them:
    the root, one LLM span per assistant turn and one TOOL span per call with a result."""
    trace_id = parent[0] if parent is not None else _id(keys.trace, "trace", 32)
    count = 1 + sum(1 + len(tools) for _, _, tools in _plan(conversation.turns))
    return trace_id, {_id(keys.spans, f"span {i}", 16) for i in range(count)}


def tool_span_ids(conversation: Conversation, keys: Keys) -> dict[str, str]:
    """The span id of each call's TOOL span, by call id (a call with no result, or no id, has none),
    made without the spans: a sub-agent's conversation is placed under the call that started it."""
    return {
        call.call_id: _id(keys.spans, f"span {index}", 16)
        for _, _, tools in _plan(conversation.turns)
        for index, call, _ in tools
        if call.call_id
    }


def end_ns(conversation: Conversation, base_ns: int) -> int:
    """When the root span of the conversation's documents (made with ``base_ns``) ends, without
    making them: the next conversation of a file starts after it."""
    clock, _ = _root_clock(conversation, base_ns)
    for turn, _, tools in _plan(conversation.turns):
        clock.tick(turn.time_ns)
        clock.tick()
        clock.calls([result.time_ns for _, _, result in tools])
    return clock.tick()
