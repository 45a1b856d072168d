"""Claude Code sessions as three generations of Claude Code wrote them, and sessions that change.

The records are written here from the published community schemas, never copied from a real session:

* 0.2 (early 2025): one record a response (text and tool uses together), ``costUSD`` and
  ``durationMs`` on it, no ``gitBranch``; subagents (Task) in the session's own file as side chains
  with no ``agentId``;
* 1.0 (mid 2025): a response split over records sharing ``message.id``, ``requestId``,
  ``gitBranch``, ``isMeta`` caveats, ``summary`` lines (some naming a leaf of another session),
  hook ``system`` records, ``thinking`` with a signature, pasted images, an API error written in
  the model's place (``isApiErrorMessage``, model ``<synthetic>``);
* 2.0 (late 2025 on): ``file-history-snapshot`` and ``queue-operation`` lines, a subagent in
  ``<session>/subagents/agent-<id>.jsonl`` with ``agentId``, and a compaction
  (``compact_boundary`` with ``logicalParentUuid``, then the summary with ``isCompactSummary``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers import import_transcript, run_cli, stored_rows, write_jsonl

SESSION = "0c9a4d2e-7777-4888-9999-aaaabbbbcccc"
MODEL = "claude-sonnet-4-20250514"
OVERLOADED = 'API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'


class Writer:
    """Records of one session in one version's shape: each chained to the one before (``after``
    overrides), a second apart."""

    def __init__(self, version: str, session: str = SESSION, **common: Any) -> None:
        self.version, self.session, self.common = version, session, common
        self.records: list[dict[str, Any]] = []
        self.last: str | None = None
        self.second = 0

    def add(self, kind: str, uuid: str, *, after: str | None = "", **fields: Any) -> dict[str, Any]:
        self.second += 1
        parent = self.last if after == "" else after
        found = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/home/me/shop",
            "sessionId": self.session,
            "version": self.version,
            "type": kind,
            "uuid": uuid,
            "timestamp": f"2025-06-01T10:{self.second // 60:02d}:{self.second % 60:02d}.000Z",
            **self.common,
            **fields,
        }
        self.records.append(found)
        self.last = uuid
        return found

    def user(self, uuid: str, content: Any, **fields: Any) -> dict[str, Any]:
        return self.add("user", uuid, message={"role": "user", "content": content}, **fields)

    def assistant(self, uuid: str, message_id: str, *blocks: dict[str, Any], **fields: Any) -> dict[str, Any]:
        message = {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": list(blocks),
            "stop_reason": "tool_use" if blocks[-1]["type"] == "tool_use" else "end_turn",
            "usage": {
                "input_tokens": 100,
                "output_tokens": 10,
                "cache_read_input_tokens": 0,
                "cache_creation_input_tokens": 0,
            },
        }
        return self.add("assistant", uuid, message=message, **fields)

    def raw(self, record: dict[str, Any]) -> None:
        self.records.append(record)

    def write(self, path: Path, tail: str = "") -> Path:
        return write_jsonl(path, self.records, tail)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def use(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def result(call_id: str, content: Any, error: bool = False) -> list[dict[str, Any]]:
    return [{"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": error}]


def spans(db: Path) -> list[dict[str, Any]]:
    """The stored span rows, their attributes parsed."""
    return [{**dict(row), "attributes": json.loads(row["attributes"])} for row in stored_rows(db)]


def messages(span: dict[str, Any], direction: str = "input") -> list[tuple[str, str]]:
    """An LLM span's messages as (role, content) pairs."""
    attributes = span["attributes"]
    out: list[tuple[str, str]] = []
    for i in range(1000):
        role = attributes.get(f"llm.{direction}_messages.{i}.message.role")
        if role is None:
            return out
        out.append((role, attributes.get(f"llm.{direction}_messages.{i}.message.content", "")))
    return out


# --- the three generations --------------------------------------------------------------------------


