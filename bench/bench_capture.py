"""Side-by-side benchmark: BlackboxSpanProcessor with HTTP capture off and on, per exchange and on disk.

Run it as a script (it is not a test and exits 0 whatever the figures; a capture that misses an
exchange, or records one with capture off, raises AssertionError)::

    python bench/bench_capture.py [--requests N] [--repeat R] [--json out.json]

Two workloads, each request inside a span of its own (the processor records that span in every
mode), against servers on 127.0.0.1 run in child processes, so that this process's CPU time is the
client's and the recorder's only:

1. **tool**: N requests through one ``httpx.Client``, alternately a GET answered with ~1 KB of JSON
   and a POST of ~1 KB of JSON echoed back (the HTTP API a tool calls);
2. **model**: N/4 chat completions through the real ``openai`` SDK (httpx2) against
   ``examples/fake_llm.py``, each sending a 12-message conversation (~3 KB): the capture also
   translates these into the neutral ``model_input`` / ``model_output``.

Three modes, alternated in every repeat (the starting mode rotates), medians of R repeats:
**off** (``capture_http=False``, the default), **on** (``capture_http=True``), and **on, eager**: a
diagnostic variant in which the span's attributes (bodies to text, the provider translation) are
worked out on the caller's thread as the exchange completes, instead of on the writer thread when
it first reads them, as capture.py does. Per mode: wall µs per request of the loop, the CPU µs per
request of the caller's thread alone over the loop (``thread_time``: what the agent's thread pays,
steadier than wall time under the load of other processes), process CPU µs per request over the
loop and the flush after it (the writer's work included), the flush's own time, and the bytes
the database file grew by per captured exchange (file size after shutdown, on minus off, over the
number of exchanges) beside the JSON of the exchange's attributes.

3. **caller's share**: with no socket at all, the capture's own work on the caller's thread per
   exchange (``begin`` at the request, the watch at the response: two clocks, the span context, one
   queued span), for a tool-sized and a model-sized exchange, lazy (as shipped) and eager. The
   writer's share (attributes, redaction, the row) is in the CPU column of 1 and 2.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx
import openai
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.trace import Tracer

from otel_blackbox import BlackboxConfig, BlackboxSpanProcessor

ROOT = Path(__file__).resolve().parents[1]
MODES = ("off", "on", "on, eager")

TOOL_SERVER = r"""
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ITEM = json.dumps({"items": [{"id": i, "name": f"item {i}", "price": i * 1.25} for i in range(24)]}).encode()

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    def log_message(self, *args): pass
    def _send(self, body):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self): self._send(ITEM)
    def do_POST(self): self._send(self.rfile.read(int(self.headers["Content-Length"])))

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


@contextmanager
def child_server(argv: list[str], parse: Callable[[str], str]) -> Iterator[str]:
    """A server in a child process; ``parse`` turns its first line of output into a base URL."""
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        yield parse(process.stdout.readline())
    finally:
        process.terminate()
        process.wait(10)


def tool_requests(tracer: Tracer, base: str, n: int) -> int:
    note = {"note": "x" * 900, "tags": ["bench", "capture"]}
    with httpx.Client() as client:
        for i in range(n):
            with tracer.start_as_current_span("tool"):
                if i % 2:
                    client.post(f"{base}/notes", json=note).raise_for_status()
                else:
                    client.get(f"{base}/items", params={"page": i}).raise_for_status()
    return n


def model_requests(tracer: Tracer, base: str, n: int) -> int:
    history: list[Any] = [{"role": "system", "content": "You are a weather assistant. " * 4}]
    for turn in range(11):
        role = "user" if turn % 2 == 0 else "assistant"
        history.append({"role": role, "content": f"Turn {turn}: the weather in Lisbon is mild today. " * 4})
    with openai.OpenAI(base_url=base, api_key="sk-bench-0123456789", max_retries=0) as client:
        for i in range(n):
            with tracer.start_as_current_span("llm"):
                messages = [*history, {"role": "user", "content": f"Question {i}: and tomorrow?"}]
                client.chat.completions.create(model="gpt-bench", messages=messages)
    return n


@dataclass
class Sample:
    workload: str
    mode: str
    requests: int
    loop_ns: int
    cpu_ns: int  # process CPU over the loop and the flush: the writer thread's included
    thread_ns: int  # CPU of the caller's thread alone over the loop: what the agent pays
    flush_ns: int
    file_bytes: int
    exchanges: int
    attribute_bytes: int  # JSON of the captured exchanges' attributes, as stored


