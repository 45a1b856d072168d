"""Hostile input never gets past one clear line: the cassette commands, the provider translators,
the CLI's options, and cassettes that try to smuggle a path.

Every CLI run must end with a documented exit code; an error is exactly one stderr line
`otel-blackbox: error: ...` (never the "internal error" catch-all, which marks a bug), nothing
prints a traceback or a raw terminal control character, and no run takes long. The hypothesis
loops call the real entry point (`cli.app.main`) in-process; a few subprocess runs check that the
console entry point behaves the same.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import sys
import threading
import time
import tracemalloc
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import quote

import click.testing
import pytest
from helpers import VECTOR_NAMES, Recorder, figure, fuzz_examples, run_cli, sized, vector_path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Status, StatusCode
from test_cassette_verify import cassette_like
from test_provider_replace_tool_result import record_anthropic, record_chat, record_responses

from otel_blackbox._cassette.canonical import hash_step
from otel_blackbox._recorder.cassette_exporter import CassetteSpanExporter
from otel_blackbox._web.server import make_server
from otel_blackbox._wire.anthropic.translation import AnthropicMessages
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.openai_chat.translation import OpenAIChat
from otel_blackbox._wire.openai_responses.translation import OpenAIResponses
from otel_blackbox._wire.protocol import Provider
from otel_blackbox.cli import main
from otel_blackbox.pytest_plugin import cassette_file_name

pytestmark = pytest.mark.reliability

# One run of a command on a cassette of a few kilobytes takes milliseconds: this is a hang.
RUN_LIMIT_S = 20.0
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
# The colours `style` adds (green, red, yellow, reset): the only escape sequences we may print.
OWN_STYLE = re.compile(r"\x1b\[(?:3[123]|0)m")
ERROR_LINE = "otel-blackbox: error: "


class Hang(BaseException):
    """Raised in the main thread when one run takes too long (a BaseException: main() must not catch it)."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    def alarm(_signum: int, _frame: FrameType | None) -> None:
        raise Hang(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass
class Run:
    argv: list[str]
    code: int
    stdout: str
    stderr: str
    seconds: float


@dataclass
class Tally:
    """How many examples and command runs a fuzz target made, and the slowest run."""

    examples: int = 0
    runs: int = 0
    slowest: float = 0.0
    codes: dict[int, int] = field(default_factory=dict)

    def add(self, run: Run) -> None:
        self.runs += 1
        self.slowest = max(self.slowest, run.seconds)
        self.codes[run.code] = self.codes.get(run.code, 0) + 1

    def report(self, test: str) -> None:
        figure(test, "examples", self.examples)
        if self.runs:
            figure(
                test, "command runs (exit code: count)", f"{self.runs} ({dict(sorted(self.codes.items()))})"
            )
        figure(test, "slowest " + ("run" if self.runs else "example"), f"{self.slowest * 1000:.0f} ms")


RUNNER = click.testing.CliRunner()


def cli(*argv: str, env: dict[str, str | None] | None = None) -> Run:
    """`otel-blackbox ARGV` in this process, through main(): its exit code and both streams.

    stdout is strict UTF-8, as a terminal's: a lone surrogate reaching it would fail the run. With
    color on, click passes every escape sequence through, so a raw one in a value is seen.
    """
    started = time.perf_counter()
    with RUNNER.isolation(env=env, color=True) as (out, err, _), time_limit(RUN_LIMIT_S):
        code = 0
        try:
            main(list(argv))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        stdout, stderr = out.getvalue().decode(), err.getvalue().decode()
    return Run(list(argv), code, stdout, stderr, time.perf_counter() - started)


def check_run(run: Run, codes: tuple[int, ...] = (0, 1, 2)) -> None:
    """The contract every command keeps, whatever it was fed."""
    where = f"{run.argv}: exit {run.code}\nstdout: {run.stdout[:2000]!r}\nstderr: {run.stderr[:2000]!r}"
    assert run.code in codes, where
    assert "Traceback" not in run.stderr, where  # (stdout may show a recorded exception's stack)
    assert "internal error" not in run.stderr, where
    err_lines = run.stderr.splitlines()
    if run.code == 2 or ERROR_LINE in run.stderr:  # 1 too for a trace not found, a failed session
        assert run.code != 0 and len(err_lines) == 1 and err_lines[0].startswith(ERROR_LINE), where
    else:  # a pass, or a check that failed: the verdict is on stdout; at most a "wrote ..." note
        assert len(err_lines) <= 1, where
    for stream in (run.stdout, run.stderr):
        assert not CONTROL.search(OWN_STYLE.sub("", stream).replace("\t", "")), where


# --- 1. the cassette commands on hostile files ----------------------------------------------------

VECTOR_TEXTS = {name: vector_path(name).read_text(encoding="utf-8") for name in VECTOR_NAMES}

HOSTILE_TEXT = [
    "../../etc/passwd", "/etc/passwd", "~/.ssh/id_rsa", "a\x00b", "\x1b[2J\x1b[31m", "\r\x07\x08",
    "\u202eevil", "\ud800", "\udfff", "\x9b31m", "\u2028\u2029", "<script>alert(1)</script>", "",
    "call-0", "call-99999999999999999999", "~", "NaN", "%s%n", "🙂",
]  # fmt: skip
hostile_strings = st.sampled_from(HOSTILE_TEXT) | st.text(max_size=20)


def _nest(depth: int, kind: str) -> str:
    return "[" * depth + "]" * depth if kind == "array" else '{"a":' * depth + "1" + "}" * depth


# Raw JSON text put in place of one value of a real cassette: some are not even JSON.
RAW_FRAGMENTS = [
    _nest(100_000, "array"), _nest(100_000, "object"), _nest(990, "array"), _nest(600, "object"),
    _nest(199, "array"), "1e400", "-1e400", "NaN", "Infinity", "9" * 5000, "1" + "0" * 400,
    "-" + "9" * 4300, "5e-324", "-0.0", "2.0", '"\\ud800"', '"\\udc80x"', '"\\u0000"', "",
    '"' + "x" * 3_000_000 + '"', '"' + "\\n" * 100_000 + '"', "[" + "0," * 100_000 + "0]",
    "{" + ",".join(f'"k{i}":{i}' for i in range(20_000)) + "}", '{"a":1,"a":2}', "{,}", "[1,]",
    "'single'", "undefined", "0x1F", "true false", "{\"unterminated",
]  # fmt: skip
fragments = (
    st.sampled_from(RAW_FRAGMENTS).map(str.encode)
    | st.sampled_from([b'"\xff\xfe"', b'"\xed\xa0\x80"', b'"\xc0\xaf"', b"\x00", b'"\xf4\x90\x80\x80"'])
    | st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | hostile_strings,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(hostile_strings, inner, max_size=3),
        max_leaves=8,
    ).map(lambda value: json.dumps(value).encode())
)
_SLOT = "\x00slot\x00"


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in a JSON document a value sits (the root included)."""
    yield path
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield from _paths(child, (*path, key))


@st.composite
def mutated_vector(draw: st.DrawFn) -> bytes:
    """A real vector with one value replaced by a hostile fragment, or one key removed."""
    data = json.loads(VECTOR_TEXTS[draw(st.sampled_from(VECTOR_NAMES))])
    path = draw(st.sampled_from(list(_paths(data))[1:]))
    parent = data
    for key in path[:-1]:
        parent = parent[key]
    if isinstance(parent, dict) and draw(st.integers(0, 4)) == 0:
        del parent[path[-1]]
        return json.dumps(data).encode()
    parent[path[-1]] = _SLOT
    before, _, after = json.dumps(data).partition(json.dumps(_SLOT))
    return before.encode() + draw(fragments) + after.encode()


@st.composite
def damaged_vector(draw: st.DrawFn) -> bytes:
    """A real vector cut short, with bytes overwritten, or re-encoded."""
    raw = VECTOR_TEXTS[draw(st.sampled_from(VECTOR_NAMES))].encode()
    how = draw(st.sampled_from(["cut", "bytes", "utf16", "bom", "nul"]))
    if how == "cut":
        return raw[: draw(st.integers(0, len(raw) - 1))]
    if how == "bytes":
        at = draw(st.integers(0, len(raw) - 1))
        return raw[:at] + draw(st.binary(min_size=1, max_size=4)) + raw[at + 4 :]
    if how == "utf16":
        return raw.decode().encode("utf-16")
    return (b"\xef\xbb\xbf" + raw) if how == "bom" else raw.replace(b'"', b"\x00", 1)


hostile_files = (
    mutated_vector()
    | damaged_vector()
    | cassette_like().map(lambda value: json.dumps(value).encode())
    | st.binary(max_size=300)
    | st.sampled_from([b"", b" \n\t", b"null", b"[]", b"2", b'"cassette"', b"{}", b'{"version": 2}'])
)


def fuzz(ci_examples: int) -> settings:
    return settings(
        max_examples=fuzz_examples(ci_examples),
        deadline=None,  # bounded by time_limit instead: a slow example is measured, not flaky
        database=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
        ],
    )


def write_good_contract(folder: Path) -> None:
    """The contract `eval run` checks the hostile cassette against (from a good vector)."""
    check_run(
        cli(
            "eval", "generate", str(vector_path("success-tool-use")), "-o", str(folder / "good-contract.json")
        )
    )


def cassette_commands(hostile: Path, out: Path) -> list[list[str]]:
    """Every command that reads a cassette (or a contract), fed the hostile file in each role."""
    good, f = str(vector_path("success-tool-use")), str(hostile)
    return [
        ["verify", f], ["verify", "--json", f, "--expect-head", "ab"], ["inspect", f, "--width", "20"],
        ["diff", good, f], ["diff", "--semantic", "--json", f, good],
        ["assert", f, "--expect-status", "success", "--expect-tools", "a,b", "--expect-final-answer", "x"],
        ["eval", "generate", f], ["eval", "generate", f, "-o", str(out / "contract.json")],
        ["eval", "run", str(out / "good-contract.json"), f], ["eval", "run", f, good],
        ["report", f, "-o", str(out / "report.html")],
    ]  # fmt: skip


def test_cassette_commands_answer_hostile_files_with_one_line(tmp_path: Path) -> None:
    hostile = tmp_path / "hostile.json"
    write_good_contract(tmp_path)
    tally = Tally()

    @fuzz(250)
    @given(raw=hostile_files)
    def feed(raw: bytes) -> None:
        tally.examples += 1
        hostile.write_bytes(raw)
        for argv in cassette_commands(hostile, tmp_path):
            run = cli(*argv)
            tally.add(run)
            check_run(run)

    feed()
    tally.report("cassette commands on hostile files")


def _splice(name: str, path: tuple[Any, ...], fragment: bytes) -> bytes:
    data = json.loads(VECTOR_TEXTS[name])
    parent = data
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = _SLOT
    before, _, after = json.dumps(data).partition(json.dumps(_SLOT))
    return before.encode() + fragment + after.encode()


# Where a hostile value does the most: the cassette id, a timestamp, a tool name, the final answer.
SLOTS = [
    ("id",),
    ("steps", 0, "timestamp"),
    ("steps", 2, "payload", "toolName"),
    ("steps", 14, "payload", "result"),
]
CORPUS = [fragment.encode() for fragment in RAW_FRAGMENTS] + [json.dumps(s).encode() for s in HOSTILE_TEXT]


def test_every_hostile_fragment_in_every_role(tmp_path: Path) -> None:
    """The fuzz above samples; this runs each fragment and each hostile string once in each slot."""
    hostile = tmp_path / "hostile.json"
    write_good_contract(tmp_path)
    tally = Tally()
    for fragment in CORPUS:
        for slot in SLOTS:
            tally.examples += 1
            hostile.write_bytes(_splice("success-tool-use", slot, fragment))
            for argv in cassette_commands(hostile, tmp_path):
                run = cli(*argv)
                tally.add(run)
                check_run(run)
    tally.report("cassette commands on the hostile corpus")


def test_console_entry_point_answers_the_same(tmp_path: Path) -> None:
    """The real `python -m otel_blackbox._cli`, on the worst files: one line, exit 2, quickly."""
    worst = {
        "deep.json": _nest(100_000, "array").encode(),
        "invalid-utf8.json": _splice("success-tool-use", ("id",), b'"\xff\xfe"'),
        "huge-number.json": _splice("success-tool-use", ("createdAt",), b"9" * 5000),
        "infinite.json": _splice("success-tool-use", ("steps", 0, "timestamp"), b"1e400"),
        "binary.json": bytes(range(256)),
    }
    for name, raw in worst.items():
        path = tmp_path / name
        path.write_bytes(raw)
        for argv in (["verify", str(path)], ["report", str(path), "-o", str(tmp_path / "r.html")]):
            started = time.perf_counter()
            result = run_cli(*argv)
            run = Run(argv, result.returncode, result.stdout, result.stderr, time.perf_counter() - started)
            check_run(run, codes=(2,))
            assert run.seconds < RUN_LIMIT_S
    assert not (tmp_path / "r.html").exists()


def test_oversized_cassette_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as handle:  # 33 MB of one string: past the default 32 MB limit
        handle.write(b'{"version": 2, "id": "')
        handle.truncate(33 * 1024 * 1024)
    for argv in (
        ["verify", str(big)],
        ["inspect", str(big)],
        ["report", str(big), "-o", str(tmp_path / "r.html")],
    ):
        tracemalloc.start()
        try:
            run = cli(*argv)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        check_run(run, codes=(2,))
        assert "limit" in run.stderr
        assert peak < 8 * 1024 * 1024  # refused from its size: the 33 MB were never read into memory
    for bad in ("abc", "-1", "0", "nan", "1e999"):
        run = cli("verify", str(vector_path("success-tool-use")), env={"OTEL_BLACKBOX_MAX_CASSETTE_MB": bad})
        check_run(run, codes=(2,))
        assert "OTEL_BLACKBOX_MAX_CASSETTE_MB" in run.stderr


# --- 2. the provider translators on hostile wire data ---------------------------------------------

PROVIDERS: dict[str, Provider] = {
    "chat": OpenAIChat(),
    "responses": OpenAIResponses(),
    "anthropic": AnthropicMessages(),
}
# Real request bodies, as the real SDKs sent them in a tool round (test_provider_replace_tool_result).
REQUESTS = {"chat": record_chat(), "responses": record_responses(), "anthropic": record_anthropic()}
OUTPUTS: list[dict[str, Any]] = [
    {"type": "final_answer", "text": "Sunny ☀ in Lisbon"},
    {"type": "tool_calls", "text": "Checking.", "calls": [
        {"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Lisbon"}},
        {"toolCallId": "call-1", "toolName": "get_forecast", "toolInput": {"days": [1, 2.5]}},
    ]},
]  # fmt: skip
json_leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | hostile_strings
hostile_json = st.recursive(
    json_leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(hostile_strings, inner, max_size=3),
    max_leaves=8,
) | st.sampled_from([json.loads(_nest(900, "array")), "x" * 1_000_000])


@st.composite
def damaged(draw: st.DrawFn, value: Any) -> Any:
    """A copy of a JSON value with one node replaced by a hostile value, or one key removed."""
    value = json.loads(json.dumps(value))
    path = draw(st.sampled_from(list(_paths(value))))
    if not path:
        return draw(hostile_json)
    parent = value
    for key in path[:-1]:
        parent = parent[key]
    if isinstance(parent, dict) and draw(st.booleans()):
        del parent[path[-1]]
    else:
        parent[path[-1]] = draw(hostile_json)
    return value


def _events(body: bytes) -> list[bytes]:
    return [event for event in body.split(b"\n\n") if event]


@st.composite
def hostile_bodies(draw: st.DrawFn, provider: Provider) -> tuple[bytes, bool]:
    """A response the provider could have sent, then damaged: (body, streamed)."""
    streamed = draw(st.booleans())
    output = draw(st.sampled_from(OUTPUTS))
    body = provider.wire_response(output, {"model": "m", "stream": streamed}).body
    how = draw(st.sampled_from(["json", "cut", "unknown-event", "drop", "repeat", "bytes", "raw", "crlf"]))
    if how == "json" and not streamed:
        return json.dumps(draw(damaged(json.loads(body)))).encode(), streamed
    events = _events(body)
    at = draw(st.integers(0, len(events) - 1))
    if how == "json" and events[at].endswith(b"[DONE]"):
        how = "drop"
    if how == "json":  # one event's data replaced by a damaged copy
        name, _, data = events[at].rpartition(b"data: ")
        events[at] = name + b"data: " + json.dumps(draw(damaged(json.loads(data)))).encode()
    elif how == "cut":
        return body[: draw(st.integers(0, len(body) - 1))], streamed
    elif how == "unknown-event":
        kind = draw(st.sampled_from(["response.unknown", "ping", "content_block_delta", "", "error"]))
        extra = {"type": kind, "index": draw(json_leaves), "delta": draw(hostile_json)}
        events.insert(at, b"event: " + kind.encode() + b"\ndata: " + json.dumps(extra).encode())
    elif how == "drop":
        del events[at]
    elif how == "repeat":
        events.insert(at, events[at])
    elif how == "bytes":
        events[at] += draw(st.sampled_from([b"\xff\xfe", b"\xed\xa0\x80", b"\x00", b"\r\r", b": comment"]))
    elif how == "raw":
        events[at] = b"data: " + draw(fragments)
    else:
        return body.replace(b"\n", b"\r\n"), streamed
    return b"\n\n".join(events) + b"\n\n", streamed


@st.composite
def hostile_requests(draw: st.DrawFn, requests: list[Any]) -> dict[str, Any]:
    """A real SDK request body with one node replaced or removed (still an object: the hook only
    hands the translators request bodies that parsed as a JSON object)."""
    request = draw(damaged(draw(st.sampled_from(requests))))
    return request if isinstance(request, dict) else {"messages": request}


def only_value_error(call: Callable[[], Any]) -> Any:
    """The call's result, or None when it raised ValueError (the documented refusal); quickly."""
    with time_limit(RUN_LIMIT_S):
        try:
            return call()
        except ValueError:
            return None


