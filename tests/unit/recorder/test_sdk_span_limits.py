"""Issue 49, part 1: a span the OpenTelemetry SDK's span limits cut is recorded with its counts and
said to be cut (`show`, `stats`, the report), never made into a cassette from a cut message list,
and warned of once per process. Real SDK, real processor, real SQLite file, the real CLI."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from helpers import Recorder, run_cli, stored_rows
from opentelemetry.sdk.trace import SpanLimits, TracerProvider

from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._recorder.auto import AGENT_SPAN_LIMIT, install
from otel_blackbox._spans.sdk_limits import ATTR_DROPPED_ATTRIBUTES, ATTR_DROPPED_EVENTS
from otel_blackbox._store import snapshot
from otel_blackbox._store.queries import trace_spans

_LIMIT_VARS = (
    "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT",
    "OTEL_ATTRIBUTE_COUNT_LIMIT",
    "OTEL_SPAN_EVENT_COUNT_LIMIT",
    "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT",
    "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT",
)
ROUNDS = 40  # 1 + 2 x 40 messages of 2 or 3 attributes each: well past the default 128


@pytest.fixture(autouse=True)
def _default_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _LIMIT_VARS:
        monkeypatch.delenv(name, raising=False)


def conversation() -> list[dict[str, Any]]:
    """An agent's conversation: a task, then rounds of a tool call and its result (the chat shape)."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You walk."}]
    messages.append({"role": "user", "content": "Walk the steps."})
    for n in range(ROUNDS):
        call = {
            "id": f"call_{n}",
            "type": "function",
            "function": {"name": "step", "arguments": f'{{"n": {n}}}'},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"call_{n}", "content": f"step {n} done"})
    return messages


