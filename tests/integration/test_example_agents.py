"""The example agents: the spans they make (in memory), and the scripts run as a user runs them."""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import anthropic
import anthropic_agent  # examples/ is on sys.path (conftest.py)
import openai
import pytest
import weather_agent
from fake_llm import FakeLLMServer
from helpers import EXAMPLES, run_cli
from openinference.instrumentation.anthropic import AnthropicInstrumentor
from openinference.instrumentation.openai import OpenAIInstrumentor
from openinference.semconv.trace import SpanAttributes
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND
QUESTION = "What's the weather in Lisbon, and the 2 day forecast? I need both."


class Traced:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("tests")

    def spans(self) -> dict[str, list[ReadableSpan]]:
        by_name: dict[str, list[ReadableSpan]] = {}
        for span in self.exporter.get_finished_spans():
            by_name.setdefault(span.name, []).append(span)
        return by_name


@pytest.fixture
def traced_openai() -> Iterator[Traced]:
    traced = Traced()
    OpenAIInstrumentor().instrument(tracer_provider=traced.provider)
    yield traced
    OpenAIInstrumentor().uninstrument()
    traced.provider.shutdown()


@pytest.fixture
def traced_anthropic() -> Iterator[Traced]:
    traced = Traced()
    AnthropicInstrumentor().instrument(tracer_provider=traced.provider)
    yield traced
    AnthropicInstrumentor().uninstrument()
    traced.provider.shutdown()


def check_tree(traced: Traced, root_name: str, trace_id: str, answer: str, llm_calls: int) -> None:
    """One trace: AGENT root, LLM and TOOL children, session.id on all of them."""
    spans = traced.spans()
    (root,) = spans[root_name]
    everything = [s for group in spans.values() for s in group]
    assert {f"{s.context.trace_id:032x}" for s in everything} == {trace_id}
    assert root.parent is None
    assert all(
        s.parent is not None and s.parent.span_id == root.context.span_id for s in everything if s is not root
    )

    attrs = root.attributes or {}
    assert attrs[KIND] == "AGENT"
    assert attrs[SpanAttributes.INPUT_VALUE] == QUESTION
    assert attrs[SpanAttributes.OUTPUT_VALUE] == answer
    session = attrs[SpanAttributes.SESSION_ID]
    assert all((s.attributes or {}).get(SpanAttributes.SESSION_ID) == session for s in everything)

    llm = [s for s in everything if (s.attributes or {}).get(KIND) == "LLM"]
    assert len(llm) == llm_calls

    (weather,) = spans["get_weather"]
    (forecast,) = spans["get_forecast"]
    for span, args in ((weather, {"city": "Lisbon"}), (forecast, {"city": "Lisbon", "days": 2})):
        a = span.attributes or {}
        assert a[KIND] == "TOOL"
        assert a[SpanAttributes.TOOL_NAME] == span.name
        assert json.loads(str(a[SpanAttributes.TOOL_PARAMETERS])) == args
        assert a[SpanAttributes.INPUT_VALUE] == a[SpanAttributes.TOOL_PARAMETERS]
        assert str(a[SpanAttributes.OUTPUT_VALUE]) in answer


@pytest.mark.parametrize("stream", [False, True])
def test_weather_agent_spans(traced_openai: Traced, stream: bool) -> None:
    with FakeLLMServer() as srv, openai.OpenAI(base_url=srv.openai_base_url, api_key="sk-fake") as client:
        answer, trace_id = weather_agent.run_agent(client, traced_openai.tracer, QUESTION, stream=stream)
    assert answer.startswith("Final answer: {")
    assert '"daily_high_c"' in answer
    check_tree(traced_openai, "weather-agent", trace_id, answer, llm_calls=2)
    assert [body.get("stream", False) for _, body in srv.requests] == [stream, stream]


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_agent_spans(traced_anthropic: Traced, stream: bool) -> None:
    with (
        FakeLLMServer() as srv,
        anthropic.Anthropic(base_url=srv.anthropic_base_url, api_key="sk-ant-fake") as client,
    ):
        answer, trace_id = anthropic_agent.run_agent(client, traced_anthropic.tracer, QUESTION, stream=stream)
    check_tree(traced_anthropic, "anthropic-agent", trace_id, answer, llm_calls=2)
    # The tool results went back as one user turn of tool_result blocks.
    last = srv.requests[-1][1]["messages"][-1]
    assert [b["type"] for b in last["content"]] == ["tool_result", "tool_result"]


