"""Load on ``otel-blackbox serve``: concurrent exporter processes, spans/s stored, nothing lost.

Run it as a script (it is not a test and asserts nothing about timing)::

    python bench/bench_serve.py [--exporters N] [--spans M] [--batch B] [--repeat R] [--json out.json]

Each of N exporter processes builds M ended SDK spans (pairs of an agent span and an LLM span with
~200 characters of input, as bench_recorder's workload), waits until every process is ready, then
sends them with the OpenTelemetry project's own ``OTLPSpanExporter`` (protobuf, one keep-alive
connection each), B spans a request. The clock runs from the go to the last process's last answer.

Two receivers, alternated in every repeat (the first one rotates), medians of R repeats:

* ``serve``: ``otel-blackbox serve`` on a new database; after the run it is stopped (SIGTERM) and
  the rows are counted: stored must equal sent (a run that lost a span is reported, not counted);
* ``noop``: a do-nothing OTLP/HTTP receiver (the standard library's ThreadingHTTPServer in its own
  process, reading each body and answering an empty ExportTraceServiceResponse): what the
  exporters and HTTP alone cost, for context.

The ratio serve / noop is how much of the exporters' own pace the receiver keeps.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
INPUT_TEXT = (
    "Plan the next step: look up tomorrow's weather in Paris with the weather tool, convert the "
    "temperature to Fahrenheit, then answer the user in one short, friendly sentence citing the source."
)
RECEIVERS = ("serve", "noop")


# -- the exporter process --------------------------------------------------------------------------


def exporter_main(url: str, spans: int, batch: int, tag: str) -> int:
    """Build the spans, say ready, wait for the go (a line on stdin), send them, print the result."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.util.types import AttributeValue

    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource({"service.name": f"bench-{tag}"}), shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("bench.serve", "1.0")
    agent: dict[str, AttributeValue] = {"openinference.span.kind": "AGENT", "input.value": INPUT_TEXT}
    llm: dict[str, AttributeValue] = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "gpt-4o-mini",
        "llm.token_count.prompt": 40,
        "llm.token_count.completion": 12,
    }
    for i in range(spans // 2):
        with (
            tracer.start_as_current_span("agent.run", attributes={**agent, "i": i}),
            tracer.start_as_current_span("llm", attributes=llm),
        ):
            pass
    finished = list(memory.get_finished_spans())
    exporter = OTLPSpanExporter(endpoint=url, timeout=60)
    print("ready", flush=True)
    sys.stdin.readline()
    ok = failed = 0
    for start in range(0, len(finished), batch):
        part = finished[start : start + batch]
        if exporter.export(part) == SpanExportResult.SUCCESS:
            ok += len(part)
        else:
            failed += len(part)
    print(json.dumps({"ok": ok, "failed": failed}), flush=True)
    return 0


# -- the do-nothing receiver -----------------------------------------------------------------------


def noop_main() -> int:
    """OTLP/HTTP that reads each body and answers 200 with an empty response; prints its port."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    reply = ExportTraceServiceResponse().SerializeToString()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"listening on http://127.0.0.1:{server.server_address[1]}/v1/traces", file=sys.stderr, flush=True)
    server.serve_forever()
    return 0


# -- one run ---------------------------------------------------------------------------------------


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}


def _start_receiver(kind: str, db: Path) -> tuple[subprocess.Popen[str], str]:
    if kind == "serve":
        argv = [sys.executable, "-m", "otel_blackbox.cli", "--db", str(db), "serve", "--port", "0"]
    else:
        argv = [sys.executable, __file__, "--noop-receiver"]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=_env())
    assert proc.stderr is not None
    line = proc.stderr.readline()
    if "/v1/traces" not in line:
        proc.kill()
        raise RuntimeError(f"{kind} did not start: {line!r}")
    return proc, line.split(" on ", 1)[1].split()[0]


def run_once(kind: str, args: argparse.Namespace, workdir: Path, index: int) -> dict[str, Any]:
    db = workdir / f"{kind}-{index}.db"
    receiver, url = _start_receiver(kind, db)
    exporters = [
        subprocess.Popen(
            [sys.executable, __file__, "--exporter", url, str(args.spans), str(args.batch), f"{index}-{n}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        for n in range(args.exporters)
    ]
    try:
        for proc in exporters:
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != "ready":
                raise RuntimeError("an exporter did not get ready")
        started = time.perf_counter()
        for proc in exporters:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        results = []
        for proc in exporters:
            assert proc.stdout is not None
            results.append(json.loads(proc.stdout.readline()))
        elapsed = time.perf_counter() - started
        for proc in exporters:
            proc.wait(60)
    finally:
        for proc in exporters:
            if proc.poll() is None:
                proc.kill()
        receiver.send_signal(signal.SIGTERM)
        receiver.wait(120)
        if receiver.stderr is not None:
            receiver.stderr.close()
    sent = args.exporters * (args.spans - args.spans % 2)
    answered = sum(r["ok"] for r in results)
    stored = None
    if kind == "serve":
        conn = sqlite3.connect(db)
        try:
            stored = conn.execute("SELECT count(*) FROM spans").fetchone()[0]
        finally:
            conn.close()
    return {
        "receiver": kind,
        "seconds": round(elapsed, 3),
        "sent": sent,
        "answered_200": answered,
        "stored": stored,
        "spans_per_s": round(sent / elapsed),
        "complete": answered == sent and (stored is None or stored == sent),
    }


# -- the benchmark ---------------------------------------------------------------------------------


def machine_info() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "opentelemetry-sdk": metadata.version("opentelemetry-sdk"),
        "nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "cpu": cpu,
        "loadavg_1m": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
    }


def run_benchmark(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    samples: list[dict[str, Any]] = []
    for repeat in range(args.repeat):
        order = RECEIVERS[repeat % 2 :] + RECEIVERS[: repeat % 2]
        for kind in order:
            sample = run_once(kind, args, workdir, repeat)
            samples.append(sample)
            stored = f", stored {sample['stored']}" if sample["stored"] is not None else ""
            print(
                f"  repeat {repeat + 1} {kind:5}: {sample['spans_per_s']:>8,} spans/s "
                f"({sample['seconds']:.2f} s, sent {sample['sent']}, answered 200 {sample['answered_200']}"
                f"{stored}){'' if sample['complete'] else '  INCOMPLETE: not counted'}",
                flush=True,
            )
    medians: dict[str, float | None] = {}
    for kind in RECEIVERS:
        rates = [s["spans_per_s"] for s in samples if s["receiver"] == kind and s["complete"]]
        medians[kind] = statistics.median(rates) if rates else None
    serve, noop = medians["serve"], medians["noop"]
    ratio = round(serve / noop, 3) if serve and noop else None
    lost_runs = sum(1 for s in samples if s["receiver"] == "serve" and not s["complete"])
    print(
        f"\n{args.exporters} exporters x {args.spans} spans, {args.batch} a request, "
        f"median of {args.repeat}:\n"
        f"  serve  {serve or 0:>10,.0f} spans/s stored (stored == sent in {args.repeat - lost_runs} of "
        f"{args.repeat} runs)\n"
        f"  noop   {noop or 0:>10,.0f} spans/s answered\n"
        f"  ratio  serve / noop = {ratio}"
    )
    return {"samples": samples, "median_spans_per_s": medians, "ratio": ratio, "serve_runs_lost": lost_runs}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--exporter"]:
        return exporter_main(argv[1], int(argv[2]), int(argv[3]), argv[4])
    if argv[:1] == ["--noop-receiver"]:
        return noop_main()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--exporters", type=int, default=4, help="concurrent exporter processes (default 4)")
    parser.add_argument("--spans", type=int, default=10_000, help="spans per exporter (even; default 10000)")
    parser.add_argument("--batch", type=int, default=512, help="spans a request (the SDK's default: 512)")
    parser.add_argument("--repeat", type=int, default=3, help="repeats per receiver; medians (default 3)")
    parser.add_argument("--json", type=Path, help="also write every sample and the summary to this file")
    args = parser.parse_args(argv)
    if args.exporters < 1 or args.spans < 2 or args.batch < 1 or args.repeat < 1:
        parser.error("--exporters, --batch and --repeat must be >= 1, --spans >= 2")
    info = machine_info()
    print(
        f"python {info['python']}, opentelemetry-sdk {info['opentelemetry-sdk']}, sqlite {info['sqlite']}, "
        f"{info['nproc']} CPUs ({info['cpu']}), load {info['loadavg_1m']}",
        flush=True,
    )
    workdir = Path(tempfile.mkdtemp(prefix="bench_serve-"))
    started = time.perf_counter()
    try:
        result = run_benchmark(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result["machine"] = info
    result["args"] = {k: v for k, v in vars(args).items() if k != "json"}
    result["wall_s"] = round(time.perf_counter() - started, 1)
    print(f"\ntotal {result['wall_s']} s, load average at the end {machine_info()['loadavg_1m']}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
