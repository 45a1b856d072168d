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
from collections.abc import Callable
from typing import Any

import agent_kit

VARIANTS = ("old", "new")
TOOL = {
    "type": "function",
    "function": {
        "name": agent_kit.TOOL_NAME,
        "description": agent_kit.TOOL_DESCRIPTION,
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def tool_loop(base_url: str, model: str, call_tool: Callable[[str, str, str], str]) -> str:
    """Chat completions until the model answers; ``call_tool(call_id, name, arguments)`` runs a tool
    (its RuntimeError is the tool's answer)."""
    from openai import OpenAI

    messages: list[Any] = [
        {"role": "system", "content": agent_kit.SYSTEM_PROMPT},
        {"role": "user", "content": agent_kit.QUESTION},
    ]
    with OpenAI(base_url=base_url, api_key="sk-fake", max_retries=0) as client:
        for _ in range(4):
            reply = client.chat.completions.create(model=model, messages=messages, tools=[TOOL])  # type: ignore[list-item]
            message = reply.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            calls = [c for c in message.tool_calls or [] if c.type == "function"]
            if not calls:
                return message.content or ""
            for call in calls:
                try:
                    result = call_tool(call.id, call.function.name, call.function.arguments)
                except RuntimeError as error:
                    result = f"Error: {error}"
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return "(no answer)"


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
        return tool_loop(run.openai_base_url, run.model, call_tool)


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
