"""A refund agent whose tool has a side effect, on each framework ``--stub-tools`` answers.

    python examples/ledger_agent.py langchain --base-url http://127.0.0.1:8400/v1 --ledger refunds.txt

Two tools: ``lookup_order(order_id)`` and ``refund_order(order_id, amount: float)``, which appends
``refund <order> <amount>`` to the ``--ledger`` file: a payment that must happen once. Without
``--ledger`` the payments database is "not configured" and ``refund_order`` raises, as a tool whose
dependency is absent does. Against examples/fake_llm.py the default question (it says "both") makes
the model call both tools in one turn, then answer with their results.

Frameworks (each with its own OpenTelemetry instrumentation, spans to ``--db``):

- ``agents``: the OpenAI Agents SDK (Responses API); the refund is made by a refund agent the
  triage agent uses as a tool (``Agent.as_tool``); OpenInference's instrumentor;
- ``langchain``: LangChain's ``create_agent`` (its graph runs the tools in LangGraph's ToolNode);
- ``langgraph``: a LangGraph ``StateGraph`` of a model node and a ``ToolNode``;
- ``pydantic-ai``: a pydantic-ai Agent, ``refund_order`` in a toolset of its own (its own gen_ai spans);
- ``openai``: a plain tool loop on the OpenAI SDK, its tools wrapped in ``otel_blackbox.stubbable``
  (the one line a program without a framework adds).

The answer is printed on stdout. Nothing here knows it is being replayed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

import otel_blackbox
from otel_blackbox import BlackboxSpanProcessor

FRAMEWORKS = ("agents", "langchain", "langgraph", "pydantic-ai", "openai")
MODEL = "gpt-4o-mini"
API_KEY = "sk-fake-not-a-real-key"
DEFAULT_QUESTION = "Look up order Alpha and refund 12 on it, both please."
INSTRUCTIONS = "You handle refunds. Look the order up and refund it."
MAX_TURNS = 6
LEDGER: list[Path] = []  # with --ledger, where refund_order writes each refund


def lookup_order(order_id: str) -> str:
    """Look an order up: what was paid for it."""
    return f"order {order_id}: paid 12.00"


def refund_order(order_id: str, amount: float) -> str:
    """Refund an amount on an order."""
    if not LEDGER:
        raise RuntimeError("the payments database is not configured")
    with LEDGER[0].open("a", encoding="utf-8") as ledger:
        ledger.write(f"refund {order_id} {float(amount):.2f}\n")
    return f"refunded {float(amount):.2f} on order {order_id}"


# The plain loop's tools: a framework's are answered through the framework, these through the wrapper.
STUBBABLE_TOOLS: dict[str, Callable[..., str]] = {
    "lookup_order": otel_blackbox.stubbable(lookup_order),
    "refund_order": otel_blackbox.stubbable(refund_order),
}


def run_agents(provider: TracerProvider, base_url: str, question: str) -> str:
    from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_export_api_key
    from openai import AsyncOpenAI
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    set_tracing_export_api_key("")  # the SDK's own exporter is replaced by OpenInference's processor
    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
    client = AsyncOpenAI(base_url=base_url, api_key=API_KEY, max_retries=0)
    model = OpenAIResponsesModel(MODEL, openai_client=client)
    refunds = Agent(
        name="Refund Agent",
        instructions="You refund orders.",
        model=model,
        tools=[function_tool(refund_order)],
    )
    triage = Agent(
        name="Triage Agent",
        instructions=INSTRUCTIONS,
        model=model,
        tools=[
            function_tool(lookup_order),
            refunds.as_tool(tool_name="refunds", tool_description="Refund an order, given its id."),
        ],
    )
    return str(asyncio.run(Runner.run(triage, question, max_turns=MAX_TURNS)).final_output)


def _chat_model(base_url: str) -> Any:
    from langchain_openai import ChatOpenAI
    from pydantic import SecretStr

    return ChatOpenAI(model=MODEL, base_url=base_url, api_key=SecretStr(API_KEY), max_retries=0)


def _langchain_tools() -> list[Any]:
    from langchain_core.tools import tool

    return [tool(lookup_order), tool(refund_order)]


def run_langchain(provider: TracerProvider, base_url: str, question: str) -> str:
    from langchain.agents import create_agent
    from openinference.instrumentation.langchain import LangChainInstrumentor

    LangChainInstrumentor().instrument(tracer_provider=provider)
    agent = create_agent(model=_chat_model(base_url), tools=_langchain_tools(), system_prompt=INSTRUCTIONS)
    state = agent.invoke({"messages": [{"role": "user", "content": question}]})
    return str(state["messages"][-1].content)


def run_langgraph(provider: TracerProvider, base_url: str, question: str) -> str:
    from langchain_core.messages import HumanMessage, SystemMessage
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition
    from openinference.instrumentation.langchain import LangChainInstrumentor

    LangChainInstrumentor().instrument(tracer_provider=provider)
    tools = _langchain_tools()
    model = _chat_model(base_url).bind_tools(tools)

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition, ["tools", END])
    graph.add_edge("tools", "model")
    state = graph.compile().invoke({"messages": [SystemMessage(INSTRUCTIONS), HumanMessage(question)]})
    return str(state["messages"][-1].content)


def run_pydantic_ai(provider: TracerProvider, base_url: str, question: str) -> str:
    from pydantic_ai import Agent, FunctionToolset
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=base_url, api_key=API_KEY))
    # One tool on the agent, one in a toolset of its own: both answered, whatever holds them.
    agent = Agent(
        model, instructions=INSTRUCTIONS, tools=[lookup_order], toolsets=[FunctionToolset([refund_order])]
    )
    agent.instrument = InstrumentationSettings(tracer_provider=provider)
    return str(agent.run_sync(question).output)


def run_openai(provider: TracerProvider, base_url: str, question: str) -> str:
    from openai import OpenAI
    from openinference.instrumentation.openai import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=provider)
    schemas = {
        "lookup_order": {"order_id": {"type": "string"}},
        "refund_order": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
    }
    tools: list[Any] = [
        {
            "type": "function",
            "function": {
                "name": name,
                "parameters": {"type": "object", "properties": properties, "required": list(properties)},
            },
        }
        for name, properties in schemas.items()
    ]
    messages: list[Any] = [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": question}]
    with OpenAI(base_url=base_url, api_key=API_KEY, max_retries=0) as client:
        for _ in range(MAX_TURNS):
            message = (
                client.chat.completions.create(model=MODEL, messages=messages, tools=tools).choices[0].message
            )
            messages.append(message.model_dump(exclude_none=True))
            calls = [c for c in message.tool_calls or [] if c.type == "function"]
            if not calls:
                return message.content or ""
            for call in calls:
                try:
                    content = STUBBABLE_TOOLS[call.function.name](**json.loads(call.function.arguments))
                except Exception as exc:  # the model is told, as a framework would tell it
                    content = f"error: {exc}"
                messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
    return "(no answer: too many tool rounds)"


RUNNERS = {
    "agents": run_agents,
    "langchain": run_langchain,
    "langgraph": run_langgraph,
    "pydantic-ai": run_pydantic_ai,
    "openai": run_openai,
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("framework", choices=FRAMEWORKS)
    parser.add_argument("--base-url", required=True, help="the provider, e.g. the fake's /v1")
    parser.add_argument("--db", default="blackbox.db")
    parser.add_argument("--question", default=DEFAULT_QUESTION)
    parser.add_argument("--ledger", type=Path, help="refund_order appends each refund to this file")
    args = parser.parse_args(argv)
    LEDGER[:] = [args.ledger] if args.ledger else []
    provider = TracerProvider(resource=Resource.create({"service.name": f"ledger-agent-{args.framework}"}))
    provider.add_span_processor(BlackboxSpanProcessor(args.db))
    try:
        answer = RUNNERS[args.framework](provider, args.base_url, args.question)
    finally:
        provider.shutdown()
    print(answer)


if __name__ == "__main__":
    main()
