"""Fork a recorded run at a tool result: scripted and live continuations, through the API and the CLI."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import gemini_agent  # tests/ is on sys.path
import openai
import pytest
import weather_agent  # examples/ is on sys.path (conftest.py)
from fake_llm import FakeLLMServer
from helpers import EXAMPLES, PROGRAMS, run_cli
from opentelemetry.sdk.trace import TracerProvider

import otel_blackbox
from otel_blackbox._cassette.diff.report import diff_cassettes
from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.verify import verify_cassette
from otel_blackbox._playback.fork import ForkPlan, ForkSession

QUESTION = "What's the weather in Lisbon, and the 2 day forecast? I need both."
REPLACEMENT = {"available": False}


def _run(base_url: str) -> str:
    tracer = TracerProvider(shutdown_on_exit=False).get_tracer("t")
    with openai.OpenAI(base_url=base_url, api_key="sk-test-0123456789", max_retries=0) as client:
        answer, _ = weather_agent.run_agent(client, tracer, QUESTION)
    return answer


def _record(tmp_path: Path, server: FakeLLMServer) -> Path:
    parent = tmp_path / "run.json"
    with otel_blackbox.session(mode="record", cassette=parent):
        _run(server.openai_base_url)
    steps = load_cassette(parent).steps
    assert [s.type for s in steps[:4]] == ["model_input", "model_output", "tool_call", "tool_result"]
    return parent


def test_scripted_fork_copies_the_prefix_and_the_model_sees_the_replacement(tmp_path: Path) -> None:
    with FakeLLMServer() as server:
        parent_path = _record(tmp_path, server)
        base_url = server.openai_base_url
    child_path = tmp_path / "child.json"
    reply = {"type": "final_answer", "text": "No weather data for Lisbon right now."}
    fork = ForkSession(
        parent_path, ForkPlan(at=3, result=REPLACEMENT, output=child_path, replies=[reply])
    ).start()
    try:
        answer = _run(base_url)  # the server is stopped: everything comes from the parent or the script
    finally:
        fork.finish()
    assert answer == reply["text"]
    parent, child = load_cassette(parent_path), load_cassette(child_path)
    assert verify_cassette(child).passed
    assert (child.parent_id, child.forked_from_step_id) == (parent.id, parent.steps[3].id)
    assert [s.hash for s in child.steps[:3]] == [s.hash for s in parent.steps[:3]]
    assert child.steps[3].timestamp == parent.steps[3].timestamp
    assert child.steps[3].payload == {
        "toolCallId": "call-0",
        "toolName": "get_weather",
        "result": REPLACEMENT,
    }
    # The next request carried the replacement, not what the tool returned.
    next_input = next(s for s in child.steps[4:] if s.type == "model_input")
    parts = [
        p for m in next_input.payload["messages"] if isinstance(m["content"], list) for p in m["content"]
    ]
    sent = {p["toolCallId"]: p["result"] for p in parts if p["type"] == "tool_result"}
    assert sent["call-0"] == '{"available":false}' and "Lisbon" in sent["call-1"]
    report = diff_cassettes(parent, child)
    assert report.index == 3
    assert report.outcome.kind == "answer_changed"


def test_live_fork_through_the_cli_continues_against_the_upstream(tmp_path: Path) -> None:
    agent = [sys.executable, str(EXAMPLES / "weather_agent.py"), "--db", str(tmp_path / "bb.db")]
    with FakeLLMServer() as server:
        parent = tmp_path / "run.json"
        recorded = run_cli("record", "-o", str(parent), "--", *agent, "--base-url", server.openai_base_url)
        assert recorded.returncode == 0, recorded.stderr
        child = tmp_path / "child.json"
        forked = run_cli(
            "fork", str(parent), "--at", "3", "--set", json.dumps(REPLACEMENT), "--live", "-o", str(child),
            "--", *agent, "--base-url", server.openai_base_url,
        )  # fmt: skip
        assert forked.returncode == 0, forked.stderr
    # The fake model quotes the tool results it was sent: the replacement reached it.
    assert '{"available":false}' in forked.stdout.splitlines()[-1]
    assert verify_cassette(load_cassette(child)).passed
    diff = run_cli("diff", str(parent), str(child))
    assert diff.returncode == 1 and "first divergence: index 3 (tool_result)" in diff.stdout


def test_scripted_fork_through_the_cli_and_bad_fork_points(tmp_path: Path) -> None:
    agent = [sys.executable, str(EXAMPLES / "weather_agent.py"), "--db", str(tmp_path / "bb.db")]
    with FakeLLMServer() as server:
        base_url = server.openai_base_url
        parent = tmp_path / "run.json"
        assert run_cli("record", "-o", str(parent), "--", *agent, "--base-url", base_url).returncode == 0
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps([{"type": "final_answer", "text": "It is unavailable."}]))
    child = tmp_path / "child.json"
    args = ["fork", str(parent), "--at", "3", "--set", '{"available": false}', "--script", str(replies)]
    forked = run_cli(*args, "-o", str(child), "--", *agent, "--base-url", base_url)
    assert forked.returncode == 0, forked.stderr
    assert forked.stdout.splitlines()[-1] == "It is unavailable."
    bad = run_cli("fork", str(parent), "--at", "1", "--set", "1", "--script", str(replies), "-o", str(child),
                  "--", *agent, "--base-url", base_url)  # fmt: skip
    # Refused before the program runs, as every change that does not fit its step is.
    assert bad.returncode == 2 and "a fork starts at a tool_result step, this is model_output" in bad.stderr
    neither = run_cli("fork", str(parent), "--at", "3", "--set", "1", "-o", str(child), "--", *agent)
    assert neither.returncode == 2 and "exactly one of --live and --script" in neither.stderr


# --- Gemini: the same fork, at a functionResponse -------------------------------------------------

GEMINI_AGENT = [sys.executable, str(PROGRAMS / "gemini_agent.py")]


def _gemini_results(model_input: dict[str, Any]) -> dict[str, Any]:
    parts = [p for m in model_input["messages"] if isinstance(m["content"], list) for p in m["content"]]
    return {p["toolCallId"]: p["result"] for p in parts if p["type"] == "tool_result"}


@pytest.mark.parametrize(
    ("stream", "drop_ids"), [(False, False), (True, True)], ids=["json-ids-sent-back", "sse-ids-dropped"]
)
def test_scripted_fork_at_a_gemini_tool_result(tmp_path: Path, stream: bool, drop_ids: bool) -> None:
    parent_path = tmp_path / "run.json"
    with FakeLLMServer() as server:
        base_url = server.gemini_base_url
        with otel_blackbox.session(mode="record", cassette=parent_path):
            gemini_agent.run(base_url, stream=stream, drop_ids=drop_ids)
    parent = load_cassette(parent_path)
    assert [s.type for s in parent.steps[:6]] == [
        "model_input",
        "model_output",
        *["tool_call", "tool_result"] * 2,
    ]
    child_path = tmp_path / "child.json"
    reply = {"type": "final_answer", "text": "Order 42 is not available."}
    plan = ForkPlan(at=3, result=REPLACEMENT, output=child_path, replies=[reply])
    fork = ForkSession(parent_path, plan).start()
    try:  # the server is stopped: everything comes from the parent or the script
        answer = gemini_agent.run(base_url, stream=stream, drop_ids=drop_ids)
    finally:
        fork.finish()
    assert answer == reply["text"]
    child = load_cassette(child_path)
    assert verify_cassette(child).passed
    assert [s.hash for s in child.steps[:3]] == [s.hash for s in parent.steps[:3]]
    assert child.steps[3].payload == {
        "toolCallId": "call-0",
        "toolName": "lookup_order",
        "result": REPLACEMENT,
    }
    next_input = next(s for s in child.steps[4:] if s.type == "model_input")
    assert _gemini_results(next_input.payload) == {"call-0": REPLACEMENT, "call-1": "2 days"}
    report = diff_cassettes(parent, child)
    assert (report.index, report.outcome.kind) == (3, "answer_changed")


@pytest.mark.parametrize("options", [[], ["--stream", "--drop-ids"]], ids=["json", "sse-ids-dropped"])
def test_gemini_fork_through_the_cli_scripted_and_live(tmp_path: Path, options: list[str]) -> None:
    with FakeLLMServer() as server:
        agent = [*GEMINI_AGENT, "--base-url", server.gemini_base_url, *options]
        parent = tmp_path / "run.json"
        recorded = run_cli("record", "-o", str(parent), "--", *agent)
        assert recorded.returncode == 0, recorded.stderr
        replies = tmp_path / "replies.json"
        replies.write_text(json.dumps([{"type": "final_answer", "text": "It is unavailable."}]))
        scripted, live = tmp_path / "scripted.json", tmp_path / "live.json"
        fork = ["fork", str(parent), "--at", "3", "--set", json.dumps(REPLACEMENT)]
        by_script = run_cli(*fork, "--script", str(replies), "-o", str(scripted), "--", *agent)
        sent = len(server.requests)
        by_model = run_cli(*fork, "--live", "-o", str(live), "--", *agent)
    assert by_script.returncode == 0, by_script.stderr
    assert by_script.stdout.splitlines()[-1] == "It is unavailable."
    assert sent == 2  # the scripted fork called no model
    assert by_model.returncode == 0, by_model.stderr
    # The fake model quotes the responses it was sent: the replacement reached it, the other did not change.
    assert by_model.stdout.splitlines()[-1] == 'Final answer: {"available":false} | 2 days'
    for child in (scripted, live):
        assert verify_cassette(load_cassette(child)).passed
        next_input = next(s for s in load_cassette(child).steps[4:] if s.type == "model_input")
        assert _gemini_results(next_input.payload)["call-0"] == REPLACEMENT
        diff = run_cli("diff", str(parent), str(child))
        assert diff.returncode == 1 and "first divergence: index 3 (tool_result)" in diff.stdout