def version_0_2(folder: Path) -> Path:
    """A session with two subagents in its own file, as side chains with no agentId."""
    w = Writer("0.2.74")
    w.user("u1", "Check the tests and the lint")
    w.assistant(
        "a1",
        "msg_1",
        text("I will ask two helpers."),
        use("toolu_t1", "Task", description="tests", prompt="Run the tests"),
        use("toolu_t2", "Task", description="lint", prompt="Run the lint"),
        costUSD=0.0123,
        durationMs=2100,
    )
    for n, (prompt, command, output, error) in enumerate(
        [
            ("Run the tests", "pytest -q", "1 failed, 9 passed", True),
            ("Run the lint", "ruff check", "All checks passed!", False),
        ],
        1,
    ):
        side = {"isSidechain": True}
        w.add("user", f"s{n}u", after=None, message={"role": "user", "content": prompt}, **side)
        w.assistant(
            f"s{n}a",
            f"msg_s{n}a",
            use(f"toolu_s{n}", "Bash", command=command),
            costUSD=0.001,
            durationMs=900,
            **side,
        )
        w.user(f"s{n}r", result(f"toolu_s{n}", output, error), **side)
        w.assistant(
            f"s{n}b", f"msg_s{n}b", text(f"{command}: {output}"), costUSD=0.001, durationMs=500, **side
        )
    w.user(
        "r1",
        [
            *result("toolu_t1", [text("pytest -q: 1 failed, 9 passed")]),
            *result("toolu_t2", [text("ruff check: All checks passed!")]),
        ],
        after="a1",
    )
    w.assistant("a2", "msg_2", text("One test fails; the lint is clean."), costUSD=0.004, durationMs=1200)
    return w.write(folder / f"{SESSION}.jsonl")


def version_1_0(folder: Path) -> Path:
    """Split responses, summaries (one of another session's leaf), meta caveats, hooks, thinking, an image."""
    w = Writer("1.0.98", gitBranch="main")
    w.raw({"type": "summary", "summary": "Fixing the failing test", "leafUuid": "a3"})
    w.raw(
        {
            "type": "summary",
            "summary": "A session elsewhere",
            "leafUuid": "ffffffff-0000-0000-0000-000000000000",
        }
    )
    w.user(
        "m1",
        "Caveat: The messages below were generated by the user while running local commands.",
        isMeta=True,
    )
    w.user(
        "u1",
        [
            text("Why does this fail?"),
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
            },
        ],
    )
    w.assistant(
        "a1",
        "msg_1",
        {"type": "thinking", "thinking": "Read the test first.", "signature": "c2ln"},
        requestId="req_1",
    )
    w.assistant("a1b", "msg_1", use("toolu_1", "Read", file_path="tests/test_cart.py"), requestId="req_1")
    w.user(
        "r1",
        result("toolu_1", "def test_total(): assert total([2, 3]) == 6"),
        toolUseResult={"type": "text", "file": {"filePath": "tests/test_cart.py", "numLines": 1}},
    )
    w.add("system", "h1", content="PostToolUse hook ran", level="info", isMeta=False)
    w.assistant("a2", "msg_2", text("The test expects 6; 2 + 3 is 5."), requestId="req_2")
    w.assistant(
        "a2b",
        "msg_2",
        use("toolu_2", "Edit", file_path="tests/test_cart.py", old_string="6", new_string="5"),
        requestId="req_2",
    )
    w.user("r2", result("toolu_2", "<tool_use_error>File has not been read yet</tool_use_error>", True))
    # The API failed once: Claude Code wrote a message of its own in the model's place, then retried.
    overloaded = w.assistant("e1", "msg_e1", text(OVERLOADED), isApiErrorMessage=True)
    overloaded["message"]["model"] = "<synthetic>"
    w.assistant("a3", "msg_3", text("The edit was refused; read the file again first."), requestId="req_3")
    return w.write(folder / f"{SESSION}.jsonl")