@contextmanager
def eager_attributes(enabled: bool) -> Iterator[None]:
    """The diagnostic variant: attributes worked out on the caller's thread, before the span is queued."""
    from otel_blackbox._recorder import capture

    original = capture.HttpCapture._queue

    def queue_computed(self: capture.HttpCapture, span: ReadableSpan) -> None:
        span.attributes  # noqa: B018 - computing them now is the point
        original(self, span)

    if enabled:
        capture.HttpCapture._queue = queue_computed  # type: ignore[method-assign]
    try:
        yield
    finally:
        capture.HttpCapture._queue = original  # type: ignore[method-assign]


def run_once(workload: str, mode: str, base: str, n: int, folder: Path) -> Sample:
    db = folder / f"{workload}-{mode.replace(', ', '-')}-{time.perf_counter_ns()}.db"
    config = BlackboxConfig(db_path=db, capture_http=mode != "off", retention=0, max_db_mb=0)
    processor = BlackboxSpanProcessor(config=config)
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("bench")
    run = tool_requests if workload == "tool" else model_requests
    with eager_attributes(mode == "on, eager"):
        run(tracer, base, 3)  # connections opened, code paths warm, before timing
        assert processor.force_flush(60_000)
        cpu0, t0, thread0 = time.process_time_ns(), time.perf_counter_ns(), time.thread_time_ns()
        requests = run(tracer, base, n)
        t1, thread1 = time.perf_counter_ns(), time.thread_time_ns()
        assert processor.force_flush(60_000)
        t2, cpu1 = time.perf_counter_ns(), time.process_time_ns()
    provider.shutdown()
    conn = sqlite3.connect(db)
    try:
        exchanges, attribute_bytes = conn.execute(
            "SELECT count(*), coalesce(sum(length(CAST(attributes AS BLOB))), 0) FROM spans "
            "WHERE name = 'blackbox.http'"
        ).fetchone()
    finally:
        conn.close()
    expected = 0 if mode == "off" else requests + 3
    assert exchanges == expected, f"{workload} {mode}: {exchanges} exchanges captured, expected {expected}"
    return Sample(workload, mode, requests, t1 - t0, cpu1 - cpu0, thread1 - thread0, t2 - t1,
                  db.stat().st_size, exchanges, attribute_bytes)  # fmt: skip


def caller_share(folder: Path, n: int) -> list[dict[str, Any]]:
    """µs per exchange on the caller's thread: begin() and the watch, the hook's socket work left out."""
    sys.path.insert(0, str(ROOT / "examples"))
    import fake_llm

    from otel_blackbox._playback.http.exchange import HttpRequest, HttpResponse

    chat = {"model": "gpt-bench", "messages": [{"role": "user", "content": "Turn: mild weather. " * 40}] * 12}
    reply = fake_llm.openai_completion(chat, fake_llm.openai_reply(chat))
    json_type = [("content-type", "application/json")]
    base = "http://127.0.0.1:1"
    exchanges = {
        "tool": (HttpRequest("POST", f"{base}/notes", [], b'{"note": "%s"}' % (b"x" * 900)),
                 HttpResponse(200, json_type, b'{"saved": true}' * 60)),
        "model": (HttpRequest("POST", f"{base}/v1/chat/completions", [], json.dumps(chat).encode()),
                  HttpResponse(200, json_type, json.dumps(reply).encode())),
    }  # fmt: skip
    rows = []
    processor = BlackboxSpanProcessor(config=BlackboxConfig(db_path=folder / "share.db", capture_http=True))
    capture = processor._capture
    assert capture is not None
    for kind, (request, response) in exchanges.items():
        for eager in (False, True):
            with eager_attributes(eager):
                t0 = time.perf_counter_ns()
                for _ in range(n):
                    watch = capture.begin()
                    assert watch is not None
                    watch(request, response, served=False)
                elapsed = time.perf_counter_ns() - t0
            assert processor.force_flush(60_000)
            mode = "on, eager" if eager else "on"
            rows.append({"exchange": kind, "mode": mode, "caller_us": round(elapsed / n / 1000, 2)})
    processor.shutdown()
    return rows


