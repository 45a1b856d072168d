"""pydantic-ai (main venv): an ``Agent`` with ``agent.instrument = True`` on ``OpenAIChatModel``
against the fake provider, one ``get_weather`` tool.

Its instrumentation writes GenAI spans in the latest conventions (``invoke_agent weather_agent``,
``chat MODEL``, ``running tools``, ``execute_tool get_weather``): ``gen_ai.input.messages`` /
``gen_ai.output.messages`` in the ``{role, parts}`` shape (tool results as ``tool_call_response``
parts of a user message), ``gen_ai.system_instructions``, ``gen_ai.tool.definitions``,
``gen_ai.usage.*``, and on the tool ``gen_ai.tool.call.arguments`` / ``gen_ai.tool.call.result``.
The tool's error ends the run (pydantic-ai does not send an exception back to the model).
"""

from __future__ import annotations

import sys

import agent_kit


def main(argv: list[str] | None = None) -> int:
    args = agent_kit.parse_args(argv)
    from opentelemetry import trace
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    with agent_kit.recorded(args) as run:
        trace.set_tracer_provider(run.tracer_provider)  # instrument=True: the global provider
        provider = OpenAIProvider(base_url=run.openai_base_url, api_key="sk-fake")
        agent = Agent(
            OpenAIChatModel(run.model, provider=provider),
            name="weather_agent",
            instructions=agent_kit.SYSTEM_PROMPT,
        )
        agent.instrument = True  # the global tracer provider (pydantic-ai 2: no constructor argument)

        @agent.tool_plain
        def get_weather(city: str) -> str:
            """The current weather in a city."""
            return agent_kit.get_weather(city)

        print(agent.run_sync(agent_kit.QUESTION).output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
