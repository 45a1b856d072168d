"""Pydantic Logfire, and pydantic-ai's own instrumentation (the agent runs Logfire shows):

- ``--variant default`` (the ``logfire`` venv: logfire 5.4.0): an OpenAI SDK chat-completions tool
  loop against the fake provider, the client instrumented with ``logfire.instrument_openai(client)``:
  a span per call named by its template (``Chat Completion with {request_data[model]!r}``), the
  rendered name in ``logfire.msg``, ``request_data`` holding the model only, and the GenAI
  attributes (``gen_ai.input.messages`` / ``gen_ai.output.messages`` / ``gen_ai.tool.definitions``
  / ``gen_ai.usage.*``);
- ``--variant v1`` (same venv): ``logfire.instrument_openai(client, version=1)``: the legacy
  ``request_data`` (the request JSON: messages, tools) and ``response_data`` (``{message, usage}``)
  beside the GenAI attributes that carry no messages;
- ``--variant pydantic-ai`` (main venv): a pydantic-ai ``Agent`` (``OpenAIChatModel`` on the fake),
  ``agent.instrument = InstrumentationSettings(...)``: the agent-run span (``invoke_agent``,
  ``pydantic_ai.all_messages``, ``final_result``), ``chat`` spans and ``execute_tool`` spans.

In the first two the run is a ``logfire.span`` of the user's, and each tool call a ``logfire.span``
with the GenAI ``execute_tool`` attributes (as Logfire's own integrations write tool spans: see
``logfire/_internal/integrations/claude_agent_sdk.py``); the tool's error goes back to the model as
the tool's answer. Logfire makes its own tracer provider: ``logfire.configure(send_to_logfire=False,
additional_span_processors=[...])`` gives it the recorder and the exporter the fixture is written from.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import agent_kit

VARIANTS = ("default", "v1", "pydantic-ai")


@contextmanager
def logfire_recorded(args: Any) -> Iterator[str]:
    """``agent_kit.recorded`` for Logfire, whose tracer provider is its own: the fake provider's
    OpenAI URL, with Logfire configured to send nothing and to record into ``args.db``."""
    import logfire  # type: ignore[import-not-found, unused-ignore]
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))
    from fake_llm import FakeLLMServer

    from otel_blackbox import BlackboxConfig, BlackboxSpanProcessor

    agent_kit.SCENARIO.tool_error = args.scenario == "tool-error"
    spans = InMemorySpanExporter()
    logfire.configure(
        send_to_logfire=False,
        console=False,
        metrics=False,
        service_name="logfire-agent",
        inspect_arguments=False,
        additional_span_processors=[
            BlackboxSpanProcessor(config=BlackboxConfig(db_path=args.db)),
            SimpleSpanProcessor(spans),
        ],
    )
    with FakeLLMServer() as server:
        try:
            yield server.openai_base_url
        finally:
            logfire.force_flush()
            if args.otlp_out:
                agent_kit._write_otlp(Path(args.otlp_out), spans.get_finished_spans(), [])
            logfire.shutdown()


def call_tool(call_id: str, name: str, arguments: str) -> str:
    """One tool call in a Logfire span with the GenAI ``execute_tool`` attributes; its error (the
    span records it) goes back to the model as the tool's answer."""
    import logfire

    try:
        with logfire.span(
            f"execute_tool {name}",  # as Logfire's integrations name it: the template has no field
            **{
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.id": call_id,
                "gen_ai.tool.call.arguments": arguments,
            },
        ) as span:
            result = agent_kit.get_weather(**json.loads(arguments))
            span.set_attribute("gen_ai.tool.call.result", result)
            return result
    except RuntimeError as error:
        return f"Error: {error}"


def run_logfire(base_url: str, model: str, version: int) -> str:
    """A chat-completions tool loop, the client instrumented by Logfire (``version`` 1 or 2)."""
    import logfire

    with logfire.span("weather agent: {question}", question=agent_kit.QUESTION):
        return agent_kit.openai_tool_loop(
            base_url,
            model,
            call_tool,
            instrument=lambda client: logfire.instrument_openai(client, version=version),
        )


def run_pydantic_ai(run: agent_kit.Run) -> str:
    from pydantic_ai import Agent, InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel(
        run.model, provider=OpenAIProvider(base_url=run.openai_base_url, api_key="sk-fake")
    )
    agent = Agent(
        model, name="weather_agent", instructions=agent_kit.SYSTEM_PROMPT, tools=[agent_kit.get_weather]
    )
    agent.instrument = InstrumentationSettings(tracer_provider=run.tracer_provider)
    return str(agent.run_sync(agent_kit.QUESTION).output)


def main(argv: list[str] | None = None) -> int:
    args = agent_kit.parse_args(argv)
    variant = args.variant or "default"
    if variant not in VARIANTS:
        raise SystemExit(f"unknown variant {variant!r}: one of {VARIANTS}")
    if variant == "pydantic-ai":
        with agent_kit.recorded(args) as run:
            print(run_pydantic_ai(run))
    else:
        with logfire_recorded(args) as base_url:
            print(run_logfire(base_url, args.model, 1 if variant == "v1" else 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
