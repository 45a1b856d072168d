"""Claude Code sessions in: `import --from claude-code` of a file or a project folder, then list,
show, cassette, verify and rerun.

Every session file is written here from the shapes the community schemas publish (records `user`,
`assistant`, `system`, `summary`, `file-history-snapshot`; an assistant response split over records;
a subagent's side chain in a file of its own), never copied from a real session.
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
from otel_blackbox._spans.transcripts.claude_code import read_session
from otel_blackbox._spans.transcripts.otlp import Keys, otlp_document
from otel_blackbox.errors import ImportInputError

SECRET = "sk-proj-" + "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuv"  # 48 letters, not a key
SESSION = "5f0c2a8e-1111-4222-8333-944455556666"
MODEL = "claude-sonnet-4-5-20250929"
README = "# Shop\nA demo shop."
MISSING = "cat: missing.txt: No such file or directory"
ANSWER = "The README says it is a demo shop; missing.txt does not exist."
SUB_ANSWER = "No TODO left."  # intentional: test data, what the fake subagent answers
GREP = {"pattern": "TODO"}  # intentional: test data, the subagent's search
USAGE = {
    "input_tokens": 10,
    "output_tokens": 20,
    "cache_read_input_tokens": 300,
    "cache_creation_input_tokens": 40,
}


def record(kind: str, uuid: str, parent: str | None, second: int, **fields: Any) -> dict[str, Any]:
    return {
        "type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": SESSION,
        "timestamp": f"2025-10-01T09:00:{second:02d}.000Z", "isSidechain": False,
        "cwd": "/home/me/shop", "version": "2.0.14", "gitBranch": "main", "userType": "external",
        **fields,
    }  # fmt: skip


def user(uuid: str, parent: str | None, second: int, content: Any, **fields: Any) -> dict[str, Any]:
    return record(kind="user", uuid=uuid, parent=parent, second=second,
                  message={"role": "user", "content": content}, **fields)  # fmt: skip


def assistant(
    uuid: str, parent: str, second: int, message_id: str, *blocks: dict[str, Any], **fields: Any
) -> dict[str, Any]:
    message = {
        "id": message_id, "type": "message", "role": "assistant", "model": MODEL, "content": list(blocks),
        "stop_reason": None, "usage": USAGE,
    }  # fmt: skip
    return record("assistant", uuid, parent, second, message=message, requestId="req_1", **fields)


def tool_use(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def tool_result(call_id: str, content: Any, error: bool = False) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": error}


def main_session() -> list[Any]:
    """A session: a prompt with a key in it, a response split over two records (text, then a tool
    use), its result, a thinking block and a failing tool, a system event, an image, the answer, a
    summary, a snapshot, an unknown record type; the file order is not the chain's at one place."""
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    r1 = user("r1", "a2", 3, [tool_result("toolu_1", README)], toolUseResult={"stdout": "ignored"})
    a3 = assistant(
        "a3", "r1", 4, "msg_2",
        {"type": "thinking", "thinking": "The file may be missing.", "signature": "c2ln"},
        tool_use("toolu_2", "Bash", {"command": "cat missing.txt", "description": "show it"}),
    )  # fmt: skip
    return [
        {"type": "file-history-snapshot", "messageId": "u1", "snapshot": {"trackedFileBackups": {}},
         "isSnapshotUpdate": False},
        user("u1", None, 1, f"Read the README and missing.txt. My key is {SECRET}"),
        assistant("a1", "u1", 2, "msg_1", {"type": "text", "text": "Let me look."}),
        assistant("a2", "a1", 2, "msg_1", tool_use("toolu_1", "Read", {"file_path": "README.md"})),
        a3,  # written before the result it follows: the chain, not the file, gives the order
        r1,
        user("r2", "a3", 5, [tool_result("toolu_2", [{"type": "text", "text": MISSING}], error=True)]),
        record("system", "s1", "r2", 6, content="Hook ran", level="info", subtype="informational"),
        user("u2", "s1", 7, [{"type": "text", "text": "And this screenshot?"}, image]),
        assistant("a4", "u2", 8, "msg_3", {"type": "text", "text": ANSWER}),
        {"type": "summary", "summary": "Reading the shop README", "leafUuid": "a4"},
        {"type": "progress-ping", "uuid": "p1", "data": {"percent": 50}},  # unknown: skipped, counted
    ]  # fmt: skip


