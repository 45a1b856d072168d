"""Strands Agents (strands-agents, .venv-conformance/strands): an ``Agent`` on its ``OpenAIModel``
against the fake provider, one ``get_weather`` tool.

Strands traces through the global tracer provider (``strands.telemetry.tracer.Tracer`` takes it when
first made), so the run's provider is set as the global one before the agent exists. It writes
``invoke_agent`` / ``execute_event_loop_cycle`` / ``chat`` / ``execute_tool`` spans with the content
as span events:

- ``--variant default``: per-message events (``gen_ai.system.message``, ``gen_ai.user.message``,
  ``gen_ai.assistant.message``, ``gen_ai.tool.message``, ``gen_ai.choice``) whose ``content`` /
  ``message`` is the JSON of Strands's content blocks;
- ``--variant latest`` (``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental,
  gen_ai_tool_definitions``): ``gen_ai.client.inference.operation.details`` events holding
  ``gen_ai.input.messages`` / ``gen_ai.output.messages`` / ``gen_ai.system_instructions``.
"""

from __future__ import annotations

import os
import sys

import agent_kit

OPT_IN = {
    "default": "",
    "latest": "gen_ai_latest_experimental,gen_ai_tool_definitions",
}


def main(argv: list[str] | None = None) -> int:
    args = agent_kit.parse_args(argv)
    variant = args.variant or "default"
    if variant not in OPT_IN:
        raise SystemExit(f"unknown variant {variant!r}: one of {sorted(OPT_IN)}")
    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = OPT_IN[variant]  # read when Strands's Tracer is made

    from opentelemetry import trace
    from strands import Agent, tool  # type: ignore[import-not-found, unused-ignore]
    from strands.models.openai import OpenAIModel  # type: ignore[import-not-found, unused-ignore]

    @tool  # type: ignore[untyped-decorator, unused-ignore]
    def get_weather(city: str) -> str:
        """The current weather in a city.

        Args:
            city: The city.
        """
        return agent_kit.get_weather(city)

    with agent_kit.recorded(args) as run:
        trace.set_tracer_provider(run.tracer_provider)
        model = OpenAIModel(
            client_args={"base_url": run.openai_base_url, "api_key": "sk-fake"},
            model_id=run.model,
        )
        agent = Agent(
            model=model,
            system_prompt=agent_kit.SYSTEM_PROMPT,
            tools=[get_weather],
            callback_handler=None,
        )
        result = agent(agent_kit.QUESTION)
        print(str(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
