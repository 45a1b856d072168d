"""CrewAI (.venv-conformance/crewai): an ``Agent`` with one ``get_weather`` tool and an ``LLM`` on the
fake provider's OpenAI base URL, asked directly (``Agent.kickoff``), under
openinference-instrumentation-crewai and, for the model calls CrewAI makes through the OpenAI SDK,
openinference-instrumentation-openai (as CrewAI's users instrument it).

CrewAI writes its own system prompt from the agent's role, goal and backstory (the backstory here is
the kit's system prompt). Not a ``Crew`` with a ``Task``: CrewAI's task prompt ends "you MUST return
the actual complete content", and the fake provider fills the tool's ``city`` with the prompt's last
capitalised word ("MUST"). Its spans: the agent (``<role>.kickoff``, AGENT: ``agent.backstory``...),
the tool (``get_weather.run``, TOOL: ``tool.name``, ``input.value`` the arguments, ``output.value``)
and, from the OpenAI instrumentor, a ``ChatCompletion`` LLM span per call. The tool's error goes
back to the model as the tool's output.
"""

from __future__ import annotations

import os
import sys

import agent_kit


def main(argv: list[str] | None = None) -> int:
    args = agent_kit.parse_args(argv)
    os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"  # no telemetry of CrewAI's own to its servers
    os.environ["CREWAI_TRACING_ENABLED"] = "false"
    from crewai import LLM, Agent  # type: ignore[import-not-found]
    from crewai.tools import tool  # type: ignore[import-not-found]
    from openinference.instrumentation.crewai import CrewAIInstrumentor
    from openinference.instrumentation.openai import OpenAIInstrumentor

    @tool(agent_kit.TOOL_NAME)  # type: ignore[untyped-decorator]
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        return agent_kit.get_weather(city)

    with agent_kit.recorded(args) as run:
        CrewAIInstrumentor().instrument(tracer_provider=run.tracer_provider)
        OpenAIInstrumentor().instrument(tracer_provider=run.tracer_provider)
        llm = LLM(model=run.model, base_url=run.openai_base_url, api_key="sk-fake")
        agent = Agent(
            role="Weather assistant",
            goal="Answer questions about the weather",
            backstory=agent_kit.SYSTEM_PROMPT,
            tools=[get_weather],
            llm=llm,
            max_iter=3,
        )
        print(agent.kickoff(agent_kit.QUESTION).raw)
    return 0


if __name__ == "__main__":
    sys.exit(main())
