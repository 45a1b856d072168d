"""Capture export (OTEL_BLACKBOX_CAPTURE_HTTP_EXPORT): capture spans for the provider's other processors.

Real OTel SDK with a real BlackboxSpanProcessor and SQLite file, the real openai SDK against the fake
provider (examples/fake_llm.py), and beside it on the same provider a real BatchSpanProcessor with
the real OTLP/HTTP exporter to a receiver on 127.0.0.1 (tests/helpers.Receiver, the fleet backend's
stand-in) and an InMemorySpanExporter. What the backend received is read back from the protobuf
requests; the database as the CLI reads it (store.queries), and its bytes.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import pytest
import weather_agent  # examples/ is on sys.path (conftest.py)
from fake_llm import FakeLLMServer
from helpers import ROOT, Receiver
from opentelemetry import context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

from otel_blackbox import BlackboxConfig, BlackboxSpanProcessor
from otel_blackbox._cassette.captured import captured_model_call
from otel_blackbox._config import ENV_VARS
from otel_blackbox._recorder import capture
from otel_blackbox._spans.semconv import ATTR_HTTP_REQUEST_BODY, ATTR_HTTP_RESPONSE_BODY, HTTP_SPAN_NAME
from otel_blackbox._store.connection import connect_reader
from otel_blackbox._store.queries import SpanRecord, iter_spans
from otel_blackbox.errors import ConfigError

EXPORT = "OTEL_BLACKBOX_CAPTURE_HTTP_EXPORT"
ON = {"OTEL_BLACKBOX_CAPTURE_HTTP": "true", EXPORT: "true", "OTEL_BLACKBOX_REDACT_FIELDS": "customer_ssn"}
API_KEY = "sk-fake-export-0123456789abcdef"  # the SDK's: a header, never captured
# Secrets in the request bodies: an OpenAI key (a built-in pattern) in the question, and a customer
# record's field named in OTEL_BLACKBOX_REDACT_FIELDS in a tool result the next request carries.
BODY_KEY = "sk-proj-bodysecret0123456789abcdef"
SSN = "078-05-1120"
QUESTION = f"(my key is {BODY_KEY}) What's the weather in Lisbon, and the 2 day forecast? I need both."
CONTROL = "the 2 day forecast"  # a part of the question no rule masks: the bodies are there


class CustomerTools(weather_agent.WeatherTools):
    """get_weather answers with a customer record beside the weather, as a CRM-backed tool would."""

    def get_weather(self, city: str) -> str:
        return json.dumps({"city": city, "temperature_c": 12, "customer_ssn": SSN})


@dataclass
class Pipeline:
    provider: TracerProvider
    processor: BlackboxSpanProcessor
    memory: InMemorySpanExporter
    db_path: Path

    def run_agent(self, port: int) -> str:
        with openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=API_KEY, max_retries=0) as client:
            tracer = self.provider.get_tracer("tests")
            return weather_agent.run_agent(client, tracer, QUESTION, tools=CustomerTools())[0]

    def stored(self) -> list[SpanRecord]:
        assert self.processor.force_flush(10_000)
        conn = connect_reader(self.db_path)
        try:
            return list(iter_spans(conn))
        finally:
            conn.close()

    def stored_exchanges(self) -> list[SpanRecord]:
        return [s for s in self.stored() if s.name == HTTP_SPAN_NAME]


MakePipeline = Callable[..., Pipeline]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    backend = Receiver()
    # Polled every 50 ms rather than serve_forever's 0.5 s: its shutdown waits for one poll.
    backend.thread = threading.Thread(
        target=backend.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    with backend:
        yield backend


@pytest.fixture
def make_pipeline(tmp_path: Path, receiver: Receiver) -> Iterator[MakePipeline]:
    made: list[TracerProvider] = []

    def make(env: dict[str, str], *, before: Sequence[SpanProcessor] = (), **provider: Any) -> Pipeline:
        db_path = tmp_path / f"blackbox-{len(made)}.db"
        processor = BlackboxSpanProcessor(
            config=BlackboxConfig.from_env({**env, "OTEL_BLACKBOX_DB": str(db_path)})
        )
        tracer_provider = TracerProvider(shutdown_on_exit=False, **provider)
        tracer_provider.add_span_processor(processor)
        for extra in before:
            tracer_provider.add_span_processor(extra)
        exporter = OTLPSpanExporter(endpoint=f"{receiver.url}/v1/traces")
        tracer_provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=50))
        memory = InMemorySpanExporter()
        tracer_provider.add_span_processor(SimpleSpanProcessor(memory))
        made.append(tracer_provider)
        return Pipeline(tracer_provider, processor, memory, db_path)

    yield make
    for tracer_provider in made:
        tracer_provider.shutdown()


# --- what the backend received ----------------------------------------------------------------------


@dataclass
class Exported:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str | None
    attributes: dict[str, Any]
    raw: bytes  # the span's protobuf, to search for what must not be there


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None


def backend_spans(receiver: Receiver, flush: Pipeline | None = None) -> list[Exported]:
    """Every span the receiver accepted (after a flush of ``flush``'s provider, if given)."""
    if flush is not None:
        assert flush.provider.force_flush(10_000)
    spans = []
    for request in receiver.accepted():
        for resource_spans in request.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    spans.append(
                        Exported(
                            span.name,
                            span.trace_id.hex(),
                            span.span_id.hex(),
                            span.parent_span_id.hex() or None,
                            {kv.key: _value(kv.value) for kv in span.attributes},
                            span.SerializeToString(),
                        )
                    )
    return spans


def backend_exchanges(receiver: Receiver, flush: Pipeline | None = None) -> list[Exported]:
    return [s for s in backend_spans(receiver, flush) if s.name == HTTP_SPAN_NAME]


def wait_for(condition: Callable[[], bool], what: str) -> None:
    """Wait until ``condition()`` holds (a BatchSpanProcessor's worker exports on its own schedule)."""
    deadline = time.monotonic() + 20
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.02)


