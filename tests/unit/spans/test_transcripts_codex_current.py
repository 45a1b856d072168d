"""Codex rollouts as Codex writes them now: a compaction whose `replacement_history` the history
restarts from, failures only the output text (or an event) reports, and the newer item types.

Every rollout is written here from the shapes in openai/codex's source (`codex-rs/protocol`
`CompactedItem`, `ResponseItem`, `PatchApplyEndEvent`, `McpToolCallEndEvent`; `codex-rs/core`
`compact_remote.rs`, `tools/mod.rs`, `tools/handlers/apply_patch.rs` and `unified_exec.rs`), never
copied from a real one.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from helpers import import_transcript, run_cli, stored_rows, write_jsonl

from otel_blackbox._spans.transcripts.codex import read_rollout
from otel_blackbox._spans.transcripts.codex_outputs import failed_call, read_output
from otel_blackbox._spans.transcripts.reading import Counts

SESSION = "019b1c2d-3e4f-7a5b-8c6d-7e8f9a0b1c2d"
MODEL = "gpt-5.1-codex"
PERMISSIONS = (
    "<permissions instructions>\nFilesystem sandboxing: workspace-write.\n</permissions instructions>"
)
AGENTS = "# AGENTS.md instructions for /home/me/shop\n\n<INSTRUCTIONS>\nBe brief.\n</INSTRUCTIONS>"
ENVIRONMENT = (
    "<environment_context>\n  <cwd>/home/me/shop</cwd>\n  <shell>zsh</shell>\n</environment_context>"
)
PROMPT = "Fix the greeting in app.py"
FOLLOW_UP = "Also add a test"
LISTING = "Chunk ID: 4f2a\nWall time: 0.0521 seconds\nProcess exited with code 0\nOriginal token count: 9\n"
LISTING += "Output:\napp.py\nerrors.log\ntest_errors.py\n"  # "error" in file names: still a success
NOT_FOUND = (
    "apply_patch verification failed: Failed to find expected lines in /home/me/shop/app.py:\nprint('hi')"
)
BAD_HUNK = (
    "apply_patch verification failed: invalid hunk at line 3, Expected update hunk to start with a @@ "
    "context marker, got: 'print(1)'"
)
PATCHED = "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nM app.py\n"
ADDED = "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA test_app.py\n"
ANSWER = "Added test_app.py; the greeting is fixed."


def line(second: int, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": f"2026-02-20T10:00:{second:02d}.000Z", "type": kind, "payload": payload}


def item(second: int, payload: dict[str, Any]) -> dict[str, Any]:
    return line(second, "response_item", payload)


def event(second: int, payload: dict[str, Any]) -> dict[str, Any]:
    return line(second, "event_msg", payload)


def message(role: str, text: str) -> dict[str, Any]:
    part = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}


def call(call_id: str, name: str, arguments: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "type": "function_call",
        "name": name,
        "arguments": json.dumps(arguments),
        "call_id": call_id,
        **extra,
    }


def output(call_id: str, text: Any, kind: str = "function_call_output") -> dict[str, Any]:
    return {"type": kind, "call_id": call_id, "output": text}


def patch(call_id: str, body: str) -> dict[str, Any]:
    return {"type": "custom_tool_call", "status": "completed", "call_id": call_id, "name": "apply_patch",
            "input": f"*** Begin Patch\n{body}\n*** End Patch"}  # fmt: skip


def usage(given: int, output_tokens: int) -> dict[str, Any]:
    last = {"input_tokens": given, "cached_input_tokens": 0, "output_tokens": output_tokens,
            "reasoning_output_tokens": 0, "total_tokens": given + output_tokens}  # fmt: skip
    return {"type": "token_count", "info": {"total_token_usage": last, "last_token_usage": last}}


def patch_end(call_id: str, success: bool) -> dict[str, Any]:
    return {"type": "patch_apply_end", "call_id": call_id, "turn_id": "1", "stdout": "", "stderr": "",
            "success": success, "changes": {}, "status": "completed" if success else "failed"}  # fmt: skip


def initial_context(second: int) -> list[dict[str, Any]]:
    """What Codex records before a turn (and again after a compaction): the developer message, the
    AGENTS.md instructions and the environment context."""
    return [item(second, message("developer", PERMISSIONS)), item(second, message("user", AGENTS)),
            item(second, message("user", ENVIRONMENT))]  # fmt: skip


# The history the conversation continues from: the initial context again (remote compaction puts it
# back), six items of the conversation before, the encrypted summary and a ghost snapshot.
REPLACEMENT = [
    message("developer", PERMISSIONS),
    message("user", AGENTS),
    message("user", ENVIRONMENT),
    message("user", PROMPT),
    message("assistant", "I'll look at app.py first."),
    call("call_r1", "exec_command", {"cmd": "ls"}),
    output("call_r1", LISTING),
    message("assistant", "The greeting is in main()."),
    message("user", FOLLOW_UP),
    {"type": "compaction", "encrypted_content": "gAAAAABpZ-summary"},
    {"type": "ghost_snapshot", "ghost_commit": {"id": "abc123", "parent": None}},
]


def rollout() -> list[dict[str, Any]]:
    """A 0.104-shape session: two failed patches (one freeform, one JSON), one that works, a remote
    compaction (empty message, replacement_history) and two turns after it."""
    meta = {"id": SESSION, "timestamp": "2026-02-20T10:00:00.000Z", "cwd": "/home/me/shop",
            "originator": "codex_cli_rs", "cli_version": "0.104.0", "source": "cli",
            "model_provider": "openai"}  # fmt: skip
    context = {"turn_id": "1", "cwd": "/home/me/shop", "approval_policy": "on-request", "model": MODEL,
               "sandbox_policy": {"type": "workspace-write"}, "effort": "medium",
               "summary": "auto"}  # fmt: skip
    reasoning: dict[str, Any] = {"type": "reasoning", "summary": [], "encrypted_content": "gAAAAB"}
    return [
        line(0, "session_meta", meta),
        *initial_context(0),
        line(1, "turn_context", context),
        event(1, {"type": "task_started", "model_context_window": 258400}),
        item(1, message("user", PROMPT)),
        event(1, {"type": "user_message", "message": PROMPT, "images": []}),
        item(2, reasoning),
        item(2, message("assistant", "I'll look at app.py first.")),
        item(2, call("call_r1", "exec_command", {"cmd": "ls"})),
        event(2, usage(1000, 20)),
        item(3, output("call_r1", LISTING)),
        item(4, message("assistant", "The greeting is in main().")),
        item(4, patch("call_p1", "*** Update File: app.py\n@@\n-print('hi')\n+print('hello')")),
        event(4, usage(1100, 30)),
        item(5, output("call_p1", NOT_FOUND, "custom_tool_call_output")),
        item(6, call("call_p2", "apply_patch", {"input": "*** Begin Patch\n*** Update File: app.py\nx"})),
        event(6, usage(1200, 30)),
        item(7, output("call_p2", BAD_HUNK)),
        item(8, patch("call_p3", "*** Update File: app.py\n@@\n-    print('hi')\n+    print('hello')")),
        event(8, usage(1300, 30)),
        event(9, patch_end("call_p3", True)),
        item(9, output("call_p3", PATCHED, "custom_tool_call_output")),
        item(10, message("assistant", "Fixed the greeting.")),
        event(10, usage(1400, 10)),
        event(10, {"type": "task_complete", "last_agent_message": "Fixed the greeting."}),
        item(11, message("user", FOLLOW_UP)),
        line(12, "compacted", {"message": "", "replacement_history": REPLACEMENT}),
        event(12, {"type": "context_compacted"}),
        *initial_context(13),
        line(13, "turn_context", context),
        item(14, patch("call_p4", "*** Add File: test_app.py\n+def test_greeting(): ...")),
        event(14, usage(600, 40)),
        event(15, patch_end("call_p4", True)),
        item(15, output("call_p4", ADDED, "custom_tool_call_output")),
        item(16, message("assistant", ANSWER)),
        event(16, usage(700, 15)),
    ]  # fmt: skip


def raw(records: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def attributes(row: Any) -> dict[str, Any]:
    values: dict[str, Any] = json.loads(row["attributes"])
    return values


def input_messages(attrs: dict[str, Any]) -> list[tuple[str, str | None]]:
    """The request's messages as (role, content), in order."""
    numbers = {int(m.group(1)) for k in attrs if (m := re.match(r"llm\.input_messages\.(\d+)\.", k))}
    assert numbers == set(range(len(numbers)))
    prefix = "llm.input_messages"
    return [
        (attrs[f"{prefix}.{i}.message.role"], attrs.get(f"{prefix}.{i}.message.content"))
        for i in sorted(numbers)
    ]


