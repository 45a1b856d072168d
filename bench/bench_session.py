"""Side-by-side benchmark: an agent's HTTP traffic sent direct, recorded, and replayed from a cassette.

Run it as a script (it is not a test and exits 0 whatever the figures; a replay that reaches the
server, or answers that differ between modes, raise AssertionError)::

    python bench/bench_session.py [--requests N] [--rounds K] [--repeat R] [--json out.json]
                                  [--profile] [--nagle]

The real ``openai`` SDK talks to ``FakeLLMServer`` (examples/fake_llm.py) on 127.0.0.1, served from a
thread of this process, in three modes: **direct** (no session), **record**
(``otel_blackbox.session(mode="record")``) and **replay** (``session(mode="replay")`` of a cassette
recorded beforehand with the same requests; the server keeps running, and the script checks that
its request count does not grow). Two measurements, the modes alternated in every repeat (the
starting mode rotates), the median of R repeats reported:

1. per-request overhead: N sequential non-streaming chat completions, a short prompt each, no tools
   (the fake model answers with text); µs per request of the request loop inside the session, the
   added cost of record and replay vs direct, and the session's own start + finish (loading the
   cassette / writing it, checking the replay) apart;
2. a 50-turn agent run: K rounds (default 25) of user question -> tool call -> tool executed locally
   -> tool result -> answer, in one growing conversation, 2K model calls; wall seconds of the whole
   run, session start and finish included, live (direct) vs replayed. Target: replay / live < 1.0.

The fake server writes a response's headers and its body in two ``send()`` calls; with Nagle's
algorithm on, the body waits for the client's delayed ACK of the headers, about 40 ms per response
on Linux loopback, which would dwarf everything measured here. So the script sets TCP_NODELAY on
the fake server's sockets (``disable_nagle_algorithm`` of its handler class; httpcore already sets
it on the client's), and ``--nagle`` leaves the server as it ships, to show that stall.
``--profile`` adds the wall time spent inside the session's hooks per model call (no profiler) and
cProfile listings of one replay of each workload.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import io
import json
import os
import platform
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from unittest import mock

import openai
from openai.types.chat import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionMessage,
    ChatCompletionMessageParam,
    ChatCompletionToolParam,
)

import otel_blackbox

if TYPE_CHECKING:  # at run time it is imported from examples/ by start_server()
    from fake_llm import FakeLLMServer

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
API_KEY = "sk-bench"
MODEL = "gpt-bench"  # any name but the fake server's fault injectors ("fail-500", "slow")
SYSTEM_PROMPT = "You are a weather assistant. Use the tool, then answer in one sentence."
CITIES = ("Paris", "Lisbon", "Oslo", "Nairobi", "Lima", "Osaka", "Quebec", "Perth")
TARGET_REPLAY_OVER_LIVE = 1.0  # 50-turn run, wall seconds: replay / live < this

Mode = Literal["direct", "record", "replay"]
MODES: tuple[Mode, ...] = ("direct", "record", "replay")
LABELS = {
    "direct": "direct (no session)",
    "record": 'session(mode="record")',
    "replay": 'session(mode="replay")',
}

TOOLS: list[ChatCompletionToolParam] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "City name, e.g. Paris"}},
                "required": ["city"],
            },
        },
    }
]


# -- the workloads ---------------------------------------------------------------------------------


def start_server(*, nagle: bool) -> FakeLLMServer:
    """The fake provider; unless ``nagle``, its sockets get TCP_NODELAY (see the module doc)."""
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    import fake_llm

    # Its handler writes the headers and then the body of a response in two send() calls; with Nagle's
    # algorithm on, the body waits for the client's delayed ACK of the headers: ~40 ms a response on Linux.
    fake_llm._Handler.disable_nagle_algorithm = not nagle
    return fake_llm.FakeLLMServer().start()


def new_client(server: FakeLLMServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.openai_base_url, api_key=API_KEY, max_retries=0)


def plain_requests(client: openai.OpenAI, n: int) -> list[str]:
    """N independent one-message chat completions; the fake model answers each with text."""
    answers = []
    for i in range(n):
        completion = client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": f"Say hello, request number {i}."}]
        )
        answers.append(completion.choices[0].message.content or "")
    return answers


def get_weather(city: str) -> str:
    """The agent's tool, run locally: deterministic, so live, recorded and replayed runs agree."""
    temperature = 8 + sum(map(ord, city)) % 17
    return json.dumps({"city": city, "temperature_c": temperature, "conditions": "partly cloudy"})


