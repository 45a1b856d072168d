"""Google ADK (google-adk 2.13): an LlmAgent with the weather tool, run once by an InMemoryRunner
against the fake's Gemini endpoint, its spans on the global tracer provider (ADK's tracer is
``trace.get_tracer("gcp.vertex.agent")``, its content log records go to the global logger provider).

Variants (``--variant``), ADK's own switches (google/adk/telemetry/context.py, _schema_version.py):

- ``defaults``: nothing set. Schema v2: ``invoke_agent`` / ``generate_content`` / ``execute_tool``
  spans without content (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT is unset: NO_CONTENT).
- ``v1``: ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1, the legacy schema: ``call_llm`` spans carrying
  ``gcp.vertex.agent.llm_request`` / ``llm_response`` and tool spans ``gcp.vertex.agent.tool_call_args``
  / ``tool_response`` (ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS, on by default).
- ``latest``: OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental and
  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY: the GenAI attributes on the spans.
- ``events``: the same opt-in with EVENT_ONLY: the content as log records
  (``gen_ai.client.inference.operation.details``).
"""

from __future__ import annotations

import argparse
import asyncio
import os

from agent_kit import QUESTION, SYSTEM_PROMPT, Run, get_weather, parse_args, recorded

VARIANTS: dict[str, dict[str, str]] = {
    "defaults": {},
    "v1": {"ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN": "1"},
    "latest": {
        "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY",
    },
    "events": {
        "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "EVENT_ONLY",
    },
}


async def ask(run: Run) -> str:
    # Only in ADK's venv (mypy runs in the main one, where google-adk is not installed).
    from google.adk.agents import LlmAgent  # type: ignore[import-untyped, import-not-found, unused-ignore]
    from google.adk.models import Gemini  # type: ignore[import-untyped, import-not-found, unused-ignore]
    from google.adk.runners import InMemoryRunner  # type: ignore[import-untyped, import-not-found, unused-ignore]
    from google.genai import types

    model = Gemini(model=run.model, base_url=run.gemini_base_url, client_kwargs={"api_key": "fake"})
    agent = LlmAgent(name="weather_agent", model=model, instruction=SYSTEM_PROMPT, tools=[get_weather])
    runner = InMemoryRunner(agent=agent, app_name="conformance")
    session = await runner.session_service.create_session(app_name="conformance", user_id="user")
    message = types.Content(role="user", parts=[types.Part(text=QUESTION)])
    answer = ""
    async for event in runner.run_async(user_id="user", session_id=session.id, new_message=message):
        if event.is_final_response() and event.content and event.content.parts:
            answer = "".join(part.text or "" for part in event.content.parts)
    await runner.close()
    return answer


def main(args: argparse.Namespace) -> None:
    # Read by ADK when a run's telemetry config is made: set before anything of ADK runs.
    for key in ("GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT"):
        os.environ.pop(key, None)
    os.environ.update(VARIANTS[args.variant or "defaults"])
    os.environ["GOOGLE_API_KEY"] = "fake"
    with recorded(args) as run:
        from opentelemetry import _logs, trace

        # ADK records on the global providers: ours, before ADK is imported.
        trace.set_tracer_provider(run.tracer_provider)
        _logs.set_logger_provider(run.logger_provider)
        print(asyncio.run(ask(run)))


if __name__ == "__main__":
    arguments = parse_args()
    if arguments.model == "gpt-4o-mini":  # the kit's default: ADK's Gemini class wants a Gemini name
        arguments.model = "gemini-2.5-flash"
    main(arguments)
