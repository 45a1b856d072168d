"""The built-in rerun's edges: an unrecorded call, a stub, --tool-match name, the turn limit, a
provider that fails, and the bad inputs a user gives it (each one line, the right exit code).

The incidents are written by hand (a chat run whose tool call asked for order 7), so the fake
provider's model, which asks for order 42, makes a call the incident did not record.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_llm import FAIL_MODEL, SLOW_MODEL, FakeLLMServer
from helpers import LoopbackAPI, run_cli

from otel_blackbox._cassette.io import load_cassette, save_cassette
from otel_blackbox._cassette.model import Cassette, terminal_outcome
from otel_blackbox._cassette.trusted import resealed
from otel_blackbox._cassette.verify import verify_cassette
from otel_blackbox._playback.agent.incident import read_incident
from otel_blackbox._playback.agent.run import BuiltInRerun, rerun_built_in
from otel_blackbox._playback.agent.tools import ToolBook

QUESTION = "What is the status of order 42?"
SCHEMA = {"type": "object", "properties": {"order_id": {"type": "integer"}}, "required": ["order_id"]}
TOOLS = [{"name": "lookup_order", "description": "Look an order up.", "inputSchema": SCHEMA}]
KEY = "sk-builtin-refusal-0123456789"


def incident(order_id: int = 7, *, error: str | None = None, api: dict[str, Any] | None = None) -> Cassette:
    """A chat incident: the model looked order ``order_id`` up, then answered."""
    cassette = Cassette(id="incident-1", created_at=1, api=api or {"name": "openai-chat", "stream": False})
    call = {"toolCallId": "call-0", "toolName": "lookup_order", "toolInput": {"order_id": order_id}}
    outcome = {"error": error} if error else {"result": json.dumps({"order_id": order_id, "status": "lost"})}
    question = {"role": "user", "content": QUESTION}
    cassette.append("model_input", {"messages": [question], "tools": TOOLS, "model": "gpt-4o-mini"}, 2)
    cassette.append("model_output", {"type": "tool_calls", "calls": [call]}, 3)
    cassette.append("tool_call", call, 4)
    cassette.append("tool_result", {"toolCallId": "call-0", "toolName": "lookup_order", **outcome}, 5)
    result = {"type": "tool_result", "toolCallId": "call-0", "toolName": "lookup_order", **outcome}
    turn = [
        question,
        {"role": "assistant", "content": [{"type": "tool_use", **call}]},
        {"role": "user", "content": [result]},
    ]
    cassette.append("model_input", {"messages": turn, "tools": TOOLS, "model": "gpt-4o-mini"}, 6)
    cassette.append("model_output", {"type": "final_answer", "text": "The order is lost."}, 7)
    cassette.append(
        "metadata", {"event": "run_completed", "status": "success", "result": "The order is lost."}, 8
    )
    return cassette


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def saved(tmp_path: Path, cassette: Cassette, name: str = "incident.json") -> Path:
    path = tmp_path / name
    save_cassette(cassette, path)
    return path


def rerun(llm: FakeLLMServer, path: Path, child: Path, **options: Any) -> int:
    plan = BuiltInRerun(output=child, base_url=llm.openai_base_url, **options)
    return rerun_built_in(path, plan)


def test_a_call_the_incident_did_not_record_stops_the_run_naming_it_and_the_closest(
    llm: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    child = tmp_path / "child.json"
    assert rerun(llm, saved(tmp_path, incident()), child) == 1
    err = capsys.readouterr().err
    assert (
        '[blackbox] the model called lookup_order({"order_id":42}), which the incident did not record; '
        'closest recorded: step 3, lookup_order({"order_id":7}) '
        "(a stub answers it, e.g. `--stub 'lookup_order={\"ok\": true}'`)"
    ) in err
    assert "failed (unrecorded_tool_call) after 1 model call, 0 tool results from the incident" in err
    written = load_cassette(child)
    assert verify_cassette(written).passed
    end = written.steps[-1].payload
    assert (end["event"], end["reason"], end["toolName"], end["toolInput"]) == (
        "run_failed", "unrecorded_tool_call", "lookup_order", {"order_id": 42}
    )  # fmt: skip
    assert [s.type for s in written.steps] == ["model_input", "model_output", "tool_call", "metadata"]


def test_a_call_the_killed_incident_made_without_a_result_is_named_as_such(
    llm: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run killed during its tool call recorded the call and no result: the message says so, not
    that the call was never recorded."""
    whole = incident(42)
    killed = Cassette(id="killed", created_at=1, api=whole.api)
    for step in whole.steps[:3]:  # model_input, model_output, tool_call: killed before the tool returned
        killed.append(step.type, step.payload, step.timestamp)
    assert rerun(llm, saved(tmp_path, killed), tmp_path / "child.json") == 1
    err = capsys.readouterr().err
    assert (
        '[blackbox] the model called lookup_order({"order_id":42}); the incident recorded that call '
        "(step 2) but no result for it: the run ended before the tool returned "
        "(a stub answers it, e.g. `--stub 'lookup_order={\"ok\": true}'`)"
    ) in err
    assert "did not record" not in err


