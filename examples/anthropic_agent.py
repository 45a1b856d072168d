"""The weather agent on the real Anthropic SDK, recorded by otel-blackbox.

Same shape, tools and CLI as weather_agent.py (whose tools and span helpers it reuses), with
OpenInference's AnthropicInstrumentor making one LLM span per Messages call.

    python examples/anthropic_agent.py --stream --question "What's the weather in Oslo?"
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Callable, Sequence
from contextlib import ExitStack

from anthropic import Anthropic
from anthropic.types import ContentBlockParam, Message, MessageParam, ToolParam, ToolResultBlockParam
from fake_llm import FakeLLMServer
from openinference.instrumentation.anthropic import AnthropicInstrumentor
from openinference.semconv.trace import SpanAttributes
from opentelemetry.trace import StatusCode, Tracer
from weather_agent import (
    MAX_TURNS,
    SYSTEM_PROMPT,
    TOOLS,
    WeatherTools,
    agent_span,
    announce_trace,
    make_tracer_provider,
    parse_args,
    run_tool,
)

DEFAULT_MODEL = "claude-haiku-4-5"  # not on the SDK's deprecated list, which warns
FAKE_API_KEY = "sk-ant-fake"
MAX_TOKENS = 1024

# The same tools in Anthropic's shape: the JSON schema moves to input_schema.
ANTHROPIC_TOOLS: list[ToolParam] = [
    {
        "name": t["function"]["name"],
        "description": t["function"].get("description", ""),
        "input_schema": dict(t["function"].get("parameters", {})),
    }
    for t in TOOLS
]


def complete(client: Anthropic, model: str, messages: list[MessageParam], stream: bool) -> Message:
    if not stream:
        return client.messages.create(
            model=model, max_tokens=MAX_TOKENS, system=SYSTEM_PROMPT, tools=ANTHROPIC_TOOLS, messages=messages
        )
    with client.messages.stream(
        model=model, max_tokens=MAX_TOKENS, system=SYSTEM_PROMPT, tools=ANTHROPIC_TOOLS, messages=messages
    ) as events:
        return events.get_final_message()


def assistant_turn(message: Message) -> MessageParam:
    # Rebuilt by hand: the SDK's (parsed) blocks carry fields the API doesn't accept back.
    content: list[ContentBlockParam] = []
    for block in message.content:
        if block.type == "text":
            content.append({"type": "text", "text": block.text})
        elif block.type == "tool_use":
            content.append({"type": "tool_use", "id": block.id, "name": block.name, "input": block.input})
    return {"role": "assistant", "content": content}


def run_agent(
    client: Anthropic,
    tracer: Tracer,
    question: str,
    *,
    model: str = DEFAULT_MODEL,
    stream: bool = False,
    tools: WeatherTools | None = None,
    session_id: str | None = None,
    on_trace: Callable[[str], None] | None = None,
) -> tuple[str, str]:
    """Answer the question; returns (answer, trace id as 32 hex digits)."""
    tools = tools or WeatherTools()
    session_id = session_id or f"session-{uuid.uuid4().hex[:12]}"
    messages: list[MessageParam] = [{"role": "user", "content": question}]
    with agent_span(tracer, "anthropic-agent", question, session_id) as span:
        trace_id = f"{span.get_span_context().trace_id:032x}"
        if on_trace:
            on_trace(trace_id)
        answer = "(no answer: too many tool rounds)"
        for _ in range(MAX_TURNS):
            message = complete(client, model, messages, stream)
            messages.append(assistant_turn(message))
            calls = [b for b in message.content if b.type == "tool_use"]
            if not calls:
                answer = "".join(b.text for b in message.content if b.type == "text")
                break
            # All results of one turn go back together, in one user message.
            results: list[ToolResultBlockParam] = [
                {
                    "type": "tool_result",
                    "tool_use_id": call.id,
                    "content": run_tool(tracer, tools, call.name, json.dumps(call.input)),
                }
                for call in calls
            ]
            messages.append({"role": "user", "content": results})
        span.set_attribute(SpanAttributes.OUTPUT_VALUE, answer)
        span.set_status(StatusCode.OK)
        return answer, trace_id


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv, __doc__.splitlines()[0] if __doc__ else None)
    provider = make_tracer_provider(args.db, "anthropic-agent")
    instrumentor = AnthropicInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        with ExitStack() as stack:
            base_url = args.base_url or stack.enter_context(FakeLLMServer()).anthropic_base_url
            client = stack.enter_context(Anthropic(base_url=base_url, api_key=FAKE_API_KEY))
            answer, _ = run_agent(
                client,
                provider.get_tracer(__name__),
                args.question,
                model=args.model or DEFAULT_MODEL,
                stream=args.stream,
                tools=WeatherTools(fail=args.fail_tool, hang=args.hang_in_tool),
                session_id=args.session_id,
                on_trace=announce_trace,
            )
        print(answer)
        return 0
    except Exception as exc:
        print(f"anthropic-agent failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        instrumentor.uninstrument()
        provider.shutdown()


if __name__ == "__main__":
    sys.exit(main())
