"""The report command: one trace, or one cassette, as a self-contained HTML page."""

from __future__ import annotations

from pathlib import Path

import click

from ..atomic import atomic_text_writer
from ..cassette.io import load_cassette
from ..render.html_report import cassette_report, trace_report
from ..render.text import safe
from ..store import queries
from .app import cli
from .common import progress, reader

__all__: list[str] = []

# Small traces render in a blink: a bar only for large ones (and only on a terminal).
_BAR_FROM = 1000


@cli.command()
@click.argument("target", metavar="TRACE_ID|CASSETTE.json")
@click.option(
    "-o", "--output", required=True, metavar="FILE.html", help="Where to write the page (atomically)."
)
@click.pass_context
def report(ctx: click.Context, target: str, output: str) -> None:
    """One trace (a unique id prefix, from --db) or one cassette file as a single HTML page.

    The page is self-contained (inline CSS and JS, no network): a waterfall and span tree, the
    selected span's messages, tool calls, outputs and exceptions, search and a failed-only filter.

    \b
    Example:
      otel-blackbox report 4bf92f35 -o incident.html
      otel-blackbox report incident.json -o incident.html
    """
    path = Path(target)
    if target.lower().endswith(".json") and path.is_file():
        cassette = load_cassette(path)
        page = cassette_report(cassette)
        what = f"cassette {safe(cassette.id)}, {len(cassette.steps)} steps"
    else:
        with reader(ctx) as conn:
            full_id = queries.resolve_trace_id(conn, target)
            spans = queries.trace_spans(conn, full_id)
            (summary,) = queries.summarize(conn, [full_id])
            last_seen = queries.last_seen_by_trace(conn, full_id).get(full_id, summary.end_ns)
        with progress(len(spans) if len(spans) >= _BAR_FROM else 0, "rendering") as advance:
            page = trace_report(summary, spans, last_seen, span_done=advance)
        what = f"trace {full_id}, {len(spans)} spans"
    with atomic_text_writer(output) as handle:
        handle.write(page)
    click.echo(f"wrote {safe(output)}: {what}")