def test_failing_tool_records_exception_and_tells_the_model(traced_openai: Traced) -> None:
    tools = weather_agent.WeatherTools(fail=True)
    with FakeLLMServer() as srv, openai.OpenAI(base_url=srv.openai_base_url, api_key="sk-fake") as client:
        answer, _ = weather_agent.run_agent(client, traced_openai.tracer, QUESTION, tools=tools)
    message = "weather service unavailable for Lisbon"
    assert f"error: ValueError: {message}" in answer
    (weather,) = traced_openai.spans()["get_weather"]
    assert weather.status.status_code is StatusCode.ERROR
    (event,) = weather.events
    assert event.name == "exception"
    assert (event.attributes or {})["exception.type"] == "ValueError"
    assert (event.attributes or {})["exception.message"] == message
    (forecast,) = traced_openai.spans()["get_forecast"]
    assert forecast.status.status_code is StatusCode.OK
    (root,) = traced_openai.spans()["weather-agent"]
    assert root.status.status_code is StatusCode.OK, "the agent recovered"


def run_script(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True, timeout=60
    )


def span_statuses(db: Path, trace_id: str) -> dict[str, str]:
    """name -> status of the trace's rows; empty while the recorder hasn't written any."""
    try:
        with closing(sqlite3.connect(db)) as conn:
            rows = conn.execute("SELECT name, status FROM spans WHERE trace_id = ?", (trace_id,)).fetchall()
    except sqlite3.OperationalError:  # no file or table yet
        return {}
    return dict(rows)


@pytest.mark.parametrize(
    ("script", "root"), [("weather_agent.py", "weather-agent"), ("anthropic_agent.py", "anthropic-agent")]
)
def test_script_prints_trace_and_records_it(tmp_path: Path, script: str, root: str) -> None:
    db = tmp_path / "bb.db"
    result = run_script(script, "--db", str(db), "--stream", "--question", "Weather in Kyoto?")
    assert result.returncode == 0, result.stderr
    trace_line, answer = result.stdout.splitlines()
    assert re.fullmatch(r"TRACE [0-9a-f]{32}", trace_line)
    assert answer.startswith('Final answer: {"city": "Kyoto"')
    statuses = span_statuses(db, trace_line.split()[1])
    assert statuses[root] == "ok" and statuses["get_weather"] == "ok"


def test_script_hang_in_tool_leaves_open_spans_when_killed(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    argv = [sys.executable, str(EXAMPLES / "weather_agent.py"), "--db", str(db), "--hang-in-tool"]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) as proc:
        watchdog = threading.Timer(30, proc.kill)  # never let a broken agent hang the suite
        watchdog.start()
        try:
            assert proc.stdout is not None
            trace_line, tool_line = proc.stdout.readline(), proc.stdout.readline()
            assert re.fullmatch(r"IN_TOOL [0-9a-f]{32}\n", tool_line), (trace_line, tool_line)
            trace_id = tool_line.split()[1]
            assert trace_line == f"TRACE {trace_id}\n"
            # The promise: a span open longer than the flush interval (200 ms) is on disk. Wait a
            # bounded multiple of it (no polling: polling would only prove "eventually"), then kill.
            time.sleep(1.0)
            proc.send_signal(signal.SIGKILL)
        finally:
            watchdog.cancel()
    assert proc.returncode == -signal.SIGKILL
    statuses = span_statuses(db, trace_id)
    assert statuses == {"weather-agent": "open", "ChatCompletion": "ok", "get_weather": "open"}
    with closing(sqlite3.connect(db)) as conn:
        (tool_attrs,) = conn.execute("SELECT attributes FROM spans WHERE name = 'get_weather'").fetchone()
    assert json.loads(json.loads(tool_attrs)[SpanAttributes.INPUT_VALUE]) == {"city": "Paris"}
    shown = run_cli("show", trace_id[:8], db=db, check=True).stdout
    assert "… weather-agent  [AGENT]  OPEN" in shown and "… get_weather  [TOOL]  OPEN" in shown
    assert "2 open" in shown.splitlines()[0]
