"""What a rerun's own work costs at turn 10 and at turn 1,000, before and after the memos (issue 49).

Run it as a script (it is not a test and exits 0 whatever the figures; a body or a hash that differs
between the two ways raises AssertionError)::

    python bench/bench_rerun_turns.py [--turns 10,1000] [--samples 5] [--json out.json]

A coding agent's conversation: a task, then rounds of a tool call and its 2 KB output. Model call T
sends the task and T-1 rounds. Per turn, on each of the four APIs (natively), what the built-in agent
and its recorder do besides the network:

* **translate**: the request body from the neutral ``model_input`` (``wire_request``);
* **hash**: the ``model_input`` step's hash and the ``model_output`` step's (``hash_step``).

**before** is the uncached functions, as 4361a75 has them (``Provider.wire_request``, ``hash_step``);
**after** the memos the agent and the recorder keep (``_wire/memo.RequestMemo``,
``canonical.StepHasher``), warmed by the turns before T as a run warms them. Each figure is the median
of ``--samples`` turns around T (µs a turn). **sha256** is SHA-256 alone over the model_input step's
canonical bytes: the step's hash covers every message of it (the v2 format), so that part grows with
the conversation whatever is kept.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from otel_blackbox._cassette.canonical import StepHasher, canonical_json, hash_step
from otel_blackbox._wire.memo import RequestMemo
from otel_blackbox._wire.registry import PROVIDERS

SETTINGS: dict[str, Any] = {
    "model": "m-1",
    "systemPrompt": "You are a coding agent. Fix the failing test.",
    "tools": [{"name": "read_file", "description": "Read a file", "inputSchema": {"type": "object"}}],
    "params": {"temperature": 0, "maxTokens": 1024},
}
OUTPUT = {
    "type": "tool_calls",
    "calls": [{"toolCallId": "call-x", "toolName": "read_file", "toolInput": {"path": "a"}}],
}


def conversation(turns: int) -> list[dict[str, Any]]:
    """The messages of model call ``turns`` and after: a task, then each round's call and 2 KB output."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "The test in tests/test_app.py fails."}]
    for r in range(turns):
        call = f"call-{r}"
        use = {
            "type": "tool_use",
            "toolCallId": call,
            "toolName": "read_file",
            "toolInput": {"path": f"src/m{r}.py"},
        }
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"Reading m{r}."}, use]})
        text = "".join(chr(32 + (r * 31 + i * 7) % 95) for i in range(2048))
        result = {"type": "tool_result", "toolCallId": call, "toolName": "read_file", "result": text}
        messages.append({"role": "user", "content": [result]})
    return messages


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[float, Any]:
    """µs of one call, the collector run before and kept out of it (the uncached path's garbage would
    otherwise be collected inside the next call timed)."""
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter_ns()
        value = fn(*args, **kwargs)
        return (time.perf_counter_ns() - t0) / 1000, value
    finally:
        gc.enable()


def _two_steps(hash_input: Callable[..., str], t: int, model_input: dict[str, Any]) -> tuple[str, str]:
    """A turn's two model steps hashed: its model_input (with ``hash_input``) and its model_output."""
    return (
        hash_input(2 * t, "model_input", t, model_input, "0" * 64),
        hash_step(2 * t + 1, "model_output", t, OUTPUT, "1" * 64),
    )


def measure(turn: int, samples: int) -> dict[str, dict[str, float]]:
    """µs a turn at model call ``turn`` on each API: before / after, translate / hash, and sha256."""
    messages = conversation(turn + samples)
    figures: dict[str, dict[str, float]] = {}
    turns = range(max(1, turn - samples // 2), max(1, turn - samples // 2) + samples)
    for provider in PROVIDERS:
        memo, hasher = RequestMemo(provider, native=True), StepHasher()
        history: list[dict[str, Any]] = []
        rows: dict[str, list[float]] = {
            k: [] for k in ("translate_before", "translate_after", "hash_before", "hash_after", "sha256")
        }
        for t in range(1, turns[-1] + 1):
            history.extend(messages[len(history) : 2 * t - 1])  # the agent's list, appended to
            model_input = {**SETTINGS, "messages": history}
            if t not in turns:  # a run's turns before: they warm the memos
                memo.wire_request(model_input, stream=False)
                hasher.hash_step(2 * t, "model_input", t, model_input, "0" * 64)
                continue
            after_us, wire = timed(memo.wire_request, model_input, stream=False)
            before_us, fresh = timed(provider.wire_request, model_input, stream=False, native=True)
            if json.dumps(wire.body) != json.dumps(fresh.body):
                raise AssertionError(f"{provider.name}: the memo's body differs at turn {t}")
            rows["translate_after"].append(after_us)
            rows["translate_before"].append(before_us)
            after_us, got = timed(_two_steps, hasher.hash_step, t, model_input)
            before_us, want = timed(_two_steps, hash_step, t, model_input)
            if got != want:
                raise AssertionError(f"the memo's hash differs at turn {t}")
            rows["hash_after"].append(after_us)
            rows["hash_before"].append(before_us)
            text = canonical_json(
                {
                    "index": 2 * t,
                    "payload": model_input,
                    "prevHash": "0" * 64,
                    "timestamp": t,
                    "type": "model_input",
                }
            ).encode()
            rows["sha256"].append(timed(hashlib.sha256, text)[0])
        figures[provider.name] = {k: statistics.median(v) for k, v in rows.items()}
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", default="10,1000")
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    turns = [int(t) for t in args.turns.split(",")]
    results = {t: measure(t, args.samples) for t in turns}
    low, high = turns[0], turns[-1]
    print(
        f"µs a turn (median of {args.samples} turns around each), before -> after; "
        f"ratio turn {high} / turn {low}"
    )
    print(
        f"{'api':18} {'part':10} "
        + " ".join(f"{f'turn {t}':>22}" for t in turns)
        + f" {'ratio before':>13} {'ratio after':>12}"
    )
    for api in results[low]:
        for part in ("translate", "hash"):
            cells = [
                f"{results[t][api][part + '_before']:9.0f} -> {results[t][api][part + '_after']:8.0f}"
                for t in turns
            ]
            ratio_before = results[high][api][part + "_before"] / results[low][api][part + "_before"]
            ratio_after = results[high][api][part + "_after"] / results[low][api][part + "_after"]
            print(
                f"{api:18} {part:10} "
                + " ".join(f"{c:>22}" for c in cells)
                + f" {ratio_before:12.1f}x {ratio_after:11.2f}x"
            )
        both = [
            results[t][api]["translate_after"] + results[t][api]["hash_after"] - results[t][api]["sha256"]
            for t in turns
        ]
        print(
            f"{api:18} {'own, no sha':10} "
            + " ".join(f"{b:>22.0f}" for b in both)
            + f" {'':13} {both[-1] / both[0]:11.2f}x"
        )
        print(f"{api:18} {'sha256':10} " + " ".join(f"{results[t][api]['sha256']:>22.0f}" for t in turns))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({str(t): r for t, r in results.items()}, out, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
