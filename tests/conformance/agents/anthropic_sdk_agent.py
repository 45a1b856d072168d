"""The Anthropic SDK (main venv: anthropic 2.x, which emits its own spans, scope
``com.anthropic.sdk.python``, through the global tracer provider): a Messages tool loop against the
fake provider, with one ``get_weather`` tool.

- ``--variant openinference``: openinference-instrumentation-anthropic too, as its docs show: each
  call is then two LLM-looking spans, the instrumentor's (with the conversation) and the SDK's under
  it (metadata and tokens only), which must count as one call;
- ``--variant sdk``: the SDK's own spans alone (no conversation recorded).

The agent and its tool are plain OTel spans of the user's own (``tool.name`` on the tool's).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import agent_kit
from opentelemetry import trace

VARIANTS = ("openinference", "sdk")
TOOL: Any = {
    "name": agent_kit.TOOL_NAME,
    "description": agent_kit.TOOL_DESCRIPTION,
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def tool_loop(run: agent_kit.Run) -> str:
    from anthropic import Anthropic

    tracer = run.tracer_provider.get_tracer("weather_agent")
    messages: list[Any] = [{"role": "user", "content": agent_kit.QUESTION}]
    model = "claude-sonnet-4-5" if run.model == "gpt-4o-mini" else run.model
    with (
        tracer.start_as_current_span("weather_agent", attributes={"openinference.span.kind": "AGENT"}),
        Anthropic(base_url=run.anthropic_base_url, api_key="sk-ant-fake", max_retries=0) as client,
    ):
        for _ in range(4):
            reply = client.messages.create(
                model=model, max_tokens=256, system=agent_kit.SYSTEM_PROMPT, messages=messages, tools=[TOOL]
            )
            messages.append({"role": "assistant", "content": [b.model_dump() for b in reply.content]})
            calls = [b for b in reply.content if b.type == "tool_use"]
            if not calls:
                return "".join(b.text for b in reply.content if b.type == "text")
            results: list[dict[str, Any]] = []
            for call in calls:
                attributes = {
                    "openinference.span.kind": "TOOL",
                    "tool.name": call.name,
                    "input.value": json.dumps(call.input),
                }
                with tracer.start_as_current_span(call.name, attributes=attributes) as span:
                    try:
                        result = agent_kit.get_weather(str(dict(call.input).get("city", "")))
                        span.set_attribute("output.value", result)
                        results.append({"type": "tool_result", "tool_use_id": call.id, "content": result})
                    except RuntimeError as error:
                        span.record_exception(error)
                        span.set_status(trace.StatusCode.ERROR, str(error))
                        results.append(
                            {"type": "tool_result", "tool_use_id": call.id, "content": f"Error: {error}",
                             "is_error": True}
                        )  # fmt: skip
            messages.append({"role": "user", "content": results})
    return "(no answer)"


def main(argv: list[str] | None = None) -> int:
    args = agent_kit.parse_args(argv)
    variant = args.variant or "openinference"
    if variant not in VARIANTS:
        raise SystemExit(f"unknown variant {variant!r}: one of {VARIANTS}")
    with agent_kit.recorded(args) as run:
        trace.set_tracer_provider(run.tracer_provider)  # the SDK's own spans go to the global provider
        if variant == "openinference":
            from openinference.instrumentation.anthropic import AnthropicInstrumentor

            AnthropicInstrumentor().instrument(tracer_provider=run.tracer_provider)
        print(tool_loop(run))
    return 0


if __name__ == "__main__":
    sys.exit(main())