# --- the reader -------------------------------------------------------------------------------------


def test_the_history_restarts_from_the_replacement_history_as_context_only_turns() -> None:
    conversation = read_rollout(raw(rollout()), "r.jsonl")
    assert conversation is not None
    turns = conversation.turns
    at = next(i for i, t in enumerate(turns) if t.role == "compaction")
    replaced = turns[at + 1 : at + 6]
    assert [(t.role, t.text, t.context_only) for t in replaced] == [
        ("user", PROMPT, True),
        ("assistant", "I'll look at app.py first.", True),
        ("tool", LISTING, True),
        ("assistant", "The greeting is in main().", True),
        ("user", FOLLOW_UP, True),
    ]
    assert [c.call_id for c in replaced[1].tool_calls] == ["call_r1"] and replaced[2].call_id == "call_r1"
    assert not any(t.context_only for t in turns[:at] + turns[at + 6 :])
    assert [(t.role, t.is_error) for t in turns[at + 6 :]] == [
        ("assistant", False),
        ("tool", False),
        ("assistant", False),
    ]
    # The system prompt once, though the file gives it three times (start, replacement, after it).
    assert conversation.system == f"{PERMISSIONS}\n\n{AGENTS}"
    assert all(AGENTS not in t.text and ENVIRONMENT not in t.text for t in turns)
    assert conversation.metadata["compactions"] == 1 and conversation.metadata["environment_context"] == 2
    assert conversation.metadata["cli_version"] == "0.104.0"
    assert conversation.skipped == {
        "reasoning": 1, "replacement_history compaction": 1, "replacement_history ghost_snapshot": 1,
        "event task_started": 1, "event task_complete": 1,
    }  # fmt: skip
    # Tokens go to the turns after the compaction, never to a replaced one.
    after = [t for t in turns[at + 6 :] if t.role == "assistant"]
    assert [(t.prompt_tokens, t.completion_tokens) for t in after] == [(600, 40), (700, 15)]
    assert all(t.prompt_tokens is None for t in replaced)


