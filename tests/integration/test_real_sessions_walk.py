"""Real sessions whole: each shape walked down the road a user takes after `import`.

Each file is written by a test in the shape its tool writes it (the builders of the importers' own
tests): a Claude Code session whose Task calls ran two subagents at once, a project folder of three
sessions, chat logs ending on a hand-off and on a call never answered, a Codex rollout with a
compaction carrying ``replacement_history`` and failed ``apply_patch`` calls, and spans saved as the
OpenTelemetry SDK writes them (``ReadableSpan.to_json``) with an agent used as a tool. Each is
imported, made cassettes with ``cassette --run`` (every conversation: the sub-agents' beside their
parent's, several conversations with ``--each`` after the refusal that lists them), each cassette
verified, the main one rerun by the built-in agent against the fake provider with every tool
answered from the recording (the sub-agent's call included: none runs, none is stubbed), and the
child diffed against it.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fake_llm import THOROUGH_MODEL, FakeLLMServer
from helpers import import_transcript, run_cli, write_jsonl
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from test_transcripts_claude_code_subagents import concurrent_session, project_folder
from test_transcripts_codex_current import LISTING, call, event, item, output, rollout, usage

from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.model import Cassette, terminal_outcome

KEYS = {"OPENAI_API_KEY": "sk-walk-test-0123456789", "ANTHROPIC_API_KEY": "sk-ant-walk-test-0123456789"}


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def _cassettes(db: Path, run_id: str, out: Path, *extra: str) -> list[Path]:
    """``cassette --run`` as a user runs it: the files it says it wrote, each verified."""
    done = run_cli("cassette", "--run", run_id, "-o", str(out), *extra, db=db, check=True)
    paths = [Path(line.split(": ", 1)[0].removeprefix("wrote ")) for line in done.stdout.splitlines()]
    assert paths and all(line.startswith("wrote ") for line in done.stdout.splitlines())
    for path in paths:
        verified = run_cli("verify", str(path))
        assert verified.returncode == 0, verified.stdout
    return paths


def _outcomes(cassette: Cassette) -> list[tuple[str, Any]]:
    return [
        (s.payload["toolName"], s.payload.get("error", s.payload.get("result")))
        for s in cassette.steps_of("tool_result")
    ]


def _rerun_and_diff(incident: Path, provider: str, base_url: str) -> Cassette:
    """The built-in agent reruns ``incident`` on the thorough fake model, every call answered from
    the recording by tool name; the child verifies and `diff` gives its verdict."""
    child = incident.with_name(f"child-{incident.name}")
    done = run_cli(
        "rerun", str(incident), "--provider", provider, "--model", THOROUGH_MODEL, "--base-url", base_url,
        "--tool-match", "name", "-o", str(child),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rerun, recorded = load_cassette(child), load_cassette(incident)
    assert run_cli("verify", str(child)).returncode == 0
    answered = _outcomes(rerun)
    assert answered, "the rerun called no tool"
    # Every tool answered from the recording: a recorded outcome of that tool, none stubbed.
    assert not Counter(answered) - Counter(_outcomes(recorded))
    assert not any(s.payload.get("stub") for s in rerun.steps_of("tool_result"))
    diffed = run_cli("diff", str(incident), str(child))
    assert diffed.returncode in (0, 1), diffed.stderr
    assert diffed.stdout.splitlines()[-1].startswith("outcome: ")
    return rerun


def _run_id(summary: dict[str, Any]) -> str:
    return str(summary["run_id"])


def test_a_claude_code_session_with_concurrent_subagents(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    db = tmp_path / "bb.db"
    concurrent_session(tmp_path / "-home-me-shop")
    run_id = _run_id(import_transcript(db, "claude-code", tmp_path / "-home-me-shop"))
    main, *subagents = _cassettes(db, run_id, tmp_path / "session.json")
    assert [p.name for p in subagents] == ["session.agent-1.json", "session.agent-2.json"]
    parent = load_cassette(main)
    # The main conversation: two Task calls, each answered by its subagent's answer, then the answer.
    assert [s.payload["toolName"] for s in parent.steps_of("tool_call")] == ["Task", "Task"]
    assert terminal_outcome(parent).status == "success"
    assert parent.subagents is not None and len(parent.subagents) == 2
    for path, link in zip(subagents, parent.subagents, strict=True):
        sub = load_cassette(path)
        assert link["cassette"] == path.name and sub.subagent_of is not None
        assert sub.subagent_of["cassette"] == main.name and sub.subagent_of["step"] == link["step"]
        assert parent.steps[link["step"]].payload["toolName"] == "Task"
        answer = terminal_outcome(sub).final_answer
        assert answer and any(answer in str(r) for _, r in _outcomes(parent))
    rerun = _rerun_and_diff(main, "anthropic", fake_llm.anthropic_base_url)
    assert [name for name, _ in _outcomes(rerun)] == ["Task"]  # the subagent's call, from the recording
    # A subagent's own conversation reruns on its own.
    _rerun_and_diff(subagents[0], "anthropic", fake_llm.anthropic_base_url)


def test_a_project_folder_of_three_sessions(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    db, folder = tmp_path / "bb.db", project_folder(tmp_path / "-home-me-shop")
    run_id = _run_id(import_transcript(db, "claude-code", folder))
    refused = run_cli("cassette", "--run", run_id, "-o", str(tmp_path / "all.json"), db=db)
    assert refused.returncode == 2 and "holds 3 conversations" in refused.stderr
    assert len(refused.stderr.splitlines()) == 4 and not list(tmp_path.glob("all*.json"))
    written = _cassettes(db, run_id, tmp_path / "all.json", "--each")
    mains = [p.name for p in written if ".agent-" not in p.name]
    assert mains == ["all.1.json", "all.2.json", "all.3.json"]
    assert len(written) == 5  # the session with subagents has its two beside it
    with_subagents = next(p for p in written if load_cassette(p).subagents)
    _rerun_and_diff(with_subagents, "anthropic", fake_llm.anthropic_base_url)


def _tool(name: str, argument: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {argument: {"type": "string"}}, "required": [argument]}
    return {"type": "function", "function": {"name": name, "description": name, "parameters": schema}}


def _chat(question: str, tool: str, argument: str, *turns: dict[str, Any]) -> dict[str, Any]:
    """A chat log as a benchmark saves it: the system prompt, the question, the tool offered, the turns."""
    system = {"role": "system", "content": "You are an airline agent."}
    messages = [system, {"role": "user", "content": question}, *turns]
    return {"model": "gpt-4o", "tools": [_tool(tool, argument)], "messages": messages}


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    function = {"name": name, "arguments": json.dumps(arguments)}
    calls = [{"id": call_id, "type": "function", "function": function}]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def test_chat_logs_ending_on_a_hand_off_and_on_a_call_never_answered(
    tmp_path: Path, fake_llm: FakeLLMServer
) -> None:
    logs = [
        _chat("Change my flight to Paris", "find_flight", "city",
              _call("c1", "find_flight", {"city": "Paris"}),
              {"role": "tool", "tool_call_id": "c1", "content": "AF1 at 9:00"},
              {"role": "assistant", "content": "I can book AF1 at 9:00."}),
        _chat("Refund my ticket to Rome", "transfer_to_human_agents", "summary",
              _call("c2", "transfer_to_human_agents", {"summary": "Rome"}),
              {"role": "tool", "tool_call_id": "c2", "content": "Transfer successful"}),
        _chat("Cancel my booking to Oslo", "cancel_booking", "city",
              _call("c3", "cancel_booking", {"city": "Oslo"})),
    ]  # fmt: skip
    db = tmp_path / "chats.db"
    run_id = _run_id(import_transcript(db, "chat", write_jsonl(tmp_path / "tau.jsonl", logs)))
    (run,) = json.loads(run_cli("runs", "--json", db=db, check=True).stdout)
    assert run["status"] == "incomplete"
    written = _cassettes(db, run_id, tmp_path / "chat.json", "--each")
    assert [p.name for p in written] == ["chat.1.json", "chat.2.json", "chat.3.json"]
    assert [terminal_outcome(load_cassette(p)).status for p in written] == [
        "success",
        "incomplete",
        "incomplete",
    ]
    assert [load_cassette(p).steps[-1].payload.get("message") for p in written[1:]] == [
        "the call transfer_to_human_agents (call-0) has a result but no model answer after it",
        "the call cancel_booking (call-0) was never answered",
    ]
    rerun = _rerun_and_diff(written[1], "openai-chat", fake_llm.openai_base_url)
    assert _outcomes(rerun) == [("transfer_to_human_agents", "Transfer successful")]


def test_a_codex_rollout_with_a_replacement_history_and_failed_patches(
    tmp_path: Path, fake_llm: FakeLLMServer
) -> None:
    db, records = tmp_path / "codex.db", rollout()
    # After the compaction the agent lists the files again before its patch: each tool it offers is
    # then called in each turn, as the thorough fake model does, and answered from the recording.
    at = next(n for n, r in enumerate(records) if r.get("payload", {}).get("call_id") == "call_p4")
    again = [item(14, call("call_r2", "exec_command", {"cmd": "ls"})), event(14, usage(500, 20))]
    records[at:at] = [*again, item(14, output("call_r2", LISTING))]
    path = write_jsonl(tmp_path / "rollout-2026-02-20T10-00-00-019b1c2d.jsonl", records)
    run_id = _run_id(import_transcript(db, "codex", path))
    (main,) = _cassettes(db, run_id, tmp_path / "codex.json")
    cassette = load_cassette(main)
    # The two patches only their output says failed are tool errors.
    failed = [s.payload["toolName"] for s in cassette.steps_of("tool_result") if "error" in s.payload]
    assert failed == ["apply_patch", "apply_patch"]
    # The request after the compaction holds the replacement history, not two messages.
    assert len(list(cassette.steps_of("model_input"))[-1].payload["messages"]) > 6
    _rerun_and_diff(main, "openai-responses", fake_llm.openai_base_url)


def _sdk_json_spans() -> str:
    """A planner whose tool ran a sub-agent, as ConsoleSpanExporter prints the OpenTelemetry SDK's own
    span JSON: OpenInference attributes on the real SDK's spans."""
    out = io.StringIO()
    provider = TracerProvider(resource=Resource({"service.name": "planner"}), shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=out)))
    tracer = provider.get_tracer("walk")

    def llm(
        inputs: list[tuple[str, str]], output: dict[str, str], tool: str = "", argument: str = ""
    ) -> None:
        attrs: dict[str, Any] = {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o"}
        for i, (role, content) in enumerate(inputs):
            attrs[f"llm.input_messages.{i}.message.role"] = role
            attrs[f"llm.input_messages.{i}.message.content"] = content
        attrs.update({f"llm.output_messages.0.message.{k}": v for k, v in output.items()})
        if tool:
            attrs["llm.tools.0.tool.json_schema"] = json.dumps(_tool(tool, argument))
        tracer.start_span("chat gpt-4o", attributes=attrs).end()

    def asks(call_id: str, tool: str, arguments: str) -> dict[str, str]:
        return {
            "role": "assistant",
            "tool_calls.0.tool_call.id": call_id,
            "tool_calls.0.tool_call.function.name": tool,
            "tool_calls.0.tool_call.function.arguments": arguments,
        }

    def tool_span(name: str, arguments: str, result: str) -> dict[str, str]:
        return {
            "openinference.span.kind": "TOOL",
            "tool.name": name,
            "input.value": arguments,
            "output.value": result,
        }

    with tracer.start_as_current_span("planner", attributes={"openinference.span.kind": "AGENT"}):
        llm([("user", "Plan Paris")], asks("p1", "ask_weather", '{"input": "Paris"}'), "ask_weather", "input")
        with (
            tracer.start_as_current_span(
                "ask_weather", attributes=tool_span("ask_weather", '{"input": "Paris"}', "Sunny in Paris")
            ),
            tracer.start_as_current_span("weather agent", attributes={"openinference.span.kind": "AGENT"}),
        ):
            llm([("user", "Paris")], asks("w1", "get_weather", '{"city": "Paris"}'), "get_weather", "city")
            tracer.start_span(
                "get_weather", attributes=tool_span("get_weather", '{"city": "Paris"}', "sunny")
            ).end()
            llm(
                [("user", "Paris")],
                {"role": "assistant", "content": "Sunny in Paris"},
                "get_weather",
                "city",
            )
        llm(
            [("user", "Plan Paris")],
            {"role": "assistant", "content": "Go: it is sunny in Paris."},
            "ask_weather",
            "input",
        )
    provider.shutdown()  # fmt: skip
    return out.getvalue()


def test_spans_saved_as_the_sdk_writes_them(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    db, path = tmp_path / "sdk.db", tmp_path / "console-spans.txt"
    path.write_text(_sdk_json_spans())
    run_id = _run_id(import_transcript(db, "otel-sdk-json", path))
    main, sub = _cassettes(db, run_id, tmp_path / "planner.json")
    assert sub.name == "planner.agent-1.json"
    assert [s.payload["toolName"] for s in load_cassette(main).steps_of("tool_call")] == ["ask_weather"]
    assert [s.payload["toolName"] for s in load_cassette(sub).steps_of("tool_call")] == ["get_weather"]
    rerun = _rerun_and_diff(main, "openai-chat", fake_llm.openai_base_url)
    assert _outcomes(rerun) == [("ask_weather", "Sunny in Paris")]  # the sub-agent's answer, recorded
