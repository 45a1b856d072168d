"""Benchmark: start-up of the read commands, against a bare ``import sqlite3, click, json``.

Run it as a script (it is not a test, and exits 0 whatever the figures)::

    python bench/bench_cli_startup.py [--rounds N] [--baseline-src DIR | --baseline-rev REV]

Records a small database through the real BlackboxSpanProcessor (three runs, one recorder each:
an AGENT trace of an LLM call and two tool calls, one failing; 12 spans in all), then times, as
subprocesses of this interpreter, the baseline ``python -c "import sqlite3, click, json"`` and
each of ``otel-blackbox list``, ``show TRACE``, ``stats``, ``errors`` and ``--help`` the way a user
runs them: through the installed console script next to this interpreter (``bin/otel-blackbox``,
which runs ``from otel_blackbox.cli import main; sys.exit(main())``), or, when there is none, that
same code with ``python -c``. The source under test is put first on ``PYTHONPATH``: this
checkout's ``src``, and with ``--baseline-src`` (a directory holding an ``otel_blackbox``
package, such as ``src`` of a ``git archive`` copy) or ``--baseline-rev`` (archived here) an older
version too, side by side in the same run.

Measured alternately, N rounds: baseline, command, baseline, command... (and baseline, older
command for each command when an older version is given). Reported: the medians, and the ratio
command / baseline of the medians, against the start-up issue's bar (at most 2x the baseline) and
goal (1.5x).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider

from otel_blackbox import BlackboxConfig, BlackboxSpanProcessor

ROOT = Path(__file__).resolve().parent.parent
BAR, GOAL = 2.0, 1.5
BASELINE = [sys.executable, "-c", "import sqlite3, click, json"]
# What the console script pip writes runs, for an interpreter without one.
ENTRY = "import sys; from otel_blackbox.cli import main; sys.exit(main())"


def record_runs(db: Path, runs: int = 3) -> str:
    """``runs`` recorder lifetimes, each one agent trace with tokens and a failed tool call; the
    first trace's id."""
    first = ""
    for run in range(runs):
        provider = TracerProvider(shutdown_on_exit=False)
        provider.add_span_processor(BlackboxSpanProcessor(config=BlackboxConfig(db_path=db)))
        tracer = provider.get_tracer("bench_cli_startup")
        with tracer.start_as_current_span(
            "agent.run", attributes={"openinference.span.kind": "AGENT", "session.id": f"s-{run}"}
        ) as root:
            with tracer.start_as_current_span("llm.chat", attributes={
                "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini",
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.content": f"Find a hotel in Lyon for {run + 1} nights.",
                "llm.token_count.prompt": 120, "llm.token_count.completion": 30,
            }):  # fmt: skip
                pass
            with tracer.start_as_current_span("search_hotels", attributes={
                "openinference.span.kind": "TOOL", "tool.name": "search_hotels", "input.value": "Lyon",
                "output.value": '[{"name": "Hotel du Parc"}]',
            }):  # fmt: skip
                pass
            try:
                with tracer.start_as_current_span(
                    "book_hotel", attributes={"openinference.span.kind": "TOOL", "tool.name": "book_hotel"}
                ):
                    raise TimeoutError("booking service timed out after 30 s")
            except TimeoutError:
                pass
        first = first or format(root.get_span_context().trace_id, "032x")
        if not provider.force_flush(30_000):
            raise SystemExit("the recorder did not flush in time")
        provider.shutdown()
    return first


def entry_point() -> tuple[list[str], str]:
    """The argv prefix that runs the CLI as a user does, and how it is described."""
    script = Path(sys.executable).parent / "otel-blackbox"
    if script.is_file():
        # The console script itself, by this interpreter (its shebang names the venv's python).
        return [sys.executable, str(script)], f"the console script {script}"
    return [sys.executable, "-c", ENTRY], f"python -c {ENTRY!r}"


