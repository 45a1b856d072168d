"""What answering tools from the recording costs, side by side with running them, in one run.

Run it as a script (it is not a test and exits 0 whatever the figures; an answer that differs
from the tool's own result raises AssertionError)::

    python bench/bench_stubbable.py [--calls N] [--repeat R] [--json out.json]

Three comparisons, each a pair of modes timed alternately, ``--calls`` invocations a sample:

1. **stubbable, no session** against the bare function and a pass-through wrapper:
   ``otel_blackbox.stubbable(f)(x)`` versus ``f(x)`` and versus a ``functools.wraps`` wrapper that
   forwards ``*args, **kwargs`` (the floor of any decorator). The issue's "no cost when no session
   runs": above the forwarding every wrapper pays, its only work is one global read.
2. **LangChain, stubbed** against **LangChain, real**: ``tool.invoke(ToolCall)`` of a ``@tool``
   function through LangChain's own ``BaseTool.run`` (input validation, callbacks, the
   ``ToolMessage``), with the seam answering every call from a book of recorded results, versus
   the same invocation running the function.
3. **Agents SDK, stubbed** against **Agents SDK, real**: ``await tool.on_invoke_tool(ctx, json)``
   of a ``function_tool``, the same way.

The recorded book holds one result per call of a sample (each answers once, as in a session), so
a stubbed sample also pays for finding its result among ``--calls`` unused ones by call id. The
figures are medians over ``--repeat`` samples; ratios are stubbed / real (and wrapper / bare).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import otel_blackbox
from otel_blackbox._playback import tool_stubs
from otel_blackbox._playback.agent.incident import RecordedResult
from otel_blackbox._playback.tool_stubs.answers import ToolStubber
from otel_blackbox._wire.call_ids import CallIds


def lookup_order(order_id: str) -> str:
    """Look an order up."""
    return f"order {order_id}: paid 12.00"


def _per_call_ns(run: Callable[[], None], calls: int) -> float:
    start = time.perf_counter_ns()
    run()
    return (time.perf_counter_ns() - start) / calls


def _book(calls: int) -> list[RecordedResult]:
    return [
        RecordedResult(
            i, "lookup_order", {"order_id": f"A{i}"}, {"result": lookup_order(f"A{i}")}, f"call-{i}"
        )
        for i in range(calls)
    ]


def _answering(calls: int) -> None:
    """A stubbing session's answers, a fresh book of ``calls`` results (each answers once)."""
    tool_stubs.install(ToolStubber(ids=CallIds(), by_id=_book(calls), on_miss="diverge"))


def bench_stubbable(calls: int) -> tuple[float, float, float]:
    wrapped = otel_blackbox.stubbable(lookup_order)

    @functools.wraps(lookup_order)
    def passthrough(*args: Any, **kwargs: Any) -> str:  # what any decorator that forwards its call does
        return lookup_order(*args, **kwargs)

    def loop(function: Callable[[str], str]) -> Callable[[], None]:
        def run() -> None:
            for _ in range(calls):
                function("A1")

        return run

    assert wrapped("A1") == lookup_order("A1")
    return (
        _per_call_ns(loop(lookup_order), calls),
        _per_call_ns(loop(wrapped), calls),
        _per_call_ns(loop(passthrough), calls),
    )


def bench_langchain(calls: int) -> tuple[float, float]:
    from langchain_core.tools import tool

    lc_tool = tool(lookup_order)
    invocations = [
        {"name": "lookup_order", "args": {"order_id": f"A{i}"}, "id": f"call-{i}", "type": "tool_call"}
        for i in range(calls)
    ]

    def run() -> None:
        for invocation in invocations:
            lc_tool.invoke(invocation)

    real = _per_call_ns(run, calls)
    _answering(calls)
    try:
        assert lc_tool.invoke(invocations[0]).content == lookup_order("A0")
        _answering(calls)
        stubbed = _per_call_ns(run, calls)
    finally:
        tool_stubs.uninstall()
    return real, stubbed


def bench_agents(calls: int) -> tuple[float, float]:
    from agents import function_tool
    from agents.tool_context import ToolContext

    sdk_tool = function_tool(lookup_order)
    contexts = [
        (
            ToolContext(
                context=None,
                tool_name="lookup_order",
                tool_call_id=f"call-{i}",
                tool_arguments=json.dumps({"order_id": f"A{i}"}),
            ),
            json.dumps({"order_id": f"A{i}"}),
        )
        for i in range(calls)
    ]

    async def invoke_all() -> None:
        for ctx, arguments in contexts:
            await sdk_tool.on_invoke_tool(ctx, arguments)

    def run() -> None:
        asyncio.run(invoke_all())

    real = _per_call_ns(run, calls)
    _answering(calls)
    try:
        first_ctx, first_arguments = contexts[0]

        async def first() -> Any:
            return await sdk_tool.on_invoke_tool(first_ctx, first_arguments)

        assert asyncio.run(first()) == lookup_order("A0")
        _answering(calls)
        stubbed = _per_call_ns(run, calls)
    finally:
        tool_stubs.uninstall()
    return real, stubbed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    samples: dict[str, list[float]] = {}

    def add(name: str, value: float) -> None:
        samples.setdefault(name, []).append(value)

    for _ in range(args.repeat):
        bare, wrapped, passthrough = bench_stubbable(args.calls * 50)
        add("bare", bare)
        add("stubbable", wrapped)
        add("passthrough", passthrough)
        add("stubbable / bare", wrapped / bare)
        add("passthrough / bare", passthrough / bare)
        add("stubbable / passthrough", wrapped / passthrough)
        real, stubbed = bench_langchain(args.calls)
        add("langchain real", real)
        add("langchain stubbed", stubbed)
        add("langchain stubbed / real", stubbed / real)
        real, stubbed = bench_agents(args.calls)
        add("agents real", real)
        add("agents stubbed", stubbed)
        add("agents stubbed / real", stubbed / real)
    medians = {name: statistics.median(values) for name, values in samples.items()}
    for name, value in medians.items():
        unit = "" if "/" in name else " ns/call"
        print(f"{name:28} {value:10.2f}{unit}")
    if args.json:
        args.json.write_text(json.dumps({"medians": medians, "samples": samples}, indent=2))


if __name__ == "__main__":
    main()
