"""The cassette built step by step, as the walk meets the spans.

A model call (from an LLM span, or as HTTP capture saw it on the wire: the whole request, ids
renumbered), a TOOL span's ``tool_call`` and ``tool_result`` (matched with the call the model
asked for), the calls no TOOL span ran (their results read from the next model input), and an
exchange's ``metadata``. Steps are timed in milliseconds.
"""

from __future__ import annotations

from typing import Any

from otel_blackbox._cassette.canonical import StepHasher
from otel_blackbox._cassette.from_spans.calls import CallNumbering, json_or_text, renumbered
from otel_blackbox._cassette.from_spans.model_input import model_input_of
from otel_blackbox._cassette.from_spans.model_output import model_output_of
from otel_blackbox._cassette.from_spans.sources import api_of_llm, api_of_wire
from otel_blackbox._cassette.model import Cassette
from otel_blackbox._cassette.tool_output import tool_output
from otel_blackbox._spans.view.registry import error_of, view_of
from otel_blackbox._store.queries import SpanRecord


def ms_of(ns: int | None) -> int:
    return 0 if ns is None else ns // 1_000_000


class Builder:
    def __init__(self, cassette: Cassette) -> None:
        self.cassette = cassette
        self.calls = CallNumbering()
        self.pending: list[dict[str, Any]] = []  # calls of the last model output not yet executed
        self.final_answer: str | None = None
        self.model_calls = 0
        self.last_messages: list[Any] = []  # the last model_input's: the next one repeats them
        self.hasher = StepHasher()  # hashes only the messages a model_input adds (shared: ``shared``)
        self.tool_call_steps: dict[tuple[str, str], int] = {}  # a TOOL span's tool_call step

    def first_call(self, api: dict[str, Any] | None) -> None:
        """The API hint is the first model call's, or none when its span does not tell it."""
        if self.model_calls == 0:
            self.cassette.api = api
        self.model_calls += 1

    def llm(self, span: SpanRecord) -> None:
        self.first_call(api_of_llm(span))
        model_input = self.shared(model_input_of(span, self.calls))
        self.flush_pending(model_input["messages"], ms_of(span.start_ns))
        self.cassette.append("model_input", model_input, ms_of(span.start_ns), hasher=self.hasher.hash_step)
        if span.status == "open":
            return
        self.model_output(model_output_of(span, self.calls), ms_of(span.end_ns))

    def wire(self, span: SpanRecord, model_input: dict[str, Any], output: dict[str, Any]) -> None:
        """A model call as HTTP capture saw it on the wire: the whole request, no `observed` needed."""
        self.first_call(api_of_wire(span))
        model_input = self.shared(renumbered(model_input, self.calls))
        self.flush_pending(model_input.get("messages", []), ms_of(span.start_ns))
        self.cassette.append("model_input", model_input, ms_of(span.start_ns), hasher=self.hasher.hash_step)
        self.model_output(renumbered(output, self.calls), ms_of(span.end_ns))

    def shared(self, model_input: dict[str, Any]) -> dict[str, Any]:
        """``model_input`` holding the last one's message objects where it repeats them (equal
        values, compared in order until the first that differs): a long run's requests each hold
        the conversation before them, which kept apart is its square."""
        messages = model_input.get("messages")
        if isinstance(messages, list):
            last = self.last_messages
            for i in range(min(len(last), len(messages))):
                if messages[i] is not last[i]:
                    if messages[i] != last[i]:
                        break
                    messages[i] = last[i]
            self.last_messages = messages
        return model_input

    def model_output(self, output: dict[str, Any] | None, at: int) -> None:
        if output is None:
            return
        self.cassette.append("model_output", output, at)
        if output["type"] == "final_answer":
            self.final_answer = output["text"]
        else:  # an answer before it is not how the run ended: calls asked for after it were
            self.final_answer = None
            self.pending = list(output["calls"])

    def tool(self, span: SpanRecord) -> None:
        tool = view_of(span).tool
        name = (tool.name if tool is not None else None) or span.tool_name or span.name
        match = next((c for c in self.pending if c["toolName"] == name), None)
        if match is not None:
            self.pending.remove(match)
            call_id, tool_input = match["toolCallId"], match["toolInput"]
        else:  # a tool the model did not ask for (or asked for in an unrecorded call)
            call_id = self.calls.id_for(None, name)
            raw = tool.arguments if tool is not None else None
            tool_input = json_or_text(raw) if raw is not None else {}
        head = {"toolCallId": call_id, "toolName": name}
        step = self.cassette.append("tool_call", {**head, "toolInput": tool_input}, ms_of(span.start_ns))
        self.tool_call_steps[(span.trace_id, span.span_id)] = step.index
        if span.status == "open":
            return
        if span.status == "error":
            failed = error_of(span) or "error"
            self.cassette.append("tool_result", {**head, "error": failed}, ms_of(span.end_ns))
        else:
            output = tool_output(tool.result if tool is not None else None)
            self.cassette.append(
                "tool_result", {**head, "result": output if output is not None else ""}, ms_of(span.end_ns)
            )

    def flush_pending(self, next_messages: list[Any], at: int) -> None:
        """Calls with no TOOL span: their rounds come from the results the next model input carries."""
        if not self.pending:
            return
        results = {
            part["toolCallId"]: part
            for message in next_messages
            if isinstance(message, dict) and isinstance(message.get("content"), list)
            for part in message["content"]
            if isinstance(part, dict) and part.get("type") == "tool_result"
        }
        for call in self.pending:
            head = {"toolCallId": call["toolCallId"], "toolName": call["toolName"]}
            self.cassette.append("tool_call", {**head, "toolInput": call["toolInput"]}, at)
            if call["toolCallId"] in results:
                part = results[call["toolCallId"]]
                outcome = {"error": part["error"]} if "error" in part else {"result": part.get("result")}
                self.cassette.append("tool_result", {**head, **outcome}, at)
        self.pending = []

    def exchange(self, span: SpanRecord, payload: dict[str, Any]) -> None:
        self.cassette.append("metadata", payload, ms_of(span.end_ns))