def _tool_call_ids(attributes: dict[str, Any]) -> list[str]:
    model_call = json.loads(attributes["blackbox.model.output"])
    return [call["toolCallId"] for call in model_call.get("calls", [])]


# --- with the flag --------------------------------------------------------------------------------------


def test_the_backend_gets_the_capture_spans_redacted_as_the_database_stores_them(
    make_pipeline: MakePipeline, receiver: Receiver, fake_llm: FakeLLMServer
) -> None:
    pipeline = make_pipeline(ON)
    first = len(fake_llm.requests)
    pipeline.run_agent(fake_llm.port)
    sent = fake_llm.requests[first:]
    exported = backend_exchanges(receiver, flush=pipeline)
    stored = pipeline.stored_exchanges()
    assert len(sent) == len(exported) == len(stored) == 2  # a tool round, then the answer
    # The same spans, each stored once: ids, trace, parent (the agent span, also in the backend).
    by_id = {s.span_id: s for s in stored}
    assert len(by_id) == len(stored) and {s.span_id for s in exported} == set(by_id)
    (agent,) = [s for s in backend_spans(receiver) if s.name == "weather-agent"]
    for span in exported:
        record = by_id[span.span_id]
        assert (span.trace_id, span.parent_span_id) == (record.trace_id, record.parent_span_id)
        assert (span.trace_id, span.parent_span_id) == (agent.trace_id, agent.span_id)
        # What the backend holds is what the database holds: bodies, neutral payloads, all redacted.
        assert span.attributes == record.attributes
    # In the order the requests were sent: the bodies are there, and the secrets are masked.
    exported.sort(key=lambda s: len(json.loads(s.attributes[ATTR_HTTP_REQUEST_BODY])["messages"]))
    request_bodies = [span.attributes[ATTR_HTTP_REQUEST_BODY] for span in exported]
    assert all(CONTROL in body and "[REDACTED:openai-key]" in body for body in request_bodies)
    assert '\\"customer_ssn\\": \\"[REDACTED]\\"' in request_bodies[1]  # the tool result it carries
    assert "get_weather" in exported[0].attributes[ATTR_HTTP_RESPONSE_BODY]
    for span in exported:
        assert BODY_KEY.encode() not in span.raw and SSN.encode() not in span.raw
    data = b"".join(p.read_bytes() for p in pipeline.db_path.parent.glob(f"{pipeline.db_path.name}*"))
    assert BODY_KEY.encode() not in data and SSN.encode() not in data
    # Tool-call ids numbered once (call-0, call-1), alike in the backend and in the database.
    assert _tool_call_ids(exported[0].attributes) == ["call-0", "call-1"]
    model_call = captured_model_call(by_id[exported[0].span_id])
    assert model_call is not None
    assert [call["toolCallId"] for call in model_call[1]["calls"]] == ["call-0", "call-1"]
    # An InMemorySpanExporter on the same provider got the same two spans, as redacted.
    in_memory = [s for s in pipeline.memory.get_finished_spans() if s.name == HTTP_SPAN_NAME]
    assert sorted(s.context.span_id for s in in_memory) == sorted(int(i, 16) for i in by_id)
    for view in in_memory:
        attributes = dict(view.attributes or {})
        assert attributes == by_id[f"{view.context.span_id:016x}"].attributes
        assert json.loads(view.to_json())["attributes"] == attributes  # what ConsoleSpanExporter prints


