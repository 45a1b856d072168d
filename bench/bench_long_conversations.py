"""Long conversations, side by side with an older checkout: what a run of N tool rounds costs on disk,
in memory and in time, recorded through the processor and imported from a Claude Code session.

Run it as a script (it is not a test and asserts nothing about timing)::

    python bench/bench_long_conversations.py [--rounds 50 200 1000] [--output-bytes 2000]
        [--baseline 4361a75 | --only current] [--timeout 600] [--rerun-turns 10 1000] [--json out.json]
    python bench/bench_long_conversations.py --rounds 20 50 --rerun-turns 10 200   # a check, ~1 min

The conversation of N rounds: a system prompt, the user's task, then N times an assistant message
(a sentence and one ``read_file`` tool call) and the tool's result, ``--output-bytes`` of Python-like
source generated from a seeded random choice of identifiers, keywords and literals (a 2 KB piece
compresses about as a 2 KB piece of real source does, ~2x with zlib; the figures are printed; no
secret's name among the words, so redaction leaves it whole), then the final answer. Its own bytes, the
denominator of every ratio, are the UTF-8 bytes of its messages as compact JSON (OpenAI Chat shape,
every message once: ``len(json.dumps(messages, separators=(",", ":")).encode())``).

For each N and each version (the baseline, a ``git worktree`` of ``--baseline`` removed at the end,
and the current checkout's ``src/``, working-tree edits included; each first on ``PYTHONPATH`` for
the same interpreter):

1. **record**: a child process builds the spans with the OpenTelemetry SDK (span limits lifted:
   ``SpanLimits(...UNSET)``) and ``BlackboxSpanProcessor(DB)``: an AGENT root, per model call an LLM
   span shaped as OpenInference's OpenAI instrumentor writes it (``input.value`` the whole request,
   ``llm.input_messages.*`` every message before it, ``llm.output_messages.0.*``, ``output.value``,
   ``llm.tools.*``, model, token counts), and per round a TOOL span (arguments in, the source out);
   ``force_flush()`` after each round (a real agent waits seconds for its model; without it the
   queue's 32 MB bound drops spans of this loop), ``shutdown()`` at the end.
2. **import**: the same N rounds as a Claude Code session file (a prompt, per round the text and the
   ``Bash`` tool use of one assistant message and its result, the answer; a session file holds no
   system prompt), through ``otel-blackbox --db DB import --from claude-code FILE``. Its ratios use
   the same denominator.

Each database's bytes are taken after ``PRAGMA wal_checkpoint(TRUNCATE)`` (file + ``-wal`` +
``-shm``). Then, each a CLI process (``python -m otel_blackbox.cli``) with its wall seconds and peak
RSS (``os.wait4``'s ``ru_maxrss``: the largest single process of its tree, the recorder's writer
process included): ``cassette --run RUN -o FILE`` (RUN from ``runs --json``), ``verify`` of it,
``show -v TRACE`` and ``show --json TRACE`` (stdout counted, not kept), ``report TRACE -o FILE``,
``export --trace TRACE`` in both formats. The openinference export is read back to count the
messages of the last model call that came through (flattened, and in ``input.value``). A command
that fails is reported with its first stderr line (a traceback's last), a command past ``--timeout``
as ``timeout``; the bench goes on.
Every child runs without the caller's ``OTEL_*`` variables, with ``OTEL_BLACKBOX_MAX_DB_MB=0`` and
``OTEL_BLACKBOX_RETENTION=off`` (nothing evicted while measuring); ``--max-attribute-bytes`` sets
``OTEL_BLACKBOX_MAX_ATTRIBUTE_BYTES`` for both versions (default: each version's own; at 4361a75,
256 KiB, which a call's ``input.value`` passes after ~100 rounds: the "last call" row shows it).
``--cassette-name`` names the current version's cassette (``cassette.json.zst``, say, if the name
picks the format); the baseline's is ``cassette.json``. ``--memory-limit-mb`` (default 8000) caps
every child's address space (``RLIMIT_AS``), so that a command past it fails with ``MemoryError``
rather than bringing the OOM killer to a shared machine.

3. **rerun, per turn**: in a child process of each version, what the built-in agent does on each
   model turn of a conversation with the same tool outputs: ``OpenAIChat().wire_request`` of the
   neutral ``model_input`` (the whole conversation so far, the messages list growing by append as
   ``drive`` grows it) and ``hash_step`` of that ``model_input`` step. Every turn from 1 runs in
   order (what a cache of earlier turns would see); the figure at turn T is the median over turns
   T-5..T+5 of ``--rerun-repeat`` passes, in µs a turn, with the ratio of the last T to the first.

Prints a Markdown table (baseline and current side by side for every figure) and, with ``--json``,
writes every figure.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import re
import resource
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_transcripts import SessionRecords  # the session file's shape: one home

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve()
MODEL = "gpt-4.1-mini"
SESSION = "5b0e1c2d-4949-4a49-8949-494949494949"
MB = 1e6
RUNNING: set[int] = set()  # process groups started by run() and not yet collected

# -- the conversation ------------------------------------------------------------------------------

SYSTEM_PROMPT = (
    "You are a careful coding agent working in the repository of a small web shop written in Python. "
    "Read the files you need with read_file before you change anything; never guess a file's content. "
    "Change one module at a time with write_file, keep the public names and signatures as they are, "
    "and run the tests with run_tests after each change. When a test fails, read its output, fix the "
    "cause rather than the test, and run it again. Keep your messages short: say what you are about to "
    "do and why, in one sentence. When every module is tidy and the tests pass, answer with a summary "
    "of what changed, module by module."
)
TASK = "Tidy every module under src/shop: type hints, docstrings, no dead code. Keep the tests green."
FINAL = "Every module is tidy: type hints and docstrings added, dead code removed, and the tests pass."
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file of the repository, as text.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string", "description": "Path from the repository root"}},
                "required": ["path"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "description": "Replace a file of the repository with new content.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "run_tests",
            "description": "Run pytest on the repository, or on the tests matching a pattern.",
            "parameters": {"type": "object", "properties": {"pattern": {"type": "string"}}},
        },
    },
]

WORD_TEXT = (
    "order item price total customer cart stock tax discount invoice shipment address payment refund "
    "user session cache config request response record batch queue worker retry limit timeout status "
    "result value index count name path key buffer stream parser report metric event handler "
    "client server table row column field schema query filter page cursor amount currency region "
    "warehouse supplier coupon rule line note label store product variant sku weight rate window "
    "account balance ledger entry journal audit trail vendor catalog category brand image thumbnail "
    "banner review rating vote comment thread author editor draft publish archive delete update create "
    "select insert merge split join group sort rank score level tier plan quota usage bill charge fee "
    "gateway webhook signature nonce digest hash salt cipher chunk offset length width "
    "height depth color size shape format locale zone clock date time delta span interval epoch tick "
    "lock mutex guard flag mode state phase stage step task job pool slot lease owner peer node edge "
    "graph tree leaf root branch parent child sibling prefix suffix pattern regex match group capture"
)
WORDS = tuple(WORD_TEXT.split())  # no secret's name among them: redaction leaves the text whole
TYPES: tuple[str, ...] = ("int", "str", "float", "bool", "list[str]", "dict[str, Any]", "Decimal", "Path")
TYPES += ("bytes", "Order | None", "Iterable[Item]", "Mapping[str, int]", "Customer", "datetime")
CALLS = ("len", "sorted", "sum", "max", "min", "round", "int", "str", "isinstance", "logger.debug")


def _ident(rng: random.Random) -> str:
    return "_".join(rng.choice(WORDS) for _ in range(rng.choice((1, 1, 2, 2, 3))))


def _camel(rng: random.Random) -> str:
    return "".join(rng.choice(WORDS).capitalize() for _ in range(rng.choice((1, 2, 2, 3))))


def _expr(rng: random.Random) -> str:
    kind = rng.randrange(7)
    if kind == 0:
        return f"{_ident(rng)}.{_ident(rng)}({_ident(rng)}, {rng.randint(0, 9999)})"
    if kind == 1:
        return f'{_ident(rng)}["{rng.choice(WORDS)}-{rng.getrandbits(32):08x}"]'
    if kind == 2:
        return f"{rng.choice(CALLS)}({_ident(rng)})"
    if kind == 3:
        return f"{_ident(rng)} {rng.choice('+-*/')} {rng.choice((str(rng.randint(1, 500)), _ident(rng)))}"
    if kind == 4:
        return f'f"{rng.choice(WORDS)} {{{_ident(rng)}}} {rng.choice(WORDS)}"'
    if kind == 5:
        return f"{_camel(rng)}({_ident(rng)}={_ident(rng)})"
    return f"[{_ident(rng)} for {rng.choice(WORDS)} in {_ident(rng)} if {rng.choice(WORDS)}]"


def source_text(seed: int, size: int) -> str:
    """``size`` bytes of Python-like source, the same for the same seed: a module of classes and
    functions whose names, arguments, statements and literals are drawn from a word list."""
    rng = random.Random(seed)
    lines = [f'"""The {rng.choice(WORDS)} {rng.choice(WORDS)} of the shop (module {seed})."""', ""]
    lines.append(f"from {rng.choice(WORDS)}.{rng.choice(WORDS)} import {_camel(rng)}, {_ident(rng)}")
    while sum(len(line) + 1 for line in lines) < size:
        if rng.random() < 0.25:
            lines += ["", "", f"class {_camel(rng)}({rng.choice(('Base', 'Model', 'Protocol', 'object'))}):"]
            lines.append(
                f'    """{" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 10))).capitalize()}."""'
            )
        args = ", ".join(f"{_ident(rng)}: {rng.choice(TYPES)}" for _ in range(rng.randint(1, 3)))
        lines += ["", f"    def {_ident(rng)}(self, {args}) -> {rng.choice(TYPES)}:"]
        for _ in range(rng.randint(2, 7)):
            indent = "        " + "    " * rng.randrange(2)
            kind = rng.randrange(5)
            if kind == 0:
                lines.append(f"{indent}# {' '.join(rng.choice(WORDS) for _ in range(rng.randint(3, 8)))}")
            elif kind == 1:
                lines.append(
                    f"{indent}if {_ident(rng)} {rng.choice(('is None', '> 0', '== 0', 'in ' + _ident(rng)))}:"
                )
            else:
                lines.append(f"{indent}{_ident(rng)} = {_expr(rng)}")
        lines.append(f"        return {_expr(rng)}")
    return ("\n".join(lines) + "\n")[:size]


