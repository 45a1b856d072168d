"""What the provider translations cost per model call, side by side with an older version.

    python bench/bench_translate.py [--rounds N] [--baseline-src DIR | --baseline-rev REV]

For each API (OpenAI Chat, OpenAI Responses, Anthropic, Gemini), a plain call of a tool loop (a
system prompt, a question, a tool round, two tools offered) is put through what a session does to
it: ``model_input`` of the request, ``model_output`` of the response (JSON and SSE), and
``wire_response`` of the neutral output (JSON and SSE). Each figure is the best of 5 repeats of
2,000 calls, in microseconds, measured in a fresh interpreter that imports ``otel_blackbox`` from
this checkout's ``src``, or from the older source (``--baseline-src`` a directory holding an
``otel_blackbox`` package; ``--baseline-rev`` a git revision, archived here). The versions are
measured alternately, N rounds each; the medians are printed with after / before.

Record pays model_input + model_output per call; replay pays model_input + wire_response.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CALLS, REPEATS = 2_000, 5
BASE = "http://127.0.0.1:9"
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
OUTPUT = {
    "type": "tool_calls",
    "text": "Let me check both.",
    "calls": [
        {"toolCallId": "call-2", "toolName": "get_weather", "toolInput": {"city": "Porto"}},
        {"toolCallId": "call-3", "toolName": "get_forecast", "toolInput": {"city": "Porto", "days": 2}},
    ],
}


def requests() -> dict[str, tuple[str, str, dict[str, Any]]]:
    """(JSON URL, SSE URL, request body) per API: one tool round done, the next question asked."""
    call = {
        "id": "call-0",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city":"Lisbon"}'},
    }
    chat_tools: list[dict[str, Any]] = [
        {"type": "function", "function": {"name": n, "description": "d", "parameters": WEATHER}}
        for n in ("get_weather", "get_forecast")
    ]
    chat = {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Lisbon?"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call-0", "content": '{"temperature_c": 11}'},
            {"role": "assistant", "content": "It is 11 C."},
            {"role": "user", "content": "And Porto, with the forecast?"},
        ],
        "tools": chat_tools,
        "temperature": 0.2,
    }
    responses = {
        "model": "gpt-4o-mini",
        "instructions": "Be brief.",
        "input": [
            {"role": "user", "content": "Weather in Lisbon?"},
            {
                "type": "function_call",
                "call_id": "call-0",
                "name": "get_weather",
                "arguments": '{"city":"Lisbon"}',
            },
            {"type": "function_call_output", "call_id": "call-0", "output": '{"temperature_c": 11}'},
            {"role": "assistant", "content": "It is 11 C."},
            {"role": "user", "content": "And Porto, with the forecast?"},
        ],
        "tools": [
            {"type": "function", "name": t["function"]["name"], "parameters": WEATHER} for t in chat_tools
        ],
    }
    anthropic = {
        "model": "claude-haiku-4-5",
        "max_tokens": 256,
        "system": "Be brief.",
        "messages": [
            {"role": "user", "content": "Weather in Lisbon?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "call-0", "name": "get_weather",
                                               "input": {"city": "Lisbon"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call-0",
                                          "content": '{"temperature_c": 11}'}]},
            {"role": "assistant", "content": "It is 11 C."},
            {"role": "user", "content": "And Porto, with the forecast?"},
        ],
        "tools": [{"name": t["function"]["name"], "input_schema": WEATHER} for t in chat_tools],
    }  # fmt: skip
    gemini = {
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "contents": [
            {"role": "user", "parts": [{"text": "Weather in Lisbon?"}]},
            {"role": "model", "parts": [{"functionCall": {"id": "call-0", "name": "get_weather",
                                                          "args": {"city": "Lisbon"}}}]},
            {"role": "user", "parts": [{"functionResponse": {"id": "call-0", "name": "get_weather",
                                                             "response": {"temperature_c": 11}}}]},
            {"role": "model", "parts": [{"text": "It is 11 C."}]},
            {"role": "user", "parts": [{"text": "And Porto, with the forecast?"}]},
        ],
        "tools": [{"functionDeclarations": [{"name": t["function"]["name"], "parameters": WEATHER}
                                            for t in chat_tools]}],
        "generationConfig": {"temperature": 0.2},
    }  # fmt: skip
    model = f"{BASE}/v1beta/models/gemini-2.5-flash"
    return {
        "openai-chat": (f"{BASE}/v1/chat/completions", f"{BASE}/v1/chat/completions", chat),
        "openai-responses": (f"{BASE}/v1/responses", f"{BASE}/v1/responses", responses),
        "anthropic": (f"{BASE}/v1/messages", f"{BASE}/v1/messages", anthropic),
        "gemini": (f"{model}:generateContent", f"{model}:streamGenerateContent?alt=sse", gemini),
    }


def best_us(fn: Any) -> float:
    return min(timeit.repeat(fn, number=CALLS, repeat=REPEATS)) / CALLS * 1e6


def measure() -> dict[str, dict[str, float]]:
    """This interpreter's otel_blackbox: microseconds per operation, per API."""
    from otel_blackbox._wire.call_ids import CallIds
    from otel_blackbox._wire.registry import provider_for

    figures: dict[str, dict[str, float]] = {}
    for name, (json_url, sse_url, body) in requests().items():
        figures[name] = _measure_one(provider_for, CallIds, json_url, sse_url, body, gemini=name == "gemini")
    return figures


