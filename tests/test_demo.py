"""`make demo` as a new user runs it: examples/demo.py, start to end, in an empty folder.

It must walk the README's path with no API key and no network: the killed run, then "From
incident to fix" (a failure recorded by the processor with HTTP capture, reproduced offline, rerun
against another model with the tool answered from the recording, diff, a contract).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers import EXAMPLES


def test_the_demo_walks_from_incident_to_fix(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "demo.py")], cwd=tmp_path, capture_output=True, text=True, env=env,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    out = done.stdout
    assert "Traceback" not in done.stderr  # (stdout shows the failed tool's recorded stack trace)
    assert "WrongAnswer: the answer quotes none of the tool results" in out  # the incident
    assert "(the weather API answered 2 requests)" in out
    assert "outcome error" in out  # cassette --run
    assert "(the weather API, up again, answered 0 requests during the rerun)" in out
    assert "outcome: failure fixed: parent error → child success" in out
    assert "PASS  demo-fixed.json" in out and "FAIL  demo-incident.json" in out
    # The built-in rerun of the refund incident: no refund made, the stub marked, the failure fixed.
    assert "no refund went through" in out
    assert "1 stub -> demo-refund-fixed.json" in out
    assert "(the ledger holds 0 refunds: refund_order never ran)" in out
    assert "outcome: failure fixed: tool error in refund_order → success" in out
    assert "[blackbox] replayed demo-refund-fixed.json: 3 model calls, as recorded" in out
    assert "(the recording refunded 1 time; the replay, the provider stopped, 0 times)" in out
    assert (tmp_path / "demo-ledger.txt").read_text() == "refund Alpha 12.00\n"  # the recording's, once
    assert {p.name for p in tmp_path.glob("demo-*.json")} == {
        "demo-killed.json", "demo-incident.json", "demo-fixed.json", "demo-contract.json",
        "demo-refund-incident.json", "demo-refund-fixed.json", "demo-refund-recorded.json",
    }  # fmt: skip
