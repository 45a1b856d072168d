"""The fidelity matrix: every provider x sync / async x JSON / SSE, recorded, then replayed offline.

Each cell is one test id, `test_cell[<provider>-<sync|async>-<json|sse>]`, and docs/cassette-format.md
("The fidelity matrix") names them. A cell drives the provider's real SDK through a two-round tool
loop (two calls in one turn, then an answer quoting both results) against the loopback fake
provider, in-process under `otel_blackbox.session`:

1. record; the cassette verifies (provider neutrality included), ends in success, and holds the two
   tool calls;
2. replay with the fake stopped and every socket refused: the same answer, zero connection attempts;
3. replay with a changed prompt: ReplayDivergence naming the changed value.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from operator import attrgetter
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from fake_llm import FakeLLMServer
from google import genai
from google.genai import types
from helpers import blocked_network

import otel_blackbox
from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.model import terminal_outcome, tool_call_sequence
from otel_blackbox._cassette.verify import verify_cassette
from otel_blackbox.errors import ReplayDivergence

QUESTION = "What's the weather in Lisbon, and the 2 day forecast? I need both."
CHANGED = "What's the weather in Porto, and the 2 day forecast? I need both."
MODEL = "gpt-4o-mini"
KEY = "sk-fake-matrix-0123456789"
ANTHROPIC_KEY = "sk-ant-fake-matrix-0123456789"
GEMINI_KEY = "AIza-fake-matrix-0123456789"
KEYS = (KEY, ANTHROPIC_KEY, GEMINI_KEY)
MAX_TURNS = 4
SCHEMAS: dict[str, dict[str, Any]] = {
    "get_weather": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "get_forecast": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city", "days"],
    },
}
DESCRIPTIONS = {"get_weather": "Current weather for a city.", "get_forecast": "Daily highs for N days."}


def run_tool(name: str, arguments: dict[str, Any]) -> str:
    if name == "get_weather":
        return json.dumps({"city": arguments["city"], "temperature_c": 11})
    return json.dumps({"city": arguments["city"], "daily_high_c": [14, 17][: int(arguments["days"])]})


# --- one agent loop per API; `send` makes one model call, sync or async, JSON or streamed --------

Send = Callable[[dict[str, Any]], Awaitable[Any]]
Sender = Callable[[str, str, bool], tuple[Send, Callable[[], Awaitable[None]]]]


async def chat_loop(send: Send, question: str) -> str:
    tools = [
        {"type": "function", "function": {"name": n, "description": DESCRIPTIONS[n], "parameters": s}}
        for n, s in SCHEMAS.items()
    ]
    messages: list[Any] = [{"role": "user", "content": question}]
    for _ in range(MAX_TURNS):
        message = (await send({"model": MODEL, "messages": messages, "tools": tools})).choices[0].message
        calls = [c for c in message.tool_calls or [] if c.type == "function"]
        if not calls:
            return str(message.content)
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
        for c in calls:
            result = run_tool(c.function.name, json.loads(c.function.arguments))
            messages.append({"role": "tool", "tool_call_id": c.id, "content": result})
    raise AssertionError("no final answer")


async def responses_loop(send: Send, question: str) -> str:
    tools = [
        {"type": "function", "name": n, "description": DESCRIPTIONS[n], "parameters": s, "strict": False}
        for n, s in SCHEMAS.items()
    ]
    items: list[Any] = [{"role": "user", "content": question}]
    for _ in range(MAX_TURNS):
        response = await send({"model": MODEL, "input": items, "tools": tools})
        calls = [o for o in response.output if o.type == "function_call"]
        if not calls:
            return str(response.output_text)
        for c in calls:
            items.append(
                {"type": "function_call", "call_id": c.call_id, "name": c.name, "arguments": c.arguments}
            )
            output = run_tool(c.name, json.loads(c.arguments))
            items.append({"type": "function_call_output", "call_id": c.call_id, "output": output})
    raise AssertionError("no final answer")


async def anthropic_loop(send: Send, question: str) -> str:
    tools = [{"name": n, "description": DESCRIPTIONS[n], "input_schema": s} for n, s in SCHEMAS.items()]
    messages: list[Any] = [{"role": "user", "content": question}]
    for _ in range(MAX_TURNS):
        message = await send({"model": MODEL, "max_tokens": 256, "messages": messages, "tools": tools})
        calls = [b for b in message.content if b.type == "tool_use"]
        if not calls:
            return "".join(b.text for b in message.content if b.type == "text")
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": c.id, "name": c.name, "input": c.input} for c in calls
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": c.id, "content": run_tool(c.name, dict(c.input))}
                    for c in calls
                ],
            }
        )
    raise AssertionError("no final answer")


async def gemini_loop(send: Send, question: str) -> str:
    declarations = [
        types.FunctionDeclaration(name=n, description=DESCRIPTIONS[n], parameters_json_schema=s)
        for n, s in SCHEMAS.items()
    ]
    config = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=declarations)],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    contents: list[types.Content] = [types.Content(role="user", parts=[types.Part.from_text(text=question)])]
    for _ in range(MAX_TURNS):
        parts: list[types.Part] = await send(
            {"model": "gemini-2.5-flash", "contents": contents, "config": config}
        )
        calls = [p.function_call for p in parts if p.function_call]
        if not calls:
            return "".join(p.text or "" for p in parts)
        contents.append(types.Content(role="model", parts=parts))
        answers = [
            types.Part.from_function_response(
                name=str(c.name), response={"result": run_tool(str(c.name), dict(c.args or {}))}
            )
            for c in calls
        ]
        contents.append(types.Content(role="user", parts=answers))
    raise AssertionError("no final answer")


def _parts(response: types.GenerateContentResponse) -> list[types.Part]:
    content = response.candidates[0].content if response.candidates else None
    return list(content.parts or []) if content is not None else []


# --- the clients, per mode --------------------------------------------------------------------------


def sdk_sender(
    sync_client: Callable[[str], Any], async_client: Callable[[str], Any], api: str, final: str
) -> Sender:
    """A sender over an OpenAI-style SDK: ``client.<api>.create`` for JSON, ``client.<api>.stream``
    and its ``final`` method for SSE."""

    def sender(base_url: str, mode: str, stream: bool) -> tuple[Send, Callable[[], Awaitable[None]]]:
        if mode == "sync":
            client = sync_client(base_url)
            endpoint = attrgetter(api)(client)

            async def send(kwargs: dict[str, Any]) -> Any:
                if not stream:
                    return endpoint.create(**kwargs)
                with endpoint.stream(**kwargs) as events:
                    return getattr(events, final)()

            async def close() -> None:
                client.close()

            return send, close
        aclient = async_client(base_url)
        aendpoint = attrgetter(api)(aclient)

        async def asend(kwargs: dict[str, Any]) -> Any:
            if not stream:
                return await aendpoint.create(**kwargs)
            async with aendpoint.stream(**kwargs) as events:
                return await getattr(events, final)()

        return asend, aclient.close

    return sender


def _openai(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0)


def _async_openai(base_url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=0)


def _anthropic(base_url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=base_url, api_key=ANTHROPIC_KEY, max_retries=0)


def _async_anthropic(base_url: str) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=base_url, api_key=ANTHROPIC_KEY, max_retries=0)


def gemini_sender(base_url: str, mode: str, stream: bool) -> tuple[Send, Callable[[], Awaitable[None]]]:
    client = genai.Client(api_key=GEMINI_KEY, http_options=types.HttpOptions(base_url=base_url))

    async def send(kwargs: dict[str, Any]) -> Any:
        if mode == "sync" and not stream:
            return _parts(client.models.generate_content(**kwargs))
        if mode == "sync":
            return [p for chunk in client.models.generate_content_stream(**kwargs) for p in _parts(chunk)]
        if not stream:
            return _parts(await client.aio.models.generate_content(**kwargs))
        return [
            p
            async for chunk in await client.aio.models.generate_content_stream(**kwargs)
            for p in _parts(chunk)
        ]

    async def close() -> None:
        client.close()

    return send, close


PROVIDERS: dict[str, tuple[Callable[[Send, str], Awaitable[str]], Sender, Callable[[FakeLLMServer], str]]] = {
    "chat": (
        chat_loop,
        sdk_sender(_openai, _async_openai, "chat.completions", "get_final_completion"),
        lambda fake: fake.openai_base_url,
    ),
    "responses": (
        responses_loop,
        sdk_sender(_openai, _async_openai, "responses", "get_final_response"),
        lambda fake: fake.openai_base_url,
    ),
    "anthropic": (
        anthropic_loop,
        sdk_sender(_anthropic, _async_anthropic, "messages", "get_final_message"),
        lambda fake: fake.anthropic_base_url,
    ),
    "gemini": (gemini_loop, gemini_sender, lambda fake: fake.gemini_base_url),
}
CELLS = [(p, m, s) for p in PROVIDERS for m in ("sync", "async") for s in ("json", "sse")]


def run(provider: str, mode: str, wire: str, base_url: str, question: str) -> str:
    loop, sender, _ = PROVIDERS[provider]

    async def go() -> str:
        send, close = sender(base_url, mode, wire == "sse")
        try:
            return await loop(send, question)
        finally:
            await close()

    return asyncio.run(go())


@pytest.mark.parametrize(("provider", "mode", "wire"), CELLS, ids=["-".join(c) for c in CELLS])
def test_cell(tmp_path: Path, provider: str, mode: str, wire: str) -> None:
    cassette_path = tmp_path / "cell.json"
    with FakeLLMServer() as fake:
        base_url = PROVIDERS[provider][2](fake)
        with otel_blackbox.session(mode="record", cassette=cassette_path):
            answer = run(provider, mode, wire, base_url, QUESTION)
        assert len(fake.requests) == 2
    assert answer.startswith("Final answer") and "daily_high_c" in answer

    text = cassette_path.read_text()
    assert not [key for key in KEYS if key in text]  # no header's key reaches the file
    cassette = load_cassette(cassette_path)
    report = verify_cassette(cassette)
    assert report.passed, report.first_failure
    assert terminal_outcome(cassette).status == "success"
    assert tool_call_sequence(cassette) == ["get_weather", "get_forecast"]

    # The fake is stopped and no socket may open: every answer comes from the cassette.
    with blocked_network() as attempts, otel_blackbox.session(mode="replay", cassette=cassette_path):
        assert run(provider, mode, wire, base_url, QUESTION) == answer
    assert attempts == []

    with (
        pytest.raises(ReplayDivergence, match=r"step 0 \(model_input\) differs at ") as diverged,
        blocked_network(),
        otel_blackbox.session(mode="replay", cassette=cassette_path),
    ):
        run(provider, mode, wire, base_url, CHANGED)
    assert json.dumps(CHANGED) in str(diverged.value) and json.dumps(QUESTION) in str(diverged.value)
