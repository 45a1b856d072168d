"""GenAI span attributes from their real producers (tests/conformance/agents/), against the fake
provider, in the main venv: opentelemetry-instrumentation-openai-v2 (content on the span, the latest
conventions) with util-genai's agent and tool spans, and pydantic-ai's own instrumentation. The run
read whole (``show -v``, a cassette that verifies) and the tool error named by ``errors``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import check_tool_error, check_whole_run, ran_to_its_end

# producer -> (its agent, --variant)
PRODUCERS: dict[str, tuple[str, str]] = {
    "openai-v2": ("openai_agent.py", "openai-v2"),
    "pydantic-ai": ("pydantic_ai_agent.py", ""),
}
ENDS_ON_TOOL_ERROR = {"pydantic-ai"}  # the tool's exception ends pydantic-ai's run


def _run(producer: str, db: Path, scenario: str) -> None:
    agent, variant = PRODUCERS[producer]
    raises = producer in ENDS_ON_TOOL_ERROR
    ran_to_its_end(agent, db, variant=variant, scenario=scenario, raises_on_tool_error=raises)


@pytest.mark.parametrize("producer", list(PRODUCERS))
def test_whole_run(producer: str, tmp_path: Path) -> None:
    db = tmp_path / "blackbox.db"
    _run(producer, db, "ok")
    check_whole_run(db, tmp_path)


@pytest.mark.parametrize("producer", list(PRODUCERS))
def test_tool_error(producer: str, tmp_path: Path) -> None:
    db = tmp_path / "blackbox.db"
    _run(producer, db, "tool-error")
    check_tool_error(db)
