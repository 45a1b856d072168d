"""What every conformance agent shares: the scenario, the recorder, and the fixture it can write.

Each agent (``tests/conformance/agents/<family>_agent.py``) runs one real instrumentation package in
its own interpreter (the main venv, or a venv of its own that ``make`` builds when its pins
conflict) against the loopback fake provider (examples/fake_llm.py), with:

- a system prompt, a user prompt, one tool (``get_weather``) called with arguments, its result, and
  a final answer;
- ``--scenario tool-error``: the same run, but the tool raises (``errors`` must name it).

It records with ``BlackboxSpanProcessor`` into ``--db`` (and, where the family sends content as log
records, ``BlackboxLogRecordProcessor``), and with ``--otlp-out`` also writes what the
instrumentation produced as OTLP/JSON (``{"traces": ExportTraceServiceRequest, "logs":
ExportLogsServiceRequest}``): the committed fixtures under tests/data/conventions/ are written so.
Stdlib and the OTel SDK only here: this file runs in every family's venv.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

SYSTEM_PROMPT = "You are a weather assistant. Always use the tools."
QUESTION = "What's the weather in Lisbon?"
CITY = "Lisbon"
TOOL_NAME = "get_weather"
TOOL_DESCRIPTION = "The current weather in a city."
TOOL_ERROR = "weather service unavailable"


# The tool, as an OpenAI chat-completions tool definition.
OPENAI_TOOL: Any = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": TOOL_DESCRIPTION,
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def get_weather(city: str) -> str:
    """The current weather in a city."""
    if SCENARIO.tool_error:
        raise RuntimeError(TOOL_ERROR)
    return json.dumps({"city": city, "temperature_c": 21, "conditions": "sunny"})


def openai_tool_loop(
    base_url: str,
    model: str,
    call_tool: Callable[[str, str, str], str],
    instrument: Callable[[Any], None] | None = None,
) -> str:
    """Chat completions (the openai SDK, any version the family's venv has) until the model answers;
    ``call_tool(call_id, name, arguments)`` runs a tool, its RuntimeError goes back to the model as the
    tool's answer, as agent frameworks do; ``instrument(client)`` instruments the client first."""
    from openai import OpenAI

    messages: list[Any] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": QUESTION},
    ]
    with OpenAI(base_url=base_url, api_key="sk-fake", max_retries=0) as client:
        if instrument is not None:
            instrument(client)
        for _ in range(4):
            reply = client.chat.completions.create(model=model, messages=messages, tools=[OPENAI_TOOL])
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


@dataclass
class Scenario:
    tool_error: bool = False


SCENARIO = Scenario()


@dataclass
class Run:
    """The recording of one agent run: the provider every instrumentor gets, and the fake's URLs."""

    tracer_provider: TracerProvider
    logger_provider: Any  # opentelemetry.sdk._logs.LoggerProvider (private module in the SDK)
    openai_base_url: str
    anthropic_base_url: str
    gemini_base_url: str
    model: str


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True, help="the black box database to record into")
    parser.add_argument("--otlp-out", help="also write the spans and log records as OTLP/JSON")
    parser.add_argument("--scenario", choices=("ok", "tool-error"), default="ok")
    parser.add_argument("--model", default="gpt-4o-mini")
    parser.add_argument("--variant", default="", help="a family's own variant (a schema, a mode)")
    return parser.parse_args(argv)


@contextmanager
def recorded(args: argparse.Namespace) -> Iterator[Run]:
    """The fake provider on 127.0.0.1 and the providers recording into ``args.db``; flushed, shut
    down and (with --otlp-out) written as OTLP/JSON on the way out, even when the agent raised."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))
    from fake_llm import FakeLLMServer

    from otel_blackbox import BlackboxConfig, BlackboxSpanProcessor

    SCENARIO.tool_error = args.scenario == "tool-error"
    config = BlackboxConfig(db_path=args.db)
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BlackboxSpanProcessor(config=config))
    spans = InMemorySpanExporter()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider, logs = _logger_provider(config)
    with FakeLLMServer() as server:
        try:
            yield Run(
                tracer_provider,
                logger_provider,
                server.openai_base_url,
                server.anthropic_base_url,
                server.gemini_base_url,
                args.model,
            )
        finally:
            tracer_provider.force_flush()
            logger_provider.force_flush()
            if args.otlp_out:
                _write_otlp(Path(args.otlp_out), spans.get_finished_spans(), logs.get_finished_logs())
            tracer_provider.shutdown()
            logger_provider.shutdown()


def _logger_provider(config: Any) -> tuple[Any, Any]:
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

    provider = LoggerProvider()
    from otel_blackbox import BlackboxLogRecordProcessor

    provider.add_log_record_processor(BlackboxLogRecordProcessor(config=config))
    exporter = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    return provider, exporter


def _write_otlp(path: Path, spans: Any, logs: Any) -> None:
    from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]  # no types-protobuf here
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    document = {"traces": MessageToDict(encode_spans(spans))}
    if logs:
        document["logs"] = MessageToDict(encode_logs(logs))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
