"""serve: an OTLP/HTTP trace receiver in front of the database (the receiver package).

Any OpenTelemetry SDK (Python, JavaScript, Go, Java...) or a Collector's ``otlphttp`` exporter can
then write into a black box. The receiver, protobuf and the SDK's proto classes are imported inside
the command: nothing of them loads for the other commands.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from typing import Any

import click

from otel_blackbox._cli.app import cli
from otel_blackbox._cli.common import db_path
from otel_blackbox._cli.listen import check_host, check_token, is_loopback

__all__: list[str] = []

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 4318  # OTLP/HTTP's
DEFAULT_MAX_BODY_MB = 20.0  # the OTLP specification's recommended limit (MiB)


class _UsageExit(click.ClickException):
    exit_code = 2


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/v1/traces"


@cli.command()
@click.option(
    "--host",
    default=DEFAULT_HOST,
    show_default=True,
    callback=check_host,
    help="The address to listen on. Any but a loopback address needs --token.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="The port to listen on (0: any free port; the line printed says which).",
)
@click.option(
    "--token",
    envvar="OTEL_BLACKBOX_SERVE_TOKEN",
    metavar="TOKEN",
    callback=check_token,
    help="Require 'Authorization: Bearer TOKEN' on every request (env OTEL_BLACKBOX_SERVE_TOKEN, which "
    "keeps it out of ps).",
)
@click.option(
    "--max-body-mb",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_MAX_BODY_MB,
    show_default=True,
    metavar="MB",
    help="A request body larger than this (MiB), as sent or decompressed, is answered 413.",
)
@click.option("--verbose", "-v", is_flag=True, help="Log each request and its answer to stderr.")
@click.pass_context
def serve(
    ctx: click.Context, host: str, port: int, token: str | None, max_body_mb: float, verbose: bool
) -> None:
    """Receive spans over OTLP/HTTP (protobuf or JSON) from any OpenTelemetry SDK or Collector.

    POST /v1/traces, as every OTLP/HTTP exporter sends it (gzip too), is stored in the database
    through the recorder's own writer: the same redaction, bounds and columns as recorded spans.
    A request is answered 200 once its spans are committed (a partial success counts the malformed
    spans skipped), or taken not at all: 503 with Retry-After, for the exporter to send it again,
    while the queue is full (OTEL_BLACKBOX_MAX_QUEUE_SIZE spans waiting for the database). The
    whole serve process is one run, starting at its earliest span. SIGTERM or Ctrl-C answers the
    requests in flight, writes everything received and exits 0.

    \b
    Example:
      otel-blackbox serve
      OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 python agent.py
      OTEL_BLACKBOX_SERVE_TOKEN=s3cret otel-blackbox --db fleet.db serve --host 0.0.0.0
    """
    if token is None and not is_loopback(host):
        raise _UsageExit(
            f"--host {host or '(all interfaces)'}: listening beyond this machine needs --token "
            "(or OTEL_BLACKBOX_SERVE_TOKEN)"
        )
    from otel_blackbox._config import BlackboxConfig
    from otel_blackbox._receiver.http import make_server
    from otel_blackbox._receiver.intake import Intake
    from otel_blackbox._receiver.service import TraceService
    from otel_blackbox._store.connection import connect_writer

    path = db_path(ctx)
    config = BlackboxConfig.from_env(db_path=path)
    # A file that cannot be a database: one line, exit 2, before listening.
    connect_writer(path, busy_timeout_ms=config.busy_timeout_ms).close()
    _log_to_stderr(verbose)

    intakes: list[Intake] = []

    def service(real_port: int) -> TraceService:
        intakes.append(Intake(config, source=f"serve {host}:{real_port}"))
        return TraceService(intakes[0])

    try:
        server = make_server(
            host, port, token=token, max_body_bytes=int(max_body_mb * 1024 * 1024), service=service,
            verbose=verbose,
        )  # fmt: skip
    except OSError as exc:
        raise _UsageExit(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    intake = intakes[0]
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, on_signal)
    intake.start()
    serving = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    serving.start()
    click.echo(
        f"otel-blackbox: receiving OTLP/HTTP traces on {_url(host, server.port)} into {path} "
        "(Ctrl-C to stop)",
        err=True,
    )
    stop.wait()
    server.stop()  # nothing more accepted; the requests in flight answered
    serving.join()
    written = intake.stop()
    receiver = server.service
    assert receiver is not None
    # Counts after labels, so that no word needs a plural. A span sent again (an exporter's retry)
    # or ending a span stored open is not stored anew: it is counted apart.
    again = max(0, intake.committed - intake.stored)
    spans = f"{intake.stored} stored, {again} already stored, {receiver.rejected} malformed"
    if intake.lost:
        spans += f", {intake.lost} could not be stored"
    summary = (
        f"otel-blackbox: stopped (spans: {spans}; requests: {receiver.requests} answered, "
        f"{receiver.refused} refused while the queue was full)"
    )
    if not written:
        summary += "; the writer did not finish in time"
    click.echo(summary, err=True)


class _OneLine(logging.Formatter):
    """A warning is one line: an exception is named, never printed as a traceback."""

    def formatException(self, ei: Any) -> str:
        exc = ei[1]
        return f"({type(exc).__name__}: {exc})" if exc is not None else ""

    def format(self, record: logging.LogRecord) -> str:
        return " ".join(super().format(record).splitlines())


def _log_to_stderr(verbose: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine("%(message)s"))
    log = logging.getLogger("otel_blackbox")
    log.addHandler(handler)
    log.setLevel(logging.INFO if verbose else logging.WARNING)
    log.propagate = False
