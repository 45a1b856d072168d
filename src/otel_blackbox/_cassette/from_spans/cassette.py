"""A recorded trace (its stored spans) as a cassette: the walk over the spans, and how the run ended.

OpenInference LLM spans give ``model_input`` and ``model_output``; TOOL spans give ``tool_call``
and ``tool_result``; a tool round with no TOOL span is read from the tool-result messages of the
next model input; the root span's end gives the closing ``metadata`` (a trace with spans still
open ends ``run_failed`` / ``process_exit``). A model call HTTP capture saw is read from the wire
instead, and an LLM span around it (or around another LLM span) is not a round of its own.

The cassette keeps what the model did: the OpenAI Agents SDK's handoff spans (a TOOL span
``handoff to <agent>`` beside the model's own ``transfer_to_<agent>`` call) are not steps.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from otel_blackbox._cassette.captured import captured_exchange, captured_model_call
from otel_blackbox._cassette.from_spans.builder import Builder, ms_of
from otel_blackbox._cassette.from_spans.conversations import (
    Conversation,
    opening_of,
    split_conversations,
    trace_groups,
)
from otel_blackbox._cassette.from_spans.cut_input import refuse_if_cut
from otel_blackbox._cassette.from_spans.order import (
    ancestors_of,
    around_calls,
    calls_in_asked_order,
    ordered_spans,
    root_spans,
)
from otel_blackbox._cassette.from_spans.sources import LLM_KIND, TOOL_KIND, is_handoff
from otel_blackbox._cassette.model import Cassette, tool_calls_of
from otel_blackbox._spans.semconv import ATTR_MODEL_PROVIDER, ATTR_RUN_INCOMPLETE
from otel_blackbox._spans.view.registry import error_of, view_of
from otel_blackbox._spans.view.trace import read_trace
from otel_blackbox._store.queries import SpanRecord
from otel_blackbox.errors import CassetteError

__all__ = [
    "PROCESS_EXIT",
    "beside",
    "cassette_from_spans",
    "conversation_cassettes",
    "file_names",
    "run_cassette",
    "run_cassettes",
    "run_conversations",
]

PROCESS_EXIT = "process_exit"


def cassette_from_spans(spans: list[SpanRecord], *, cassette_id: str | None = None) -> Cassette:
    """Spans as a v2 cassette: one trace's (id = the trace id), or several traces' (a run's, a
    session's: pass ``cassette_id``), their model and tool rounds in time order. Where sub-agents
    ran conversations of their own, the main agent's (``conversation_cassettes`` gives them all)."""
    return conversation_cassettes(spans, cassette_id=cassette_id)[0]


def conversation_cassettes(spans: list[SpanRecord], *, cassette_id: str | None = None) -> list[Cassette]:
    """The cassette of the main agent's conversation, then one for each sub-agent's (in the order
    they started, ids ``<main id>-agent-<n>``), linked both ways: the main one's ``subagents`` name
    each sub-agent's cassette and the parent's step that started it (the tool call its result
    answers), each sub-agent's ``subagent_of`` names the parent and that step."""
    if not spans:
        raise ValueError("a cassette needs at least one span")
    ordered = ordered_spans(read_trace(spans))
    main_id = cassette_id or root_spans(ordered)[0].trace_id
    wire, outer, rounds = _rounds(ordered)
    _refuse_without_content(ordered, wire, outer)
    conversations = split_conversations(ordered, rounds, lambda s: opening_of(s, wire))
    built: dict[int, tuple[Cassette, Builder]] = {}
    for n, conversation in enumerate(conversations):
        own_roots = root_spans(conversation.spans)
        cassette = Cassette(
            id=main_id if n == 0 else f"{main_id}-agent-{n}", created_at=ms_of(own_roots[0].start_ns)
        )
        builder = Builder(cassette)
        _walk(conversation.spans, builder, wire, outer)
        _close(cassette, builder, conversation.spans, own_roots)
        built[id(conversation)] = (cassette, builder)
    for conversation in conversations[1:]:
        _link(conversation, built)
    return [built[id(c)][0] for c in conversations]


def run_conversations(spans: list[SpanRecord]) -> list[list[SpanRecord]]:
    """A run's or a session's spans as its independent conversations (``trace_groups``): each gives
    its cassettes with ``conversation_cassettes``."""
    ordered = ordered_spans(read_trace(spans))
    wire, _, rounds = _rounds(ordered)
    return trace_groups(ordered, rounds, lambda s: opening_of(s, wire))


def run_cassette(spans: list[SpanRecord], *, cassette_id: str) -> Cassette:
    """The cassette of a run that holds one conversation (its main agent's); CassetteError naming the
    first trace of each when it holds several, which no one sequence replays."""
    return run_cassettes(spans, cassette_id=cassette_id)[0]


def run_cassettes(spans: list[SpanRecord], *, cassette_id: str) -> list[Cassette]:
    """``conversation_cassettes`` of a run that holds one conversation; CassetteError naming the first
    trace of each when it holds several."""
    groups = run_conversations(spans)
    if len(groups) > 1:
        firsts = ", ".join(group[0].trace_id for group in groups)
        raise CassetteError(
            f"{cassette_id} holds {len(groups)} conversations, which one cassette cannot replay in one"
            f" sequence: take one of its traces ({firsts}), or `cassette --run ... --each`"
        )
    return conversation_cassettes(spans, cassette_id=cassette_id)


def file_names(output: str, cassettes: list[Cassette]) -> list[str]:
    """Where a conversation's cassettes are written: the main one at ``output``, each sub-agent's
    beside it (``run.json``: ``run.agent-1.json``...); the links between them name these files."""
    names = [output, *(beside(output, f"agent-{n}") for n in range(1, len(cassettes)))]
    files = {c.id: Path(name).name for c, name in zip(cassettes, names, strict=True)}
    for cassette in cassettes:
        for link in cassette.subagents or []:
            link["cassette"] = files.get(str(link.get("id")))
        if cassette.subagent_of is not None:
            cassette.subagent_of["cassette"] = files.get(str(cassette.subagent_of.get("id")))
    return names


def beside(output: str, tag: str) -> str:
    """The file named ``output`` with ``.tag`` before its suffix: ``run.json`` -> ``run.agent-1.json``."""
    for suffix in (".json.gz", ".json", ".gz"):
        if output.endswith(suffix) and len(output) > len(suffix):
            return f"{output[: -len(suffix)]}.{tag}{suffix}"
    return f"{output}.{tag}"


Wire = dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any]]]


