"""``rerun --max-cost USD``: a budget that stops a rerun before the model call it can no longer afford.

The incident is recorded with ``otel-blackbox record`` around tests/programs/rerun_agent.py (the real openai
SDK) against the fake provider, whose answers carry token counts as a real API's do; the rerun names
a priced model (gpt-4o-mini) or an unpriced one. A first rerun without a budget tells what each call
costs (the fake counts the same tokens each time); the budget is then set on a call's boundary. The
fake provider counts the requests it received: the counter, not the cassette, shows what was sent.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from fake_llm import CARELESS_MODEL, FakeLLMServer
from helpers import PROGRAMS, LoopbackAPI, run_cli

from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.model import Cassette, terminal_outcome
from otel_blackbox._cassette.verify import verify_cassette
from otel_blackbox._cost.cassettes import cassette_cost
from otel_blackbox._cost.prices import format_usd
from otel_blackbox._playback.agent.run import BuiltInRerun, rerun_built_in

AGENT = str(PROGRAMS / "rerun_agent.py")
PRICED = "gpt-4o-mini"
UNPRICED = "fake-model-x"
KEY = "sk-max-cost-test-0123456789"


class OrderAPI(LoopbackAPI):
    def __init__(self) -> None:
        super().__init__(lambda method, path, body: (200, {"order_id": 42, "status": "shipped"}))


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def orders() -> Iterator[OrderAPI]:
    with OrderAPI() as api:
        yield api


@pytest.fixture(autouse=True)
def _live_env(monkeypatch: pytest.MonkeyPatch, llm: FakeLLMServer) -> None:
    """The built-in agent's SDK finds the fake provider through its own variables."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)


def program(llm: FakeLLMServer, orders: OrderAPI) -> list[str]:
    return [sys.executable, AGENT, "--base-url", llm.openai_base_url, "--tool-url", orders.url]


@pytest.fixture(scope="module")
def incident(llm: FakeLLMServer, orders: OrderAPI, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two model calls (a tool call, a careless answer) and the order API's answer in between."""
    path = tmp_path_factory.mktemp("incident") / "incident.json"
    recorded = run_cli("record", "-o", str(path), "--", *program(llm, orders))
    assert recorded.returncode == 1, recorded.stderr  # the careless answer fails the program's check
    assert len([s for s in load_cassette(path).steps if s.type == "model_output"]) == 2
    return path


def call_prices(child: Path) -> list[Decimal]:
    prices = []
    for call in cassette_cost(load_cassette(child)).calls:
        assert call.price is not None and call.price.usd > 0
        prices.append(call.price.usd)
    return prices


def ending(cassette: Cassette) -> dict[str, Any]:
    last = cassette.steps[-1]
    assert last.type == "metadata"
    return dict(last.payload)


def model_steps(cassette: Cassette) -> int:
    return sum(1 for s in cassette.steps if s.type == "model_output")


def usd(amount: Decimal) -> str:
    return format(amount, "f")


# --- the built-in agent ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def builtin_prices(
    incident: Path, llm: FakeLLMServer, tmp_path_factory: pytest.TempPathFactory
) -> list[Decimal]:
    """What each call of the built-in agent's rerun costs, from a rerun without a budget (streamed:
    the agent asks a Chat stream for its usage chunk)."""
    child = tmp_path_factory.mktemp("reference") / "child.json"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", KEY)
        plan = BuiltInRerun(output=child, model=PRICED, stream=True, base_url=llm.openai_base_url)
        assert rerun_built_in(incident, plan) == 0
    prices = call_prices(child)
    assert len(prices) == 2
    return prices