def test_failures_only_the_output_reports_are_errors_and_successes_stay_ok() -> None:
    conversation = read_rollout(raw(rollout()), "r.jsonl")
    assert conversation is not None
    results = {
        t.call_id: (t.is_error, t.text) for t in conversation.turns if t.role == "tool" and not t.context_only
    }
    assert results == {
        "call_r1": (False, LISTING),  # exit code 0, "errors.log" in the listing
        "call_p1": (True, NOT_FOUND),  # custom_tool_call_output, text kept as the model saw it
        "call_p2": (True, BAD_HUNK),  # function_call_output
        "call_p3": (False, PATCHED),
        "call_p4": (False, ADDED),
    }


def test_a_compacted_line_with_a_summary_and_no_replacement_history_keeps_the_summary() -> None:
    records = [*rollout()[:13], line(12, "compacted", {"message": "Summary: app.py greets."}),
               item(13, message("user", "Go on")), item(14, message("assistant", "Done."))]  # fmt: skip
    conversation = read_rollout(raw(records), "r.jsonl")
    assert conversation is not None
    at = next(i for i, t in enumerate(conversation.turns) if t.role == "compaction")
    assert [(t.role, t.text, t.context_only) for t in conversation.turns[at + 1 :]] == [
        ("user", "Summary: app.py greets.", False),
        ("user", "Go on", False),
        ("assistant", "Done.", False),
    ]


