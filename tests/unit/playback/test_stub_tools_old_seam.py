"""``replay --stub-tools`` on a pydantic-ai version without the seam: one warning, the tools run.

pydantic-ai before 1.80 has no capabilities, so no ``wrap_tool_execute`` hook to answer a tool
from. ``make setup`` installs pydantic-ai 1.70 beside the venv (``$(VENV)/old-pydantic-ai``, with
pip's ``--target``); put first on PYTHONPATH, it is the pydantic_ai examples/ledger_agent.py runs
with. The run must be unharmed (exit 0, the recorded answer), and its tools really run: the ledger
grows, which is what the warning says.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from fake_llm import FakeLLMServer  # examples/ is on sys.path (conftest.py)
from helpers import EXAMPLES

OLD_PYDANTIC_AI = Path(sys.prefix) / "old-pydantic-ai"  # the venv's: the Makefile's $(VENV)/old-pydantic-ai
AGENT = EXAMPLES / "ledger_agent.py"
ANSWER = "Final answer: order Alpha: paid 12.00 | refunded 12.00 on order Alpha"
WARNING = "[blackbox] --stub-tools cannot answer pydantic-ai tools"

pytestmark = pytest.mark.skipif(
    not OLD_PYDANTIC_AI.is_dir(),
    reason=f"no pydantic-ai 1.70 at {OLD_PYDANTIC_AI}: `make setup` installs it",
)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return {**env, "PYTHONPATH": os.pathsep.join([str(OLD_PYDANTIC_AI), str(EXAMPLES)])}


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, env=_env(), timeout=120)


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "otel_blackbox.cli", *args]


@dataclass(frozen=True)
class Runs:
    recorded: subprocess.CompletedProcess[str]
    replayed: subprocess.CompletedProcess[str]
    ledger_recorded: list[str]  # the ledger after the recording
    ledger_replayed: list[str]  # and after the replay


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    folder = tmp_path_factory.mktemp("old-seam")
    cassette, ledger = folder / "run.json", folder / "ledger.txt"
    with FakeLLMServer() as server:
        program = [sys.executable, str(AGENT), "pydantic-ai", "--base-url", server.openai_base_url]
        program += ["--ledger", str(ledger)]
        recorded = _run(_cli("record", "-o", str(cassette), "--", *program, "--db", str(folder / "a.db")))
        ledger_recorded = ledger.read_text().splitlines() if ledger.exists() else []
    # The server is gone: the model is answered from the cassette.
    replayed = _run(
        _cli("replay", str(cassette), "--stub-tools", "--", *program, "--db", str(folder / "b.db"))
    )
    ledger_replayed = ledger.read_text().splitlines() if ledger.exists() else []
    return Runs(recorded, replayed, ledger_recorded, ledger_replayed)


def test_the_program_runs_pydantic_ai_1_70() -> None:
    code = (
        "import importlib.metadata as m, pydantic_ai as p; print(m.version('pydantic-ai-slim'), p.__file__)"
    )
    done = _run([sys.executable, "-c", code])
    assert done.returncode == 0, done.stderr
    version, where = done.stdout.split()
    assert version == "1.70.0"
    assert Path(where).is_relative_to(OLD_PYDANTIC_AI)


def test_the_recording_ran_the_tools(runs: Runs) -> None:
    assert runs.recorded.returncode == 0, runs.recorded.stderr
    assert runs.recorded.stdout.strip() == ANSWER
    assert runs.ledger_recorded == ["refund Alpha 12.00"]
    assert WARNING not in runs.recorded.stderr


def test_replay_stub_tools_warns_once_and_the_tools_run_unharmed(runs: Runs) -> None:
    replayed = runs.replayed
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.strip() == runs.recorded.stdout.strip() == ANSWER
    assert runs.ledger_replayed == ["refund Alpha 12.00", "refund Alpha 12.00"]  # the tool ran again
    assert replayed.stderr.count(WARNING) == 1, replayed.stderr
    (line,) = [line for line in replayed.stderr.splitlines() if "[blackbox]" in line]
    assert WARNING in line and "they run for real" in line