def median(samples: list[Sample], field: str) -> float:
    return float(statistics.median(getattr(s, field) for s in samples))


def report(samples: list[Sample]) -> list[dict[str, Any]]:
    rows = []
    for workload in ("tool", "model"):
        off = [s for s in samples if s.workload == workload and s.mode == "off"]
        base_us = median(off, "loop_ns") / off[0].requests / 1000
        base_thread_us = median(off, "thread_ns") / off[0].requests / 1000
        for mode in MODES:
            mine = [s for s in samples if s.workload == workload and s.mode == mode]
            n = mine[0].requests
            loop_us = median(mine, "loop_ns") / n / 1000
            captured = mine[0].exchanges or 1
            grown = (median(mine, "file_bytes") - median(off, "file_bytes")) / captured
            rows.append({
                "workload": workload, "mode": mode, "requests": n,
                "loop_us_per_request": round(loop_us, 1),
                "added_us": round(loop_us - base_us, 1),
                "ratio": round(loop_us / base_us, 3),
                "cpu_us_per_request": round(median(mine, "cpu_ns") / n / 1000, 1),
                "caller_cpu_us_per_request": round(median(mine, "thread_ns") / n / 1000, 1),
                "caller_cpu_added_us": round(median(mine, "thread_ns") / n / 1000 - base_thread_us, 1),
                "flush_ms": round(median(mine, "flush_ns") / 1e6, 1),
                "file_bytes_per_exchange": round(grown) if mode != "off" else None,
                "attribute_bytes_per_exchange": round(median(mine, "attribute_bytes") / captured)
                if mode != "off" else None,
            })  # fmt: skip
    return rows


def print_table(rows: list[dict[str, Any]]) -> None:
    print("| workload | mode | µs/request | added | ratio | caller CPU µs/request | added "
          "| process CPU µs/request | flush ms | file B/exchange | attributes B/exchange |")  # fmt: skip
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        off = r["mode"] == "off"
        cells = [
            f"{r['workload']} ({r['requests']})",
            r["mode"],
            f"{r['loop_us_per_request']:.1f}",
            "" if off else f"{r['added_us']:+.1f}",
            "" if off else f"{r['ratio']:.3f}",
            f"{r['caller_cpu_us_per_request']:.1f}",
            "" if off else f"{r['caller_cpu_added_us']:+.1f}",
            f"{r['cpu_us_per_request']:.1f}",
            f"{r['flush_ms']:.1f}",
            "" if off else f"{r['file_bytes_per_exchange']:,}",
            "" if off else f"{r['attribute_bytes_per_exchange']:,}",
        ]
        print("| " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--requests", type=int, default=2000, help="tool requests a run (model calls: a quarter)"
    )
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path, help="write the samples and the table here")
    args = parser.parse_args()

    tool_argv = [sys.executable, "-c", TOOL_SERVER]
    fake_argv = [sys.executable, str(ROOT / "examples" / "fake_llm.py")]
    samples: list[Sample] = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        child_server(tool_argv, lambda line: f"http://127.0.0.1:{int(line)}") as tool_base,
        child_server(fake_argv, lambda line: line.split()[-1]) as model_base,
    ):
        for repeat in range(args.repeat):
            order = MODES[repeat % 3 :] + MODES[: repeat % 3]
            for mode in order:
                samples.append(run_once("tool", mode, tool_base, args.requests, Path(tmp)))
                samples.append(run_once("model", mode, model_base, max(args.requests // 4, 1), Path(tmp)))
            print(f"repeat {repeat + 1}/{args.repeat} done", file=sys.stderr, flush=True)
    rows = report(samples)
    with tempfile.TemporaryDirectory() as tmp:
        share = caller_share(Path(tmp), args.requests)
    versions = {p: metadata.version(p) for p in ("opentelemetry-sdk", "httpx", "openai")}
    print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, {versions}, median of {args.repeat}")
    print_table(rows)
    print("\n| exchange | mode | caller's thread µs/exchange |\n| --- | --- | ---: |")
    for r in share:
        print(f"| {r['exchange']} | {r['mode']} | {r['caller_us']:.2f} |")
    if args.json:
        dump = {"rows": rows, "caller_share": share, "samples": [asdict(s) for s in samples]}
        args.json.write_text(json.dumps(dump, indent=2))


if __name__ == "__main__":
    main()