@pytest.mark.parametrize("name", list(PROVIDERS))
def test_translators_raise_only_value_error(name: str) -> None:
    provider = PROVIDERS[name]
    tally = Tally()

    @fuzz(250)
    @given(data=st.data())
    def feed(data: st.DataObject) -> None:
        tally.examples += 1
        started = time.perf_counter()
        body, streamed = data.draw(hostile_bodies(provider), label="body")
        output = only_value_error(lambda: provider.model_output(body, streamed=streamed, ids=CallIds()))
        assert output is None or output["type"] in ("final_answer", "tool_calls")

        request = data.draw(hostile_requests(REQUESTS[name]), label="request")
        sent = json.dumps(request)
        neutral = only_value_error(lambda: provider.model_input(request, CallIds()))
        assert neutral is None or isinstance(neutral["messages"], list)
        result = data.draw(hostile_json, label="result")
        rewritten = only_value_error(lambda: provider.replace_tool_result(request, "call-0", result))
        assert rewritten is None or isinstance(rewritten, dict)
        assert json.dumps(request) == sent  # never mutated, even when refused

        neutral_output = data.draw(st.sampled_from(OUTPUTS).flatmap(damaged), label="output")
        wire = only_value_error(lambda: provider.wire_response(neutral_output, request))
        if wire is not None:  # what replay would serve: reading it back refuses or succeeds, nothing else
            stream = provider.is_streaming(request)
            only_value_error(lambda: provider.model_output(wire.body, streamed=stream, ids=CallIds()))
        tally.slowest = max(tally.slowest, time.perf_counter() - started)

    feed()
    tally.report(f"{name} translator on hostile input")


