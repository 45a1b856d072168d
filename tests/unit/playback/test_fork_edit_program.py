"""``fork --at N <change> -- CMD``: every change a fork makes, with the program continuing the run.

On the demo's refund incident (examples/handoff_agent.py, the OpenAI Agents SDK on the Responses API,
recorded with ``record -- CMD`` against the fake provider): each of the eight changes forked through
the CLI with --stub-tools, continued --live (the fake model) or from a --script. The child verifies,
shares the parent's steps before N by hash, records its ``edit``, ``diff`` names it first, no tool
ran (the ledger stays empty), and the change reached the model: the fake provider's requests show it,
or the child holds the edited output. Then the Gemini program (tests/programs/gemini_agent.py), the
rewrites on the request bodies the real SDKs send, and the changes refused before the program runs.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fake_llm import FakeLLMServer
from helpers import EXAMPLES, PROGRAMS, REFUND_QUESTION, run_cli
from test_provider_replace_tool_result import APIS, QUESTION

from otel_blackbox._cassette.diff.report import diff_cassettes
from otel_blackbox._cassette.diff.text import format_diff
from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.model import Cassette
from otel_blackbox._cassette.verify import verify_cassette
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.registry import provider_for

JSON = dict[str, Any]


@dataclass(frozen=True)
class Parent:
    path: Path
    cassette: Cassette
    program: list[str]
    ledger: Path  # one line per refund that went through


@dataclass(frozen=True)
class Forked:
    stdout: str
    stderr: str
    child: Cassette
    sent: list[JSON]  # what the fake provider received during the fork


@pytest.fixture(scope="module")
def refund(fake_llm: FakeLLMServer, tmp_path_factory: pytest.TempPathFactory) -> Parent:
    """The refund incident: the sloppy model types 12.00 as "12.OO", the refund fails (step 9)."""
    folder = tmp_path_factory.mktemp("refund")
    ledger = folder / "ledger.txt"
    program = [
        sys.executable, str(EXAMPLES / "handoff_agent.py"), "--question", REFUND_QUESTION,
        "--model", "sloppy", "--ledger", str(ledger), "--base-url", fake_llm.openai_base_url,
        "--db", str(folder / "blackbox.db"),
    ]  # fmt: skip
    path = folder / "incident.json"
    recorded = run_cli("record", "-o", str(path), "--", *program)
    assert recorded.returncode == 0, recorded.stderr
    cassette = load_cassette(path)
    kinds = ["model_input", "model_output", *["tool_call", "tool_result"] * 2] * 2
    assert [s.type for s in cassette.steps] == [*kinds[:10], "model_input", "model_output", "metadata"]
    assert cassette.steps[9].payload["toolName"] == "refund_order" and "error" in cassette.steps[9].payload
    assert not ledger.exists()
    return Parent(path, cassette, program, ledger)


def fork(
    parent: Parent,
    fake: FakeLLMServer,
    folder: Path,
    *change: str,
    script: list[JSON] | None = None,
    stub: bool = True,
) -> Forked:
    """``fork PARENT <change>`` with the program (its tools stubbed), --live or from ``script``."""
    how = ["--live"]
    if script is not None:
        (folder / "script.json").write_text(json.dumps(script))
        how = ["--script", str(folder / "script.json")]
    child = folder / "child.json"
    before = len(fake.requests)
    options = [*how, *(["--stub-tools"] if stub else []), "-o", str(child)]
    done = run_cli("fork", str(parent.path), *change, *options, "--", *parent.program)
    assert done.returncode == 0, done.stderr
    return Forked(done.stdout, done.stderr, load_cassette(child), [b for _, b in fake.requests[before:]])


def check_child(parent: Parent, child: Cassette, step: int, kind: str, description: str) -> None:
    """The child's shape, as the built-in agent's fork has it; and no tool ran."""
    assert verify_cassette(child).passed
    assert (child.parent_id, child.forked_from_step_id) == (
        parent.cassette.id,
        parent.cassette.steps[step].id,
    )
    assert [s.hash for s in child.steps[:step]] == [s.hash for s in parent.cassette.steps[:step]]
    assert child.edit == {"step": step, "kind": kind, "description": description, "by": "command"}
    assert format_diff(diff_cassettes(parent.cassette, child))[0] == f"edited at step {step}: {description}"
    assert not parent.ledger.exists()  # every tool answered from the parent, or told the model it failed


def user_says(item: JSON, text: str) -> bool:
    return item.get("role") == "user" and item.get("content") == text


# --- a tool_result ---------------------------------------------------------------------------------


def test_set_the_refund_result_scripted_and_diff_names_the_edit_first(
    refund: Parent, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    answer = {"type": "final_answer", "text": "Refunded 12.00 on order Alpha."}
    done = fork(
        refund, fake_llm, tmp_path, "--at", "9", "--set", '"refunded 12.00 on order Alpha"', script=[answer]
    )
    assert done.stdout.splitlines()[-1] == answer["text"] and done.sent == []  # no model was called
    check_child(refund, done.child, 9, "tool_result", "tool result of refund_order")
    assert done.child.steps[9].payload == {
        "toolCallId": "call-2", "toolName": "refund_order", "result": "refunded 12.00 on order Alpha",
    }  # fmt: skip
    results = [p for m in done.child.steps[10].payload["messages"] if isinstance(m["content"], list)
               for p in m["content"] if p["type"] == "tool_result"]  # fmt: skip
    assert results[-1] == {**done.child.steps[9].payload, "type": "tool_result"}  # what the model was sent
    diff = run_cli("diff", str(refund.path), str(tmp_path / "child.json"))
    assert diff.stdout.splitlines()[0] == "edited at step 9: tool result of refund_order", diff.stdout


def test_set_error_the_lookup_live_the_model_is_told_it_failed(
    refund: Parent, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    error = "the order service is down"
    done = fork(refund, fake_llm, tmp_path, "--at", "3", "--set-error", error)
    check_child(refund, done.child, 3, "tool_result", "tool error of lookup_order")
    assert done.child.steps[3].payload == {"toolCallId": "call-0", "toolName": "lookup_order", "error": error}
    assert len(done.sent) == 2  # the refund agent's two calls, after the fork
    for body in done.sent:
        (output,) = [
            i for i in body["input"] if i.get("type") == "function_call_output" and i["call_id"] == "call-0"
        ]
        assert output["output"] == error  # the Responses API has no error mark: its text


# --- a model_output --------------------------------------------------------------------------------


def test_answer_instead_of_the_refund_call_ends_the_run_there(
    refund: Parent, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    text = "I cannot refund this order: please call us."
    done = fork(refund, fake_llm, tmp_path, "--at", "7", "--answer", text, script=[])
    assert done.stdout.splitlines()[-1] == text and done.sent == []
    check_child(refund, done.child, 7, "model_output", "model output: an answer")
    assert done.child.steps[7].payload == {"type": "final_answer", "text": text}
    assert done.child.steps[-1].payload == {"event": "run_completed", "status": "success", "result": text}


def test_calls_the_refund_with_a_number_live_the_call_is_numbered_after_the_parents(
    refund: Parent, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    calls = [{"toolName": "refund_order", "toolInput": {"order_id": "Alpha", "amount": 12.0}}]
    done = fork(refund, fake_llm, tmp_path, "--at", "7", "--calls", json.dumps(calls))
    check_child(refund, done.child, 7, "model_output", "model output: tool calls refund_order")
    call = {"toolCallId": "call-3", **calls[0]}  # the parent's highest is call-2
    assert done.child.steps[7].payload == {"type": "tool_calls", "calls": [call]}
    assert (done.child.steps[8].type, done.child.steps[8].payload) == ("tool_call", call)
    # The parent recorded no refund of 12.0: the stub told the model the call failed; nothing ran.
    assert "refund_order" in done.stderr and "did not record" in done.stderr
    (sent, *_) = done.sent
    (made,) = [i for i in sent["input"] if i.get("type") == "function_call" and i["call_id"] == "call-3"]
    assert json.loads(made["arguments"]) == calls[0]["toolInput"]


# --- a model_input ---------------------------------------------------------------------------------


def test_user_message_replaced_at_the_first_request_and_every_later_one(
    refund: Parent, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    text = "Look up my order Beta and refund 7.00 on it, both please."
    done = fork(refund, fake_llm, tmp_path, "--at", "0", "--user", text)
    check_child(refund, done.child, 0, "user_message", "user message")
    assert len(done.sent) == 3
    for body in done.sent:  # the conversation the program keeps still says Alpha: rewritten each time
        assert user_says(body["input"][0], text)
        assert REFUND_QUESTION not in json.dumps(body)
    assert done.child.steps[0].payload["messages"] == [{"role": "user", "content": text}]
    assert done.child.steps[1].payload["calls"][0]["toolInput"] == {"order_id": "Beta"}  # the model read it


def test_insert_user_at_the_last_request_stays_in_its_place_in_the_next(
    refund: Parent, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    text = "Please try the refund again."
    done = fork(refund, fake_llm, tmp_path, "--at", "10", "--insert-user", text)
    check_child(refund, done.child, 10, "user_message", "user message inserted")
    first, later = done.sent  # the model, asked again, called refund_order once more, then answered
    assert user_says(first["input"][-1], text)
    assert later["input"][: len(first["input"])] == first["input"]  # at its place, the new round after
    assert done.child.steps[10].payload["messages"][-1] == {"role": "user", "content": text}
    assert done.child.steps[11].payload["type"] == "tool_calls"  # the model acted on the new message


def test_system_prompt_of_the_refund_agent_in_every_request_from_there(
    refund: Parent, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    text = "You refund orders. Refund exactly what was paid, as a number: 12.00."
    done = fork(refund, fake_llm, tmp_path, "--at", "6", "--system", text)
    check_child(refund, done.child, 6, "system_prompt", "system prompt")
    assert [body["instructions"] for body in done.sent] == [text, text]
    prompts = [s.payload.get("systemPrompt") for s in done.child.steps if s.type == "model_input"]
    assert prompts == [refund.cassette.steps[0].payload["systemPrompt"], text, text]


def test_tool_definition_of_refund_order_in_every_request_from_there(
    refund: Parent, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    (tool,) = refund.cassette.steps[6].payload["tools"]
    schema = json.loads(json.dumps(tool["inputSchema"]))
    schema["properties"]["amount"]["description"] = "A number, digits only: 12.00"
    definition = {"description": "Refund the amount paid for an order.", "inputSchema": schema}
    done = fork(refund, fake_llm, tmp_path, "--at", "6", "--tool", f"refund_order={json.dumps(definition)}")
    check_child(refund, done.child, 6, "tool_definition", "definition of tool refund_order")
    assert len(done.sent) == 2
    for body in done.sent:
        (sent,) = [t for t in body["tools"] if t.get("name") == "refund_order"]
        assert (sent["description"], sent["parameters"]) == (definition["description"], schema)
    (recorded,) = done.child.steps[6].payload["tools"]
    assert (recorded["description"], recorded["inputSchema"]) == (definition["description"], schema)


# --- refused before the program runs --------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (["--at", "3", "--answer", "hi"], "--at 3: --answer/--calls changes a model_output step; step 3 is a "
                                          "tool_result (there: --set/--set-error)"),
        (["--at", "11", "--set-error", "boom"], "--at 11: --set/--set-error changes a tool_result step"),
        (["--at", "99", "--system", "x"], "--at 99: the cassette has steps 0 to 12"),
        (["--at", "7", "--calls", "not json"], "--calls: not JSON: 'not json'"),
        (["--at", "6", "--tool", 'nope={"description": "x"}'], "--tool nope: the request at step 6 offers no "
                                                                "such tool (it offers: refund_order)"),
        (["--at", "6", "--user", "hi", "--model", "gpt-4o"], "--model is for the built-in agent"),
    ],
    ids=["answer-at-a-tool-result", "error-at-an-output", "out-of-range", "not-json", "no-such-tool",
         "model"],
)  # fmt: skip
def test_a_change_that_does_not_fit_is_one_line_exit_2_and_the_program_never_ran(
    refund: Parent, tmp_path: Path, change: list[str], said: str
) -> None:
    marker = tmp_path / "ran.db"  # the program makes its database first thing
    program = [*refund.program[:-1], str(marker)]
    child = tmp_path / "child.json"
    done = run_cli("fork", str(refund.path), *change, "--live", "-o", str(child), "--", *program)
    assert done.returncode == 2 and said in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not marker.exists() and not child.exists()


# --- Gemini: systemInstruction, a user content, an error response ---------------------------------


@pytest.fixture(scope="module")
def gemini(fake_llm: FakeLLMServer, tmp_path_factory: pytest.TempPathFactory) -> tuple[Parent, list[JSON]]:
    """The Gemini program's run (two calls in one turn, then the answer), and the bodies it sent."""
    folder = tmp_path_factory.mktemp("gemini")
    program = [sys.executable, str(PROGRAMS / "gemini_agent.py"), "--base-url", fake_llm.gemini_base_url]
    path = folder / "run.json"
    before = len(fake_llm.requests)
    recorded = run_cli("record", "-o", str(path), "--", *program)
    assert recorded.returncode == 0, recorded.stderr
    sent = [b for _, b in fake_llm.requests[before:]]
    return Parent(path, load_cassette(path), program, folder / "no-ledger"), sent


