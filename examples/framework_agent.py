"""One weather agent on each framework the recorder is tested with, recorded by the processor.

    python examples/framework_agent.py agents --base-url http://127.0.0.1:8000/v1 --db blackbox.db

Frameworks:

- ``openai``: the OpenAI SDK with no instrumentation at all (only HTTP capture,
  ``OTEL_BLACKBOX_CAPTURE_HTTP=true``, records it);
- ``agents``: the OpenAI Agents SDK (Responses API) with openinference-instrumentation-openai-agents;
  ``--stream`` runs it streamed;
- ``pydantic-ai``: its own gen_ai spans;
- ``langchain``: langchain-openai ``bind_tools().invoke()`` in a loop, under
  openinference-instrumentation-langchain (no root span: one trace per call);
- ``openai-v2``: the official opentelemetry-instrumentation-openai-v2, gen_ai spans with content
  (no root span either);
- ``openinference-openai``, ``openinference-anthropic``: the SDKs under the OpenInference
  instrumentors (the loop of examples/weather_agent.py, examples/anthropic_agent.py);
- ``openinference-google-genai``: the google-genai SDK (Gemini) under OpenInference, the tools run
  by the agent's own loop (the SDK's automatic function calling would make one span of all rounds).

With ``--tool-url`` the tools are HTTP calls to examples/weather_api.py; otherwise they compute the
same answers in-process. ``--seed N`` sends a seed, a setting with no neutral name. With
``--dict-tools`` the pydantic-ai agent's tools return dicts, which pydantic-ai sends as JSON (its
ordinary case), instead of JSON text.

Each run is one process: a TracerProvider with a BlackboxSpanProcessor on ``--db``, the framework's
instrumentation, the agent, a flush. The answer is printed on stdout. The same program replays
unmodified under ``otel-blackbox replay``; nothing here knows it is being replayed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from collections.abc import Callable
from typing import Any

import httpx
import weather_api
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from otel_blackbox import BlackboxSpanProcessor

FRAMEWORKS = (
    "openai",
    "agents",
    "pydantic-ai",
    "langchain",
    "openai-v2",
    "openinference-openai",
    "openinference-anthropic",
    "openinference-google-genai",
)
DEFAULT_QUESTION = "What's the weather in Lisbon, and the 2 day forecast? I need both."
MODEL = "gpt-4o-mini"
ANTHROPIC_MODEL = "claude-sonnet-4-5"
GEMINI_MODEL = "gemini-2.5-flash"
API_KEY = "sk-fake-not-a-real-key"
INSTRUCTIONS = "You are a weather assistant. Use the tools to answer; quote their results."
MAX_TURNS = 5


TOOL_URL: list[str] = []  # with --tool-url, the tools ask the weather API over HTTP
DICT_TOOLS: list[bool] = []  # with --dict-tools, pydantic-ai's tools return dicts
SETTINGS: dict[str, Any] = {}  # with --seed, the request's seed (LangChain and the plain OpenAI loop)


def get_weather(city: str) -> str:
    """Current weather for a city."""
    if TOOL_URL:
        return httpx.get(f"{TOOL_URL[0]}/weather", params={"city": city}, timeout=10).text
    return json.dumps(weather_api.weather(city))


def get_forecast(city: str, days: int) -> str:
    """Daily high temperatures for the next few days."""
    if TOOL_URL:
        return httpx.post(f"{TOOL_URL[0]}/forecast", json={"city": city, "days": days}, timeout=10).text
    return json.dumps(weather_api.forecast(city, days))


TOOLS: dict[str, Callable[..., str]] = {"get_weather": get_weather, "get_forecast": get_forecast}
SCHEMAS: dict[str, dict[str, Any]] = {
    "get_weather": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "get_forecast": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city", "days"],
    },
}


# --- the frameworks ---------------------------------------------------------------------------------


def run_agents(provider: TracerProvider, base_url: str, question: str, stream: bool) -> str:
    from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_export_api_key
    from openai import AsyncOpenAI
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    set_tracing_export_api_key("")  # the SDK's own exporter is replaced by OpenInference's processor
    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
    client = AsyncOpenAI(base_url=base_url, api_key=API_KEY, max_retries=0)
    agent = Agent(
        name="weather",
        instructions=INSTRUCTIONS,
        model=OpenAIResponsesModel(MODEL, openai_client=client),
        tools=[function_tool(get_weather), function_tool(get_forecast)],
    )

    async def run() -> str:
        if not stream:
            return str((await Runner.run(agent, question, max_turns=MAX_TURNS)).final_output)
        result = Runner.run_streamed(agent, question, max_turns=MAX_TURNS)
        async for _ in result.stream_events():
            pass
        return str(result.final_output)

    return asyncio.run(run())


def run_pydantic_ai(provider: TracerProvider, base_url: str, question: str, stream: bool) -> str:
    from pydantic_ai import Agent, Tool
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    def weather_dict(city: str) -> dict[str, Any]:
        """Current weather for a city."""
        return dict(json.loads(get_weather(city)))

    def forecast_dict(city: str, days: int) -> dict[str, Any]:
        """Daily high temperatures for the next few days."""
        return dict(json.loads(get_forecast(city, days)))

    model = OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=base_url, api_key=API_KEY))
    dict_tools = [Tool(weather_dict, name="get_weather"), Tool(forecast_dict, name="get_forecast")]
    agent = Agent(
        model, instructions=INSTRUCTIONS, tools=dict_tools if DICT_TOOLS else [get_weather, get_forecast]
    )
    agent.instrument = InstrumentationSettings(tracer_provider=provider)
    if not stream:
        return str(agent.run_sync(question).output)

    async def run() -> str:
        async with agent.run_stream(question) as result:
            return str(await result.get_output())

    return asyncio.run(run())


def run_langchain(provider: TracerProvider, base_url: str, question: str, stream: bool) -> str:
    from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, ToolMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from pydantic import SecretStr

    LangChainInstrumentor().instrument(tracer_provider=provider)
    tools = {name: tool(function) for name, function in TOOLS.items()}
    model = ChatOpenAI(
        model=MODEL,
        base_url=base_url,
        api_key=SecretStr(API_KEY),
        max_retries=0,
        streaming=stream,
        seed=SETTINGS.get("seed"),
    )
    bound = model.bind_tools(list(tools.values()))
    messages: list[BaseMessage] = [SystemMessage(INSTRUCTIONS), HumanMessage(question)]
    for _ in range(MAX_TURNS):
        reply = bound.invoke(messages)
        messages.append(reply)
        calls = getattr(reply, "tool_calls", [])
        if not calls:
            return str(reply.content)
        for call in calls:
            result = tools[call["name"]].invoke(call["args"])
            messages.append(ToolMessage(content=str(result), tool_call_id=call["id"]))
    return "(no answer: too many tool rounds)"


def _openai_chat_loop(base_url: str, question: str, stream: bool) -> str:
    """A plain tool loop on the OpenAI SDK (the instrumentation is the caller's)."""
    import weather_agent
    from openai import OpenAI

    messages: list[Any] = [
        {"role": "system", "content": INSTRUCTIONS},
        {"role": "user", "content": question},
    ]
    with OpenAI(base_url=base_url, api_key=API_KEY, max_retries=0) as client:
        for _ in range(MAX_TURNS):
            message = weather_agent.complete(client, MODEL, messages, stream, SETTINGS).choices[0].message
            messages.append(weather_agent.assistant_turn(message))
            calls = [c for c in message.tool_calls or [] if c.type == "function"]
            if not calls:
                return message.content or ""
            for call in calls:
                result = TOOLS[call.function.name](**json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return "(no answer: too many tool rounds)"


def run_openai_v2(provider: TracerProvider, base_url: str, question: str, stream: bool) -> str:
    # Message content is recorded only when asked for, on the span, in the latest conventions.
    os.environ.setdefault("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    os.environ.setdefault("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=provider)  # type: ignore[no-untyped-call]
    return _openai_chat_loop(base_url, question, stream)


def run_openinference_openai(provider: TracerProvider, base_url: str, question: str, stream: bool) -> str:
    from openinference.instrumentation.openai import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=provider)
    return _openai_chat_loop(base_url, question, stream)


def run_openinference_anthropic(provider: TracerProvider, base_url: str, question: str, stream: bool) -> str:
    import anthropic
    import anthropic_agent
    from openinference.instrumentation.anthropic import AnthropicInstrumentor

    AnthropicInstrumentor().instrument(tracer_provider=provider)
    tracer = provider.get_tracer("framework_agent")
    with anthropic.Anthropic(base_url=base_url, api_key=API_KEY, max_retries=0) as client:
        answer, _ = anthropic_agent.run_agent(client, tracer, question, stream=stream)
    return answer


def run_openai(provider: TracerProvider, base_url: str, question: str, stream: bool) -> str:
    return _openai_chat_loop(base_url, question, stream)  # no instrumentation: HTTP capture alone


def _parts(response: Any) -> list[Any]:
    """The first candidate's parts of a google-genai response (or stream chunk)."""
    candidates = response.candidates or []
    content = candidates[0].content if candidates else None
    return list(content.parts or []) if content is not None else []


def run_openinference_google_genai(
    provider: TracerProvider, base_url: str, question: str, stream: bool
) -> str:
    from google import genai
    from google.genai import types
    from openinference.instrumentation.google_genai import GoogleGenAIInstrumentor

    GoogleGenAIInstrumentor().instrument(tracer_provider=provider)
    client = genai.Client(api_key=API_KEY, http_options=types.HttpOptions(base_url=base_url))
    # The agent runs the tools itself, one generate_content a round: with the SDK's automatic
    # function calling, one span would cover every round and show none of them.
    declarations = [
        types.FunctionDeclaration(
            name=name, description=function.__doc__, parameters_json_schema=SCHEMAS[name]
        )
        for name, function in TOOLS.items()
    ]
    config = types.GenerateContentConfig(
        system_instruction=INSTRUCTIONS,
        tools=[types.Tool(function_declarations=declarations)],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    contents: list[types.Content] = [types.Content(role="user", parts=[types.Part.from_text(text=question)])]
    for _ in range(MAX_TURNS):
        if stream:
            chunks = client.models.generate_content_stream(
                model=GEMINI_MODEL, contents=contents, config=config
            )
            parts = [part for chunk in chunks for part in _parts(chunk)]
        else:
            parts = _parts(
                client.models.generate_content(model=GEMINI_MODEL, contents=contents, config=config)
            )
        calls = [part.function_call for part in parts if part.function_call]
        if not calls:
            return "".join(part.text or "" for part in parts)
        contents.append(types.Content(role="model", parts=parts))
        answers = [
            types.Part.from_function_response(
                name=str(call.name), response={"result": TOOLS[str(call.name)](**(call.args or {}))}
            )
            for call in calls
        ]
        contents.append(types.Content(role="user", parts=answers))
    return "(no answer: too many tool rounds)"


RUNNERS: dict[str, Callable[[TracerProvider, str, str, bool], str]] = {
    "openai": run_openai,
    "agents": run_agents,
    "pydantic-ai": run_pydantic_ai,
    "langchain": run_langchain,
    "openai-v2": run_openai_v2,
    "openinference-openai": run_openinference_openai,
    "openinference-anthropic": run_openinference_anthropic,
    "openinference-google-genai": run_openinference_google_genai,
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("framework", choices=FRAMEWORKS)
    parser.add_argument("--base-url", required=True, help="the provider, e.g. the fake's /v1")
    parser.add_argument("--db", default="blackbox.db")
    parser.add_argument("--question", default=DEFAULT_QUESTION)
    parser.add_argument("--stream", action="store_true")
    parser.add_argument("--tool-url", help="the tools call this weather API (examples/weather_api.py)")
    parser.add_argument("--dict-tools", action="store_true", help="pydantic-ai's tools return dicts")
    parser.add_argument("--seed", type=int, help="the request's seed (langchain and the OpenAI loops)")
    args = parser.parse_args(argv)
    SETTINGS.clear()
    SETTINGS.update({"seed": args.seed} if args.seed is not None else {})
    TOOL_URL[:] = [args.tool_url] if args.tool_url else []
    DICT_TOOLS[:] = [True] if args.dict_tools else []
    provider = TracerProvider(resource=Resource.create({"service.name": f"{args.framework}-agent"}))
    provider.add_span_processor(BlackboxSpanProcessor(args.db))
    try:
        answer = RUNNERS[args.framework](provider, args.base_url, args.question, args.stream)
    finally:
        provider.shutdown()
    print(answer)


if __name__ == "__main__":
    main()
