"""OpenInference instrumentors on their real frameworks (tests/conformance/agents/), against the fake
provider: the run read whole (``show -v``, a cassette that verifies) and the tool error named by
``errors``.

The OpenAI SDK and LangChain run in the main venv; smolagents, LiteLLM, CrewAI and LlamaIndex in a
venv each (tests/conformance/requirements/<name>.txt): their pins (openai 2, and CrewAI's and
LiteLLM's dependencies) are not the main venv's.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import check_tool_error, check_whole_run, ran_to_its_end

# framework -> (its agent, its venv (None: the main one), --variant)
FRAMEWORKS: dict[str, tuple[str, str | None, str]] = {
    "openai": ("openai_agent.py", None, "openinference"),
    "langchain": ("langchain_agent.py", None, ""),
    "smolagents": ("smolagents_agent.py", "smolagents", ""),
    "litellm": ("litellm_agent.py", "litellm", ""),
    "crewai": ("crewai_agent.py", "crewai", ""),
    "llamaindex": ("llamaindex_agent.py", "llamaindex", ""),
}
# Where the tool's exception ends the run (the others send it back to the model).
ENDS_ON_TOOL_ERROR = {"langchain"}


def _run(framework: str, db: Path, scenario: str) -> None:
    agent, venv, variant = FRAMEWORKS[framework]
    raises = framework in ENDS_ON_TOOL_ERROR
    ran_to_its_end(agent, db, venv=venv, variant=variant, scenario=scenario, raises_on_tool_error=raises)


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
def test_whole_run(framework: str, tmp_path: Path) -> None:
    db = tmp_path / "blackbox.db"
    _run(framework, db, "ok")
    check_whole_run(db, tmp_path)


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
def test_tool_error(framework: str, tmp_path: Path) -> None:
    db = tmp_path / "blackbox.db"
    _run(framework, db, "tool-error")
    check_tool_error(db)
