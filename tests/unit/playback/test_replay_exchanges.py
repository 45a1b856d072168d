"""Every recorded non-model HTTP exchange is matched on its body when it is served again.

The launched program is tests/programs/rerun_agent.py: the real openai SDK against the fake provider, its
``lookup_order`` tool a POST of ``{"order_id": N, "channel": NAME}`` to a local order API, where
``--channel`` changes that body and nothing else. It is recorded with ``otel-blackbox record``,
then replayed (and forked) with both servers stopped. The in-process cases use the public
``otel_blackbox.session`` with httpx against a local echo API; the pytest plugin runs generated tests.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fake_llm import FakeLLMServer
from helpers import PROGRAMS, LoopbackAPI, run_cli
from test_rerun import OrderAPI

import otel_blackbox
from otel_blackbox._cassette.io import load_cassette, save_cassette
from otel_blackbox._cassette.model import Cassette, terminal_outcome
from otel_blackbox._playback.exchanges import HTTP_EXCHANGE
from otel_blackbox._playback.interceptor import Match
from otel_blackbox._playback.replay import ReplaySession
from otel_blackbox._playback.rerun import RerunPlan, RerunSession
from otel_blackbox._spans.semconv import (
    ATTR_HTTP_RESPONSE_BODY,
    ATTR_HTTP_STATUS,
    ATTR_HTTP_URL,
    HTTP_SPAN_NAME,
)
from otel_blackbox._store.connection import connect_reader
from otel_blackbox._store.queries import iter_spans
from otel_blackbox.errors import CassetteError, ReplayDivergence

pytest_plugins = ["pytester"]

AGENT = str(PROGRAMS / "rerun_agent.py")
MODEL = "gpt-4o-mini"  # the fake answers quoting the tool result: the program's check passes


class EchoAPI(LoopbackAPI):
    """Any request on 127.0.0.1 answered with what it was: method, path and query, body."""

    def __init__(self) -> None:
        super().__init__(
            lambda method, path, body: (
                200,
                {"method": method, "path": path, "body": body.decode("utf-8", "replace")},
            )
        )


def exchanges(cassette: Cassette) -> list[dict[str, Any]]:
    return [s.payload for s in cassette.steps if s.type == "metadata" and s.payload["event"] == HTTP_EXCHANGE]


# --- the launched program: record once, replay with nothing listening ------------------------------


@dataclass(frozen=True)
class Recording:
    path: Path
    command: list[str]  # the program, as recorded
    answer: str  # its last line of output
    order_url: str  # where its tool POSTs


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    path = tmp_path_factory.mktemp("exchanges") / "run.json"
    with FakeLLMServer() as llm, OrderAPI() as orders:
        command = [sys.executable, AGENT, "--base-url", llm.openai_base_url, "--tool-url", orders.url]
        command += ["--model", MODEL]
        recorded = run_cli("record", "-o", str(path), "--", *command)
        assert recorded.returncode == 0, recorded.stderr
        assert [json.loads(b) for _, _, b in orders.received] == [{"order_id": 42, "channel": "web"}]
    cassette = load_cassette(path)
    assert terminal_outcome(cassette).status == "success"
    assert [s.type for s in cassette.steps][:3] == ["model_input", "model_output", "metadata"]
    assert cassette.steps[2].payload["event"] == HTTP_EXCHANGE  # step 2: the tool's POST
    return Recording(path, command, recorded.stdout.splitlines()[-1], f"{orders.url}/orders/lookup")


def test_the_same_program_replays_with_its_tool_api_stopped(recording: Recording) -> None:
    replayed = run_cli("replay", str(recording.path), "--", *recording.command)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.splitlines()[-1] == recording.answer
    assert "shipped" in recording.answer


def test_a_tool_request_with_another_body_diverges_naming_the_changed_value(
    recording: Recording, tmp_path: Path
) -> None:
    db = tmp_path / "replay.db"  # the program records its own spans, HTTP capture on
    changed = run_cli(
        "replay", str(recording.path), "--", *recording.command, "--channel", "mobile", "--db", str(db)
    )
    message = '[blackbox] step 2 (http_exchange) differs at $.channel: recorded "web", got "mobile"'
    assert changed.returncode == 1
    assert changed.stderr.splitlines()[-1] == f"otel-blackbox: error: {message}"
    # What the tool itself received: a 400 carrying the same message (its capture span says so).
    conn = connect_reader(db)
    try:
        spans = [s for s in iter_spans(conn) if s.name == HTTP_SPAN_NAME]
    finally:
        conn.close()
    (tool,) = [s for s in spans if s.attributes[ATTR_HTTP_URL] == recording.order_url]
    assert tool.attributes[ATTR_HTTP_STATUS] == 400
    assert json.loads(tool.attributes[ATTR_HTTP_RESPONSE_BODY])["error"]["message"] == message


def test_match_sequence_serves_the_changed_tool_request_without_comparing(recording: Recording) -> None:
    served = run_cli(
        "replay", str(recording.path), "--match", "sequence", "--", *recording.command, "--channel", "mobile"
    )
    assert served.returncode == 0, served.stderr
    assert served.stdout.splitlines()[-1] == recording.answer


def test_another_tool_url_has_no_recorded_exchange(recording: Recording) -> None:
    moved = recording.order_url.removesuffix("/orders/lookup") + "/v2"
    result = run_cli("replay", str(recording.path), "--", *recording.command, "--tool-url", moved)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        f"otel-blackbox: error: [blackbox] no recorded HTTP exchange for POST {moved}/orders/lookup"
    )


# --- fork: the same rule before the fork point and, with --script, after it -----------------------


def test_a_fork_serves_exchanges_only_when_they_match(recording: Recording, tmp_path: Path) -> None:
    replies = tmp_path / "replies.json"
    child = str(tmp_path / "child.json")
    lost = {"order_id": 42, "status": "lost"}
    fork = ["fork", str(recording.path), "--at", "4", "--set", json.dumps(lost), "--script", str(replies)]
    replies.write_text(json.dumps([{"type": "final_answer", "text": "Order 42 was shipped, then lost."}]))
    same = run_cli(*fork, "-o", child, "--", *recording.command)
    assert same.returncode == 0, same.stderr
    assert terminal_outcome(load_cassette(child)).final_answer == "Order 42 was shipped, then lost."

    # Before the fork point: the program's tool sends another body.
    before = run_cli(*fork, "-o", child, "--", *recording.command, "--channel", "mobile")
    assert before.returncode == 1
    assert before.stderr.splitlines()[-1] == (
        'otel-blackbox: error: [blackbox] step 2 (http_exchange) differs at $.channel: recorded "web", '
        'got "mobile"'
    )
    # After it, the script asks the tool about another order: the recording holds no such answer.
    call = {"toolCallId": "call-1", "toolName": "lookup_order", "toolInput": {"order_id": 7}}
    replies.write_text(
        json.dumps([{"type": "tool_calls", "calls": [call]}, {"type": "final_answer", "text": "shipped"}])
    )
    after = run_cli(*fork, "-o", child, "--", *recording.command)
    assert after.returncode == 1
    assert after.stderr.splitlines()[-1] == (
        "otel-blackbox: error: [blackbox] step 2 (http_exchange) differs at $.order_id: recorded 42, got 7"
    )


# --- in process: bodies of every kind ---------------------------------------------------------------


@pytest.fixture
def echo() -> Iterator[EchoAPI]:
    with EchoAPI() as api:
        yield api


Send = Callable[[], list[httpx.Response]]  # the program: its requests, in order


def record(path: Path, send: Send) -> list[Any]:
    with otel_blackbox.session(mode="record", cassette=path):
        return [response.json() for response in send()]


def diverges(path: Path, send: Send, match: Match = "exact") -> tuple[str, list[httpx.Response]]:
    """Replay ``send`` expecting a divergence: its message, and the responses the program got."""
    got: list[httpx.Response] = []
    with (
        pytest.raises(ReplayDivergence) as raised,
        otel_blackbox.session(mode="replay", cassette=path, match=match),
    ):
        got.extend(send())
    return str(raised.value), got


def test_a_changed_json_body_in_process_gets_a_400_and_raises_the_divergence(
    tmp_path: Path, echo: EchoAPI
) -> None:
    path = tmp_path / "run.json"
    forecast = f"{echo.url}/forecast"
    recorded = record(path, lambda: [httpx.post(forecast, json={"city": "Lisbon", "days": [1, 2]})])
    echo.stop()

    with otel_blackbox.session(mode="replay", cassette=path):
        assert httpx.post(forecast, json={"city": "Lisbon", "days": [1, 2]}).json() == recorded[0]

    message, (response,) = diverges(
        path, lambda: [httpx.post(forecast, json={"city": "Lisbon", "days": [1, 3]})]
    )
    assert message == "[blackbox] step 0 (http_exchange) differs at $.days[1]: recorded 2, got 3"
    assert response.status_code == 400
    assert response.json()["error"]["message"] == message
    # A key the recording did not send: absent on its side.
    message, _ = diverges(
        path, lambda: [httpx.post(forecast, json={"city": "Lisbon", "days": [1, 2], "x": 0})]
    )
    assert message.endswith("differs at $.x: recorded (absent), got 0")


def test_json_bodies_equal_as_canonical_json_match_whatever_their_layout(
    tmp_path: Path, echo: EchoAPI
) -> None:
    path = tmp_path / "run.json"
    forecast = f"{echo.url}/forecast"
    recorded = record(path, lambda: [httpx.post(forecast, json={"city": "Lisbon", "days": 2})])
    assert echo.received[0][2] == b'{"city":"Lisbon","days":2}'
    echo.stop()
    layout = b'{\n  "days": 2.0,\n  "city": "Lisbon"\n}'  # other key order, spacing, 2.0 for 2
    with otel_blackbox.session(mode="replay", cassette=path):
        assert httpx.post(forecast, content=layout).json() == recorded[0]


def test_form_and_binary_bodies_are_compared_as_bytes_and_diverge_at_body(
    tmp_path: Path, echo: EchoAPI
) -> None:
    path = tmp_path / "run.json"
    form, upload = f"{echo.url}/subscribe", f"{echo.url}/upload"
    binary = b"\xff\x00\x01report"

    def send(city: str = "Lisbon", data: bytes = binary) -> list[httpx.Response]:
        return [httpx.post(form, data={"city": city, "plan": "daily"}), httpx.put(upload, content=data)]

    recorded = record(path, send)
    echo.stop()
    stored = [e["request"]["body"] for e in exchanges(load_cassette(path))]
    assert stored == ["city=Lisbon&plan=daily", {"base64": "/wABcmVwb3J0"}]

    with otel_blackbox.session(mode="replay", cassette=path):
        assert [r.json() for r in send()] == recorded
    message, got = diverges(path, lambda: send(city="Porto"))
    assert message == (
        '[blackbox] step 0 (http_exchange) differs at $.body: recorded "city=Lisbon&plan=daily", '
        'got "city=Porto&plan=daily"'
    )
    assert got[0].status_code == 400
    message, _ = diverges(path, lambda: send(data=b"\xff\x00\x02report"))
    assert message == (
        '[blackbox] step 1 (http_exchange) differs at $.body: recorded {"base64": "/wABcmVwb3J0"}, '
        'got {"base64": "/wACcmVwb3J0"}'
    )


def test_a_credential_in_the_body_is_masked_alike_on_both_sides_and_still_matches(
    tmp_path: Path, echo: EchoAPI
) -> None:
    path = tmp_path / "run.json"
    token = "ghp_" + "a1B2c3D4e5" * 4
    body = {"repo": "weather", "password": "correct horse battery", "note": f"token {token}"}
    recorded = record(path, lambda: [httpx.post(f"{echo.url}/deploy", json=body)])
    echo.stop()
    text = path.read_text()
    assert token not in text and "correct horse" not in text
    assert json.loads(exchanges(load_cassette(path))[0]["request"]["body"]) == {
        "repo": "weather",
        "password": "[REDACTED]",
        "note": "token [REDACTED:github-token]",
    }
    with otel_blackbox.session(mode="replay", cassette=path):
        replayed = httpx.post(f"{echo.url}/deploy", json=body)
    # Served, as recorded: the echo of the body, masked like the rest of the recording.
    assert replayed.json() == {**recorded[0], "body": exchanges(load_cassette(path))[0]["request"]["body"]}
    # What the mask hides still cannot hide another value beside it.
    message, _ = diverges(path, lambda: [httpx.post(f"{echo.url}/deploy", json={**body, "repo": "other"})])
    assert message.endswith('differs at $.repo: recorded "weather", got "other"')


def test_a_get_whose_query_changes_diverges_at_its_url(tmp_path: Path, echo: EchoAPI) -> None:
    path = tmp_path / "run.json"
    weather = f"{echo.url}/weather"
    record(path, lambda: [httpx.get(weather, params={"city": "Lisbon"})])
    echo.stop()
    message, got = diverges(path, lambda: [httpx.get(weather, params={"city": "Porto"})])
    assert message == (
        f'[blackbox] step 0 (http_exchange) differs at $.url: recorded "{weather}?city=Lisbon", '
        f'got "{weather}?city=Porto"'
    )
    assert got[0].status_code == 400
    # Sequence mode still needs the same method and URL: the URL picks the answer.
    message, _ = diverges(path, lambda: [httpx.get(weather, params={"city": "Porto"})], match="sequence")
    assert message.startswith("[blackbox] step 0 (http_exchange) differs at $.url")
    message, _ = diverges(path, lambda: [httpx.post(f"{weather}?city=Lisbon", json={})])
    assert message == '[blackbox] step 0 (http_exchange) differs at $.method: recorded "GET", got "POST"'


def test_each_exchange_answers_once_the_first_unused_that_matches(tmp_path: Path, echo: EchoAPI) -> None:
    path = tmp_path / "run.json"
    lookup = f"{echo.url}/lookup"

    def send(*orders: int) -> list[httpx.Response]:
        return [httpx.post(lookup, json={"order_id": n}) for n in orders]

    recorded = record(path, lambda: send(1, 2, 1))
    echo.stop()
    # Another order than recorded: each request finds its own exchange, not the next in line.
    with otel_blackbox.session(mode="replay", cassette=path):
        assert [r.json() for r in send(2, 1, 1)] == [recorded[1], recorded[0], recorded[2]]
    # Sequence: the next unused one of the same method and URL, whatever the body.
    with otel_blackbox.session(mode="replay", cassette=path, match="sequence"):
        assert [r.json() for r in send(5, 6, 7)] == recorded
    # Made more often than recorded: named, with the exchanges it used up.
    message, got = diverges(path, lambda: send(1, 1, 1))
    assert message == (
        f"[blackbox] no unused recorded HTTP exchange for POST {lookup}: the recording made it 2 times, "
        "already served (step 0)"
    )
    assert [r.status_code for r in got] == [200, 200, 400]
    # A body no unused exchange has: the closest is the first unused one of that method and URL.
    message, _ = diverges(path, lambda: send(1, 3))
    assert message == "[blackbox] step 1 (http_exchange) differs at $.order_id: recorded 2, got 3"


def test_rerun_names_the_same_closest_exchange_in_its_refusal(tmp_path: Path, echo: EchoAPI) -> None:
    path = tmp_path / "incident.json"
    weather, forecast = f"{echo.url}/weather", f"{echo.url}/forecast"
    record(
        path, lambda: [httpx.get(weather, params={"city": "Lisbon"}), httpx.post(forecast, content=b"x=1")]
    )
    echo.stop()
    rerun = RerunSession(path, RerunPlan(output=tmp_path / "child.json")).start()
    try:
        refused = [httpx.get(weather, params={"city": "Porto"}), httpx.post(forecast, content=b"x=2")]
    finally:
        rerun.finish()
    assert [r.status_code for r in refused] == [400, 400]
    head = "was not recorded by the incident, so it was not sent (`--allow-network` sends it)"
    assert rerun.notes()[:2] == [
        f"[blackbox] GET {weather}?city=Porto {head}; closest recorded: step 0, GET {weather}?city=Lisbon",
        f'[blackbox] POST {forecast} {head}; closest recorded: step 1, whose body differs: recorded "x=1", '
        'got "x=2"',
    ]


# --- the pytest plugin -------------------------------------------------------------------------------

TOOL_TEST = """
import os