def test_events_name_failures_and_newer_items_are_read_or_counted() -> None:
    mcp_result = {"Ok": {"content": [{"type": "text", "text": "No such page"}], "isError": True}}
    records = [
        line(0, "session_meta", {"id": SESSION, "timestamp": "2026-02-20T10:00:00.000Z"}),
        line(0, "turn_context", {"model": MODEL}),
        item(1, message("user", "Look it up")),
        item(2, {"type": "tool_search_call", "call_id": "ts1", "execution": "client", "status": "completed",
                 "arguments": {"query": "docs search", "limit": 1}}),
        item(3, {"type": "tool_search_output", "call_id": "ts1", "execution": "client", "status": "completed",
                 "tools": [{"type": "function", "name": "search"}]}),
        item(4, call("m1", "search", {"q": "greeting"}, namespace="mcp__docs__")),
        event(5, {"type": "mcp_tool_call_end", "call_id": "m1",
                  "invocation": {"server": "docs", "tool": "search", "arguments": {"q": "greeting"}},
                  "duration": {"secs": 0, "nanos": 5000000}, "result": mcp_result}),
        item(5, output("m1", [{"type": "input_text", "text": "No such page"}])),
        item(6, {"type": "web_search_call", "status": "completed",
                 "action": {"type": "search", "query": "x"}}),
        item(6, {"type": "tool_search_call", "execution": "server", "status": "completed", "arguments": {}}),
        item(6, {"type": "image_generation_call", "id": "ig1", "status": "completed", "result": "iVBOR"}),
        item(6, {"type": "ghost_snapshot", "ghost_commit": {"id": "abc"}}),
        item(7, message("assistant", "Nothing found.")),
        line(8, "some_future_line", {"x": 1}),
    ]  # fmt: skip
    conversation = read_rollout(raw(records), "r.jsonl")
    assert conversation is not None
    calls = [(c.call_id, c.name) for t in conversation.turns for c in t.tool_calls]
    assert calls == [("ts1", "tool_search"), ("m1", "mcp__docs__search")]
    tools = [(t.call_id, t.name, t.is_error) for t in conversation.turns if t.role == "tool"]
    assert tools == [("ts1", "tool_search", False), ("m1", "", True)]
    assert conversation.skipped == {
        "web_search_call": 1, "tool_search_call": 1, "image_generation_call": 1, "ghost_snapshot": 1,
        "record some_future_line": 1,
    }  # fmt: skip


PASSES = [
    json.dumps({"output": "error.log\nerrors/\n", "metadata": {"exit_code": 0, "duration_seconds": 0.1}}),
    "Exit code: 0\nWall time: 0.2 seconds\nOutput:\nsrc/errors.py\nerror_handler.py\n",
    "Exit code: 0\nWall time: 0.2 seconds\nTotal output lines: 900\nOutput:\nFAILED is a word here\n",
    "Exit code: 0\nWall time: 0 seconds\nOutput:\napply_patch verification failed: quoted in a file",
    "Chunk ID: 9f\nWall time: 10.0012 seconds\nProcess running with session ID 3\nOutput:\nerror: x\n",
    "Wall time: 0.5000 seconds\nProcess exited with code 0\nOutput:\n",
    "Success. Updated the following files:\nM app.py\n",
    "src/errors.py\nsrc/error_handler.py\n",
    "error handling looks fine to me",
    "Plan updated",
    [{"type": "input_text", "text": "Exit code: 0\nWall time: 0 seconds\nOutput:\nok"}],
]
FAILURES = [
    json.dumps({"output": "boom", "metadata": {"exit_code": 2, "duration_seconds": 0.1}}),
    "Exit code: 1\nWall time: 0.2 seconds\nOutput:\n1 failed\n",
    "Exit code: 124\nWall time: 10 seconds\nOutput:\ncommand timed out after 10000 milliseconds\n",
    "Chunk ID: 9f\nWall time: 0.02 seconds\nProcess exited with code 127\nOriginal token count: 7\nOutput:\n",
    NOT_FOUND,
    BAD_HUNK,
    "apply_patch verification failed: invalid patch: The first line of the patch must be '*** Begin Patch'",
    "apply_patch handler received invalid patch input",
    "error: Failed to find expected lines in app.py:\nprint('hi')",  # older versions
    "Invalid patch: The last line of the patch must be '*** End Patch'",
    "patch rejected: writing outside of the project; rejected by user approval settings",
    "patch rejected by user",
    "exec command rejected by user",
    "execution error: Io(Os { code: 2, kind: NotFound })",
    "failed to parse function arguments: missing field `input`",
    "err: timed out awaiting tools/call after 60s",
    {"content": "could not run", "success": False},  # an output object, older versions
    [{"type": "input_text", "text": "Exit code: 3\nWall time: 0 seconds\nOutput:\nno"}],
]


