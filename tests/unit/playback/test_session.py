"""Record then replay real SDK traffic: openai and anthropic, against the fake provider on 127.0.0.1."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import anthropic
import anthropic_agent  # examples/ is on sys.path (conftest.py)
import openai
import pytest
import weather_agent
from fake_llm import FakeLLMServer
from helpers import EXAMPLES, blocked_network, run_cli
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import NoOpTracer, Tracer

import otel_blackbox
from otel_blackbox._cassette.io import load_cassette, save_cassette
from otel_blackbox._cassette.model import terminal_outcome, tool_call_sequence
from otel_blackbox._cassette.verify import verify_cassette
from otel_blackbox._cost.usage import without_usage
from otel_blackbox.errors import CredentialLeak, ReplayDivergence, ReplayIncomplete

QUESTION = "What's the weather in Lisbon, and the 2 day forecast? I need both."
KEY = "sk-test-looks-real-0123456789abcdef"


def _tracer() -> Tracer:
    return TracerProvider(shutdown_on_exit=False).get_tracer("t")


def _openai_run(base_url: str, stream: bool, question: str = QUESTION) -> str:
    with openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0) as client:
        answer, _ = weather_agent.run_agent(client, _tracer(), question, stream=stream)
    return answer


def _anthropic_run(base_url: str, stream: bool) -> str:
    with anthropic.Anthropic(base_url=base_url, api_key=KEY, max_retries=0, open_telemetry=False) as client:
        answer, _ = anthropic_agent.run_agent(client, _tracer(), QUESTION, stream=stream)
    return answer


@pytest.mark.parametrize("stream", [False, True])
def test_openai_record_then_replay_offline(tmp_path: Path, stream: bool) -> None:
    cassette = tmp_path / "run.json"
    with FakeLLMServer() as server, otel_blackbox.session(mode="record", cassette=cassette):
        base_url = server.openai_base_url
        live = _openai_run(base_url, stream)
    recorded = load_cassette(cassette)
    assert verify_cassette(recorded).passed
    assert tool_call_sequence(recorded) == ["get_weather", "get_forecast"]
    assert terminal_outcome(recorded).final_answer == live
    text = cassette.read_text()
    assert KEY not in text and "call_" not in text and "chatcmpl-" not in text

    # The server is gone and sockets are blocked: the run is served from the cassette.
    with blocked_network() as attempts, otel_blackbox.session(mode="replay", cassette=cassette):
        replayed = _openai_run(base_url, stream)
    assert replayed == live
    assert attempts == []


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_record_then_replay_offline(tmp_path: Path, stream: bool) -> None:
    cassette = tmp_path / "run.json"
    with FakeLLMServer() as server, otel_blackbox.session(mode="record", cassette=cassette):
        base_url = server.anthropic_base_url
        live = _anthropic_run(base_url, stream)
    assert verify_cassette(load_cassette(cassette)).passed
    with blocked_network() as attempts, otel_blackbox.session(mode="replay", cassette=cassette):
        replayed = _anthropic_run(base_url, stream)
    assert replayed == live and attempts == []


def test_changed_prompt_diverges_naming_step_and_path(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    with FakeLLMServer() as server, otel_blackbox.session(mode="record", cassette=cassette):
        base_url = server.openai_base_url
        _openai_run(base_url, False)
    with (
        blocked_network(),
        pytest.raises(ReplayDivergence) as info,
        otel_blackbox.session(mode="replay", cassette=cassette),
    ):
        _openai_run(base_url, False, question=QUESTION.replace("Lisbon", "Porto"))
    message = str(info.value)
    assert message.startswith("[blackbox] step 0 (model_input) differs at $.messages[")
    assert "Lisbon" in message and "Porto" in message


def test_sequence_match_serves_in_order_and_missing_calls_fail(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    with FakeLLMServer() as server, otel_blackbox.session(mode="record", cassette=cassette):
        base_url = server.openai_base_url
        live = _openai_run(base_url, False)
    with blocked_network(), otel_blackbox.session(mode="replay", cassette=cassette, match="sequence"):
        # A different question, served anyway: sequence matching does not compare requests.
        assert _openai_run(base_url, False, question=QUESTION + " (at 10:42)") == live
    with (
        blocked_network(),
        pytest.raises(ReplayIncomplete, match="made 0 of 2 recorded model calls"),
        otel_blackbox.session(mode="replay", cassette=cassette),
    ):
        pass


def test_a_key_in_the_prompt_refuses_the_recording(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    with (
        FakeLLMServer() as server,
        pytest.raises(CredentialLeak),
        otel_blackbox.session(mode="record", cassette=cassette),
    ):
        _openai_run(server.openai_base_url, False, question=f"my key is {KEY}, what's the weather in Lisbon?")
    assert not cassette.exists()


def test_launcher_record_and_replay_an_unmodified_script(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    agent = [sys.executable, str(EXAMPLES / "weather_agent.py"), "--db", str(tmp_path / "bb.db")]
    with FakeLLMServer() as server:
        base_url = server.openai_base_url
        live = run_cli("record", "-o", str(cassette), "--", *agent, "--base-url", base_url)
    assert live.returncode == 0, live.stderr
    assert verify_cassette(load_cassette(cassette)).passed
    replay = run_cli("replay", str(cassette), "--", *agent, "--base-url", base_url)
    assert replay.returncode == 0, replay.stderr
    assert replay.stdout.splitlines()[-1] == live.stdout.splitlines()[-1]  # the same final answer
    changed = run_cli(
        "replay", str(cassette), "--", *agent, "--base-url", base_url, "--question", "Weather in Rome?"
    )
    assert changed.returncode == 1 and "[blackbox] step 0 (model_input) differs at" in changed.stderr
    sequence = run_cli(
        "replay",
        str(cassette),
        "--match",
        "sequence",
        "--",
        *agent,
        "--base-url",
        base_url,
        "--question",
        "Rome?",
    )
    assert sequence.returncode == 0, sequence.stderr


def test_missing_cassette_in_replay_is_one_line_exit_2(tmp_path: Path) -> None:
    result = run_cli("replay", str(tmp_path / "none.json"), "--", sys.executable, "-c", "print(1)")
    assert result.returncode == 2 and "no such cassette" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_non_model_http_exchanges_replay_without_network(tmp_path: Path) -> None:
    import httpx

    cassette = tmp_path / "run.json"
    with FakeLLMServer() as server:
        url = server.openai_base_url + "/models-that-do-not-exist"
        with otel_blackbox.session(mode="record", cassette=cassette):
            recorded = httpx.get(url).status_code
    payloads = [s.payload for s in load_cassette(cassette).steps]
    assert payloads[0]["event"] == "http_exchange" and payloads[0]["request"]["url"] == url
    with blocked_network() as attempts, otel_blackbox.session(mode="replay", cassette=cassette):
        assert httpx.get(url).status_code == recorded
    assert attempts == []
    save_cassette(load_cassette(cassette), tmp_path / "copy.json")  # still a valid v2 cassette
    assert verify_cassette(load_cassette(tmp_path / "copy.json")).passed


def test_async_client_and_responses_api_record_then_replay(tmp_path: Path) -> None:
    import asyncio

    async def chat(base_url: str) -> str:
        async with openai.AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=0) as client:
            reply = await client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "Say hello"}]
            )
        return reply.choices[0].message.content or ""

    def responses(base_url: str) -> str:
        with openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0) as client:
            return client.responses.create(model="gpt-4o-mini", input="Say hello").output_text

    cassette = tmp_path / "run.json"
    with FakeLLMServer() as server, otel_blackbox.session(mode="record", cassette=cassette):
        base_url = server.openai_base_url
        live = (asyncio.run(chat(base_url)), responses(base_url))
    assert [s.type for s in load_cassette(cassette).steps].count("model_output") == 2
    with blocked_network() as attempts, otel_blackbox.session(mode="replay", cassette=cassette):
        assert (asyncio.run(chat(base_url)), responses(base_url)) == live
    assert attempts == []


def test_plain_httpx_model_calls_are_recorded_and_replayed(tmp_path: Path) -> None:
    """Older SDKs talk through httpx (httpcore 1), not httpx2: the same hook sits beneath it."""
    import httpx

    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Say hello"}]}
    cassette = tmp_path / "run.json"
    with FakeLLMServer() as server, otel_blackbox.session(mode="record", cassette=cassette):
        url = server.openai_base_url + "/chat/completions"
        live = httpx.post(url, json=body).json()["choices"][0]["message"]["content"]
    assert without_usage(load_cassette(cassette).steps[1].payload) == {"type": "final_answer", "text": live}
    with blocked_network() as attempts, otel_blackbox.session(mode="replay", cassette=cassette):
        replayed = httpx.post(url, json=body).json()["choices"][0]["message"]["content"]
    assert replayed == live and attempts == []


@pytest.mark.parametrize(
    ("signum", "reason"), [(signal.SIGTERM, "terminated"), (signal.SIGINT, "interrupted")]
)
def test_the_cassette_is_written_when_the_program_is_stopped(
    tmp_path: Path, signum: int, reason: str
) -> None:
    script = tmp_path / "agent.py"
    script.write_text(
        "import os, sys, time, openai\n"
        f"client = openai.OpenAI(base_url=sys.argv[1], api_key={KEY!r}, max_retries=0)\n"
        "client.chat.completions.create(model='gpt-4o-mini', messages=[{'role': 'user', 'content': 'hi'}])\n"
        "print(os.getpid(), flush=True)\n"
        "time.sleep(60)\n"
    )
    cassette = tmp_path / "run.json"
    with FakeLLMServer() as server:
        argv = [sys.executable, "-m", "otel_blackbox.cli", "record", "-o", str(cassette), "--"]
        with subprocess.Popen([*argv, sys.executable, str(script), server.openai_base_url],
                              stdout=subprocess.PIPE, text=True) as launcher:  # fmt: skip
            assert launcher.stdout is not None
            os.kill(int(launcher.stdout.readline()), signum)
            launcher.wait(timeout=30)
    steps = load_cassette(cassette).steps
    assert [s.type for s in steps] == ["model_input", "model_output", "metadata"]
    assert steps[-1].payload["reason"] == reason


def test_tool_rounds_come_from_tool_spans_when_the_program_has_them(tmp_path: Path) -> None:
    """The TOOL span says what the tool really did (it raised); the request, what the model was told."""
    cassette = tmp_path / "run.json"
    tools = weather_agent.WeatherTools(fail=True)
    with (
        FakeLLMServer() as server,
        otel_blackbox.session(mode="record", cassette=cassette),
        openai.OpenAI(base_url=server.openai_base_url, api_key=KEY, max_retries=0) as client,
    ):
        weather_agent.run_agent(client, _tracer(), QUESTION, tools=tools)
    results = {
        s.payload["toolName"]: s.payload for s in load_cassette(cassette).steps if s.type == "tool_result"
    }
    assert results["get_weather"]["error"] == "ValueError: weather service unavailable for Lisbon"
    assert "Lisbon" in results["get_forecast"]["result"]
    assert verify_cassette(load_cassette(cassette)).passed
    # Without TOOL spans (a tracer that records nothing) the same round comes from the next request.
    plain = tmp_path / "plain.json"
    with (
        FakeLLMServer() as server,
        otel_blackbox.session(mode="record", cassette=plain),
        openai.OpenAI(base_url=server.openai_base_url, api_key=KEY, max_retries=0) as client,
    ):
        weather_agent.run_agent(client, NoOpTracer(), QUESTION, tools=weather_agent.WeatherTools(fail=True))
    sent = {s.payload["toolName"]: s.payload for s in load_cassette(plain).steps if s.type == "tool_result"}
    assert sent["get_weather"]["result"] == "error: ValueError: weather service unavailable for Lisbon"


def test_streamed_responses_api_and_async_anthropic_record_then_replay(tmp_path: Path) -> None:
    import asyncio

    def responses_stream(base_url: str) -> str:
        with (
            openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0) as client,
            client.responses.stream(model="gpt-4o-mini", input="Say hello") as stream,
        ):
            return stream.get_final_response().output_text

    async def anthropic_async(base_url: str) -> str:
        async with anthropic.AsyncAnthropic(
            base_url=base_url, api_key=KEY, max_retries=0, open_telemetry=False
        ) as client:
            message = await client.messages.create(
                model="claude-haiku-4-5", max_tokens=64, messages=[{"role": "user", "content": "Say hello"}]
            )
        return "".join(b.text for b in message.content if b.type == "text")

    cassette = tmp_path / "run.json"
    with FakeLLMServer() as server, otel_blackbox.session(mode="record", cassette=cassette):
        urls = (server.openai_base_url, server.anthropic_base_url)
        live = (responses_stream(urls[0]), asyncio.run(anthropic_async(urls[1])))
    with blocked_network() as attempts, otel_blackbox.session(mode="replay", cassette=cassette):
        assert (responses_stream(urls[0]), asyncio.run(anthropic_async(urls[1]))) == live
    assert attempts == [] and all(live)


def test_a_key_in_the_environment_never_reaches_the_cassette(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_key = "sk-proj-" + "Zx9" * 15
    monkeypatch.setenv("OPENAI_API_KEY", env_key)
    cassette = tmp_path / "run.json"
    with (
        FakeLLMServer() as server,
        otel_blackbox.session(mode="record", cassette=cassette),
        openai.OpenAI(base_url=server.openai_base_url, max_retries=0) as client,  # the key from the env
    ):
        weather_agent.run_agent(client, _tracer(), QUESTION)
    assert env_key not in cassette.read_text() and verify_cassette(load_cassette(cassette)).passed


def test_the_launcher_passes_the_program_exit_code_through(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    result = run_cli("record", "-o", str(cassette), "--", sys.executable, "-c", "import sys; sys.exit(3)")
    assert result.returncode == 3 and result.stderr == ""
    assert load_cassette(cassette).steps[-1].payload == {"event": "run_ended", "reason": "no_final_answer"}


def test_a_request_replay_cannot_understand_still_never_goes_out(tmp_path: Path) -> None:
    import httpx

    cassette = tmp_path / "run.json"
    with FakeLLMServer() as server, otel_blackbox.session(mode="record", cassette=cassette):
        url = server.openai_base_url + "/chat/completions"
        httpx.post(url, json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]})
    with (
        blocked_network() as attempts,
        pytest.raises(ReplayDivergence, match="could not answer POST"),
        otel_blackbox.session(mode="replay", cassette=cassette),
    ):
        # A chat request whose messages are not a list: the translation raises, the session answers 400.
        assert httpx.post(url, json={"model": "gpt-4o-mini", "messages": 7}).status_code == 400
    assert attempts == []