def _sse(*events: Any) -> bytes:
    return b"".join(b"data: " + json.dumps(event).encode() + b"\n\n" for event in events)


def _delta_stream(name: str, piece: str, count: int) -> bytes:
    """A stream that delivers one long string in `count` deltas: a call's arguments (Chat), a
    message's text rebuilt from its deltas (Responses, whose response.completed has no output), a
    text block (Anthropic)."""
    if name == "chat":
        call = {"index": 0, "id": "c", "function": {"name": "f", "arguments": ""}}
        more = {
            "choices": [
                {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}}
            ]
        }
        return _sse(
            {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]},
            *[more] * count,
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        )
    if name == "responses":
        return _sse(
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {"type": "message", "content": []},
            },
            {
                "type": "response.content_part.added",
                "output_index": 0,
                "part": {"type": "output_text", "text": ""},
            },
            *[{"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": piece}]
            * count,
            {"type": "response.completed", "response": {"output": None}},
        )
    return _sse(
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        *[{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}]
        * count,
        {"type": "message_stop"},
    )


@pytest.mark.parametrize("name", list(PROVIDERS))
def test_a_long_stream_is_read_whole(name: str) -> None:
    """Each delta appended to a growing string made a long stream quadratic: 40,000 deltas of 256
    characters (10 MB) took 5 to 7 s, and four times as many would take over a minute. Whether
    reading is linear is measured by bench/bench_streams.py (N and 4N deltas), not timed here."""
    piece, count = "abcdefgh" * 32, sized(40_000, 160_000)
    body = _delta_stream(name, piece, count)
    started = time.perf_counter()
    with time_limit(RUN_LIMIT_S):
        output = PROVIDERS[name].model_output(body, streamed=True, ids=CallIds())
    took = time.perf_counter() - started
    read = output["calls"][0]["toolInput"] if name == "chat" else output["text"]
    assert read == piece * count
    figure(
        f"{name} translator", f"read a stream of {count} deltas ({len(body) / 1e6:.0f} MB)", f"{took:.2f} s"
    )


