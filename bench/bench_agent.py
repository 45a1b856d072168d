"""What the built-in rerun agent costs per model turn above the SDK it drives, side by side in one run.

Run it as a script (it is not a test and exits 0 whatever the figures; answers or requests that
differ between the modes raise AssertionError)::

    python bench/bench_agent.py [--turns 20,50] [--repeat R] [--runs N] [--json out.json]

A conversation of K model turns (K/2 rounds of: a question naming an order number -> the model
calls ``lookup_order`` -> the tool's result -> the model answers), on the ``openai`` Chat
Completions SDK, in four modes:

1. **floor**: a hand-written tool loop (append the messages, ``create``, read the tool calls, run
   the tool, append its result) on ``openai.OpenAI(http_client=httpx2.Client(transport=
   httpx2.MockTransport(handler)))``; the handler serves canned chat completions in order (the bytes
   ``FakeLLMServer`` answered the same conversation with, captured once at start-up);
2. **agent**: the built-in agent's loop (``replay.agent.loop.drive``) over an incident of the same
   conversation, its ``ChatClient`` on the same kind of in-memory transport, serving the same bytes.
   No session runs: ``last_output`` is fed by reading each response through
   ``OpenAIChat().model_output`` in the handler, which is what a recording session does. Its cost
   above the floor is the agent's own per turn: the turn's settings, ``wire_request``, the tool book,
   the assistant message, ``ChatClient.send``'s argument split, and reading the output;
3. **live**: the floor's hand loop against ``FakeLLMServer`` on 127.0.0.1 (examples/fake_llm.py, in a
   thread of this process, TCP_NODELAY as in bench_session.py), no session, a new client per run;
4. **rerun**: ``rerun_built_in`` of that incident against the same server: the whole command, the
   incident loaded, the record session with its HTTP hook, the child written.

The incident is recorded once per K with ``otel_blackbox.session(mode="record")`` around the hand
loop against the server. Each repeat runs N floor/agent pairs (``--runs``) and one live/rerun
pair, one conversation a sample, the order within each pair alternating; the figures are medians
of all the samples of a mode, and of the pairs' differences and ratios. Checked, not timed: the
agent's requests normalize (``OpenAIChat.model_input``) to the floor's, every mode gets the same
final answer, the server receives K requests a run, and the child completes with the incident's
tool results.

Timers inside the runs (a few ``perf_counter_ns`` calls a turn, about 1 µs) split the agent's turn
into the SDK's ``create``, the transport, reading the output, ``wire_request``, ``send``'s argument
split and the rest of ``drive``; the last four are its own work, also given as a share of the SDK's
``create`` in the same conversations (the machine's drift moves both alike, while the floor's own
figure moves by more than the agent's whole cost between runs on a shared machine). The rerun's record
session is timed the same way: its HTTP hooks per turn, its ``finish`` (the child written) per run.
Every live run builds its ``openai.OpenAI`` client inside the clock (its SSL context, ~25 ms; the
rerun's ``make_client`` does too); the in-memory runs build theirs before it.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import json
import os
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from unittest import mock

import httpx2
import openai
from bench_session import assistant_turn, machine_info, start_server, timed_session_hooks
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam

import otel_blackbox
from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.model import terminal_outcome
from otel_blackbox._playback.agent.incident import Incident, read_incident
from otel_blackbox._playback.agent.loop import AgentPlan, AgentRun, drive
from otel_blackbox._playback.agent.run import BuiltInRerun, BuiltInRerunSession, rerun_built_in
from otel_blackbox._playback.agent.sdk_openai import ChatClient
from otel_blackbox._playback.agent.tools import ToolBook
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.memo import RequestMemo
from otel_blackbox._wire.openai_chat.translation import OpenAIChat
from otel_blackbox._wire.protocol import WireRequest

if TYPE_CHECKING:  # at run time it is imported from examples/ by start_server()
    from fake_llm import FakeLLMServer

API_KEY = "sk-bench-agent-0123456789"  # the recorder refuses a key it sees in the recording: none is
MODEL = "gpt-bench"  # any name but the fake server's fault injectors
MOCK_URL = "http://mock.invalid/v1"  # never resolved: the in-memory transport answers
SYSTEM_PROMPT = "You are an order desk. Look the order up with the tool, then answer in one sentence."
TOOLS: list[ChatCompletionToolParam] = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "The status of an order.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "integer", "description": "The order number"}},
                "required": ["order_id"],
            },
        },
    }
]

Mode = Literal["floor", "agent", "live", "rerun"]
MODES: tuple[Mode, ...] = ("floor", "agent", "live", "rerun")
LABELS: dict[Mode, str] = {
    "floor": "floor: hand loop + SDK",
    "agent": "built-in agent (drive) + SDK",
    "live": "hand loop, FakeLLMServer",
    "rerun": "rerun_built_in, FakeLLMServer",
}


# -- the conversation ------------------------------------------------------------------------------


def question(r: int) -> str:
    return f"What is the status of order {1001 + r}?"  # the fake model calls the tool with this number


def lookup_order(order_id: int) -> str:
    """The program's tool, run locally by the hand loop: deterministic, so every mode agrees."""
    status = ("shipped", "packed", "delivered")[order_id % 3]
    return json.dumps({"order_id": order_id, "status": status, "items": 1 + order_id % 4})