def flattened(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """OpenInference's ``llm.input_messages.N.*`` of the messages."""
    out: dict[str, Any] = {}
    for i, m in enumerate(messages):
        prefix = f"llm.input_messages.{i}.message"
        out[f"{prefix}.role"] = m["role"]
        if m.get("content") is not None:
            out[f"{prefix}.content"] = m["content"]
        if m.get("tool_call_id"):
            out[f"{prefix}.tool_call_id"] = m["tool_call_id"]
        for j, call in enumerate(m.get("tool_calls") or []):
            out[f"{prefix}.tool_calls.{j}.tool_call.id"] = call["id"]
            out[f"{prefix}.tool_calls.{j}.tool_call.function.name"] = call["function"]["name"]
            out[f"{prefix}.tool_calls.{j}.tool_call.function.arguments"] = call["function"]["arguments"]
    return out


def record_model_call(rec: Recorder, *, input_value_last: bool = False) -> str:
    """One agent span over one LLM span shaped as OpenInference's OpenAI instrumentor makes it: kind,
    input.value and parameters at the start, the flattened messages added later, the output last
    (``input_value_last``: input.value set after the messages, as another instrumentor may)."""
    messages = conversation()
    request = json.dumps({"model": "gpt-4o", "messages": messages})
    with rec.tracer.start_as_current_span("agent", attributes={"openinference.span.kind": "AGENT"}) as root:
        start = {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o"}
        if not input_value_last:
            start |= {"input.value": request, "input.mime_type": "application/json"}
        with rec.tracer.start_as_current_span("ChatCompletion", attributes=start) as span:
            span.set_attributes(flattened(messages))
            if input_value_last:
                span.set_attributes({"input.value": request, "input.mime_type": "application/json"})
            span.set_attributes(
                {
                    "llm.output_messages.0.message.role": "assistant",
                    "llm.output_messages.0.message.content": "All steps walked.",
                    "llm.token_count.prompt": 900,
                    "llm.token_count.completion": 5,
                }
            )
        trace_id = format(root.get_span_context().trace_id, "032x")
    rec.flush()
    return trace_id


def stored_attributes(rec: Recorder, name: str) -> dict[str, Any]:
    """The stored attributes of the span named ``name``, read as every command reads them."""
    conn = sqlite3.connect(rec.db_path)
    conn.row_factory = sqlite3.Row
    try:
        (trace_id,) = conn.execute("SELECT trace_id FROM spans WHERE name = ?", (name,)).fetchone()
        (span,) = [s for s in trace_spans(conn, trace_id) if s.name == name]
    finally:
        conn.close()
    return span.attributes


def test_cut_span_is_recorded_with_its_counts_and_said_everywhere(db_path: Path, tmp_path: Path) -> None:
    rec = Recorder(db_path, span_limits=SpanLimits())  # the SDK's defaults: 128 attributes a span
    try:
        trace = record_model_call(rec)
    finally:
        rec.provider.shutdown()
    attributes = stored_attributes(rec, "ChatCompletion")
    dropped = attributes[ATTR_DROPPED_ATTRIBUTES]
    assert dropped > 0 and "input.value" not in attributes and "openinference.span.kind" not in attributes
    assert ATTR_DROPPED_ATTRIBUTES not in stored_attributes(rec, "agent")

    tree = run_cli("show", trace[:8], db=db_path, check=True).stdout
    (line,) = [line for line in tree.splitlines() if "ChatCompletion" in line]
    assert f"CUT BY SDK LIMITS ({dropped} attributes dropped)" in line
    assert "cut: 1 span cut by the OpenTelemetry SDK's span limits" in tree
    verbose = run_cli("show", trace[:8], "-v", db=db_path, check=True).stdout
    assert "raise OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT (or OTEL_ATTRIBUTE_COUNT_LIMIT)" in verbose
    markdown = run_cli("show", trace[:8], "--format", "markdown", db=db_path, check=True).stdout
    assert "CUT BY SDK LIMITS" in markdown and "OTEL\\_SPAN\\_ATTRIBUTE\\_COUNT\\_LIMIT" in markdown
    shown = json.loads(run_cli("show", trace[:8], "--json", db=db_path, check=True).stdout)
    by_name = {s["name"]: s for s in shown["spans"]}
    assert by_name["ChatCompletion"]["sdk_limits"]["attributes_dropped"] == dropped
    assert by_name["agent"]["sdk_limits"] is None

    stats = run_cli("stats", db=db_path, check=True).stdout
    assert (
        "spans cut      1  (by the OpenTelemetry SDK's span limits: raise OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT"
        in stats
    )
    assert (
        json.loads(run_cli("stats", "--json", db=db_path, check=True).stdout)["spans_cut_by_sdk_limits"] == 1
    )

    page = tmp_path / "report.html"
    run_cli("report", trace[:8], "-o", str(page), db=db_path, check=True)
    assert '"sdkCut": "1 span cut by the OpenTelemetry SDK' in page.read_text(encoding="utf-8")

    # The flattened messages start mid-conversation and input.value was dropped: no cassette.
    result = run_cli("cassette", trace[:8], "-o", str(tmp_path / "cut.json"), db=db_path)
    assert result.returncode == 2 and not (tmp_path / "cut.json").exists()
    (message,) = result.stderr.strip().splitlines()
    span_id = next(s["span_id"] for s in shown["spans"] if s["name"] == "ChatCompletion")
    assert (
        "'ChatCompletion'" in message and span_id in message and "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT" in message
    )
    assert "Traceback" not in result.stderr


def model_inputs(cassette_path: Path) -> list[dict[str, Any]]:
    return [step.payload for step in load_cassette(cassette_path).steps if step.type == "model_input"]


def test_cut_span_with_a_whole_input_value_makes_a_cassette_of_every_message(
    db_path: Path, tmp_path: Path
) -> None:
    rec = Recorder(db_path, span_limits=SpanLimits())
    try:
        trace = record_model_call(rec, input_value_last=True)
    finally:
        rec.provider.shutdown()
    attributes = stored_attributes(rec, "ChatCompletion")
    assert attributes[ATTR_DROPPED_ATTRIBUTES] > 0 and "input.value" in attributes
    out = tmp_path / "whole.json"
    run_cli("cassette", trace[:8], "-o", str(out), db=db_path, check=True)
    (model_input,) = model_inputs(out)
    assert model_input["systemPrompt"] == "You walk."
    assert model_input["messages"][0] == {"role": "user", "content": "Walk the steps."}
    # A turn of the assistant's call, a turn of its result, a round: every round is there.
    assert len(model_input["messages"]) == 1 + 2 * ROUNDS


def test_limits_lifted_nothing_is_said_and_the_cassette_has_every_message(
    db_path: Path, tmp_path: Path
) -> None:
    rec = Recorder(db_path, span_limits=SpanLimits(max_span_attributes=AGENT_SPAN_LIMIT))
    try:
        trace = record_model_call(rec)
    finally:
        rec.provider.shutdown()
    assert ATTR_DROPPED_ATTRIBUTES not in stored_attributes(rec, "ChatCompletion")
    verbose = run_cli("show", trace[:8], "-v", db=db_path, check=True).stdout
    assert "CUT" not in verbose and "COUNT_LIMIT" not in verbose
    stats = json.loads(run_cli("stats", "--json", db=db_path, check=True).stdout)
    assert stats["spans_cut_by_sdk_limits"] == 0
    out = tmp_path / "lifted.json"
    run_cli("cassette", trace[:8], "-o", str(out), db=db_path, check=True)
    (model_input,) = model_inputs(out)
    assert model_input["systemPrompt"] == "You walk." and len(model_input["messages"]) == 1 + 2 * ROUNDS


def test_counts_round_trip_through_otlp_export_and_import(db_path: Path, tmp_path: Path) -> None:
    rec = Recorder(db_path, span_limits=SpanLimits(max_span_attributes=4, max_events=2))
    try:
        with rec.tracer.start_as_current_span("busy") as span:
            span.set_attributes({f"k{i}": i for i in range(10)})
            for i in range(5):
                span.add_event(f"e{i}")
    finally:
        rec.flush()
        rec.provider.shutdown()
    attributes = stored_attributes(rec, "busy")
    assert (attributes[ATTR_DROPPED_ATTRIBUTES], attributes[ATTR_DROPPED_EVENTS]) == (6, 3)

    exported = tmp_path / "otlp.jsonl"
    run_cli("export", "--format", "otlp", "-o", str(exported), db=db_path, check=True)
    (line,) = exported.read_text(encoding="utf-8").splitlines()
    (otlp_span,) = json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert (otlp_span["droppedAttributesCount"], otlp_span["droppedEventsCount"]) == (6, 3)
    assert not any(a["key"].startswith("blackbox.otlp.") for a in otlp_span["attributes"])

    again = tmp_path / "again.db"
    run_cli("import", str(exported), db=again, check=True)
    conn = sqlite3.connect(again)
    try:
        (text,) = conn.execute("SELECT attributes FROM spans WHERE name = 'busy'").fetchone()
    finally:
        conn.close()
    reimported = json.loads(text)
    assert (reimported[ATTR_DROPPED_ATTRIBUTES], reimported[ATTR_DROPPED_EVENTS]) == (6, 3)
    assert {k: v for k, v in reimported.items() if k.startswith("k")} == {f"k{i}": i for i in range(6, 10)}


def test_the_processor_warns_once_for_many_cut_spans(
    db_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(snapshot, "_warned_cut", False)  # once per process: this test's process
    rec = Recorder(db_path, span_limits=SpanLimits(max_span_attributes=8))
    try:
        with caplog.at_level(logging.WARNING, logger="otel_blackbox"):
            for n in range(50):
                with rec.tracer.start_as_current_span(f"cut {n}") as span:
                    span.set_attributes({f"k{i}": i for i in range(20)})
            rec.flush()
    finally:
        rec.provider.shutdown()
    warned = [r.getMessage() for r in caplog.records if "span limits" in r.getMessage()]
    assert len(warned) == 1, warned
    assert "'cut 0'" in warned[0] and "12 attributes dropped" in warned[0]
    assert "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT" in warned[0]
    (count,) = rec.rows(f"SELECT count(*) FROM spans WHERE attributes LIKE '%{ATTR_DROPPED_ATTRIBUTES}%'")[0]
    assert count == 50  # said once, every span marked


def test_zero_code_setup_lifts_the_limits_the_user_did_not_set(
    db_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    env = {"OTEL_BLACKBOX_DB": str(db_path)}
    provider = TracerProvider(shutdown_on_exit=False)
    processor = install(provider, env)
    try:
        assert processor is not None
        tracer = provider.get_tracer("zero-code")
        with tracer.start_as_current_span("wide") as span:
            span.set_attributes({f"k{i}": i for i in range(300)})
        processor.force_flush(10_000)
        (row,) = stored_rows(db_path)
        assert len(json.loads(row["attributes"])) == 300  # nothing cut, nothing to say
    finally:
        provider.shutdown()

    # A limit the user set is theirs; a value length limit is said once (it cuts and counts nothing).
    provider = TracerProvider(
        shutdown_on_exit=False, span_limits=SpanLimits(max_span_attributes=64, max_attribute_length=100)
    )
    env |= {"OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT": "64", "OTEL_BLACKBOX_DB": str(db_path.with_name("other.db"))}
    with caplog.at_level(logging.WARNING, logger="otel_blackbox"):
        processor = install(provider, env)
    try:
        assert processor is not None
        limits = provider._span_limits
        assert limits.max_span_attributes == 64 and limits.max_events == AGENT_SPAN_LIMIT
        assert any("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT is 100" in r.getMessage() for r in caplog.records)
    finally:
        provider.shutdown()