# --- 3. the CLI's options -------------------------------------------------------------------------

# What a user can type: any text (no NUL: execve cannot pass one), bytes that are not UTF-8 (Python
# hands them over as lone surrogates), and values chosen to sit on an edge.
EDGE_VALUES = [
    *["", " ", "-", "--", "-1", "0", "1", "65536", "-65536", "9" * 30, "1e999", "nan", "inf", "-inf"],
    *["0x10", "1_0", "８", "1h", "7d", "30m", "0s", "-1h", "1y", "9" * 30 + "d", "1e3", "otlp", "exact"],
    *["sequence", "json", "\x1b[2J", "a\nb", "\r", "\u202e", "k=v", "=v", "k=", "a\r\nb=c", "x-key=KEY"],
    *['{"available": false}', "{", "[]", "null", "0" * 32, "f" * 64, "%", "_", "*", "../../etc/passwd"],
]
argv_values = (
    st.sampled_from(EDGE_VALUES)
    | st.text(st.characters(exclude_characters="\x00", exclude_categories=["Cs"]), max_size=30)
    | st.binary(max_size=12).filter(lambda raw: b"\x00" not in raw).map(os.fsdecode)
)


def _is_valid_port(value: str) -> bool:
    try:
        return 0 <= int(value) <= 65535
    except ValueError:
        return False


