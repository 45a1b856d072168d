"""Logfire's conformance (tests/conformance/agents/logfire_agent.py): ``logfire.instrument_openai``
in its default format and ``version=1``, in the ``logfire`` venv (logfire 5.4.0), and a pydantic-ai
agent run in the main venv; each run is shown whole and verifies as a cassette, and ``errors``
names the tool that raised.

Named apart from tests/unit/spans/conventions/test_logfire.py: test modules are named by their file
name alone (tests/conftest.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import check_tool_error, check_whole_run, run_agent

# variant -> the venv it runs in (None: the main one).
VENVS: dict[str, str | None] = {"default": "logfire", "v1": "logfire", "pydantic-ai": None}


@pytest.mark.parametrize("variant", sorted(VENVS))
def test_whole_run(variant: str, tmp_path: Path) -> None:
    db = tmp_path / "blackbox.db"
    ran = run_agent("logfire_agent.py", db, venv=VENVS[variant], variant=variant)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "Final answer" in ran.stdout
    check_whole_run(db, tmp_path)


@pytest.mark.parametrize("variant", sorted(VENVS))
def test_tool_error(variant: str, tmp_path: Path) -> None:
    db = tmp_path / "blackbox.db"
    ran = run_agent("logfire_agent.py", db, venv=VENVS[variant], variant=variant, scenario="tool-error")
    # The SDK loops send the error back to the model; pydantic-ai's run ends in it.
    assert ran.returncode == (1 if variant == "pydantic-ai" else 0), ran.stdout + ran.stderr
    assert "weather service unavailable" in ran.stdout + ran.stderr
    check_tool_error(db)
