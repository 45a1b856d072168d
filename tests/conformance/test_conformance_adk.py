"""Google ADK (google-adk 2.13, its own venv: .venv-conformance/adk) against the fake Gemini
endpoint, in each of its telemetry variants (tests/conformance/agents/adk_agent.py): the run read
whole (``show -v``, a cassette that verifies) and the tool error named by ``errors``.

``defaults`` records no content: ``show -v`` says why and which setting turns it on, and ``cassette
--run`` refuses in one line naming that setting.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness import QUESTION, SYSTEM_PROMPT, check_tool_error, check_whole_run, run_agent, shown
from helpers import run_cli

AGENT = "adk_agent.py"
VENV = "adk"
MODEL = "gemini-2.5-flash"
WITH_CONTENT = ("v1", "latest", "events")
SETTING = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


def _run(db: Path, variant: str, scenario: str = "ok") -> None:
    done = run_agent(AGENT, db, venv=VENV, scenario=scenario, variant=variant, model=MODEL)
    if scenario == "ok":
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Final answer" in done.stdout, done.stdout + done.stderr
    else:  # the tool's exception ends ADK's run
        assert "weather service unavailable" in done.stderr, done.stdout + done.stderr


@pytest.mark.parametrize("variant", WITH_CONTENT)
def test_whole_run(variant: str, tmp_path: Path) -> None:
    db = tmp_path / "blackbox.db"
    _run(db, variant)
    check_whole_run(db, tmp_path)


@pytest.mark.parametrize("variant", ("defaults", *WITH_CONTENT))
def test_tool_error(variant: str, tmp_path: Path) -> None:
    db = tmp_path / "blackbox.db"
    _run(db, variant, "tool-error")
    check_tool_error(db)


def test_defaults_say_what_turns_content_on(tmp_path: Path) -> None:
    db = tmp_path / "blackbox.db"
    _run(db, "defaults")
    text = shown(db)
    assert "get_weather" in text, text
    assert SETTING in text, text  # why the model calls show no messages, and what turns them on
    assert QUESTION not in text and SYSTEM_PROMPT not in text, text
    (run,) = json.loads(run_cli("runs", "--json", db=db, check=True).stdout)
    made = run_cli("cassette", "--run", run["run_id"], "-o", str(tmp_path / "run.json"), db=db)
    assert made.returncode != 0, made.stdout
    assert not (tmp_path / "run.json").exists()
    lines = [line for line in made.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and SETTING in lines[0], made.stderr