@dataclass
class Sandbox:
    """A directory the option fuzz runs in, with every kind of --db and -o target it needs."""

    root: Path
    db: Path
    trace_ids: list[str]
    closed_port: int

    @property
    def existing(self) -> Path:  # an -o target that exists: a failed command must leave its bytes
        return self.root / "existing.out"


EXISTING_BYTES = b"the previous output, which a failed command must not touch\n"


def _closed_port() -> int:
    with socket.socket() as sock:  # a port nothing listens on: push is refused at once, no network
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    root = tmp_path_factory.mktemp("options")
    recorder = Recorder(root / "blackbox.db")
    tracer = recorder.tracer
    ids = []
    for name in ("agent", "\x1b[2J\x1b[31mred\r\x00\x07\u202eevil"):
        with tracer.start_as_current_span(name, attributes={"openinference.span.kind": "AGENT"}) as root_span:
            with tracer.start_as_current_span(
                "ChatCompletion", attributes={"openinference.span.kind": "LLM"}
            ):
                pass
            # A failed tool, without a stack trace: output must never show "Traceback" but this one.
            with tracer.start_as_current_span(name, attributes={"openinference.span.kind": "TOOL"}) as tool:
                tool.set_status(Status(StatusCode.ERROR, f"tool failed: {name}"))
        ids.append(format(root_span.get_span_context().trace_id, "032x"))
    recorder.flush()
    recorder.provider.shutdown()
    (root / "a-directory").mkdir()
    (root / "empty.db").write_bytes(b"")
    (root / "text.db").write_text("not a database\n" * 100)
    (root / "random.db").write_bytes(bytes(range(256)) * 64)
    (root / "a-file").write_text("a file, not a directory")
    (root / "cassette.json").write_bytes(vector_path("success-tool-use").read_bytes())
    return Sandbox(root, root / "blackbox.db", ids, _closed_port())


def option_strategies(box: Sandbox) -> dict[str, Any]:
    """Per command: how its positional arguments and each option are drawn; None marks a flag."""
    traces = st.sampled_from([*box.trace_ids, box.trace_ids[0][:6], "0" * 32]) | argv_values
    # Never a path outside the sandbox (a successful `report -o /etc/passwd` would overwrite it).
    local = argv_values.filter(lambda v: not v.startswith(("/", "~")) and ".." not in v)
    outputs = st.sampled_from(
        ["out.file", "-", str(box.existing), "a-directory", "missing-dir/out", "a-file/out", "/proc/version",
         "/sys/blackbox.out"]
    ) | local  # fmt: skip
    port = f"127.0.0.1:{box.closed_port}"
    endpoints = st.sampled_from(
        [f"http://{port}", f"http://{port}/v1/traces", f"https://{port}", "http://127.0.0.1:0", "http://",
         "http://127.0.0.1:99999", "ftp://127.0.0.1", "http://127.0.0.1:abc", "http://[::1"]
    ) | argv_values.filter(lambda v: "//" not in v)  # fmt: skip
    cassettes = st.sampled_from(["cassette.json", "a-directory", "missing.json", "empty.db"]) | local
    program = ["--", "/nonexistent/program"]  # replay, record and fork fail fast, before any socket
    text = argv_values
    return {
        "list": ([], {"--limit": text, "-n": text, "--session": text, "--errors-only": None, "--json": None}),
        "show": (
            [traces],
            {"-v": None, "--full": None, "--json": None, "--run": text, "--session": text, "--format": text,
             "--price-model": text},
        ),
        "errors": ([], {"--limit": text, "--json": None}),
        "stats": ([], {"--json": None, "--price-model": text}),
        "export": ([], {"-o": outputs, "--trace": traces, "--format": text}),
        "report": ([traces | cassettes], {"-o": outputs}),
        "cassette": ([traces], {"-o": outputs}),
        "push": (
            [],
            {"--endpoint": endpoints, "--trace": traces, "--since": text, "--header": text,
             "--batch-size": text, "--timeout": text},
        ),
        "ui": ([], {"--port": text.filter(lambda v: not _is_valid_port(v)), "--host": text}),
        "inspect": ([cassettes], {"--width": text}),
        "verify": ([cassettes], {"--expect-head": text, "--json": None}),
        "assert": (
            [cassettes],
            {"--expect-status": text, "--expect-tools": text, "--expect-final-answer": text,
             "--expect-failure-reason": text},
        ),
        "eval generate": ([cassettes], {"-o": outputs, "--name": text}),
        "replay": ([cassettes], {"--match": text}, program),
        "record": ([], {"-o": outputs}, program),
        "fork": (
            [cassettes],
            {"--at": text, "--set": text, "--script": cassettes, "--live": None, "-o": outputs,
             "--match": text},
            program,
        ),
    }  # fmt: skip


# The real database half the time: the options then reach the code that uses them.
DATABASES = ["blackbox.db"] * 5 + ["a-directory", "empty.db", "text.db", "random.db", "missing.db"]


OPTION_EDGES = [
    ["errors", "--limit", "9" * 30],
    ["list", "--limit", "9" * 30],
    ["list", "--session", os.fsdecode(b"\x80")],
    ["push", "--endpoint", "http://[::1"],
    ["cassette", "TRACE", "-o", "\x1f"],
    ["export", "-o", "-", "--trace", "TRACE"],
]


@st.composite
def command_lines(draw: st.DrawFn, box: Sandbox) -> list[str]:
    name = draw(st.sampled_from(sorted(option_strategies(box))))
    positional, options, *rest = option_strategies(box)[name]
    argv = ["--db", draw(st.sampled_from(DATABASES)), *name.split()]
    for option in draw(st.lists(st.sampled_from(sorted(options)), unique=True)):
        argv += [option] if options[option] is None else [option, draw(options[option])]
    argv += [draw(strategy) for strategy in positional]
    if name == "ui" and "--port" not in argv:
        argv += ["--port", "-1"]  # never serve: the default port would start the viewer for good
    return argv + (rest[0] if rest else [])


