"""Benchmark: reading a long streamed (SSE) response, for each provider translator.

Run it as a script (it is not a test, and exits 0 whatever the figures)::

    python bench/bench_streams.py [--deltas N] [--repeat R]

A streamed response delivers one long string in N deltas of 256 characters: a tool call's
arguments (OpenAI Chat), a message's text (OpenAI Responses), a text block (Anthropic). Each
translator reads N and 4N deltas (median of R repeats); reading in linear time makes the second
take about 4 times as long, a quadratic reader (each delta appended to a growing string, as a
first version did: 40,000 deltas took 5 to 7 s) about 16 times.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

from otel_blackbox._wire.anthropic.translation import AnthropicMessages
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.openai_chat.translation import OpenAIChat
from otel_blackbox._wire.openai_responses.translation import OpenAIResponses
from otel_blackbox._wire.protocol import Provider

PIECE = "abcdefgh" * 32  # 256 characters a delta
LINEAR_AT_MOST = 6.0  # the 4N / N time ratio above which reading is not linear


def sse(events: Sequence[Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(event).encode() + b"\n\n" for event in events)


def delta_stream(provider: str, count: int) -> bytes:
    """The wire stream of one string in ``count`` deltas, in ``provider``'s event shapes."""
    if provider == "chat":
        call = {"index": 0, "id": "c", "function": {"name": "f", "arguments": ""}}
        delta = {"tool_calls": [{"index": 0, "function": {"arguments": PIECE}}]}
        return sse(
            [
                {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]},
                *[{"choices": [{"index": 0, "delta": delta}]}] * count,
                {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
            ]
        )
    if provider == "responses":
        item: dict[str, Any] = {"type": "message", "content": []}
        text_delta: dict[str, Any] = {"type": "response.output_text.delta", "output_index": 0}
        text_delta.update(content_index=0, delta=PIECE)
        return sse(
            [
                {"type": "response.output_item.added", "output_index": 0, "item": item},
                {"type": "response.content_part.added", "output_index": 0, "part": {"type": "output_text"}},
                *[text_delta] * count,
                {"type": "response.completed", "response": {"output": None}},
            ]
        )
    return sse(
        [
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            *[{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": PIECE}}]
            * count,
            {"type": "message_stop"},
        ]
    )


TRANSLATORS: dict[str, Provider] = {
    "chat": OpenAIChat(),
    "responses": OpenAIResponses(),
    "anthropic": AnthropicMessages(),
}


def read_seconds(provider: str, count: int, repeat: int) -> float:
    body = delta_stream(provider, count)
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        output = TRANSLATORS[provider].model_output(body, streamed=True, ids=CallIds())
        samples.append(time.perf_counter() - started)
        read = output["calls"][0]["toolInput"] if provider == "chat" else output["text"]
        if read != PIECE * count:  # a benchmark of a reader that reads wrong means nothing
            raise SystemExit(f"{provider}: the stream was not read back whole")
    return statistics.median(samples)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--deltas", type=int, default=40_000, help="N, deltas in the short stream (default 40000)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="repeats; medians (default 3)")
    args = parser.parse_args(argv)
    if args.deltas < 1 or args.repeat < 1:
        parser.error("--deltas and --repeat must be >= 1")
    n = args.deltas
    size = len(delta_stream("anthropic", n)) / 1e6
    print(f"python {sys.version.split()[0]}; N = {n:,} deltas of {len(PIECE)} characters (~{size:.0f} MB)")
    print("   translator    N deltas s   4N deltas s   4N / N   linear (<= 6)")
    for provider in TRANSLATORS:
        short, long = read_seconds(provider, n, args.repeat), read_seconds(provider, 4 * n, args.repeat)
        ratio = long / short
        verdict = "yes" if ratio <= LINEAR_AT_MOST else "NO"
        print(f"   {provider:<12} {short:11.3f}   {long:11.3f}   {ratio:6.1f}   {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
