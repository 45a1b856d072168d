"""``export``: the stored spans as JSON lines, OpenInference (Phoenix's v1.Span shape) or OTLP/JSON."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

import click

from otel_blackbox._cli.app import cli
from otel_blackbox._cli.common import output_option, progress, reader
from otel_blackbox._render.text import safe, safe_json
from otel_blackbox._render.words import counted
from otel_blackbox._store import queries

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__: list[str] = []


@cli.command()
@output_option("Output file, or - for stdout.", stdout=True)
@click.option("--trace", "trace_id", metavar="ID", help="Only this trace (a unique prefix is enough).")
@click.option(
    "--format", "fmt", type=click.Choice(["openinference", "otlp"]), default="openinference",
    show_default=True,
    help="openinference: Phoenix v1.Span JSON, one span a line. otlp: OTLP/JSON, one "
    "ExportTraceServiceRequest (up to 512 spans) a line, as the Collector's otlpjsonfile receiver reads.",
)  # fmt: skip
@click.pass_context
def export(ctx: click.Context, output: str, trace_id: str | None, fmt: str) -> None:
    """Export spans as JSON lines: OpenInference (Phoenix's v1.Span shape) or OTLP/JSON.

    A span still open when the recording stopped is exported with status ERROR and
    blackbox.span.open = true, not dropped.

    \b
    Example:
      otel-blackbox export -o spans.jsonl --trace 4bf92f35
      otel-blackbox export --format otlp -o traces.jsonl
    """
    from otel_blackbox._atomic import atomic_text_writer
    from otel_blackbox._spans.openinference import phoenix_spans

    with reader(ctx) as conn:
        full_id = queries.resolve_trace_id(conn, trace_id) if trace_id else None
        last_seen = queries.last_seen_by_trace(conn, full_id)
        if fmt == "otlp":
            from otel_blackbox._spans.otlp_out import DEFAULT_BATCH_SIZE, otlp_json_lines, rebuilt_spans

            traces = queries.select_traces(conn, full_id)
            span_count: int | None = sum(n for _, n in traces)  # an OTLP line holds many spans
            made = [0]  # spans made into lines so far: a line holds up to 512, fewer when they are long

            def counted_spans(spans: Iterator[ReadableSpan]) -> Iterator[ReadableSpan]:
                for span in spans:
                    made[0] += 1
                    yield span

            spans = counted_spans(rebuilt_spans(conn, [t for t, _ in traces], last_seen))
            lines: Iterator[str] = otlp_json_lines(spans, DEFAULT_BATCH_SIZE)
        else:
            span_count = None
            made = [0]
            lines = (
                json.dumps(span, ensure_ascii=False, separators=(",", ":"))
                for span in phoenix_spans(queries.iter_spans(conn, full_id), last_seen)
            )
        # The same JSON with bidi overrides, C1 controls and lone surrogates as \u escapes: safe on a
        # terminal, and writable as UTF-8.
        lines = (safe_json(line) for line in lines)
        if output == "-":
            for line in lines:
                click.echo(line)
            return
        total = span_count if span_count is not None else queries.count_spans(conn, full_id)
        written = done = 0
        with atomic_text_writer(output) as handle, progress(total, "exporting") as advance:
            for line in lines:
                handle.write(line + "\n")
                written += 1
                now = made[0] if span_count is not None else written
                advance(now - done)
                done = now
        wrote = written if span_count is None else span_count
        click.echo(f"wrote {counted(wrote, 'span')} to {safe(output)}", err=True)