def test_options_answer_hostile_values_with_one_line(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(sandbox.root)  # relative -o targets and --db names land in the sandbox
    tally = Tally()

    def run(argv: list[str]) -> None:
        sandbox.existing.write_bytes(EXISTING_BYTES)
        result = cli(*argv)
        tally.add(result)
        check_run(result)
        if result.code != 0:  # atomic output: a failed command leaves an existing -o target as it was
            assert sandbox.existing.read_bytes() == EXISTING_BYTES, result

    @fuzz(400)
    @given(argv=command_lines(sandbox))
    def feed(argv: list[str]) -> None:
        tally.examples += 1
        run(argv)

    for edge in OPTION_EDGES:  # what the fuzzing found once, every time
        run(["--db", "blackbox.db", *[sandbox.trace_ids[0] if arg == "TRACE" else arg for arg in edge]])
    feed()
    tally.report("options with hostile values")


def _tree(root: Path) -> dict[str, bytes]:
    """Every file under root and its bytes (less the real database's WAL files, which its readers open)."""
    files = (p for p in sorted(root.rglob("*")) if p.is_file())
    return {str(p.relative_to(root)): p.read_bytes() for p in files if not p.name.startswith("blackbox.db-")}


UNWRITABLE = ["a-directory", "missing-dir/out", "a-file/out", "/proc/version", "/sys/blackbox.out"]


def test_outputs_that_cannot_be_written(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    """-o to a directory, into a missing directory, under a file, to /proc or /sys: one line, exit 2,
    nothing left behind (not even the temporary file)."""
    monkeypatch.chdir(sandbox.root)
    trace = sandbox.trace_ids[0]
    before = _tree(sandbox.root)
    for target in UNWRITABLE:
        for argv in (
            ["report", trace, "-o", target], ["cassette", trace, "-o", target], ["export", "-o", target],
            ["eval", "generate", "cassette.json", "-o", target],
        ):  # fmt: skip
            check_run(cli("--db", "blackbox.db", *argv), codes=(2,))
    assert _tree(sandbox.root) == before


def test_a_failed_command_leaves_an_existing_output_as_it_was(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(sandbox.root)
    (sandbox.root / "bad.json").write_bytes(b'{"version": 2, "id": ')
    target = str(sandbox.existing)
    for argv in (
        ["report", "0" * 32, "-o", target],
        ["report", "bad.json", "-o", target],
        ["cassette", "f" * 32, "-o", target],
        ["export", "--trace", "0" * 32, "-o", target],
        ["export", "--trace", "xyz", "-o", target],
        ["eval", "generate", "bad.json", "-o", target],
        ["--db", "text.db", "export", "-o", target],
    ):
        sandbox.existing.write_bytes(EXISTING_BYTES)
        run = cli(*(argv if argv[0] == "--db" else ["--db", "blackbox.db", *argv]))
        check_run(run, codes=(1, 2))
        assert sandbox.existing.read_bytes() == EXISTING_BYTES, run
    assert not list(sandbox.root.glob(".existing.out.*"))  # no temporary file left beside it


@pytest.mark.parametrize("db", ["a-directory", "empty.db", "text.db", "random.db", "missing.db"])
def test_a_database_path_that_is_not_a_database(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, db: str
) -> None:
    """Every command that reads --db, pointed at something else: one line, exit 2, the file untouched
    (no -wal or -shm beside it, not turned into a database)."""
    monkeypatch.chdir(sandbox.root)
    before = _tree(sandbox.root)
    port = f"http://127.0.0.1:{sandbox.closed_port}"
    for argv in (
        *(["list"], ["show", "abc"], ["show", "abc", "-v"], ["errors"], ["stats"], ["export"]),
        *(
            ["export", "-o", "x.jsonl"],
            ["report", "abc", "-o", "r.html"],
            ["cassette", "abc", "-o", "c.json"],
        ),
        *(["ui", "--port", "0"], ["push", "--endpoint", port], ["cleanup"]),
    ):
        check_run(cli("--db", db, *argv), codes=(2,))
    assert _tree(sandbox.root) == before


@st.composite
def viewer_queries(draw: st.DrawFn) -> str:
    def quoted(value: str) -> str:  # a browser percent-encodes what it sends, bytes that are not UTF-8 too
        return quote(value, safe="", errors="surrogateescape")

    keys = st.sampled_from(["limit", "since", "errors", "open", "session", "q", "x"]) | argv_values
    values = argv_values | st.sampled_from(["9" * 5000, "99999999999d", "²", "1e400"])
    params = draw(st.lists(st.tuples(keys, values), max_size=4))
    prefix = draw(st.sampled_from(["/", "/api/traces", "/index.html", "/trace/"]))
    path = prefix + (draw(argv_values.map(quoted)) if prefix.endswith("/") else "")
    return path + "?" + "&".join(f"{quoted(k)}={quoted(v)}" for k, v in params)


# The queries that broke the viewer (a dropped connection and a traceback), then whatever hypothesis finds.
VIEWER_EDGES = [
    *["/?since=99999999999d", "/api/traces?since=" + "9" * 400, "/?limit=" + "9" * 5000],
    *["/api/traces?limit=%C2%B2", "/trace/%ff%fe", "/trace/" + "a" * 5000, "/?q=%ed%a0%80&session=%00"],
]


def test_viewer_answers_hostile_queries(sandbox: Sandbox, capfd: pytest.CaptureFixture[str]) -> None:
    """Any path and filter: 200, 400 or 404 at once, never a dropped connection or a traceback."""
    server = make_server(sandbox.db, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    tally = Tally()

    def get(query: str) -> None:
        started = time.perf_counter()
        url = f"http://127.0.0.1:{server.server_address[1]}{query}"
        try:
            with urllib.request.urlopen(url, timeout=RUN_LIMIT_S) as response:
                status, body = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, body = error.code, error.read()
            error.close()
        tally.slowest = max(tally.slowest, time.perf_counter() - started)
        assert status in (200, 400, 404), (query, status, body[:300])

    @fuzz(200)
    @given(query=viewer_queries())
    def feed(query: str) -> None:
        tally.examples += 1
        get(query)

    try:
        for query in VIEWER_EDGES:
            get(query)
        feed()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    assert "Traceback" not in capfd.readouterr().err
    tally.report("viewer on hostile queries")


# --- found by the fuzzing above, and fixed: each stays as a test of its own.


def test_push_endpoint_with_a_broken_ipv6_host(sandbox: Sandbox) -> None:
    check_run(cli("--db", str(sandbox.db), "push", "--endpoint", "http://[::1"), codes=(2,))


def test_a_database_whose_name_is_not_utf8(sandbox: Sandbox) -> None:
    named = sandbox.root / os.fsdecode(b"\xff.db")
    named.write_bytes(sandbox.db.read_bytes())
    check_run(cli("--db", str(named), "list"), codes=(0,))


def test_cleanup_on_an_empty_file(tmp_path: Path) -> None:
    (tmp_path / "empty.db").write_bytes(b"")
    check_run(cli("--db", str(tmp_path / "empty.db"), "cleanup"), codes=(2,))
    assert (tmp_path / "empty.db").read_bytes() == b""  # refused, and left as it was


# --- 4. a cassette that tries to smuggle a path -----------------------------------------------------


class FileAccess:
    """Every file this process opens, renames, removes or creates while `watching` (an audit hook:
    it sees what the code really does, whatever path it derived)."""

    EVENTS = frozenset(["open", "os.rename", "os.remove", "os.mkdir", "os.rmdir", "os.symlink", "os.link"])
    active: list[tuple[str, str, bool]] | None = None  # (event, path, writes)
    installed = False

    @classmethod
    def _hook(cls, event: str, args: tuple[Any, ...]) -> None:
        if cls.active is None or event not in cls.EVENTS:
            return
        if event == "open":
            path, mode, flags = args
            writes = any(c in str(mode or "") for c in "wax+") or bool(flags & (os.O_WRONLY | os.O_RDWR))
            paths = [path]
        else:
            paths, writes = [a for a in args[:2] if isinstance(a, (str, bytes, os.PathLike))], True
        for path in paths:
            if isinstance(path, (str, bytes, os.PathLike)):  # not a file descriptor
                cls.active.append((event, os.fsdecode(path), writes))

    @classmethod
    @contextlib.contextmanager
    def watching(cls) -> Iterator[list[tuple[str, str, bool]]]:
        if not cls.installed:  # audit hooks cannot be removed: one, idle outside `watching`
            sys.addaudithook(cls._hook)
            cls.installed = True
        seen: list[tuple[str, str, bool]] = []
        cls.active = seen
        try:
            yield seen
        finally:
            cls.active = None


SMUGGLED = [
    "../../etc/passwd",
    "{bait}/passwd",
    "~/.ssh/id_rsa",
    "out/../../etc/passwd\x00.json",
    "..\\..\\etc\\passwd",
    "file://{bait}/x",
    "/etc/passwd",
    "call-0/../../../etc/passwd",
    "./../../etc/shadow",
]


def _smuggling(value: Any, paths: Iterator[str], key: str = "") -> Any:
    """Every string of a JSON document (ids, tool names, call ids, models, messages, answers...)
    replaced by a path, but the words of the format's vocabulary (a step's type, an event)."""
    if isinstance(value, str):
        return value if key in ("type", "event", "status") else next(paths)
    if isinstance(value, list):
        return [_smuggling(v, paths, key) for v in value]
    if isinstance(value, dict):
        return {k: _smuggling(v, paths, k) for k, v in value.items()}
    return value


def smuggled_vector(name: str, paths: Iterator[str]) -> dict[str, Any]:
    """A vector with paths in every string field, hashed again so every check gets to read it (and
    every command: a cassette whose chain does not verify is refused before it is used). Step ids
    are the cassette's id, a path too, and the index: what the chain requires."""
    data: dict[str, Any] = _smuggling(json.loads(VECTOR_TEXTS[name]), paths)
    previous = None
    for step in data["steps"]:
        step["id"] = f"{data['id']}:{step['index']}"
        step["prevHash"] = previous
        step["hash"] = previous = hash_step(
            step["index"], step["type"], step["timestamp"], step["payload"], previous
        )
    return data


@dataclass
class Trap:
    """A working directory two levels down, with bait where a smuggled path would lead."""

    root: Path
    cwd: Path
    bait: Path
    out: Path

    def paths(self) -> Iterator[str]:
        while True:
            yield from (p.format(bait=self.bait) for p in SMUGGLED)

    def is_bait(self, path: str) -> bool:
        real = os.path.realpath(os.path.join(self.cwd, path))
        smuggled = ("passwd", "shadow", "id_rsa")
        return real.startswith((str(self.bait), str(self.root / "etc"), str(self.root / "home"))) or any(
            s in path for s in smuggled
        )


@pytest.fixture
def trap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Trap:
    cwd, bait, out = tmp_path / "work" / "a", tmp_path / "bait", tmp_path / "out"
    for folder in (cwd / "b", bait, out, tmp_path / "etc", tmp_path / "home" / ".ssh"):
        folder.mkdir(parents=True)
    for decoy in (bait / "passwd", tmp_path / "etc" / "passwd", tmp_path / "home" / ".ssh" / "id_rsa"):
        decoy.write_text("DECOY: a command read or wrote a path a cassette smuggled in\n")
    monkeypatch.chdir(cwd / "b")  # ../../etc/passwd from here is tmp_path/work/etc/passwd: in the tree
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return Trap(tmp_path, cwd / "b", bait, out)


def test_a_cassette_full_of_paths_touches_only_what_the_user_named(trap: Trap) -> None:
    parent = smuggled_vector("fork-parent", trap.paths())
    child = smuggled_vector("fork-child", trap.paths())
    inputs = trap.root / "in"
    inputs.mkdir()
    (inputs / "parent.json").write_text(json.dumps(parent))
    (inputs / "child.json").write_text(json.dumps(child))
    p, c, out = str(inputs / "parent.json"), str(inputs / "child.json"), trap.out
    before = _tree(trap.root)
    commands = [
        *(
            ["verify", c],
            ["verify", "--json", c],
            ["inspect", c],
            ["diff", p, c],
            ["diff", "--semantic", p, c],
        ),
        ["assert", c, "--expect-status", "success", "--expect-tools", "../../etc/passwd"],
        ["eval", "generate", p, "-o", str(out / "contract.json")],
        *(["eval", "generate", c], ["eval", "run", str(out / "contract.json"), c]),
        ["report", c, "-o", str(out / "report.html")],
    ]
    with FileAccess.watching() as touched:
        for argv in commands:
            check_run(cli(*argv))
    # What was written is exactly what the user named (each written atomically beside its target).
    written = {os.path.realpath(path) for _, path, writes in touched if writes}
    assert {str(Path(w).parent) for w in written} == {str(out)}, written
    assert not [path for _, path, _ in touched if trap.is_bait(path)]
    after = _tree(trap.root)
    assert set(after) - set(before) == {"out/contract.json", "out/report.html"}
    assert {k: v for k, v in after.items() if k in before} == before
    report = (out / "report.html").read_text()
    assert "DECOY" not in report and "DECOY" not in (out / "contract.json").read_text()


def test_replay_and_fork_of_a_cassette_full_of_paths(trap: Trap) -> None:
    """The launcher runs the program with the cassette in a subprocess: the tree tells what it wrote."""
    parent = trap.root / "in" / "parent.json"
    parent.parent.mkdir()
    parent.write_text(json.dumps(smuggled_vector("fork-parent", trap.paths())))
    script = trap.root / "in" / "replies.json"
    script.write_text(json.dumps([{"type": "final_answer", "text": "../../etc/passwd"}]))
    program = ["--", sys.executable, "-c", "pass"]  # makes no model call: the session ends incomplete
    before = _tree(trap.root)
    replay = run_cli("replay", str(parent), *program)
    fork = run_cli(
        "fork", str(parent), "--at", "3", "--set", '"../../etc/passwd"', "--script", str(script),
        "-o", str(trap.out / "child.json"), *program,
    )  # fmt: skip
    for result in (replay, fork):
        check_run(Run(result.args, result.returncode, result.stdout, result.stderr, 0.0))
    after = _tree(trap.root)
    assert set(after) - set(before) <= {"out/child.json"}
    assert {k: v for k, v in after.items() if k in before} == before


def test_cassettes_from_spans_full_of_paths(trap: Trap, make_recorder: Callable[..., Recorder]) -> None:
    """Span names, tool names, session ids and messages that are paths: `otel-blackbox cassette` and
    CassetteSpanExporter write where they were told, named by the trace id."""
    recorder = make_recorder(path=trap.out / "blackbox.db")
    exporter = CassetteSpanExporter(trap.out / "cassettes")
    recorder.provider.add_span_processor(SimpleSpanProcessor(exporter))
    paths = trap.paths()
    with recorder.tracer.start_as_current_span(next(paths), attributes={"session.id": next(paths)}) as root:
        call = "llm.output_messages.0.message.tool_calls.0.tool_call"
        llm = {
            "openinference.span.kind": "LLM",
            "llm.model_name": next(paths),
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": next(paths),
            "llm.output_messages.0.message.role": "assistant",
            f"{call}.id": next(paths),
            f"{call}.function.name": next(paths),
            f"{call}.function.arguments": json.dumps(next(paths)),
        }
        with recorder.tracer.start_as_current_span(next(paths), attributes=llm):
            pass
        with recorder.tracer.start_as_current_span(
            next(paths), attributes={"openinference.span.kind": "TOOL", "tool.name": next(paths)}
        ):
            pass
    recorder.flush()
    trace_id = format(root.get_span_context().trace_id, "032x")
    before = _tree(trap.root)
    with FileAccess.watching() as touched:
        # --force: the tool span runs no tool the model asked for, a cassette verify would refuse.
        cassette = ("cassette", trace_id, "-o", str(trap.out / "run.json"), "--force")
        check_run(cli("--db", str(recorder.db_path), *cassette))
        check_run(cli("--db", str(recorder.db_path), "report", trace_id, "-o", str(trap.out / "run.html")))
    assert not [path for _, path, _ in touched if trap.is_bait(path)]
    after = _tree(trap.root)
    assert set(after) - set(before) == {"out/run.json", "out/run.html"}
    assert {k: v for k, v in after.items() if k in before} == before
    assert exporter.written == [trap.out / "cassettes" / f"{trace_id}.json"]
    assert sorted(p.name for p in (trap.out / "cassettes").iterdir()) == [f"{trace_id}.json"]


@fuzz(200)
@given(
    name=st.text() | st.sampled_from([p.format(bait="/tmp") for p in SMUGGLED] + ["..", ".", "", "/" * 300])
)
def test_a_test_name_never_leaves_the_cassette_folder(name: str) -> None:
    """The pytest plugin names a test's cassette after the test (parametrize ids are anything)."""
    file_name = cassette_file_name(name)
    assert Path(file_name).name == file_name and not file_name.startswith(".")
    assert "\x00" not in file_name and len(file_name.encode()) < 255
