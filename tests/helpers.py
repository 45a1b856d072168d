"""Helpers the tests share: a recorder on a temp database, the CLI run as a user runs it, an OTLP receiver."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace import SpanLimits, TracerProvider

from otel_blackbox import BlackboxConfig, BlackboxSpanProcessor
from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.model import Cassette
from otel_blackbox._cassette.verify import verify_cassette
from otel_blackbox._store.contents import ContentReader

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
# The agents and helper programs the tests run as processes of their own (on sys.path: conftest.py).
PROGRAMS = TESTS / "programs"
# The HTML report and the viewer are tested in a real headless Chromium: Debian's package.
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
EXAMPLES = ROOT / "examples"
# The Blackbox trace format v2 test vectors, copied verbatim from shared/interop/blackbox-v2.
VECTORS_DIR = TESTS / "vectors" / "blackbox-v2"
VECTOR_NAMES = ("success-tool-use", "error-unknown-tool", "fork-parent", "fork-child")
# The stand-in agent process of the reliability tests.
STRESS_AGENT = str(PROGRAMS / "stress_agent.py")

# `make stress` sets BLACKBOX_STRESS=1: the reliability tests run their long versions (more
# processes, more kills, more fuzzing examples) and their figures go into docs/reliability.md.
STRESS = os.environ.get("BLACKBOX_STRESS", "") == "1"
FIGURES: list[tuple[str, str, str]] = []  # (test, figure, value): printed at the end of the run


def sized(ci: int, stress: int) -> int:
    """The CI size of a reliability test, or its long version under `make stress`."""
    return stress if STRESS else ci


def fuzz_examples(ci: int) -> int:
    """Hypothesis examples for a fuzz test: twenty times more under `make stress`."""
    return sized(ci, ci * 20)


def figure(test: str, name: str, value: object) -> None:
    """A measured figure worth reporting (spans/s, peak RSS, kills survived...)."""
    FIGURES.append((test, name, str(value)))


def vector_path(name: str) -> Path:
    return VECTORS_DIR / f"{name}.v2.json"


def vector(name: str) -> Cassette:
    return load_cassette(vector_path(name))


class Recorder:
    """A TracerProvider wired to a BlackboxSpanProcessor on a temp database."""

    def __init__(self, db_path: Path, *, span_limits: SpanLimits | None = None, **config: Any) -> None:
        self.db_path = db_path
        self.processor = BlackboxSpanProcessor(config=BlackboxConfig(db_path=db_path, **config))
        self.provider = TracerProvider(shutdown_on_exit=False, span_limits=span_limits)
        self.provider.add_span_processor(self.processor)
        self.tracer = self.provider.get_tracer("tests")

    def rows(self, query: str = "SELECT * FROM spans ORDER BY start_ns", *params: Any) -> list[Any]:
        """The rows of ``query`` (sqlite3.Row), attributes and events stored apart (_store.contents)
        read back (a dict then)."""
        conn = sqlite3.connect(self.db_path)
        conn.row_factory = sqlite3.Row
        try:
            return _with_contents(conn, conn.execute(query, params).fetchall())
        finally:
            conn.close()

    def flush(self) -> None:
        assert self.processor.force_flush(10_000)


def run_cli(*args: str, db: Path | None = None, check: bool = False) -> subprocess.CompletedProcess[str]:
    """The real console entry point, in a subprocess, as a user runs it."""
    argv = [sys.executable, "-m", "otel_blackbox.cli"]
    if db is not None:
        argv += ["--db", str(db)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_BLACKBOX")}
    result = subprocess.run([*argv, *args], capture_output=True, text=True, env=env, timeout=60)
    if check and result.returncode != 0:
        raise AssertionError(f"exit {result.returncode}: {result.stderr}")
    return result


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    request: ExportTraceServiceRequest
    status: int
    body: bytes  # as it arrived, for tests that search the bytes themselves


class Receiver:
    """OTLP/HTTP on 127.0.0.1: POST /v1/traces with a protobuf ExportTraceServiceRequest.

    Answers each request with the next status of ``statuses`` (then 200): 200 carries an empty
    ExportTraceServiceResponse, as the spec says.
    """

    def __init__(self, statuses: list[int] | None = None) -> None:
        self.statuses = list(statuses or [])
        self.received: list[Received] = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                headers = {k.lower(): v for k, v in self.headers.items()}
                receiver.received.append(Received(self.path, headers, request, status, body))
                reply = ExportTraceServiceResponse().SerializeToString() if status == 200 else b"rejected"
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf" if status == 200 else "text/plain")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def accepted(self) -> list[ExportTraceServiceRequest]:
        return [r.request for r in self.received if r.status == 200]

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def open_page(browser: Any, url: str, ready: str) -> tuple[Any, dict[str, list[str]]]:
    """A new page at url, once `ready` (a selector) is there, and what it did: console errors and
    page errors, requests beyond file: and data: (a report fetches nothing), dialogs (dismissed)."""
    seen: dict[str, list[str]] = {"errors": [], "requests": [], "dialogs": []}
    page = browser.new_page()
    page.on("console", lambda m: seen["errors"].append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: seen["errors"].append(str(e)))
    page.on(
        "request",
        lambda r: seen["requests"].append(r.url) if not r.url.startswith(("file:", "data:")) else None,
    )

    def on_dialog(dialog: Any) -> None:
        seen["dialogs"].append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.goto(url)
    page.wait_for_selector(ready)
    return page, seen


@contextlib.contextmanager
def blocked_network() -> Iterator[list[Any]]:
    """Every attempt to open a connection is counted and refused."""
    attempts: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> None:
        attempts.append(args)
        raise OSError("network blocked by the test")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket.socket, "connect", refuse)
        patch.setattr(socket, "create_connection", refuse)
        yield attempts


# For tests under opentelemetry-instrument: it loads every installed instrumentor, and the framework
# ones (installed for tests/integration/test_frameworks.py) import their frameworks at start-up, 4.5 s against
# 1.8 s a process here. None of them is what those tests are about.
FRAMEWORK_INSTRUMENTORS_OFF = {
    "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "openai_agents,langchain,google_genai"
}


Answer = Callable[[str, str, bytes], tuple[int, Any]]
_API = TypeVar("_API", bound="LoopbackAPI")


@dataclass(frozen=True)
class Raw:
    """A response body sent as it is (an SSE stream, a provider's JSON written out by hand)."""

    content_type: str
    body: bytes


class LoopbackAPI:
    """A small JSON API on 127.0.0.1, in a thread, for a program's tool to call: ``answer(method,
    path, body)`` gives (status, JSON payload, or a ``Raw`` body); every request is kept in
    ``received``."""

    def __init__(self, answer: Answer) -> None:
        self.received: list[tuple[str, str, bytes]] = []  # (method, path, body) of every request
        api = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _handle(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                api.received.append((self.command, self.path, body))
                status, payload = answer(self.command, self.path, body)
                raw = (
                    payload
                    if isinstance(payload, Raw)
                    else Raw("application/json", json.dumps(payload).encode())
                )
                data = raw.body
                self.send_response(status)
                self.send_header("Content-Type", raw.content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = _handle

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self: _API) -> _API:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Nothing listens any more (stopping again is harmless)."""
        self.server.shutdown()
        self.server.server_close()


class CannedProvider(LoopbackAPI):
    """A provider stand-in on 127.0.0.1 that answers each request with the next of ``bodies`` (a
    JSON object, or a ``Raw`` SSE stream), as the real API would have answered; ``requests`` holds the
    JSON bodies it was sent. ``url`` is the base URL to give an SDK (``/v1`` for OpenAI's)."""

    def __init__(self, bodies: list[Any]) -> None:
        self.bodies = list(bodies)
        self.requests: list[Any] = []

        def answer(method: str, path: str, body: bytes) -> tuple[int, Any]:
            self.requests.append(json.loads(body or b"null"))
            if not self.bodies:
                return 500, {"error": {"message": "no canned response left", "type": "server_error"}}
            return 200, self.bodies.pop(0)

        super().__init__(answer)


# The demo's refund incident: the OpenAI Agents SDK hands off to a refund agent whose refund_order
# rejects the sloppy model's "12.OO" (examples/handoff_agent.py, recorded by the processor alone).
REFUND_QUESTION = "Look up my order Alpha and refund 12.00 on it, both please."
REFUND_STUB = 'refund_order="refunded 12.00 on order Alpha"'


@dataclass(frozen=True)
class RefundRun:
    db: Path
    ledger: Path  # one line per refund that went through: empty after the incident
    run_id: str


def record_refund_incident(
    folder: Path,
    openai_base_url: str,
    model: str = "sloppy",
    *,
    lookup_down: bool = False,
    fails: bool = True,
) -> RefundRun:
    """Run the refund agent on ``model`` against the fake provider: by default it fails (no refund
    went through); ``fails=False`` expects a refund. ``lookup_down``: lookup_order raises."""
    folder.mkdir(parents=True, exist_ok=True)
    db, ledger = folder / "blackbox.db", folder / "ledger.txt"
    argv = [sys.executable, str(EXAMPLES / "handoff_agent.py"), "--question", REFUND_QUESTION]
    argv += ["--ledger", str(ledger), "--base-url", openai_base_url, "--db", str(db), "--model", model]
    argv += ["--require-refund", *(["--lookup-down"] if lookup_down else [])]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    if fails:
        assert done.returncode == 1 and "no refund went through" in done.stderr, done.stderr
    else:
        assert done.returncode == 0, done.stderr
    (recorded,) = json.loads(run_cli("runs", "--json", db=db, check=True).stdout)
    return RefundRun(db, ledger, recorded["run_id"])


def refund_incident_cassette(folder: Path, openai_base_url: str) -> tuple[RefundRun, Path]:
    """The refund incident recorded by the processor alone (the sloppy model) and made a cassette,
    ``folder/incident.json``, as the demo does."""
    recorded = record_refund_incident(folder, openai_base_url)
    path = folder / "incident.json"
    run_cli("cassette", "--run", recorded.run_id, "-o", str(path), db=recorded.db, check=True)
    return recorded, path


def rerun_imported_run(
    db: Path, run_id: str, folder: Path, provider: str, base_url: str
) -> tuple[Path, Path, list[dict[str, Any]]]:
    """An imported run's cassette (``cassette --run``) rerun with the built-in agent on the thorough
    fake model: the incident, the child (checked to verify) and the child's tool results."""
    from fake_llm import THOROUGH_MODEL  # examples/ is on sys.path once conftest.py has run

    incident = folder / "incident.json"
    run_cli("cassette", "--run", run_id, "-o", str(incident), db=db, check=True)
    child = folder / "child.json"
    done = run_cli(
        "rerun", str(incident), "--provider", provider, "--model", THOROUGH_MODEL,
        "--base-url", base_url, "-o", str(child),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rerun = load_cassette(child)
    assert verify_cassette(rerun).passed
    return incident, child, [s.payload for s in rerun.steps if s.type == "tool_result"]


def write_jsonl(path: Path, records: list[Any], tail: str = "") -> Path:
    """A JSON Lines file of ``records`` (``tail``: a last line still being written), folders made."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records) + tail)
    return path


def import_transcript(db: Path, kind: str, *args: str | Path) -> dict[str, Any]:
    """``import --from KIND ARGS... --json`` as a user runs it; its summary."""
    done = run_cli("import", "--from", kind, *map(str, args), "--json", db=db, check=True)
    summary: dict[str, Any] = json.loads(done.stdout)
    return summary


def stored_rows(db: Path) -> list[Any]:
    """Every span row of the database, in start order (none when there is no database), attributes
    and events stored apart (_store.contents) read back."""
    if not db.exists():
        return []
    with closing(sqlite3.connect(db)) as conn:
        conn.row_factory = sqlite3.Row
        return _with_contents(conn, list(conn.execute("SELECT * FROM span_rows ORDER BY start_ns")))


def _with_contents(conn: sqlite3.Connection, rows: list[sqlite3.Row]) -> list[Any]:
    """The rows as they are, but those with attributes or events stored apart: dicts with the text."""
    contents = ContentReader(conn)
    out: list[Any] = []
    for row in rows:
        keys = row.keys()  # a sqlite3.Row: `in` would look at its values
        roots = {c: row[f"{c}_content"] for c in ("attributes", "events") if f"{c}_content" in keys}
        if not any(r is not None for r in roots.values()):
            out.append(row)
            continue
        values = dict(row)
        for column, root in roots.items():
            if root is not None:
                values[column] = contents.text(int(root))
        out.append(values)
    return out