def assistant_turn(message: ChatCompletionMessage) -> ChatCompletionAssistantMessageParam:
    turn: ChatCompletionAssistantMessageParam = {"role": "assistant", "content": message.content}
    calls = [c for c in message.tool_calls or [] if c.type == "function"]
    if calls:
        turn["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.function.name, "arguments": c.function.arguments},
            }
            for c in calls
        ]
    return turn


def agent_run(client: openai.OpenAI, rounds: int) -> list[str]:
    """``rounds`` x (question -> tool call -> tool result -> answer) in one growing conversation."""
    messages: list[ChatCompletionMessageParam] = [{"role": "system", "content": SYSTEM_PROMPT}]
    answers = []
    for r in range(rounds):
        city = CITIES[r % len(CITIES)]
        messages.append({"role": "user", "content": f"Question {r + 1}: what's the weather in {city}?"})
        while True:
            completion = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
            message = completion.choices[0].message
            messages.append(assistant_turn(message))
            calls = [c for c in message.tool_calls or [] if c.type == "function"]
            if not calls:
                answers.append(message.content or "")
                break
            for call in calls:
                result = get_weather(**json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return answers


# -- one run ---------------------------------------------------------------------------------------


@dataclass
class Sample:
    mode: str
    calls: int  # model calls made (HTTP requests)
    loop_ns: int  # wall time of the workload inside the session (perf_counter_ns)
    total_ns: int  # the same plus the session's start (cassette load) and finish (write / checks)
    cpu_ns: int  # process CPU time over the loop: the in-process fake server's included
    contacted: int  # requests the fake server received during the run

    @property
    def loop_us_per_call(self) -> float:
        return self.loop_ns / self.calls / 1000

    @property
    def cpu_us_per_call(self) -> float:
        return self.cpu_ns / self.calls / 1000

    @property
    def session_ms(self) -> float:
        return (self.total_ns - self.loop_ns) / 1e6

    @property
    def total_s(self) -> float:
        return self.total_ns / 1e9


@contextlib.contextmanager
def mode_block(mode: Mode, cassette: Path) -> Iterator[None]:
    if mode == "direct":
        yield
        return
    with otel_blackbox.session(mode="record" if mode == "record" else "replay", cassette=cassette):
        yield


def run_one(
    mode: Mode,
    server: FakeLLMServer,
    workload: Callable[[openai.OpenAI], list[str]],
    calls: int,
    cassette: Path,
    expected: list[str] | None,
    profile: cProfile.Profile | None = None,
) -> tuple[Sample, list[str]]:
    """One run of a workload in one mode, on a fresh client (its connection opened inside the run)."""
    client = new_client(server)
    before = len(server.requests)
    gc.collect()
    t0 = time.perf_counter_ns()
    with mode_block(mode, cassette):
        t1, c1 = time.perf_counter_ns(), time.process_time_ns()
        if profile is not None:
            profile.enable()
        answers = workload(client)
        if profile is not None:
            profile.disable()
        t2, c2 = time.perf_counter_ns(), time.process_time_ns()
    t3 = time.perf_counter_ns()
    client.close()
    contacted = len(server.requests) - before
    # Checked, not timed: a replay must never reach the server, and every run must give the same answers.
    if mode == "replay" and contacted:
        raise AssertionError(f"replay contacted the fake server {contacted} time(s)")
    if mode != "replay" and contacted != calls:
        raise AssertionError(f"{mode}: the fake server received {contacted} requests, expected {calls}")
    if expected is not None and answers != expected:
        raise AssertionError(f"{mode}: the answers differ from the first live run's")
    return Sample(mode, calls, t2 - t1, t3 - t0, c2 - c1, contacted), answers


# -- the whole benchmark ---------------------------------------------------------------------------


def rotated(items: Sequence[Mode], by: int) -> list[Mode]:
    k = by % len(items)
    return [*items[k:], *items[:k]]


def median_of(samples: list[Sample], key: Callable[[Sample], float]) -> float:
    return statistics.median(key(s) for s in samples) if samples else float("nan")


def ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("nan")


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def machine_info() -> dict[str, Any]:
    def version(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "not installed"

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "loadavg_1m": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        "nproc": usable,
        "cpu": cpu,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "openai": version("openai"),
        "httpx": version("httpx"),
        "httpcore": version("httpcore"),
        "otel-blackbox": version("otel-blackbox"),
    }


def measure(
    name: str,
    server: FakeLLMServer,
    workload: Callable[[openai.OpenAI], list[str]],
    calls: int,
    repeat: int,
    workdir: Path,
) -> tuple[dict[Mode, list[Sample]], Path]:
    """A reference recording (also the warm-up), then R repeats of the three modes, rotated."""
    reference = workdir / f"{name}-reference.json"
    _, expected = run_one("direct", server, workload, calls, reference, None)
    run_one("record", server, workload, calls, reference, expected)
    run_one("replay", server, workload, calls, reference, expected)
    samples: dict[Mode, list[Sample]] = {m: [] for m in MODES}
    for rep in range(repeat):
        for mode in rotated(MODES, rep):
            # Record writes its own file; replay always reads the reference recording.
            cassette = workdir / f"{name}-recorded.json" if mode == "record" else reference
            sample, _ = run_one(mode, server, workload, calls, cassette, expected)
            samples[mode].append(sample)
            print(
                f"  {name:<8} repeat {rep + 1}/{repeat} {mode:<7} {sample.loop_us_per_call:8.1f} µs/call "
                f"(CPU {sample.cpu_us_per_call:7.1f}), session start+finish {sample.session_ms:6.2f} ms, "
                f"total {sample.total_s:6.3f} s",
                flush=True,
            )
    return samples, reference


def run_benchmark(args: argparse.Namespace, server: FakeLLMServer, workdir: Path) -> dict[str, Any]:
    n, rounds, repeat = args.requests, args.rounds, args.repeat
    turns = 2 * rounds
    nagle = "on: ~40 ms stall per response" if args.nagle else "off (TCP_NODELAY)"
    print(f"fake server on {server.openai_base_url}, Nagle's algorithm {nagle}", flush=True)
    print(f"1. {n} plain chat completions per run, {repeat} repeats", flush=True)
    plain, _ = measure("plain", server, lambda c: plain_requests(c, n), n, repeat, workdir)
    print(f"2. agent run of {turns} model calls ({rounds} tool rounds) per run, {repeat} repeats", flush=True)
    agent, agent_cassette = measure("agent", server, lambda c: agent_run(c, rounds), turns, repeat, workdir)

    us = {m: median_of(plain[m], lambda s: s.loop_us_per_call) for m in MODES}
    cpu = {m: median_of(plain[m], lambda s: s.cpu_us_per_call) for m in MODES}
    session_ms = {m: median_of(plain[m], lambda s: s.session_ms) for m in MODES}
    added = {m: us[m] - us["direct"] for m in ("record", "replay")}
    ratios = {f"{m}_over_direct": ratio(us[m], us["direct"]) for m in ("record", "replay")}

    wall = {m: median_of(agent[m], lambda s: s.total_s) for m in MODES}
    loop = {m: median_of(agent[m], lambda s: s.loop_ns / 1e9) for m in MODES}
    agent_session_ms = {m: median_of(agent[m], lambda s: s.session_ms) for m in MODES}
    replay_over_live = ratio(wall["replay"], wall["direct"])
    target_ok = replay_over_live < TARGET_REPLAY_OVER_LIVE

    print()
    print(f"1. per-request overhead: {n} sequential chat completions (no tools), median of {repeat}")
    print(
        f"   {'mode':<24} {'µs/request':>10} {'added':>8} {'ratio':>6} {'CPU µs':>8} {'start+finish ms':>16}"
    )
    for m in MODES:
        extra = f"{added[m]:+8.1f} {ratios[f'{m}_over_direct']:6.2f}" if m != "direct" else f"{'':>8} {'':>6}"
        print(f"   {LABELS[m]:<24} {us[m]:10.1f} {extra} {cpu[m]:8.1f} {session_ms[m]:16.2f}")
    print("   (CPU µs: the whole process's CPU per request, the in-process fake server's included)")
    print()
    print(
        f"2. {turns}-turn agent run ({rounds} x question -> tool call -> tool result -> answer), "
        f"median of {repeat}"
    )
    print(
        f"   {'mode':<24} {'wall s':>8} {'loop s':>8} {'ms/call':>8} {'start+finish ms':>16} {'vs live':>8}"
    )
    for m in MODES:
        print(
            f"   {LABELS[m]:<24} {wall[m]:8.3f} {loop[m]:8.3f} {loop[m] / turns * 1000:8.2f} "
            f"{agent_session_ms[m]:16.2f} {ratio(wall[m], wall['direct']):8.3f}"
        )
    size_kb = agent_cassette.stat().st_size / 1024
    print(f"   (the replayed cassette: {size_kb:.0f} KiB)")
    print()
    print("targets")
    target_name = f"{turns}-turn run, wall: replay / live"
    print(
        f"   {target_name:<44} {replay_over_live:6.3f}  (target < {TARGET_REPLAY_OVER_LIVE}) "
        f"{verdict(target_ok)}"
    )

    return {
        "machine": machine_info(),
        "requests": n,
        "rounds": rounds,
        "agent_model_calls": turns,
        "repeat": repeat,
        "fake_server_nagle": args.nagle,
        "per_request": {
            "us_per_request": us,
            "added_us_per_request": added,
            "ratios": ratios,
            "process_cpu_us_per_request": cpu,
            "session_start_finish_ms": session_ms,
        },
        "agent_run": {
            "wall_s": wall,
            "loop_s": loop,
            "session_start_finish_ms": agent_session_ms,
            "replay_over_live": replay_over_live,
            "cassette_bytes": agent_cassette.stat().st_size,
        },
        "targets": [
            {
                "name": target_name,
                "value": replay_over_live,
                "target": f"< {TARGET_REPLAY_OVER_LIVE}",
                "met": target_ok,
            },
        ],
        "samples": {
            "per_request": {m: [asdict(s) for s in plain[m]] for m in MODES},
            "agent_run": {m: [asdict(s) for s in agent[m]] for m in MODES},
        },
    }


# -- --profile -------------------------------------------------------------------------------------


@contextlib.contextmanager
def timed_session_hooks() -> Iterator[dict[str, int]]:
    """Wall time spent inside a record or replay session's intercept and observe (its own work)."""
    from otel_blackbox._playback.interceptor import Session
    from otel_blackbox._playback.record import RecordSession
    from otel_blackbox._playback.replay import ReplaySession

    spent = {"intercept": 0, "observe": 0}

    def timed(kind: str, method: Any) -> Any:
        def timed_method(self: Session, *args: Any) -> Any:
            t0 = time.perf_counter_ns()
            try:
                return method(self, *args)
            finally:
                spent[kind] += time.perf_counter_ns() - t0

        return timed_method

    with contextlib.ExitStack() as patches:
        for mode in (RecordSession, ReplaySession):
            for kind in ("intercept", "observe"):
                patches.enter_context(mock.patch.object(mode, kind, timed(kind, getattr(mode, kind))))
        yield spent


def print_stats(profile: cProfile.Profile, title: str, limit: int, restriction: str | None = None) -> None:
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    if restriction is None:
        stats.strip_dirs()
    stats.sort_stats(pstats.SortKey.CUMULATIVE).print_stats(*([restriction] if restriction else []), limit)
    text = out.getvalue().replace(str(Path(otel_blackbox.__file__).parent.parent) + os.sep, "")
    body = text[text.find("   ncalls") :] if "   ncalls" in text else text
    print(f"\n--- {title} (sorted by cumulative time, top {limit})")
    print(body.rstrip())


def run_profiles(args: argparse.Namespace, server: FakeLLMServer, workdir: Path) -> dict[str, Any]:
    print("\n=== where a replay's time goes ===")
    workloads: list[tuple[str, Callable[[openai.OpenAI], list[str]], int]] = [
        ("plain", lambda c: plain_requests(c, args.requests), args.requests),
        ("agent", lambda c: agent_run(c, args.rounds), 2 * args.rounds),
    ]
    hooks: dict[str, Any] = {}
    print("the session's own work per model call, no profiler, median of 3 (µs):")
    for name, workload, calls in workloads:
        cassette = workdir / f"{name}-profile.json"
        _, expected = run_one("record", server, workload, calls, cassette, None)
        per_mode: dict[str, dict[str, float]] = {}
        for mode in ("record", "replay"):
            loops, inside = [], []
            for _ in range(3):
                target = workdir / f"{name}-profile-rerecorded.json" if mode == "record" else cassette
                with timed_session_hooks() as spent:
                    sample, _ = run_one(mode, server, workload, calls, target, expected)
                loops.append(sample.loop_us_per_call)
                inside.append((spent["intercept"] + spent["observe"]) / calls / 1000)
            loop, own = statistics.median(loops), statistics.median(inside)
            per_mode[mode] = {"loop_us_per_call": loop, "session_us_per_call": own}
            hook = "observe (+ intercept)" if mode == "record" else "intercept"
            print(
                f"   {name:<6} {mode:<7} loop {loop:8.1f} µs/call, in Session.{hook}: {own:7.1f} "
                f"({own / loop * 100:4.1f}%)"
            )
        hooks[name] = per_mode

    print("\ncProfile listings (its own overhead inflates the absolute times)")
    for name, workload, calls in workloads:
        cassette = workdir / f"{name}-profile.json"
        _, expected = run_one("direct", server, workload, calls, cassette, None)
        profile = cProfile.Profile()
        run_one("replay", server, workload, calls, cassette, expected, profile)
        title = f"replay, {name} workload, {calls} model calls"
        print_stats(profile, title, 14)
        print_stats(profile, f"{title}, otel_blackbox's functions", 14, "otel_blackbox")
    return hooks


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=200, help="chat completions per run (default 200)")
    parser.add_argument("--rounds", type=int, default=25, help="tool rounds of the agent run (default 25)")
    parser.add_argument("--repeat", type=int, default=5, help="repeats per mode; medians (default 5)")
    parser.add_argument("--json", type=Path, help="also write every sample and the summary to this file")
    parser.add_argument("--profile", action="store_true", help="also print cProfile listings of replays")
    parser.add_argument(
        "--nagle", action="store_true", help="leave Nagle's algorithm on in the fake server (module doc)"
    )
    args = parser.parse_args(argv)
    if args.requests < 1 or args.rounds < 1 or args.repeat < 1:
        parser.error("--requests, --rounds and --repeat must be >= 1")

    info = machine_info()
    print(
        f"python {info['python']}, openai {info['openai']}, httpx {info['httpx']}, "
        f"httpcore {info['httpcore']}, "
        f"{info['nproc']} CPUs ({info['cpu']}), load {info['loadavg_1m']}"
    )
    workdir = Path(tempfile.mkdtemp(prefix="bench_session-"))
    server = start_server(nagle=args.nagle)
    started = time.perf_counter()
    try:
        result = run_benchmark(args, server, workdir)
        if args.profile:
            result["session_hooks_us_per_call"] = run_profiles(args, server, workdir)
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    result["wall_s"] = round(time.perf_counter() - started, 1)
    result["loadavg_1m_at_end"] = machine_info()["loadavg_1m"]
    print(f"\ntotal {result['wall_s']} s, load average at the end {result['loadavg_1m_at_end']}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