def _rounds(ordered: list[SpanRecord]) -> tuple[Wire, set[tuple[str, str]], list[SpanRecord]]:
    """The model calls HTTP capture saw (by span), the spans around them, and the model rounds."""
    wire = {(s.trace_id, s.span_id): call for s in ordered if (call := captured_model_call(s)) is not None}
    # An LLM span around a captured call is not a round of its own, nor one that describes the same
    # call as another span (the view marks it: an SDK's own span under an instrumentor's).
    captured = [s for s in ordered if (s.trace_id, s.span_id) in wire]
    outer = ancestors_of(ordered, captured) | around_calls(ordered, captured)
    rounds = [s for s in ordered if (s.trace_id, s.span_id) in wire or _is_llm_round(s, outer)]
    return wire, outer, rounds


def _is_llm_round(span: SpanRecord, outer: set[tuple[str, str]]) -> bool:
    view = view_of(span)
    return view.kind == LLM_KIND and view.same_call_as is None and (span.trace_id, span.span_id) not in outer


def _walk(
    spans: list[SpanRecord],
    builder: Builder,
    wire: Wire,
    outer: set[tuple[str, str]],
) -> None:
    for span in calls_in_asked_order(spans, builder):
        key = (span.trace_id, span.span_id)
        view = view_of(span)
        if key in wire:
            builder.wire(span, *wire[key])
        elif _is_llm_round(span, outer):
            builder.llm(span)
        elif is_handoff(span):
            continue  # the model's transfer call and its result are the steps
        elif view.kind == TOOL_KIND:
            builder.tool(span)
        elif (exchange := captured_exchange(span)) is not None and ATTR_MODEL_PROVIDER not in span.attributes:
            builder.exchange(span, exchange)


