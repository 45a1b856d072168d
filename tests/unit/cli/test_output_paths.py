"""Where a command writes is checked before the work, and paid-for work is never thrown away.

Every command that writes a file refuses a path it cannot write (a missing folder, a folder, the
database or any SQLite file) before it calls a model, starts a program or reads its input: one line
naming the user's path, exit 2, and the fake provider hears nothing, the program never runs. When the
write fails after the work anyway (here the folder is removed while the run goes on), the result is
kept under a name the message gives, and `record` still exits with the program's code.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_llm import FakeLLMServer
from helpers import LoopbackAPI, Recorder, run_cli, vector_path

from otel_blackbox._cassette.io import load_cassette, save_cassette
from otel_blackbox._cassette.model import Cassette, terminal_outcome
from otel_blackbox._cassette.verify import verify_cassette

KEY = "sk-output-paths-0123456789"
SCHEMA = {"type": "object", "properties": {"order_id": {"type": "integer"}}, "required": ["order_id"]}
TOOLS = [{"name": "lookup_order", "description": "Look an order up.", "inputSchema": SCHEMA}]
QUESTION = "What is the status of order 42?"


def incident(path: Path) -> Path:
    """A chat incident whose one tool call (order 42) is the one the fake provider's model makes."""
    cassette = Cassette(id="incident-out", created_at=1, api={"name": "openai-chat", "stream": False})
    call = {"toolCallId": "call-0", "toolName": "lookup_order", "toolInput": {"order_id": 42}}
    question = {"role": "user", "content": QUESTION}
    cassette.append("model_input", {"messages": [question], "tools": TOOLS, "model": "gpt-4o-mini"}, 2)
    cassette.append("model_output", {"type": "tool_calls", "calls": [call]}, 3)
    cassette.append("tool_call", call, 4)
    result = {"toolCallId": "call-0", "toolName": "lookup_order", "error": "order service down"}
    cassette.append("tool_result", result, 5)
    cassette.append("metadata", {"event": "run_failed", "status": "error", "reason": "ToolError"}, 6)
    save_cassette(cassette, path)
    return path


def recorded(recorder: Recorder) -> Path:
    with recorder.tracer.start_as_current_span("root", attributes={"openinference.span.kind": "AGENT"}):
        pass
    recorder.flush()
    return recorder.db_path


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def assert_refused(result: Any, shown: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and shown in lines[0], result.stderr
    assert ".tmp" not in result.stderr and "Traceback" not in result.stderr


def marker_program(marker: Path, code: int = 0) -> list[str]:
    return [sys.executable, "-c", f"open({str(marker)!r}, 'w').close(); raise SystemExit({code})"]


@pytest.mark.parametrize("bad", ["nodir/child.json", "afolder", "db"])
def test_a_rerun_is_refused_before_the_provider_hears_a_call(
    tmp_path: Path, env: None, recorder: Recorder, bad: str
) -> None:
    (tmp_path / "afolder").mkdir()
    db = recorded(recorder)
    target = str(db) if bad == "db" else str(tmp_path / bad)
    with FakeLLMServer() as llm:
        result = run_cli(
            "rerun", str(incident(tmp_path / "incident.json")), "--base-url", llm.openai_base_url,
            "--stub", "lookup_order={}", "-o", target, db=db,
        )  # fmt: skip
        assert llm.requests == []
    assert_refused(result, target)


def test_record_fork_and_a_program_rerun_refuse_before_the_program_runs(tmp_path: Path, env: None) -> None:
    marker = tmp_path / "ran"
    missing = str(tmp_path / "nodir" / "out.json")
    parent = incident(tmp_path / "incident.json")
    runs = [
        ("record", "-o", missing, "--", *marker_program(marker)),
        ("fork", str(parent), "--at", "3", "--set", "{}", "-o", missing, "--", *marker_program(marker)),
        ("rerun", str(parent), "--model", "gpt-4o-mini", "-o", missing, "--", *marker_program(marker)),
    ]
    for args in runs:
        assert_refused(run_cli(*args), missing)
        assert not marker.exists(), args[0]


def test_the_commands_that_read_the_database_refuse_first(tmp_path: Path, recorder: Recorder) -> None:
    db = recorded(recorder)
    missing = str(tmp_path / "nodir" / "out")
    trace = run_cli("list", "--json", db=db, check=True)
    trace_id = json.loads(trace.stdout)[0]["trace_id"]
    for args in [
        ("cassette", trace_id, "-o", missing),
        ("report", trace_id, "-o", missing),
        ("export", "-o", missing),
        ("cassette", trace_id, "-o", f"{db}-wal"),
        ("export", "-o", str(tmp_path)),
    ]:
        assert_refused(run_cli(*args, db=db), args[-1])
    assert_refused(run_cli("eval", "generate", str(vector_path("success-tool-use")), "-o", str(db)), str(db))
    assert run_cli("list", db=db, check=True).stdout  # the refusals left the database alone


def test_a_record_whose_folder_vanished_keeps_the_cassette_and_the_programs_exit_code(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    program = f"import shutil; shutil.rmtree({str(folder)!r}); raise SystemExit(3)"
    result = run_cli("record", "-o", str(folder / "run.json"), "--", sys.executable, "-c", program)
    assert result.returncode == 3, result.stderr  # the program's, as the README promises
    assert ".tmp" not in result.stderr
    kept = Path(result.stderr.split("is kept in ")[1].split()[0])
    assert str(folder / "run.json") in result.stderr
    try:
        # Kept whole: its chain verifies. (The program made no model call: nothing to replay.)
        checks = {c.name: (c.status, c.detail) for c in verify_cassette(load_cassette(kept)).checks}
        assert checks["hash_chain"][0] == "pass"
        nothing = "no model call in the cassette: there is nothing to replay"
        assert checks["replayability"] == ("fail", nothing)
    finally:
        kept.unlink()


def test_a_built_in_rerun_whose_folder_vanished_keeps_the_child_and_says_its_cost(
    tmp_path: Path, env: None
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    answers = iter(["tool", "final"])

    def provider(method: str, path: str, body: bytes) -> tuple[int, Any]:
        turn = next(answers)
        message: dict[str, Any] = {"role": "assistant", "content": "Order 42 is on its way."}
        if turn == "tool":
            call = {"id": "c1", "type": "function",
                    "function": {"name": "lookup_order", "arguments": '{"order_id": 42}'}}  # fmt: skip
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
        else:
            shutil.rmtree(folder)  # the folder goes while the paid run is still going on
        usage = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
        finish = "tool_calls" if turn == "tool" else "stop"
        choice = {"index": 0, "message": message, "finish_reason": finish}
        return 200, {"id": "x", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
                     "choices": [choice], "usage": usage}  # fmt: skip

    with LoopbackAPI(provider) as api:
        result = run_cli(
            "rerun", str(incident(tmp_path / "incident.json")), "--base-url", f"{api.url}/v1",
            "--stub", "lookup_order={\"status\": \"shipped\"}", "-o", str(folder / "child.json"),
        )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert ".tmp" not in result.stderr
    kept = Path(result.stderr.split("is kept in ")[1].split()[0])
    try:
        summary = next(line for line in result.stderr.splitlines() if "by the built-in agent" in line)
        assert str(kept) in summary and "cost $" in summary, summary
        child = load_cassette(kept)
        assert verify_cassette(child).passed
        assert terminal_outcome(child).status == "success"
    finally:
        kept.unlink()
