"""Rerun an incident without its program: the built-in agent on the real SDKs, against the fake provider.

Each incident is recorded with ``otel_blackbox.session(mode="record")`` around a small agent on one
API's official SDK (tests/programs/rerun_agent.py, tests/programs/gemini_agent.py) whose tool calls
an order API on 127.0.0.1. The built-in agent then reruns it on each of the four APIs (16 pairs,
JSON and SSE both used on every API): the child verifies, holds the incident's tool results, and the
order API received nothing more. The child then replays offline with the same agent, with the
network blocked.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gemini_agent
import pytest
import rerun_agent
from fake_llm import FakeLLMServer
from helpers import LoopbackAPI, blocked_network

from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.model import Cassette, terminal_outcome
from otel_blackbox._cassette.verify import verify_cassette
from otel_blackbox._playback.agent.run import BuiltInRerun, replay_built_in, rerun_built_in
from otel_blackbox._playback.session import session

APIS = ("openai-chat", "openai-responses", "anthropic", "gemini")
MODEL_OF = {
    "openai-chat": "gpt-4o-mini",
    "openai-responses": "gpt-4.1-mini",
    "anthropic": "claude-sonnet-4-5",
    "gemini": "gemini-2.5-flash",
}
AGENTS = {
    "openai-chat": rerun_agent.chat_agent,
    "openai-responses": rerun_agent.responses_agent,
    "anthropic": rerun_agent.anthropic_agent,
}
KEYS = {
    "OPENAI_API_KEY": "sk-builtin-test-0123456789",
    "ANTHROPIC_API_KEY": "sk-ant-builtin-test-0123456789",
    "GEMINI_API_KEY": "AIzaSy-builtin-test-0123456789",
}


class OrderAPI(LoopbackAPI):
    """The incident's tool API: POST /orders/lookup answers the order's status."""

    def __init__(self) -> None:
        super().__init__(
            lambda method, path, body: (200, {"order_id": json.loads(body)["order_id"], "status": "shipped"})
        )


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def base_url(llm: FakeLLMServer, api: str) -> str:
    return {"anthropic": llm.anthropic_base_url, "gemini": llm.gemini_base_url}.get(api, llm.openai_base_url)


def record_incident(llm: FakeLLMServer, api: str, path: Path) -> int:
    """The incident of ``api``, recorded; how many requests its tool sent the order API."""
    with OrderAPI() as orders:
        tool = rerun_agent.order_tool(orders.url, "web")
        with session(mode="record", cassette=path):
            if api == "gemini":
                url = base_url(llm, api)
                gemini_agent.run(url, model=MODEL_OF[api], stream=True, tool_url=orders.url)
            else:
                AGENTS[api](base_url(llm, api), MODEL_OF[api], tool)
        return len(orders.received)


@pytest.fixture(scope="module")
def incidents(llm: FakeLLMServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("incidents")
    paths = {}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in KEYS.items():
            patch.setenv(name, value)
        for api in APIS:
            paths[api] = folder / f"{api}.json"
            assert record_incident(llm, api, paths[api]) >= 1
    return paths


def tool_outcomes(cassette: Cassette) -> list[tuple[str, Any]]:
    return [
        (s.payload["toolName"], s.payload.get("result", s.payload.get("error")))
        for s in cassette.steps
        if s.type == "tool_result"
    ]


PAIRS = [(source, target) for source in APIS for target in APIS]


@pytest.mark.parametrize(("source", "target"), PAIRS, ids=[f"{s}->{t}" for s, t in PAIRS])
def test_an_incident_reruns_on_every_api_with_its_tools_answered_from_the_recording(
    llm: FakeLLMServer, incidents: dict[str, Path], tmp_path: Path, source: str, target: str
) -> None:
    incident = load_cassette(incidents[source])
    assert incident.api is not None and incident.api["name"] == source
    stream = (APIS.index(source) + APIS.index(target)) % 2 == 1  # every API both ways, over its four pairs
    child_path = tmp_path / "child.json"
    with OrderAPI() as orders:
        plan = BuiltInRerun(
            output=child_path,
            provider=target,
            model=MODEL_OF[target],
            stream=stream,
            base_url=base_url(llm, target),
        )
        assert rerun_built_in(incidents[source], plan) == 0
        assert orders.received == []  # no tool ran: the order API heard nothing

    child = load_cassette(child_path)
    assert verify_cassette(child).passed
    assert child.parent_id == incident.id
    assert child.agent == {
        "kind": "built-in",
        "provider": target,
        "model": MODEL_OF[target],
        "toolMatch": "arguments",
    }
    assert child.api == {"name": target, "stream": stream}
    assert terminal_outcome(child).status == "success"
    assert tool_outcomes(child) == tool_outcomes(incident) != []
    first_child = next(s.payload for s in child.steps if s.type == "model_input")
    first_incident = next(s.payload for s in incident.steps if s.type == "model_input")
    assert [t["name"] for t in first_child["tools"]] == [t["name"] for t in first_incident["tools"]]
    assert first_child["model"] == MODEL_OF[target]

    with blocked_network() as attempts:
        assert replay_built_in(child_path) == 0
    assert attempts == []
