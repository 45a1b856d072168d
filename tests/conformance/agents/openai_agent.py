"""The OpenAI SDK (main venv): a chat-completions tool loop against the fake provider, one
``get_weather`` tool, under one of two instrumentations:

- ``--variant openinference``: openinference-instrumentation-openai (an LLM span per
  ``chat.completions.create``: ``llm.input_messages.N.*``, ``llm.output_messages.N.*``,
  ``llm.tools.N.tool.json_schema``, ``llm.token_count.*``); the agent and its tool are OpenInference
  spans of the user's own (``OITracer``'s ``agent`` and ``tool`` decorators), as its docs show;
- ``--variant openai-v2``: the official opentelemetry-instrumentation-openai-v2 with
  ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY`` and
  ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` (a ``chat`` span per call with
  ``gen_ai.input.messages`` / ``gen_ai.output.messages`` / ``gen_ai.system_instructions`` /
  ``gen_ai.usage.*``); the agent and its tool are opentelemetry-util-genai's ``invoke_agent`` and
  ``execute_tool`` spans.

The tool's error goes back to the model as the tool's answer, as agent frameworks do.
"""

from __future__ import annotations

import json
import os
import sys

import agent_kit

VARIANTS = ("openinference", "openai-v2")


def run_openinference(run: agent_kit.Run) -> str:
    from openinference.instrumentation import OITracer, TraceConfig
    from openinference.instrumentation.openai import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=run.tracer_provider)
    tracer = OITracer(run.tracer_provider.get_tracer(__name__), config=TraceConfig())

    @tracer.tool(name=agent_kit.TOOL_NAME, description=agent_kit.TOOL_DESCRIPTION)
    def get_weather(city: str) -> str:
        return agent_kit.get_weather(city)

    @tracer.agent(name="weather_agent")
    def agent(question: str) -> str:
        return agent_kit.openai_tool_loop(
            run.openai_base_url, run.model, lambda _id, _name, arguments: get_weather(**json.loads(arguments))
        )

    return str(agent(agent_kit.QUESTION))


def run_openai_v2(run: agent_kit.Run) -> str:
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.util.genai.handler import get_telemetry_handler

    OpenAIInstrumentor().instrument(  # type: ignore[no-untyped-call]
        tracer_provider=run.tracer_provider, logger_provider=run.logger_provider
    )
    handler = get_telemetry_handler(tracer_provider=run.tracer_provider, logger_provider=run.logger_provider)

    def call_tool(call_id: str, name: str, arguments: str) -> str:
        invocation = handler.tool(name, tool_call_id=call_id, tool_type="function")
        with invocation:
            invocation.arguments = json.loads(arguments)
            invocation.tool_result = agent_kit.get_weather(**json.loads(arguments))
            return str(invocation.tool_result)

    with handler.invoke_local_agent(request_model=run.model, agent_name="weather_agent"):
        return agent_kit.openai_tool_loop(run.openai_base_url, run.model, call_tool)


def main(argv: list[str] | None = None) -> int:
    args = agent_kit.parse_args(argv)
    variant = args.variant or "openinference"
    if variant not in VARIANTS:
        raise SystemExit(f"unknown variant {variant!r}: one of {VARIANTS}")
    with agent_kit.recorded(args) as run:
        print(run_openinference(run) if variant == "openinference" else run_openai_v2(run))
    return 0


if __name__ == "__main__":
    sys.exit(main())
