"""End to end: the real openai / anthropic SDKs, the real OpenInference instrumentors,
BlackboxSpanProcessor on a real SQLite file, and the CLI reading it back."""

from __future__ import annotations

from collections.abc import Iterator

import anthropic
import anthropic_agent  # examples/ is on sys.path (conftest.py)
import openai
import pytest
import weather_agent
from fake_llm import FakeLLMServer
from helpers import Recorder, run_cli
from openinference.instrumentation.anthropic import AnthropicInstrumentor
from openinference.instrumentation.openai import OpenAIInstrumentor

QUESTION = "What's the weather in Lisbon, and the 2 day forecast? I need both."


@pytest.fixture
def openai_recorder(recorder: Recorder) -> Iterator[Recorder]:
    OpenAIInstrumentor().instrument(tracer_provider=recorder.provider)
    yield recorder
    OpenAIInstrumentor().uninstrument()


@pytest.fixture
def anthropic_recorder(recorder: Recorder) -> Iterator[Recorder]:
    AnthropicInstrumentor().instrument(tracer_provider=recorder.provider)
    yield recorder
    AnthropicInstrumentor().uninstrument()


@pytest.mark.parametrize("stream", [False, True])
def test_openai_agent_in_show_verbose(
    openai_recorder: Recorder, fake_llm: FakeLLMServer, stream: bool
) -> None:
    with openai.OpenAI(
        base_url=fake_llm.openai_base_url, api_key="sk-fake-not-a-real-key", max_retries=0
    ) as client:
        answer, trace_id = weather_agent.run_agent(client, openai_recorder.tracer, QUESTION, stream=stream)
    openai_recorder.flush()
    tree = run_cli("show", trace_id[:12], db=openai_recorder.db_path, check=True).stdout
    lines = tree.splitlines()
    assert lines[0].startswith(f"trace {trace_id}  weather-agent  OK")
    assert "5 spans" in lines[0]
    assert lines[1].startswith("└── ") and "weather-agent  [AGENT]" in lines[1]
    llm_lines = [line for line in lines if "[LLM]" in line]
    assert len(llm_lines) == 2 and all("gpt-4o-mini" in line and "tokens " in line for line in llm_lines)
    assert any("get_weather  [TOOL]" in line for line in lines)
    assert any("get_forecast  [TOOL]" in line for line in lines)

    verbose = run_cli("show", trace_id, "-v", db=openai_recorder.db_path, check=True).stdout
    assert f"[user] {QUESTION}" in verbose
    assert "tools offered: get_weather, get_forecast" in verbose
    assert '→ get_weather({"city": "Lisbon"})' in verbose or '→ get_weather({"city":"Lisbon"})' in verbose
    assert "→ get_forecast(" in verbose and '"days": 2' in verbose
    assert "[tool call_" in verbose  # the tool results the model was sent, by call id
    assert f"[assistant] {answer[:40]}" in verbose
    assert "model: gpt-4o-mini  tokens: prompt " in verbose
    assert "sk-fake-not-a-real-key" not in openai_recorder.db_path.read_bytes().decode("utf-8", "replace")

    stats = run_cli("stats", "--json", db=openai_recorder.db_path, check=True).stdout
    assert '"model": "gpt-4o-mini"' in stats and '"llm_spans": 2' in stats


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_agent_in_show_verbose(
    anthropic_recorder: Recorder, fake_llm: FakeLLMServer, stream: bool
) -> None:
    with anthropic.Anthropic(
        base_url=fake_llm.anthropic_base_url, api_key="sk-ant-fake", max_retries=0, open_telemetry=False
    ) as client:
        answer, trace_id = anthropic_agent.run_agent(
            client, anthropic_recorder.tracer, QUESTION, stream=stream
        )
    anthropic_recorder.flush()
    verbose = run_cli("show", trace_id, "-v", db=anthropic_recorder.db_path, check=True).stdout
    assert verbose.splitlines()[0].startswith(f"trace {trace_id}  anthropic-agent  OK")
    assert verbose.count("[LLM]") == 2
    assert "claude-haiku-4-5" in verbose and "tokens: prompt " in verbose
    assert "tools offered: get_weather, get_forecast" in verbose
    assert "→ get_weather(" in verbose and "Lisbon" in verbose
    assert f"[user] {QUESTION}" in verbose
    assert answer[:40] in verbose
