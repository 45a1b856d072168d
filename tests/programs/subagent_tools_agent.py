"""An agent whose tools are agents (the OpenAI Agents SDK's ``Agent.as_tool``), recorded by the processor.

    python tests/programs/subagent_tools_agent.py --base-url http://127.0.0.1:8400/v1 --db blackbox.db

The planner's tools ``ask_weather`` and ``ask_calendar`` each run a sub-agent with a conversation of
its own (its own instructions, the tool's input as its question, its own tool: ``get_weather`` or
``list_events``); the planner sees each as one tool call answered by the sub-agent's answer. Against
examples/fake_llm.py a question that says "both" makes the planner call the two at once, and the SDK
runs them concurrently: their spans interleave in time. Spans go to ``--db`` through a
BlackboxSpanProcessor and openinference-instrumentation-openai-agents. The answer is printed.
"""

from __future__ import annotations

import argparse
import asyncio

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from otel_blackbox import BlackboxSpanProcessor

API_KEY = "sk-fake-not-a-real-key"
QUESTION = "Plan my Saturday in Paris: ask both."


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}, 21 C"


def list_events(city: str) -> str:
    """What is on in a city."""
    return f"a jazz concert in {city} at 20:00"


def run(provider: TracerProvider, base_url: str, question: str, model_name: str) -> str:
    from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_export_api_key
    from openai import AsyncOpenAI
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    set_tracing_export_api_key("")
    instrumentor = OpenAIAgentsInstrumentor()  # one for the process: each question runs under it
    if not instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.instrument(tracer_provider=provider)
    client = AsyncOpenAI(base_url=base_url, api_key=API_KEY, max_retries=0)
    model = OpenAIResponsesModel(model_name, openai_client=client)
    weather = Agent(
        name="Weather Agent",
        instructions="You tell the weather.",
        model=model,
        tools=[function_tool(get_weather)],
    )
    calendar = Agent(
        name="Calendar Agent",
        instructions="You find events.",
        model=model,
        tools=[function_tool(list_events)],
    )
    planner = Agent(
        name="Planner",
        instructions="You plan a day: ask the weather and calendar agents.",
        model=model,
        tools=[
            weather.as_tool(tool_name="ask_weather", tool_description="Ask the weather agent."),
            calendar.as_tool(tool_name="ask_calendar", tool_description="Ask the calendar agent."),
        ],
    )

    async def go() -> str:
        return str((await Runner.run(planner, question, max_turns=6)).final_output)

    return asyncio.run(go())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True, help="the provider, e.g. the fake's /v1")
    parser.add_argument("--db", default="blackbox.db")
    parser.add_argument("--question", action="append", help="asked in turn, a run (trace) each")
    parser.add_argument("--model", default="gpt-4o-mini")
    args = parser.parse_args(argv)
    provider = TracerProvider(resource=Resource.create({"service.name": "subagent-tools-agent"}))
    provider.add_span_processor(BlackboxSpanProcessor(args.db))
    try:
        answers = [run(provider, args.base_url, q, args.model) for q in args.question or [QUESTION]]
    finally:
        provider.shutdown()
    print("\n".join(answers))


if __name__ == "__main__":
    main()
