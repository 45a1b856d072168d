"""OpenLLMetry's OpenAI instrumentation (opentelemetry-instrumentation-openai, Traceloop's), on its
own: a chat-completions tool loop against the fake provider, one ``get_weather`` tool.

- ``--variant old``: 0.40.14 (venv ``openllmetry-old``, openai 1.88): a ``openai.chat`` span per
  call with indexed attributes, ``gen_ai.prompt.N.{role,content,tool_call_id,tool_calls.M.*}``,
  ``gen_ai.completion.N.{role,content,finish_reason,tool_calls.M.*}``, ``llm.request.functions.N.*``,
  ``llm.request.type``, ``gen_ai.usage.prompt_tokens`` / ``completion_tokens``,
  ``llm.usage.total_tokens``;
- ``--variant new``: 0.62.4 (venv ``traceloop``, openai 3.63): the same span, its content as GenAI
  attributes (``gen_ai.input.messages`` / ``gen_ai.output.messages``, ``gen_ai.operation.name``).

Content is recorded as ``TRACELOOP_TRACE_CONTENT`` says (unset: true; the fixtures
``<variant>-nocontent-ok.json`` were written with it false). The instrumentation makes
no span of the agent's or the tool's: the tool runs in a span of the user's own (the OTel API's,
named after it), which records the tool's exception; the error goes back to the model as the tool's
answer, as agent frameworks do. (traceloop_agent.py has Traceloop's own ``@workflow`` / ``@tool``.)
"""

from __future__ import annotations

import json
import sys

import agent_kit

VARIANTS = ("old", "new")


def run(run: agent_kit.Run, variant: str) -> str:
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor  # type: ignore[import-not-found, unused-ignore]
    from opentelemetry.instrumentation.openai.version import __version__  # type: ignore[import-not-found, unused-ignore]

    if (variant == "old") != __version__.startswith("0.40."):
        raise SystemExit(
            f"variant {variant!r} needs its venv: this one has the instrumentation {__version__}"
        )

    OpenAIInstrumentor().instrument(tracer_provider=run.tracer_provider)
    tracer = run.tracer_provider.get_tracer("openllmetry_agent")

    def call_tool(_call_id: str, name: str, arguments: str) -> str:
        with tracer.start_as_current_span(name):
            return agent_kit.get_weather(**json.loads(arguments))

    with tracer.start_as_current_span("weather_agent"):
        return agent_kit.openai_tool_loop(run.openai_base_url, run.model, call_tool)


def main(argv: list[str] | None = None) -> int:
    args = agent_kit.parse_args(argv)
    variant = args.variant or "new"
    if variant not in VARIANTS:
        raise SystemExit(f"unknown variant {variant!r}: one of {VARIANTS}")
    with agent_kit.recorded(args) as recording:
        print(run(recording, variant))
    return 0


if __name__ == "__main__":
    sys.exit(main())