@pytest.mark.parametrize(
    "env",
    [
        {"OTEL_BLACKBOX_CAPTURE_HTTP": "true"},
        {"OTEL_BLACKBOX_CAPTURE_HTTP": "true", EXPORT: "false"},
        {EXPORT: "true"},  # the export alone captures nothing
    ],
    ids=["capture-only", "export-false", "export-without-capture"],
)
def test_without_the_flag_the_backend_gets_no_capture_span(
    env: dict[str, str], make_pipeline: MakePipeline, receiver: Receiver, fake_llm: FakeLLMServer
) -> None:
    pipeline = make_pipeline(env)
    pipeline.run_agent(fake_llm.port)
    names = {s.name for s in backend_spans(receiver, flush=pipeline)}
    assert "weather-agent" in names and HTTP_SPAN_NAME not in names
    assert HTTP_SPAN_NAME not in {s.name for s in pipeline.memory.get_finished_spans()}
    captured = env.get("OTEL_BLACKBOX_CAPTURE_HTTP") == "true"
    assert len(pipeline.stored_exchanges()) == (2 if captured else 0)


# --- where the work is done, and by whom --------------------------------------------------------------


def _spy_on_attributes(monkeypatch: pytest.MonkeyPatch, pause_s: float = 0.0) -> list[str]:
    """Record the thread that works out each capture span's attributes (the real work still runs)."""
    threads: list[str] = []
    original = capture.HttpCapture.attributes

    def attributes(self: capture.HttpCapture, exchange: Any) -> dict[str, Any]:
        threads.append(threading.current_thread().name)
        time.sleep(pause_s)  # lets another reader come in meanwhile, if nothing keeps it out
        return original(self, exchange)

    monkeypatch.setattr(capture.HttpCapture, "attributes", attributes)
    return threads