def env_with(src: Path) -> dict[str, str]:
    # Without PYTHONDONTWRITEBYTECODE: an installed package has its byte-code cached (pip compiles
    # it), and compiling every module from source on every run would swamp what is measured.
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("OTEL_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    env["PYTHONPATH"] = str(src)
    env["COLUMNS"] = "100"  # --help wraps to the terminal: the same width for every version
    return env


def timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    result = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(
            f"{' '.join(argv[-3:])} failed ({result.returncode}): {result.stderr.decode()[:300]}"
        )
    return elapsed


def check_output(argv: list[str], env: dict[str, str], expect: str) -> None:
    """A command does what it should on the database (not only exit 0)."""
    result = subprocess.run(argv, env=env, capture_output=True, text=True)
    if result.returncode != 0 or expect not in result.stdout:
        raise SystemExit(f"{' '.join(argv[-3:])}: exit {result.returncode}, no {expect!r} in its output")


def check_source(env: dict[str, str], src: Path) -> None:
    """The version under test is the one loaded (not one installed elsewhere)."""
    out = subprocess.run(
        [sys.executable, "-c", "import otel_blackbox; print(otel_blackbox.__file__)"],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    loaded = Path(out.stdout.strip()).resolve()
    if not loaded.is_relative_to(src.resolve()):
        raise SystemExit(f"otel_blackbox loads from {loaded}, not from {src}")


def archive(rev: str, into: Path) -> Path:
    """``src`` of a ``git archive`` copy of ``rev``."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=data.stdout, check=True)
    return into / "src"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=40, help="alternating rounds; medians (default 40)")
    older = parser.add_mutually_exclusive_group()
    older.add_argument(
        "--baseline-src", type=Path, metavar="DIR", help="an older otel_blackbox source, side by side"
    )
    older.add_argument("--baseline-rev", metavar="REV", help="the same, from a git archive of REV")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write every sample here too")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    workdir = Path(tempfile.mkdtemp(prefix="bench_cli_startup-"))
    try:
        return _run(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _run(args: argparse.Namespace, workdir: Path) -> int:
    db = workdir / "blackbox.db"
    trace_id = record_runs(db)
    prefix, how = entry_point()
    versions = {"this": ROOT / "src"}
    if args.baseline_rev:
        versions["before"] = archive(args.baseline_rev, workdir)
    elif args.baseline_src:
        versions["before"] = args.baseline_src
    envs = {name: env_with(src) for name, src in versions.items()}
    for name, src in versions.items():
        check_source(envs[name], src)
    commands = {  # each command, and what its output must hold
        "list": (["list"], trace_id),
        "show": (["show", trace_id[:8]], "booking service timed out"),
        "stats": (["stats"], "gpt-4o-mini: 3 calls"),
        "errors": (["errors"], "booking service timed out"),
        "--help": (["--help"], "Commands:"),
    }
    argvs = {
        (version, command): [*prefix, *(["--db", str(db)] if command != "--help" else []), *extra]
        for version in versions
        for command, (extra, _) in commands.items()
    }
    # Warm up (byte-code caches written, the page cache full), checking every command's output.
    for (version, command), argv in argvs.items():
        check_output(argv, envs[version], commands[command][1])
    baseline: list[float] = []
    samples: dict[tuple[str, str], list[float]] = {key: [] for key in argvs}
    for _ in range(args.rounds):
        for key, argv in argvs.items():
            baseline.append(timed(BASELINE, envs["this"]))
            samples[key].append(timed(argv, envs[key[0]]))

    base = statistics.median(baseline)
    print(
        f"{len(baseline)} baseline runs and {args.rounds} of each command, alternately; the CLI run as {how}"
    )
    for version, src in versions.items():
        rev = f" ({args.baseline_rev})" if version == "before" and args.baseline_rev else ""
        print(f"{version}: otel_blackbox from {src}{rev}")
    print(f'baseline `python -c "import sqlite3, click, json"`: median {base * 1000:.1f} ms')
    header = f"{'command':8}"
    for version in versions:
        header += f"  {version + ' ms':>9}  {'ratio':>5}  {'2x':4}  {'1.5x':4}"
    print(header)
    for command in commands:
        line = f"{command:8}"
        for version in versions:
            ms = statistics.median(samples[version, command])
            ratio = ms / base
            line += (
                f"  {ms * 1000:9.1f}  {ratio:5.2f}  {'PASS' if ratio <= BAR else 'MISS':4}"
                f"  {'PASS' if ratio <= GOAL else 'MISS':4}"
            )
        print(line)
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "entry": how,
                    "versions": {name: str(src) for name, src in versions.items()},
                    "baseline_s": baseline,
                    "samples_s": {f"{v} {c}": s for (v, c), s in samples.items()},
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