def hand_loop(client: openai.OpenAI, rounds: int) -> list[str]:
    """The floor: the least a program does for a tool loop on the SDK."""
    messages: list[ChatCompletionMessageParam] = [{"role": "system", "content": SYSTEM_PROMPT}]
    answers = []
    for r in range(rounds):
        messages.append({"role": "user", "content": question(r)})
        while True:
            message = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
            reply = message.choices[0].message
            messages.append(assistant_turn(reply))
            calls = [c for c in reply.tool_calls or [] if c.type == "function"]
            if not calls:
                answers.append(reply.content or "")
                break
            for call in calls:
                result = lookup_order(**json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return answers


# -- the in-memory transport -----------------------------------------------------------------------


@dataclass
class Canned:
    """The MockTransport handler: the canned completions in order; with ``tap``, each also read
    through ``OpenAIChat().model_output`` as a session would (the agent's ``last_output``)."""

    bodies: list[bytes]
    tap: bool = False
    served: int = 0
    received: list[bytes] = field(default_factory=list)
    ids: CallIds = field(default_factory=CallIds)
    output: dict[str, Any] | None = None
    handler_ns: int = 0  # the transport's own time, reading the output excluded
    tap_ns: int = 0
    chat: OpenAIChat = field(default_factory=OpenAIChat)

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        t0 = time.perf_counter_ns()
        body = self.bodies[self.served]
        self.served += 1
        self.received.append(request.content)
        response = httpx2.Response(200, content=body, headers={"content-type": "application/json"})
        t1 = time.perf_counter_ns()
        if self.tap:
            self.output = self.chat.model_output(body, streamed=False, ids=self.ids)
        t2 = time.perf_counter_ns()
        self.handler_ns += t1 - t0
        self.tap_ns += t2 - t1
        return response


def mock_http(handler: Canned) -> httpx2.Client:
    return httpx2.Client(transport=httpx2.MockTransport(handler))


def capture_bodies(server: FakeLLMServer, rounds: int) -> tuple[list[bytes], list[str]]:
    """The response bytes the fake server answers the conversation with, and the answers."""
    bodies: list[bytes] = []

    def keep(response: httpx2.Response) -> None:
        bodies.append(response.read())

    with httpx2.Client(event_hooks={"response": [keep]}) as http:
        client = openai.OpenAI(base_url=server.openai_base_url, api_key=API_KEY, http_client=http)
        answers = hand_loop(client, rounds)
    return bodies, answers


# -- one sample ------------------------------------------------------------------------------------


@dataclass
class Sample:
    mode: str
    turns: int
    wall_ns: int
    cpu_ns: int  # process CPU: the in-process fake server's included in the live modes
    transport_ns: int = 0  # the mock handler's own time (the in-memory modes)
    # The agent's parts (agent mode): reading each response to a neutral output, wire_request, the
    # whole ChatClient.send, and the SDK's create inside it.
    tap_ns: int = 0
    wire_ns: int = 0
    send_ns: int = 0
    create_ns: int = 0
    # The record session's (rerun mode): in its HTTP hooks (intercept + observe), and in finish (the
    # child's end step, masking, the leak check, the file written).
    hooks_ns: int = 0
    finish_ns: int = 0

    def us(self, ns: int) -> float:
        return ns / self.turns / 1000

    @property
    def us_per_turn(self) -> float:
        return self.us(self.wall_ns)

    def parts(self) -> dict[str, float]:
        """µs per turn of each part of an agent's turn; the last four are the agent's own."""
        return {
            "SDK create (transport and reading excluded)": self.us(
                self.create_ns - self.transport_ns - self.tap_ns
            ),
            "in-memory transport": self.us(self.transport_ns),
            "reading the output (model_output)": self.us(self.tap_ns),
            "wire_request": self.us(self.wire_ns),
            "ChatClient.send's argument split": self.us(self.send_ns - self.create_ns),
            "drive's own (settings, messages, tool book, assistant message)": self.us(
                self.wall_ns - self.send_ns - self.wire_ns
            ),
        }


OWN_PARTS = 4  # the last four of Sample.parts()


def normalized(requests: list[bytes]) -> list[dict[str, Any]]:
    """The neutral model_input of each request a run sent, model left out (one CallIds per run)."""
    ids, chat = CallIds(), OpenAIChat()
    found = []
    for raw in requests:
        payload = chat.model_input(json.loads(raw), ids)
        payload.pop("model", None)
        found.append(payload)
    return found


@dataclass
class Workload:
    """One K: the captured completions, the incident recorded from the same conversation, and what
    every mode must agree with."""

    rounds: int
    bodies: list[bytes]
    answers: list[str]
    incident_path: Path
    incident: Incident
    requests: list[dict[str, Any]] = field(default_factory=list)  # the floor's, normalized

    @property
    def turns(self) -> int:
        return 2 * self.rounds


class TimedChat(OpenAIChat):
    """The translation, its ``wire_request`` timed (a few perf_counter_ns calls a turn)."""

    def __init__(self) -> None:
        self.ns = 0

    def wire_request(self, model_input: dict[str, Any], *, stream: bool, native: bool) -> WireRequest:
        t0 = time.perf_counter_ns()
        try:
            return super().wire_request(model_input, stream=stream, native=native)
        finally:
            self.ns += time.perf_counter_ns() - t0


class TimedMemo(RequestMemo):
    """The agent's request memo, its ``wire_request`` timed on the translation's counter."""

    def wire_request(self, model_input: dict[str, Any], *, stream: bool) -> WireRequest:
        t0 = time.perf_counter_ns()
        try:
            return super().wire_request(model_input, stream=stream)
        finally:
            if isinstance(self.provider, TimedChat):
                self.provider.ns += time.perf_counter_ns() - t0


class TimedClient(ChatClient):
    """``ChatClient``, its ``send`` timed whole and the SDK's ``create`` inside it."""

    def __init__(self, *, base_url: str | None, http_client: httpx2.Client | None = None) -> None:
        super().__init__(base_url=base_url, http_client=http_client)
        self.send_ns = self.create_ns = 0
        create = self._create

        def timed_create(**kwargs: Any) -> Any:
            t0 = time.perf_counter_ns()
            try:
                return create(**kwargs)
            finally:
                self.create_ns += time.perf_counter_ns() - t0

        self._create = timed_create

    def send(self, body: dict[str, Any], *, model: str, stream: bool) -> None:
        t0 = time.perf_counter_ns()
        try:
            super().send(body, model=model, stream=stream)
        finally:
            self.send_ns += time.perf_counter_ns() - t0


def run_floor(work: Workload) -> Sample:
    """One conversation of the hand loop on the in-memory transport (the client built untimed)."""
    handler = Canned(work.bodies)
    client = openai.OpenAI(base_url=MOCK_URL, api_key=API_KEY, http_client=mock_http(handler))
    gc.collect()
    t0, c0 = time.perf_counter_ns(), time.process_time_ns()
    answers = hand_loop(client, work.rounds)
    t1, c1 = time.perf_counter_ns(), time.process_time_ns()
    client.close()
    if answers != work.answers:
        raise AssertionError("floor: the answers differ from the fake server's")
    if not work.requests:
        work.requests = normalized(handler.received)
    return Sample("floor", work.turns, t1 - t0, c1 - c0, handler.handler_ns)


def output_of(handler: Canned) -> Callable[[], dict[str, Any] | None]:
    return lambda: handler.output


def run_agent(work: Workload) -> Sample:
    """One conversation of ``drive`` as ``rerun_built_in`` calls it, minus the session; its client,
    tool book and numbering built before the clock starts."""
    handler = Canned(work.bodies, tap=True)
    handler.ids.start = work.incident.next_call_index()
    client = TimedClient(base_url=MOCK_URL, http_client=mock_http(handler))
    book = ToolBook(work.incident.results, match="arguments")
    plan = AgentPlan("openai-chat", MODEL, stream=False, native=True, max_turns=2 * work.turns + 10)
    chat, run = TimedChat(), AgentRun()
    gc.collect()
    # drive writes its requests through a RequestMemo (only the new messages each turn): timed here.
    timed_memo = mock.patch("otel_blackbox._playback.agent.loop.RequestMemo", TimedMemo)
    timed_memo.start()
    t0, c0 = time.perf_counter_ns(), time.process_time_ns()
    drive(
        work.incident,
        plan,
        provider=chat,
        client=client,
        book=book,
        last_output=output_of(handler),
        answered=lambda _id, _outcome: None,
        run=run,
    )
    t1, c1 = time.perf_counter_ns(), time.process_time_ns()
    timed_memo.stop()
    client._client.close()
    if run.turns != work.turns or run.final_answer != work.answers[-1]:
        raise AssertionError(f"agent: {run.turns} turns, answer {run.final_answer!r}")
    if normalized(handler.received) != work.requests:
        raise AssertionError("agent: its requests do not normalize to the hand loop's")
    return Sample(
        "agent",
        work.turns,
        t1 - t0,
        c1 - c0,
        handler.handler_ns,
        handler.tap_ns,
        chat.ns,
        client.send_ns,
        client.create_ns,
    )


def run_live(work: Workload, server: FakeLLMServer) -> Sample:
    """The hand loop against the fake server, no session, its client built and closed inside."""
    before = len(server.requests)
    gc.collect()
    t0, c0 = time.perf_counter_ns(), time.process_time_ns()
    client = openai.OpenAI(base_url=server.openai_base_url, api_key=API_KEY)
    answers = hand_loop(client, work.rounds)
    client.close()
    t1, c1 = time.perf_counter_ns(), time.process_time_ns()
    if answers != work.answers or len(server.requests) - before != work.turns:
        raise AssertionError("live: other answers, or not one request a turn")
    return Sample("live", work.turns, t1 - t0, c1 - c0)


def run_rerun(work: Workload, server: FakeLLMServer, child: Path) -> Sample:
    """``rerun_built_in`` of the incident against the fake server: the whole command."""
    before = len(server.requests)
    plan = BuiltInRerun(output=child, base_url=server.openai_base_url)
    said = io.StringIO()
    finished = [0]
    finish = BuiltInRerunSession.finish

    def timed_finish(self: BuiltInRerunSession, error: BaseException | None = None) -> None:
        t0 = time.perf_counter_ns()
        try:
            finish(self, error)
        finally:
            finished[0] += time.perf_counter_ns() - t0

    gc.collect()
    with (
        timed_session_hooks() as spent,
        mock.patch.object(BuiltInRerunSession, "finish", timed_finish),
        contextlib.redirect_stderr(said),  # its summary lines
    ):
        t0, c0 = time.perf_counter_ns(), time.process_time_ns()
        code = rerun_built_in(work.incident_path, plan)
        t1, c1 = time.perf_counter_ns(), time.process_time_ns()
    cassette = load_cassette(child)
    outcome = terminal_outcome(cassette)
    results = [s.payload.get("result") for s in cassette.steps if s.type == "tool_result"]
    recorded = [r.outcome.get("result") for r in work.incident.results]
    if code != 0 or outcome.final_answer != work.answers[-1] or len(server.requests) - before != work.turns:
        raise AssertionError(f"rerun: exit {code}, {outcome}, {said.getvalue()!r}")
    if results != recorded:
        raise AssertionError("rerun: the child's tool results are not the incident's")
    hooks = spent["intercept"] + spent["observe"]
    return Sample("rerun", work.turns, t1 - t0, c1 - c0, hooks_ns=hooks, finish_ns=finished[0])


# -- the whole benchmark ---------------------------------------------------------------------------


def prepare(server: FakeLLMServer, rounds: int, workdir: Path) -> Workload:
    """The captured completions and the recorded incident of a conversation of ``rounds`` rounds."""
    bodies, answers = capture_bodies(server, rounds)
    path = workdir / f"incident-{2 * rounds}.json"
    client = openai.OpenAI(base_url=server.openai_base_url, api_key=API_KEY)
    with client, otel_blackbox.session(mode="record", cassette=path):
        recorded = hand_loop(client, rounds)
    if recorded != answers:
        raise AssertionError("the recorded run answered otherwise than the captured one")
    incident = read_incident(load_cassette(path), str(path))
    if len(incident.model_inputs) != 2 * rounds or len(incident.results) != rounds:
        raise AssertionError(f"the incident has {len(incident.model_inputs)} model turns")
    return Workload(rounds, bodies, answers, path, incident)


def client_startup_ms(server: FakeLLMServer) -> float:
    """What building an ``openai.OpenAI`` costs (its SSL context, mostly): each live run pays it once."""
    times = []
    for _ in range(5):
        t0 = time.perf_counter_ns()
        client = openai.OpenAI(base_url=server.openai_base_url, api_key=API_KEY)
        times.append((time.perf_counter_ns() - t0) / 1e6)
        client.close()
    return med(times)


def med(values: Iterable[float]) -> float:
    return statistics.median(values)


def measure_k(
    work: Workload, server: FakeLLMServer, args: argparse.Namespace, workdir: Path
) -> dict[str, Any]:
    """R repeats; each runs N floor/agent pairs and one live/rerun pair, each pair's order alternating."""
    k, repeat, runs = work.turns, args.repeat, args.runs
    child = workdir / f"child-{k}.json"
    samples: dict[Mode, list[Sample]] = {m: [] for m in MODES}
    run_floor(work), run_agent(work), run_live(work, server), run_rerun(work, server, child)  # warm-up
    in_memory: tuple[Mode, Mode] = ("floor", "agent")
    live: tuple[Mode, Mode] = ("live", "rerun")
    flip = 0
    for rep in range(repeat):
        for _ in range(runs):
            for mode in in_memory[:: 1 if flip % 2 == 0 else -1]:
                samples[mode].append(run_floor(work) if mode == "floor" else run_agent(work))
            flip += 1
        for mode in live[:: 1 if rep % 2 == 0 else -1]:
            samples[mode].append(run_live(work, server) if mode == "live" else run_rerun(work, server, child))
        last = {m: med(s.us_per_turn for s in samples[m][-(runs if m in MODES[:2] else 1) :]) for m in MODES}
        line = ", ".join(f"{m} {last[m]:8.1f}" for m in MODES)
        print(f"  K={k:<3} repeat {rep + 1}/{repeat}: µs/turn {line}", flush=True)

    us = {m: med(s.us_per_turn for s in samples[m]) for m in MODES}
    cpu = {m: med(s.us(s.cpu_ns) for s in samples[m]) for m in MODES}
    transport = {m: med(s.us(s.transport_ns) for s in samples[m]) for m in MODES[:2]}
    pairs = list(zip(samples["floor"], samples["agent"], strict=True))
    paired = med(a.us_per_turn - f.us_per_turn for f, a in pairs)
    all_parts = [s.parts() for s in samples["agent"]]
    parts = {name: med(p[name] for p in all_parts) for name in all_parts[0]}
    owns = [sum(list(p.values())[-OWN_PARTS:]) for p in all_parts]
    sdk_in_agent = [p["SDK create (transport and reading excluded)"] for p in all_parts]
    own = med(owns)
    sdk = med(f.us_per_turn - f.us(f.transport_ns) for f in samples["floor"])  # the SDK's (and hand loop's)
    e2e = list(zip(samples["live"], samples["rerun"], strict=True))
    return {
        "turns": k,
        "us_per_turn": us,
        "process_cpu_us_per_turn": cpu,
        "transport_us_per_turn": transport,
        "sdk_us_per_turn": sdk,
        "agent_minus_floor_us_per_turn": us["agent"] - us["floor"],
        "agent_minus_floor_paired_us_per_turn": paired,
        "agent_own_us_per_turn": own,
        "agent_own_share_of_floor_sdk": own / sdk,
        # Each conversation's own work over the SDK's in that same conversation: the machine's drift
        # moves both alike.
        "agent_own_share_of_sdk": med(o / d for o, d in zip(owns, sdk_in_agent, strict=True)),
        "agent_over_floor_paired": med(a.us_per_turn / f.us_per_turn for f, a in pairs),
        "best_us_per_turn": {m: min(s.us_per_turn for s in samples[m]) for m in MODES[:2]},
        "agent_parts_us_per_turn": parts,
        "rerun_over_live": us["rerun"] / us["live"],
        "rerun_over_live_paired": med(r.wall_ns / live.wall_ns for live, r in e2e),
        "rerun_minus_live_us_per_turn": us["rerun"] - us["live"],
        "rerun_session_hooks_us_per_turn": med(s.us(s.hooks_ns) for s in samples["rerun"]),
        "rerun_session_finish_ms": med(s.finish_ns / 1e6 for s in samples["rerun"]),
        "wall_ms": {m: med(s.wall_ns / 1e6 for s in samples[m]) for m in MODES[2:]},
        "samples": {m: [asdict(s) for s in samples[m]] for m in MODES},
    }


def report(k: dict[str, Any], repeat: int, runs: int) -> None:
    us, cpu, turns = k["us_per_turn"], k["process_cpu_us_per_turn"], k["turns"]
    print(f"\n{turns} model turns ({turns // 2} tool rounds)")
    print(f"   in memory, median of {repeat * runs} conversations a mode, alternated")
    print(f"   {'mode':<32} {'µs/turn':>9} {'CPU µs/turn':>12} {'transport µs':>13}")
    for m in MODES[:2]:
        print(f"   {LABELS[m]:<32} {us[m]:9.1f} {cpu[m]:12.1f} {k['transport_us_per_turn'][m]:13.1f}")
    best = k["best_us_per_turn"]
    print(
        f"   agent - floor: {k['agent_minus_floor_us_per_turn']:+.1f} µs/turn; median of the pairs' "
        f"differences {k['agent_minus_floor_paired_us_per_turn']:+.1f}, of their ratios "
        f"{k['agent_over_floor_paired']:.3f}; best of each {best['agent'] - best['floor']:+.1f} "
        f"({best['floor']:.1f} -> {best['agent']:.1f})"
    )
    print(
        f"   the agent's own work, timed: {k['agent_own_us_per_turn']:.1f} µs/turn, "
        f"{k['agent_own_share_of_sdk'] * 100:.1f}% of the SDK's own in the same conversations "
        f"(the floor's SDK: {k['sdk_us_per_turn']:.1f} µs/turn)"
    )
    for part, value in k["agent_parts_us_per_turn"].items():
        print(f"      {part:<64} {value:8.1f}")
    print(f"   against FakeLLMServer on 127.0.0.1, median of {repeat} runs a mode, alternated")
    for m in MODES[2:]:
        wall = k["wall_ms"][m]
        print(f"   {LABELS[m]:<32} {us[m]:9.1f} {cpu[m]:12.1f}   (wall {wall:.1f} ms a run)")
    print(
        f"   rerun / live: {k['rerun_over_live']:.3f} (median of the pairs' ratios "
        f"{k['rerun_over_live_paired']:.3f}), {k['rerun_minus_live_us_per_turn']:+.1f} µs/turn"
    )
    print(
        f"   the rerun's record session: {k['rerun_session_hooks_us_per_turn']:.1f} µs/turn in its HTTP "
        f"hooks, {k['rerun_session_finish_ms']:.1f} ms a run in finish (the child written)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--turns", default="20,50", help="model turns per conversation, even (default 20,50)")
    parser.add_argument("--repeat", type=int, default=9, help="repeats per mode; medians (default 9)")
    parser.add_argument("--runs", type=int, default=3, help="floor/agent pairs per repeat (default 3)")
    parser.add_argument("--json", type=Path, help="also write every sample and the summary to this file")
    args = parser.parse_args(argv)
    turns = [int(t) for t in args.turns.split(",")]
    if any(t < 2 or t % 2 for t in turns) or args.repeat < 1 or args.runs < 1:
        parser.error("--turns must be even numbers >= 2; --repeat and --runs >= 1")

    info = machine_info()
    print(f"command: {shlex.join([Path(sys.executable).name, *sys.argv])}")
    print(
        f"python {info['python']}, openai {info['openai']}, httpx {info['httpx']}, "
        f"httpcore {info['httpcore']}, otel-blackbox {info['otel-blackbox']}, "
        f"{info['nproc']} CPUs ({info['cpu']}), load {info['loadavg_1m']}"
    )
    with contextlib.ExitStack() as stack:
        # The built-in agent's ChatClient reads its key from the environment, as the SDK does.
        stack.enter_context(mock.patch.dict(os.environ, {"OPENAI_API_KEY": API_KEY}))
        os.environ.pop("OPENAI_BASE_URL", None)
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench_agent-")))
        server = start_server(nagle=False)
        stack.callback(server.stop)
        started = time.perf_counter()
        startup = client_startup_ms(server)
        print(f"an openai.OpenAI client's start-up (in live and rerun, not in memory): {startup:.1f} ms")
        per_k = []
        for k in turns:
            work = prepare(server, k // 2, workdir)
            per_k.append(measure_k(work, server, args, workdir))
        for k_result in per_k:
            report(k_result, args.repeat, args.runs)
    result = {
        "machine": info,
        "command": sys.argv,
        "repeat": args.repeat,
        "runs": args.runs,
        "client_startup_ms": startup,
        "per_turns": per_k,
        "wall_s": round(time.perf_counter() - started, 1),
        "loadavg_1m_at_end": machine_info()["loadavg_1m"],
    }
    print(f"\ntotal {result['wall_s']} s, load average at the end {result['loadavg_1m_at_end']}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
