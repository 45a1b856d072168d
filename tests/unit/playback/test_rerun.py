"""Rerun an incident: the real SDKs against the fake provider, the tool's HTTP API a real local server.

The incident is recorded with ``otel-blackbox record``: the fake model "careless" calls the order
tool and then answers without its result, so the program's own check fails (exit 1, outcome error).
The rerun names a model that answers well. Both servers count what they receive: the counters, not
the cassettes, show what was sent.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fake_llm import CARELESS_MODEL, FakeLLMServer
from helpers import PROGRAMS, LoopbackAPI, run_cli

from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.model import Cassette, terminal_outcome, tool_call_sequence
from otel_blackbox._cassette.verify import verify_cassette
from otel_blackbox._playback.exchanges import HTTP_EXCHANGE
from otel_blackbox._playback.rerun import RerunPlan, RerunSession
from otel_blackbox._playback.session import session
from otel_blackbox.errors import SessionError

AGENT = str(PROGRAMS / "rerun_agent.py")
GEMINI_AGENT = str(PROGRAMS / "gemini_agent.py")
GOOD_MODEL = "gpt-4o-mini"
GEMINI_MODEL = "gemini-2.5-flash"
ORDER = {"order_id": 42, "channel": "web"}
REFUSED = "was not recorded by the incident, so it was not sent (`--allow-network` sends it)"


class OrderAPI(LoopbackAPI):
    """The tool's HTTP API on 127.0.0.1: POST /orders/lookup answers the order's status."""

    def __init__(self) -> None:
        super().__init__(self._lookup)

    @staticmethod
    def _lookup(method: str, path: str, body: bytes) -> tuple[int, Any]:
        if method == "GET":
            return 200, {"path": path}
        if path != "/orders/lookup":
            return 404, {"error": "not found"}
        try:
            order = json.loads(body or b"{}")
        except ValueError:
            return 400, {"error": "not JSON"}
        return 200, {"order_id": order.get("order_id"), "status": "shipped"}


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture
def orders() -> Iterator[OrderAPI]:
    with OrderAPI() as api:
        yield api


def agent(llm: FakeLLMServer, orders: OrderAPI, provider: str = "chat", *extra: str) -> list[str]:
    base_url = llm.anthropic_base_url if provider == "anthropic" else llm.openai_base_url
    return [
        sys.executable,
        AGENT,
        "--base-url",
        base_url,
        "--tool-url",
        orders.url,
        "--provider",
        provider,
        *extra,
    ]


def record_incident(tmp_path: Path, command: list[str]) -> Path:
    incident = tmp_path / "incident.json"
    recorded = run_cli("record", "-o", str(incident), "--", *command)
    assert recorded.returncode == 1, recorded.stderr  # the careless answer fails the program's check
    assert "wrong answer" in recorded.stderr
    assert terminal_outcome(load_cassette(incident)).status == "error"
    return incident


def exchanges(cassette: Cassette) -> list[dict[str, Any]]:
    return [
        s.payload for s in cassette.steps if s.type == "metadata" and s.payload.get("event") == HTTP_EXCHANGE
    ]


def models_sent(llm: FakeLLMServer) -> list[str]:
    return [str(body.get("model")) for _, body in llm.requests]


# --- the incident, fixed -----------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["chat", "responses", "anthropic"])
def test_rerun_with_another_model_fixes_the_incident_without_resending_the_tool_call(
    tmp_path: Path, llm: FakeLLMServer, orders: OrderAPI, provider: str
) -> None:
    command = agent(llm, orders, provider)
    incident_path = record_incident(tmp_path, command)
    assert models_sent(llm) == [CARELESS_MODEL, CARELESS_MODEL]
    assert [(m, p, json.loads(b)) for m, p, b in orders.received] == [("POST", "/orders/lookup", ORDER)]

    child_path = tmp_path / "child.json"
    rerun = run_cli("rerun", str(incident_path), "--model", GOOD_MODEL, "-o", str(child_path), "--", *command)
    assert rerun.returncode == 0, rerun.stderr
    assert "shipped" in rerun.stdout.splitlines()[-1]
    assert rerun.stderr == ""
    # The provider was called live, with the new model name; the order API was not called again.
    assert models_sent(llm) == [CARELESS_MODEL, CARELESS_MODEL, GOOD_MODEL, GOOD_MODEL]
    assert len(orders.received) == 1

    incident, child = load_cassette(incident_path), load_cassette(child_path)
    assert verify_cassette(child).passed
    assert (child.parent_id, child.forked_from_step_id) == (incident.id, None)
    assert terminal_outcome(child).status == "success"
    assert tool_call_sequence(child) == tool_call_sequence(incident) == ["lookup_order"]
    assert [s.payload["model"] for s in child.steps if s.type == "model_input"] == [GOOD_MODEL, GOOD_MODEL]
    assert exchanges(child) == exchanges(incident)  # served from the recording, recorded again
    assert "sk-rerun-test" not in child_path.read_text() and "sk-ant-rerun" not in child_path.read_text()
    shown = run_cli("inspect", str(child_path), check=True).stdout.splitlines()
    assert f"rerun of {incident.id}" in shown

    fixed = run_cli("diff", str(incident_path), str(child_path))
    assert fixed.returncode == 1  # they diverge: the model name, from the first step
    assert fixed.stdout.splitlines()[-1] == "outcome: failure fixed: parent error → child success"
    regressed = run_cli("diff", str(child_path), str(incident_path))
    assert regressed.stdout.splitlines()[-1] == "outcome: regression: parent success → child error"


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_a_gemini_rerun_names_the_new_model_in_the_url(
    tmp_path: Path, llm: FakeLLMServer, orders: OrderAPI, stream: bool
) -> None:
    """Gemini names the model in the URL path: --model rewrites the path, the query stays."""
    command = [
        sys.executable, GEMINI_AGENT, "--base-url", llm.gemini_base_url, "--tool-url", orders.url,
        "--model", CARELESS_MODEL, "--check", *(["--stream"] if stream else []),
    ]  # fmt: skip
    incident_path = record_incident(tmp_path, command)
    child_path = tmp_path / "child.json"
    rerun = run_cli(
        "rerun", str(incident_path), "--model", GEMINI_MODEL, "-o", str(child_path), "--", *command
    )
    assert rerun.returncode == 0, rerun.stderr
    assert "shipped" in rerun.stdout.splitlines()[-1] and rerun.stderr == ""
    method = "streamGenerateContent" if stream else "generateContent"
    # The API version is the SDK's choice (google-genai 3 says v1 to a base_url of its own, 2.x
    # v1beta); the rerun keeps it and changes only the model.
    version = llm.requests[0][0].split("/")[1]
    assert version in ("v1", "v1beta")
    assert [path for path, _ in llm.requests] == [
        *[f"/{version}/models/{CARELESS_MODEL}:{method}"] * 2,
        *[f"/{version}/models/{GEMINI_MODEL}:{method}"] * 2,
    ]
    assert len(orders.received) == 1  # the tool's request was answered from the incident
    incident, child = load_cassette(incident_path), load_cassette(child_path)
    assert verify_cassette(child).passed and terminal_outcome(child).status == "success"
    assert tool_call_sequence(child) == tool_call_sequence(incident) == ["lookup_order", "get_eta"]
    assert [s.payload["model"] for s in child.steps if s.type == "model_input"] == [GEMINI_MODEL] * 2
    fixed = run_cli("diff", str(incident_path), str(child_path))
    assert fixed.stdout.splitlines()[-1] == "outcome: failure fixed: parent error → child success"
    # The fix in the program: it names the model itself, and the child replays with no network.
    sent = len(llm.requests)
    replayed = run_cli(
        "replay", str(child_path), "--", *command, "--model", GEMINI_MODEL
    )  # the last one counts
    assert replayed.returncode == 0, replayed.stderr
    assert len(llm.requests) == sent


def test_the_child_replays_offline_once_the_program_names_the_new_model(
    tmp_path: Path, llm: FakeLLMServer, orders: OrderAPI
) -> None:
    command = agent(llm, orders)
    incident = record_incident(tmp_path, command)
    child = tmp_path / "child.json"
    assert (
        run_cli("rerun", str(incident), "--model", GOOD_MODEL, "-o", str(child), "--", *command).returncode
        == 0
    )
    sent = (len(llm.requests), len(orders.received))
    # The fix itself, in the program: its model is the one the rerun chose. The child replays exactly.
    replayed = run_cli("replay", str(child), "--", *command, "--model", GOOD_MODEL)
    assert replayed.returncode == 0, replayed.stderr
    assert (len(llm.requests), len(orders.received)) == sent
    # The unchanged program still asks for the old model: the replay names where it differs.
    stale = run_cli("replay", str(child), "--", *command)
    assert stale.returncode == 1 and "differs at $.model" in stale.stderr


def test_an_incident_built_from_a_processor_run_with_http_capture_reruns_the_same_way(
    tmp_path: Path, llm: FakeLLMServer, orders: OrderAPI
) -> None:
    """The production path: no record session, only the span processor with HTTP capture on."""
    db = tmp_path / "prod.db"
    failed = subprocess.run(
        [*agent(llm, orders), "--db", str(db)], capture_output=True, text=True, timeout=60
    )
    assert failed.returncode == 1 and "wrong answer" in failed.stderr
    runs = json.loads(run_cli("runs", "--json", db=db, check=True).stdout)
    assert [r["status"] for r in runs] == ["error"]
    incident = tmp_path / "incident.json"
    run_cli("cassette", "--run", runs[0]["run_id"], "-o", str(incident), db=db, check=True)
    assert [e["request"]["url"] for e in exchanges(load_cassette(incident))] == [
        f"{orders.url}/orders/lookup"
    ]

    child = tmp_path / "child.json"
    command = [*agent(llm, orders), "--db", str(tmp_path / "rerun.db")]
    rerun = run_cli("rerun", str(incident), "--model", GOOD_MODEL, "-o", str(child), "--", *command)
    assert rerun.returncode == 0, rerun.stderr
    assert models_sent(llm) == [CARELESS_MODEL, CARELESS_MODEL, GOOD_MODEL, GOOD_MODEL]
    assert len(orders.received) == 1
    assert load_cassette(child).parent_id == load_cassette(incident).id
    fixed = run_cli("diff", str(incident), str(child))
    assert fixed.stdout.splitlines()[-1] == "outcome: failure fixed: parent error → child success"


# --- requests the incident did not record ----------------------------------------------------------


def test_a_tool_request_with_another_body_is_refused_and_named_unless_the_network_is_allowed(
    tmp_path: Path, llm: FakeLLMServer, orders: OrderAPI
) -> None:
    incident = record_incident(tmp_path, agent(llm, orders))
    changed = agent(llm, orders, "chat", "--channel", "mobile")
    child = tmp_path / "child.json"
    refused = run_cli("rerun", str(incident), "--model", GOOD_MODEL, "-o", str(child), "--", *changed)
    # The program's tool got the refusal, so its answer lacks the status: the program's exit code.
    assert refused.returncode == 1
    assert len(orders.received) == 1  # not sent
    url = f"{orders.url}/orders/lookup"
    notes = [line for line in refused.stderr.splitlines() if line.startswith("[blackbox]")]
    assert notes == [
        f"[blackbox] POST {url} {REFUSED}; closest recorded: step 2, whose body differs at $.channel: "
        'recorded "web", got "mobile"'
    ]
    # The program itself received the same message, in a 400.
    assert "[blackbox] POST " + url in refused.stdout
    served = exchanges(load_cassette(child))
    assert [e["response"]["status"] for e in served] == [400]
    assert json.loads(served[0]["response"]["body"])["error"]["message"] == notes[0]

    allowed = run_cli(
        "rerun", str(incident), "--model", GOOD_MODEL, "--allow-network", "-o", str(child), "--", *changed
    )
    assert allowed.returncode == 0, allowed.stderr
    assert [json.loads(b) for _, _, b in orders.received] == [ORDER, {**ORDER, "channel": "mobile"}]
    sent = exchanges(load_cassette(child))
    assert [(e["response"]["status"], json.loads(e["request"]["body"])) for e in sent] == [
        (200, {**ORDER, "channel": "mobile"})
    ]
    assert terminal_outcome(load_cassette(child)).status == "success"


def test_each_recorded_exchange_answers_once_matched_on_method_url_and_canonical_body(
    tmp_path: Path, orders: OrderAPI
) -> None:
    lookup, other = f"{orders.url}/orders/lookup", f"{orders.url}/orders/other"
    binary = b"\xff\x00order"
    incident = tmp_path / "incident.json"
    with session("record", incident):
        first = httpx.post(lookup, json={"order_id": 1}).json()
        second = httpx.post(lookup, json={"order_id": 2}).json()
        httpx.post(lookup, content=binary)
        httpx.get(other)
    assert len(orders.received) == 4
    stored = [e["request"]["body"] for e in exchanges(load_cassette(incident))]
    assert stored[2] == {"base64": "/wBvcmRlcg=="}  # not UTF-8: kept as base64

    child = tmp_path / "child.json"
    rerun = RerunSession(incident, RerunPlan(output=child)).start()
    try:
        # Another key order and spacing: the same JSON. The second recorded exchange answers it.
        assert httpx.post(lookup, content=b'{ "order_id" : 2.0 }').json() == second
        assert httpx.post(lookup, json={"order_id": 1}).json() == first
        assert httpx.post(lookup, content=binary).status_code == 400  # as recorded
        again = httpx.post(lookup, json={"order_id": 1})
        unknown = httpx.get(f"{orders.url}/nowhere")
        wrong_method = httpx.post(other, json={})
        assert httpx.get(other).json() == {"path": "/orders/other"}
    finally:
        rerun.finish()
    assert len(orders.received) == 4  # nothing was sent
    assert again.status_code == unknown.status_code == wrong_method.status_code == 400
    assert rerun.notes() == [
        f"[blackbox] POST {lookup} {REFUSED}; the incident made it 1 time, already answered (step 0)",
        f"[blackbox] GET {orders.url}/nowhere {REFUSED}; the incident recorded no request to this URL",
        f"[blackbox] POST {other} {REFUSED}; closest recorded: step 3, GET to the same URL",
        f"[blackbox] the program made no model call: nothing was re-run ({child} holds the run)",
    ]
    assert again.json()["error"]["message"] == rerun.notes()[0]
    assert load_cassette(child).parent_id == load_cassette(incident).id


def test_a_refused_request_is_counted_once_per_message(tmp_path: Path, orders: OrderAPI) -> None:
    incident = tmp_path / "incident.json"
    with session("record", incident):
        pass
    rerun = RerunSession(incident, RerunPlan(output=tmp_path / "child.json")).start()
    try:
        for _ in range(3):  # a program that retries
            httpx.get(f"{orders.url}/health")
    finally:
        rerun.finish()
    assert rerun.notes()[0].endswith("the incident recorded no request to this URL (3 times)")
    assert orders.received == []


# --- scripted model outputs -------------------------------------------------------------------------


def test_scripted_rerun_calls_no_model_and_serves_the_recorded_tool_exchange(
    tmp_path: Path, llm: FakeLLMServer, orders: OrderAPI
) -> None:
    command = agent(llm, orders)
    incident = record_incident(tmp_path, command)
    replies = tmp_path / "replies.json"
    call = {"toolCallId": "call-0", "toolName": "lookup_order", "toolInput": {"order_id": 42}}
    replies.write_text(
        json.dumps(
            [{"type": "tool_calls", "calls": [call]}, {"type": "final_answer", "text": "Order 42 shipped."}]
        )
    )
    child = tmp_path / "child.json"
    sent = (len(llm.requests), len(orders.received))
    rerun = run_cli("rerun", str(incident), "--script", str(replies), "-o", str(child), "--", *command)
    assert rerun.returncode == 0, rerun.stderr
    assert rerun.stdout.splitlines()[-1] == "Order 42 shipped."
    assert (len(llm.requests), len(orders.received)) == sent
    recorded = load_cassette(child)
    assert terminal_outcome(recorded).final_answer == "Order 42 shipped."
    assert tool_call_sequence(recorded) == ["lookup_order"]
    assert [e["response"]["status"] for e in exchanges(recorded)] == [200]
    assert recorded.parent_id == load_cassette(incident).id


def test_a_script_that_runs_out_fails_the_rerun(tmp_path: Path, llm: FakeLLMServer, orders: OrderAPI) -> None:
    command = agent(llm, orders)
    incident = record_incident(tmp_path, command)
    replies = tmp_path / "replies.json"
    replies.write_text(
        json.dumps([{"type": "final_answer", "text": "shipped"}, {"type": "final_answer", "text": "x"}])
    )
    # The first reply already answers: the second is never used, and that is fine.
    ok = run_cli(
        "rerun", str(incident), "--script", str(replies), "-o", str(tmp_path / "c.json"), "--", *command
    )
    assert ok.returncode == 0, ok.stderr
    replies.write_text(
        json.dumps(
            [
                {
                    "type": "tool_calls",
                    "calls": [
                        {"toolCallId": "call-0", "toolName": "lookup_order", "toolInput": {"order_id": 42}}
                    ],
                }
            ]
        )
    )
    short = run_cli(
        "rerun", str(incident), "--script", str(replies), "-o", str(tmp_path / "d.json"), "--", *command
    )
    assert short.returncode == 1
    assert short.stderr.splitlines()[-1] == (
        "otel-blackbox: error: [blackbox] the script has no reply left for this model call"
    )


# --- a program that re-runs nothing, and bad input --------------------------------------------------


def test_a_program_that_makes_no_model_call_is_said_and_fails_when_it_exits_0(
    tmp_path: Path, llm: FakeLLMServer, orders: OrderAPI
) -> None:
    incident = record_incident(tmp_path, agent(llm, orders))
    child = tmp_path / "child.json"
    quiet = run_cli("rerun", str(incident), "-o", str(child), "--", sys.executable, "-c", "print('hi')")
    assert quiet.returncode == 1 and quiet.stdout == "hi\n"
    assert quiet.stderr.splitlines() == [
        f"[blackbox] the program made no model call: nothing was re-run ({child.resolve()} holds the run)"
    ]
    assert load_cassette(child).parent_id == load_cassette(incident).id
    failing = run_cli(
        "rerun", str(incident), "-o", str(child), "--", sys.executable, "-c", "raise SystemExit(3)"
    )
    assert failing.returncode == 3  # the program's own code wins
    assert failing.stderr.splitlines()[-1].startswith("[blackbox] the program made no model call")


def one_error_line(result: Any, code: int, text: str) -> None:
    assert result.returncode == code, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("otel-blackbox: error: ") and text in lines[0], lines
    assert "Traceback" not in result.stderr


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    incident = tmp_path / "incident.json"
    with session("record", incident):
        pass
    program = ["--", sys.executable, "-c", "print(1)"]
    child = str(tmp_path / "child.json")
    one_error_line(run_cli("rerun", str(tmp_path / "none.json"), "-o", child, *program), 2, "no such file")
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    one_error_line(run_cli("rerun", str(garbage), "-o", child, *program), 2, "not valid JSON")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"spans": []}))
    one_error_line(run_cli("rerun", str(other), "-o", child, *program), 2, "not a Blackbox cassette")
    one_error_line(
        run_cli("rerun", str(incident), "-o", str(incident), *program), 2, "would overwrite the incident"
    )
    # No program: the built-in agent, which needs a model step to start the conversation from.
    one_error_line(run_cli("rerun", str(incident), "-o", child), 2, "no model_input step to start")
    one_error_line(
        run_cli("rerun", str(incident), "--model", " ", "-o", child, *program), 2, "give a model name"
    )

    script = tmp_path / "replies.json"
    script.write_text("[]")
    both = run_cli("rerun", str(incident), "--model", "m", "--script", str(script), "-o", child, *program)
    one_error_line(both, 2, "--model chooses the live model and --script answers instead of one")
    for text, expected in [
        ("[1", "not valid JSON"),
        ('{"a": 1}', "a JSON list of model outputs"),
        (
            '[{"type": "final_answer", "text": "x"}, {"text": "no type"}]',
            "reply 1 of the script is not a model output",
        ),
    ]:
        script.write_text(text)
        one_error_line(
            run_cli("rerun", str(incident), "--script", str(script), "-o", child, *program), 2, expected
        )
    one_error_line(
        run_cli("rerun", str(incident), "--script", str(tmp_path / "no.json"), "-o", child, *program),
        2,
        "no such file",
    )
    assert not Path(child).exists()


def test_the_session_refuses_model_and_script_together(tmp_path: Path) -> None:
    incident = tmp_path / "incident.json"
    with session("record", incident):
        pass
    with pytest.raises(SessionError, match="give one"):
        RerunSession(incident, RerunPlan(output=tmp_path / "c.json", model="m", replies=[]))


def test_fork_checks_its_script_the_same_way_before_the_program_runs(tmp_path: Path) -> None:
    parent = tmp_path / "run.json"
    with session("record", parent):
        pass
    script = tmp_path / "replies.json"
    script.write_text('[{"type": "final_answer", "text": "x"}, 3]')
    child = str(tmp_path / "c.json")
    forked = run_cli(
        "fork", str(parent), "--at", "0", "--set", "1", "--script", str(script), "-o", child,
        "--", sys.executable, "-c", "raise SystemExit('the program must not run')",
    )  # fmt: skip
    one_error_line(forked, 2, "reply 1 of the script is not a model output")
