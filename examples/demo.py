"""`make demo`: record a tool-using OpenAI-SDK agent, look at it, kill one mid-tool and look again,
then walk a production failure from incident to fix, rerun an incident whose tool has a side
effect (a refund) without its program: the built-in agent, every tool answered from the recording,
and replay that program itself with its tools answered from the recording (--stub-tools).

Everything runs locally: the agent talks to a fake OpenAI-compatible server on 127.0.0.1 and its
tools to a small weather API on 127.0.0.1, so no API key and no network are needed. The recording
goes to ./demo.db (replaced on every run); the cassettes and the contract to ./demo-*.json.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from fake_llm import CARELESS_MODEL, SLOPPY_MODEL, FakeLLMServer  # noqa: E402 (examples/ is not a package)
from weather_api import WeatherAPI  # noqa: E402

DB = Path("demo.db")
INCIDENT = Path("demo-incident.json")
KILLED = Path("demo-killed.json")
FIXED = Path("demo-fixed.json")
CONTRACT = Path("demo-contract.json")
REFUND_INCIDENT = Path("demo-refund-incident.json")
REFUND_FIXED = Path("demo-refund-fixed.json")
REFUND_RECORDED = Path("demo-refund-recorded.json")
LEDGER = Path("demo-ledger.txt")
REFUND_QUESTION = "Look up my order Alpha and refund 12.00 on it, both please."
GOOD_MODEL = "gpt-4o-mini"
CLI = shutil.which("otel-blackbox", path=str(Path(sys.executable).parent)) or "otel-blackbox"
# The venv make set up: the otel-blackbox command is on PATH once it is activated.
ACTIVATE = Path(sys.executable).parent / "activate"
# A span open longer than the flush interval (200 ms by default) is on disk: wait a bit more.
AFTER_FLUSH_INTERVAL_S = 0.6


def banner(text: str) -> None:
    line = f"== {text}"
    print("\n" + (f"\033[1m{line}\033[0m" if sys.stdout.isatty() else line), flush=True)


def cli(*args: str, db: bool = True, ok: tuple[int, ...] = (0,), env: dict[str, str] | None = None) -> str:
    """Run otel-blackbox as a user would, show the command and what it printed."""
    where = ["--db", str(DB)] if db else []
    shown = "".join(f"{k}={v} " for k, v in (env or {}).items() if not k.endswith("_KEY"))
    print(f"$ {shown}otel-blackbox {shlex.join([*where, *args])}", flush=True)
    done = subprocess.run(
        [CLI, *where, *args], capture_output=True, text=True, env={**os.environ, **(env or {})}
    )
    print(done.stdout + done.stderr, end="", flush=True)
    if done.returncode not in ok:
        raise SystemExit(f"otel-blackbox {args[0]} exited {done.returncode}")
    return done.stdout


def _short(path: str | Path) -> str:
    """A path relative to here when that is shorter (.venv/bin/python): readable, and runnable."""
    relative = os.path.relpath(path)
    return str(path) if relative.startswith("..") else relative


def activate() -> str:
    """The line that puts otel-blackbox (and the venv's python) on PATH in a new shell, if one is needed."""
    return f"source {shlex.quote(_short(ACTIVATE))}" if ACTIVATE.is_file() else ""


def try_yourself(trace_id: str) -> list[str]:
    """The commands the demo ends with, runnable as printed in a new shell, in this folder."""
    db = ["--db", str(DB)]
    commands = [
        ["otel-blackbox", *db, "errors"],
        ["otel-blackbox", *db, "stats"],
        ["otel-blackbox", *db, "show", trace_id[:8], "-v"],
        ["otel-blackbox", "diff", str(INCIDENT), str(FIXED)],
        ["otel-blackbox", "eval", "run", str(CONTRACT), str(FIXED), str(INCIDENT)],
        ["otel-blackbox", "--help"],
    ]
    return [line for line in [activate(), *map(shlex.join, commands)] if line]


def agent(*args: str) -> list[str]:
    return [_short(sys.executable), _short(HERE / "weather_agent.py"), "--db", str(DB), *args]


def main() -> int:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{DB}{suffix}").unlink(missing_ok=True)
    if line := activate():
        print(f"(the otel-blackbox command below is in the venv: in a new shell, `{line}` puts it on PATH)")

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
    cli("cassette", killed_trace[:8], "-o", str(KILLED))
    cli("inspect", str(KILLED), "--width", "90")
    cli("verify", str(KILLED))

    incident_to_fix()
    side_effect_incident()

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
    print("Try it yourself, in a new shell in this folder:")
    for line in try_yourself(trace_id):
        print(f"  {line}")
    print("In the browser, the same road clicked (the fake provider started for you): make workbench")
    return 0


def incident_to_fix() -> None:
    """README's "From incident to fix", step by step: a production failure recorded by the processor
    with HTTP capture on, reproduced offline, rerun against another model, and kept as a contract."""
    with FakeLLMServer() as llm, WeatherAPI() as api:
        ports = llm.port, int(api.url.rsplit(":", 1)[1])
        command = [*agent("--base-url", llm.openai_base_url, "--tool-url", api.url), "--check-answer"]
        incident_run = [*command, "--model", CARELESS_MODEL]
        banner("6. In production: the processor with HTTP capture on; the model answers badly, the run fails")
        print(f"$ OTEL_BLACKBOX_CAPTURE_HTTP=true {shlex.join(incident_run)}", flush=True)
        env = {**os.environ, "OTEL_BLACKBOX_CAPTURE_HTTP": "true"}
        failed = subprocess.run(incident_run, capture_output=True, text=True, env=env)
        print(failed.stdout + failed.stderr, end="", flush=True)
        print(f"(the weather API answered {len(api.requests)} requests)")

    banner("7. Which run failed, and where")
    cli("runs")
    cli("errors")
    run_id = json.loads(cli("runs", "--json", "--limit", "1"))[0]["run_id"]
    cli("cassette", "--run", run_id[:8], "-o", str(INCIDENT))

    banner("8. Reproduced offline: the model and the weather API are stopped, the program is unchanged")
    cli("replay", str(INCIDENT), "--", *incident_run, db=False, ok=(1,))

    banner(f"9. Rerun against {GOOD_MODEL}: the model is live, the weather API answers from the recording")
    with FakeLLMServer(ports[0]), WeatherAPI(ports[1]) as api:
        cli("rerun", str(INCIDENT), "--model", GOOD_MODEL, "-o", str(FIXED), "--", *incident_run, db=False)
        print(f"(the weather API, up again, answered {len(api.requests)} requests during the rerun)")
    cli("diff", str(INCIDENT), str(FIXED), db=False, ok=(0, 1))

    banner("10. The fixed run as a regression contract for the runs to come")
    cli("eval", "generate", str(FIXED), "-o", str(CONTRACT), db=False)
    cli("eval", "run", str(CONTRACT), str(FIXED), str(INCIDENT), db=False, ok=(1,))


def side_effect_incident() -> None:
    """README's built-in rerun: an incident whose tool has a side effect, rerun without its program."""
    LEDGER.write_text("")
    refund_agent = [_short(sys.executable), _short(HERE / "handoff_agent.py"), "--db", str(DB)]
    refund_agent += ["--ledger", str(LEDGER), "--require-refund", "--question", REFUND_QUESTION]
    with FakeLLMServer() as llm:
        banner("11. A refund agent (OpenAI Agents SDK) hands off; the model sends the amount as '12.OO'")
        incident_run = [*refund_agent, "--base-url", llm.openai_base_url, "--model", SLOPPY_MODEL]
        print(f"$ {shlex.join(incident_run)}", flush=True)
        failed = subprocess.run(incident_run, capture_output=True, text=True)
        print(failed.stdout + failed.stderr, end="", flush=True)
        cli("runs", "--limit", "1")
        listed = subprocess.run([CLI, "--db", str(DB), "runs", "--json", "--limit", "1"], capture_output=True)
        run_id = json.loads(listed.stdout)[0]["run_id"]
        cli("cassette", "--run", run_id[:8], "-o", str(REFUND_INCIDENT))

        banner("12. Rerun without the program: the built-in agent, its tools answered from the recording")
        env = {"OPENAI_BASE_URL": llm.openai_base_url, "OPENAI_API_KEY": "sk-demo-not-a-real-key"}
        stub = 'refund_order="refunded 12.00 on order Alpha"'  # the refund the incident never made
        cli("rerun", str(REFUND_INCIDENT), "--model", GOOD_MODEL, "--stub", stub, "-o", str(REFUND_FIXED),
            db=False, env=env)  # fmt: skip
    refunds = len(LEDGER.read_text().splitlines())
    print(f"(the ledger holds {refunds} refunds: refund_order never ran)")
    cli("diff", str(REFUND_INCIDENT), str(REFUND_FIXED), db=False, ok=(0, 1))

    banner("13. The fixed run replays offline, with the same agent: the provider is stopped")
    cli("replay", str(REFUND_FIXED), db=False)

    banner("14. The program itself, replayed with its tools answered from the recording: --stub-tools")
    program = [_short(sys.executable), _short(HERE / "handoff_agent.py"), "--db", str(DB)]
    program += ["--ledger", str(LEDGER), "--question", REFUND_QUESTION]
    with FakeLLMServer() as llm:
        program += ["--base-url", llm.openai_base_url]
        cli("record", "-o", str(REFUND_RECORDED), "--", *program, db=False)
    recorded = len(LEDGER.read_text().splitlines())
    cli("replay", str(REFUND_RECORDED), "--stub-tools", "--", *program, db=False)
    replayed = len(LEDGER.read_text().splitlines()) - recorded
    print(f"(the recording refunded {recorded} time; the replay, the provider stopped, {replayed} times)")


if __name__ == "__main__":
    sys.exit(main())
