"""`make demo` as a new user runs it: examples/demo.py, start to end, in an empty folder.

It must walk the guide's path with no API key and no network: the killed run, then "From
incident to fix" (docs/incident-to-fix.md: a failure recorded by the processor with HTTP capture,
reproduced offline, rerun against another model with the tool answered from the recording, diff, a
contract). The commands it ends with must work as printed in a new shell, where the venv's
otel-blackbox is not on PATH.
"""

from __future__ import annotations

import os
import shlex
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

    # The commands it ends with, in a new shell in the same folder: the venv's bin is not on PATH
    # until the first line, which activates the venv the demo ran in.
    activate = Path(sys.executable).parent / "activate"
    assert activate.is_file()  # make runs the demo in its venv
    source = f"source {shlex.quote(str(activate))}"  # absolute: the venv is not under tmp_path
    assert out.startswith(f"(the otel-blackbox command below is in the venv: in a new shell, `{source}`")
    tail = out[out.index("Try it yourself, in a new shell in this folder:\n") :].splitlines()[1:]
    printed = [line[2:] for line in tail if line.startswith("  ")]
    assert printed[0] == source and len(printed) >= 4
    assert all(line.startswith("otel-blackbox ") for line in printed[1:])
    assert "otel-blackbox --db demo.db errors" in printed
    fresh = {"PATH": os.defpath, "HOME": str(tmp_path), "LANG": "C.UTF-8"}

    def in_a_new_shell(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "--noprofile", "--norc", "-c", f"{source} && {command}"], cwd=tmp_path, env=fresh,
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    found = in_a_new_shell("command -v otel-blackbox").stdout.strip()
    assert found == str(activate.parent / "otel-blackbox")
    for command in printed[1:]:
        done = in_a_new_shell(command)
        # diff (a change) and eval run (the incident fails the contract) exit 1 by design.
        assert done.returncode in (0, 1) and done.stdout and not done.stderr, (command, done.stderr)
