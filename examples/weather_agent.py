"""A small tool-using weather agent on the real OpenAI SDK, recorded by otel-blackbox.

The agent asks the model, runs the tools it calls, and asks again until it gets a text answer.
OpenInference instruments the SDK (one LLM span per model call); the agent adds an AGENT root
span and a TOOL span per tool execution. Every span goes to a local SQLite flight recorder.

    python examples/weather_agent.py --question "What's the weather in Paris?"

Without --base-url it talks to a FakeLLMServer started in-process, so no API key is needed.
--hang-in-tool and --fail-tool reproduce the two failures the recorder is for: a process killed
in the middle of a tool call, and a tool that raises.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
from fake_llm import FakeLLMServer
from openai import OpenAI
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionAssistantMessageParam,
    ChatCompletionMessage,
    ChatCompletionMessageParam,
    ChatCompletionToolParam,
)
from openinference.instrumentation import get_attributes_from_context, using_session
from openinference.instrumentation.openai import OpenAIInstrumentor
from openinference.semconv.trace import (
    OpenInferenceMimeTypeValues,
    OpenInferenceSpanKindValues,
    SpanAttributes,
)
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Span, Status, StatusCode, Tracer
from opentelemetry.util.types import AttributeValue

from otel_blackbox import BlackboxSpanProcessor

DEFAULT_QUESTION = "What's the weather in Paris, and the 3 day forecast? I need both."
DEFAULT_MODEL = "gpt-4o-mini"
FAKE_API_KEY = "sk-fake-not-a-real-key"
MAX_TURNS = 5  # model calls per run, so a model that keeps calling tools can't loop forever
SYSTEM_PROMPT = "You are a weather assistant. Use the tools to answer; quote their results."

KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND
JSON_MIME = OpenInferenceMimeTypeValues.JSON.value


# --- tools -----------------------------------------------------------------------------------


@dataclass
class WeatherTools:
    """The agent's tools; the flags make get_weather misbehave on purpose. With ``api`` (the URL of
    examples/weather_api.py) they ask that HTTP API, as a production tool would."""

    fail: bool = False
    hang: bool = False
    api: str | None = None

    def get_weather(self, city: str) -> str:
        if self.hang:
            # The demo SIGKILLs the process here, with the tool span open.
            trace_id = trace.get_current_span().get_span_context().trace_id
            print(f"IN_TOOL {trace_id:032x}", flush=True)
            time.sleep(600)
        if self.fail:
            raise ValueError(f"weather service unavailable for {city}")
        if self.api:
            return httpx.get(f"{self.api}/weather", params={"city": city}, timeout=10).raise_for_status().text
        return json.dumps(
            {"city": city, "temperature_c": _temperature(city, 0), "conditions": "partly cloudy"}
        )

    def get_forecast(self, city: str, days: int = 3) -> str:
        if self.api:
            body = {"city": city, "days": days}
            return httpx.post(f"{self.api}/forecast", json=body, timeout=10).raise_for_status().text
        temps = [_temperature(city, day) for day in range(1, max(1, min(days, 7)) + 1)]
        return json.dumps({"city": city, "days": len(temps), "daily_high_c": temps})

    def functions(self) -> dict[str, Callable[..., str]]:
        return {"get_weather": self.get_weather, "get_forecast": self.get_forecast}


def _temperature(city: str, day: int) -> int:
    # Stable per city, so runs are reproducible.
    return 8 + (sum(map(ord, city)) + 3 * day) % 17


TOOLS: list[ChatCompletionToolParam] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "City name, e.g. Paris"}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_forecast",
            "description": "Daily high temperatures for the next few days.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name, e.g. Paris"},
                    "days": {"type": "integer", "minimum": 1, "maximum": 7},
                },
                "required": ["city", "days"],
            },
        },
    },
]


def run_tool(tracer: Tracer, tools: WeatherTools, name: str, arguments: str) -> str:
    """Execute one tool call in a TOOL span; a failure becomes an error string for the model."""
    attributes: dict[str, AttributeValue] = {
        # session.id etc. from using_session(), as the instrumentors copy them onto LLM spans.
        **dict(get_attributes_from_context()),
        KIND: OpenInferenceSpanKindValues.TOOL.value,
        SpanAttributes.TOOL_NAME: name,
        SpanAttributes.TOOL_PARAMETERS: arguments,
        SpanAttributes.INPUT_VALUE: arguments,
        SpanAttributes.INPUT_MIME_TYPE: JSON_MIME,
    }
    # Exceptions are handled here (the model gets told), so the span must not re-record them.
    with tracer.start_as_current_span(
        name, attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as span:
        try:
            function = tools.functions()[name]
            result = function(**json.loads(arguments))
            span.set_status(StatusCode.OK)
        except Exception as exc:
            span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
            result = f"error: {type(exc).__name__}: {exc}"
        span.set_attribute(SpanAttributes.OUTPUT_VALUE, result)
        return result


# --- agent -----------------------------------------------------------------------------------


class WrongAnswer(Exception):
    """The model's answer failed the agent's own check (``--check-answer``)."""


@contextmanager
def agent_span(tracer: Tracer, name: str, question: str, session_id: str) -> Iterator[Span]:
    """The AGENT root span; using_session also stamps session.id on the instrumented LLM spans."""
    attributes = {
        KIND: OpenInferenceSpanKindValues.AGENT.value,
        SpanAttributes.INPUT_VALUE: question,
        SpanAttributes.SESSION_ID: session_id,
    }
    with using_session(session_id), tracer.start_as_current_span(name, attributes=attributes) as span:
        yield span


def complete(
    client: OpenAI,
    model: str,
    messages: list[ChatCompletionMessageParam],
    stream: bool,
    settings: dict[str, Any] | None = None,
) -> ChatCompletion:
    """One model call; ``settings`` are more of the SDK's arguments (``{"seed": 7}``)."""
    extra = settings or {}
    if not stream:
        completion: ChatCompletion = client.chat.completions.create(
            model=model, messages=messages, tools=TOOLS, **extra
        )
        return completion
    with client.chat.completions.stream(
        model=model, messages=messages, tools=TOOLS, stream_options={"include_usage": True}, **extra
    ) as events:
        return events.get_final_completion()


