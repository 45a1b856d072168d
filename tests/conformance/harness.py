"""The conformance check every instrumentation family passes, on its real package.

``run_agent`` runs a family's agent (tests/conformance/agents/) in the interpreter its pins need;
``check_whole_run`` then reads the database as a user would: ``show -v`` shows the system prompt,
the question, the tool call with its arguments, the tool result and the final answer; ``cassette
--run`` writes a cassette that ``verify`` passes; ``check_tool_error``: ``errors`` names the tool
that raised.

A family whose pins conflict with the main venv runs in ``.venv-conformance/<family>`` (made by
``make conformance-venvs`` from tests/conformance/requirements/<family>.txt). Without it the test
is skipped, unless BLACKBOX_CONFORMANCE_REQUIRED=1 (``make test`` sets it): then it fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT, run_cli

AGENTS = ROOT / "tests" / "conformance" / "agents"
VENVS = ROOT / ".venv-conformance"
SYSTEM_PROMPT = "You are a weather assistant. Always use the tools."
QUESTION = "What's the weather in Lisbon?"
TOOL_NAME = "get_weather"
TOOL_ERROR = "weather service unavailable"


def python_for(family: str | None) -> str:
    """The interpreter of a family's venv (None: the main one); skips, or fails under make, without it."""
    if family is None:
        return sys.executable
    python = VENVS / family / "bin" / "python"
    if not python.exists():
        message = f"no {python}: `make conformance-venvs` builds it"
        if os.environ.get("BLACKBOX_CONFORMANCE_REQUIRED") == "1":
            pytest.fail(message)
        pytest.skip(message)  # intentional: a plain pytest run without the family's venv
    return str(python)


def run_agent(
    agent: str,
    db: Path,
    *,
    venv: str | None = None,
    scenario: str = "ok",
    variant: str = "",
    model: str = "gpt-4o-mini",
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """The agent run to its end (a tool error may end it in an exception: the recording is the point)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OTEL_BLACKBOX"))}
    paths = [str(AGENTS), str(ROOT / "src")]
    argv = [python_for(venv), str(AGENTS / agent), "--db", str(db), "--scenario", scenario, "--model", model]
    if variant:
        argv += ["--variant", variant]
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=240,
        env={**base, "PYTHONPATH": os.pathsep.join(paths), **(env or {})},
    )


def ran_to_its_end(
    agent: str,
    db: Path,
    *,
    venv: str | None = None,
    variant: str = "",
    scenario: str = "ok",
    raises_on_tool_error: bool = False,
) -> None:
    """The agent run as a user runs it: to its final answer, which quotes the tool's error in the
    tool-error scenario (an agent that sends the error back to the model), or, with
    ``raises_on_tool_error``, ended by the tool's exception (a framework that re-raises it)."""
    done = run_agent(agent, db, venv=venv, variant=variant, scenario=scenario)
    output = done.stdout + done.stderr
    if scenario == "tool-error" and raises_on_tool_error:
        assert done.returncode != 0 and TOOL_ERROR in done.stderr, output
        return
    assert done.returncode == 0, output
    assert "Final answer" in done.stdout, output
    if scenario == "tool-error":
        assert TOOL_ERROR in done.stdout, output


def shown(db: Path) -> str:
    """``show -v --full`` of every trace in the database, oldest first, as one text (unshortened:
    smolagents puts the system prompt after 3,400 characters of its own)."""
    listed = json.loads(run_cli("list", "--json", "--limit", "50", db=db, check=True).stdout)
    texts = []
    for trace in reversed(listed):
        texts.append(run_cli("show", "-v", "--full", trace["trace_id"], db=db, check=True).stdout)
    return "\n".join(texts)


def check_whole_run(db: Path, tmp_path: Path, *, answer_word: str = "sunny") -> str:
    """The run shown whole, and a cassette of it that verifies; returns the text ``show -v`` gave."""
    text = shown(db)
    for expected in (SYSTEM_PROMPT, QUESTION, TOOL_NAME, "Lisbon", answer_word):
        assert expected in text, f"show -v lacks {expected!r}:\n{text}"
    assert "Final answer" in text, text
    (run,) = json.loads(run_cli("runs", "--json", db=db, check=True).stdout)
    cassette = tmp_path / "run.json"
    made = run_cli("cassette", "--run", run["run_id"], "-o", str(cassette), db=db)
    assert made.returncode == 0, made.stderr + "\n" + text
    verified = run_cli("verify", str(cassette))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    steps = [s["type"] for s in json.loads(cassette.read_text())["steps"]]
    assert steps.count("model_input") >= 2 and "tool_call" in steps and "tool_result" in steps, steps
    return text


def check_tool_error(db: Path) -> str:
    """``errors`` names the tool that raised."""
    listed = run_cli("errors", db=db).stdout
    assert TOOL_NAME in listed, listed
    return listed
