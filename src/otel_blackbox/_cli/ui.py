"""The ui command: the workbench, a local web page over the span database and the incident path."""

from __future__ import annotations

import contextlib
import shlex
from pathlib import Path

import click

from otel_blackbox._cli.app import cli
from otel_blackbox._cli.common import db_path
from otel_blackbox._cli.listen import check_host, check_token
from otel_blackbox._store.connection import connect_reader
from otel_blackbox._web.guard import LOCAL_HOST

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
    callback=check_host,
    help=f"The address to bind: {LOCAL_HOST} (or localhost); any other needs --token.",
)
@click.option(
    "--token",
    envvar="OTEL_BLACKBOX_UI_TOKEN",
    metavar="TOKEN",
    callback=check_token,
    help="Beyond 127.0.0.1: the access token (open /?token=TOKEN once, or send 'Authorization: Bearer "
    "TOKEN'; env OTEL_BLACKBOX_UI_TOKEN keeps it out of ps).",
)
@click.option("--read-only", is_flag=True, help="Show everything, refuse every action (403): a demo mode.")
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="Where reruns, job records and saved contracts go (default: DB.workbench/ beside the database).",
)
@click.option(
    "--program",
    metavar="CMD",
    help="A program the rerun form may choose instead of the built-in agent, run as `rerun INCIDENT "
    "--model M --stub-tools -- CMD` (its tools answered from the recording).",
)
@click.option("--verbose", "-v", is_flag=True, help="Log each request to stderr.")
@click.pass_context
def ui(
    ctx: click.Context,
    port: int,
    host: str,
    token: str | None,
    read_only: bool,
    workdir: Path | None,
    program: str | None,
    verbose: bool,
) -> None:
    """The workbench: runs, a run's timeline opened on its failing span, a rerun from the page,
    its verdict and diff, contracts saved and run all.

    Runs and traces are listed with their status; a run's page is its report with the failing span
    selected and, on a failed run, a rerun form: provider (those whose SDK is installed and whose key
    or base URL this process has in its environment), model, cost limit, a stub for each tool the
    incident has no result for. The rerun (the built-in agent, or the --program, every tool
    answered from the recording, never run) is a background job with its progress, cancellable;
    its child cassette, verdict and diff follow, and a good child gives a contract to save. Saved
    contracts (in DB.workbench/contracts, usable by `eval run-all`) run all from the contracts page.

    The database is only read. Listening on 127.0.0.1, the workbench answers pages whose Host is
    the loopback; any other address needs --token. Every action is a POST carrying this launch's
    token from the page, refused (403) from another origin; --read-only refuses them all.

    \b
    Example:
      otel-blackbox ui
      otel-blackbox --db demo.db ui --read-only
      otel-blackbox ui --program 'python agent.py'
      OTEL_BLACKBOX_UI_TOKEN=s3cret otel-blackbox ui --host 0.0.0.0 --port 9000
    """
    local = host.lower() in (LOCAL_HOST, "localhost")
    if not local and token is None:
        where = host or "(all interfaces)"
        raise _UsageExit(
            f"--host {where}: the workbench beyond {LOCAL_HOST} needs --token (or OTEL_BLACKBOX_UI_TOKEN)"
        )
    command = None
    if program is not None:
        try:
            command = shlex.split(program)
        except ValueError as exc:
            raise _UsageExit(f"--program: {exc}") from None
        if not command:
            raise _UsageExit("--program: give the command that runs the agent")
    if local:
        host = LOCAL_HOST  # localhost may also name ::1, which this IPv4 server does not bind
    from otel_blackbox._web.server import make_server  # the workbench: when it runs, not for --help

    path = db_path(ctx)
    connect_reader(path).close()  # a missing or non-SQLite file: one line, exit 2, before serving
    try:
        server = make_server(path, host=host, port=port, verbose=verbose, read_only=read_only,
                             token=None if local else token, workdir=workdir, program=command)  # fmt: skip
    except OSError as exc:
        raise _UsageExit(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    with server:
        shown = f"[{host}]" if ":" in host else host
        url = f"http://{shown}:{server.server_address[1]}"
        mode = ", read-only" if read_only else ""
        click.echo(
            f"otel-blackbox workbench on {url} (database {path}, files in {server.workspace.root}{mode})"
            " — Ctrl-C to stop",
            err=True,
        )
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()
        server.board.stop_all()
