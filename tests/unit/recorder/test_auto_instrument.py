"""Zero-code setup: ``opentelemetry-instrument`` with the blackbox pre-instrument hook and exporter.

The end-to-end tests run a small agent that never mentions otel-blackbox (unless it is the case
under test) under the real opentelemetry-instrument, against the fake LLM server, and read the
database with sqlite3. The in-process tests pin down the hook's decisions one at a time.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_llm import FakeLLMServer
from helpers import EXAMPLES, FRAMEWORK_INSTRUMENTORS_OFF
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import ProxyTracerProvider

from otel_blackbox import BlackboxSpanProcessor
from otel_blackbox._recorder import auto

# --- end to end: opentelemetry-instrument python agent.py -------------------------------------

AGENT = '''
"""A tiny agent: the real openai SDK, tracing set up by opentelemetry-instrument, nothing else."""
import json
import os
import threading
import time

from openai import OpenAI
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry import trace

if os.environ.get("AGENT_OWN_RECORDER"):  # a program that also records on its own, to the same file
    from otel_blackbox import BlackboxSpanProcessor

    trace.get_tracer_provider().add_span_processor(BlackboxSpanProcessor())

client = OpenAI(base_url=os.environ["FAKE_LLM_URL"], api_key="sk-fake")
tracer = trace.get_tracer("tiny-agent")
with tracer.start_as_current_span("agent-run"):
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "What is 2 + 2?"}]
    )
report = {
    "answer": reply.choices[0].message.content,
    "instrumented": OpenAIInstrumentor().is_instrumented_by_opentelemetry,
    "shipper_threads": sum(t.name == "otel-blackbox-shipper" for t in threading.enumerate()),
}
if os.environ.get("AGENT_OWN_RECORDER"):
    from otel_blackbox._recorder import auto

    report["auto_recording"] = auto.installed() is not None
print(json.dumps(report), flush=True)

ending = os.environ.get("AGENT_ENDING", "normal")
if ending == "killed":  # a crash stand-in: no flush, no atexit, no shutdown
    span = tracer.start_span("still-running")
    print(format(span.get_span_context().span_id, "016x"), flush=True)
    time.sleep(1.0)
    os._exit(0)
if ending == "leave-open":
    tracer.start_span("never-ended")
'''


def _instrument_command() -> str:
    found = shutil.which("opentelemetry-instrument", path=os.path.dirname(sys.executable))
    assert found, "opentelemetry-instrument is not installed next to this Python"
    return found


def run_instrumented(
    tmp_path: Path, fake_llm: FakeLLMServer, script: Path | None = None, *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    if script is None:
        script = tmp_path / "agent.py"
        script.write_text(AGENT, encoding="utf-8")
    environ = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_") and k != "PYTHONPATH"}
    environ.update(
        FAKE_LLM_URL=fake_llm.openai_base_url,
        OTEL_TRACES_EXPORTER="none",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        **FRAMEWORK_INSTRUMENTORS_OFF,
    )
    environ.update(env)
    argv = [_instrument_command(), sys.executable, str(script), *args]
    return subprocess.run(argv, env=environ, cwd=tmp_path, capture_output=True, text=True, timeout=60)


def rows(db: Path, query: str, *params: Any) -> list[sqlite3.Row]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute(query, params).fetchall()
    finally:
        conn.close()


def report_of(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout.splitlines()[0])
    assert report["answer"].startswith("Final answer"), report
    return report


# opentelemetry-instrument loads every installed instrumentor of the OpenAI SDK, and both
# OpenInference's and the official opentelemetry-instrumentation-openai-v2 (a dev dependency, for
# tests/integration/test_frameworks.py) register as "openai": each call has one LLM span from each.
OPENINFERENCE_OPENAI = "openinference.instrumentation.openai"
OPENAI_V2 = "opentelemetry.util.genai.handler"  # openai-v2 starts its spans through util-genai


def scope_of(row: sqlite3.Row) -> str:
    return str(json.loads(row["scope"]).get("name", ""))


def assert_llm_span(db: Path) -> None:
    """The OpenInference LLM span, with model and tokens, as a child of the agent's own span (and
    at most one more LLM span, openai-v2's, inside it)."""
    spans = rows(db, "SELECT * FROM spans WHERE oi_span_kind = 'LLM'")
    (llm,) = [s for s in spans if scope_of(s) == OPENINFERENCE_OPENAI]
    assert [scope_of(s) for s in spans if s is not llm] in ([], [OPENAI_V2])
    (root,) = rows(db, "SELECT * FROM spans WHERE name = 'agent-run'")
    assert llm["model"] == "gpt-4o-mini"
    assert llm["prompt_tokens"] > 0 and llm["completion_tokens"] > 0
    assert llm["total_tokens"] == llm["prompt_tokens"] + llm["completion_tokens"]
    assert llm["status"] == "ok" and llm["end_ns"] is not None
    wrapping = {s["span_id"]: s["parent_span_id"] for s in spans if s is not llm}  # openai-v2's, if any
    parent = wrapping.get(llm["parent_span_id"], llm["parent_span_id"])
    assert llm["trace_id"] == root["trace_id"] and parent == root["span_id"]


