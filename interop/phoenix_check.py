"""`make interop`: otel-blackbox against a real Phoenix server on 127.0.0.1.

Starts `phoenix serve` (arize-phoenix from PyPI, in its own virtual environment), records a run of
the example agent, then checks both ways into Phoenix:

1. `otel-blackbox push` over OTLP/HTTP: Phoenix returns the same span ids, kinds and token counts;
2. the OpenInference JSONL export through Phoenix's client (`log_spans`), into another project;
3. the same JSONL flattened with `pandas.json_normalize`, through `log_spans_dataframe`;

then back out of Phoenix with `otel-blackbox import --from-phoenix` (interop/phoenix_import.py):
three traces pushed into a project of their own (the agent, the agent with a failing tool, and a
synthetic trace of every attribute type, events and an error), imported into new databases.

Exits 0 when every check holds, 1 otherwise; prints one line per check.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pandas
import phoenix_import
from phoenix.client import Client  # type: ignore[import-not-found]

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_phoenix(workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {**os.environ, "PHOENIX_WORKING_DIR": str(workdir), "PHOENIX_HOST": "127.0.0.1",
           "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(free_port())}  # fmt: skip
    log = open(workdir / "phoenix.log", "wb")  # noqa: SIM115 (closed with the process)
    server = subprocess.Popen([str(BIN / "phoenix"), "serve"], env=env, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=1) as answer:
                if answer.status == 200:
                    return server, url
        except OSError:
            time.sleep(0.5)
    server.kill()
    raise SystemExit(f"phoenix did not start: see {workdir / 'phoenix.log'}")


def check(name: str, ok: bool, detail: str = "") -> bool:
    print(f"{'PASS' if ok else 'FAIL'}  {name}" + (f": {detail}" if detail and not ok else ""))
    return ok


def stored(db: Path) -> dict[str, dict[str, Any]]:
    with closing(sqlite3.connect(db)) as conn:
        rows = conn.execute("SELECT span_id, oi_span_kind, total_tokens FROM spans").fetchall()
    return {r[0]: {"kind": r[1], "tokens": r[2]} for r in rows}


def from_phoenix(client: Any, project: str, expected: int = 1) -> dict[str, dict[str, Any]]:
    """The spans Phoenix holds in ``project``, once it holds ``expected`` (ingestion is asynchronous)."""
    spans: list[dict[str, Any]] = []
    for _ in range(60):
        try:
            spans = client.spans.get_spans(project_identifier=project, limit=1000)
        except httpx.HTTPStatusError as exc:  # 404 until the first span creates the project
            if exc.response.status_code != 404:
                raise
        if len(spans) >= expected:
            break
        time.sleep(0.5)
    return {
        s["context"]["span_id"]: {
            "kind": s["span_kind"],
            "tokens": s["attributes"].get("llm.token_count.total"),
        }
        for s in spans
    }


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="otel-blackbox-interop-") as tmp:
        work = Path(tmp)
        server, url = start_phoenix(work)
        try:
            client = Client(base_url=url)
            # Two runs: Phoenix refuses a span id it already holds, even in another project.
            pushed, exported, framed = work / "pushed.db", work / "exported.db", work / "framed.db"
            for db in (pushed, exported, framed):
                agent = [sys.executable, str(ROOT / "examples" / "weather_agent.py"), "--db", str(db)]
                subprocess.run(agent, check=True, stdout=subprocess.DEVNULL)

            cli = [str(BIN / "otel-blackbox"), "--db", str(pushed)]
            subprocess.run([*cli, "push", "--endpoint", f"{url}/v1/traces"], check=True)
            got = from_phoenix(client, "default", len(stored(pushed)))
            ok = check("push: same span ids, kinds and token counts", got == stored(pushed), f"{got}")

            jsonl = work / "spans.jsonl"
            subprocess.run(
                [str(BIN / "otel-blackbox"), "--db", str(exported), "export", "-o", str(jsonl)], check=True
            )
            spans = [json.loads(line) for line in jsonl.read_text().splitlines()]
            client.projects.create(name="jsonl-import")
            client.spans.log_spans(project_identifier="jsonl-import", spans=spans)
            got = from_phoenix(client, "jsonl-import", len(spans))
            ok &= check("JSONL export through log_spans: the same spans", got == stored(exported), f"{got}")

            # The same JSONL flattened by pandas: Phoenix's own column names (context.span_id, attributes.*).
            subprocess.run(
                [str(BIN / "otel-blackbox"), "--db", str(framed), "export", "-o", str(jsonl)], check=True
            )
            frame = pandas.json_normalize([json.loads(line) for line in jsonl.read_text().splitlines()])
            client.projects.create(name="dataframe-import")
            client.spans.log_spans_dataframe(project_identifier="dataframe-import", spans_dataframe=frame)
            got = from_phoenix(client, "dataframe-import", len(frame))
            ok &= check(
                "JSONL as a pandas frame through log_spans_dataframe", got == stored(framed), f"{got}"
            )

            ok &= phoenix_import.run_checks(work, url, check, lambda p, n: from_phoenix(client, p, n))
        finally:
            server.terminate()
            server.wait(timeout=30)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
