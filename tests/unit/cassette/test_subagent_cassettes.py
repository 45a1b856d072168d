"""One conversation, one cassette: sub-agents apart and linked, several conversations never merged.

The agents here are real: the OpenAI Agents SDK with two agents used as tools (``Agent.as_tool``),
which the SDK runs concurrently, recorded by the processor through OpenInference's instrumentor
against examples/fake_llm.py. In one sequence their spans interleave (the planner's calls, then the
two sub-agents' alternately): ``cassette`` refused it. Now the planner's cassette has each sub-agent
as one tool call answered by its result, each sub-agent's conversation is a cassette beside it,
linked both ways, each verifies, reruns with every tool answered from the recording, and diffs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_llm import THOROUGH_MODEL, FakeLLMServer
from helpers import import_transcript, run_cli, write_jsonl

from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.model import tool_call_sequence
from otel_blackbox._cassette.verify import verify_cassette

PROGRAM = Path(__file__).parents[2] / "programs" / "subagent_tools_agent.py"


def _record(db: Path, base_url: str, *questions: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    argv = [sys.executable, str(PROGRAM), "--base-url", base_url, "--db", str(db)]
    for question in questions:
        argv += ["--question", question]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _only_run(db: Path) -> str:
    (run,) = json.loads(run_cli("runs", "--json", db=db, check=True).stdout)
    return str(run["run_id"])


@pytest.fixture(scope="module")
def planner_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("planner") / "blackbox.db"
    with FakeLLMServer() as server:
        answer = _record(db, server.openai_base_url, "Plan my Saturday in Paris: ask both.")
    assert "sunny in Paris" in answer and "jazz concert in Paris" in answer
    return db


def test_each_sub_agent_is_a_cassette_beside_its_parents_linked_both_ways(
    planner_run: Path, tmp_path: Path
) -> None:
    (trace,) = json.loads(run_cli("list", "--json", db=planner_run, check=True).stdout)
    main = tmp_path / "planner.json"
    done = run_cli("cassette", trace["trace_id"], "-o", str(main), db=planner_run, check=True)
    lines = done.stdout.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith(f"wrote {main}: ") and lines[0].endswith("; 2 sub-agents beside it")
    assert lines[1].endswith("sub-agent of planner.json, answering ask_weather at step 2")
    assert lines[2].endswith("sub-agent of planner.json, answering ask_calendar at step 4")

    parent = load_cassette(main)
    weather = load_cassette(tmp_path / "planner.agent-1.json")
    calendar = load_cassette(tmp_path / "planner.agent-2.json")
    for cassette in (parent, weather, calendar):
        report = verify_cassette(cassette)
        assert report.passed, report.first_failure
    # The planner's own conversation: two tool calls, each answered by a sub-agent's answer.
    assert tool_call_sequence(parent) == ["ask_weather", "ask_calendar"]
    results = [s.payload["result"] for s in parent.steps_of("tool_result")]
    assert weather.steps[-1].payload["result"] in results[0]
    assert calendar.steps[-1].payload["result"] in results[1]
    assert tool_call_sequence(weather) == ["get_weather"]
    assert tool_call_sequence(calendar) == ["list_events"]
    # Each sub-agent's conversation opens with its own question, not the planner's.
    assert weather.steps[0].payload["messages"][0]["content"] == "Paris"
    assert weather.steps[0].payload["systemPrompt"] == "You tell the weather."

    # Linked both ways: the parent's step that started each, the call its result answers, the file.
    assert parent.subagents is not None
    assert [(link["cassette"], link["step"], link["toolName"]) for link in parent.subagents] == [
        ("planner.agent-1.json", 2, "ask_weather"),
        ("planner.agent-2.json", 4, "ask_calendar"),
    ]
    for sub, link in zip((weather, calendar), parent.subagents, strict=True):
        assert sub.id == link["id"]
        assert sub.subagent_of == {
            "id": parent.id,
            "cassette": "planner.json",
            "step": link["step"],
            "toolCallId": link["toolCallId"],
            "toolName": link["toolName"],
        }
        assert parent.steps[link["step"]].type == "tool_call"
        assert parent.steps[link["step"]].payload["toolCallId"] == link["toolCallId"]
    # The links are outside the hash chain: the compressed form keeps them too.
    run_cli("cassette", trace["trace_id"], "-o", str(tmp_path / "p.json.gz"), db=planner_run, check=True)
    assert load_cassette(tmp_path / "p.agent-2.json.gz").subagent_of["cassette"] == "p.json.gz"  # type: ignore[index]


@pytest.mark.parametrize("which", ["planner.json", "planner.agent-1.json"])
def test_the_parent_and_a_sub_agent_rerun_on_their_own_with_every_tool_from_the_recording(
    planner_run: Path, tmp_path: Path, which: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-subagent-test-0123456789")
    run_cli(
        "cassette",
        "--run",
        _only_run(planner_run),
        "-o",
        str(tmp_path / "planner.json"),
        db=planner_run,
        check=True,
    )
    incident, child = tmp_path / which, tmp_path / f"child-{which}"
    with FakeLLMServer() as server:
        done = run_cli(
            "rerun", str(incident), "--provider", "openai-responses", "--model", THOROUGH_MODEL,
            "--base-url", server.openai_base_url, "-o", str(child),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        # Only the model was called: the sub-agents' (and their tools') work came from the recording.
        models = [body.get("model") for _, body in server.requests]
    answered = 2 if which == "planner.json" else 1
    assert f"{answered} tool result{'s' if answered > 1 else ''} from the incident" in done.stderr
    assert models == [THOROUGH_MODEL] * 2
    rerun = load_cassette(child)
    assert verify_cassette(rerun).passed
    assert tool_call_sequence(rerun) == tool_call_sequence(load_cassette(incident))
    diffed = run_cli("diff", str(incident), str(child))
    assert diffed.stdout.splitlines()[-1].startswith("outcome: no behavioural change")


def test_several_agent_runs_of_one_process_are_refused_listed_or_written_each(tmp_path: Path) -> None:
    db = tmp_path / "blackbox.db"
    with FakeLLMServer() as server:
        _record(db, server.openai_base_url, "Plan my Saturday in Paris: ask both.", "What is on in Lyon?")
    run_id = _only_run(db)
    out = tmp_path / "run.json"
    refused = run_cli("cassette", "--run", run_id, "-o", str(out), db=db)
    assert refused.returncode == 2 and not out.exists()
    head, *listed = refused.stderr.splitlines()
    assert head.startswith(f"otel-blackbox: error: run {run_id} holds 2 conversations")
    assert "--each writes one cassette each" in head
    assert len(listed) == 2
    # Each listed command is accepted and writes that conversation's cassette.
    for n, line in enumerate(listed, 1):
        command = line.split(": ", 1)[1]
        assert command.startswith(f"otel-blackbox --db {db} cassette ")
        argv = command.split()[3:]  # after "otel-blackbox --db DB"
        assert run_cli(*argv, db=db, check=True).returncode == 0
        assert verify_cassette(load_cassette(tmp_path / f"run.{n}.json")).passed

    each = run_cli("cassette", "--run", run_id, "--each", "-o", str(out), db=db, check=True)
    written = [line.split(":", 1)[0].removeprefix("wrote ") for line in each.stdout.splitlines()]
    assert written == [
        str(tmp_path / name)
        for name in (
            "run.1.json",
            "run.1.agent-1.json",
            "run.1.agent-2.json",
            "run.2.json",
            "run.2.agent-1.json",
        )
    ]
    first, second = load_cassette(tmp_path / "run.1.json"), load_cassette(tmp_path / "run.2.json")
    assert first.steps[0].payload["messages"][0]["content"] == "Plan my Saturday in Paris: ask both."
    assert second.steps[0].payload["messages"][0]["content"] == "What is on in Lyon?"
    assert (first.id, second.id) == (f"run-{run_id}-1", f"run-{run_id}-2")
    one = run_cli("cassette", "--run", run_id, "--conversation", "2", "-o", str(tmp_path / "two.json"), db=db)
    assert one.returncode == 0, one.stderr
    assert load_cassette(tmp_path / "two.json").steps[0].payload == second.steps[0].payload
    missing = run_cli(
        "cassette", "--run", run_id, "--conversation", "3", "-o", str(tmp_path / "x.json"), db=db
    )
    assert missing.returncode == 2
    assert (
        missing.stderr.strip()
        == f"otel-blackbox: error: run {run_id} holds 2 conversations: there is no conversation 3"
    )


def _chat(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"model": "gpt-4o", "messages": list(messages)}


def _call(call_id: str, name: str, arguments: str = "{}") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        ],
    }


def test_a_conversation_that_answered_then_called_a_tool_last_is_incomplete_and_verifies(
    tmp_path: Path,
) -> None:
    """An answer earlier in the conversation is not how it ended: the cassette says incomplete, why,
    and verifies (it was labelled success, and `verify` refused it)."""
    log = _chat(
        {"role": "user", "content": "Is flight AB12 on time?"},
        _call("call_1", "flight_status", '{"flight": "AB12"}'),
        {"role": "tool", "tool_call_id": "call_1", "content": "on time"},
        {"role": "assistant", "content": "Yes, it is on time."},
        {"role": "user", "content": "Then book me a seat."},
        _call("call_2", "transfer_to_human_agents"),
        {"role": "tool", "tool_call_id": "call_2", "content": "Transfer successful"},
    )
    db = tmp_path / "chats.db"
    import_transcript(db, "chat", write_jsonl(tmp_path / "chats.jsonl", [log]))
    (trace,) = json.loads(run_cli("list", "--json", db=db, check=True).stdout)
    out = tmp_path / "c.json"
    done = run_cli("cassette", trace["trace_id"], "-o", str(out), db=db, check=True)
    why = "the call transfer_to_human_agents (call-1) has a result but no model answer after it"
    assert f"outcome incomplete ({why})" in done.stdout
    cassette = load_cassette(out)
    assert cassette.steps[-1].payload["event"] == "run_ended"
    assert cassette.steps[-1].payload["reason"] == "no_final_answer"
    assert verify_cassette(cassette).passed
    assert run_cli("verify", str(out)).returncode == 0


def test_the_workbench_and_the_mcp_tool_refuse_a_run_of_several_conversations(tmp_path: Path) -> None:
    """Every way to a run's cassette holds one conversation: the MCP tool and the workbench name the
    traces instead of merging them (each trace is still one cassette)."""
    from otel_blackbox._mcp.cassettes import write_cassette
    from otel_blackbox._store import runs
    from otel_blackbox._store.connection import connect_reader
    from otel_blackbox._web.workspace import Target, incident_of
    from otel_blackbox.errors import CassetteError

    db = tmp_path / "blackbox.db"
    with FakeLLMServer() as server:
        _record(db, server.openai_base_url, "What is on in Lyon?", "What is on in Nice?")
    run_id = _only_run(db)
    traces = [t["trace_id"] for t in json.loads(run_cli("list", "--json", db=db, check=True).stdout)]
    with pytest.raises(CassetteError, match="holds 2 conversations") as refused:
        write_cassette(db, str(tmp_path / "run.json"), run_id=run_id)
    assert all(t in str(refused.value) for t in traces) and not (tmp_path / "run.json").exists()
    conn = connect_reader(db)
    try:
        spans = runs.run_spans(conn, run_id)
        with pytest.raises(CassetteError, match="holds 2 conversations"):
            incident_of(spans, Target("run", run_id))
    finally:
        conn.close()
    for n, trace in enumerate(traces):
        written = json.loads(write_cassette(db, str(tmp_path / f"t{n}.json"), trace_id=trace))
        assert written["outcome"] == "success"


def test_the_mcp_tool_writes_the_sub_agents_beside_the_parent(planner_run: Path, tmp_path: Path) -> None:
    from otel_blackbox._mcp.cassettes import write_cassette

    (trace,) = json.loads(run_cli("list", "--json", db=planner_run, check=True).stdout)
    answer = json.loads(write_cassette(planner_run, str(tmp_path / "p.json"), trace_id=trace["trace_id"]))
    assert answer["outcome"] == "success" and answer["path"] == str(tmp_path / "p.json")
    assert [(s["path"], s["toolName"], s["outcome"]) for s in answer["subagents"]] == [
        (str(tmp_path / "p.agent-1.json"), "ask_weather", "success"),
        (str(tmp_path / "p.agent-2.json"), "ask_calendar", "success"),
    ]
    parent = load_cassette(tmp_path / "p.json")
    assert [link["cassette"] for link in parent.subagents or []] == ["p.agent-1.json", "p.agent-2.json"]
    assert all(verify_cassette(load_cassette(Path(s["path"]))).passed for s in answer["subagents"])
