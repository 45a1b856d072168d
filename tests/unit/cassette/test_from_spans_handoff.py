"""Cassettes built from spans: what the model did in an Agents SDK handoff, and the API hint.

The OpenAI Agents SDK records a handoff twice: the model's own call of ``transfer_to_<agent>``
(whose ``{}`` arguments openinference-instrumentation-openai-agents leaves out), and a TOOL span
``handoff to <agent>`` that no model asked for. A cassette from spans keeps the model's call with
the arguments it sent, so it lists the tool path a recording of the wire lists. Each run here is
a real program on the real SDK against examples/fake_llm.py, recorded by the processor alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_llm import FakeLLMServer
from helpers import EXAMPLES, run_cli

from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.model import Cassette, tool_call_sequence, tool_calls_of
from otel_blackbox._cassette.verify import verify_cassette

HANDOFF_AGENT = EXAMPLES / "handoff_agent.py"
FRAMEWORK_AGENT = EXAMPLES / "framework_agent.py"
# The fake model calls both of the triage agent's tools at once: its own and the handoff's; the
# refund agent then refunds (the question names no amount: the fake takes 1).
HANDED_OFF = [("lookup_order", {"order_id": "Alpha"}), ("transfer_to_refund_agent", {})]
TOOL_PATH = [*HANDED_OFF, ("refund_order", {"order_id": "Alpha", "amount": 1})]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return {**env, "PYTHONPATH": str(EXAMPLES), **extra}


def _run(argv: list[str], **env: str) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, env=_env(**env), timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def _cassette_of_the_run(db: Path, path: Path) -> Cassette:
    (run,) = json.loads(run_cli("runs", "--json", db=db, check=True).stdout)
    run_cli("cassette", "--run", run["run_id"], "-o", str(path), db=db, check=True)
    return load_cassette(path)


def _tool_path(cassette: Cassette) -> list[tuple[str, Any]]:
    return [(s.payload["toolName"], s.payload["toolInput"]) for s in cassette.steps_of("tool_call")]


def _calls_made(cassette: Cassette) -> list[tuple[str, Any]]:
    return [
        (c.tool_name, c.tool_input)
        for s in cassette.steps_of("model_output")
        for c in tool_calls_of(s.payload)
    ]


# --- the handoff ------------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True], ids=["sse"])  # JSON: the built-in rerun's refund incident
def test_a_handoff_from_spans_lists_the_tool_path_the_wire_lists(tmp_path: Path, stream: bool) -> None:
    with FakeLLMServer() as server:
        argv = [sys.executable, str(HANDOFF_AGENT), "--base-url", server.openai_base_url]
        argv += ["--stream"] if stream else []
        answer = _run([*argv, "--db", str(tmp_path / "prod.db")])
        wire_path = tmp_path / "wire.json"
        recorded = run_cli("record", "-o", str(wire_path), "--", *argv, "--db", str(tmp_path / "record.db"))
        assert recorded.returncode == 0, recorded.stderr
        # The refund agent was handed the conversation: its request offers its own tool.
        offered = [[t["name"] for t in body.get("tools", [])] for _, body in server.requests]
        assert (
            offered == [["lookup_order", "transfer_to_refund_agent"], ["refund_order"], ["refund_order"]] * 2
        )
    assert answer == "Final answer: refunded 1.00 on order Alpha"

    spans = _cassette_of_the_run(tmp_path / "prod.db", tmp_path / "spans.json")
    wire = load_cassette(wire_path)
    assert verify_cassette(spans).passed
    # Only what the model did: its transfer call, with the {} it sent; no "handoff to Refund Agent".
    assert _tool_path(spans) == _tool_path(wire) == TOOL_PATH
    assert _calls_made(spans) == _calls_made(wire) == TOOL_PATH
    assert tool_call_sequence(spans) == ["lookup_order", "transfer_to_refund_agent", "refund_order"]
    history = [s.payload["messages"] for s in spans.steps_of("model_input")][1]
    assert [(p["toolName"], p["toolInput"]) for p in history[1]["content"]] == HANDED_OFF
    # Step for step the same run, as far as the spans saw it.
    same = run_cli("diff", "--semantic", str(tmp_path / "spans.json"), str(wire_path))
    assert same.returncode == 0, same.stdout
    assert same.stdout.splitlines()[-1] == "outcome: no behavioural change: same status, result and tool path"
    assert spans.api is not None and wire.api is not None and spans.api["name"] == wire.api["name"]

    # The cassette from spans replays the program offline: the provider is stopped.
    replayed = subprocess.run(
        [sys.executable, "-m", "otel_blackbox.cli", "replay", str(tmp_path / "spans.json"), "--",
         *argv, "--db", str(tmp_path / "replay.db")],
        capture_output=True, text=True, env=_env(), timeout=120,
    )  # fmt: skip
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.strip().splitlines()[-1] == answer


# --- the API hint -----------------------------------------------------------------------------------

# (framework, streamed, HTTP capture on) -> the hint: the name when the spans tell the API, and
# stream when they tell that too (an SDK's own arguments do; the Agents SDK's spans and
# openai-v2's do not say whether the call streamed).
HINTS = [
    ("openinference-openai", False, False, {"name": "openai-chat", "stream": False}),
    ("pydantic-ai", False, False, {"name": "openai-chat"}),
    # HTTP capture: the wire's own request says it all.
    ("openai", True, True, {"name": "openai-chat", "stream": True}),
    ("agents", False, True, {"name": "openai-responses", "stream": False}),
]  # the other sources' hints are checked on tests/integration/test_frameworks.py's recordings (HINT_OF)


@pytest.mark.parametrize(
    ("framework", "stream", "capture", "hint"),
    HINTS,
    ids=[f"{f}{'-sse' if s else ''}{'-captured' if c else ''}" for f, s, c, _ in HINTS],
)
def test_a_cassette_from_spans_names_the_api_its_spans_tell(
    tmp_path: Path, framework: str, stream: bool, capture: bool, hint: dict[str, Any]
) -> None:
    db = tmp_path / "blackbox.db"
    with FakeLLMServer() as server:
        if framework.endswith("google-genai"):
            base_url = server.gemini_base_url
        else:
            base_url = (
                server.anthropic_base_url if framework.endswith("anthropic") else server.openai_base_url
            )
        argv = [sys.executable, str(FRAMEWORK_AGENT), framework, "--base-url", base_url, "--db", str(db)]
        _run(
            argv + (["--stream"] if stream else []),
            **({"OTEL_BLACKBOX_CAPTURE_HTTP": "true"} if capture else {}),
        )
    path = tmp_path / "run.json"
    cassette = _cassette_of_the_run(db, path)
    assert cassette.api == hint
    assert json.loads(path.read_text())["api"] == hint  # in the file, outside the hash chain
    assert verify_cassette(load_cassette(path)).passed
    streamed = {None: "", True: " (streamed)", False: " (not streamed)"}[hint.get("stream")]
    shown = run_cli("inspect", str(path), check=True).stdout.splitlines()
    assert shown[1] == f"recorded on: {hint['name']}{streamed}"