def _link(conversation: Conversation, built: dict[int, tuple[Cassette, Builder]]) -> None:
    """Link a sub-agent's cassette and its parent's: the parent's step that started it is the tool
    call its result answers (a TOOL boundary), else the last step before it started."""
    cassette = built[id(conversation)][0]
    assert conversation.parent is not None and conversation.boundary is not None
    parent, builder = built[id(conversation.parent)]
    boundary = conversation.boundary
    link: dict[str, Any] = {}
    step = builder.tool_call_steps.get((boundary.trace_id, boundary.span_id))
    if step is not None:
        call = parent.steps[step].payload
        link = {"step": step, "toolCallId": call["toolCallId"], "toolName": call["toolName"]}
    else:
        started = ms_of(boundary.start_ns)
        before = [s.index for s in parent.steps if s.timestamp <= started]
        link = {"step": before[-1] if before else 0}
    cassette.subagent_of = {"id": parent.id, **link}
    parent.subagents = [*(parent.subagents or []), {"id": cassette.id, **link}]


def _refuse_without_content(
    spans: list[SpanRecord], wire: Mapping[tuple[str, str], object], outer: set[tuple[str, str]]
) -> None:
    """A model call whose instrumentation recorded no content (and that HTTP capture did not see)
    would make a cassette of empty requests: refused, naming the span and the setting."""
    for span in spans:
        view = view_of(span)
        key = (span.trace_id, span.span_id)
        if view.is_model_call and view.same_call_as is None and key not in wire and key not in outer:
            refuse_if_cut(span)  # first: what the SDK cut may be why no messages are left
        if (
            view.no_content
            and view.same_call_as is None
            and key not in wire
            and key not in outer
            and not view.has_content
        ):
            raise CassetteError(
                f"model call {span.name!r} (span {span.span_id}) recorded no messages: {view.no_content}"
            )


def _close(cassette: Cassette, builder: Builder, spans: list[SpanRecord], roots: list[SpanRecord]) -> None:
    """How the run ended: killed if anything is still open, else as its last root span ended: a
    success only with a model's final answer, which is what `verify` holds a success to."""
    last_seen = max((s.end_ns or s.written_ns) for s in spans)
    root = max(roots, key=lambda s: (s.end_ns or s.written_ns, s.start_ns))
    if any(s.status == "open" for s in spans):
        payload: dict[str, Any] = {"event": "run_failed", "status": "error", "reason": PROCESS_EXIT}
        cassette.append("metadata", payload, ms_of(last_seen))
    elif root.status == "error":
        cassette.append(
            "metadata",
            {"event": "run_failed", "status": "error", "reason": error_of(root) or "error"},
            ms_of(root.end_ns),
        )
    elif builder.final_answer is None:
        # It ended cleanly with no model's final answer (a LangChain or openai-v2 trace is one model
        # call, often asking for a tool; a conversation ending on a tool's result): not a success the
        # format can claim, as a recording says.
        payload = {"event": "run_ended", "reason": "no_final_answer"}
        why = _unanswered(cassette) or root.attributes.get(ATTR_RUN_INCOMPLETE)  # the cassette's ids
        cassette.append("metadata", {**payload, "message": why} if why else payload, ms_of(root.end_ns))
    else:
        cassette.append(
            "metadata",
            {"event": "run_completed", "status": "success", "result": builder.final_answer},
            ms_of(root.end_ns),
        )


def _unanswered(cassette: Cassette) -> str | None:
    """Why a conversation has no final answer, naming its last call: never answered, or answered
    with no model output after it."""
    results = {s.payload.get("toolCallId") for s in cassette.steps_of("tool_result")}
    outputs = [s for s in cassette.steps if s.type == "model_output"]
    if not outputs:
        return "no model call answered" if cassette.steps else None
    calls = tool_calls_of(outputs[-1].payload)
    if not calls:
        return None
    open_calls = [c for c in calls if c.tool_call_id not in results]
    call = (open_calls or calls)[-1]
    named = f"the call {call.tool_name} ({call.tool_call_id})"
    return (
        f"{named} was never answered" if open_calls else f"{named} has a result but no model answer after it"
    )
