"""push: send recorded spans to an OTLP/HTTP receiver (a Collector, Jaeger, Tempo, Phoenix...).

The spans are rebuilt as SDK spans (_spans.otlp_out) and sent by the OpenTelemetry project's own
``OTLPSpanExporter`` (protobuf over HTTP), with its retries. The exporter, ``requests`` and
protobuf are imported inside the command: the analysis commands never load an HTTP client.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlunsplit

import click

from otel_blackbox._cli.app import cli
from otel_blackbox._cli.common import progress, reader
from otel_blackbox._config import parse_duration
from otel_blackbox._render.words import counted
from otel_blackbox._spans.semconv import ATTR_SPAN_OPEN
from otel_blackbox._store import queries
from otel_blackbox._urls import http_url
from otel_blackbox.errors import ConfigError

if TYPE_CHECKING:
    import requests
    from opentelemetry.sdk.trace import ReadableSpan

__all__: list[str] = []

_EXPORTER_LOGGER = "opentelemetry.exporter.otlp"


def _endpoint(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """http(s)://host[:port][/path]; a bare base URL gets the OTLP traces path /v1/traces."""
    try:
        parts = http_url(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None
    if parts.path in ("", "/"):
        parts = parts._replace(path="/v1/traces")
    return urlunsplit(parts)


def _headers(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key or any(c in item for c in "\r\n"):
            raise click.BadParameter(f"expected KEY=VALUE, got {item!r}", ctx, param)
        headers[key] = value.strip()
    return headers


def _since(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    try:
        return parse_duration(value, name="--since")
    except ConfigError as exc:
        raise click.BadParameter(str(exc).removeprefix("--since: "), ctx, param) from None


class _CannotReach(click.ClickException):
    exit_code = 2  # like bad input: nothing was wrong with the spans, the URL leads nowhere


class _Unreachable(Exception):
    """Raised in place of requests' ConnectionError, which the exporter would retry until --timeout."""


def _unreachable_reason(exc: BaseException) -> str | None:
    """'connection refused' / 'host not found' if that is what lies under a requests ConnectionError."""
    import socket

    todo: list[BaseException] = [exc]
    seen: set[int] = set()
    while todo:
        error = todo.pop()
        if id(error) in seen:
            continue
        seen.add(id(error))
        if isinstance(error, ConnectionRefusedError):
            return "connection refused"
        if isinstance(error, socket.gaierror):
            return "host not found"
        # requests wraps urllib3's MaxRetryError (in args), which wraps NewConnectionError (.reason),
        # raised from the OSError.
        nested = (error.__cause__, error.__context__, getattr(error, "reason", None), *error.args)
        todo.extend(e for e in nested if isinstance(e, BaseException))
    return None


@dataclass
class _Answer:
    """What the receiver did with the last request: unreachable (why), or its HTTP status line."""

    unreachable: str | None = None
    status: str | None = None


def _session(answer: _Answer) -> requests.Session:
    import requests

    class FailFastSession(requests.Session):
        """Fails at once on a refused connection or an unknown host (nothing a one-shot push should
        wait for), and notes each HTTP answer for the error message."""

        def request(self, *args: Any, **kwargs: Any) -> requests.Response:
            try:
                response = super().request(*args, **kwargs)
            except requests.ConnectionError as exc:
                answer.unreachable = _unreachable_reason(exc)
                if answer.unreachable is None:
                    raise  # a reset or a timeout: the exporter retries it within --timeout
                raise _Unreachable(answer.unreachable) from exc
            answer.status = f"HTTP {response.status_code} {response.reason or ''}".strip()
            return response

    return FailFastSession()


class _Collect(logging.Handler):
    """Keeps the exporter's log lines out of the terminal (the command prints its own one line)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def _quiet_exporter() -> Iterator[_Collect]:
    logger = logging.getLogger(_EXPORTER_LOGGER)
    handler, propagate = _Collect(), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


@cli.command()
@click.option(
    "--endpoint", required=True, metavar="URL", callback=_endpoint,
    help="The OTLP/HTTP traces URL, e.g. http://localhost:4318/v1/traces (a URL without a path gets "
    "/v1/traces).",
)  # fmt: skip
@click.option("--trace", "trace_id", metavar="ID", help="Only this trace (a unique prefix is enough).")
@click.option(
    "--since", metavar="AGE", callback=_since,
    help="Only traces with a span started in the last AGE (30m, 1h, 7d); whole traces are sent.",
)  # fmt: skip
@click.option(
    "--header", "headers", multiple=True, metavar="KEY=VALUE", callback=_headers,
    help="An HTTP header to send with every request, e.g. an API key (repeatable).",
)  # fmt: skip
@click.option(
    "--batch-size", type=click.IntRange(min=1), default=512, show_default=True, metavar="N",
    help="Spans per request.",
)  # fmt: skip
@click.option(
    "--timeout", type=click.FloatRange(min=0, min_open=True), default=10.0, show_default=True,
    metavar="SECONDS", help="Per request, the exporter's retries included.",
)  # fmt: skip
@click.pass_context
def push(
    ctx: click.Context,
    endpoint: str,
    trace_id: str | None,
    since: float | None,
    headers: dict[str, str],
    batch_size: int,
    timeout: float,
) -> None:
    """Send recorded spans to an OTLP/HTTP receiver (protobuf), with the OpenTelemetry exporter.

    Ids, parents, kinds, statuses, attributes, events, links, resource and scope are kept. A span
    still open when the recording stopped is sent with status ERROR and blackbox.span.open = true.
    The OTEL_EXPORTER_OTLP_* settings for headers, compression and certificates apply.

    Exit 0 when every span was accepted, 1 when the receiver refused a batch (the rest are not
    sent), 2 for bad input or a receiver that cannot be reached.

    \b
    Example:
      otel-blackbox push --endpoint http://localhost:4318 --since 1h
      otel-blackbox push --endpoint https://otlp.example.com/v1/traces --header x-api-key=KEY
    """
    since_ns = time.time_ns() - int(since * 1e9) if since is not None else None
    with reader(ctx) as conn:
        full_id = queries.resolve_trace_id(conn, trace_id) if trace_id else None
        traces = queries.select_traces(conn, full_id, since_ns)
        if not traces:
            click.echo("nothing to push: no traces recorded" + (" in that window" if since_ns else ""))
            return
        total = sum(count for _, count in traces)
        last_seen = queries.last_seen_by_trace(conn, full_id)
        from otel_blackbox._spans.otlp_out import rebuilt_spans  # protobuf and the encoder: only when needed

        spans = rebuilt_spans(conn, [t for t, _ in traces], last_seen)
        pushed, open_spans = _send(endpoint, headers, timeout, spans, batch_size, total)
    click.echo(
        f"pushed {counted(pushed, 'span')} in {counted(len(traces), 'trace')} to {endpoint} "
        f"({counted(open_spans, 'open span')} marked incomplete)"
    )


def _send(
    endpoint: str,
    headers: dict[str, str],
    timeout: float,
    spans: Iterator[ReadableSpan],
    batch_size: int,
    total: int,
) -> tuple[int, int]:
    """(spans pushed, open spans among them); stops at the first batch the receiver does not take."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    from otel_blackbox._spans.otlp_out import batched

    answer = _Answer()
    exporter = OTLPSpanExporter(endpoint=endpoint, headers=headers, timeout=timeout, session=_session(answer))
    pushed = open_spans = 0
    try:
        with _quiet_exporter() as logs, progress(total, "pushing") as advance:
            for number, batch in enumerate(batched(spans, batch_size), start=1):
                answer.unreachable = answer.status = None
                if exporter.export(batch) is not SpanExportResult.SUCCESS:
                    if answer.unreachable is not None:
                        before = f" ({pushed} of {counted(total, 'span')} pushed before)" if pushed else ""
                        raise _CannotReach(f"cannot reach {endpoint}: {answer.unreachable}{before}")
                    why = answer.status or (logs.messages or ["no answer"])[-1]
                    raise click.ClickException(  # exit 1
                        f"{total - pushed} of {counted(total, 'span')} not pushed: {endpoint} did not accept "
                        f"batch {number} ({counted(len(batch), 'span')}: {why}); "
                        f"{pushed} pushed before it"
                    )
                pushed += len(batch)
                open_spans += sum(1 for s in batch if (s.attributes or {}).get(ATTR_SPAN_OPEN) is True)
                advance(len(batch))
    finally:
        exporter.shutdown()  # type: ignore[no-untyped-call]  # unannotated in the exporter
    return pushed, open_spans
