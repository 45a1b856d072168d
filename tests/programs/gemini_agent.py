"""A small support agent on the google-genai SDK: the Gemini program the CLI tests launch.

    python tests/programs/gemini_agent.py --base-url URL [--tool-url URL] [--model NAME] [--stream] [--async]
        [--drop-ids] [--check] [--question TEXT]

It asks the model about an order with two tools offered, runs the calls the model makes (several in
one turn when the question says "both") in its own loop, automatic function calling off, sends the
results back, and prints the final answer. ``lookup_order`` POSTs ``{"order_id": N}`` to
``TOOL_URL/orders/lookup`` with httpx (without ``--tool-url`` it answers "shipped" itself);
``get_eta`` answers locally. The model's turn goes back as the SDK returned it (ids included), or,
with ``--drop-ids``, rebuilt from each call's name and arguments, as some programs do. ``--stream``
keeps one model content per chunk, as the SDK's chats do. With ``--check`` an answer that does not
state the order's status is a wrong answer: the program raises (exit 1).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

import httpx
from google import genai
from google.genai import types

QUESTION = "What is the status of order 42? I need both the status and the delivery estimate."
STATUS = "shipped"
MAX_TURNS = 4
API_KEY = "AIzaSy-gemini-agent-0123456789"
SCHEMA = {"type": "object", "properties": {"order_id": {"type": "integer"}}, "required": ["order_id"]}
TOOLS: list[types.ToolUnion] = [
    types.Tool(
        function_declarations=[
            types.FunctionDeclaration(name=name, description=description, parameters_json_schema=SCHEMA)
            for name, description in (
                ("lookup_order", "Look an order up in the order system."),
                ("get_eta", "The delivery estimate of an order."),
            )
        ]
    )
]


def run_tool(name: str, arguments: dict[str, Any], tool_url: str | None) -> dict[str, Any]:
    if name == "get_eta":
        return {"result": "2 days"}
    if tool_url is None:
        return {"result": {"order_id": arguments.get("order_id"), "status": STATUS}}
    response = httpx.post(
        f"{tool_url}/orders/lookup", json={"order_id": arguments.get("order_id")}, timeout=10
    )
    return {"result": response.json()}


def model_turn(contents: list[types.Content], drop_ids: bool) -> list[types.Content]:
    """The model's turn as the program sends it back: as returned, or rebuilt without ids."""
    if not drop_ids:
        return contents
    parts = [p for c in contents for p in c.parts or []]
    rebuilt = [
        types.Part.from_function_call(name=p.function_call.name or "", args=p.function_call.args or {})
        if p.function_call
        else types.Part(text=p.text)
        for p in parts
    ]
    return [types.Content(role="model", parts=rebuilt)]


def config() -> types.GenerateContentConfig:
    return types.GenerateContentConfig(
        tools=TOOLS,
        system_instruction="You are a support agent. Answer in one sentence.",
        temperature=0.0,
        max_output_tokens=256,
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )


def answer_or_results(turn: list[types.Content], tool_url: str | None) -> tuple[str | None, list[types.Part]]:
    calls = [p.function_call for c in turn for p in c.parts or [] if p.function_call]
    if not calls:
        return "".join(p.text or "" for c in turn for p in c.parts or []), []
    results = [
        types.Part.from_function_response(
            name=call.name or "", response=run_tool(call.name or "", dict(call.args or {}), tool_url)
        )
        for call in calls
    ]
    return None, results


def sync_agent(client: genai.Client, model: str, question: str, stream: bool, **options: Any) -> str:
    contents: list[types.Content] = [types.Content(role="user", parts=[types.Part(text=question)])]
    for _ in range(MAX_TURNS):
        if stream:
            chunks = client.models.generate_content_stream(model=model, contents=contents, config=config())
            turn = [c.candidates[0].content for c in chunks if c.candidates and c.candidates[0].content]
        else:
            response = client.models.generate_content(model=model, contents=contents, config=config())
            turn = (
                [response.candidates[0].content]
                if response.candidates and response.candidates[0].content
                else []
            )
        answer, results = answer_or_results(turn, options["tool_url"])
        if answer is not None:
            return answer
        contents += [*model_turn(turn, options["drop_ids"]), types.Content(role="user", parts=results)]
    raise RuntimeError("no final answer")


async def async_agent(client: genai.Client, model: str, question: str, stream: bool, **options: Any) -> str:
    async with client.aio:
        return await _async_turns(client, model, question, stream, **options)


async def _async_turns(client: genai.Client, model: str, question: str, stream: bool, **options: Any) -> str:
    contents: list[types.Content] = [types.Content(role="user", parts=[types.Part(text=question)])]
    for _ in range(MAX_TURNS):
        if stream:
            chunks = await client.aio.models.generate_content_stream(
                model=model, contents=contents, config=config()
            )
            turn = [c.candidates[0].content async for c in chunks if c.candidates and c.candidates[0].content]
        else:
            response = await client.aio.models.generate_content(
                model=model, contents=contents, config=config()
            )
            turn = (
                [response.candidates[0].content]
                if response.candidates and response.candidates[0].content
                else []
            )
        answer, results = answer_or_results(turn, options["tool_url"])
        if answer is not None:
            return answer
        contents += [*model_turn(turn, options["drop_ids"]), types.Content(role="user", parts=results)]
    raise RuntimeError("no final answer")


def client_for(base_url: str) -> genai.Client:
    return genai.Client(api_key=API_KEY, http_options=types.HttpOptions(base_url=base_url))


def run(base_url: str, *, model: str = "gemini-2.5-flash", question: str = QUESTION, stream: bool = False,
        use_async: bool = False, drop_ids: bool = False, tool_url: str | None = None) -> str:  # fmt: skip
    options = {"drop_ids": drop_ids, "tool_url": tool_url}
    with client_for(base_url) as client:
        if use_async:
            return asyncio.run(async_agent(client, model, question, stream, **options))
        return sync_agent(client, model, question, stream, **options)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--base-url", required=True, help="the Gemini API (HttpOptions base_url)")
    parser.add_argument("--tool-url", help="the order API; without it lookup_order answers itself")
    parser.add_argument("--model", default="gemini-2.5-flash")
    parser.add_argument("--question", default=QUESTION)
    parser.add_argument("--stream", action="store_true")
    parser.add_argument("--async", dest="use_async", action="store_true")
    parser.add_argument("--drop-ids", action="store_true")
    parser.add_argument("--check", action="store_true", help="raise when the answer lacks the order status")
    args = parser.parse_args()
    answer = run(
        args.base_url, model=args.model, question=args.question, stream=args.stream,
        use_async=args.use_async, drop_ids=args.drop_ids, tool_url=args.tool_url,
    )  # fmt: skip
    print(answer)
    if args.check and STATUS not in answer:
        raise RuntimeError(f"wrong answer: the order status is not in {json.dumps(answer)}")


if __name__ == "__main__":
    main()