def test_a_stub_answers_an_unrecorded_call_and_the_child_marks_it(llm: FakeLLMServer, tmp_path: Path) -> None:
    child = tmp_path / "child.json"
    stub = {"order_id": 42, "status": "shipped"}
    assert rerun(llm, saved(tmp_path, incident()), child, stubs={"lookup_order": stub}) == 0
    written = load_cassette(child)
    (result,) = [s.payload for s in written.steps if s.type == "tool_result"]
    assert result == {"toolCallId": "call-0", "toolName": "lookup_order", "result": stub, "stub": True}
    assert terminal_outcome(written).status == "success"
    assert "shipped" in str(terminal_outcome(written).final_answer)  # the model read the stub


def test_tool_match_name_answers_a_call_whose_arguments_changed(llm: FakeLLMServer, tmp_path: Path) -> None:
    child = tmp_path / "child.json"
    assert rerun(llm, saved(tmp_path, incident()), child, tool_match="name") == 0
    (result,) = [s.payload for s in load_cassette(child).steps if s.type == "tool_result"]
    assert result["result"] == json.dumps({"order_id": 7, "status": "lost"})  # the recorded one, once
    assert "stub" not in result


def test_the_turn_limit_ends_the_run_failed(llm: FakeLLMServer, tmp_path: Path) -> None:
    child = tmp_path / "child.json"
    assert rerun(llm, saved(tmp_path, incident(42)), child, max_turns=1) == 1
    end = load_cassette(child).steps[-1].payload
    assert (end["reason"], end["maxTurns"]) == ("max_turns", 1)


def test_a_provider_error_is_recorded_as_the_childs_failure(llm: FakeLLMServer, tmp_path: Path) -> None:
    child = tmp_path / "child.json"
    before = len(llm.requests)
    assert rerun(llm, saved(tmp_path, incident(42)), child, model=FAIL_MODEL) == 1
    assert len(llm.requests) - before == 3  # the SDK's own retries: the first call and two more
    written = load_cassette(child)
    end = written.steps[-1].payload
    assert end["reason"] == "model_error" and "InternalServerError" in end["message"]
    assert [s.type for s in written.steps] == ["metadata"]


def test_a_4xx_is_not_retried_and_the_child_records_it(tmp_path: Path) -> None:
    refusing = LoopbackAPI(lambda method, path, body: (400, {"error": {"message": "bad tools", "type": "x"}}))
    with refusing:
        plan = BuiltInRerun(output=tmp_path / "child.json", base_url=f"{refusing.url}/v1")
        assert rerun_built_in(saved(tmp_path, incident(42)), plan) == 1
    assert len(refusing.received) == 1  # a 400 is the SDK's final answer
    end = load_cassette(tmp_path / "child.json").steps[-1].payload
    assert (
        end["reason"] == "model_error"
        and "BadRequestError" in end["message"]
        and "bad tools" in end["message"]
    )


def test_a_later_user_turn_is_appended_once_the_model_answered(llm: FakeLLMServer, tmp_path: Path) -> None:
    cassette = incident(42)
    again = {"role": "user", "content": "And order 43?"}
    last = cassette.steps[4].payload
    answer = {"role": "assistant", "content": "The order is lost."}
    cassette.steps.pop()  # the end, re-added after the second turn
    cassette.append("model_input", {**last, "messages": [*last["messages"], answer, again]}, 9)
    cassette.append("model_output", {"type": "final_answer", "text": "Also lost."}, 10)
    cassette.append("metadata", {"event": "run_completed", "status": "success", "result": "Also lost."}, 11)
    assert read_incident(cassette, "x").user_turns == [[again]]

    child = tmp_path / "child.json"
    stub = {"order_id": 43, "status": "shipped"}  # the second turn's call was never recorded
    assert rerun(llm, saved(tmp_path, cassette), child, stubs={"lookup_order": stub}) == 0
    written = load_cassette(child)
    inputs = [s.payload for s in written.steps if s.type == "model_input"]
    assert len(inputs) == 4  # question -> call, result -> answer, again -> call, result -> answer
    assert inputs[2]["messages"][-1] == again
    results = [s.payload for s in written.steps if s.type == "tool_result"]
    assert [r.get("stub", False) for r in results] == [False, True]
    assert "43" in str(terminal_outcome(written).final_answer)


