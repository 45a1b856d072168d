"""`make demo`: record a tool-using OpenAI-SDK agent, look at it, then kill one mid-tool and look again.

Everything runs locally: the agent talks to a fake OpenAI-compatible server on 127.0.0.1, so no
API key and no network are needed. The recording goes to ./demo.db (replaced on every run).
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DB = Path("demo.db")
INCIDENT = Path("demo-incident.json")
CLI = shutil.which("otel-blackbox", path=str(Path(sys.executable).parent)) or "otel-blackbox"
# A span open longer than the flush interval (200 ms by default) is on disk: wait a bit more.
AFTER_FLUSH_INTERVAL_S = 0.6


def banner(text: str) -> None:
    line = f"== {text}"
    print("\n" + (f"\033[1m{line}\033[0m" if sys.stdout.isatty() else line), flush=True)


def cli(*args: str) -> str:
    print(f"$ otel-blackbox --db {DB} {' '.join(args)}", flush=True)
    out = subprocess.run([CLI, "--db", str(DB), *args], capture_output=True, text=True, check=True).stdout
    print(out, end="", flush=True)
    return out


def agent(*args: str) -> list[str]:
    return [sys.executable, str(HERE / "weather_agent.py"), "--db", str(DB), *args]


def main() -> int:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{DB}{suffix}").unlink(missing_ok=True)

    banner("1. An agent run: openai SDK + OpenInference + BlackboxSpanProcessor, fake LLM on 127.0.0.1")
    print(f"$ python examples/weather_agent.py --db {DB} --fail-tool", flush=True)
    run = subprocess.run(agent("--fail-tool"), capture_output=True, text=True, check=True)
    print(run.stdout, end="")
    trace_id = run.stdout.split()[1]

    banner("2. What was recorded")
    cli("list")
    cli("show", trace_id[:8], "-v")

    banner("3. A second run, killed with SIGKILL while a tool is running")
    print(f"$ python examples/weather_agent.py --db {DB} --hang-in-tool   # then kill -9", flush=True)
    with subprocess.Popen(agent("--hang-in-tool"), stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        killed_trace = ""
        for line in proc.stdout:
            print(line, end="", flush=True)
            if line.startswith("IN_TOOL "):
                killed_trace = line.split()[1]
                break
        time.sleep(AFTER_FLUSH_INTERVAL_S)
        proc.send_signal(signal.SIGKILL)
    print(f"(pid {proc.pid} killed with SIGKILL; no shutdown, no atexit, no flush)")

    banner("4. The killed run is still there, with the spans it died in marked OPEN")
    cli("list")
    cli("show", killed_trace[:8], "-v")
    banner("5. The killed run as a cassette: hash-chained, provider-neutral steps")
    cli("cassette", killed_trace[:8], "-o", str(INCIDENT))
    cli("inspect", str(INCIDENT), "--width", "90")
    cli("verify", str(INCIDENT))

    stats_out = subprocess.run(
        [CLI, "--db", str(DB), "stats", "--json"], capture_output=True, text=True, check=True
    )
    stats = json.loads(stats_out.stdout)
    counts = ", ".join(
        f"{stats[key]} {label}"
        for key, label in [
            ("traces", "traces"),
            ("spans", "spans"),
            ("open_spans", "open"),
            ("spans_dropped", "dropped"),
        ]
    )
    print(f"\n{counts}.")
    print(f"Try: otel-blackbox --db {DB} errors | stats | export, and otel-blackbox diff / assert / eval")
    return 0


if __name__ == "__main__":
    sys.exit(main())
