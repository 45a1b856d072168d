"""`make interop`, the way back: `otel-blackbox import --from-phoenix` against the real Phoenix server.

Three traces are recorded into one database (the example agent, the agent with a failing tool, and
a synthetic trace with every attribute type, events, JSON-string attributes and an error status),
pushed into a Phoenix project of their own, then imported into new databases with the real CLI:

- every span comes back: ids, parents, names, OpenInference kinds, statuses and messages, token
  counts, model, session and every attribute; times and events to the microsecond Phoenix keeps;
- a pull of two spans a page (``phoenix_documents`` and the ``Importer`` the command uses) takes
  several pages and stores the same spans;
- ``--trace`` pulls that trace only, ``--since`` only what started since;
- a second import adds nothing;
- the cassette of each pulled trace has the head of the original's, and the built-in rerun of a
  pulled incident completes against the fake provider;
- a wrong project, a closed port, a URL that is not Phoenix's API, an unknown trace and a bad trace
  id are each one line on stderr, exit 2, and store nothing.

Phoenix keeps neither the OpenTelemetry span kind, links, the resource nor the scope: those are not
compared (docs of ``otel_blackbox._pull.phoenix_spans``).
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import SpanKind, Status, StatusCode

from otel_blackbox import BlackboxConfig, BlackboxSpanProcessor
from otel_blackbox._pull import phoenix_documents
from otel_blackbox._store.ingest import Importer

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
PROJECT = "import-source"
# Compared exactly: every column a recorded span and a pulled one share.
EXACT = ("trace_id", "parent_span_id", "name", "oi_span_kind", "status", "status_message", "session_id",
         "user_id", "model", "prompt_tokens", "completion_tokens", "total_tokens", "tool_name")  # fmt: skip
TIME_SLACK_NS = 1000  # Phoenix keeps microseconds, rounded through a float on the way in

Check = Callable[[str, bool, str], bool]


def rich_trace(db: Path) -> None:
    """A trace of every attribute type Phoenix takes, events, JSON-string attributes and an error."""
    resource = Resource.create({"service.name": "rich", "openinference.project.name": PROJECT})
    provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    provider.add_span_processor(BlackboxSpanProcessor(config=BlackboxConfig(db_path=db)))
    tracer = provider.get_tracer("interop", "1.0")
    root_attributes = {
        "openinference.span.kind": "CHAIN", "tag.tags": ["a", "b"], "ints": [1, 2, 3], "ratio": 0.25,
        "flag": True, "big": 2**62, "unicode": "h\u00e9llo \u2713", "session.id": "rich-session",
        "metadata": json.dumps({"user": "u1", "n": 2}),
        "llm.prompt_template.variables": json.dumps({"city": "Paris"}),
    }  # fmt: skip
    with tracer.start_as_current_span("root", kind=SpanKind.SERVER, attributes=root_attributes) as root:
        root.add_event("checkpoint", {"step": 3, "ok": False, "score": 1.5, "names": ["x", "y"]})
        tool_attributes = {"openinference.span.kind": "TOOL", "tool.name": "lookup",
                           "tool.parameters": json.dumps({"q": [{"a": 1}, {"a": 2}], "s": "x"})}  # fmt: skip
        with tracer.start_as_current_span("lookup", attributes=tool_attributes) as tool:
            try:
                raise ValueError("boom")
            except ValueError as exc:
                tool.record_exception(exc)
                tool.set_status(Status(StatusCode.ERROR, "boom"))
        with tracer.start_as_current_span("plain", kind=SpanKind.CLIENT, attributes={"metadata": "not json"}):
            pass
    provider.shutdown()


def rows(db: Path) -> dict[str, dict[str, Any]]:
    with closing(sqlite3.connect(db)) as conn:
        conn.row_factory = sqlite3.Row
        found = {r["span_id"]: dict(r) for r in conn.execute("SELECT * FROM spans")}
    for row in found.values():
        for key in ("attributes", "events"):
            row[key] = json.loads(row[key] or "null")
    return found


def runs_count(db: Path) -> int:
    with closing(sqlite3.connect(db)) as conn:
        return int(conn.execute("SELECT count(*) FROM recorders").fetchone()[0])


def differences(want: dict[str, dict[str, Any]], got: dict[str, dict[str, Any]]) -> list[str]:
    """What differs between the recorded spans and the pulled ones, first differences first."""
    if set(want) != set(got):
        return [f"span ids: missing {sorted(set(want) - set(got))}, extra {sorted(set(got) - set(want))}"]
    found = []
    for span_id, w in want.items():
        g = got[span_id]
        found += [f"{span_id}.{k}: {w[k]!r} != {g[k]!r}" for k in EXACT if w[k] != g[k]]
        if w["attributes"] != g["attributes"]:
            keys = sorted(k for k in set(w["attributes"]) | set(g["attributes"])
                          if w["attributes"].get(k) != g["attributes"].get(k))  # fmt: skip
            found.append(f"{span_id}.attributes differ at {keys[:5]}")
        for k in ("start_ns", "end_ns"):
            if abs(w[k] - g[k]) > TIME_SLACK_NS:
                found.append(f"{span_id}.{k}: {w[k]} and {g[k]} are more than 1 µs apart")
        w_events = [(e["name"], e["attributes"]) for e in w["events"]]
        g_events = [(e["name"], e["attributes"]) for e in g["events"]]
        times = zip(w["events"], g["events"], strict=False)
        if w_events != g_events or any(
            abs(a["timestamp_ns"] - b["timestamp_ns"]) > TIME_SLACK_NS for a, b in times
        ):
            found.append(f"{span_id}.events: {w['events']!r} != {g['events']!r}")
    return found


def cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_BLACKBOX", "PHOENIX_API_KEY"))}
    argv = [str(BIN / "otel-blackbox"), "--db", str(db), *args]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)


def one_line_exit_2(result: subprocess.CompletedProcess[str]) -> str:
    """'' when the command failed as bad input should: exit 2, one line on stderr, nothing on stdout."""
    lines = result.stderr.splitlines()
    if result.returncode == 2 and len(lines) == 1 and not result.stdout and "Traceback" not in result.stderr:
        return ""
    return f"exit {result.returncode}, stdout {result.stdout!r}, stderr {result.stderr!r}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def record(work: Path) -> Path:
    """The source database: the agent, the agent with a failing tool, the synthetic trace."""
    source = work / "source.db"
    env = {**os.environ, "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={PROJECT}"}
    for extra in ([], ["--fail-tool"]):
        agent = [sys.executable, str(ROOT / "examples" / "weather_agent.py"), "--db", str(source), *extra]
        subprocess.run(agent, check=True, stdout=subprocess.DEVNULL, env=env)
    rich_trace(source)
    return source


def traces_by_start(spans: dict[str, dict[str, Any]]) -> list[str]:
    starts: dict[str, int] = {}
    for span in spans.values():
        starts[span["trace_id"]] = min(starts.get(span["trace_id"], span["start_ns"]), span["start_ns"])
    return sorted(starts, key=starts.__getitem__)


def run_checks(work: Path, url: str, check: Check, wait: Callable[[str, int], object]) -> bool:
    source = record(work)
    want = rows(source)
    push = cli(source, "push", "--endpoint", f"{url}/v1/traces")
    if not check("import: the source spans pushed into Phoenix", push.returncode == 0, push.stderr):
        return False
    wait(PROJECT, len(want))
    traces = traces_by_start(want)

    pulled = work / "pulled.db"
    started = time.perf_counter()
    first = cli(pulled, "import", "--from-phoenix", url, "--project", PROJECT)
    took = time.perf_counter() - started
    problems = [first.stderr] if first.returncode else differences(want, rows(pulled))
    ok = check(
        f"import --from-phoenix: the same {len(want)} spans of {len(traces)} traces "
        f"(ids, parents, names, kinds, statuses, tokens, attributes, times, events; {took:.2f}s)",
        not problems,
        "; ".join(problems[:5]),
    )

    again = cli(pulled, "import", "--from-phoenix", url, "--project", PROJECT)
    same = again.returncode == 0 and "nothing new" in again.stdout and len(rows(pulled)) == len(want)
    ok &= check("import --from-phoenix again: nothing added", same and runs_count(pulled) == 1, again.stdout)

    paged, pages = work / "paged.db", []
    importer = Importer(BlackboxConfig(db_path=paged), f"import phoenix {url}")
    try:

        def counted() -> Any:
            for page, document in phoenix_documents(url, project=PROJECT, page_size=2):
                pages.append(page)
                yield page, document

        importer.store(f"phoenix {url}", counted(), unit="page")
    finally:
        importer.close()
    expected_pages = list(range(1, (len(want) + 1) // 2 + 1))
    problems = differences(want, rows(paged))
    ok &= check(
        f"two spans a page: {len(pages)} pages, the same spans",
        pages == expected_pages and not problems,
        f"pages {pages}, want {expected_pages}; " + "; ".join(problems[:3]),
    )

    failed_trace = traces[1]  # the agent whose tool failed
    one = work / "one-trace.db"
    result = cli(one, "import", "--from-phoenix", url, "--project", PROJECT, "--trace", failed_trace)
    want_one = {k: v for k, v in want.items() if v["trace_id"] == failed_trace}
    problems = [result.stderr] if result.returncode else differences(want_one, rows(one))
    ok &= check(f"--trace: that trace's {len(want_one)} spans only", not problems, "; ".join(problems[:3]))

    # --since: the CLI's 1h takes everything just recorded; from the synthetic root's start (as
    # Phoenix holds it), that trace only.
    recent = work / "recent.db"
    result = cli(recent, "import", "--from-phoenix", url, "--project", PROJECT, "--since", "1h")
    got_recent = rows(recent) if result.returncode == 0 else {}
    rich_root = next(
        v for v in rows(pulled).values() if v["trace_id"] == traces[2] and not v["parent_span_id"]
    )
    since = [p for _, doc in phoenix_documents(url, project=PROJECT, since_ns=rich_root["start_ns"])
             for p in doc["resourceSpans"][0]["scopeSpans"][0]["spans"]]  # fmt: skip
    want_since = {k for k, v in want.items() if v["trace_id"] == traces[2]}
    ok &= check(
        "--since: 1h takes all, the last trace's start takes that trace only",
        set(got_recent) == set(want) and {s["spanId"] for s in since} == want_since,
        f"1h: {len(got_recent)} of {len(want)} ({result.stderr.strip()}); since: {len(since)} spans",
    )

    ok &= cassettes_and_rerun(work, source, pulled, traces, check)
    ok &= bad_input(work, url, check)
    return ok


def cassettes_and_rerun(work: Path, source: Path, pulled: Path, traces: list[str], check: Check) -> bool:
    heads = []
    for trace in traces:
        pair = []
        for db in (source, pulled):
            out = work / f"{db.stem}-{trace[:8]}.json"
            result = cli(db, "cassette", trace, "-o", str(out))
            pair.append(json.loads(out.read_text()).get("head") if result.returncode == 0 else result.stderr)
        heads.append(pair)
    ok = check(
        "the cassette of each pulled trace has the original's head", all(a == b for a, b in heads), f"{heads}"
    )

    port = free_port()
    fake = subprocess.Popen([sys.executable, str(ROOT / "examples" / "fake_llm.py"), "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        incident = work / f"pulled-{traces[1][:8]}.json"
        env = {**os.environ, "OPENAI_API_KEY": "sk-fake-not-a-real-key"}
        argv = [str(BIN / "otel-blackbox"), "rerun", str(incident), "--base-url", f"http://127.0.0.1:{port}/v1",
                "-o", str(work / "child.json")]  # fmt: skip
        rerun = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    finally:
        fake.terminate()
        fake.wait(timeout=10)
    return ok & check(
        "the built-in rerun of a pulled incident completes", rerun.returncode == 0, rerun.stderr
    )


def bad_input(work: Path, url: str, check: Check) -> bool:
    closed = f"http://127.0.0.1:{free_port()}"
    cases = {
        "a wrong project": ["--from-phoenix", url, "--project", "no-such-project"],
        "a closed port": ["--from-phoenix", closed],
        "a URL that is not the API": ["--from-phoenix", f"{url}/not-phoenix"],
        "an unknown trace": ["--from-phoenix", url, "--project", PROJECT, "--trace", "0" * 32],
        "a bad trace id": ["--from-phoenix", url, "--trace", "not-an-id"],
    }
    db = work / "bad.db"
    failures = []
    for name, args in cases.items():
        problem = one_line_exit_2(cli(db, "import", *args))
        if not problem and db.exists() and runs_count(db):
            problem = "a run was stored"
        if problem:
            failures.append(f"{name}: {problem}")
    return check(
        f"bad input ({', '.join(cases)}): one line, exit 2, nothing stored", not failures, "; ".join(failures)
    )