def test_hook_records_spans_and_the_span_a_killed_process_left_open(
    tmp_path: Path, fake_llm: FakeLLMServer
) -> None:
    db = tmp_path / "traces.db"
    done = run_instrumented(tmp_path, fake_llm, OTEL_BLACKBOX_DB=str(db), AGENT_ENDING="killed")
    report = report_of(done)
    assert report["instrumented"] and report["shipper_threads"] == 1
    assert_llm_span(db)
    open_span_id = done.stdout.splitlines()[1]
    (still_running,) = rows(db, "SELECT * FROM spans WHERE name = 'still-running'")
    assert still_running["span_id"] == open_span_id
    assert still_running["status"] == "open" and still_running["end_ns"] is None
    assert "Traceback" not in done.stderr


def test_blackbox_exporter_records_ended_spans_only(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    db = tmp_path / "traces.db"
    done = run_instrumented(
        tmp_path,
        fake_llm,
        OTEL_TRACES_EXPORTER="blackbox",
        OTEL_BLACKBOX_DB=str(db),
        AGENT_ENDING="leave-open",
    )
    # The exporter writes on the batch processor's thread: the hook added no processor (no shipper thread).
    assert report_of(done)["shipper_threads"] == 0
    assert_llm_span(db)
    assert rows(db, "SELECT name FROM spans WHERE status = 'open' OR name = 'never-ended'") == []
    assert len(rows(db, "SELECT * FROM recorders")) == 1


def test_programs_own_processor_on_the_global_provider_takes_over(
    tmp_path: Path, fake_llm: FakeLLMServer
) -> None:
    db = tmp_path / "traces.db"
    report = report_of(run_instrumented(tmp_path, fake_llm, OTEL_BLACKBOX_DB=str(db), AGENT_OWN_RECORDER="1"))
    # One writer left, and it is the program's: the hook's processor stood down.
    assert report == report | {"shipper_threads": 1, "auto_recording": False}
    assert_llm_span(db)
    counts = rows(db, "SELECT span_id, count(*) AS n FROM spans GROUP BY span_id")
    assert len(counts) >= 3 and {row["n"] for row in counts} == {1}
    # Every span's final row was written by one processor only, not by both.
    (written,) = rows(db, "SELECT sum(spans_written) AS n FROM recorders")
    assert written["n"] == len(counts)


def test_example_agent_with_its_own_provider_records_each_span_once(
    tmp_path: Path, fake_llm: FakeLLMServer
) -> None:
    db = tmp_path / "traces.db"
    done = run_instrumented(
        tmp_path,
        fake_llm,
        EXAMPLES / "weather_agent.py",
        "--db",
        str(db),
        "--base-url",
        fake_llm.openai_base_url,
        OTEL_BLACKBOX_DB=str(db),
    )
    assert done.returncode == 0, done.stderr
    spans = rows(db, "SELECT * FROM spans")
    assert len({(s["trace_id"], s["span_id"]) for s in spans}) == len(spans)
    # opentelemetry-instrument instrumented OpenAI on the global provider first (the hook's
    # processor records those); the agent's own provider records its AGENT and TOOL spans.
    kinds = sorted(s["oi_span_kind"] for s in spans if s["oi_span_kind"] and scope_of(s) != OPENAI_V2)
    assert kinds == ["AGENT", "LLM", "LLM", "TOOL", "TOOL"]
    assert len([s for s in spans if scope_of(s) == OPENAI_V2]) in (0, 2)  # one per call, if installed
    assert len({s["trace_id"] for s in spans}) == 1


def test_sdk_disabled_one_warning_and_the_program_runs(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    db = tmp_path / "traces.db"
    done = run_instrumented(tmp_path, fake_llm, OTEL_BLACKBOX_DB=str(db), OTEL_SDK_DISABLED="true")
    report_of(done)
    ours = [line for line in done.stderr.splitlines() if "otel-blackbox" in line]
    assert len(ours) == 1 and "OTEL_SDK_DISABLED" in ours[0], done.stderr
    assert "Traceback" not in done.stderr
    assert not db.exists()


def test_bad_value_one_warning_and_instrumentation_still_loads(
    tmp_path: Path, fake_llm: FakeLLMServer
) -> None:
    db = tmp_path / "traces.db"
    done = run_instrumented(tmp_path, fake_llm, OTEL_BLACKBOX_DB=str(db), OTEL_BLACKBOX_MAX_DB_MB="lots")
    # A hook that raised would have stopped opentelemetry-instrument before the instrumentors.
    assert report_of(done)["instrumented"]
    assert done.stderr.count("OTEL_BLACKBOX_MAX_DB_MB") == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert not db.exists()


# --- the hook's decisions, in process ---------------------------------------------------------


@pytest.fixture
def provider() -> Iterator[TracerProvider]:
    made = TracerProvider(shutdown_on_exit=False)
    yield made
    made.shutdown()


def processors(provider: TracerProvider) -> tuple[SpanProcessor, ...]:
    return provider._active_span_processor._span_processors


def env_for(db: Path, **more: str) -> dict[str, str]:
    return {"OTEL_BLACKBOX_DB": str(db), **more}


def test_nothing_asked_nothing_added(provider: TracerProvider, caplog: pytest.LogCaptureFixture) -> None:
    assert auto.install(provider, {}) is None
    assert auto.install(provider, {"OTEL_BLACKBOX_ENABLED": "false", "OTEL_BLACKBOX_DB": "x.db"}) is None
    assert processors(provider) == () and caplog.records == []


def test_db_adds_one_processor_once(provider: TracerProvider, tmp_path: Path) -> None:
    added = auto.install(provider, env_for(tmp_path / "a.db"))
    assert isinstance(added, BlackboxSpanProcessor)
    assert auto.install(provider, env_for(tmp_path / "a.db")) is added
    assert processors(provider) == (added,) and auto.installed(provider) is added
    assert Path(added.config.db_path) == tmp_path / "a.db"


@pytest.mark.parametrize("value", ["true", "1", "YES"])
def test_enabled_alone_uses_the_default_path(
    provider: TracerProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.chdir(tmp_path)
    added = auto.install(provider, {"OTEL_BLACKBOX_ENABLED": value})
    assert added is not None and str(added.config.db_path) == "blackbox.db"


def test_same_file_added_later_takes_over(provider: TracerProvider, tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    mine = auto.install(provider, env_for(db))
    assert mine is not None
    tracer = provider.get_tracer("t")
    spanning = tracer.start_span("spans-the-takeover")
    assert mine.force_flush(5_000)  # its open row is on disk, written by the auto processor
    theirs = BlackboxSpanProcessor(db)
    provider.add_span_processor(theirs)
    assert auto.installed(provider) is None
    spanning.end()
    with tracer.start_as_current_span("after"):
        pass
    assert theirs.force_flush(5_000)
    assert mine.spans_written == 0 and theirs.spans_written == 2
    found = rows(db, "SELECT name, status FROM spans ORDER BY name")
    assert [tuple(r) for r in found] == [("after", "unset"), ("spans-the-takeover", "unset")]


def test_another_file_or_processor_leaves_the_auto_one_recording(
    provider: TracerProvider, tmp_path: Path
) -> None:
    mine = auto.install(provider, env_for(tmp_path / "a.db"))
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    other = BlackboxSpanProcessor(tmp_path / "b.db")
    provider.add_span_processor(other)
    assert auto.installed(provider) is mine and mine is not None
    with provider.get_tracer("t").start_as_current_span("both"):
        pass
    assert mine.force_flush(5_000) and other.force_flush(5_000)
    assert mine.spans_written == other.spans_written == 1 and len(memory.get_finished_spans()) == 1


def test_exporter_selected_adds_nothing(provider: TracerProvider, tmp_path: Path) -> None:
    assert auto.install(provider, env_for(tmp_path / "a.db", OTEL_TRACES_EXPORTER="otlp, blackbox")) is None
    assert processors(provider) == ()


def one_warning(caplog: pytest.LogCaptureFixture) -> str:
    (record,) = caplog.records
    assert record.name == "otel_blackbox" and record.levelno == logging.WARNING and not record.exc_info
    return record.getMessage()


@pytest.mark.parametrize(
    ("var", "value"),
    [
        ("OTEL_BLACKBOX_MAX_DB_MB", "lots"),
        ("OTEL_BLACKBOX_MAX_DB_MB", "-5"),  # parses, then fails the range check: still named by variable
        ("OTEL_BLACKBOX_RETENTION", "soon"),
        ("OTEL_BLACKBOX_REDACT_PATTERNS", '["("]'),
        ("OTEL_BLACKBOX_ENABLED", "maybe"),
    ],
)
def test_bad_value_is_one_warning_naming_the_variable(
    provider: TracerProvider, tmp_path: Path, caplog: pytest.LogCaptureFixture, var: str, value: str
) -> None:
    assert auto.install(provider, env_for(tmp_path / "a.db", **{var: value})) is None
    message = one_warning(caplog)
    assert message.count(var) == 1 and message.startswith(f"otel-blackbox: not recording: {var}:")
    assert processors(provider) == ()


def test_sdk_disabled_warns(
    provider: TracerProvider, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert auto.install(provider, env_for(tmp_path / "a.db", OTEL_SDK_DISABLED="True")) is None
    assert "OTEL_SDK_DISABLED" in one_warning(caplog)
    assert processors(provider) == ()


def test_no_sdk_provider_warns(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    assert auto.install(ProxyTracerProvider(), env_for(tmp_path / "a.db")) is None
    assert "ProxyTracerProvider" in one_warning(caplog)


def test_an_unexpected_failure_is_one_line_not_an_exception(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken(TracerProvider):
        def add_span_processor(self, span_processor: SpanProcessor) -> None:
            raise RuntimeError("no room")

    broken = Broken(shutdown_on_exit=False)
    assert auto.install(broken, env_for(tmp_path / "a.db")) is None
    assert one_warning(caplog) == "otel-blackbox: not recording: RuntimeError: no room"
