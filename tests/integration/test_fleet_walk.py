"""docs/scaling.md's fleet road, walked end to end with a real agent.

The handoff agent of `make demo` fails (the model types the refund's amount as "12.OO") in a
process whose provider is `side_by_side.build_provider`: a BlackboxSpanProcessor writes the local
file, and the real BatchSpanProcessor + OTLPSpanExporter ships the same spans to an OTLP/HTTP
receiver on 127.0.0.1, the stand-in for the Collector. The receiver's requests are written as the
Collector's `file` exporter writes them (one ExportTraceServiceRequest a line, OTLP/JSON, hex ids).
On "another machine", that file is imported into a new database: `runs` shows the import, `cassette
--run` makes the incident's cassette (the same steps as from the local file), the built-in rerun
fixes it without the program (the ledger the refund tool writes stays empty), and `diff` says so.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_llm import FakeLLMServer
from google.protobuf import json_format  # type: ignore[import-untyped]
from helpers import EXAMPLES, Receiver, run_cli

from otel_blackbox._cassette.io import load_cassette

QUESTION = "Look up my order Alpha and refund 12.00 on it, both please."
# The agent's process in production: the handoff agent on side_by_side's provider (local file +
# BatchSpanProcessor to the Collector), its refund tool writing a ledger.
AGENT = """
import sys
from pathlib import Path
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/collector"]
import handoff_agent, side_by_side
endpoint, db, ledger, base_url, question = sys.argv[2:]
handoff_agent.LEDGER[:] = [Path(ledger)]
provider = side_by_side.build_provider(endpoint, db)
try:
    handoff_agent.run(provider, base_url, question, False, model_name="sloppy")
finally:
    provider.shutdown()
"""


def collector_file_line(request: Any) -> str:
    """What the Collector's file exporter writes for one request: OTLP/JSON, ids in hex."""
    document = json_format.MessageToDict(request)
    for resource_spans in document.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(document)


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("OTEL_EXPORTER_OTLP"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


def step_types(path: Path) -> list[str]:
    return [step.type for step in load_cassette(path).steps]


def test_an_incident_shipped_to_the_fleet_comes_back_with_import(
    tmp_path: Path, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    local_db, fleet_db, ledger = tmp_path / "local.db", tmp_path / "fleet.db", tmp_path / "ledger.txt"
    ledger.write_text("")
    with Receiver() as collector:
        argv = [f"{collector.url}/v1/traces", str(local_db), str(ledger), fake_llm.openai_base_url, QUESTION]
        agent = subprocess.run(
            [sys.executable, "-c", AGENT, str(EXAMPLES), *argv], capture_output=True, text=True, timeout=120
        )
        assert agent.returncode == 0, agent.stderr
        received = collector.accepted()
    assert ledger.read_text() == ""  # "12.OO" was refused: the incident made no refund
    assert received, "the BatchSpanProcessor shipped nothing"
    shipped = tmp_path / "collector-traces.jsonl"
    shipped.write_text("".join(collector_file_line(r) + "\n" for r in received))

    imported = run_cli("import", str(shipped), "--json", db=fleet_db, check=True)
    summary = json.loads(imported.stdout)
    (run,) = json.loads(run_cli("runs", "--json", db=fleet_db, check=True).stdout)
    assert run["run_id"] == summary["run_id"] and run["source"] == f"import {shipped}"
    assert run["spans"] == summary["spans"] > 0 and run["status"] == "error"

    # The incident as a cassette, from the fleet's copy: the same steps as from the local file.
    (trace,) = {r["trace_id"] for r in json.loads(run_cli("list", "--json", db=fleet_db, check=True).stdout)}
    incident, local_incident = tmp_path / "incident.json", tmp_path / "local-incident.json"
    run_cli("cassette", "--run", run["run_id"][:8], "-o", str(incident), db=fleet_db, check=True)
    (local_run,) = json.loads(run_cli("runs", "--json", db=local_db, check=True).stdout)
    run_cli("cassette", "--run", local_run["run_id"], "-o", str(local_incident), db=local_db, check=True)
    assert "tool_result" in step_types(incident) and "model_output" in step_types(incident)
    ours, theirs = load_cassette(incident).steps, load_cassette(local_incident).steps
    # The same steps, payloads and times; the ids and hashes name the run, which is another one.
    assert [(s.type, s.timestamp, s.payload) for s in ours] == [
        (s.type, s.timestamp, s.payload) for s in theirs
    ]
    shown = run_cli("show", trace, "-v", db=fleet_db, check=True).stdout
    assert "refund_order" in shown and "12.OO" in shown

    # The built-in rerun, every tool answered from the imported recording, then the verdict.
    fixed = tmp_path / "fixed.json"
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)  # run_cli passes the environment on
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fleet-not-a-real-key")
    stub = 'refund_order="refunded 12.00 on order Alpha"'
    rerun = run_cli("rerun", str(incident), "--model", "gpt-4o-mini", "--stub", stub, "-o", str(fixed))
    assert rerun.returncode == 0, rerun.stderr
    assert "completed" in rerun.stderr + rerun.stdout
    assert ledger.read_text() == ""  # the real refund_order never ran
    verdict = run_cli("diff", str(incident), str(fixed))
    assert "failure fixed" in verdict.stdout, verdict.stdout
