"""The official OpenTelemetry OpenAI instrumentation (opentelemetry-instrumentation-openai-v2 2.4b0,
with opentelemetry-util-genai 1.1b0), its content sent as OTel log records, in the main venv: a plain
openai SDK tool loop against the fake provider.

``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=EVENT_ONLY`` (with
``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``; util-genai 1.1b0 knows no other
conventions: ``=true`` and the per-message events of the older ones are gone): each ``chat`` span
keeps its model, finish reasons and tokens as attributes, and its content goes in one
``gen_ai.client.inference.operation.details`` log record (OTLP ``eventName``; an empty body;
``gen_ai.input.messages`` / ``gen_ai.output.messages`` as structured attribute values, not JSON
text) carrying the span's trace and span ids.

The loop reports its agent and its tool calls through util-genai's ``TelemetryHandler``
(``invoke_agent`` and ``execute_tool`` spans, which in this mode hold no arguments or result), as an
application on this stack does.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

import agent_kit

ENV = {
    "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "EVENT_ONLY",
}


def main(argv: list[str] | None = None) -> int:
    args = agent_kit.parse_args(argv)
    if args.variant not in ("", "event-only"):
        raise SystemExit(f"unknown variant {args.variant!r}: event-only is the one")
    os.environ.update(ENV)  # read when instrumenting and on each call

    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.util.genai.handler import TelemetryHandler

    with agent_kit.recorded(args) as run:
        instrumentor = OpenAIInstrumentor()  # type: ignore[no-untyped-call]
        instrumentor.instrument(tracer_provider=run.tracer_provider, logger_provider=run.logger_provider)
        handler = TelemetryHandler(tracer_provider=run.tracer_provider, logger_provider=run.logger_provider)
        try:
            with handler.invoke_local_agent(request_model=run.model, agent_name="weather agent"):
                print(agent_kit.openai_tool_loop(run.openai_base_url, run.model, _tool_call(handler)))
        finally:
            instrumentor.uninstrument()
    return 0


def _tool_call(handler: Any) -> Callable[[str, str, str], str]:
    """A tool call run in util-genai's ``execute_tool`` span."""

    def call_tool(call_id: str, name: str, arguments: str) -> str:
        with handler.tool(name, tool_call_id=call_id, tool_type="function") as invocation:
            invocation.arguments = json.loads(arguments)
            result = agent_kit.get_weather(**invocation.arguments)
            invocation.tool_result = result
            return result

    return call_tool


if __name__ == "__main__":
    sys.exit(main())