def version_2_0(folder: Path) -> list[Path]:
    """Snapshots, queue operations, a compaction, and a subagent in a file of its own."""
    w = Writer("2.0.31", gitBranch="fix/cart", slug="fixing-the-cart")
    w.raw(
        {
            "type": "queue-operation",
            "operation": "dequeue",
            "timestamp": "2025-06-01T10:00:00.000Z",
            "sessionId": SESSION,
        }
    )
    w.raw(
        {
            "type": "file-history-snapshot",
            "messageId": "u1",
            "snapshot": {"trackedFileBackups": {}},
            "isSnapshotUpdate": False,
        }
    )
    w.user("u1", "Find every caller of total()", thinkingMetadata={"level": "high", "disabled": False})
    w.assistant(
        "a1",
        "msg_1",
        use(
            "toolu_1",
            "Task",
            description="callers",
            prompt="Find callers of total()",
            subagent_type="Explore",
        ),
    )
    w.user("r1", result("toolu_1", [text("cart.py:12 and checkout.py:40")]))
    w.assistant("a2", "msg_2", text("Two callers: cart.py:12 and checkout.py:40."))
    w.add(
        "system",
        "c1",
        after=None,
        subtype="compact_boundary",
        content="Conversation compacted",
        level="info",
        logicalParentUuid="a2",
        compactMetadata={"trigger": "auto", "preTokens": 155000},
    )
    w.user(
        "k1",
        "This session is being continued from a previous conversation. Summary: two callers found.",
        isCompactSummary=True,
        isVisibleInTranscriptOnly=True,
    )
    w.user("u2", "Now fix checkout.py")
    w.assistant("a3", "msg_3", use("toolu_2", "Bash", command="sed -n 40p checkout.py"))
    w.user("r2", result("toolu_2", "total(items) + shipping"))
    w.assistant("a4", "msg_4", text("checkout.py already adds shipping after total(); nothing to fix."))
    main = w.write(folder / f"{SESSION}.jsonl")
    agent = Writer("2.0.31", gitBranch="fix/cart", isSidechain=True, agentId="5e6f7a8b")
    agent.user("x1", "Find callers of total()", after=None)
    agent.assistant("x2", "msg_x1", use("toolu_x", "Grep", pattern="total\\("))
    agent.user("x3", result("toolu_x", "cart.py:12\ncheckout.py:40"))
    agent.assistant("x4", "msg_x2", text("cart.py:12 and checkout.py:40"))
    return [main, agent.write(folder / SESSION / "subagents" / "agent-5e6f7a8b.jsonl")]


