"""The workbench: from the rerun form's submit to the verdict on the page, against the same rerun
typed on the command line, on the demo's refund incident; and what each page weighs.

Run it as a script (it is not a test and asserts nothing about timing)::

    python bench/bench_workbench.py [--rounds N] [--action rerun|edit] [--json out.json]

Setup: the fake OpenAI-compatible provider on 127.0.0.1 (examples/fake_llm.py), the refund incident
recorded by the processor from the real OpenAI Agents SDK (examples/handoff_agent.py, the model
``sloppy``), and ``otel-blackbox ui`` started as a user starts it, in a process of its own.

Each round, in alternating order (the first one rotates), the same rerun (model ``thorough``, the
refund answered by a stub: ``failure fixed``):

* ``workbench``: POST the rerun form as the page does, follow its redirect, poll the job's progress
  every 250 ms as the page does, then GET the job's page with the verdict. The clock runs from the
  POST to that page's last byte.
  The job's own time (from its worker's start to its end, as the job page shows it) is reported
  beside it: the rest is the page's poll cadence and the verdict page's diff.
* ``cli``: ``otel-blackbox cassette --run ID`` (the workbench makes the incident on each submit too),
  ``otel-blackbox rerun INCIDENT --model thorough --stub ... -o CHILD``, ``otel-blackbox diff``, each
  a process, as typed. The clock runs from the first start to the last exit.

With ``--action edit``, the same for Edit and continue: refund_order's failing result (step 9)
replaced by the refund and the run continued on ``thorough``: the editor's form POSTed to ``/fork``
against ``cassette --run``, ``fork INCIDENT --at 9 --set ... --model thorough`` and ``diff``.

Medians of the rounds; the ratio workbench / cli. Page weight: the bytes (and gzip bytes, for
reference: the workbench does not compress) of each page of the path.
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

from fake_llm import FakeLLMServer  # noqa: E402 (examples/ is not a package)

CLI = [sys.executable, "-m", "otel_blackbox.cli"]
QUESTION = "Look up my order Alpha and refund 12.00 on it, both please."
STUB_VALUE = '"refunded 12.00 on order Alpha"'
PAGE_POLL_S = 0.25  # the job page's own cadence (workbench_pages._POLL)
LISTENING = re.compile(r"workbench on (http://127\.0\.0\.1:(\d+))")


def record_incident(folder: Path, base_url: str) -> tuple[Path, str]:
    db, ledger = folder / "blackbox.db", folder / "ledger.txt"
    argv = [sys.executable, str(ROOT / "examples" / "handoff_agent.py"), "--question", QUESTION]
    argv += ["--ledger", str(ledger), "--base-url", base_url, "--db", str(db), "--model", "sloppy"]
    subprocess.run([*argv, "--require-refund"], capture_output=True, timeout=120, check=False)
    listed = subprocess.run([*CLI, "--db", str(db), "runs", "--json"], capture_output=True, check=True)
    return db, json.loads(listed.stdout)[0]["run_id"]


class Page:
    def __init__(self, port: int) -> None:
        self.port = port

    def request(self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
                ) -> tuple[int, dict[str, str], bytes]:  # fmt: skip
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            response = conn.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        finally:
            conn.close()

    def get(self, path: str) -> bytes:
        status, _, body = self.request("GET", path)
        assert status == 200, (path, status, body[:300])
        return body


EDITED_STEP = 9  # refund_order's failing result in the incident's cassette


def workbench_round(page: Page, run_id: str, action: str) -> tuple[float, float, str]:
    form_path = f"/run/{run_id}" if action == "rerun" else f"/run/{run_id}/edit/{EDITED_STEP}"
    token = re.search(r'name="token" value="([^"]+)"', page.get(form_path).decode())
    assert token
    if action == "rerun":
        fields = {"token": token.group(1), "target_kind": "run", "target_id": run_id,
                  "provider": "openai-chat", "model": "thorough", "max_cost": "",
                  "stub:refund_order": STUB_VALUE}  # fmt: skip
    else:
        fields = {"token": token.group(1), "parent": f"run/{run_id}", "step": str(EDITED_STEP),
                  "change": "set", "value:set": STUB_VALUE, "provider": "openai-chat",
                  "model": "thorough", "max_cost": ""}  # fmt: skip
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Origin": f"http://127.0.0.1:{page.port}"}
    start = time.perf_counter()
    status, answer, body = page.request("POST", f"/{'rerun' if action == 'rerun' else 'fork'}",
                                        urlencode(fields).encode(), headers)  # fmt: skip
    assert status == 303, body
    job = answer["location"]
    while (progress := json.loads(page.get(f"/api{job}")))["state"] == "running":
        time.sleep(PAGE_POLL_S)
    verdict_page = page.get(job).decode()
    elapsed = time.perf_counter() - start
    verdict = re.search(r'data-testid="verdict" data-kind="(\w+)"', verdict_page)
    assert verdict and verdict.group(1) == "failure_fixed", verdict_page[-2000:]
    return elapsed, float(progress["seconds"]), job


def cli_round(db: Path, run_id: str, folder: Path, env: dict[str, str], action: str) -> float:
    incident, child = folder / "incident.json", folder / "child.json"
    child.unlink(missing_ok=True)
    start = time.perf_counter()
    make = [*CLI, "--db", str(db), "cassette", "--run", run_id, "-o", str(incident)]
    subprocess.run(make, env=env, capture_output=True, check=True)
    if action == "rerun":
        again = [*CLI, "rerun", str(incident), "--model", "thorough", "--stub", f"refund_order={STUB_VALUE}"]
    else:
        again = [
            *CLI,
            "fork",
            str(incident),
            "--at",
            str(EDITED_STEP),
            "--set",
            STUB_VALUE,
            "--model",
            "thorough",
        ]
    subprocess.run([*again, "-o", str(child)], env=env, capture_output=True, check=True)
    diff = subprocess.run([*CLI, "diff", str(incident), str(child)], env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    assert "failure fixed" in diff.stdout, diff.stdout
    return elapsed


def weights(page: Page, run_id: str, job: str, action: str) -> dict[str, dict[str, int]]:
    paths = {"runs (/)": "/", "a run": f"/run/{run_id}", "a job": job, "job progress (JSON)": f"/api{job}",
             "a contract": f"{job}/contract", "contracts": "/contracts"}  # fmt: skip
    if action == "edit":  # an edit's job has no contract page: its steps and editor instead
        del paths["a contract"]
        paths |= {"a run's steps": f"/run/{run_id}/steps",
                  "a step's editor": f"/run/{run_id}/edit/{EDITED_STEP}",
                  "the child's steps": f"{job}/child"}  # fmt: skip
    found = {}
    for name, path in paths.items():
        body = page.get(path)
        found[name] = {"bytes": len(body), "gzip_bytes": len(gzip.compress(body))}
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--action", choices=["rerun", "edit"], default="rerun", help="what each round does")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-workbench-"))
    ui: subprocess.Popen[str] | None = None
    try:
        with FakeLLMServer() as llm:
            db, run_id = record_incident(folder, llm.openai_base_url)
            env = {
                **os.environ,
                "OPENAI_BASE_URL": llm.openai_base_url,
                "OPENAI_API_KEY": "sk-bench-not-a-key",
            }
            ui = subprocess.Popen([*CLI, "--db", str(db), "ui", "--port", "0"], env=env, text=True,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
            assert ui.stderr is not None
            found = LISTENING.search(ui.stderr.readline())
            assert found, "ui did not say where it listens"
            page = Page(int(found.group(2)))
            times: dict[str, list[float]] = {"workbench": [], "cli": [], "job": []}
            job = ""
            for n in range(args.rounds + 1):  # round 0 warms both up (imports, the price cache): not counted
                order = ["workbench", "cli"] if n % 2 == 0 else ["cli", "workbench"]
                for kind in order:
                    if kind == "workbench":
                        elapsed, seconds, job = workbench_round(page, run_id, args.action)
                        if n:
                            times["job"].append(seconds)  # the worker's own time, start to end
                    else:
                        elapsed = cli_round(db, run_id, folder, env, args.action)
                    if n:
                        times[kind].append(elapsed)
            weight = weights(page, run_id, job, args.action)
    finally:
        if ui is not None:
            ui.terminate()
            ui.wait(timeout=20)
        shutil.rmtree(folder, ignore_errors=True)
    medians = {kind: statistics.median(values) for kind, values in times.items()}
    result: dict[str, Any] = {
        "rounds": args.rounds,
        "action": args.action,
        "median_s": medians,
        "ratio_workbench_to_cli": medians["workbench"] / medians["cli"],
        "times_s": times,
        "page_weight": weight,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
    }
    print(f"{args.action} to verdict, medians of {args.rounds} rounds: "
          f"workbench {medians['workbench']:.2f} s "
          f"(its job {medians['job']:.2f} s), cli {medians['cli']:.2f} s, "
          f"ratio {result['ratio_workbench_to_cli']:.2f}")  # fmt: skip
    for name, sizes in weight.items():
        print(f"  {name:22} {sizes['bytes']:>8,} bytes  ({sizes['gzip_bytes']:,} gzip)")
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
