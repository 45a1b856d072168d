"""``record`` and ``replay``: run an unmodified program with its HTTP traffic recorded or replayed."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..launch import run_program
from .app import cli

__all__: list[str] = []

_PASS_THROUGH = {"ignore_unknown_options": True, "allow_interspersed_args": False}


def _program(command: tuple[str, ...]) -> tuple[str, ...]:
    """The command after ``--`` (click keeps the separator once a positional argument came first)."""
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