def test_the_agents_thread_never_works_out_the_attributes(
    make_pipeline: MakePipeline, receiver: Receiver, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads = _spy_on_attributes(monkeypatch)
    pipeline = make_pipeline(ON)
    agent = threading.current_thread().name
    pipeline.run_agent(fake_llm.port)
    # No flush from here (BatchSpanProcessor.force_flush exports on the calling thread): the worker.
    wait_for(lambda: len(backend_exchanges(receiver)) == 2, "the worker exported both capture spans")
    assert len(pipeline.stored_exchanges()) == 2
    assert len(threads) == 2 and agent not in threads  # once each, by the shipper or the worker


def test_two_readers_at_once_number_the_tool_calls_once(
    make_pipeline: MakePipeline, receiver: Receiver, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Our shipper (a flush) and four readers of the exported views read the same spans at once."""
    threads = _spy_on_attributes(monkeypatch, pause_s=0.05)
    # A long flush interval keeps the shipper from reading before the flush below.
    pipeline = make_pipeline({**ON, "OTEL_BLACKBOX_FLUSH_INTERVAL_MS": "60000"})
    pipeline.run_agent(fake_llm.port)
    views = [s for s in pipeline.memory.get_finished_spans() if s.name == HTTP_SPAN_NAME]
    assert len(views) == 2
    start = threading.Barrier(5)
    seen: list[list[list[str]]] = []
    flushed: list[bool] = []

    def read() -> None:
        start.wait()
        seen.append([_tool_call_ids(dict(view.attributes or {})) for view in views])

    def flush() -> None:
        start.wait()
        flushed.append(pipeline.processor.force_flush(10_000))

    workers = [threading.Thread(target=read) for _ in range(4)] + [threading.Thread(target=flush)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert flushed == [True]
    assert seen == [[["call-0", "call-1"], []]] * 4  # in the order the calls completed
    assert len(threads) == 2  # each span's attributes worked out once, whoever came first
    stored = {s.span_id: s for s in pipeline.stored_exchanges()}
    exported = backend_exchanges(receiver, flush=pipeline)
    assert len(threads) == 2 and len(stored) == len(exported) == 2
    assert sorted(_tool_call_ids(s.attributes) for s in exported) == [[], ["call-0", "call-1"]]
    assert all(stored[s.span_id].attributes == s.attributes for s in exported)


# --- outside any span -------------------------------------------------------------------------------------


def test_a_capture_outside_any_span_is_exported_once_a_span_showed_the_provider(
    make_pipeline: MakePipeline, receiver: Receiver, fake_llm: FakeLLMServer
) -> None:
    pipeline = make_pipeline(ON)
    pipeline.run_agent(fake_llm.port)  # its requests were made in its spans: the provider is known now
    with openai.OpenAI(base_url=fake_llm.openai_base_url, api_key=API_KEY, max_retries=0) as client:
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "2 + 2?"}])
    exported = {s.span_id: s for s in backend_exchanges(receiver, flush=pipeline)}
    roots = [s for s in pipeline.stored_exchanges() if s.parent_span_id is None]
    assert len(exported) == 3 and len(roots) == 1
    (root,) = roots
    assert (
        exported[root.span_id].parent_span_id is None and exported[root.span_id].attributes == root.attributes
    )
    assert "2 + 2?" in root.attributes[ATTR_HTTP_REQUEST_BODY]


PROGRAM = """
import os, sys
import openai
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from otel_blackbox import BlackboxSpanProcessor

provider = TracerProvider()
provider.add_span_processor(BlackboxSpanProcessor())  # OTEL_BLACKBOX_* from the environment
provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=sys.argv[2] + "/v1/traces")))
trace.set_tracer_provider(provider)
# The first request of the program, outside any span: only the global provider tells where to go.
with openai.OpenAI(base_url=sys.argv[1], api_key="sk-fake-program-0123456789", max_retries=0) as client:
    client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hello"}])
