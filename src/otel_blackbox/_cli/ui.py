"""The ui command: a local, read-only web viewer over the span database."""

from __future__ import annotations

import contextlib

import click

from otel_blackbox._cli.app import cli
from otel_blackbox._cli.common import db_path
from otel_blackbox._store.connection import connect_reader
from otel_blackbox._web.server import LOCAL_HOST, make_server

__all__: list[str] = []


class _UsageExit(click.ClickException):
    exit_code = 2


@cli.command()
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="The port to listen on."
)
@click.option(
    "--host",
    default=LOCAL_HOST,
    show_default=True,
    help=f"The address to bind: {LOCAL_HOST} or localhost (the viewer is local-only).",
)
@click.option("--verbose", "-v", is_flag=True, help="Log each request to stderr.")
@click.pass_context
def ui(ctx: click.Context, port: int, host: str, verbose: bool) -> None:
    """A local web viewer: recent traces with filters, each trace's report, refreshed live.

    It listens on 127.0.0.1 only, answers only GET and opens the database read-only for each
    request, so traces a running agent writes appear without a restart.

    \b
    Example:
      otel-blackbox ui
      otel-blackbox --db run.db ui --port 9000
    """
    if host.strip().lower() not in (LOCAL_HOST, "localhost"):
        raise _UsageExit(f"--host {host}: the viewer is local-only: give {LOCAL_HOST} or localhost")
    host = LOCAL_HOST  # localhost may also name ::1, which this IPv4 server does not bind
    path = db_path(ctx)
    connect_reader(path).close()  # a missing or non-SQLite file: one line, exit 2, before serving
    try:
        server = make_server(path, host=host, port=port, verbose=verbose)
    except OSError as exc:
        raise _UsageExit(f"cannot listen on {LOCAL_HOST}:{port}: {exc.strerror or exc}") from None
    with server:
        url = f"http://{LOCAL_HOST}:{server.server_address[1]}"
        click.echo(f"otel-blackbox viewer on {url} (database {path}) — Ctrl-C to stop", err=True)
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()
