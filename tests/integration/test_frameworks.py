"""From a production recording to an exact offline replay, for each framework a recording comes from.

Each case runs examples/framework_agent.py as its own process, recorded only by the processor (no
`otel-blackbox record`): the OpenAI Agents SDK (OpenInference, Responses API, JSON and SSE),
pydantic-ai (its own gen_ai spans), LangChain (OpenInference; no root span, one trace per call),
the official opentelemetry-instrumentation-openai-v2 (gen_ai spans with content; no root span
either), and the SDKs under the OpenInference OpenAI and Anthropic instrumentors. Then, as a user
would: `runs`, `cassette --run`, `replay` in the default exact mode with the provider stopped, and
the same replay with a changed prompt, which must diverge naming the changed value.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_llm import FakeLLMServer
from helpers import EXAMPLES, run_cli
from weather_api import WeatherAPI

from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.model import OBSERVED, terminal_outcome, tool_call_sequence
from otel_blackbox._cassette.verify import verify_cassette
from otel_blackbox._wire.anthropic.fields import ANTHROPIC_FIELDS
from otel_blackbox._wire.openai_chat.fields import CHAT_FIELDS

AGENT = EXAMPLES / "framework_agent.py"
QUESTION = "What's the weather in Lisbon, and the 2 day forecast? I need both."
CHANGED = "What's the weather in Porto, and the 2 day forecast? I need both."
ROUND = ["model_input", "model_output", "tool_call", "tool_result", "tool_call", "tool_result"]

# Streamed where the stream changes what the spans see: the Agents SDK (the issue's "with and
# without streaming") and openai-v2; the others' streams are the same SDK paths the fidelity matrix
# (tests/integration/test_fidelity_matrix.py) and tests/unit/cassette/test_cassette_from_spans.py replay.
CASES = [
    ("agents", False),
    ("agents", True),
    ("pydantic-ai", True),
    ("langchain", False),
    ("openai-v2", False),
    ("openai-v2", True),
    ("openinference-openai", True),
    ("openinference-anthropic", False),
    ("openinference-google-genai", True),
]
# The API hint a cassette from each source's spans carries (_cassette/from_spans/): the name where the spans
# tell the API, and stream where they tell that too.
HINT_OF = {
    ("agents", False): {"name": "openai-responses"},
    ("agents", True): {"name": "openai-responses"},  # the Agents SDK's spans do not say it streamed
    ("pydantic-ai", True): {"name": "openai-chat", "stream": True},
    ("langchain", False): {"name": "openai-chat"},  # LangChain says only that it streamed
    ("openai-v2", False): {"name": "openai-chat"},
    ("openai-v2", True): {"name": "openai-chat"},
    ("openinference-openai", True): {"name": "openai-chat", "stream": True},
    ("openinference-anthropic", False): {"name": "anthropic", "stream": False},
    ("openinference-google-genai", True): {"name": "gemini", "stream": True},
}
CHAT_PARAMS = [f"params.{name}" for name in sorted(CHAT_FIELDS.neutral_names())]
ANTHROPIC_PARAMS = [f"params.{name}" for name in sorted(ANTHROPIC_FIELDS.neutral_names())]
# What each source's spans show of the request, so what an exact replay compares.
OBSERVED_BY = {
    "agents": ["messages", "systemPrompt", "tools"],  # model and settings are the response's echo
    "pydantic-ai": ["messages", "model", "params.maxTokens", "params.stop", "params.temperature",
                    "params.topP", "systemPrompt", "tools"],  # no tool_choice
    # The neutral settings, and each other setting the span recorded (none here).
    "langchain": ["messages", "model", *CHAT_PARAMS, "systemPrompt", "tools"],
    "openai-v2": ["messages", "model", "params.maxTokens", "params.stop", "params.temperature",
                  "params.topP", "systemPrompt"],  # no tool definitions
    "openinference-openai": ["messages", "model", *CHAT_PARAMS, "systemPrompt", "tools"],
    "openinference-anthropic": ["messages", "model", *ANTHROPIC_PARAMS, "systemPrompt", "tools"],
    "openinference-google-genai": ["messages", "systemPrompt", "tools"],  # no invocation parameters
}  # fmt: skip


def _agent(
    framework: str, base_url: str, db: Path, stream: bool, question: str = QUESTION, tool_url: str = ""
) -> list[str]:
    argv = [sys.executable, str(AGENT), framework, "--base-url", base_url, "--db", str(db)]
    argv += ["--tool-url", tool_url] if tool_url else []
    return argv + ["--question", question] + (["--stream"] if stream else [])


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_BLACKBOX", "OTEL_"))}
    return {**env, "PYTHONPATH": str(EXAMPLES), **extra}


def _cassette_of_the_run(db: Path, path: Path) -> None:
    (run,) = json.loads(run_cli("runs", "--json", db=db, check=True).stdout)
    run_cli("cassette", "--run", run["run_id"][:6], "-o", str(path), db=db, check=True)


def _base_url(server: FakeLLMServer, framework: str) -> str:
    if framework.endswith("google-genai"):
        return server.gemini_base_url
    return server.anthropic_base_url if framework.endswith("anthropic") else server.openai_base_url


def _replay(cassette: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "otel_blackbox.cli", "replay", str(cassette), "--", *argv]
    return subprocess.run(command, capture_output=True, text=True, env=_env(), timeout=120)


@pytest.mark.parametrize(("framework", "stream"), CASES, ids=[f"{f}{'-sse' if s else ''}" for f, s in CASES])
def test_a_processor_run_replays_exactly_offline(tmp_path: Path, framework: str, stream: bool) -> None:
    db = tmp_path / "blackbox.db"
    with FakeLLMServer() as server:
        base_url = _base_url(server, framework)
        recorded = subprocess.run(
            _agent(framework, base_url, db, stream), capture_output=True, text=True, env=_env(), timeout=120
        )
        assert recorded.returncode == 0, recorded.stderr
        calls_while_recording = len(server.requests)
    answer = recorded.stdout.strip().splitlines()[-1]
    assert answer.startswith("Final answer:") and "Lisbon" in answer
    assert calls_while_recording == 2

    # runs: one run, every trace of it (LangChain and openai-v2 have one per model call)
    listed = run_cli("runs", "--json", db=db, check=True)
    (run,) = json.loads(listed.stdout)
    assert run["status"] == "ok" and run["spans"] >= 2
    if framework in ("langchain", "openai-v2", "openinference-openai"):
        assert run["traces"] >= 2  # no root span: each call is a trace of its own

    # show -v: the first model call's messages and the calls it asked for.
    first = json.loads(run_cli("list", "--json", db=db, check=True).stdout)[-1]["trace_id"]
    shown = run_cli("show", first, "-v", db=db, check=True).stdout
    assert QUESTION in shown and '→ get_weather({"city": "Lisbon"})' in shown

    cassette_path = tmp_path / "incident.json"
    _cassette_of_the_run(db, cassette_path)
    cassette = load_cassette(cassette_path)
    assert verify_cassette(cassette).passed
    assert cassette.api == HINT_OF[framework, stream]
    types = [s.type for s in cassette.steps]
    assert types == [*ROUND, "model_input", "model_output", "metadata"]
    assert tool_call_sequence(cassette) == ["get_weather", "get_forecast"]
    assert terminal_outcome(cassette).final_answer == answer
    inputs = [s.payload for s in cassette.steps_of("model_input")]
    assert all(p[OBSERVED] == OBSERVED_BY[framework] for p in inputs)
    assert inputs[0]["messages"] == [{"role": "user", "content": QUESTION}]

    # The provider is gone: every answer comes from the cassette, compared in the exact mode.
    replayed = _replay(cassette_path, _agent(framework, base_url, tmp_path / "replay.db", stream))
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.strip().splitlines()[-1] == answer
    assert len(server.requests) == calls_while_recording

    changed = _replay(cassette_path, _agent(framework, base_url, tmp_path / "changed.db", stream, CHANGED))
    assert changed.returncode == 1
    # The program fails on the 400 it was answered (its own traceback); the replay says why, last.
    last = changed.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "otel-blackbox: error: [blackbox] step 0 (model_input) differs at $.messages[0].content"
    )
    assert json.dumps(QUESTION) in last and json.dumps(CHANGED) in last


CAPTURED = [("openai", True), ("agents", False), ("langchain", False)]


@pytest.mark.parametrize(
    ("framework", "stream"), CAPTURED, ids=[f"{f}{'-sse' if s else ''}" for f, s in CAPTURED]
)
def test_with_http_capture_a_run_whose_tools_call_an_api_replays_with_nothing_listening(
    tmp_path: Path, framework: str, stream: bool
) -> None:
    db, cassette_path = tmp_path / "blackbox.db", tmp_path / "incident.json"
    with FakeLLMServer() as server, WeatherAPI() as api:
        argv = _agent(framework, _base_url(server, framework), db, stream, tool_url=api.url)
        recorded = subprocess.run(
            argv, capture_output=True, text=True, env=_env(OTEL_BLACKBOX_CAPTURE_HTTP="true"), timeout=120
        )
        assert recorded.returncode == 0, recorded.stderr
        # The Agents SDK runs a turn's tools concurrently: in either order.
        assert sorted((m, p.split("?")[0]) for m, p, _ in api.requests) == [
            ("GET", "/weather"),
            ("POST", "/forecast"),
        ]
    answer = recorded.stdout.strip().splitlines()[-1]
    assert "Lisbon" in answer and "daily_high_c" in answer

    _cassette_of_the_run(db, cassette_path)
    cassette = load_cassette(cassette_path)
    assert verify_cassette(cassette).passed
    # The model steps are the wire's (nothing left unobserved); the tool's HTTP calls are exchanges.
    inputs = [s.payload for s in cassette.steps_of("model_input")]
    assert len(inputs) == 2 and all(OBSERVED not in p for p in inputs)
    assert tool_call_sequence(cassette) == ["get_weather", "get_forecast"]
    exchanges = [
        s.payload for s in cassette.steps_of("metadata") if s.payload.get("event") == "http_exchange"
    ]
    exchanges.sort(key=lambda e: str(e["request"]["method"]))
    assert [(e["request"]["method"], e["request"]["url"]) for e in exchanges] == [
        ("GET", f"{api.url}/weather?city=Lisbon"),
        ("POST", f"{api.url}/forecast"),
    ]
    assert json.loads(exchanges[1]["request"]["body"]) == {"city": "Lisbon", "days": 2}
    assert json.loads(exchanges[1]["response"]["body"])["daily_high_c"]
    assert terminal_outcome(cassette).final_answer == answer

    # Both servers are stopped: the same program, unmodified, replays from the cassette alone.
    replayed = _replay(cassette_path, [str(tmp_path / "replay.db") if a == str(db) else a for a in argv])
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.strip().splitlines()[-1] == answer


def test_a_pydantic_ai_tool_that_returns_a_dict_replays_exactly_from_its_spans(tmp_path: Path) -> None:
    """pydantic-ai's ordinary case: the span records the tool's dict as JSON with spaces, the wire
    sends it compact. The results compare as JSON values, and the span's own result is the step's."""
    db, cassette_path = tmp_path / "blackbox.db", tmp_path / "incident.json"
    with FakeLLMServer() as server:
        argv = [*_agent("pydantic-ai", server.openai_base_url, db, False), "--dict-tools"]
        recorded = subprocess.run(argv, capture_output=True, text=True, env=_env(), timeout=120)
        assert recorded.returncode == 0, recorded.stderr
    answer = recorded.stdout.strip().splitlines()[-1]
    assert answer.startswith("Final answer:") and '"daily_high_c":[14,17]' in answer

    _cassette_of_the_run(db, cassette_path)
    cassette = load_cassette(cassette_path)
    assert verify_cassette(cassette).passed
    results = [s.payload["result"] for s in cassette.steps_of("tool_result")]
    assert [json.loads(r) for r in results] == [
        {"city": "Lisbon", "temperature_c": 11, "conditions": "sunny"},
        {"city": "Lisbon", "days": 2, "daily_high_c": [14, 17]},
    ]
    second = list(cassette.steps_of("model_input"))[1].payload
    sent = [p["result"] for m in second["messages"] if isinstance(m["content"], list) for p in m["content"]
            if p.get("type") == "tool_result"]  # fmt: skip
    assert sent and all(", " in r for r in sent)  # the span's text is not the wire's compact JSON

    replay_argv = [str(tmp_path / "replay.db") if a == str(db) else a for a in argv]
    replayed = _replay(cassette_path, replay_argv)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.strip().splitlines()[-1] == answer


@pytest.mark.parametrize("framework", ["langchain", "openinference-openai"])
def test_a_setting_with_no_neutral_name_is_compared_in_a_replay_from_spans(
    tmp_path: Path, framework: str
) -> None:
    """The spans' recorded request settings are read with the wire's own table: a seed the program
    sends again replays, another seed diverges naming both."""
    db, cassette_path = tmp_path / "blackbox.db", tmp_path / "incident.json"
    with FakeLLMServer() as server:
        base_url = server.openai_base_url
        argv = [*_agent(framework, base_url, db, False), "--seed", "7"]
        recorded = subprocess.run(argv, capture_output=True, text=True, env=_env(), timeout=120)
        assert recorded.returncode == 0, recorded.stderr
        assert all(body.get("seed") == 7 for _, body in server.requests)
    _cassette_of_the_run(db, cassette_path)
    inputs = [s.payload for s in load_cassette(cassette_path).steps_of("model_input")]
    assert all(p["params"]["seed"] == 7 for p in inputs)

    again = [str(tmp_path / "replay.db") if a == str(db) else a for a in argv]
    replayed = _replay(cassette_path, again)
    assert replayed.returncode == 0, replayed.stderr
    changed = _replay(cassette_path, [*again[:-1], "8"])
    assert changed.returncode == 1
    last = changed.stderr.strip().splitlines()[-1]
    assert "step 0 (model_input) differs at $.params.seed: recorded 7, got 8" in last, last
