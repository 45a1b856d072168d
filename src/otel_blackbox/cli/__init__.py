"""The ``otel-blackbox`` command line: thin commands that parse, call the library, and print."""

from __future__ import annotations

from . import cassettes, evals, push, report, runs, sessions, traces, ui  # noqa: F401  (each module registers its commands)
from .app import cli, main

__all__ = ["cli", "main"]