def test_version_0_2_whole_responses_and_subagents_in_the_session_file(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    summary = import_transcript(db, "claude-code", version_0_2(tmp_path / "project"))
    stored = spans(db)
    assert summary["traces"] == 1 and len({s["trace_id"] for s in stored}) == 1
    root = next(s for s in stored if s["parent_span_id"] is None)
    subagents = [s for s in stored if s["oi_span_kind"] == "AGENT" and s["parent_span_id"] is not None]
    # Each side chain is a subagent of its own (split at its root), each under the Task call whose
    # prompt is its first message (no agentId in these files).
    assert [s["attributes"]["input.value"] for s in subagents] == ["Run the tests", "Run the lint"]
    tasks = {s["span_id"]: s for s in stored if s["tool_name"] == "Task"}
    for subagent, call in zip(subagents, ("toolu_t1", "toolu_t2"), strict=True):
        task = tasks[subagent["parent_span_id"]]
        assert (
            json.loads(task["attributes"]["input.value"])["prompt"] == subagent["attributes"]["input.value"]
        )
        assert json.loads(subagent["attributes"]["metadata"])["parent_tool_call_id"] == call
        assert task["parent_span_id"] == root["span_id"]
    tools = [(s["tool_name"], s["status"]) for s in stored if s["oi_span_kind"] == "TOOL"]
    assert sorted(tools) == [("Bash", "error"), ("Bash", "ok"), ("Task", "ok"), ("Task", "ok")]
    llm = [s for s in stored if s["oi_span_kind"] == "LLM"]
    assert len(llm) == 2 + 2 * 2
    first = next(s for s in llm if s["parent_span_id"] == root["span_id"])
    calls = [
        first["attributes"][f"llm.output_messages.0.message.tool_calls.{i}.tool_call.function.name"]
        for i in (0, 1)
    ]
    assert calls == ["Task", "Task"] and first["model"] == MODEL and first["prompt_tokens"] == 100
    assert root["attributes"]["output.value"] == "One test fails; the lint is clean."
    assert root["session_id"] == SESSION


def test_version_1_0_split_responses_summaries_hooks_thinking_and_images(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    import_transcript(db, "claude-code", version_1_0(tmp_path / "project"))
    stored = spans(db)
    root = next(s for s in stored if s["parent_span_id"] is None)
    metadata = json.loads(root["attributes"]["metadata"])
    assert metadata["summaries"] == ["Fixing the failing test"]
    assert metadata["git_branch"] == "main" and metadata["version"] == "1.0.98"
    assert metadata["system_events"] == {"info": 1}
    assert metadata["left_out"] == {"summary of another session": 1, "thinking": 1, "image": 1}
    llm = [s for s in stored if s["oi_span_kind"] == "LLM"]
    assert len(llm) == 4  # msg_1 and msg_2 were each two records: one turn each
    failed, retried = llm[2], llm[3]
    assert (failed["status"], failed["status_message"], failed["model"]) == ("error", OVERLOADED, MODEL)
    assert "llm.output_messages.0.message.role" not in failed["attributes"]
    assert messages(retried) == messages(failed)  # the error message was never sent to the model
    assert messages(llm[0]) == [
        ("user", "Caveat: The messages below were generated by the user while running local commands."),
        ("user", "Why does this fail?"),
    ]
    second = llm[1]["attributes"]
    assert second["llm.output_messages.0.message.content"] == "The test expects 6; 2 + 3 is 5."
    assert second["llm.output_messages.0.message.tool_calls.0.tool_call.function.name"] == "Edit"
    edit = next(s for s in stored if s["tool_name"] == "Edit")
    assert edit["status"] == "error" and "has not been read" in edit["status_message"]
    assert json.loads(edit["attributes"]["input.value"])["new_string"] == "5"


def test_version_2_0_compaction_snapshots_and_a_subagent_file(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    folder = tmp_path / "project"
    version_2_0(folder)
    summary = import_transcript(db, "claude-code", folder)
    assert summary["traces"] == 1
    stored = spans(db)
    root = next(s for s in stored if s["parent_span_id"] is None)
    subagent = next(s for s in stored if s["oi_span_kind"] == "AGENT" and s["parent_span_id"] is not None)
    # The result names no agentId here: the call is the one whose prompt the subagent was given.
    task = next(s for s in stored if s["tool_name"] == "Task")
    assert subagent["parent_span_id"] == task["span_id"] and task["parent_span_id"] == root["span_id"]
    assert json.loads(subagent["attributes"]["metadata"]) == {
        "session_id": SESSION, "agent_id": "5e6f7a8b", "parent_tool_call_id": "toolu_1",
        "cwd": "/home/me/shop", "version": "2.0.31", "git_branch": "fix/cart",
    }  # fmt: skip
    metadata = json.loads(root["attributes"]["metadata"])
    assert metadata["left_out"] == {"record queue-operation": 1, "record file-history-snapshot": 1}
    assert metadata["system_events"] == {"compact_boundary": 1}
    main_llm = [s for s in stored if s["oi_span_kind"] == "LLM" and s["parent_span_id"] == root["span_id"]]
    assert len(main_llm) == 4
    # Before the compaction a request holds the whole conversation; after it, the summary onwards.
    assert [role for role, _ in messages(main_llm[1])] == ["user", "assistant", "tool"]
    after = messages(main_llm[2])
    assert after[0][1].startswith("This session is being continued") and after[1] == (
        "user",
        "Now fix checkout.py",
    )
    assert len(after) == 2
    assert root["attributes"]["input.value"] == "Find every caller of total()"


# --- sessions that change -----------------------------------------------------------------------------


def test_a_session_imported_again_after_it_grew_replaces_its_trace(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    folder = tmp_path / "project"
    w = Writer("2.0.31")
    w.user("u1", "List the files")
    w.assistant("a1", "msg_1", use("toolu_1", "Bash", command="ls"))
    w.user("r1", result("toolu_1", "cart.py"))
    # Written while the answer was being streamed: the last line is cut.
    path = w.write(folder / f"{SESSION}.jsonl", '{"type": "assistant", "uuid": "a2", "mess')
    first = import_transcript(db, "claude-code", folder)
    assert (first["spans"], first["traces"], first["replaced"]) == (3, 1, 0)
    w.assistant("a2", "msg_2", text("One file: cart.py."))
    w.user("u2", "And its size?")
    w.assistant("a3", "msg_3", use("toolu_2", "Bash", command="wc -c cart.py"))
    w.user("r2", result("toolu_2", "120 cart.py"))
    w.assistant("a4", "msg_4", text("120 bytes."))
    w.write(path)
    grown = import_transcript(db, "claude-code", folder)
    assert (grown["spans"], grown["traces"], grown["replaced"], grown["duplicates"]) == (7, 1, 1, 0)
    stored = spans(db)
    assert len(stored) == 7 and len({s["trace_id"] for s in stored}) == 1
    assert (
        next(s for s in stored if s["parent_span_id"] is None)["attributes"]["output.value"] == "120 bytes."
    )
    # The first import's run held only that trace: it went with it. One run is listed, the second.
    listed = json.loads(run_cli("runs", "--json", db=db, check=True).stdout)
    assert [r["run_id"] for r in listed] == [grown["run_id"]]
    unchanged = import_transcript(db, "claude-code", folder)
    assert (unchanged["spans"], unchanged["duplicates"], unchanged["replaced"]) == (0, 7, 0)


def test_a_resumed_session_is_a_trace_of_its_own_beside_the_one_it_resumed(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    folder = tmp_path / "project"
    old = Writer("1.0.98")
    old.user("u1", "Hello")
    old.assistant("a1", "msg_1", text("Hi."))
    old.write(folder / f"{SESSION}.jsonl")
    resumed_id = "11111111-2222-4333-8444-555555555555"
    resumed = Writer("1.0.98", session=resumed_id)
    resumed.records = [dict(r) for r in old.records]  # the copies keep the old session's id
    resumed.last = "a1"
    resumed.user("u2", "Where were we?")
    resumed.assistant("a2", "msg_2", text("You said hello."))
    resumed.write(folder / f"{resumed_id}.jsonl")
    summary = import_transcript(db, "claude-code", folder)
    assert summary["traces"] == 2 and summary["replaced"] == 0
    roots = {s["session_id"]: s for s in spans(db) if s["parent_span_id"] is None}
    assert set(roots) == {SESSION, resumed_id}
    assert roots[resumed_id]["attributes"]["output.value"] == "You said hello."
    again = import_transcript(db, "claude-code", folder)
    assert (again["spans"], again["replaced"]) == (0, 0)


def test_line_separators_inside_a_json_string_do_not_break_the_line(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    w = Writer("2.0.31")
    w.user("u1", "Paste:\u2028first\u0085second\u2029third")  # raw in the file (JSON allows it)
    w.assistant("a1", "msg_1", text("Three parts."))
    path = w.write(tmp_path / f"{SESSION}.jsonl")
    assert "\u2028" in path.read_text()
    import_transcript(db, "claude-code", path)
    root = next(s for s in spans(db) if s["parent_span_id"] is None)
    assert root["attributes"]["input.value"] == "Paste:\u2028first\u0085second\u2029third"


def test_an_older_copy_and_the_session_imported_together_leave_the_newer_in_one_run(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    w = Writer("2.0.31")
    w.user("u1", "Hello")
    w.assistant("a1", "msg_1", text("Hi."))
    backup = w.write(tmp_path / "backup" / f"{SESSION}.jsonl")
    w.user("u2", "Bye")
    w.assistant("a2", "msg_2", text("Bye."))
    current = w.write(tmp_path / "project" / f"{SESSION}.jsonl")
    summary = import_transcript(db, "claude-code", backup, current)
    assert summary["replaced"] == 1
    stored = spans(db)
    assert (
        len(stored) == 3
        and next(s for s in stored if s["parent_span_id"] is None)["attributes"]["output.value"] == "Bye."
    )
    listed = json.loads(run_cli("runs", "--json", db=db, check=True).stdout)
    assert [(r["run_id"], r["spans"]) for r in listed] == [(summary["run_id"], 3)]
