"""Chat logs in: `import --from chat` of the three shapes, then show, cassette, verify and rerun.

Every file is written here from the providers' published request shapes; the CLI runs as a user
runs it (a subprocess), on a database of the test's own.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from fake_llm import FakeLLMServer
from helpers import import_transcript, rerun_imported_run, run_cli

from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.verify import verify_cassette

SECRET = "sk-proj-" + "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuv"  # 48 letters, not a key
QUESTION = "What's the weather in Paris?"
WEATHER = '{"city": "Paris", "temperature_c": 18}'
ANSWER = "It is 18 C in Paris."
OUTAGE = "forecast service unavailable"
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
PARIS = '{"city": "Paris"}'


def chat_call(call_id: str, name: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": PARIS}}


def openai_chat(question: str = QUESTION) -> dict[str, Any]:
    tools = [
        {"type": "function", "function": {"name": n, "description": n, "parameters": SCHEMA}}
        for n in ("get_weather", "get_forecast")
    ]
    return {
        "model": "gpt-4o-mini",
        "tools": tools,
        "temperature": 0.2,  # an unknown field: ignored
        "messages": [
            {"role": "system", "content": "You are a weather assistant."},
            {"role": "user", "content": question},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [chat_call("call_w", "get_weather"), chat_call("call_f", "get_forecast")],
            },
            {"role": "tool", "tool_call_id": "call_w", "content": WEATHER},
            {"role": "tool", "tool_call_id": "call_f", "content": f"error: {OUTAGE}"},
            {"role": "assistant", "content": ANSWER},
        ],
    }  # fmt: skip


def openai_responses(question: str = QUESTION) -> dict[str, Any]:
    return {
        "model": "gpt-4.1",
        "instructions": "You are a weather assistant.",
        "tools": [{"type": "function", "name": "get_weather", "description": "now", "parameters": SCHEMA}],
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": question}]},
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "call_id": "call_w", "name": "get_weather", "arguments": PARIS},
            {"type": "function_call_output", "call_id": "call_w", "output": WEATHER},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": ANSWER}]},
        ],
    }  # fmt: skip


def anthropic(question: str = QUESTION) -> dict[str, Any]:
    return {
        "model": "claude-haiku-4-5",
        "system": [{"type": "text", "text": "You are a weather assistant."}],
        "max_tokens": 1024,
        "tools": [
            {"name": "get_weather", "description": "now", "input_schema": SCHEMA},
            {"name": "get_forecast", "description": "later", "input_schema": SCHEMA},
        ],
        "messages": [
            {"role": "user", "content": question},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Two tools.", "signature": "c2ln"},
                    {"type": "text", "text": "Let me check."},
                    {"type": "tool_use", "id": "toolu_w", "name": "get_weather", "input": {"city": "Paris"}},
                    {"type": "tool_use", "id": "toolu_f", "name": "get_forecast", "input": {"city": "Paris"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_w", "content": WEATHER},
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_f",
                        "content": [{"type": "text", "text": OUTAGE}],
                        "is_error": True,
                    },
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": ANSWER}]},
        ],
    }  # fmt: skip


SHAPES = {"openai-chat": openai_chat, "openai-responses": openai_responses, "anthropic": anthropic}


def write(path: Path, document: Any) -> Path:
    path.write_text(json.dumps(document))
    return path


def span_count(db: Path) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM span_rows").fetchone()[0])


@pytest.mark.parametrize("shape", list(SHAPES))
def test_each_shape_is_a_run_that_shows_makes_a_cassette_and_verifies(tmp_path: Path, shape: str) -> None:
    db = tmp_path / "bb.db"
    chat = write(tmp_path / f"{shape}.json", SHAPES[shape](f"{QUESTION} My key is {SECRET}"))
    summary = import_transcript(db, "chat", chat)
    tools = 1 if shape == "openai-responses" else 2
    assert summary["spans"] == 1 + 2 + tools and summary["traces"] == 1 and summary["duplicates"] == 0
    run_id = summary["run_id"]
    # Named explicitly, the same shape is read the same way (and nothing new is stored).
    again = import_transcript(db, "chat", chat, "--format", shape)
    assert again == {"spans": 0, "traces": 0, "duplicates": summary["spans"], "replaced": 0, "run_id": None}
    assert span_count(db) == summary["spans"]

    with sqlite3.connect(db) as conn:
        stored = "\n".join(str(row) for row in conn.execute("SELECT * FROM span_rows"))
        (root,) = conn.execute("SELECT attributes FROM span_rows WHERE parent_span_id IS NULL").fetchone()
    assert SECRET not in stored and "sk-proj-" not in stored
    left_out = json.loads(json.loads(root).get("metadata", "{}")).get("left_out")
    assert left_out == {"openai-responses": {"reasoning": 1}, "anthropic": {"thinking": 1}}.get(shape)

    listed = json.loads(run_cli("list", "--json", db=db, check=True).stdout)
    assert len(listed) == 1
    shown = run_cli("show", str(listed[0]["trace_id"]), "-v", db=db, check=True).stdout
    assert "AGENT" in shown and "get_weather" in shown and ANSWER in shown and SECRET not in shown

    cassette_path = tmp_path / "cassette.json"
    run_cli("cassette", "--run", run_id, "-o", str(cassette_path), db=db, check=True)
    assert "PASS  replayability" in run_cli("verify", str(cassette_path), check=True).stdout
    cassette = load_cassette(cassette_path)
    assert verify_cassette(cassette).passed
    types = [s.type for s in cassette.steps]
    rounds = ["tool_call", "tool_result"] * tools
    assert types == ["model_input", "model_output", *rounds, "model_input", "model_output", "metadata"]
    first = cassette.steps[0].payload
    assert first["systemPrompt"] == "You are a weather assistant."
    assert [t["name"] for t in first["tools"]][:1] == ["get_weather"]
    assert first["tools"][0]["inputSchema"] == SCHEMA
    results = [s.payload for s in cassette.steps if s.type == "tool_result"]
    assert results[0] == {"toolCallId": "call-0", "toolName": "get_weather", "result": WEATHER}
    if shape == "anthropic":  # is_error: the TOOL span failed with the result's text
        assert results[1] == {"toolCallId": "call-1", "toolName": "get_forecast", "error": OUTAGE}
    elif shape == "openai-chat":  # no error flag in the shape: the text is the result
        assert results[1]["result"] == f"error: {OUTAGE}"
    assert cassette.steps[-1].payload == {"event": "run_completed", "status": "success", "result": ANSWER}


def test_not_a_chat_log_is_one_line_exit_2_and_nothing_stored(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    bad_files: list[Any] = [{"resourceSpans": []}, [1, 2], {"messages": [{"who": "me"}]}, {"messages": []}]
    for bad in bad_files:
        path = write(tmp_path / "bad.json", bad)
        done = run_cli("import", "--from", "chat", str(path), db=db)
        assert done.returncode == 2, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and str(path) in done.stderr
        assert "expected a chat log" in done.stderr
        assert span_count(db) == 0
    broken = tmp_path / "broken.json"
    broken.write_text('{"messages": [')
    done = run_cli("import", "--from", "chat", str(broken), db=db)
    assert done.returncode == 2 and "not JSON" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert span_count(db) == 0


def test_format_naming_the_wrong_shape_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    chat = write(tmp_path / "chat.json", openai_chat())
    done = run_cli("import", "--from", "chat", str(chat), "--format", "anthropic", db=db)
    assert done.returncode == 2
    assert "not an anthropic chat log (it reads as openai-chat)" in done.stderr
    assert span_count(db) == 0
    assert run_cli("import", "--from", "chat", str(chat), "--format", "gemini", db=db).returncode == 2


def test_from_usage_errors(tmp_path: Path) -> None:
    chat = write(tmp_path / "chat.json", openai_chat())
    db = tmp_path / "bb.db"
    codex = run_cli("import", "--from", "codex", str(chat), db=db)  # a chat log is not a rollout
    assert codex.returncode == 2 and "not a Codex rollout record" in codex.stderr
    assert "expected chat" in run_cli("import", "--from", "slack", str(chat), db=db).stderr
    assert (
        "--format goes with --from chat"
        in run_cli("import", str(chat), "--format", "anthropic", db=db).stderr
    )
    phoenix = run_cli("import", "--from", "chat", "--from-phoenix", "http://127.0.0.1:9", db=db)
    assert phoenix.returncode == 2 and "--from-phoenix" in phoenix.stderr
    assert span_count(db) == 0


def test_rerun_of_an_imported_chat_answers_the_tool_from_the_transcript(
    tmp_path: Path, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-transcript-not-a-real-key")
    db = tmp_path / "bb.db"
    chat = openai_chat()
    chat["tools"] = chat["tools"][:1]  # one tool: the fake model calls get_weather(city=Paris), then answers
    messages = chat["messages"]
    messages[2]["tool_calls"] = messages[2]["tool_calls"][:1]
    del messages[4]
    run_id = import_transcript(db, "chat", write(tmp_path / "chat.json", chat))["run_id"]
    incident, _, results = rerun_imported_run(db, run_id, tmp_path, "openai-chat", fake_llm.openai_base_url)
    assert [(r["toolName"], r.get("result"), r.get("stub")) for r in results] == [
        ("get_weather", WEATHER, None)
    ]
    recorded = next(s.payload for s in load_cassette(incident).steps if s.type == "tool_result")
    assert recorded["result"] == WEATHER  # the child's answer is the transcript's own


def test_a_huge_tool_output_is_bounded_as_recorded_attributes_are(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    chat = openai_chat()
    chat["messages"][3]["content"] = "x" * 3_000_000
    import_transcript(db, "chat", write(tmp_path / "chat.json", chat))
    assert db.stat().st_size < 1_000_000
    trace_id = json.loads(run_cli("list", "--json", db=db, check=True).stdout)[0]["trace_id"]
    shown = run_cli("show", trace_id, "-v", db=db, check=True).stdout
    assert '"blackbox.truncated": true, "original_bytes": 3000000' in shown


def test_json_lines_and_an_array_of_chat_logs_are_a_trace_each(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    logs = [SHAPES[shape](f"{QUESTION} ({shape})") for shape in SHAPES]
    lines = tmp_path / "chats.jsonl"
    lines.write_text("".join(json.dumps(log) + "\n" for log in logs[:2]))
    first = import_transcript(db, "chat", lines)
    assert (first["traces"], first["spans"]) == (2, 5 + 4)
    # A logger appended a line, and was writing another when the file was copied: the new log is
    # stored, the two before are not stored again, and the broken last line is left out.
    lines.write_text(lines.read_text() + json.dumps(logs[2]) + "\n" + '{"messages": [{"role": "us')
    grown = import_transcript(db, "chat", lines)
    assert (grown["traces"], grown["spans"], grown["duplicates"]) == (1, 5, 9)
    roots = json.loads(run_cli("list", "--json", db=db, check=True).stdout)
    assert len(roots) == 3
    # The same logs as a JSON array add nothing: each is keyed by its own content.
    array = write(tmp_path / "chats.json", logs)
    assert import_transcript(db, "chat", array)["duplicates"] == 14


def test_a_bad_line_of_json_lines_names_the_line_and_stores_nothing(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    good = json.dumps(openai_chat())
    for bad_line in ('{"messages": [{"who": "me"}]}', "not json"):
        lines = tmp_path / "chats.jsonl"
        lines.write_text(f"{good}\n{bad_line}\n{good}\n")
        done = run_cli("import", "--from", "chat", str(lines), db=db)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert f"{lines}, line 2: not" in done.stderr
        assert span_count(db) == 0
    lines.write_text(f"{good}\n{json.dumps(anthropic())}\n")
    done = run_cli("import", "--from", "chat", str(lines), "--format", "openai-chat", db=db)
    assert done.returncode == 2 and f"{lines}, line 2: not an openai-chat chat log" in done.stderr
    assert span_count(db) == 0
