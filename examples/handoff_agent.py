"""A triage agent that hands off to a refund agent, on the OpenAI Agents SDK, recorded by the processor.

    python examples/handoff_agent.py --base-url http://127.0.0.1:8400/v1 --db blackbox.db

The triage agent has one tool, ``lookup_order``, and a handoff to the refund agent (the SDK offers
it to the model as the tool ``transfer_to_refund_agent``, with no parameters); the refund agent has
``refund_order(order_id, amount: float)``, which with ``--ledger FILE`` appends each refund to that
file: a tool with a side effect; with ``--lookup-down``, ``lookup_order`` raises, and the SDK hands the
error to the model as the tool's output, so the run still answers; with ``--require-refund``, a run
in which no refund went through exits 1. Against examples/fake_llm.py, a question that says "both"
makes the model call ``lookup_order`` and the transfer in one turn; the refund agent then calls
``refund_order`` with the question's number, and answers from its result. The fake's "sloppy" model
types that amount as "12.OO": the SDK rejects the malformed float, the model is told the tool
failed, and no refund is made (the incident of README's "From incident to fix").

Spans go to ``--db`` through a BlackboxSpanProcessor and openinference-instrumentation-openai-agents
(the SDK's own exporter is off): a production recording, which ``otel-blackbox cassette --run``
turns into a cassette. The answer is printed on stdout; nothing here knows it is being replayed.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from otel_blackbox import BlackboxSpanProcessor

MODEL = "gpt-4o-mini"
API_KEY = "sk-fake-not-a-real-key"
DEFAULT_QUESTION = "Look up my order Alpha and refund it, both please."
MAX_TURNS = 6
LEDGER: list[Path] = []  # with --ledger, where refund_order writes each refund
LOOKUP_DOWN: list[bool] = []  # with --lookup-down, lookup_order raises (the SDK tells the model)
REFUNDS: list[str] = []  # the refunds made by this run


def lookup_order(order_id: str) -> str:
    """Look an order up: what was paid for it."""
    if LOOKUP_DOWN:
        raise ConnectionError("the order service is unavailable")
    return f"order {order_id}: paid 12.00"


def refund_order(order_id: str, amount: float) -> str:
    """Refund an amount on an order."""
    if LEDGER:
        with LEDGER[0].open("a", encoding="utf-8") as ledger:
            ledger.write(f"refund {order_id} {amount:.2f}\n")
    REFUNDS.append(order_id)
    return f"refunded {amount:.2f} on order {order_id}"


def run(provider: TracerProvider, base_url: str, question: str, stream: bool, model_name: str = MODEL) -> str:
    from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_export_api_key
    from openai import AsyncOpenAI
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    set_tracing_export_api_key("")  # the SDK's own exporter is replaced by OpenInference's processor
    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
    client = AsyncOpenAI(base_url=base_url, api_key=API_KEY, max_retries=0)
    model = OpenAIResponsesModel(model_name, openai_client=client)
    refund_agent = Agent(
        name="Refund Agent",
        instructions="You refund orders. Refund the amount the order was paid.",
        model=model,
        tools=[function_tool(refund_order)],
    )
    triage = Agent(
        name="Triage Agent",
        instructions="You route a request: look the order up, and hand refunds to the Refund Agent.",
        model=model,
        tools=[function_tool(lookup_order)],
        handoffs=[refund_agent],
    )

    async def go() -> str:
        if not stream:
            return str((await Runner.run(triage, question, max_turns=MAX_TURNS)).final_output)
        result = Runner.run_streamed(triage, question, max_turns=MAX_TURNS)
        async for _ in result.stream_events():
            pass
        return str(result.final_output)

    return asyncio.run(go())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True, help="the provider, e.g. the fake's /v1")
    parser.add_argument("--db", default="blackbox.db")
    parser.add_argument("--question", default=DEFAULT_QUESTION)
    parser.add_argument("--stream", action="store_true")
    parser.add_argument("--model", default=MODEL, help="the model both agents name")
    parser.add_argument("--ledger", type=Path, help="refund_order appends each refund to this file")
    parser.add_argument("--lookup-down", action="store_true", help="lookup_order raises: a tool error")
    parser.add_argument("--require-refund", action="store_true", help="exit 1 when no refund went through")
    args = parser.parse_args(argv)
    LEDGER[:] = [args.ledger] if args.ledger else []
    LOOKUP_DOWN[:] = [True] if args.lookup_down else []
    provider = TracerProvider(resource=Resource.create({"service.name": "handoff-agent"}))
    provider.add_span_processor(BlackboxSpanProcessor(args.db))
    try:
        answer = run(provider, args.base_url, args.question, args.stream, args.model)
    finally:
        provider.shutdown()
    print(answer)
    if args.require_refund and not REFUNDS:
        raise SystemExit("no refund went through")


if __name__ == "__main__":
    main()