def test_each_recorded_result_answers_once_in_order() -> None:
    cassette = incident(42)
    book = ToolBook(read_incident(cassette, "x").results, match="arguments")
    first = book.answer("lookup_order", {"order_id": 42})
    assert first is not None and first.step == 3
    assert book.answer("lookup_order", {"order_id": 42}) is None
    assert "every recorded result was already used" in book.miss("lookup_order", {"order_id": 42})


# --- bad input: one line, exit 2, nothing written -----------------------------------------------------


def _one_line(result: subprocess.CompletedProcess[str], code: int, text: str) -> None:
    assert result.returncode == code, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert text in lines[0], lines[0]


def test_bad_input_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    path = saved(tmp_path, incident())
    child = tmp_path / "child.json"
    _one_line(
        run_cli("rerun", str(path), "--stub", "lookup_order", "-o", str(child)), 2, "expected NAME=JSON"
    )
    _one_line(run_cli("rerun", str(path), "--stub", "lookup_order={", "-o", str(child)), 2, "is not JSON")
    _one_line(run_cli("rerun", str(path), "--provider", "cohere", "-o", str(child)), 2, "--provider")
    _one_line(
        run_cli("rerun", str(path), "--script", str(path), "-o", str(child)),
        2,
        "--script is for a program rerun",
    )
    _one_line(run_cli("rerun", str(path), "--stub", "a=1", "-o", str(child), "--", "true"), 2,
              "--stub is for the built-in agent")  # fmt: skip
    empty = Cassette(id="empty", created_at=1)
    empty.append("metadata", {"event": "run_completed", "status": "success", "result": ""}, 2)
    _one_line(run_cli("rerun", str(saved(tmp_path, empty, "empty.json")), "-o", str(child)), 2,
              "no model_input step")  # fmt: skip
    unknown = incident(api={"name": "somewhere"})
    unknown.steps[0].payload["model"] = "mistral-large"
    unknown_path = saved(tmp_path, resealed(unknown), "unknown.json")  # edited here: hashed again
    _one_line(run_cli("rerun", str(unknown_path), "-o", str(child)), 2, "give --provider")
    _one_line(run_cli("replay", str(path)), 2, "no program to run")
    assert not child.exists()


def test_a_missing_sdk_names_the_pip_command(tmp_path: Path) -> None:
    path = saved(tmp_path, incident())
    code = (
        "import sys; sys.modules['openai'] = None\n"  # as if the extra were not installed
        "from otel_blackbox.cli import main\n"
        f"main(['rerun', {str(path)!r}, '-o', {str(tmp_path / 'child.json')!r}])"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_BLACKBOX")}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    _one_line(result, 2, "pip install 'otel-blackbox[agent]'")
    assert not (tmp_path / "child.json").exists()


def test_the_provider_choices_are_the_agents_apis() -> None:
    """The CLI lists the APIs without importing the agent (a command's --help stays light): the same list."""
    from otel_blackbox._cli.app import cli
    from otel_blackbox._wire.apis import API_NAMES

    rerun = cli.commands["rerun"]
    (option,) = [p for p in rerun.params if p.name == "provider"]
    assert tuple(getattr(option.type, "choices", ())) == API_NAMES


def test_ctrl_c_writes_the_child_so_far_and_exits_130(llm: FakeLLMServer, tmp_path: Path) -> None:
    path, child = saved(tmp_path, incident(42)), tmp_path / "child.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_BLACKBOX")}
    argv = [sys.executable, "-m", "otel_blackbox.cli", "rerun", str(path), "--model", SLOW_MODEL]
    argv += ["--base-url", llm.openai_base_url, "-o", str(child)]
    with subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True) as running:
        deadline = time.monotonic() + 30
        while not any(body.get("model") == SLOW_MODEL for _, body in llm.requests):  # the call is in flight
            assert time.monotonic() < deadline and running.poll() is None
            time.sleep(0.05)
        running.send_signal(signal.SIGINT)
        _, err = running.communicate(timeout=30)
    assert running.returncode == 130, err
    assert "Traceback" not in err and f"[blackbox] interrupted: {child} holds the rerun so far" in err
    end = load_cassette(child).steps[-1].payload
    assert (end["event"], end["reason"]) == ("run_failed", "interrupted")
