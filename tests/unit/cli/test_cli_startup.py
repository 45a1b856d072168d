"""Start-up of the CLI: a command imports its own module only, and the group's help imports none.

Each check runs the CLI in a fresh interpreter (the console script's code:
``from otel_blackbox.cli import main; main()``) and looks at what it loaded. Timings are the
benchmark's business (bench/bench_cli_startup.py), never a test's.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from helpers import Recorder

import otel_blackbox._cli
from otel_blackbox._cli.app import COMMANDS
from otel_blackbox.cli import cli

# What no read command and no help may load: the execution side, the cassette package (and its
# jsonschema), the OpenTelemetry SDK, the instrumentors, the viewer, the exporters. (The span view's
# readers use OpenInference's attribute names, openinference.semconv: a read command may load those.)
_HEAVY = (
    "jsonschema", "opentelemetry", "openinference.instrumentation", "otel_blackbox._cassette",
    "otel_blackbox._playback",
    "otel_blackbox._web", "otel_blackbox._spans.otlp_out", "otel_blackbox._spans.otlp_in",
    "otel_blackbox._spans.openinference", "otel_blackbox._render.html_report",
    "otel_blackbox._recorder.exporter", "otel_blackbox._recorder.processor", "requests", "httpx",
    "http.server",
)  # fmt: skip


def _run_fresh(
    args: list[str], tmp_path: Path, before: str = ""
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """The CLI with ``args`` in a new interpreter: its result, and every module it had loaded."""
    loaded = tmp_path / "modules.json"
    code = (
        "import json, sys\n"
        f"{before}\n"
        "from otel_blackbox.cli import main\n"
        "try:\n"
        f"    main({args!r})\n"
        "finally:\n"
        f"    open({str(loaded)!r}, 'w').write(json.dumps(sorted(sys.modules)))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["COLUMNS"] = "100"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    return result, json.loads(loaded.read_text())


@pytest.fixture
def small_db(recorder: Recorder) -> tuple[Path, str]:
    """Two traces, one with a failed span and tokens: every read command has something to print."""
    tracer = recorder.tracer
    with tracer.start_as_current_span("agent.run", attributes={"openinference.span.kind": "AGENT"}) as root:
        with tracer.start_as_current_span("llm", attributes={
            "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini", "llm.token_count.total": 12,
        }):  # fmt: skip
            pass
        try:
            with tracer.start_as_current_span("tool", attributes={"openinference.span.kind": "TOOL"}):
                raise TimeoutError("the tool timed out")
        except TimeoutError:
            pass
    with tracer.start_as_current_span("second"):
        pass
    recorder.flush()
    return recorder.db_path, format(root.get_span_context().trace_id, "032x")


@pytest.mark.parametrize(
    ("command", "expect"),
    [(["list"], "agent.run"), (["show", "{trace}"], "the tool timed out"), (["stats"], "gpt-4o-mini"),
     (["errors"], "the tool timed out")],
    ids=["list", "show", "stats", "errors"],
)  # fmt: skip
def test_read_commands_load_only_their_own_module(
    command: list[str], expect: str, small_db: tuple[Path, str], tmp_path: Path
) -> None:
    db, trace_id = small_db
    args = ["--db", str(db), *(arg.format(trace=trace_id[:8]) for arg in command)]
    result, loaded = _run_fresh(args, tmp_path)
    assert expect in result.stdout  # it ran, on this database
    assert [m for m in loaded if m.startswith(_HEAVY)] == []
    cli_modules = {m for m in loaded if m.startswith(("otel_blackbox.cli", "otel_blackbox._cli"))}
    assert cli_modules == {"otel_blackbox.cli", "otel_blackbox._cli", "otel_blackbox._cli.app",
                           "otel_blackbox._cli.common", "otel_blackbox._cli.traces"}  # fmt: skip


def test_help_loads_no_command_module(tmp_path: Path) -> None:
    result, loaded = _run_fresh(["--help"], tmp_path)
    assert all(f"  {name} " in result.stdout for name in COMMANDS)
    assert [m for m in loaded if m.startswith(_HEAVY)] == []
    # The group, its option's default (config) and the exceptions main turns into exit codes.
    ours = {m for m in loaded if m.startswith("otel_blackbox")}
    assert ours == {"otel_blackbox", "otel_blackbox._version", "otel_blackbox.cli", "otel_blackbox._cli",
                    "otel_blackbox._cli.app", "otel_blackbox._config", "otel_blackbox.errors"}  # fmt: skip


@pytest.mark.parametrize("columns", ["60", "100", "250"])
def test_help_is_what_click_prints_with_every_command_loaded(tmp_path: Path, columns: str) -> None:
    """The summaries --help shows without the commands are the ones click makes from the commands
    themselves, shortened the same way at any terminal width."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")} | {"COLUMNS": columns}
    code = "from otel_blackbox.cli import cli, main\n{load}main(['--help'])\n"
    lazy, loaded = (
        subprocess.run(
            [sys.executable, "-c", code.format(load=load)], capture_output=True, text=True, env=env
        )
        for load in ("", "dict(cli.commands.items())\n")
    )
    assert lazy.returncode == loaded.returncode == 0
    assert "Commands:" in lazy.stdout and lazy.stdout == loaded.stdout


def test_every_command_is_registered_with_its_own_summary() -> None:
    """COMMANDS names every command of every module of the package, in the module that defines it,
    with the short help click makes from the command's own help."""
    for info in pkgutil.iter_modules(otel_blackbox._cli.__path__):
        if info.name != "__main__":  # which would run the CLI
            importlib.import_module(f"otel_blackbox._cli.{info.name}")  # one COMMANDS forgot, too
    assert set(cli.commands) == set(COMMANDS)
    for name, (module, summary) in COMMANDS.items():
        command = cli.commands[name]
        assert command.callback is not None and command.callback.__module__ == f"otel_blackbox._cli.{module}"
        assert command.get_short_help_str(limit=10_000) == summary, name
        # What the stand-in --help uses must shorten like the command itself.
        for limit in (20, 45, 80):
            stand_in = click.Command(name, help=summary)
            assert stand_in.get_short_help_str(limit) == command.get_short_help_str(limit), (name, limit)
        assert not command.hidden and not command.deprecated and command.short_help is None


def test_unknown_command_still_suggests_one(tmp_path: Path) -> None:
    """click's "did you mean" looks at every command name, loaded or not."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    code = "from otel_blackbox.cli import main\nmain(['lisst'])\n"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "otel-blackbox: error: No such command 'lisst'. Did you mean 'list'? (see 'otel-blackbox --help')"
    )
