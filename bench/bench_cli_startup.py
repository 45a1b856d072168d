"""Benchmark: start-up of the read commands, against a bare ``import sqlite3, click, json``.

Run it as a script (it is not a test, and exits 0 whatever the figures)::

    python bench/bench_cli_startup.py [--rounds N] [--baseline-src DIR | --baseline-rev REV]

Records a small database of priced spans through the real BlackboxSpanProcessor (four runs, one
recorder each: an AGENT trace of an LLM call and two tool calls, one failing; 16 spans in all; the
LLM calls of gpt-4o-mini, claude-sonnet-4-5 and gemini-2.5-flash with their providers, token counts
and cached tokens, and one of a model genai-prices does not know), then times, as
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

Prices come from a cache of price plans (otel_blackbox/_cost/price_cache.py) in a cache folder of
the benchmark's own (``XDG_CACHE_HOME``), filled by the warm-up runs, as a user's is by their first
command. ``list, no cache`` is ``list`` with that folder emptied before each run: the first command
after genai-prices is installed or upgraded, which resolves the plans with genai-prices.
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


# Each run's LLM call: (model, provider, prompt tokens, cached tokens); the last has no price.
CALLS = [("gpt-4o-mini", "openai", 1_200, 1_024), ("claude-sonnet-4-5", "anthropic", 3_000, 2_048),
         ("gemini-2.5-flash", "google", 900, 0), ("fake-model-x", "openai", 300, 0)]  # fmt: skip


def record_runs(db: Path) -> str:
    """One recorder lifetime per CALLS, each one agent trace with a priced LLM call and a failed
    tool call; the first trace's id."""
    first = ""
    for run, (model, vendor, prompt, cached) in enumerate(CALLS):
        provider = TracerProvider(shutdown_on_exit=False)
        provider.add_span_processor(BlackboxSpanProcessor(config=BlackboxConfig(db_path=db)))
        tracer = provider.get_tracer("bench_cli_startup")
        with tracer.start_as_current_span(
            "agent.run", attributes={"openinference.span.kind": "AGENT", "session.id": f"s-{run}"}
        ) as root:
            with tracer.start_as_current_span("llm.chat", attributes={
                "openinference.span.kind": "LLM", "llm.model_name": model, "llm.provider": vendor,
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.content": f"Find a hotel in Lyon for {run + 1} nights.",
                "llm.token_count.prompt": prompt, "llm.token_count.completion": 30,
                "llm.token_count.prompt_details.cache_read": cached,
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


def env_with(src: Path, cache: Path) -> dict[str, str]:
    # Without PYTHONDONTWRITEBYTECODE: an installed package has its byte-code cached (pip compiles
    # it), and compiling every module from source on every run would swamp what is measured.
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("OTEL_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    env["PYTHONPATH"] = str(src)
    env["COLUMNS"] = "100"  # --help wraps to the terminal: the same width for every version
    env["XDG_CACHE_HOME"] = str(cache)  # the price cache: the benchmark's own, not the user's
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
    cache = workdir / "cache"
    envs = {name: env_with(src, cache) for name, src in versions.items()}
    for name, src in versions.items():
        check_source(envs[name], src)
    commands = {  # each command, and what its output must hold
        "list": (["list"], trace_id),
        "show": (["show", trace_id[:8]], "booking service timed out"),
        "stats": (["stats"], "gpt-4o-mini: 1 call"),
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
    cold = ("this", "list, no cache")
    samples[cold] = []
    for _ in range(args.rounds):
        for key, argv in argvs.items():
            baseline.append(timed(BASELINE, envs["this"]))
            samples[key].append(timed(argv, envs[key[0]]))
        shutil.rmtree(cache, ignore_errors=True)  # as after an upgrade of genai-prices
        baseline.append(timed(BASELINE, envs["this"]))
        samples[cold].append(timed(argvs["this", "list"], envs["this"]))

    base = statistics.median(baseline)
    print(
        f"{len(baseline)} baseline runs and {args.rounds} of each command, alternately; the CLI run as {how}"
    )
    for version, src in versions.items():
        rev = f" ({args.baseline_rev})" if version == "before" and args.baseline_rev else ""
        print(f"{version}: otel_blackbox from {src}{rev}")
    print(f'baseline `python -c "import sqlite3, click, json"`: median {base * 1000:.1f} ms')
    header = f"{'command':14}"
    for version in versions:
        header += f"  {version + ' ms':>9}  {'ratio':>5}  {'2x':4}  {'1.5x':4}"
    print(header)
    for command in [*commands, cold[1]]:
        line = f"{command:14}"
        for version in versions:
            if (version, command) not in samples:
                continue
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
