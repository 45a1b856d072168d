"""Every suggestion ``rerun`` and ``blame`` (and ``replay``, ``fork``) print is accepted as printed.

Each test puts the real CLI (a subprocess: helpers.run_cli) against the fake provider in a
situation where it prints a suggestion, takes every suggestion it printed (written between
backticks: otel_blackbox._render.hints), fills in the placeholders the command's --help names
(``--model NAME``, ``-- CMD``, ``--good GOOD.json``...), runs it, and checks that it was accepted: no
exit 2 (usage or unreadable input), no refusal. A suggested run may still fail (exit 1: a branch
that did not succeed, a program's own check). The program incidents are in
test_hints_accepted_program.py.

The hint sites, and where each is run:

- agent/tools.py ``ToolBook.miss`` (rerun): a call the incident did not record, or recorded with no
  result -> ``--stub 'NAME={"ok": true}'`` for a tool the incident offered or called; for a tool the
  model made up, no suggestion (a ``--stub`` naming it is refused, as a typo is);
- agent/tools.py ``parse_stub`` (rerun, blame): ``--stub NAME`` without JSON, ``--stub NAME=12.OO``;
- agent/run.py ``choose_api`` (rerun, blame): ``--provider`` of each API; ``prepare_rerun``: ``--model
  NAME``; blame -- CMD asks for neither;
- agent/run.py ``replay_built_in`` and _cli/playback.py ``replay``: ``otel-blackbox replay X -- CMD``;
- blame.py ``_bisect``: every branch unanswerable, some unanswerable (``--stub``), no correction to try
  (``--good GOOD.json``, ``--stub``); _cli/blame.py: ``otel-blackbox replay CHILD``;
- budget.py ``parse_usd`` (``--max-cost``, "give one such as 0.50"), _cassette/trusted.py
  (``--allow-unverified goes on anyway``: rerun, blame, replay, fork), _cli/playback.py ``--set``
  not JSON (fork): the suggestions not written as a command line, read as the tests read them.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_llm import FakeLLMServer
from helpers import CannedProvider, run_cli

from otel_blackbox._cassette.io import save_cassette
from otel_blackbox._cassette.model import Cassette
from otel_blackbox._cassette.trusted import resealed

QUESTION = {"role": "user", "content": "What is the status of order 42?"}
SCHEMA = {"type": "object", "properties": {"order_id": {"type": "integer"}}, "required": ["order_id"]}
TOOLS = [{"name": "lookup_order", "description": "Look an order up.", "inputSchema": SCHEMA}]
KEY = "sk-hints-test-0123456789"
STUB = ["--stub", 'lookup_order={"ok": true}']
# What a refused suggestion prints besides exit 2, should it ever exit otherwise.
REFUSALS = (
    "No such option",
    "never offered a tool",
    "Usage:",
    "is for the built-in agent",
    "is for a program",
)
_SUGGESTION = re.compile(r"`([^`\n]+)`")
_PLACEHOLDER = re.compile(r"[A-Z]+(\.json)?")


# --- the suggestions: found, filled in, run ------------------------------------------------------------


def suggested(done: subprocess.CompletedProcess[str]) -> list[list[str]]:
    """Every suggestion the command printed (each once, in order), as the words a shell makes of it."""
    return [shlex.split(text) for text in dict.fromkeys(_SUGGESTION.findall(done.stdout + done.stderr))]


def filled(words: list[str], values: dict[str, list[str]]) -> list[str]:
    """The suggestion with its placeholders replaced: ``values`` maps a placeholder (``OPTION
    PLACEHOLDER`` for one after that option, ``NAME=`` for a --stub's tool) to the words it stands for."""
    out: list[str] = []
    for position, word in enumerate(words):
        after = f"{words[position - 1]} {word}" if position else word
        if after in values:
            out += values[after]
        elif word in values:
            out += values[word]
        elif word.startswith("NAME=") and "NAME=" in values:
            out.append(values["NAME="][0] + word.removeprefix("NAME="))
        else:
            out.append(word)
    left = [word for word in out if _PLACEHOLDER.fullmatch(word)]
    assert not left, f"a placeholder the test does not fill: {left} in {words}"
    return out


def accepted(
    base: list[str], suggestion: list[str], values: dict[str, list[str]] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the suggestion: a whole command as it is; options added to ``base`` (before its program,
    or ``-- CMD`` after it), each placeholder filled in. Accepted: no exit 2, no refusal."""
    words = filled(suggestion, values or {})
    if words[0] == "otel-blackbox":
        argv = words[1:]
    elif words[0] == "--":
        argv = [*base, *words]
    else:
        cut = base.index("--") if "--" in base else len(base)
        argv = [*base[:cut], *words, *base[cut:]]
    done = run_cli(*argv)
    assert done.returncode != 2, (argv, done.stderr)
    assert not any(refusal in done.stderr for refusal in REFUSALS), (argv, done.stderr)
    return done


# --- incidents and providers ---------------------------------------------------------------------------


def incident(order_id: int = 7, *, tools: bool = True, killed: bool = False) -> Cassette:
    """A chat run that looked order ``order_id`` up and failed on the tool's error (``killed``: it
    ended during the tool call; ``tools``: the tools it offered are listed)."""
    cassette = Cassette(id="incident-hints", created_at=1, api={"name": "openai-chat", "stream": False})
    call = {"toolCallId": "call-0", "toolName": "lookup_order", "toolInput": {"order_id": order_id}}
    request: dict[str, Any] = {"messages": [QUESTION], "model": "gpt-4o-mini"}
    cassette.append("model_input", {**request, "tools": TOOLS} if tools else request, 2)
    cassette.append("model_output", {"type": "tool_calls", "calls": [call]}, 3)
    cassette.append("tool_call", call, 4)
    if not killed:
        cassette.append(
            "tool_result", {"toolCallId": "call-0", "toolName": "lookup_order", "error": "down"}, 5
        )
        cassette.append("metadata", {"event": "run_failed", "status": "error", "reason": "ToolError"}, 6)
    return cassette


def answered(status: str) -> Cassette:
    """A chat run that completed: order 7 looked up (``status``), then the answer quoting it."""
    cassette = Cassette(id=f"answered-{status}", created_at=1, api={"name": "openai-chat", "stream": False})
    call = {"toolCallId": "call-0", "toolName": "lookup_order", "toolInput": {"order_id": 7}}
    result = {"toolCallId": "call-0", "toolName": "lookup_order", "result": f"order 7 is {status}"}
    cassette.append("model_input", {"messages": [QUESTION], "tools": TOOLS, "model": "gpt-4o-mini"}, 2)
    cassette.append("model_output", {"type": "tool_calls", "calls": [call]}, 3)
    cassette.append("tool_call", call, 4)
    cassette.append("tool_result", result, 5)
    turn = [QUESTION, {"role": "assistant", "content": [{"type": "tool_use", **call}]},
            {"role": "user", "content": [{"type": "tool_result", **result}]}]  # fmt: skip
    cassette.append("model_input", {"messages": turn, "tools": TOOLS, "model": "gpt-4o-mini"}, 6)
    cassette.append("model_output", {"type": "final_answer", "text": f"Order 7 is {status}."}, 7)
    cassette.append("metadata", {"event": "run_completed", "status": "success", "result": status}, 8)
    return cassette


def saved(folder: Path, cassette: Cassette, name: str) -> Path:
    path = folder / name
    save_cassette(cassette, path)
    return path


def completion(message: dict[str, Any]) -> dict[str, Any]:
    """A chat.completion with this assistant message, as the API sends it."""
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": "chatcmpl-hints", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }  # fmt: skip


def calling(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    function = {"name": name, "arguments": json.dumps(arguments)}
    return completion(
        {"content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": function}]}
    )


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch, fake_llm: FakeLLMServer) -> None:
    """Every SDK's key, and its base URL the fake provider (a suggested --provider reaches it)."""
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(name, KEY)
    for name in ("GOOGLE_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_llm.anthropic_base_url)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_llm.gemini_base_url)


# --- rerun and blame: the tool calls nothing answered ----------------------------------------------


def test_a_call_of_an_offered_tool_suggests_a_stub_that_answers_it(tmp_path: Path) -> None:
    path = saved(tmp_path, incident(), "incident.json")
    base = ["rerun", str(path), "-o", str(tmp_path / "child.json")]
    done = run_cli(*base)
    assert done.returncode == 1 and "closest recorded: step 3" in done.stderr, done.stderr
    assert suggested(done) == [STUB]
    assert accepted(base, STUB).returncode == 0  # the stub answered the call

    blame = ["blame", str(path), "--samples", "1", "-o", str(tmp_path / "branches")]
    done = run_cli(*blame)
    assert done.returncode == 1 and "no step found: every branch was unanswerable" in done.stdout
    stub, replay = suggested(done)
    assert stub == STUB and replay[:2] == ["otel-blackbox", "replay"]
    accepted(blame, stub)
    assert "replayed" in accepted(blame, replay).stderr


def test_a_call_recorded_without_its_result_takes_a_stub_though_no_tool_was_listed(tmp_path: Path) -> None:
    """The incident was killed during its call, and listed no tools (a cassette from spans that did
    not record them): the tool it called is one a stub may answer."""
    path = saved(tmp_path, incident(42, tools=False, killed=True), "incident.json")
    bodies = [calling("lookup_order", {"order_id": 42})] * 2 + [completion({"content": "Shipped."})]
    with CannedProvider(bodies) as canned:
        base = ["rerun", str(path), "--base-url", f"{canned.url}/v1", "-o", str(tmp_path / "child.json")]
        done = run_cli(*base)
        assert done.returncode == 1 and "recorded that call (step 2) but no result" in done.stderr
        assert suggested(done) == [STUB]
        assert accepted(base, STUB).returncode == 0


def test_a_tool_the_model_made_up_gets_no_stub_suggested_and_a_stub_for_it_is_refused(tmp_path: Path) -> None:
    path = saved(tmp_path, incident(), "incident.json")
    made_up = "the incident never offered get_weather, so no --stub answers it: the model made up that tool"
    with CannedProvider([calling("get_weather", {"city": "Lisbon"})] * 2) as canned:
        url = f"{canned.url}/v1"
        base = ["rerun", str(path), "--base-url", url, "-o", str(tmp_path / "child.json")]
        done = run_cli(*base)
        assert done.returncode == 1 and made_up in done.stderr, done.stderr
        assert suggested(done) == []
        typo = run_cli(*base, "--stub", 'get_weather={"ok": true}')  # the typo protection holds
        assert typo.returncode == 2 and "never offered a tool of that name" in typo.stderr
        blame = ["blame", str(path), "--base-url", url, "--samples", "1", "-o", str(tmp_path / "branches")]
        done = run_cli(*blame)
    assert done.returncode == 1 and made_up in done.stdout, done.stdout
    (replay,) = suggested(done)
    accepted(blame, replay)


def test_blame_with_nothing_to_correct_suggests_a_good_run_and_a_stub(
    tmp_path: Path, fake_llm: FakeLLMServer
) -> None:
    """The model answers order 7 is lost, which the contract refuses; a branch from the first decision
    asks for order 42, never recorded: no branch succeeds, one is unanswerable, nothing corrected."""
    path = saved(tmp_path, answered("lost"), "incident.json")
    good = saved(tmp_path, answered("shipped"), "good.json")
    contract = tmp_path / "shipped.contract.json"
    contract.write_text(
        json.dumps({"contractVersion": 1, "assertions": [{"kind": "answer_contains", "text": "shipped"}]})
    )
    blame = ["blame", str(path), "--contract", str(contract), "--samples", "1", "-o", str(tmp_path / "b")]
    done = run_cli(*blame)
    assert done.returncode == 1, done.stderr
    reason = next(line for line in done.stdout.splitlines() if line.startswith("no step found"))
    assert (
        "no tool result had a correction to try" in reason and "1 of 2 branches were unanswerable" in reason
    )
    suggestions = suggested(done)
    assert suggestions[:2] == [["--good", "GOOD.json"], STUB], suggestions
    assert accepted(blame, suggestions[0], {"GOOD.json": [str(good)]}).returncode == 0  # its result fixes it
    for suggestion in suggestions[1:]:
        accepted(blame, suggestion)


# --- rerun and blame: setup -------------------------------------------------------------------------


def _short(command: str, path: Path, tmp_path: Path) -> list[str]:
    """``rerun`` or ``blame`` of ``path`` kept to one model call (or one sample a step)."""
    limit = "--samples" if command == "blame" else "--max-turns"
    return [command, str(path), limit, "1", "-o", str(tmp_path / "out")]


@pytest.mark.parametrize("command", ["rerun", "blame"])
def test_an_incident_that_names_no_api_or_no_model_gets_the_options_that_do(
    tmp_path: Path, command: str
) -> None:
    unknown = incident()
    unknown.api = {"name": "somewhere"}
    unknown.steps[0].payload["model"] = "mistral-large"
    path = saved(tmp_path, resealed(unknown), "unknown.json")  # edited here: hashed again
    base = _short(command, path, tmp_path)
    done = run_cli(*base)
    assert done.returncode == 2 and "give --provider" in done.stderr, done.stderr
    suggestions = suggested(done)
    assert [s[0] for s in suggestions] == ["--provider"] * 4
    for suggestion in suggestions:
        accepted(base, suggestion)
    if command == "blame":  # a program's requests name their API: blame -- CMD asks for no --provider
        program = run_cli(*base, "--", sys.executable, "-c", "pass")
        assert program.returncode != 2 and "--provider" not in program.stderr, program.stderr

    nameless = incident()
    del nameless.steps[0].payload["model"]
    path = saved(tmp_path, resealed(nameless), "nameless.json")
    base = [base[0], str(path), *base[2:]]
    done = run_cli(*base)
    assert done.returncode == 2 and "names no model" in done.stderr, done.stderr
    (model,) = suggested(done)
    accepted(base, model, {"--model NAME": ["gpt-4o-mini"]})


@pytest.mark.parametrize("command", ["rerun", "blame"])
def test_a_bad_stub_or_budget_is_answered_with_one_that_is_accepted(tmp_path: Path, command: str) -> None:
    path = saved(tmp_path, incident(), "incident.json")
    base = _short(command, path, tmp_path)
    for bad, instead in [
        ("lookup_order", STUB),
        ("lookup_order=12.OO", ["--stub", 'lookup_order="12.OO"']),
        ("=1", ["--stub", 'NAME={"ok": true}']),
    ]:
        done = run_cli(*base, "--stub", bad)
        assert done.returncode == 2 and suggested(done) == [instead], (bad, done.stderr)
        accepted(base, instead, {"NAME=": ["lookup_order="]})
    done = run_cli(*base, "--max-cost", "fifty cents")
    amount = re.search(r"give one such as (\S+)\)", done.stderr)
    assert done.returncode == 2 and amount is not None, done.stderr
    accepted(base, ["--max-cost", amount.group(1)])


def test_an_unverified_cassette_is_taken_with_the_option_named(tmp_path: Path) -> None:
    """rerun, blame, replay and fork refuse a cassette edited by hand, naming --allow-unverified."""
    edited = incident()
    edited.steps[3].payload["error"] = "down, edited by hand"  # the hashes no longer match
    path = saved(tmp_path, edited, "edited.json")
    child = tmp_path / "child.json"
    program = ["--", sys.executable, "-c", "pass"]
    for base in (
        ["rerun", str(path), "-o", str(child)],
        ["blame", str(path), "--samples", "1", "-o", str(tmp_path / "b")],
        ["replay", str(path), *program],
        ["fork", str(path), "--at", "3", "--set", '"up"', "--live", "-o", str(child), *program],
    ):
        done = run_cli(*base)
        option = re.search(r"(--allow-unverified) goes on anyway", done.stderr)
        assert done.returncode == 2 and option is not None, (base, done.stderr)
        accepted(base, [option.group(1)])


# --- replay and fork -------------------------------------------------------------------------------------


def test_replay_without_a_program_names_the_command_that_replays(tmp_path: Path) -> None:
    program = {"CMD": [sys.executable, "-c", "pass"]}
    recorded = saved(tmp_path, incident(), "program-run.json")  # a program's run: no agent hint
    other = incident()
    other.agent = {"kind": "another-agent"}
    for path in (recorded, saved(tmp_path, other, "other-agent.json")):
        done = run_cli("replay", str(path))
        assert done.returncode == 2 and "give" in done.stderr, done.stderr
        (replay,) = suggested(done)
        assert accepted([], replay, program).returncode == 1  # the program made none of the recorded calls


def test_fork_takes_a_value_that_is_not_json_as_the_string_suggested(tmp_path: Path) -> None:
    path = saved(tmp_path, incident(), "incident.json")
    base = ["fork", str(path), "--at", "3", "--live", "-o", str(tmp_path / "child.json"),
            "--", sys.executable, "-c", "pass"]  # fmt: skip
    done = run_cli(*base[:4], "--set", "declined", *base[4:])
    assert done.returncode == 2 and suggested(done) == [["--set", '"declined"']], done.stderr
    accepted(base, ["--set", '"declined"'])
