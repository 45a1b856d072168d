"""``fork CASSETTE --at N <change>`` with no program, on a chat log imported: a Claude Code session.

The session is written in the shape Claude Code writes it (the builders of the importer's tests):
the person asks, the assistant reads the README (``Read``), runs the tests (``Bash``), and answers.
It is imported with ``import --from claude-code`` and made a cassette with ``cassette --run``; the
transcript holds no tool definitions, so the cassette offers tools inferred from the calls, and none
of them can run. Each kind of change, at a step that fits it, is continued by the built-in agent on
the fake provider's thorough model, the kinds shared between Anthropic's and OpenAI's Chat
Completions SDKs: the child verifies, shares the parent's steps before N hash for hash, records the
change as its ``edit``, ``diff`` names it first, and every tool result after N is the recording's
(the fake model's arguments are made from the question, not the transcript's, so the calls are
answered by tool name, as a rerun of an imported session is). A call nothing answers stops the
child; a change that does not fit its step: one line, exit 2, and no model call.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fake_llm import THOROUGH_MODEL, FakeLLMServer
from helpers import import_transcript, run_cli, write_jsonl
from test_fork_edit import _keys  # noqa: F401 (autouse: made-up keys, no base URL from the environment)
from test_transcripts_claude_code import assistant, tool_result, tool_use, user

from otel_blackbox._cassette.diff.report import diff_cassettes
from otel_blackbox._cassette.diff.text import format_diff
from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.model import Cassette
from otel_blackbox._cassette.verify import verify_cassette
from otel_blackbox._playback.agent.edit import Edit, start_of
from otel_blackbox._playback.agent.incident import read_incident
from otel_blackbox.errors import BlackboxError

QUESTION = "What does the README say, and do the tests pass?"
README = "# Shop\nA demo shop."
PASSED = "3 passed in 0.12s"
# The imported cassette: 0, 4 and 8 requests; 1 and 5 model outputs (Read's call, Bash's), 9 the
# answer; 2 and 6 tool calls; 3 and 7 tool results (Read's, Bash's); 10 the run's end.
LAYOUT = ["model_input", "model_output", "tool_call", "tool_result"] * 2 + [
    "model_input",
    "model_output",
    "metadata",
]
CALLS = json.dumps([{"toolName": "Bash", "toolInput": {"command": "pytest -x"}}])
BASH = "Run a shell command; it never changes a file."

# (name, options, step, kind, description, provider): each change once, the providers taking turns.
CASES = [
    ("set", ["--set", '"# Shop\\nA shop of hats."'], 3, "tool_result", "tool result of Read", "anthropic"),
    ("set-error", ["--set-error", "pytest: command not found"], 7, "tool_result", "tool error of Bash",
     "openai-chat"),
    ("answer", ["--answer", "I did not run the tests."], 5, "model_output", "model output: an answer",
     "anthropic"),
    ("calls", ["--calls", CALLS], 5, "model_output", "model output: tool calls Bash", "openai-chat"),
    ("user", ["--user", "Show me the README, then run the tests."], 0, "user_message", "user message",
     "anthropic"),
    ("insert-user", ["--insert-user", "Also list the Python files."], 4, "user_message",
     "user message inserted", "openai-chat"),
    ("system", ["--system", "You are a careful coding agent."], 4, "system_prompt", "system prompt",
     "openai-chat"),
    ("tool", ["--tool", "Bash=" + json.dumps({"description": BASH})], 4, "tool_definition",
     "definition of tool Bash", "anthropic"),
]  # fmt: skip


def session() -> list[dict[str, Any]]:
    """A Claude Code session: a question, Read (its call after a line of text), Bash, the answer."""
    bash = {"command": "pytest -q", "description": "Run the tests"}
    return [
        user("u1", None, 1, QUESTION),
        assistant("a1", "u1", 2, "msg_1", {"type": "text", "text": "Let me read it."},
                  tool_use("toolu_01", "Read", {"file_path": "README.md"})),
        user("r1", "a1", 3, [tool_result("toolu_01", README)]),
        assistant("a2", "r1", 4, "msg_2", tool_use("toolu_02", "Bash", bash)),
        user("r2", "a2", 5, [tool_result("toolu_02", PASSED)]),
        assistant("a3", "r2", 6, "msg_3", {"type": "text", "text": "A demo shop; the 3 tests pass."}),
    ]  # fmt: skip


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session imported as a user imports it, and its cassette."""
    folder = tmp_path_factory.mktemp("imported")
    db = folder / "bb.db"
    run_id = import_transcript(db, "claude-code", write_jsonl(folder / "session.jsonl", session()))["run_id"]
    path = folder / "run.json"
    run_cli("cassette", "--run", str(run_id), "-o", str(path), db=db, check=True)
    parent = load_cassette(path)
    assert [s.type for s in parent.steps] == LAYOUT
    assert [t["name"] for t in parent.steps[4].payload["tools"]] == ["Read", "Bash"]  # inferred
    return path


