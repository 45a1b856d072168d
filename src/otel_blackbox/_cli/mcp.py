"""The mcp command: the Model Context Protocol server over stdio (the ``[mcp]`` extra)."""

from __future__ import annotations

import click

from otel_blackbox._cli.app import cli
from otel_blackbox._cli.common import db_path
from otel_blackbox.errors import BlackboxError

__all__: list[str] = []

INSTALL = "pip install 'otel-blackbox[mcp]'"


@cli.command("mcp")
@click.pass_context
def mcp_command(ctx: click.Context) -> None:
    """A Model Context Protocol server over stdio, for a coding agent to read the black box.

    Tools: list_traces, list_runs, errors, show_trace, get_span, stats, write_cassette,
    inspect_cassette, verify_cassette, diff_cassettes, eval_run, and two that call the model
    (keys from the server's environment): blame, and fork_from_step (change one step of a run
    and let it continue). The database is opened read-only at each call; the only files the
    server writes are cassettes, where a call says. Every result is bounded, and a paged one says
    how to ask for the rest.

    Needs the official MCP SDK: pip install 'otel-blackbox[mcp]'.

    \b
    Example:
      otel-blackbox mcp --db ./blackbox.db
      claude mcp add blackbox -- otel-blackbox mcp --db /abs/path/blackbox.db
    """
    path = db_path(ctx)  # --db, before the command or after it, as for every command
    try:  # the SDK (and its HTTP stack): only when the server runs, and an extra
        from otel_blackbox._mcp.server import serve
    except ImportError as exc:
        if (exc.name or "").split(".")[0] != "mcp":
            raise
        raise BlackboxError(f"the MCP server needs the mcp package (2.x): {INSTALL}") from None
    serve(path)
