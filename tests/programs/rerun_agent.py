"""A small support agent whose tool calls an HTTP API: the program the rerun tests launch.

    python tests/programs/rerun_agent.py --base-url URL --tool-url URL [--provider chat|responses|anthropic]
        [--model NAME] [--channel NAME] [--db PATH]

It asks the model about an order and runs the ``lookup_order`` tool the model calls (a POST of
``{"order_id": N, "channel": NAME}`` to ``TOOL_URL/orders/lookup`` with httpx), sends the result
back, prints the final answer, and checks it: an answer that does not state the order's status is
a wrong answer, and the program raises (exit 1). ``--channel`` changes the tool's request body only.
``--db`` records the run as a production system would: a ``BlackboxSpanProcessor`` with HTTP capture
on, under one root span.
"""

from __future__ import annotations

import argparse
import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import httpx
import openai

QUESTION = "What is the status of order 42?"
STATUS = "shipped"  # what the order API answers, and what a right answer must say
MAX_TURNS = 4
SCHEMA = {"type": "object", "properties": {"order_id": {"type": "integer"}}, "required": ["order_id"]}
DESCRIPTION = "Look an order up in the order system."

Tool = Callable[[dict[str, Any]], str]


def order_tool(tool_url: str, channel: str) -> Tool:
    def lookup_order(arguments: dict[str, Any]) -> str:
        body = {"order_id": arguments.get("order_id"), "channel": channel}
        response = httpx.post(f"{tool_url}/orders/lookup", json=body, timeout=10)
        if response.status_code != 200:  # the model hears about it, as from any failing tool
            return json.dumps({"error": f"HTTP {response.status_code}", "detail": response.text})
        return response.text

    return lookup_order


def chat_agent(base_url: str, model: str, tool: Tool) -> str:
    tools: list[Any] = [
        {
            "type": "function",
            "function": {"name": "lookup_order", "description": DESCRIPTION, "parameters": SCHEMA},
        }
    ]
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    with openai.OpenAI(base_url=base_url, api_key="sk-rerun-test-0123456789", max_retries=0) as client:
        for _ in range(MAX_TURNS):
            message = (
                client.chat.completions.create(model=model, messages=messages, tools=tools).choices[0].message
            )
            calls = [c for c in message.tool_calls or [] if c.type == "function"]
            if not calls:
                return message.content or ""
            messages.append(
                {
                    "role": "assistant",
                    "content": message.content,
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.function.name, "arguments": c.function.arguments},
                        }
                        for c in calls
                    ],
                }
            )
            for call in calls:
                result = tool(json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    raise RuntimeError("no final answer")


def responses_agent(base_url: str, model: str, tool: Tool) -> str:
    tools: list[Any] = [
        {
            "type": "function",
            "name": "lookup_order",
            "description": DESCRIPTION,
            "parameters": SCHEMA,
            "strict": False,
        }
    ]
    items: list[Any] = [{"role": "user", "content": QUESTION}]
    with openai.OpenAI(base_url=base_url, api_key="sk-rerun-test-0123456789", max_retries=0) as client:
        for _ in range(MAX_TURNS):
            response = client.responses.create(model=model, input=items, tools=tools)
            calls = [o for o in response.output if o.type == "function_call"]
            if not calls:
                return response.output_text
            for call in calls:
                items.append(
                    {
                        "type": "function_call",
                        "call_id": call.call_id,
                        "name": call.name,
                        "arguments": call.arguments,
                    }
                )
                result = tool(json.loads(call.arguments))
                items.append({"type": "function_call_output", "call_id": call.call_id, "output": result})
    raise RuntimeError("no final answer")


def anthropic_agent(base_url: str, model: str, tool: Tool) -> str:
    tools: list[Any] = [{"name": "lookup_order", "description": DESCRIPTION, "input_schema": SCHEMA}]
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    with anthropic.Anthropic(
        base_url=base_url, api_key="sk-ant-rerun-test-0123456789", max_retries=0
    ) as client:
        for _ in range(MAX_TURNS):
            message = client.messages.create(model=model, max_tokens=256, messages=messages, tools=tools)
            calls = [b for b in message.content if b.type == "tool_use"]
            if not calls:
                return "".join(b.text for b in message.content if b.type == "text")
            turn: list[Any] = [{"type": "text", "text": b.text} for b in message.content if b.type == "text"]
            turn += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.input} for c in calls]
            messages.append({"role": "assistant", "content": turn})
            results = [
                {"type": "tool_result", "tool_use_id": c.id, "content": tool(dict(c.input))} for c in calls
            ]
            messages.append({"role": "user", "content": results})
    raise RuntimeError("no final answer")


AGENTS = {"chat": chat_agent, "responses": responses_agent, "anthropic": anthropic_agent}


@contextlib.contextmanager
def recorded(db: str | None) -> Iterator[None]:
    if db is None:
        yield
        return
    from opentelemetry.sdk.trace import TracerProvider

    from otel_blackbox import BlackboxConfig, BlackboxSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(BlackboxSpanProcessor(config=BlackboxConfig(db_path=db, capture_http=True)))
    try:
        with provider.get_tracer(__name__).start_as_current_span("support-agent"):
            yield
    finally:
        provider.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--base-url", required=True, help="the provider (the OpenAI base URL ends in /v1)")
    parser.add_argument("--tool-url", required=True, help="the order API")
    parser.add_argument("--provider", choices=sorted(AGENTS), default="chat")
    parser.add_argument("--model", default="careless")
    parser.add_argument("--channel", default="web")
    parser.add_argument("--db", help="record with a BlackboxSpanProcessor, HTTP capture on, into this file")
    args = parser.parse_args()
    with recorded(args.db):
        answer = AGENTS[args.provider](args.base_url, args.model, order_tool(args.tool_url, args.channel))
        print(answer)
        if STATUS not in answer:
            raise RuntimeError(f"wrong answer: the order status is not in {answer!r}")


if __name__ == "__main__":
    main()