def fork(llm: FakeLLMServer, parent: Path, provider: str, out: Path, *change: str) -> tuple[int, str]:
    base = llm.openai_base_url if provider.startswith("openai") else llm.anthropic_base_url
    done = run_cli(
        "fork", str(parent), *change, "--provider", provider, "--model", THOROUGH_MODEL,
        "--base-url", base, "-o", str(out),
    )  # fmt: skip
    return done.returncode, done.stderr


def outcomes(cassette: Cassette, after: int) -> list[tuple[str, Any, Any]]:
    """The tool results after step ``after``: (tool, result or error, stub mark)."""
    return [
        (s.payload["toolName"], s.payload.get("error", s.payload.get("result")), s.payload.get("stub"))
        for s in cassette.steps_of("tool_result")
        if s.index > after
    ]


@pytest.mark.parametrize(
    ("name", "change", "step", "kind", "described", "provider"), CASES, ids=[c[0] for c in CASES]
)
def test_each_change_on_the_import_continues_with_the_built_in_agent(
    tmp_path: Path,
    fake_llm: FakeLLMServer,
    imported: Path,
    name: str,
    change: list[str],
    step: int,
    kind: str,
    described: str,
    provider: str,
) -> None:
    parent = load_cassette(imported)
    child_path = tmp_path / "child.json"
    heard = len(fake_llm.requests)
    code, stderr = fork(
        fake_llm, imported, provider, child_path, "--at", str(step), *change, "--tool-match", "name"
    )
    assert code == 0, stderr
    sent = [body for _, body in fake_llm.requests[heard:]]
    assert len(sent) == 0 if name == "answer" else len(sent) >= 1  # an answer ends the child there

    child = load_cassette(child_path)
    assert verify_cassette(child).passed
    assert [s.hash for s in child.steps[:step]] == [s.hash for s in parent.steps[:step]]
    assert child.steps[step].hash != parent.steps[step].hash
    assert (child.parent_id, child.forked_from_step_id) == (parent.id, parent.steps[step].id)
    assert child.edit == {"step": step, "kind": kind, "description": described, "by": "command"}
    assert child.agent is not None and child.agent["provider"] == provider
    end = child.steps[-1].payload
    assert end["event"] == "run_completed" and end["status"] == "success"

    report = diff_cassettes(parent, child)
    assert format_diff(report)[0] == f"edited at step {step}: {described}"
    assert report.to_json()["edit"] == child.edit and report.shared_prefix == step

    # No tool ran: every result after the change is one the transcript recorded, none a stub.
    recorded = {(tool, outcome) for tool, outcome, _ in outcomes(parent, -1)}
    after = outcomes(child, step)
    assert all((tool, outcome) in recorded and stub is None for tool, outcome, stub in after), after

    own = child.steps[step].payload
    answer = end.get("result")
    if name == "set":  # the model read the new README, then ran the tests (Bash, from the transcript)
        assert own == {"toolCallId": "call-0", "toolName": "Read", "result": "# Shop\nA shop of hats."}
        assert after == [("Bash", PASSED, None)]
        assert answer == f"Final answer: # Shop\nA shop of hats. | {PASSED}"
    elif name == "set-error":  # both tools called already: the model answers with the error
        assert own["error"] == change[1] and after == []
        assert answer == f"Final answer: {README} | {change[1]}"
    elif name == "answer":
        assert own == {"type": "final_answer", "text": change[1]} and answer == change[1]
        assert len(child.steps) == step + 2
    elif name == "calls":  # numbered after the transcript's highest call id (call-1)
        assert own["calls"] == [
            {"toolCallId": "call-2", "toolName": "Bash", "toolInput": {"command": "pytest -x"}}
        ]
        assert child.steps[step + 2].payload["toolCallId"] == "call-2"  # its result, the recording's
        assert after == [("Bash", PASSED, None)]
    elif name == "user":  # the new question asks the same tools again, each answered from the recording
        assert own["messages"] == [{"role": "user", "content": change[1]}]
        assert after == [("Read", README, None), ("Bash", PASSED, None)]
    elif name == "insert-user":  # a new question after the tool round: the model calls again for it
        assert own["messages"][-1] == {"role": "user", "content": change[1]}
        assert change[1] not in json.dumps(parent.steps[step].payload)
        first = child.steps[step + 1].payload["calls"]
        assert [(c["toolName"], c["toolInput"]) for c in first] == [("Read", {"file_path": "Python"})]
        assert after == [("Read", README, None), ("Bash", PASSED, None)]
    elif name == "system":  # this request and every later one, and sent so
        later = [s.payload.get("systemPrompt") for s in child.steps[step:] if s.type == "model_input"]
        assert len(later) == len(sent) >= 2 and set(later) == {change[1]}
        assert all(body["messages"][0] == {"role": "system", "content": change[1]} for body in sent)
        assert after == [("Bash", PASSED, None)]
    elif name == "tool":  # this request and every later one, and sent so
        tools = [t for s in child.steps[step:] if s.type == "model_input" for t in s.payload["tools"]]
        assert {t["description"] for t in tools if t["name"] == "Bash"} == {BASH}
        assert all(
            [t["description"] for t in body["tools"] if t["name"] == "Bash"] == [BASH] for body in sent
        )
        assert after == [("Bash", PASSED, None)]

    if provider == "anthropic":  # the child replays offline, with the same agent: no request heard
        heard = len(fake_llm.requests)
        replayed = run_cli("replay", str(child_path))
        assert replayed.returncode == 0, replayed.stderr
        assert len(fake_llm.requests) == heard


