"""The OpenLLMetry family's conformance: opentelemetry-instrumentation-openai 0.40.14 (``old``, in the
``openllmetry-old`` venv) and 0.62.4 (``new``, in the ``traceloop`` venv) on their own
(tests/conformance/agents/openllmetry_agent.py), and traceloop-sdk 0.62.4's ``@workflow`` /
``@agent`` / ``@tool`` with ``Traceloop.init`` (tests/conformance/agents/traceloop_agent.py, the
``traceloop`` venv); each run is shown whole and verifies as a cassette, and ``errors`` names the
tool that raised.

Named apart from tests/unit/spans/conventions/test_openllmetry.py: test modules are named by their
file name alone (tests/conftest.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import check_tool_error, check_whole_run, ran_to_its_end

# (agent, variant, the venv it runs in)
RUNS: dict[str, tuple[str, str, str]] = {
    "old": ("openllmetry_agent.py", "old", "openllmetry-old"),
    "new": ("openllmetry_agent.py", "new", "traceloop"),
    "traceloop": ("traceloop_agent.py", "", "traceloop"),
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