def test_the_built_in_agent_stops_before_the_call_once_the_calls_so_far_reach_the_budget(
    incident: Path, llm: FakeLLMServer, builtin_prices: list[Decimal], tmp_path: Path
) -> None:
    first = builtin_prices[0]
    child = tmp_path / "child.json"
    sent = len(llm.requests)
    rerun = run_cli(
        "rerun", str(incident), "--model", PRICED, "--stream", "--max-cost", usd(first), "-o", str(child)
    )
    assert rerun.returncode == 1, rerun.stderr
    assert len(llm.requests) == sent + 1  # the second call was never sent
    cassette = load_cassette(child)
    assert verify_cassette(cassette).passed
    assert model_steps(cassette) == 1
    end = ending(cassette)
    assert (end["event"], end["reason"]) == ("run_failed", "max_cost")
    assert (end["maxCost"], end["costUsd"]) == (float(first), float(first))
    lines = rerun.stderr.splitlines()
    assert lines[-2] == (
        f"[blackbox] stopped before model call 2: the 1 model call so far cost {format_usd(first)}, "
        f"which reaches --max-cost ${first:f}"
    )
    assert lines[-1] == (
        f"[blackbox] rerun of {load_cassette(incident).id} by the built-in agent on openai-chat (model "
        f"{PRICED}): failed (max_cost) after 1 model call, 1 tool result from the incident -> {child} "
        f"(cost {format_usd(first)})"
    )
    # The child replays offline with the same agent, and stops where the budget stopped it.
    replayed = run_cli("replay", str(child))
    assert replayed.returncode == 1, replayed.stderr
    assert (
        replayed.stderr.splitlines()[-1] == f"[blackbox] replayed {child}: it stopped as recorded (max_cost)"
    )
    assert len(llm.requests) == sent + 1


def test_the_built_in_agent_makes_the_call_while_the_calls_so_far_are_below_the_budget(
    incident: Path,
    llm: FakeLLMServer,
    builtin_prices: list[Decimal],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    child = tmp_path / "child.json"
    sent = len(llm.requests)
    budget = builtin_prices[0] + Decimal("0.000000001")  # just above the first call: the second is made
    plan = BuiltInRerun(
        output=child, model=PRICED, stream=True, base_url=llm.openai_base_url, max_cost=budget
    )
    assert rerun_built_in(incident, plan) == 0
    assert len(llm.requests) == sent + 2
    cassette = load_cassette(child)
    assert terminal_outcome(cassette).status == "success" and model_steps(cassette) == 2
    total = sum(builtin_prices, Decimal(0))
    assert cassette_cost(cassette).usd == total > budget  # the last call may pass it: none follows
    # The summary, then (the careless incident's program raised on its answer) what the child cannot show.
    summary, unchecked = capsys.readouterr().err.splitlines()[-2:]
    assert summary.endswith(f" -> {child} (cost {format_usd(total)})")
    assert "failed in its program after its answer" in unchecked


@pytest.mark.parametrize("model", [UNPRICED, None], ids=["--model", "the-incident's"])
def test_the_built_in_agent_refuses_a_model_with_no_price_before_any_call(
    incident: Path, llm: FakeLLMServer, tmp_path: Path, model: str | None
) -> None:
    child = tmp_path / "child.json"
    sent = len(llm.requests)
    named = ["--model", model] if model else []  # the incident's own model is "careless": no price either
    refused = run_cli("rerun", str(incident), *named, "--max-cost", "1", "-o", str(child))
    assert refused.returncode == 2
    shown = model or CARELESS_MODEL
    assert refused.stderr.startswith(
        f"otel-blackbox: error: --max-cost: no price for model '{shown}' in genai-prices"
    )
    assert len(refused.stderr.splitlines()) == 1
    assert len(llm.requests) == sent and not child.exists()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--max-cost", "abc"], "not an amount in US dollars: 'abc'"),
        (["--max-cost", "0"], "a budget must be a positive amount in US dollars, not '0'"),
        (["--max-cost", "-1"], "a budget must be a positive amount in US dollars, not '-1'"),
        (["--max-cost", "nan"], "a budget must be a positive amount"),
        (["--max-cost", "1", "--script", "replies.json", "--", "python", "-c", "pass"],
         "--max-cost is a budget for a live model: --script answers without one"),
    ],
    ids=["not-a-number", "zero", "negative", "nan", "with-script"],
)  # fmt: skip
def test_a_budget_that_cannot_be_one_is_a_usage_error(
    incident: Path, tmp_path: Path, args: list[str], said: str
) -> None:
    (tmp_path / "replies.json").write_text('[{"type": "final_answer", "text": "ok"}]')
    child = tmp_path / "child.json"
    refused = run_cli("rerun", str(incident), "--model", PRICED, "-o", str(child), *args)
    assert refused.returncode == 2
    assert said in refused.stderr and len(refused.stderr.splitlines()) == 1
    assert not child.exists()


def test_a_dollar_sign_is_accepted(incident: Path, llm: FakeLLMServer, tmp_path: Path) -> None:
    child = tmp_path / "child.json"
    rerun = run_cli("rerun", str(incident), "--model", PRICED, "--max-cost", "$5", "-o", str(child))
    assert rerun.returncode == 0, rerun.stderr
    assert terminal_outcome(load_cassette(child)).status == "success"