def test_a_call_the_transcript_never_answered_stops_the_child_and_names_it(
    tmp_path: Path, fake_llm: FakeLLMServer, imported: Path
) -> None:
    """Matched on arguments (the default), a Read of another file has no recorded result: the child
    stops there, naming the call, and no tool ran."""
    child_path = tmp_path / "child.json"
    calls = json.dumps([{"toolName": "Read", "toolInput": {"file_path": "setup.py"}}])
    heard = len(fake_llm.requests)
    code, stderr = fork(fake_llm, imported, "anthropic", child_path, "--at", "5", "--calls", calls)
    assert code == 1
    assert 'Read({"file_path":"setup.py"})' in stderr and "failed (unrecorded_tool_call)" in stderr
    assert len(fake_llm.requests) == heard
    child = load_cassette(child_path)
    assert verify_cassette(child).passed
    assert child.steps[-1].payload["reason"] == "unrecorded_tool_call"
    assert outcomes(child, 5) == []


BAD = [
    (["--at", "11", "--set", "1"], "--at 11: the cassette has steps 0 to 10"),
    (["--at", "4", "--set", "1"], "--set/--set-error changes a tool_result step; step 4 is a model_input"),
    (["--at", "2", "--set", "1"], "step 2 is a tool_call (no change fits it)"),
    (["--at", "0", "--answer", "x"], "--answer/--calls changes a model_output step; step 0 is a model_input"),
    (
        ["--at", "3", "--user", "x"],
        "--user/--insert-user changes a model_input step; step 3 is a tool_result",
    ),
    (
        ["--at", "5", "--calls", json.dumps([{"toolName": "Write", "toolInput": {"file_path": "x"}}])],
        "--calls Write: the request at step 4 offers no such tool (it offers: Read, Bash)",
    ),
    (["--at", "4", "--tool", 'Write={"description": "x"}'], "--tool Write: the request at step 4 offers no"),
]


@pytest.mark.parametrize(("change", "said"), BAD, ids=[" ".join(c[:3]) for c, _ in BAD])
def test_a_change_that_does_not_fit_the_import_is_one_line_exit_2_before_any_model_call(
    tmp_path: Path, fake_llm: FakeLLMServer, imported: Path, change: list[str], said: str
) -> None:
    heard = len(fake_llm.requests)
    child_path = tmp_path / "child.json"
    code, stderr = fork(fake_llm, imported, "openai-chat", child_path, *change)
    assert code == 2 and said in stderr, stderr
    assert len(stderr.strip().splitlines()) == 1, stderr
    assert len(fake_llm.requests) == heard and not child_path.exists()


def test_calls_on_a_request_that_lists_no_tools_are_checked_against_the_tools_called(imported: Path) -> None:
    """An import that recorded no tool definitions: a new call names a tool the recording called;
    with no tool called either, there is nothing to check a name against."""
    parent = load_cassette(imported)
    reader = read_incident(parent, str(imported))
    bare = replace(
        reader, model_inputs=[{k: v for k, v in m.items() if k != "tools"} for m in reader.model_inputs]
    )

    def calls(name: str) -> Edit:
        return Edit("model_output", 5, {"calls": [{"toolName": name, "toolInput": {}}]})

    with pytest.raises(BlackboxError) as refused:
        start_of(parent, bare, calls("Write"))
    assert str(refused.value) == (
        "--calls Write: the request at step 4 lists no tools, the recording never calls it "
        "(it calls: Bash, Read)"
    )
    made = start_of(parent, bare, calls("Read")).seed[-1][1]
    assert made["calls"] == [{"toolCallId": "call-2", "toolName": "Read", "toolInput": {}}]
    unknown = start_of(parent, replace(bare, called=frozenset()), calls("Write")).seed[-1][1]
    assert unknown["calls"][0]["toolName"] == "Write"
