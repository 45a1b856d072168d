"""Benchmark: load, verify and diff of 10,000-step cassettes.

Run it as a script (it is not a test, and exits 0 whatever the figures)::

    python bench/bench_cassette.py [--steps N] [--repeat R]

Builds a realistic agent run (tool rounds of model_output, tool_call, tool_result, model_input with
payloads of ~300 bytes), a fork of it diverging near the end (the parent's steps, hashes included,
up to the fork point), and the fork re-recorded (same payloads, other timestamps and ids: the worst
case for a semantic diff, where no hash matches). All three are saved to a temporary directory,
then each operation is timed, the median of R repeats reported, and compared with the target:
well under a second, 0.5 s each.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from otel_blackbox._cassette.diff.report import diff_cassettes
from otel_blackbox._cassette.io import load_cassette, save_cassette
from otel_blackbox._cassette.model import Cassette
from otel_blackbox._cassette.verify import verify_cassette

TARGET_SECONDS = 0.5
TOOLS = ("search", "calendar", "booking", "weather")
START_MS = 1_717_000_000_000


def _round_payloads(n: int, variant: str) -> list[tuple[str, Any]]:
    """One tool round: the model asks, the tool runs and answers, the model reads the result."""
    tool = TOOLS[n % len(TOOLS)]
    call_id = f"call-{n}"
    tool_input = {
        "query": f"quiet hotels near the central station, round {n}",
        "filters": {"maxPrice": 180, "currency": "EUR", "breakfast": True},
        "limit": 3,
    }
    result = {
        "items": [
            {
                "id": f"{variant}-{n}-{k}",
                "title": f"Hotel {k} for round {n}",
                "snippet": "Quiet rooms, five minutes on foot, late checkout.",
                "score": round(0.9 - k / 10, 2),
            }
            for k in range(3)
        ],
        "next": None,
    }
    return [
        (
            "model_output",
            {"type": "tool_call", "toolCallId": call_id, "toolName": tool, "toolInput": tool_input},
        ),
        ("tool_call", {"toolCallId": call_id, "toolName": tool, "toolInput": tool_input}),
        ("tool_result", {"toolCallId": call_id, "toolName": tool, "result": result}),
        (
            "model_input",
            {
                "messages": [
                    {
                        "role": "user",
                        "content": "Book a quiet hotel near the station for Alice this weekend.",
                    },
                    {"role": "assistant", "content": f"Calling {tool} for round {n}."},
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "toolCallId": call_id, "content": "…"}],
                    },
                ],
                "turn": n + 1,
            },
        ),
    ]


def build_run(cassette_id: str, steps: int, *, fork_at: int | None = None, shift_ms: int = 0) -> Cassette:
    """``steps`` steps (a multiple of 4, at least 8); from ``fork_at`` on, the tool results differ."""
    cassette = Cassette(cassette_id, START_MS + shift_ms)
    opening = [
        ("metadata", {"event": "run_started"}),
        ("model_input", {"messages": [{"role": "user", "content": "Book a hotel for Alice."}], "turn": 0}),
    ]
    rounds = (steps - 4) // 4
    planned = opening + [p for n in range(rounds) for p in _round_payloads(n, "a")]
    if fork_at is not None:
        planned = (
            planned[:fork_at] + [p for n in range(rounds) for p in _round_payloads(n, "b")][fork_at - 2 :]
        )
    answer = f"Booked for Alice ({'fork' if fork_at is not None else 'original'})."
    planned += [
        ("model_output", {"type": "final_answer", "text": answer}),
        ("metadata", {"event": "run_completed", "status": "success", "result": answer}),
    ]
    for index, (step_type, payload) in enumerate(planned):
        cassette.append(step_type, payload, START_MS + shift_ms + 40 * index)
    return cassette


def median_seconds(action: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _check(files: dict[str, Path], fork_at: int) -> None:
    """The figures only count if the operations give the right answers."""
    parent, fork, again = (load_cassette(files[k]) for k in ("parent", "fork", "again"))
    for cassette in (parent, fork, again):
        report = verify_cassette(cassette)
        assert report.passed, report.to_json()
    assert diff_cassettes(parent, fork).index == fork_at
    assert diff_cassettes(parent, again, semantic=True).index == fork_at
    assert diff_cassettes(parent, again).index == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--steps", type=int, default=10_000, help="steps per cassette (a multiple of 4)")
    parser.add_argument("--repeat", type=int, default=5, help="repeats per measurement (median reported)")
    args = parser.parse_args(argv)
    steps = max(8, args.steps - args.steps % 4)
    fork_at = steps - 100  # a tool_result (index 4 + 4n), near the end

    with tempfile.TemporaryDirectory(prefix="bench-cassette-") as tmp:
        files = {name: Path(tmp) / f"{name}.json" for name in ("parent", "fork", "again")}
        parent = build_run("bench-parent", steps)
        fork = build_run("bench-fork", steps, fork_at=fork_at)
        fork.parent_id, fork.forked_from_step_id = parent.id, f"{parent.id}:{fork_at}"
        save_cassette(parent, files["parent"])
        save_cassette(fork, files["fork"])
        save_cassette(build_run("bench-again", steps, fork_at=fork_at, shift_ms=86_400_000), files["again"])
        _check(files, fork_at)

        size = files["parent"].stat().st_size
        print(f"cassettes: {steps} steps, {size / 1e6:.1f} MB each on disk, fork diverges at index {fork_at}")
        print(f"python {sys.version.split()[0]}, median of {args.repeat}\n")
        loaded = {name: load_cassette(path) for name, path in files.items()}
        rows: list[tuple[str, Callable[[], object], bool]] = [
            ("load_cassette", lambda: load_cassette(files["parent"]), False),
            ("verify_cassette", lambda: verify_cassette(loaded["parent"]), False),
            (
                "  of which: re-hash every step",
                lambda: [s.expected_hash() for s in loaded["parent"].steps],
                False,
            ),
            ("load + verify", lambda: verify_cassette(load_cassette(files["parent"])), True),
            ("diff by hash (fork)", lambda: diff_cassettes(loaded["parent"], loaded["fork"]), True),
            (
                "diff semantic (fork)",
                lambda: diff_cassettes(loaded["parent"], loaded["fork"], semantic=True),
                True,
            ),
            (
                "diff semantic (re-recorded)",
                lambda: diff_cassettes(loaded["parent"], loaded["again"], semantic=True),
                True,
            ),
            (
                "load both + diff by hash",
                lambda: diff_cassettes(load_cassette(files["parent"]), load_cassette(files["fork"])),
                True,
            ),
        ]
        for label, action, has_target in rows:
            seconds = median_seconds(action, args.repeat)
            verdict = ("PASS" if seconds < TARGET_SECONDS else "MISS") + f" (target < {TARGET_SECONDS} s)"
            print(f"{label:30} {seconds:8.4f} s  {verdict if has_target else ''}".rstrip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
