"""``record``, ``replay`` and ``fork``: run an unmodified program with its HTTP traffic recorded,
replayed, or replayed up to a tool result and continued from a replacement."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from ..cassette.io import loads_json, read_text
from ..launch import run_program
from .app import cli

__all__: list[str] = []

# Options may follow the cassette argument; everything after `--` is the program and its own options.
_PASS_THROUGH = {"allow_interspersed_args": True}


def _program(command: tuple[str, ...]) -> tuple[str, ...]:
    """The program and its arguments (tolerates a `--` that reached us)."""
    program = command[1:] if command and command[0] == "--" else command
    if not program:
        raise click.UsageError("no program to run: give it after --")
    return program


@cli.command(context_settings=_PASS_THROUGH)
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Cassette to write.",
)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def record(output: Path, command: tuple[str, ...]) -> None:
    """Run a program live and record its LLM (and other HTTP) traffic as a cassette.

    The program's exit code is passed through; the cassette is written when it ends.

    \b
    Example:
      otel-blackbox record -o run.json -- python agent.py
    """
    sys.exit(run_program("record", output, _program(command)))


@cli.command(context_settings=_PASS_THROUGH)
@click.argument("cassette", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--match", type=click.Choice(["exact", "sequence"]), default="exact", show_default=True,
    help="exact: each request must equal the recorded one; sequence: serve responses in order.",
)  # fmt: skip
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def replay(cassette: Path, match: str, command: tuple[str, ...]) -> None:
    """Run a program offline against a cassette: no network, no API key, no model variance.

    Exit 1 at the first divergence (the message names the step and the JSON path), or when the
    program did not make every recorded call; otherwise the program's own exit code.

    \b
    Example:
      otel-blackbox replay run.json -- python agent.py
      otel-blackbox replay run.json --match sequence -- python agent.py
    """
    sys.exit(run_program("replay", cassette, _program(command), match=match))


def _json_option(text: str, option: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise click.BadParameter(
            f"not JSON: {text!r} (quote a string: '\"text\"')", param_hint=option
        ) from None


@cli.command(context_settings=_PASS_THROUGH)
@click.argument("cassette", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--at", "at", required=True, type=click.IntRange(min=0), help="The tool_result step to replace."
)
@click.option(
    "--set", "result", required=True, metavar="JSON", help="The result the tool returns instead (JSON)."
)
@click.option(
    "--script", type=click.Path(dir_okay=False, path_type=Path), help="Model outputs to serve after the fork."
)
@click.option("--live", is_flag=True, help="After the fork, send model calls to the real upstream.")
@click.option(
    "-o", "--output", required=True, type=click.Path(dir_okay=False, path_type=Path), help="Child cassette."
)
@click.option("--match", type=click.Choice(["exact", "sequence"]), default="exact", show_default=True)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def fork(
    cassette: Path,
    at: int,
    result: str,
    script: Path | None,
    live: bool,
    output: Path,
    match: str,
    command: tuple[str, ...],
) -> None:
    """Replay a run up to a tool result, replace it, and let the run continue from there.

    Steps before --at are copied verbatim; the model then sees the replacement (the program's own
    variables still hold the original). Continue --live, or from a --script of neutral model
    outputs (a JSON list of {"type": "final_answer", "text": ...} / {"type": "tool_calls", ...}).

    \b
    Example:
      otel-blackbox fork run.json --at 7 --set '{"available": false}' \\
          --script replies.json -o child.json -- python agent.py
      otel-blackbox diff run.json child.json
    """
    if live == (script is not None):
        raise click.UsageError("give exactly one of --live and --script FILE")
    replies = None
    if script is not None:
        data = loads_json(read_text(script), str(script))
        replies = data.get("replies") if isinstance(data, dict) else data
        if not isinstance(replies, list):
            raise click.BadParameter(
                'a JSON list of model outputs (or {"replies": [...]})', param_hint="--script"
            )
    plan = {
        "at": at,
        "result": _json_option(result, "--set"),
        "output": str(output.resolve()),
        "replies": replies,
    }
    sys.exit(run_program("fork", cassette, _program(command), match=match, fork=plan))