def _call_id(n: int) -> str:
    rng = random.Random(10_000 + n)
    return "call_" + "".join(
        rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") for _ in range(24)
    )


def _path(n: int) -> str:
    return f"src/shop/{WORDS[n % len(WORDS)]}_{n}.py"


def conversation(rounds: int, output_bytes: int) -> list[dict[str, Any]]:
    """The messages, OpenAI Chat shape: system, user, N x (assistant + tool call, tool), answer."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": TASK},
    ]
    for n in range(rounds):
        call = {
            "id": _call_id(n),
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": _path(n)})},
        }
        messages.append({"role": "assistant", "content": f"Reading {_path(n)} next.", "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": source_text(n, output_bytes)})
    messages.append({"role": "assistant", "content": FINAL})
    return messages


def conversation_bytes(messages: list[dict[str, Any]]) -> int:
    return len(json.dumps(messages, separators=(",", ":"), ensure_ascii=False).encode())


def claude_session(rounds: int, output_bytes: int) -> str:
    """The same N rounds as a Claude Code session file (2.0 shape, as bench_transcripts.py writes it)."""
    written = SessionRecords(SESSION)
    add, assistant = written.add, written.assistant
    add("user", 0, message={"role": "user", "content": TASK})
    for n in range(rounds):
        context = 2_000 + n * (output_bytes // 4 + 40)
        assistant(3 * n + 1, f"msg_{n}", {"type": "text", "text": f"Reading {_path(n)} next."}, context)
        use = {"type": "tool_use", "id": _call_id(n), "name": "Bash", "input": {"command": f"cat {_path(n)}"}}
        assistant(3 * n + 1, f"msg_{n}", use, context)
        result = {"type": "tool_result", "tool_use_id": _call_id(n), "content": source_text(n, output_bytes)}
        add("user", 3 * n + 2, message={"role": "user", "content": [result]})
    context = 2_000 + rounds * (output_bytes // 4 + 40)
    assistant(3 * rounds + 1, "msg_end", {"type": "text", "text": FINAL}, context)
    return written.text()


# -- child: record through the processor ----------------------------------------------------------


def _message_attributes(prefix: str, message: dict[str, Any]) -> dict[str, Any]:
    from openinference.semconv.trace import MessageAttributes, ToolCallAttributes

    attributes: dict[str, Any] = {f"{prefix}.{MessageAttributes.MESSAGE_ROLE}": message["role"]}
    if message.get("content") is not None:
        attributes[f"{prefix}.{MessageAttributes.MESSAGE_CONTENT}"] = message["content"]
    if "tool_call_id" in message:
        attributes[f"{prefix}.{MessageAttributes.MESSAGE_TOOL_CALL_ID}"] = message["tool_call_id"]
    for j, call in enumerate(message.get("tool_calls") or []):
        at = f"{prefix}.{MessageAttributes.MESSAGE_TOOL_CALLS}.{j}"
        attributes[f"{at}.{ToolCallAttributes.TOOL_CALL_ID}"] = call["id"]
        attributes[f"{at}.{ToolCallAttributes.TOOL_CALL_FUNCTION_NAME}"] = call["function"]["name"]
        attributes[f"{at}.{ToolCallAttributes.TOOL_CALL_FUNCTION_ARGUMENTS_JSON}"] = call["function"][
            "arguments"
        ]
    return attributes


def llm_attributes(messages: list[dict[str, Any]], call: int) -> dict[str, Any]:
    """Model call ``call`` (from 0) as OpenInference's OpenAI instrumentor records it: the request
    (every message before it) in ``input.value`` and flattened, the response likewise."""
    from openinference.semconv.trace import (
        OpenInferenceMimeTypeValues,
        OpenInferenceSpanKindValues,
        SpanAttributes,
        ToolAttributes,
    )

    sent, answer = messages[: 2 + 2 * call], messages[2 + 2 * call]
    request = {"messages": sent, "model": MODEL, "temperature": 0, "tools": TOOLS}
    prompt_tokens = conversation_bytes(sent) // 4
    response = {
        "id": f"chatcmpl-bench{call:06d}",
        "object": "chat.completion",
        "created": 1_760_000_000 + call,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": answer,
                "finish_reason": "tool_calls" if "tool_calls" in answer else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": 40,
            "total_tokens": prompt_tokens + 40,
        },
    }
    json_mime = OpenInferenceMimeTypeValues.JSON.value
    attributes: dict[str, Any] = {
        SpanAttributes.OPENINFERENCE_SPAN_KIND: OpenInferenceSpanKindValues.LLM.value,
        SpanAttributes.INPUT_VALUE: json.dumps(request),
        SpanAttributes.INPUT_MIME_TYPE: json_mime,
        SpanAttributes.LLM_INVOCATION_PARAMETERS: json.dumps({"model": MODEL, "temperature": 0}),
        SpanAttributes.LLM_MODEL_NAME: MODEL,
        SpanAttributes.LLM_PROVIDER: "openai",
        SpanAttributes.LLM_SYSTEM: "openai",
    }
    for i, message in enumerate(sent):
        attributes.update(_message_attributes(f"{SpanAttributes.LLM_INPUT_MESSAGES}.{i}", message))
    for j, tool in enumerate(TOOLS):
        attributes[f"{SpanAttributes.LLM_TOOLS}.{j}.{ToolAttributes.TOOL_JSON_SCHEMA}"] = json.dumps(tool)
    attributes[SpanAttributes.OUTPUT_VALUE] = json.dumps(response)
    attributes[SpanAttributes.OUTPUT_MIME_TYPE] = json_mime
    attributes.update(_message_attributes(f"{SpanAttributes.LLM_OUTPUT_MESSAGES}.0", answer))
    attributes[SpanAttributes.LLM_TOKEN_COUNT_PROMPT] = prompt_tokens
    attributes[SpanAttributes.LLM_TOKEN_COUNT_COMPLETION] = 40
    attributes[SpanAttributes.LLM_TOKEN_COUNT_TOTAL] = prompt_tokens + 40
    return attributes


def record_child(rounds: int, output_bytes: int, db: str, flush_each_round: bool) -> None:
    """Child process: the agent, recorded into ``db``; prints {"spans", "seconds"} as JSON."""
    from openinference.semconv.trace import OpenInferenceSpanKindValues, SpanAttributes
    from opentelemetry.sdk.trace import SpanLimits, TracerProvider

    from otel_blackbox import BlackboxSpanProcessor

    unset = SpanLimits.UNSET
    limits = SpanLimits(
        max_attributes=unset,
        max_span_attributes=unset,
        max_events=unset,
        max_links=unset,
        max_event_attributes=unset,
        max_link_attributes=unset,
        max_attribute_length=unset,
        max_span_attribute_length=unset,
    )
    messages = conversation(rounds, output_bytes)
    provider = TracerProvider(span_limits=limits)
    processor = BlackboxSpanProcessor(db)
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("bench_long_conversations")
    kind = SpanAttributes.OPENINFERENCE_SPAN_KIND
    start, spans = time.perf_counter(), 0
    root_attributes = {kind: OpenInferenceSpanKindValues.AGENT.value, SpanAttributes.INPUT_VALUE: TASK}
    with tracer.start_as_current_span("agent", attributes=root_attributes) as root:
        spans += 1
        for call in range(rounds + 1):
            with tracer.start_as_current_span("ChatCompletion", attributes=llm_attributes(messages, call)):
                spans += 1
            if call == rounds:
                break
            tool_call = messages[2 + 2 * call]["tool_calls"][0]
            tool_attributes = {
                kind: OpenInferenceSpanKindValues.TOOL.value,
                SpanAttributes.TOOL_NAME: tool_call["function"]["name"],
                SpanAttributes.INPUT_VALUE: tool_call["function"]["arguments"],
                SpanAttributes.OUTPUT_VALUE: messages[3 + 2 * call]["content"],
            }
            with tracer.start_as_current_span(tool_call["function"]["name"], attributes=tool_attributes):
                spans += 1
            if flush_each_round:
                processor.force_flush()
        root.set_attribute(SpanAttributes.OUTPUT_VALUE, FINAL)
    provider.shutdown()  # the writer process, a child of this one, is collected here
    agent_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    writer_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    seconds = time.perf_counter() - start
    print(
        json.dumps(
            {"spans": spans, "seconds": seconds, "agent_mb": agent_kb / 1024, "writer_mb": writer_kb / 1024}
        )
    )


# -- child: the rerun agent's work per turn --------------------------------------------------------


def rerun_child(turns: list[int], output_bytes: int, repeat: int, window: int) -> None:
    """Child process: µs per turn of wire_request and hash_step around each of ``turns``, as JSON,
    as the version's built-in agent does them: through its RequestMemo and StepHasher where it has
    them (issue 49), else the plain functions."""
    import importlib

    from otel_blackbox._cassette.canonical import hash_step
    from otel_blackbox._wire.call_ids import CallIds
    from otel_blackbox._wire.openai_chat.translation import OpenAIChat

    def found(module: str, name: str) -> Any:  # the older version has neither
        try:
            return getattr(importlib.import_module(module), name, None)
        except ImportError:
            return None

    step_hasher = found("otel_blackbox._cassette.canonical", "StepHasher")
    request_memo = found("otel_blackbox._wire.memo", "RequestMemo")

    last = max(turns) + window
    chat = conversation(last, output_bytes)
    body = {"model": MODEL, "messages": chat[:-1], "tools": TOOLS, "temperature": 0}
    neutral = OpenAIChat().model_input(body, CallIds())
    settings = {k: v for k, v in neutral.items() if k not in ("messages", "model")}
    everything = neutral["messages"]  # user, then per round: assistant (tool use), user (tool result)
    wanted = {t for turn in turns for t in range(max(1, turn - window), turn + window + 1)}
    wire_us: dict[int, list[float]] = {t: [] for t in wanted}
    hash_us: dict[int, list[float]] = {t: [] for t in wanted}
    clock = time.perf_counter_ns
    for _ in range(repeat):
        provider = OpenAIChat()
        translate: Any = (
            request_memo(provider, native=True).wire_request
            if request_memo is not None
            else lambda r, stream, provider=provider: provider.wire_request(r, stream=stream, native=True)
        )
        hasher: Any = step_hasher().hash_step if step_hasher is not None else hash_step
        messages: list[Any] = [everything[0]]
        prev: str | None = None
        for turn in range(1, last + 1):  # model call `turn` sends the user's task and turn-1 rounds
            request = {**settings, "messages": messages, "model": MODEL}  # one growing list, as drive's
            t0 = clock()
            translate(request, stream=False)
            t1 = clock()
            prev = hasher(2 * turn, "model_input", 1_760_000_000_000 + turn, request, prev)
            t2 = clock()
            if turn in wanted:
                wire_us[turn].append((t1 - t0) / 1000)
                hash_us[turn].append((t2 - t1) / 1000)
            messages.append(everything[2 * turn - 1])
            messages.append(everything[2 * turn])
    figures = {}
    for turn in turns:
        around = range(max(1, turn - window), turn + window + 1)
        wire = statistics.median(v for t in around for v in wire_us[t])
        hashed = statistics.median(v for t in around for v in hash_us[t])
        both = statistics.median(w + h for t in around for w, h in zip(wire_us[t], hash_us[t], strict=True))
        figures[str(turn)] = {"wire_request_us": wire, "hash_step_us": hashed, "both_us": both}
    print(json.dumps(figures))


# -- running a command -----------------------------------------------------------------------------


@dataclass
class Ran:
    status: str  # "ok", "exit N: first stderr line", "timeout"
    seconds: float
    peak_mb: float
    stdout_bytes: int
    stdout: bytes = b""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


MEMORY_LIMIT_MB = 0.0  # --memory-limit-mb: RLIMIT_AS of every child (0: none)


def _limit_memory() -> None:
    if MEMORY_LIMIT_MB > 0:
        limit = int(MEMORY_LIMIT_MB * 1024 * 1024)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def run(argv: list[str], env: dict[str, str], timeout: float, *, keep_stdout: bool = False) -> Ran:
    """One process (and its group): wall seconds, peak RSS (ru_maxrss of wait4), stdout counted."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=err,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
            preexec_fn=_limit_memory,
        )
        assert proc.stdout is not None
        RUNNING.add(proc.pid)
        stdout = proc.stdout
        counted, kept = [0], []
        lock, state = threading.Lock(), {"reaped": False, "killed": False}

        def drain() -> None:
            while chunk := stdout.read(1 << 20):
                counted[0] += len(chunk)
                if keep_stdout:
                    kept.append(chunk)

        def kill() -> None:
            with lock:
                if not state["reaped"]:
                    state["killed"] = True
                    os.killpg(proc.pid, signal.SIGKILL)

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, wait_status, usage = os.wait4(proc.pid, 0)
        except BaseException:  # stopped (Ctrl-C, SIGTERM): the command goes before its folder does
            timer.cancel()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(proc.pid, 0)
            proc.returncode = -signal.SIGKILL
            RUNNING.discard(proc.pid)
            raise
        seconds = time.perf_counter() - start
        with lock:
            state["reaped"] = True
            RUNNING.discard(proc.pid)
        timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(wait_status)
        if state["killed"]:
            with contextlib.suppress(ProcessLookupError):  # what is left of its group (a writer process)
                os.killpg(proc.pid, signal.SIGKILL)
        reader.join(timeout=30)
        stdout.close()
        err.seek(0)
        lines = [line.strip() for line in err.read().decode(errors="replace").splitlines() if line.strip()]
    if state["killed"]:
        status = "timeout"
    elif proc.returncode != 0:
        first = next((line for line in lines if not line.startswith("Traceback")), "")
        tail = lines[-1] if lines and lines[0].startswith("Traceback") else first
        status = f"exit {proc.returncode}: {tail[:160]}"
    else:
        status = "ok"
    return Ran(status, seconds, usage.ru_maxrss / 1024, counted[0], b"".join(kept))


