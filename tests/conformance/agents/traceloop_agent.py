"""Traceloop's SDK (traceloop-sdk 0.62.4, venv ``traceloop``): the chat-completions tool loop of
openllmetry_agent.py under ``@workflow(name="weather_workflow")`` and ``@agent(name="weather_agent")``,
the tool under ``@tool(name="get_weather")``, the OpenAI SDK instrumented by ``Traceloop.init``
(OpenLLMetry's opentelemetry-instrumentation-openai 0.62.4).

The decorators' spans (``<name>.<kind>``) carry ``traceloop.span.kind`` (workflow, agent, tool),
``traceloop.entity.name``, ``traceloop.entity.input`` (JSON ``{"args": [...], "kwargs": {...}}``) and
``traceloop.entity.output`` (the JSON of what the function returned); a tool's exception is recorded
on its span, and goes back to the model as the tool's answer.

``Traceloop.init`` adds its span processor to the global tracer provider when one is set: the run's
provider is made global first, and Traceloop's exporter is an in-memory one (nothing leaves the
machine), so the spans reach the black box through the run's own processors.
"""

from __future__ import annotations

import json
import os
import sys

import agent_kit


def run(run: agent_kit.Run) -> str:
    os.environ.setdefault("TRACELOOP_TELEMETRY", "false")
    from opentelemetry import trace
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from traceloop.sdk import Traceloop  # type: ignore[import-not-found, unused-ignore]
    from traceloop.sdk.decorators import agent, tool, workflow  # type: ignore[import-not-found, unused-ignore]
    from traceloop.sdk.instruments import Instruments  # type: ignore[import-not-found, unused-ignore]

    trace.set_tracer_provider(run.tracer_provider)
    Traceloop.init(
        app_name="weather_app",
        exporter=InMemorySpanExporter(),
        disable_batch=True,
        telemetry_enabled=False,
        instruments={Instruments.OPENAI},
    )

    @tool(name=agent_kit.TOOL_NAME)  # type: ignore[untyped-decorator, unused-ignore]
    def get_weather(city: str) -> str:
        return agent_kit.get_weather(city)

    @agent(name="weather_agent")  # type: ignore[untyped-decorator, unused-ignore]
    def weather_agent(question: str) -> str:
        return agent_kit.openai_tool_loop(
            run.openai_base_url, run.model, lambda _id, _name, arguments: get_weather(**json.loads(arguments))
        )

    @workflow(name="weather_workflow")  # type: ignore[untyped-decorator, unused-ignore]
    def weather_workflow(question: str) -> str:
        return str(weather_agent(question))

    return str(weather_workflow(agent_kit.QUESTION))


def main(argv: list[str] | None = None) -> int:
    args = agent_kit.parse_args(argv)
    with agent_kit.recorded(args) as recording:
        print(run(recording))
    return 0


if __name__ == "__main__":
    sys.exit(main())
