"""Chat logs that stop before the model's last word are incomplete, and each chat log of a file keeps a
timeline of its own: `import --from chat` of JSON Lines, then list, runs and show."""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from helpers import import_transcript, run_cli, stored_rows
from test_transcripts_chat import QUESTION, chat_call, openai_chat, openai_responses

HANDOFF = "the call transfer_to_human_agents (call_ab12) has a result but no model answer after it"
UNANSWERED = "the call get_weather (call_1) was never answered"
ROME = "What's the weather in Rome?"


def handed_off() -> dict[str, Any]:
    """A support conversation that ends as the agent hands the customer to a person."""
    transfer = {
        "id": "call_ab12", "type": "function",
        "function": {"name": "transfer_to_human_agents", "arguments": '{"summary": "refund over the limit"}'},
    }  # fmt: skip
    return {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "You are an airline's support agent."},
            {"role": "user", "content": "I want a refund of 900 EUR for my cancelled flight."},
            {"role": "assistant", "content": None, "tool_calls": [transfer]},
            {"role": "tool", "tool_call_id": "call_ab12", "content": "Transfer successful"},
        ],
    }  # fmt: skip


def unanswered() -> dict[str, Any]:
    """A log cut after the model asked for a tool: the call never got its result."""
    return {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "user", "content": ROME},
            {"role": "assistant", "content": None, "tool_calls": [chat_call("call_1", "get_weather")]},
        ],
    }


def roots_by_question(db: Path) -> dict[str, dict[str, Any]]:
    return {
        json.loads(r["attributes"])["input.value"]: {**dict(r), "attributes": json.loads(r["attributes"])}
        for r in stored_rows(db)
        if r["parent_span_id"] is None
    }


def test_hand_offs_and_unanswered_calls_are_incomplete_in_list_runs_and_show(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    lines = tmp_path / "support.jsonl"
    logs = [openai_chat(), handed_off(), openai_responses("Weather in Lyon?"), unanswered()]
    lines.write_text("".join(json.dumps(log) + "\n" for log in logs))
    summary = import_transcript(db, "chat", lines)
    assert summary["traces"] == 4
    roots = roots_by_question(db)
    incomplete = {q: (r["status"], r["attributes"].get("blackbox.run.incomplete")) for q, r in roots.items()}
    assert incomplete == {
        QUESTION: ("ok", None),
        "I want a refund of 900 EUR for my cancelled flight.": ("unset", HANDOFF),
        "Weather in Lyon?": ("ok", None),
        ROME: ("unset", UNANSWERED),
    }
    listed = json.loads(run_cli("list", "--json", db=db, check=True).stdout)
    by_trace = {t["trace_id"]: t for t in listed}
    for root in roots.values():
        expected = "incomplete" if root["status"] == "unset" else "ok"
        assert by_trace[root["trace_id"]]["status"] == expected
    assert sorted(t["status"] for t in listed) == ["incomplete", "incomplete", "ok", "ok"]
    text = run_cli("list", db=db, check=True).stdout.splitlines()
    column = text[0].index("STATUS")  # "incomplete" widens the column: every row's status is in it
    statuses = [line[column:].split()[0] for line in text[1:]]
    assert sorted(statuses) == ["incomplete", "incomplete", "ok", "ok"]
    (run,) = json.loads(run_cli("runs", "--json", db=db, check=True).stdout)
    assert (run["run_id"], run["status"], run["incomplete_count"]) == (summary["run_id"], "incomplete", 2)
    assert " incomplete " in run_cli("runs", db=db, check=True).stdout.splitlines()[1]
    handoff = next(t for t in listed if t["incomplete"] == HANDOFF)
    shown = run_cli("show", handoff["trace_id"], db=db, check=True).stdout.splitlines()
    assert " INCOMPLETE " in shown[0] and shown[1] == f"incomplete: {HANDOFF}"
    # The model's hand-off is a TOOL span like any other, with its result.
    tools = [r for r in stored_rows(db) if r["tool_name"] == "transfer_to_human_agents"]
    assert [(r["status"], json.loads(r["attributes"])["output.value"]) for r in tools] == [
        ("ok", "Transfer successful")
    ]


def test_each_chat_log_of_a_file_keeps_its_own_timeline(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    lines = tmp_path / "chats.jsonl"
    logs = [openai_chat(f"{QUESTION} ({n})") for n in range(3)] + [handed_off()]
    lines.write_text("".join(json.dumps(log) + "\n" for log in logs))
    mtime = 1_760_000_000 * 10**9
    os.utime(lines, ns=(mtime, mtime))
    import_transcript(db, "chat", lines)
    spans: dict[str, list[tuple[int, int]]] = {}
    for row in stored_rows(db):
        spans.setdefault(row["trace_id"], []).append((row["start_ns"], row["end_ns"]))
    roots = sorted(roots_by_question(db).values(), key=lambda r: r["start_ns"])
    # In the file's order: the first at the file's time, each next one after the one before ends.
    assert [r["attributes"]["input.value"] for r in roots] == [f"{QUESTION} ({n})" for n in range(3)] + [
        "I want a refund of 900 EUR for my cancelled flight."
    ]
    assert roots[0]["start_ns"] == mtime
    windows = [
        (min(s for s, _ in spans[r["trace_id"]]), max(e for _, e in spans[r["trace_id"]])) for r in roots
    ]
    for (_, end), (start, _) in itertools.pairwise(windows):
        assert start == end + 1_000_000


def test_the_reason_is_read_from_a_root_whose_attributes_are_stored_apart(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    long = unanswered()
    long["messages"][0]["content"] = "Where should I travel? " + "Tell me about Rome. " * 500
    path = tmp_path / "long.json"
    path.write_text(json.dumps(long))
    import_transcript(db, "chat", path)
    with closing(sqlite3.connect(db)) as conn:
        (own,) = conn.execute("SELECT attributes FROM span_rows WHERE parent_span_id IS NULL").fetchone()
    assert '"blackbox.stored_apart":true' in own and len(own) < 2048  # the row keeps a summary
    (listed,) = json.loads(run_cli("list", "--json", db=db, check=True).stdout)
    assert (listed["status"], listed["incomplete"]) == ("incomplete", UNANSWERED)