# --- a program rerun -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def program_prices(
    incident: Path, llm: FakeLLMServer, orders: OrderAPI, tmp_path_factory: pytest.TempPathFactory
) -> list[Decimal]:
    """A program rerun under a budget it never reaches: it runs as without one, and says its cost."""
    child = tmp_path_factory.mktemp("program") / "child.json"
    rerun = run_cli(
        "rerun", str(incident), "--model", PRICED, "--max-cost", "100", "-o", str(child), "--",
        *program(llm, orders),
    )  # fmt: skip
    assert rerun.returncode == 0, rerun.stderr
    assert terminal_outcome(load_cassette(child)).status == "success"
    prices = call_prices(child)
    assert len(prices) == 2
    total = sum(prices, Decimal(0))
    assert rerun.stderr.splitlines() == [
        f"[blackbox] the rerun's 2 model calls cost {format_usd(total)} (--max-cost $100)"
    ]
    return prices


def test_a_program_gets_a_blackbox_400_for_the_call_the_budget_does_not_allow(
    incident: Path, llm: FakeLLMServer, orders: OrderAPI, program_prices: list[Decimal], tmp_path: Path
) -> None:
    first = program_prices[0]
    child = tmp_path / "child.json"
    sent, tool_calls = len(llm.requests), len(orders.received)
    rerun = run_cli(
        "rerun", str(incident), "--model", PRICED, "--max-cost", usd(first), "-o", str(child), "--",
        *program(llm, orders),
    )  # fmt: skip
    assert rerun.returncode == 1
    assert [body.get("model") for _, body in llm.requests[sent:]] == [PRICED]  # call 2 never went out
    assert len(orders.received) == tool_calls  # the tool's request was answered from the incident
    stop = (
        f"[blackbox] stopped before model call 2: the 1 model call so far cost {format_usd(first)}, "
        f"which reaches --max-cost ${first:f}"
    )
    assert "BadRequestError" in rerun.stderr and stop in rerun.stderr  # what the program's SDK raised
    assert rerun.stderr.splitlines()[-1] == f"otel-blackbox: error: {stop} ({child} holds the rerun so far)"
    cassette = load_cassette(child)
    assert verify_cassette(cassette).passed
    assert model_steps(cassette) == 1
    end = ending(cassette)
    assert (end["event"], end["reason"], end["maxCost"], end["costUsd"]) == (
        "run_failed", "max_cost", float(first), float(first)
    )  # fmt: skip


def test_a_program_calling_a_model_with_no_price_is_refused_at_that_call(
    incident: Path, llm: FakeLLMServer, orders: OrderAPI, tmp_path: Path
) -> None:
    """Without --model the program's own model decides: "careless" has no price, so its first call is
    refused, never sent."""
    child = tmp_path / "child.json"
    sent = len(llm.requests)
    rerun = run_cli("rerun", str(incident), "--max-cost", "1", "-o", str(child), "--", *program(llm, orders))
    assert rerun.returncode == 1
    assert len(llm.requests) == sent
    said = f"[blackbox] stopped before model call 1: no price for model '{CARELESS_MODEL}' in genai-prices"
    assert rerun.stderr.splitlines()[-1].startswith(f"otel-blackbox: error: {said}")
    cassette = load_cassette(child)
    assert model_steps(cassette) == 0
    end = ending(cassette)
    assert (end["reason"], end["model"]) == ("max_cost", CARELESS_MODEL)


def test_a_program_rerun_naming_a_model_with_no_price_is_refused_before_the_program_runs(
    incident: Path, llm: FakeLLMServer, orders: OrderAPI, tmp_path: Path
) -> None:
    child, ran = tmp_path / "child.json", tmp_path / "ran"
    sent = len(llm.requests)
    refused = run_cli(
        "rerun", str(incident), "--model", UNPRICED, "--max-cost", "1", "-o", str(child), "--",
        sys.executable, "-c", f"open({json.dumps(str(ran))}, 'w')",
    )  # fmt: skip
    assert refused.returncode == 2
    (line,) = refused.stderr.splitlines()
    assert line.startswith(
        f"otel-blackbox: error: Invalid value for --max-cost: no price for model '{UNPRICED}'"
    )
    assert ", so --max-cost cannot count its calls" in line and " in genai-prices " in line
    assert not ran.exists() and not child.exists() and len(llm.requests) == sent