provider.shutdown()
"""


def test_a_programs_first_request_outside_any_span_goes_through_the_global_provider(
    tmp_path: Path, receiver: Receiver, fake_llm: FakeLLMServer
) -> None:
    db = tmp_path / "program.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(ON, OTEL_BLACKBOX_DB=str(db))
    argv = [sys.executable, "-c", PROGRAM, fake_llm.openai_base_url, receiver.url]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "capture export" not in done.stderr, done.stderr
    (exported,) = backend_exchanges(receiver)
    conn = connect_reader(db)
    try:
        (stored,) = [s for s in iter_spans(conn) if s.name == HTTP_SPAN_NAME]
    finally:
        conn.close()
    assert (exported.span_id, exported.parent_span_id) == (stored.span_id, None)
    assert exported.attributes == stored.attributes and "hello" in stored.attributes[ATTR_HTTP_REQUEST_BODY]


# --- faults, sampling, other black boxes --------------------------------------------------------------------


class ChokingProcessor(SpanProcessor):
    """A third-party processor with a bug: on_end raises on a capture span."""

    def on_end(self, span: ReadableSpan) -> None:
        if span.name == HTTP_SPAN_NAME:
            raise RuntimeError("a bug in another processor")


class RaisingExporter(SpanExporter):
    """An exporter that fails on whatever it is given (read its attributes first, as exporters do)."""

    def __init__(self) -> None:
        self.calls = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.calls += 1
        for span in spans:
            dict(span.attributes or {})
        raise ConnectionError("the backend is down")


def test_a_failing_processor_or_exporter_disturbs_neither_the_agent_nor_the_database(
    make_pipeline: MakePipeline, receiver: Receiver, fake_llm: FakeLLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    raising = RaisingExporter()
    pipeline = make_pipeline(ON, before=[ChokingProcessor(), SimpleSpanProcessor(raising)])
    with caplog.at_level(logging.WARNING, logger="otel_blackbox"):
        answer = pipeline.run_agent(fake_llm.port)
    assert "Lisbon" in answer  # the agent ran to its end
    stored = pipeline.stored_exchanges()
    assert len(stored) == 2
    # The processors after the faulty ones still got the spans: the backend, the in-memory exporter.
    assert {s.span_id for s in backend_exchanges(receiver, flush=pipeline)} == {s.span_id for s in stored}
    assert len([s for s in pipeline.memory.get_finished_spans() if s.name == HTTP_SPAN_NAME]) == 2
    assert raising.calls >= 2  # it was called with the capture spans (SimpleSpanProcessor logs its error)
    choked = [r for r in caplog.records if "ChokingProcessor.on_end raised" in r.getMessage()]
    assert len(choked) == 1  # logged once, not per span


def test_a_capture_in_a_trace_the_sampler_dropped_is_not_exported(
    make_pipeline: MakePipeline, receiver: Receiver, fake_llm: FakeLLMServer
) -> None:
    """The default sampler follows the parent: a caller upstream that did not sample the trace."""
    pipeline = make_pipeline(ON)
    pipeline.run_agent(fake_llm.port)  # sampled: exported (and the provider known from now on)
    sampled = {s.span_id for s in backend_exchanges(receiver, flush=pipeline)}
    unsampled = SpanContext(0x5EED, 0x5EED, is_remote=True, trace_flags=TraceFlags(TraceFlags.DEFAULT))
    token = context.attach(set_span_in_context(NonRecordingSpan(unsampled)))
    try:
        pipeline.run_agent(fake_llm.port)
    finally:
        context.detach(token)
    stored = pipeline.stored_exchanges()
    assert len(sampled) == 2 and {s.span_id for s in backend_exchanges(receiver, flush=pipeline)} == sampled
    # The black box keeps them all, as without the export; those of the dropped trace only there.
    assert len(stored) == 4 and len([s for s in stored if s.trace_id == f"{0x5EED:032x}"]) == 2


def test_another_black_box_on_the_provider_gets_no_capture_span(
    make_pipeline: MakePipeline, receiver: Receiver, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    """A second BlackboxSpanProcessor captures for itself (here: not at all); it gets none of ours."""
    other_db = tmp_path / "other.db"
    other = BlackboxSpanProcessor(config=BlackboxConfig(db_path=other_db))
    pipeline = make_pipeline(ON, before=[other])
    pipeline.run_agent(fake_llm.port)
    assert len(backend_exchanges(receiver, flush=pipeline)) == len(pipeline.stored_exchanges()) == 2
    assert other.force_flush(10_000)
    conn = connect_reader(other_db)
    try:
        names = {s.name for s in iter_spans(conn)}
    finally:
        conn.close()
    assert "weather-agent" in names and HTTP_SPAN_NAME not in names


# --- the setting ------------------------------------------------------------------------------------------


def test_the_setting_is_off_by_default_and_read_from_the_environment() -> None:
    assert BlackboxConfig().capture_http_export is False
    assert BlackboxConfig.from_env({}).capture_http_export is False
    assert BlackboxConfig.from_env({EXPORT: "true"}).capture_http_export is True
    assert BlackboxConfig.from_env({EXPORT: "off"}).capture_http_export is False
    with pytest.raises(ConfigError, match=f"^{EXPORT}: expected true or false, got 'sometimes'$") as info:
        BlackboxConfig.from_env({EXPORT: "sometimes"})
    assert "\n" not in str(info.value)
    with pytest.raises(ConfigError, match=r"^capture_http_export: expected true or false"):
        BlackboxConfig(capture_http_export="yes")  # type: ignore[arg-type]
    assert "capture" in ENV_VARS[EXPORT][1] and ENV_VARS[EXPORT][0] == "capture_http_export"


def test_the_configuration_page_has_the_setting() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    (row,) = [line for line in page.splitlines() if line.startswith(f"| `{EXPORT}` |")]
    assert "| `capture_http_export` | `false` |" in row
