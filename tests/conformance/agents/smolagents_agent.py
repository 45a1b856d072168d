"""smolagents (.venv-conformance/smolagents): a ``ToolCallingAgent`` on ``OpenAIServerModel``
against the fake provider, one ``get_weather`` tool, under openinference-instrumentation-smolagents.

It writes OpenInference spans: the run (``ToolCallingAgent.run``, AGENT), a step each
(``Step N``, CHAIN), the model calls (``OpenAIServerModel.generate``, LLM: ``llm.input_messages.N.*``
whose system message holds the instructions, ``llm.output_messages`` with ``message.tool_calls``,
``llm.tools.N.tool.json_schema``, ``llm.token_count.*``) and the tools (``GetWeatherTool``, TOOL:
``tool.name``, ``input.value`` the arguments, ``output.value`` the result). The agent's instructions
go into its own system prompt; the tool's error goes back to the model as an observation.
"""

from __future__ import annotations

import sys

import agent_kit


def main(argv: list[str] | None = None) -> int:
    args = agent_kit.parse_args(argv)
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool  # type: ignore[import-not-found]

    @tool  # type: ignore[untyped-decorator]
    def get_weather(city: str) -> str:
        """The current weather in a city.

        Args:
            city: The city.
        """
        return agent_kit.get_weather(city)

    with agent_kit.recorded(args) as run:
        SmolagentsInstrumentor().instrument(tracer_provider=run.tracer_provider)
        model = OpenAIServerModel(model_id=run.model, api_base=run.openai_base_url, api_key="sk-fake")
        agent = ToolCallingAgent(
            tools=[get_weather], model=model, instructions=agent_kit.SYSTEM_PROMPT, max_steps=1
        )
        print(agent.run(agent_kit.QUESTION))
    return 0


if __name__ == "__main__":
    sys.exit(main())
