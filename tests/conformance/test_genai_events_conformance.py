"""The GenAI events family's conformance: Strands Agents (tests/conformance/agents/strands_agent.py,
in the ``strands`` venv: strands-agents 1.62.0) with its per-message span events (``default``) and
its ``gen_ai.client.inference.operation.details`` span events (``latest``), and the official
opentelemetry-instrumentation-openai-v2 (tests/conformance/agents/openai_v2_events_agent.py, main
venv) with ``EVENT_ONLY`` content, sent as log records; each run is shown whole and verifies as a
cassette, and ``errors`` names the tool that raised.

Named apart from tests/unit/spans/conventions/test_genai_events.py: test modules are named by their
file name alone (tests/conftest.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import check_tool_error, check_whole_run, ran_to_its_end

# (agent, variant, the venv it runs in: None is the main one)
RUNS: dict[str, tuple[str, str, str | None]] = {
    "strands-default": ("strands_agent.py", "default", "strands"),
    "strands-latest": ("strands_agent.py", "latest", "strands"),
    "openai-v2-event-only": ("openai_v2_events_agent.py", "event-only", None),
}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_whole_run(name: str, tmp_path: Path) -> None:
    agent, variant, venv = RUNS[name]
    ran_to_its_end(agent, tmp_path / "blackbox.db", venv=venv, variant=variant)
    check_whole_run(tmp_path / "blackbox.db", tmp_path)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_tool_error(name: str, tmp_path: Path) -> None:
    agent, variant, venv = RUNS[name]
    ran_to_its_end(agent, tmp_path / "blackbox.db", venv=venv, variant=variant, scenario="tool-error")
    check_tool_error(tmp_path / "blackbox.db")