def subagent_session() -> list[Any]:
    side = {"isSidechain": True, "agentId": "a1b2c3d4"}
    return [
        {**user("t1", None, 10, "Find the TODO comments"), **side},  # intentional: test data, a prompt
        {**assistant("t2", "t1", 11, "msg_s1", tool_use("toolu_s", "Grep", GREP)), **side},
        {**user("t3", "t2", 12, [tool_result("toolu_s", "No matches found")]), **side},
        {**assistant("t4", "t3", 13, "msg_s2", {"type": "text", "text": SUB_ANSWER}), **side},
    ]


def project(tmp_path: Path) -> Path:
    folder = tmp_path / "-home-me-shop"
    truncated = '{"type": "assistant", "uuid": "a5", "parentUuid": "a4", "message": {"id": "msg_4", "con'
    write_jsonl(folder / f"{SESSION}.jsonl", main_session(), truncated)
    write_jsonl(folder / SESSION / "subagents" / "agent-a1b2c3d4.jsonl", subagent_session())
    return folder


# --- the reader -------------------------------------------------------------------------------------


def test_the_reader_follows_the_chain_merges_split_responses_and_counts_what_it_leaves_out() -> None:
    raw = "".join(json.dumps(r) + "\n" for r in main_session()).encode() + b'{"type": "user", "uu'
    session = read_session(raw, "s.jsonl")
    assert session.session_id == SESSION and session.side == [] and session.main is not None
    main = session.main
    assert [(t.role, t.text) for t in main.turns] == [
        ("user", f"Read the README and missing.txt. My key is {SECRET}"),
        ("assistant", "Let me look."),
        ("tool", README),
        ("assistant", ""),
        ("tool", MISSING),
        ("user", "And this screenshot?"),
        ("assistant", ANSWER),
    ]
    first = main.turns[1]
    assert [c.name for c in first.tool_calls] == ["Read"] and first.model == MODEL
    assert (first.prompt_tokens, first.completion_tokens) == (350, 20)
    assert (first.cache_read_tokens, first.cache_write_tokens) == (300, 40)
    assert main.turns[4].is_error and not main.turns[2].is_error
    assert main.model == MODEL and main.provider == "anthropic" and main.source == "claude-code"
    assert {t["name"] for t in main.tools} == {"Read", "Bash"}
    assert main.metadata["summaries"] == ["Reading the shop README"]
    assert main.metadata["system_events"] == {"info": 1}
    assert main.metadata["git_branch"] == "main" and main.metadata["version"] == "2.0.14"
    assert main.skipped == {
        "truncated line": 1, "record progress-ping": 1, "record file-history-snapshot": 1,
        "thinking": 1, "image": 1,
    }  # fmt: skip


def test_the_reader_keeps_a_side_chain_in_the_same_file_apart() -> None:
    raw = "".join(json.dumps(r) + "\n" for r in [*main_session(), *subagent_session()]).encode()
    session = read_session(raw, "s.jsonl")
    assert session.main is not None and session.main.turns[-1].text == ANSWER
    assert [c.turns[-1].text for c in session.side] == [SUB_ANSWER]
    assert session.side[0].metadata["agent_id"] == "a1b2c3d4"


@pytest.mark.parametrize(
    ("content", "line"),
    [
        ('{"resourceSpans": []}\n', 1),  # an OTLP line: no record type
        (
            '{"type": "user", "message": {"role": "user", "content": "hi"}}\nnot json\n{"type": "summary"}\n',
            2,
        ),
        ("[1, 2]\n", 1),
        ('{"type": "queue-operation-v9"}\n', 1),  # only unknown record types: no session
    ],
)
def test_what_is_not_a_session_is_refused_naming_the_line(content: str, line: int) -> None:
    with pytest.raises(ImportInputError, match=rf"^bad\.jsonl, line {line}: "):
        read_session(content.encode(), "bad.jsonl")


