"""The ``otel-blackbox`` command line: thin commands that parse, call the library, and print.

Each command's module is imported when that command runs (``app.COMMANDS``), not with this package.
"""

from __future__ import annotations

from .app import cli, main

__all__ = ["cli", "main"]