def _measure_one(
    provider_for: Any, ids: Any, json_url: str, sse_url: str, body: Any, *, gemini: bool
) -> dict[str, float]:
    streamed_body = body if gemini else {**body, "stream": True}  # Gemini streams by its URL
    plain, streaming = provider_for("POST", json_url), provider_for("POST", sse_url)
    assert plain is not None and streaming is not None
    json_wire = plain.wire_response(OUTPUT, body).body
    sse_wire = streaming.wire_response(OUTPUT, streamed_body).body
    # The translation reads back what it writes: the same output from the JSON and the SSE wire.
    assert plain.model_output(json_wire, streamed=False, ids=ids()) == streaming.model_output(
        sse_wire, streamed=True, ids=ids()
    )
    return {
        "model_input": best_us(lambda: plain.model_input(body, ids())),
        "model_output json": best_us(lambda: plain.model_output(json_wire, streamed=False, ids=ids())),
        "model_output sse": best_us(lambda: streaming.model_output(sse_wire, streamed=True, ids=ids())),
        "wire_response json": best_us(lambda: plain.wire_response(OUTPUT, body)),
        "wire_response sse": best_us(lambda: streaming.wire_response(OUTPUT, streamed_body)),
    }


def archive(rev: str, workdir: Path) -> Path:
    target = workdir / "before"
    target.mkdir()
    tar = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(target)], input=tar.stdout, check=True)
    return target / "src"


def run_version(src: Path) -> dict[str, dict[str, float]]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    here = str(Path(__file__).parent)
    code = f"import json, sys; sys.path.insert(0, {here!r}); import bench_translate as b; "
    code += "print(json.dumps(b.measure()))"
    done = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True)
    return dict(json.loads(done.stdout))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="fresh interpreters per version (default 3)")
    older = parser.add_mutually_exclusive_group()
    older.add_argument("--baseline-src", type=Path, metavar="DIR", help="an older otel_blackbox source")
    older.add_argument("--baseline-rev", metavar="REV", help="the same, from a git archive of REV")
    parser.add_argument("--json", type=Path, help="also write every sample to this file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-translate-") as tmp:
        versions = {"after": ROOT / "src"}
        if args.baseline_rev:
            versions = {"before": archive(args.baseline_rev, Path(tmp)), **versions}
        elif args.baseline_src:
            versions = {"before": args.baseline_src, **versions}
        samples: dict[str, list[dict[str, dict[str, float]]]] = {v: [] for v in versions}
        for _ in range(args.rounds):
            for version, src in versions.items():
                samples[version].append(run_version(src))
    medians = {
        version: {
            api: {op: statistics.median(s[api][op] for s in runs) for op in runs[0][api]} for api in runs[0]
        }
        for version, runs in samples.items()
    }
    print(
        f"µs per call, best of {REPEATS} x {CALLS:,} calls, median of {args.rounds} interpreters per version"
    )
    print(
        f"{'api':18s} {'operation':20s}"
        + "".join(f"{v:>10s}" for v in medians)
        + ("   after/before" if "before" in medians else "")
    )
    for api in medians["after"]:
        for op, value in medians["after"][api].items():
            cells = "".join(f"{medians[v][api][op]:10.1f}" for v in medians)
            ratio = f"   {value / medians['before'][api][op]:.2f}" if "before" in medians else ""
            print(f"{api:18s} {op:20s}{cells}{ratio}")
    if args.json:
        args.json.write_text(json.dumps({"samples": samples, "medians": medians}, indent=2))


if __name__ == "__main__":
    main()