# -- one version, one length -----------------------------------------------------------------------


@dataclass
class Version:
    label: str
    src: Path
    env: dict[str, str]

    @property
    def cli(self) -> list[str]:
        return [sys.executable, "-m", "otel_blackbox.cli"]


def db_bytes(db: Path) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return sum(p.stat().st_size for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm")) if p.exists())


def last_call_messages(export: Path) -> dict[str, Any]:
    """From an openinference export: the most input messages an LLM span has, flattened and in
    input.value, and the attributes the SDK reported dropped if any."""
    flat = 0
    in_value: int | str = "-"
    key = re.compile(r"^llm\.input_messages\.(\d+)\.message\.role$")
    with export.open("rb") as lines:
        for line in lines:
            span = json.loads(line)
            attributes = span.get("attributes") or {}
            if attributes.get("openinference.span.kind") != "LLM":
                continue
            indices = [int(m.group(1)) for k in attributes if (m := key.match(k))]
            count = max(indices) + 1 if indices else 0
            if count < flat:
                continue
            flat = count
            value = attributes.get("input.value")
            try:
                parsed = json.loads(value) if isinstance(value, str) else None
                in_value = len(parsed["messages"]) if isinstance(parsed, dict) else "-"
            except (ValueError, KeyError, TypeError):
                in_value = "not JSON" if isinstance(value, str) else "-"
    return {"flattened": flat, "input_value": in_value}


def measure_db(
    version: Version, db: Path, folder: Path, args: argparse.Namespace, conv_bytes: int, tag: str
) -> dict[str, Any]:
    """Everything done with one database, each a CLI process."""
    out: dict[str, Any] = {"db_bytes": db_bytes(db)}
    out["db_ratio"] = out["db_bytes"] / conv_bytes
    cli, env, timeout = version.cli, version.env, args.timeout
    say = progress(f"{version.label} N={tag}")

    listed = run([*cli, "--db", str(db), "list", "--json", "--limit", "5"], env, timeout, keep_stdout=True)
    runs = run([*cli, "--db", str(db), "runs", "--json", "--limit", "5"], env, timeout, keep_stdout=True)
    if not listed.ok or not runs.ok:
        out["error"] = f"list/runs: {listed.status if not listed.ok else runs.status}"
        return out
    traces, run_rows = json.loads(listed.stdout), json.loads(runs.stdout)
    if not traces or not run_rows:
        out["error"] = "no trace stored"
        return out
    trace_id, run_id = traces[0]["trace_id"], run_rows[0]["run_id"]
    out["spans"] = traces[0].get("span_count")
    steps: dict[str, Any] = {}
    out["steps"] = steps

    def step(name: str, argv: list[str], output: Path | None = None) -> Ran:
        say(name)
        ran = run([*cli, "--db", str(db), *argv], env, timeout)
        ran.status = ran.status.replace(f"{folder}/", "")
        entry: dict[str, Any] = {"status": ran.status, "seconds": ran.seconds, "peak_mb": ran.peak_mb}
        size = ran.stdout_bytes if output is None else output.stat().st_size if output.exists() else None
        entry["bytes"] = size if ran.ok else None
        if ran.ok and size is not None:
            entry["ratio"] = size / conv_bytes
        steps[name] = entry
        return ran

    cassette = folder / (args.cassette_name if version.label == "current" else "cassette.json")
    made = step("cassette", ["cassette", "--run", run_id, "-o", str(cassette)], cassette)
    if made.ok and cassette.exists():
        step("verify", ["verify", str(cassette)])
    else:
        steps["verify"] = {"status": "no cassette", "seconds": None, "peak_mb": None, "bytes": None}
    step("show -v", ["show", "-v", trace_id])
    step("show --json", ["show", "--json", trace_id])
    report = folder / "report.html"
    step("report", ["report", trace_id, "-o", str(report)], report)
    export = folder / "export.jsonl"
    if step("export", ["export", "--trace", trace_id, "-o", str(export)], export).ok:
        out["last_call"] = last_call_messages(export)
    otlp = folder / "export-otlp.jsonl"
    step("export otlp", ["export", "--format", "otlp", "--trace", trace_id, "-o", str(otlp)], otlp)
    for path in (cassette, report, export, otlp):
        path.unlink(missing_ok=True)
    return out


def progress(prefix: str) -> Any:
    def say(what: str) -> None:
        print(f"  [{time.strftime('%H:%M:%S')}] {prefix}: {what}", flush=True)

    return say


def measure_version(
    version: Version, rounds: int, args: argparse.Namespace, conv_bytes: int
) -> dict[str, Any]:
    result: dict[str, Any] = {}
    say = progress(f"{version.label} N={rounds}")
    with tempfile.TemporaryDirectory(prefix=f"bench49-{version.label}-{rounds}-") as tmp:
        folder = Path(tmp)
        # 1. recorded through the processor
        db = folder / "recorded.db"
        say("record")
        argv = [sys.executable, str(HERE), "--_child", "record", "--rounds", str(rounds), "--_db", str(db)]
        argv += ["--output-bytes", str(args.output_bytes)] + (["--no-flush"] if args.no_flush else [])
        ran = run(argv, version.env, args.timeout, keep_stdout=True)
        recorded: dict[str, Any] = {
            "make": {"status": ran.status, "seconds": ran.seconds, "peak_mb": ran.peak_mb}
        }
        if ran.ok:
            child = json.loads(ran.stdout)
            recorded["expected_spans"] = child["spans"]
            recorded["make"].update(agent_mb=child.get("agent_mb"), writer_mb=child.get("writer_mb"))
            recorded.update(measure_db(version, db, folder, args, conv_bytes, f"{rounds} recorded"))
        result["recorded"] = recorded
        db.unlink(missing_ok=True)
        # 2. imported from a Claude Code session
        session = folder / f"{SESSION}.jsonl"
        session.write_text(claude_session(rounds, args.output_bytes))
        db = folder / "imported.db"
        say("import --from claude-code")
        argv = [*version.cli, "--db", str(db), "import", "--from", "claude-code", str(session)]
        ran = run(argv, version.env, args.timeout)
        imported: dict[str, Any] = {
            "make": {"status": ran.status, "seconds": ran.seconds, "peak_mb": ran.peak_mb},
            "session_bytes": session.stat().st_size,
        }
        if ran.ok:
            imported.update(measure_db(version, db, folder, args, conv_bytes, f"{rounds} imported"))
        result["imported"] = imported
    return result


def measure_rerun(version: Version, args: argparse.Namespace) -> dict[str, Any]:
    progress(version.label)(f"rerun per turn at {args.rerun_turns}")
    argv = [sys.executable, str(HERE), "--_child", "rerun", "--output-bytes", str(args.output_bytes)]
    argv += ["--rerun-turns", *map(str, args.rerun_turns), "--rerun-repeat", str(args.rerun_repeat)]
    ran = run(argv, version.env, args.timeout * 3, keep_stdout=True)
    if not ran.ok:
        return {"status": ran.status}
    return {"status": "ok", "seconds": ran.seconds, "turns": json.loads(ran.stdout)}


# -- the table -------------------------------------------------------------------------------------


def _mb(n: float | None) -> str:
    if n is None:
        return "-"
    return f"{n / MB:.2f} MB" if n < 10 * MB else f"{n / MB:.0f} MB"


def _cell(entry: dict[str, Any] | None, *, output: bool = False, ratio: bool = False) -> str:
    if not entry:
        return "-"
    if entry.get("status") != "ok":
        return str(entry.get("status", "-")).replace("|", "/")
    text = f"{entry['seconds']:.2f} s, {entry['peak_mb']:.0f} MB peak"
    if output and entry.get("bytes") is not None:
        text += f", {_mb(entry['bytes'])}"
        if ratio:
            text += f" ({entry['ratio']:.1f}x)"
    return text


STEPS = (
    ("cassette", "`cassette --run` (cassette / conversation)"),
    ("verify", "`verify` of the cassette"),
    ("show -v", "`show -v` (stdout)"),
    ("show --json", "`show --json` (stdout)"),
    ("report", "`report` (HTML)"),
    ("export", "`export` (openinference)"),
    ("export otlp", "`export --format otlp`"),
)


def _peaks(r: dict[str, Any], _n: int) -> str:
    make = r["recorded"]["make"]
    return f"{make['agent_mb']:.0f} MB / {make['writer_mb']:.0f} MB"


def _last_call(source: str, expected: bool) -> Any:
    def cell(r: dict[str, Any], n: int) -> str:
        last = r[source]["last_call"]
        return f"{last['flattened']} / {last['input_value']}" + (f" ({2 + 2 * n})" if expected else "")

    return cell


def table(results: dict[str, Any], versions: list[str], rounds: list[int], conv: dict[int, int]) -> str:
    heads = [f"{n} rounds: {v}" for n in rounds for v in versions]
    lines = ["| figure | " + " | ".join(heads) + " |", "| --- |" + " ---: |" * len(heads)]

    def row(name: str, fn: Any) -> None:
        cells = []
        for n in rounds:
            for v in versions:
                try:
                    cells.append(fn(results[v][str(n)], n))
                except (KeyError, TypeError):
                    cells.append("-")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")

    row("conversation's own bytes", lambda _r, n: _mb(conv[n]))
    for source, make in (("recorded", "record (processor)"), ("imported", "import --from claude-code")):
        row(f"**{source}**: {make}", lambda r, _n, s=source: _cell(r[s]["make"]))
        if source == "recorded":
            row("peak RSS: the agent / its writer process", _peaks)
            row(
                "spans stored / made",
                lambda r, _n: f"{r['recorded'].get('spans', '-')} / {r['recorded']['expected_spans']}",
            )
            row("last call's messages: flattened / input.value (sent)", _last_call(source, True))
        else:
            row("session file", lambda r, _n: _mb(r["imported"]["session_bytes"]))
            row("last call's messages: flattened / input.value", _last_call(source, False))
        row(
            "database / conversation",
            lambda r, _n, s=source: (
                f"{_mb(r[s]['db_bytes'])} ({r[s]['db_ratio']:.1f}x)"
                + (f"; {r[s]['error']}" if "error" in r[s] else "")
            ),
        )
        for step, label in STEPS:
            row(
                f"{label}",
                lambda r, _n, s=source, st=step: _cell(
                    r[s]["steps"][st], output=st != "verify", ratio=st == "cassette"
                ),
            )
    return "\n".join(lines)


def rerun_table(rerun: dict[str, Any], versions: list[str], turns: list[int]) -> str:
    first, last = str(turns[0]), str(turns[-1])
    heads = [f"µs at turn {t}" for t in turns] + [f"turn {last} / turn {first}"]
    lines = ["| version | per turn | " + " | ".join(heads) + " |", "| --- | --- |" + " ---: |" * len(heads)]
    for v in versions:
        r = rerun.get(v, {})
        if r.get("status") != "ok":
            lines.append(f"| {v} | - | {r.get('status', '-')} |" + " |" * (len(heads) - 1))
            continue
        for key, label in (
            ("wire_request_us", "`wire_request`"),
            ("hash_step_us", "`hash_step`"),
            ("both_us", "both"),
        ):
            cells = [f"{r['turns'][str(t)][key]:.1f}" for t in turns]
            cells.append(f"{r['turns'][last][key] / r['turns'][first][key]:.2f}x")
            lines.append(f"| {v} | {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# -- main ------------------------------------------------------------------------------------------


def child_env(src: Path, args: argparse.Namespace) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["PYTHONPATH"] = str(src)
    env["OTEL_BLACKBOX_MAX_DB_MB"] = "0"
    env["OTEL_BLACKBOX_RETENTION"] = "off"
    if args.max_attribute_bytes is not None:
        env["OTEL_BLACKBOX_MAX_ATTRIBUTE_BYTES"] = str(args.max_attribute_bytes)
    return env


def git(*argv: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), *argv], check=True, capture_output=True, text=True
    ).stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--rounds", type=int, nargs="+", default=[50, 200, 1000], help="tool rounds (50 200 1000)"
    )
    parser.add_argument("--output-bytes", type=int, default=2000, help="bytes of each tool output (2000)")
    parser.add_argument("--baseline", default="4361a75", metavar="REF", help="the older commit (4361a75)")
    parser.add_argument("--only", choices=("current", "baseline"), help="measure one version only")
    parser.add_argument("--timeout", type=float, default=600, help="seconds a command may take (600)")
    parser.add_argument("--rerun-turns", type=int, nargs="+", default=[10, 1000], help="turns (10 1000)")
    parser.add_argument("--rerun-repeat", type=int, default=3, help="passes of the rerun's turns (3)")
    parser.add_argument("--no-rerun", action="store_true", help="skip the rerun's cost per turn")
    parser.add_argument("--no-flush", action="store_true", help="record without force_flush() each round")
    parser.add_argument(
        "--max-attribute-bytes", type=int, help="OTEL_BLACKBOX_MAX_ATTRIBUTE_BYTES for both versions"
    )
    parser.add_argument(
        "--cassette-name",
        default="cassette.json",
        help="the current version's cassette file name (cassette.json)",
    )
    parser.add_argument(
        "--memory-limit-mb",
        type=float,
        default=8000,
        help="address-space limit of every child (RLIMIT_AS; 0: none): past it a command fails with "
        "MemoryError instead of pushing a shared machine into the OOM killer (8000)",
    )
    parser.add_argument("--json", type=Path, help="also write every figure to this file")
    parser.add_argument("--_child", choices=("record", "rerun"), help=argparse.SUPPRESS)
    parser.add_argument("--_db", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args._child == "record":
        record_child(args.rounds[0], args.output_bytes, args._db, not args.no_flush)
        return 0
    if args._child == "rerun":
        rerun_child(args.rerun_turns, args.output_bytes, args.rerun_repeat, window=5)
        return 0

    global MEMORY_LIMIT_MB
    MEMORY_LIMIT_MB = args.memory_limit_mb
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # `timeout` stops it: the worktree still goes
    started = time.perf_counter()
    head = git("rev-parse", "--short", "HEAD")
    dirty = " + working tree" if git("status", "--porcelain", "--", "src") else ""
    print(f"python {platform.python_version()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    outputs = [source_text(n, args.output_bytes).encode() for n in range(50)]
    one = statistics.median(len(o) / len(zlib.compress(o, 6)) for o in outputs)
    together = b"".join(outputs)
    print(
        f"tool outputs: {args.output_bytes} B of Python-like source each; zlib -6 compresses one "
        f"{one:.2f}x, 50 together {len(together) / len(zlib.compress(together, 6)):.2f}x "
        "(this repository's own source: ~1.9x a 2 KB piece, ~2.7x a whole module)"
    )
    print(
        "the conversation's own bytes: its messages (system, user, N x (assistant + tool call, tool), "
        "answer; OpenAI Chat shape) as compact JSON, UTF-8, every message once"
    )
    conv = {n: conversation_bytes(conversation(n, args.output_bytes)) for n in args.rounds}
    with tempfile.TemporaryDirectory(prefix="bench49-") as tmp:
        versions: dict[str, Version] = {}
        worktree: Path | None = None
        try:
            if args.only != "current":
                worktree = Path(tmp) / "baseline"
                git("worktree", "add", "--detach", str(worktree), args.baseline)
                label = git("rev-parse", "--short", args.baseline)
                versions[label] = Version(label, worktree / "src", child_env(worktree / "src", args))
            if args.only != "baseline":
                versions["current"] = Version("current", ROOT / "src", child_env(ROOT / "src", args))
            for version in versions.values():
                probe = [sys.executable, "-c", "import otel_blackbox; print(otel_blackbox.__file__)"]
                where = subprocess.run(probe, env=version.env, capture_output=True, text=True, check=True)
                print(f"{version.label}: otel_blackbox from {where.stdout.strip()}")
                if not where.stdout.strip().startswith(str(version.src)):
                    raise SystemExit(f"{version.label}: PYTHONPATH={version.src} did not win")
            print(f"current = {head}{dirty}")
            results: dict[str, dict[str, Any]] = {v: {} for v in versions}
            for n in args.rounds:
                print(f"\n{n} rounds: the conversation is {conv[n]:,} bytes", flush=True)
                for label, version in versions.items():
                    results[label][str(n)] = measure_version(version, n, args, conv[n])
            rerun: dict[str, Any] = {}
            if not args.no_rerun:
                for label, version in versions.items():
                    rerun[label] = measure_rerun(version, args)
        finally:
            for group in list(RUNNING):  # stopped early (Ctrl-C, SIGTERM): its command goes too
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(group, signal.SIGKILL)
            if worktree is not None:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)], check=False
                )
                shutil.rmtree(worktree, ignore_errors=True)

    labels = list(versions)
    print(f"\n### Long conversations ({args.output_bytes} B tool outputs; {', '.join(labels)})\n")
    print(table(results, labels, args.rounds, conv))
    if rerun:
        print(f"\n### The rerun's work per turn (median of turns T-5..T+5 over {args.rerun_repeat} passes)\n")
        print(rerun_table(rerun, labels, args.rerun_turns))
    wall = time.perf_counter() - started
    print(f"\ntotal {wall:.0f} s, load average at the end {os.getloadavg()[0]:.2f}")
    if args.json:
        document = {
            "command": sys.argv,
            "python": platform.python_version(),
            "cores": os.cpu_count(),
            "current": f"{head}{dirty}",
            "output_bytes": args.output_bytes,
            "memory_limit_mb": args.memory_limit_mb,
            "conversation_bytes": {str(n): b for n, b in conv.items()},
            "results": results,
            "rerun": rerun,
            "wall_s": wall,
        }
        args.json.write_text(json.dumps(document, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