@pytest.mark.parametrize("value", PASSES, ids=range(len(PASSES)))
def test_an_output_that_does_not_say_it_failed_is_ok(value: Any) -> None:
    text, failed = read_output(value, Counts())
    assert not failed
    assert text == (value if isinstance(value, str) else value[0]["text"])


@pytest.mark.parametrize("value", FAILURES, ids=range(len(FAILURES)))
def test_an_output_that_says_it_failed_is_an_error_its_text_unchanged(value: Any) -> None:
    text, failed = read_output(value, Counts())
    assert failed
    if isinstance(value, str):
        assert text == value


def test_the_events_that_name_a_failed_call() -> None:
    assert failed_call(patch_end("p1", False)) == "p1"
    assert failed_call(patch_end("p1", True)) is None
    assert failed_call({"type": "mcp_tool_call_end", "call_id": "m1", "result": {"Err": "timeout"}}) == "m1"
    ok = {"type": "mcp_tool_call_end", "call_id": "m1", "result": {"Ok": {"content": [], "isError": False}}}
    assert failed_call(ok) is None
    assert failed_call({"type": "exec_command_end", "call_id": "x", "exit_code": 1}) is None


# --- through the CLI --------------------------------------------------------------------------------


def test_a_compacted_rollout_imports_with_the_replacement_history_in_the_requests_after_it(
    tmp_path: Path,
) -> None:
    db = tmp_path / "bb.db"
    path = write_jsonl(tmp_path / f"rollout-2026-02-20T10-00-00-{SESSION}.jsonl", rollout())
    summary = import_transcript(db, "codex", path)
    # root, 5 LLM spans before the compaction and 2 after, 5 TOOL spans (none for a replaced call)
    assert (summary["spans"], summary["traces"]) == (13, 1)
    stored = stored_rows(db)
    llm = [r for r in stored if r["oi_span_kind"] == "LLM"]
    tools = [r for r in stored if r["oi_span_kind"] == "TOOL"]
    assert len(llm) == 7 and len(tools) == 5
    assert [r["prompt_tokens"] for r in llm] == [1000, 1100, 1200, 1300, 1400, 600, 700]
    assert sorted(r["tool_name"] for r in tools) == ["apply_patch"] * 4 + ["exec_command"]

    system = f"{PERMISSIONS}\n\n{AGENTS}"
    replaced = [("system", system), ("user", PROMPT), ("assistant", "I'll look at app.py first."),
                ("tool", LISTING), ("assistant", "The greeting is in main()."),
                ("user", FOLLOW_UP)]  # fmt: skip
    first, second = (input_messages(attributes(r)) for r in llm[5:])
    assert first == replaced
    assert second == [*replaced, ("assistant", None), ("tool", ADDED)]
    first_attrs = attributes(llm[5])
    assert first_attrs["llm.input_messages.2.message.tool_calls.0.tool_call.id"] == "call_r1"
    assert first_attrs["llm.input_messages.3.message.tool_call_id"] == "call_r1"
    # The last request before the compaction held the whole conversation up to it.
    assert len(input_messages(attributes(llm[4]))) == 10
    root = next(r for r in stored if r["oi_span_kind"] == "AGENT")
    assert json.loads(attributes(root)["metadata"])["compactions"] == 1

    failed = [r for r in tools if r["status"] == "error"]
    assert sorted(r["status_message"] for r in failed) == sorted([NOT_FOUND, BAD_HUNK])
    assert all(r["status"] == "ok" for r in tools if r not in failed)
    listed = json.loads(run_cli("errors", "--json", db=db, check=True).stdout)
    assert len(listed) == 2 and {s["name"] for s in listed} == {"apply_patch"}
    assert "apply_patch verification failed" in run_cli("errors", db=db, check=True).stdout

    cassette = tmp_path / "c.json"
    run_cli("cassette", root["trace_id"], "-o", str(cassette), db=db, check=True)
    assert "PASS  replayability" in run_cli("verify", str(cassette), check=True).stdout
