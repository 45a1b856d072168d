"""The ``otel-blackbox`` command line: ``main`` is its entry point (``python -m otel_blackbox.cli``).

The commands live in the private ``_cli`` package; each command's module is imported when that
command runs, not with this module.
"""

from __future__ import annotations

from otel_blackbox._cli.app import cli, main

__all__ = ["cli", "main"]

if __name__ == "__main__":
    main()
