"""Codex CLI rollouts in: `import --from codex` of a file or a sessions folder, then list, show,
cassette, verify and rerun.

Every rollout is written here from the shapes described in docs/ingest.md (the current
`{timestamp, type, payload}` lines and the older bare Responses items), never copied from a real one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_llm import FakeLLMServer
from helpers import import_transcript, rerun_imported_run, run_cli, stored_rows, write_jsonl

from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.verify import verify_cassette
from otel_blackbox._spans.transcripts.codex import read_rollout
from otel_blackbox._spans.transcripts.otlp import Keys, otlp_document
from otel_blackbox.errors import ImportInputError

SECRET = "sk-proj-" + "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuv"  # 48 letters, not a key
SESSION = "0199a213-81c0-7800-8aa1-bbab2a035a53"
OLD_SESSION = "d0f1e2c3-4444-4555-8666-777788889999"
MODEL = "gpt-5-codex"
README = "# Shop\nA demo shop."
MISSING = "cat: missing.txt: No such file or directory"
ANSWER = "The README says it is a demo shop; missing.txt does not exist."
OLD_ANSWER = "One file: README.md"
PROMPT = f"Read the README and missing.txt. My key is {SECRET}"


def usage(given: int, cached: int, output: int) -> dict[str, Any]:
    last = {
        "input_tokens": given, "cached_input_tokens": cached, "output_tokens": output,
        "reasoning_output_tokens": 5, "total_tokens": given + output,
    }  # fmt: skip
    info = {"total_token_usage": last, "last_token_usage": last, "model_context_window": 272000}
    return {"type": "token_count", "info": info}


def line(second: int, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": f"2025-10-01T09:00:{second:02d}.000Z", "type": kind, "payload": payload}


def message(role: str, text: str) -> dict[str, Any]:
    part = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}


def call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function_call", "name": name, "arguments": json.dumps(arguments), "call_id": call_id}


def output(call_id: str, text: str, exit_code: int) -> dict[str, Any]:
    result = {"output": text, "metadata": {"exit_code": exit_code, "duration_seconds": 0.1}}
    return {"type": "function_call_output", "call_id": call_id, "output": json.dumps(result)}


def item(second: int, payload: dict[str, Any]) -> dict[str, Any]:
    return line(second, "response_item", payload)


def rollout() -> list[Any]:
    """A session in the current shape: instructions and context, a prompt with a key in it,
    reasoning, a call that works and one that fails (exit code 1), token counts, the answer, events
    that repeat the items, an unknown line type."""
    meta = {
        "id": SESSION, "timestamp": "2025-10-01T09:00:00.000Z", "cwd": "/home/me/shop",
        "originator": "codex_cli_rs", "cli_version": "0.46.0", "instructions": None,
        "git": {"branch": "main", "commit_hash": "abc123"},
    }  # fmt: skip
    context = {
        "cwd": "/home/me/shop", "model": MODEL, "approval_policy": "on-request",
        "sandbox_policy": {"mode": "workspace-write"}, "effort": "medium", "summary": "auto",
    }  # fmt: skip
    reasoning = {"type": "reasoning", "summary": [{"type": "summary_text", "text": "**Reading**"}],
                 "encrypted_content": "gAAAAB"}  # fmt: skip
    return [
        line(0, "session_meta", meta),
        item(0, message("developer", "<permissions instructions>workspace-write</permissions instructions>")),
        item(0, message("user", "<user_instructions>Be brief.</user_instructions>")),
        item(0, message("user", "<environment_context>\n  <cwd>/home/me/shop</cwd>\n</environment_context>")),
        line(1, "turn_context", context),
        line(1, "event_msg", {"type": "task_started", "model_context_window": 272000}),
        item(1, message("user", PROMPT)),
        line(1, "event_msg", {"type": "user_message", "message": PROMPT, "images": []}),
        line(2, "event_msg", {"type": "token_count", "info": None}),
        item(2, reasoning),
        item(2, message("assistant", "Let me look.")),
        item(2, call("call_1", "shell", {"command": ["cat", "README.md"], "workdir": "/home/me/shop"})),
        line(2, "event_msg", usage(1200, 1000, 30)),
        item(3, output("call_1", README, 0)),
        item(4, call("call_2", "shell", {"command": ["cat", "missing.txt"]})),
        line(4, "event_msg", usage(1300, 1200, 20)),
        item(5, output("call_2", MISSING, 1)),
        line(6, "event_msg", {"type": "agent_message", "message": ANSWER}),
        item(6, message("assistant", ANSWER)),
        line(6, "event_msg", usage(1400, 1300, 40)),
        line(7, "event_msg", {"type": "task_complete", "last_agent_message": ANSWER}),
        line(7, "ghost_snapshot", {"commit": "abc"}),  # unknown: skipped, counted
    ]  # fmt: skip


def old_rollout() -> list[Any]:
    """The older shape: the session first, then bare Responses items and state lines."""
    return [
        {"id": OLD_SESSION, "timestamp": "2025-05-01T10:00:00.000Z", "instructions": "Be careful."},
        {"record_type": "state"},
        message("user", "List the files"),
        call("c1", "shell", {"command": ["ls"]}),
        {"type": "function_call_output", "call_id": "c1",
         "output": json.dumps({"output": "README.md\n", "metadata": {"exit_code": 0}})},
        {"record_type": "state"},
        message("assistant", OLD_ANSWER),
    ]  # fmt: skip


TRUNCATED = '{"timestamp": "2025-10-01T09:00:08.000Z", "type": "response_item", "payload": {"ty'


def sessions(tmp_path: Path) -> tuple[Path, Path]:
    """A sessions folder with one rollout of each shape; the folder and the current one."""
    folder = tmp_path / "sessions"
    current = write_jsonl(
        folder / "2025" / "10" / "01" / f"rollout-2025-10-01T09-00-00-{SESSION}.jsonl", rollout(), TRUNCATED
    )
    write_jsonl(
        folder / "2025" / "05" / "01" / f"rollout-2025-05-01T10-00-00-{OLD_SESSION}.jsonl", old_rollout()
    )
    return folder, current


def raw(records: list[Any], tail: str = "") -> bytes:
    return ("".join(json.dumps(r) + "\n" for r in records) + tail).encode()


# --- the reader -------------------------------------------------------------------------------------


def test_the_reader_builds_turns_from_the_items_and_counts_what_it_leaves_out() -> None:
    conversation = read_rollout(raw(rollout(), TRUNCATED), "r.jsonl")
    assert conversation is not None
    assert [(t.role, t.text) for t in conversation.turns] == [
        ("user", PROMPT),
        ("assistant", "Let me look."),
        ("tool", json.dumps({"output": README, "metadata": {"exit_code": 0, "duration_seconds": 0.1}})),
        ("assistant", ""),
        ("tool", json.dumps({"output": MISSING, "metadata": {"exit_code": 1, "duration_seconds": 0.1}})),
        ("assistant", ANSWER),
    ]
    first, second, last = (t for t in conversation.turns if t.role == "assistant")
    assert [c.name for c in first.tool_calls] == ["shell"] and first.model == MODEL
    assert json.loads(first.tool_calls[0].arguments)["command"] == ["cat", "README.md"]
    assert (first.prompt_tokens, first.completion_tokens, first.cache_read_tokens) == (1200, 30, 1000)
    assert (second.prompt_tokens, last.prompt_tokens) == (1300, 1400)
    assert conversation.turns[4].is_error and not conversation.turns[2].is_error
    assert conversation.model == MODEL and conversation.provider == "openai"
    assert conversation.source == "codex"
    assert conversation.system is not None and "Be brief." in conversation.system
    assert "permissions instructions" in conversation.system
    assert conversation.tools[0]["name"] == "shell"
    assert set(conversation.tools[0]["parameters"]["properties"]) == {"command", "workdir"}
    metadata = conversation.metadata
    assert metadata["session_id"] == SESSION and metadata["cli_version"] == "0.46.0"
    assert metadata["git"]["branch"] == "main" and metadata["effort"] == "medium"
    assert metadata["environment_context"] == 1
    assert conversation.skipped == {
        "truncated line": 1, "reasoning": 1, "record ghost_snapshot": 1,
        "event task_started": 1, "event task_complete": 1,
    }  # fmt: skip


def test_the_reader_reads_the_older_bare_shape() -> None:
    conversation = read_rollout(raw(old_rollout()), "old.jsonl")
    assert conversation is not None
    assert [(t.role, t.text) for t in conversation.turns][::3] == [
        ("user", "List the files"),
        ("assistant", OLD_ANSWER),
    ]
    assert conversation.system == "Be careful." and conversation.model is None
    assert conversation.metadata["session_id"] == OLD_SESSION
    assert conversation.skipped == {"record state": 2}


def test_other_shapes_of_output_and_calls() -> None:
    records = [
        message("user", "Patch it"),
        {"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch", "call_id": "p1"},
        {"type": "custom_tool_call_output", "call_id": "p1",
         "output": "Exit code: 2\nWall time: 0.1 seconds\nOutput:\nno"},
        {"type": "local_shell_call", "call_id": "s1", "status": "completed",
         "action": {"type": "exec", "command": ["ls"]}},
        {"type": "function_call_output", "call_id": "s1", "output": "Exit code: 0\nOutput:\nREADME.md"},
        {"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "x"}},
        message("assistant", "Done"),
    ]  # fmt: skip
    conversation = read_rollout(raw(records), "r.jsonl")
    assert conversation is not None
    calls = [c for t in conversation.turns for c in t.tool_calls]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("apply_patch", {"input": "*** Begin Patch"}),
        ("local_shell", {"type": "exec", "command": ["ls"]}),
    ]
    assert [t.is_error for t in conversation.turns if t.role == "tool"] == [True, False]
    assert conversation.skipped == {"web_search_call": 1}


@pytest.mark.parametrize(
    ("content", "line_number"),
    [
        ('{"resourceSpans": []}\n', 1),  # an OTLP line: no record type
        (
            json.dumps(line(0, "session_meta", {"id": "x"}))
            + "\nnot json\n"
            + json.dumps(message("user", "hi")),
            2,
        ),
        ("[1, 2]\n", 1),
        ('{"type": "user", "message": {"role": "user", "content": "hi"}}\n', 1),  # Claude Code
    ],
)
def test_what_is_not_a_rollout_is_refused_naming_the_line(content: str, line_number: int) -> None:
    with pytest.raises(ImportInputError, match=rf"^bad\.jsonl, line {line_number}: "):
        read_rollout(content.encode(), "bad.jsonl")


# --- through the CLI --------------------------------------------------------------------------------


def test_a_sessions_folder_is_a_run_that_lists_and_shows(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    folder, _ = sessions(tmp_path)
    summary = import_transcript(db, "codex", folder)
    # The current one: root, 3 LLM spans, 2 TOOL spans; the older one: root, 2 LLM spans, 1 TOOL span.
    assert summary["spans"] == 10 and summary["traces"] == 2 and summary["duplicates"] == 0
    again = import_transcript(db, "codex", folder)
    assert again == {"spans": 0, "traces": 0, "duplicates": 10, "replaced": 0, "run_id": None}
    stored = stored_rows(db)
    assert len(stored) == 10
    assert SECRET not in "\n".join(str(tuple(r)) for r in stored)
    llm = [r for r in stored if r["oi_span_kind"] == "LLM" and r["model"] == MODEL]
    assert [(r["prompt_tokens"], r["completion_tokens"]) for r in llm] == [(1200, 30), (1300, 20), (1400, 40)]
    tools = [r for r in stored if r["oi_span_kind"] == "TOOL"]
    assert {r["tool_name"] for r in tools} == {"shell"}
    failed = [r for r in tools if r["status"] == "error"]
    assert len(failed) == 1 and MISSING in failed[0]["status_message"]

    listed = json.loads(run_cli("list", "--json", db=db, check=True).stdout)
    assert len(listed) == 2
    current = next(t for t in listed if t["cost_usd"])
    shown = run_cli("show", str(current["trace_id"]), "-v", db=db, check=True).stdout
    assert "AGENT" in shown and "shell" in shown and ANSWER in shown
    assert SECRET not in shown and "Read the README" in shown


def test_a_rollout_makes_a_cassette_that_verifies(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    _, current = sessions(tmp_path)
    summary = import_transcript(db, "codex", current)
    assert summary["spans"] == 6 and summary["traces"] == 1
    cassette_path = tmp_path / "cassette.json"
    run_cli("cassette", "--run", summary["run_id"], "-o", str(cassette_path), db=db, check=True)
    assert "PASS  replayability" in run_cli("verify", str(cassette_path), check=True).stdout
    cassette = load_cassette(cassette_path)
    assert verify_cassette(cassette).passed
    results = [s.payload for s in cassette.steps if s.type == "tool_result"]
    assert any(r.get("toolName") == "shell" and "A demo shop." in str(r.get("result")) for r in results)
    assert any(r.get("toolName") == "shell" and MISSING in str(r.get("error")) for r in results)


def test_a_file_that_is_not_a_rollout_is_one_line_exit_2_and_nothing_stored(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    folder, _ = sessions(tmp_path)
    bad = folder / "spans.jsonl"
    bad.write_text('{"resourceSpans": []}\n')
    done = run_cli("import", "--from", "codex", str(folder), db=db)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert f"{bad}, line 1: not a Codex rollout record" in done.stderr
    assert stored_rows(db) == []
    assert run_cli("import", "--from", "codex", str(tmp_path / "none"), db=db).returncode == 2
    assert run_cli("import", "--from", "codex", "-", db=db).returncode == 2
    assert stored_rows(db) == []


def test_rerun_of_an_imported_rollout_answers_the_tool_from_the_transcript(
    tmp_path: Path, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-transcript-not-a-real-key")
    db = tmp_path / "bb.db"
    weather = '{"city": "Paris", "temperature_c": 18}'
    # One tool: the fake model calls get_weather(city=Paris) from the question, then answers.
    path = write_jsonl(tmp_path / "rollout-weather.jsonl", [
        line(0, "session_meta", {"id": SESSION, "timestamp": "2025-10-01T09:00:00.000Z"}),
        line(0, "turn_context", {"model": MODEL}),
        item(1, message("user", "What's the weather in Paris?")),
        item(2, call("call_w", "get_weather", {"city": "Paris"})),
        line(2, "event_msg", usage(100, 0, 10)),
        item(3, {"type": "function_call_output", "call_id": "call_w", "output": weather}),
        item(4, message("assistant", "It is 18 C in Paris.")),
    ])  # fmt: skip
    run_id = import_transcript(db, "codex", path)["run_id"]
    _, _, results = rerun_imported_run(db, run_id, tmp_path, "openai-responses", fake_llm.openai_base_url)
    assert [(r["toolName"], r.get("result"), r.get("stub")) for r in results] == [
        ("get_weather", weather, None)
    ]


def test_a_rollout_imported_again_after_it_grew_replaces_its_trace(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    records = rollout()[:14]  # up to the first call's output: the session was still running
    path = write_jsonl(tmp_path / f"rollout-2025-10-01T09-00-00-{SESSION}.jsonl", records)
    first = import_transcript(db, "codex", path)
    assert (first["spans"], first["traces"], first["replaced"]) == (3, 1, 0)
    write_jsonl(path, rollout())
    grown = import_transcript(db, "codex", path)
    assert (grown["spans"], grown["traces"], grown["replaced"], grown["duplicates"]) == (6, 1, 1, 0)
    stored = stored_rows(db)
    assert len(stored) == 6 and len({r["trace_id"] for r in stored}) == 1
    assert {r["session_id"] for r in stored} == {SESSION}
    again = import_transcript(db, "codex", path)
    assert (again["spans"], again["duplicates"], again["replaced"]) == (0, 6, 0)


def test_a_compaction_restarts_the_history_and_arguments_are_kept_as_written() -> None:
    written = '{"command":["ls"],  "workdir":"/home/me/shop"}'  # spacing as the model wrote it
    records = [
        line(0, "session_meta", {"id": SESSION, "timestamp": "2025-10-01T09:00:00.000Z"}),
        line(0, "turn_context", {"model": MODEL}),
        item(1, message("user", "List the files")),
        item(2, {"type": "function_call", "name": "shell", "arguments": written, "call_id": "c1"}),
        item(3, output("c1", "README.md", 0)),
        item(4, message("assistant", "One file.")),
        line(5, "compacted", {"message": "Summary: the folder holds README.md."}),
        item(6, message("user", "Read it")),
        item(7, message("assistant", "It is a demo shop.")),
    ]
    conversation = read_rollout(raw(records), "r.jsonl")
    assert conversation is not None
    assert conversation.turns[1].tool_calls[0].arguments == written
    assert [t.role for t in conversation.turns] == [
        "user", "assistant", "tool", "assistant", "compaction", "user", "user", "assistant",
    ]  # fmt: skip
    assert conversation.metadata["compactions"] == 1
    document = otlp_document(conversation, Keys("t", "s"), 0)
    llm = [s for s in document["resourceSpans"][0]["scopeSpans"][0]["spans"] if s["name"].startswith("chat")]
    last = {a["key"]: a["value"].get("stringValue") for a in llm[-1]["attributes"]}
    assert [last.get(f"llm.input_messages.{i}.message.content") for i in range(3)] == [
        "Summary: the folder holds README.md.",
        "Read it",
        None,
    ]