import httpx
import pytest


def lookup():
    body = {"order_id": 42, "channel": os.environ.get("BLACKBOX_EXCHANGE_CHANNEL", "web")}
    response = httpx.post(os.environ["BLACKBOX_EXCHANGE_URL"] + "/orders/lookup", json=body)
    assert response.json()["status"] == "shipped"


@pytest.mark.blackbox
def test_exact():
    lookup()


@pytest.mark.blackbox(match="sequence")
def test_sequence():
    lookup()
"""


def test_the_pytest_plugin_fails_a_test_whose_tool_body_changed_unless_it_matches_in_sequence(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_tool=TOOL_TEST)
    pytester.makeini("[pytest]\nfilterwarnings = error\n")
    with OrderAPI() as orders:
        monkeypatch.setenv("BLACKBOX_EXCHANGE_URL", orders.url)
        pytester.runpytest_subprocess("-p", "no:cacheprovider", "--blackbox-mode=record").assert_outcomes(
            passed=2
        )
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=2)
    monkeypatch.setenv("BLACKBOX_EXCHANGE_CHANNEL", "mobile")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=1, failed=1)
    text = "\n".join(result.outlines + result.errlines)
    assert "PASSED test_tool.py::test_sequence" in text and "FAILED test_tool.py::test_exact" in text
    assert '[blackbox] step 0 (http_exchange) differs at $.channel: recorded "web", got "mobile"' in text
    assert "INTERNALERROR" not in text


# --- a malformed http_exchange step ------------------------------------------------------------------


def malformed(tmp_path: Path, echo: EchoAPI, breaks: Any) -> Path:
    path = tmp_path / "run.json"
    record(path, lambda: [httpx.get(f"{echo.url}/weather?city=Lisbon")])
    cassette = load_cassette(path)
    rebuilt = Cassette(id=cassette.id, created_at=cassette.created_at)
    for step in cassette.steps:
        payload = json.loads(json.dumps(step.payload))
        if step.payload.get("event") == HTTP_EXCHANGE:
            breaks(payload)
        rebuilt.append(step.type, payload, step.timestamp)
    save_cassette(rebuilt, path)  # a valid v2 file, hash chain and all: only the exchange is wrong
    return path


BREAKS = [
    (lambda p: p.pop("response"), "'request' and 'response' must be objects"),
    (lambda p: p["request"].update(url=None), "the request's 'method' and 'url' must be strings"),
    (lambda p: p["response"].update(status="200"), "the response's 'status' must be an HTTP status code"),
    (lambda p: p["request"].update(body={"base64": "%%"}), "the request's 'body' is not valid base64"),
    (lambda p: p["response"].update(body=[1]), 'the response\'s \'body\' must be text or {"base64": "..."}'),
]


@pytest.mark.parametrize(("breaks", "expected"), BREAKS)
def test_a_malformed_exchange_is_one_clear_error_naming_the_step(
    tmp_path: Path, echo: EchoAPI, breaks: Any, expected: str
) -> None:
    path = malformed(tmp_path, echo, breaks)
    with pytest.raises(CassetteError) as raised:
        ReplaySession(path)
    assert str(raised.value) == f"{path}: step 0 (http_exchange): {expected}"


def launched_with_a_malformed_exchange(tmp_path: Path, echo: EchoAPI) -> list[Any]:
    path = malformed(tmp_path, echo, BREAKS[2][0])
    program = ["--", sys.executable, "-c", "print(1)"]
    return [
        run_cli("replay", str(path), *program),
        run_cli("rerun", str(path), "-o", str(tmp_path / "child.json"), *program),
    ]


def test_a_malformed_exchange_through_the_launcher_and_rerun_ends_with_the_message(
    tmp_path: Path, echo: EchoAPI
) -> None:
    for result in launched_with_a_malformed_exchange(tmp_path, echo):
        assert result.returncode != 0 and result.stdout == ""  # the program never ran
        last = result.stderr.strip().splitlines()[-1]
        assert last.startswith("otel-blackbox: error: ")
        assert last.endswith("step 0 (http_exchange): the response's 'status' must be an HTTP status code")


def test_a_malformed_exchange_through_the_launcher_is_one_line_and_exit_2(
    tmp_path: Path, echo: EchoAPI
) -> None:
    for result in launched_with_a_malformed_exchange(tmp_path, echo):
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
        assert result.returncode == 2