def assistant_turn(message: ChatCompletionMessage) -> ChatCompletionAssistantMessageParam:
    # Rebuilt by hand: a dump of the SDK's object carries fields the API doesn't accept back.
    turn: ChatCompletionAssistantMessageParam = {"role": "assistant", "content": message.content}
    calls = [c for c in message.tool_calls or [] if c.type == "function"]
    if calls:
        turn["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.function.name, "arguments": c.function.arguments},
            }
            for c in calls
        ]
    return turn


def run_agent(
    client: OpenAI,
    tracer: Tracer,
    question: str,
    *,
    model: str = DEFAULT_MODEL,
    stream: bool = False,
    tools: WeatherTools | None = None,
    session_id: str | None = None,
    on_trace: Callable[[str], None] | None = None,
    check_answer: bool = False,
) -> tuple[str, str]:
    """Answer the question; returns (answer, trace id as 32 hex digits).

    on_trace gets the trace id as soon as the root span starts, so a run that dies can still be found.
    check_answer: a guardrail, an answer that quotes none of the tool results raises WrongAnswer
    (inside the root span, which records it).
    """
    tools = tools or WeatherTools()
    session_id = session_id or f"session-{uuid.uuid4().hex[:12]}"
    messages: list[ChatCompletionMessageParam] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": question},
    ]
    with agent_span(tracer, "weather-agent", question, session_id) as span:
        trace_id = f"{span.get_span_context().trace_id:032x}"
        if on_trace:
            on_trace(trace_id)
        answer = "(no answer: too many tool rounds)"
        results: list[str] = []
        for _ in range(MAX_TURNS):
            message = complete(client, model, messages, stream).choices[0].message
            messages.append(assistant_turn(message))
            calls = [c for c in message.tool_calls or [] if c.type == "function"]
            if not calls:
                answer = message.content or ""
                break
            for call in calls:
                result = run_tool(tracer, tools, call.function.name, call.function.arguments)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
                results.append(result)
        span.set_attribute(SpanAttributes.OUTPUT_VALUE, answer)
        if check_answer and results and not any(result in answer for result in results):
            raise WrongAnswer(f"the answer quotes none of the tool results: {answer!r}")
        span.set_status(StatusCode.OK)
        return answer, trace_id


# --- CLI -------------------------------------------------------------------------------------


def make_tracer_provider(db_path: str, service_name: str) -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(BlackboxSpanProcessor(db_path=db_path))
    return provider


def announce_trace(trace_id: str) -> None:
    print(f"TRACE {trace_id}", flush=True)


def parse_args(argv: Sequence[str] | None, description: str | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--db", default="./blackbox.db", help="SQLite file to record spans in")
    parser.add_argument("--question", default=DEFAULT_QUESTION)
    parser.add_argument("--model", default=None, help="model name; 'fail-500' and 'slow' inject faults")
    parser.add_argument(
        "--base-url", default=None, help="a running fake (python examples/fake_llm.py --port N) to use"
    )
    parser.add_argument("--session-id", default=None)
    parser.add_argument("--stream", action="store_true", help="use streaming completions")
    parser.add_argument("--hang-in-tool", action="store_true", help="print IN_TOOL <trace id> and hang")
    parser.add_argument("--fail-tool", action="store_true", help="make get_weather raise")
    parser.add_argument(
        "--tool-url", default=None, help="the tools ask this weather API (examples/weather_api.py)"
    )
    parser.add_argument(
        "--check-answer", action="store_true", help="fail (exit 1) when the answer quotes no tool result"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv, __doc__.splitlines()[0] if __doc__ else None)
    provider = make_tracer_provider(args.db, "weather-agent")
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        with ExitStack() as stack:
            base_url = args.base_url or stack.enter_context(FakeLLMServer()).openai_base_url
            client = stack.enter_context(OpenAI(base_url=base_url, api_key=FAKE_API_KEY))
            answer, _ = run_agent(
                client,
                provider.get_tracer(__name__),
                args.question,
                model=args.model or DEFAULT_MODEL,
                stream=args.stream,
                tools=WeatherTools(fail=args.fail_tool, hang=args.hang_in_tool, api=args.tool_url),
                session_id=args.session_id,
                on_trace=announce_trace,
                check_answer=args.check_answer,
            )
        print(answer)
        return 0
    except Exception as exc:
        print(f"weather-agent failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        instrumentor.uninstrument()
        provider.shutdown()


if __name__ == "__main__":
    sys.exit(main())