# --- through the CLI --------------------------------------------------------------------------------


def test_a_project_folder_is_a_run_that_lists_shows_makes_a_cassette_and_verifies(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    folder = project(tmp_path)
    summary = import_transcript(db, "claude-code", folder)
    # The session: root, 3 LLM spans, 2 TOOL spans; the subagent: root, 2 LLM spans, 1 TOOL span.
    assert summary["spans"] == 10 and summary["traces"] == 1 and summary["duplicates"] == 0
    again = import_transcript(db, "claude-code", folder)
    assert again == {"spans": 0, "traces": 0, "duplicates": 10, "replaced": 0, "run_id": None}
    stored = stored_rows(db)
    assert len(stored) == 10
    assert SECRET not in "\n".join(str(tuple(r)) for r in stored)

    roots = [r for r in stored if r["oi_span_kind"] == "AGENT"]
    session_root = next(r for r in roots if r["parent_span_id"] is None)
    subagent_root = next(r for r in roots if r["parent_span_id"] is not None)
    assert subagent_root["parent_span_id"] == session_root["span_id"]  # the subagent, under its session
    llm = [r for r in stored if r["oi_span_kind"] == "LLM"]
    assert {r["model"] for r in llm} == {MODEL}
    assert {(r["prompt_tokens"], r["completion_tokens"]) for r in llm} == {(350, 20)}
    attributes = json.loads(llm[0]["attributes"])
    assert attributes["llm.token_count.prompt_details.cache_read"] == 300
    assert attributes["llm.provider"] == "anthropic"
    tools = {r["tool_name"]: r for r in stored if r["oi_span_kind"] == "TOOL"}
    assert set(tools) == {"Read", "Bash", "Grep"}
    assert tools["Bash"]["status"] == "error" and tools["Bash"]["status_message"] == MISSING
    assert tools["Read"]["status"] == "ok"
    assert session_root["start_ns"] == 1759309201000000000  # the transcript's own time

    listed = json.loads(run_cli("list", "--json", db=db, check=True).stdout)
    assert len(listed) == 1
    # Priced from the model and the token counts, cache reads and writes at their rates.
    assert listed[0]["cost_usd"] > 0 and listed[0]["unpriced_llm_spans"] == 0
    shown = run_cli("show", str(listed[0]["trace_id"]), "-v", db=db, check=True).stdout
    assert "AGENT" in shown and "Bash" in shown and ANSWER in shown and SUB_ANSWER in shown
    assert SECRET not in shown and "Read the README" in shown

    cassette_path = tmp_path / "cassette.json"
    run_cli("cassette", "--run", summary["run_id"], "-o", str(cassette_path), db=db, check=True)
    assert "PASS  replayability" in run_cli("verify", str(cassette_path), check=True).stdout
    cassette = load_cassette(cassette_path)
    assert verify_cassette(cassette).passed
    results = [s.payload for s in cassette.steps if s.type == "tool_result"]
    assert {"toolName": "Read", "result": README} in [
        {k: r[k] for k in ("toolName", "result") if k in r} for r in results
    ]
    assert any(r.get("toolName") == "Bash" and r.get("error") == MISSING for r in results)


def test_a_session_file_alone_is_one_trace_and_its_truncated_tail_is_tolerated(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    folder = project(tmp_path)
    summary = import_transcript(db, "claude-code", folder / f"{SESSION}.jsonl")
    assert summary["spans"] == 6 and summary["traces"] == 1


def test_a_file_that_is_not_a_session_is_one_line_exit_2_and_nothing_stored(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    folder = project(tmp_path)
    bad = folder / "spans.jsonl"
    bad.write_text('{"resourceSpans": []}\n')
    done = run_cli("import", "--from", "claude-code", str(folder), db=db)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert f"{bad}, line 1: not a Claude Code record" in done.stderr
    assert stored_rows(db) == []
    broken = write_jsonl(
        tmp_path / "broken.jsonl", [*main_session()[:2]], "not json\n" + json.dumps(main_session()[2])
    )
    done = run_cli("import", "--from", "claude-code", str(broken), db=db)
    assert done.returncode == 2 and f"{broken}, line 3: not JSON" in done.stderr
    assert stored_rows(db) == []
    assert run_cli("import", "--from", "claude-code", str(tmp_path / "none"), db=db).returncode == 2
    assert run_cli("import", "--from", "claude-code", "-", db=db).returncode == 2
    codex = run_cli("import", "--from", "codex", str(bad), db=db)
    assert codex.returncode == 2 and "not a Codex rollout record" in codex.stderr  # not a rollout
    assert stored_rows(db) == []


def test_rerun_of_an_imported_session_answers_the_tool_from_the_transcript(
    tmp_path: Path, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-transcript-not-a-real-key")
    db = tmp_path / "bb.db"
    weather = '{"city": "Paris", "temperature_c": 18}'
    # One tool: the fake model calls get_weather(city=Paris) from the question, then answers.
    session = write_jsonl(tmp_path / "weather.jsonl", [
        user("u1", None, 1, "What's the weather in Paris?"),
        assistant("a1", "u1", 2, "msg_1", tool_use("toolu_w", "get_weather", {"city": "Paris"})),
        user("r1", "a1", 3, [tool_result("toolu_w", weather)]),
        assistant("a2", "r1", 4, "msg_2", {"type": "text", "text": "It is 18 C in Paris."}),
    ])  # fmt: skip
    run_id = import_transcript(db, "claude-code", session)["run_id"]
    incident, child, results = rerun_imported_run(
        db, run_id, tmp_path, "anthropic", fake_llm.anthropic_base_url
    )
    assert [(r["toolName"], r.get("result"), r.get("stub")) for r in results] == [
        ("get_weather", weather, None)
    ]
    # The rest of the road a recorded run walks: the diff's verdict, a contract kept and checked, and
    # the child replayed offline (the provider hears nothing).
    diff = json.loads(run_cli("diff", "--json", str(incident), str(child)).stdout)
    assert diff["outcome"]["childStatus"] == "success" and diff["outcome"]["kind"]
    contract = tmp_path / "cassette.contract.json"
    run_cli("eval", "generate", str(child), "-o", str(contract), check=True)
    checked = run_cli("eval", "run", str(contract), str(child))
    assert checked.returncode == 0 and checked.stdout.startswith("PASS"), checked.stdout
    heard = len(fake_llm.requests)
    replayed = run_cli("replay", str(child))
    assert replayed.returncode == 0 and len(fake_llm.requests) == heard, replayed.stderr


def test_an_abandoned_branch_is_left_out_and_a_compaction_is_crossed() -> None:
    records = [
        user("u1", None, 1, "First question"),
        assistant("a1", "u1", 2, "msg_1", {"type": "text", "text": "First answer"}),
        user("x1", "a1", 3, "A question rewound and abandoned"),
        {**record("system", "c1", None, 4, content="Conversation compacted", level="info"),
         "subtype": "compact_boundary", "logicalParentUuid": "a1"},
        user("u2", "c1", 5, "Second question"),
        assistant("a2", "u2", 6, "msg_2", {"type": "text", "text": "Second answer"}),
    ]  # fmt: skip
    session = read_session("".join(json.dumps(r) + "\n" for r in records).encode(), "s.jsonl")
    assert session.main is not None
    assert [(t.role, t.text) for t in session.main.turns] == [
        ("user", "First question"),
        ("assistant", "First answer"),
        ("compaction", ""),
        ("user", "Second question"),
        ("assistant", "Second answer"),
    ]
    assert session.main.skipped == {"branch record": 1}
    # After the compaction the model saw only what follows it: the second request holds one message.
    document = otlp_document(session.main, Keys("t", "s"), 0)
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    inputs = [
        sorted(a["key"] for a in span["attributes"] if a["key"].endswith(".message.content"))
        for span in spans
        if span["name"].startswith("chat")
    ]
    assert [len([k for k in keys if k.startswith("llm.input_messages")]) for keys in inputs] == [1, 1]