def test_gemini_system_prompt_and_user_message_reach_the_model(
    gemini: tuple[Parent, list[JSON]], fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    parent, _ = gemini
    system = "You are a terse support agent."
    told = fork(parent, fake_llm, tmp_path, "--at", "0", "--system", system, stub=False)
    check_child(parent, told.child, 0, "system_prompt", "system prompt")
    assert [b["systemInstruction"]["parts"] for b in told.sent] == [[{"text": system}]] * 2
    question = "What is the status of order 7? I need both the status and the delivery estimate."
    asked = fork(parent, fake_llm, tmp_path, "--at", "0", "--user", question, stub=False)
    check_child(parent, asked.child, 0, "user_message", "user message")
    assert [b["contents"][0]["parts"] for b in asked.sent] == [[{"text": question}]] * 2
    assert asked.child.steps[1].payload["calls"][0]["toolInput"] == {"order_id": 7}


def test_gemini_set_error_is_an_error_response(
    gemini: tuple[Parent, list[JSON]], fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    parent, _ = gemini
    done = fork(
        parent, fake_llm, tmp_path, "--at", "3", "--set-error", "the order system is down", stub=False
    )
    check_child(parent, done.child, 3, "tool_result", "tool error of lookup_order")
    (body,) = done.sent
    responses = [
        p["functionResponse"] for c in body["contents"] for p in c["parts"] if "functionResponse" in p
    ]
    assert responses[0]["response"] == {"error": "the order system is down"}
    results = [p for m in done.child.steps[6].payload["messages"] if isinstance(m["content"], list)
               for p in m["content"] if p["type"] == "tool_result"]  # fmt: skip
    assert results[0] == {"type": "tool_result", **done.child.steps[3].payload}


def test_gemini_tool_definition_and_a_user_message_inserted_in_a_later_request(
    gemini: tuple[Parent, list[JSON]], fake_llm: FakeLLMServer
) -> None:
    _, (first, second) = gemini
    provider = provider_for(
        "POST", f"{fake_llm.gemini_base_url}/v1beta/models/gemini-2.5-flash:generateContent"
    )
    assert provider is not None
    sent = json.dumps(second)
    schema = {"type": "object", "properties": {"order_id": {"type": "string"}}}
    value = {"name": "get_eta", "definition": {"description": "When it arrives.", "inputSchema": schema}}
    defined = provider.edit_request(second, "tool_definition", value)
    assert defined is not None
    tools = {t["name"]: t for t in provider.model_input(defined, CallIds())["tools"]}
    assert (tools["get_eta"]["description"], tools["get_eta"]["inputSchema"]) == ("When it arrives.", schema)
    assert (
        tools["lookup_order"]
        == {t["name"]: t for t in provider.model_input(second, CallIds())["tools"]}["lookup_order"]
    )
    inserted = provider.edit_request(
        second, "user_message", {"text": "Hurry.", "insert": True, "since": first}
    )
    assert inserted is not None
    assert inserted["contents"][1] == {"role": "user", "parts": [{"text": "Hurry."}]}
    assert inserted["contents"][2:] == second["contents"][1:]
    assert json.dumps(second) == sent  # never mutated


# --- the other APIs: the rewrites on the bodies their SDKs send -----------------------------------


@pytest.mark.parametrize("name", ["chat", "responses", "anthropic"])
def test_each_api_rewrites_its_system_prompt_user_message_tool_and_error(name: str) -> None:
    api = APIS[name]
    provider = api.provider
    first, second = api.record()  # the question; the question, the calls, their results
    sent = json.dumps(second)

    def neutral(body: JSON | None) -> JSON:
        assert body is not None
        return provider.model_input(body, CallIds())

    told = provider.edit_request(second, "system_prompt", "Be brief.")  # none sent: one added
    assert neutral(told)["systemPrompt"] == "Be brief."
    assert told is not None and neutral(told)["messages"] == neutral(second)["messages"]
    assert neutral(provider.edit_request(told, "system_prompt", "Be terse."))["systemPrompt"] == "Be terse."

    said = provider.edit_request(second, "user_message", {"text": "Porto?", "insert": False})
    assert neutral(said) == neutral(json.loads(sent.replace(QUESTION, "Porto?")))
    appended = provider.edit_request(first, "user_message", {"text": "Hurry.", "insert": True})
    assert neutral(appended)["messages"] == [
        *neutral(first)["messages"],
        {"role": "user", "content": "Hurry."},
    ]
    later = provider.edit_request(second, "user_message", {"text": "Hurry.", "insert": True, "since": first})
    messages = neutral(second)["messages"]
    assert neutral(later)["messages"] == [messages[0], {"role": "user", "content": "Hurry."}, *messages[1:]]
    other = provider.edit_request(first, "user_message", {"text": "x", "insert": True, "since": second})
    assert other is None  # another conversation: its messages do not begin with the turn's

    schema = {"type": "object", "properties": {"days": {"type": "integer"}}}
    value = {"name": "get_forecast", "definition": {"description": "Days ahead.", "inputSchema": schema}}
    tools = {t["name"]: t for t in neutral(provider.edit_request(second, "tool_definition", value))["tools"]}
    assert (tools["get_forecast"]["description"], tools["get_forecast"]["inputSchema"]) == (
        "Days ahead.",
        schema,
    )
    assert provider.edit_request(second, "tool_definition", {**value, "name": "nope"}) is None

    failed = neutral(provider.replace_tool_result(second, "call-0", "boom", error=True))
    results = [p for m in failed["messages"] if isinstance(m["content"], list) for p in m["content"]]
    (result,) = [p for p in results if p["type"] == "tool_result" and p["toolCallId"] == "call-0"]
    # Anthropic marks it (is_error); the OpenAI APIs have no mark: the model reads the text.
    assert result == {"type": "tool_result", "toolCallId": "call-0", "toolName": "get_weather",
                      **({"error": "boom"} if name == "anthropic" else {"result": "boom"})}  # fmt: skip
    assert json.dumps(second) == sent  # never mutated
