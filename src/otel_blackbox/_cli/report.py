"""The report command: one trace, a run or a session, or one cassette, as a self-contained HTML page."""

from __future__ import annotations

from pathlib import Path

import click

from otel_blackbox._atomic import atomic_text_writer
from otel_blackbox._cli.app import cli
from otel_blackbox._cli.common import (
    ALLOW_UNVERIFIED,
    carried_warning,
    checked_inputs,
    exactly_one,
    group_spans,
    output_option,
    progress,
    reader,
    utf8_text,
)
from otel_blackbox._render.html_report import SpanGroup, cassette_report, group_report, trace_report
from otel_blackbox._render.text import safe
from otel_blackbox._render.words import counted
from otel_blackbox._store import queries, runs
from otel_blackbox._store.trace_logs import load_trace

__all__: list[str] = []

# Small traces render in a blink: a bar only for large ones (and only on a terminal).
_BAR_FROM = 1000


@cli.command()
@click.argument("target", metavar="[TRACE_ID|CASSETTE.json]", required=False)
@click.option(
    "--run", "run_id", metavar="RUN_ID", help="Every trace of this run (a unique prefix is enough)."
)
@click.option(
    "--session",
    "session_id",
    metavar="ID",
    callback=utf8_text,
    help="Every trace with a span of this session id.",
)
@output_option("Where to write the page (atomically).", metavar="FILE.html")
@click.option(
    "--full", is_flag=True,
    help="Every input message of every model call, and every attribute (by default a call whose input "
    "starts with an earlier call's refers to it: \"same 214 messages as call 12, 2 new\").",
)  # fmt: skip
@ALLOW_UNVERIFIED
@click.pass_context
def report(
    ctx: click.Context,
    target: str | None,
    run_id: str | None,
    session_id: str | None,
    output: str,
    full: bool,
    allow_unverified: bool,
) -> None:
    """One trace (a unique id prefix, from --db), a run or a session, or one cassette, as one HTML page.

    The page is self-contained (inline CSS and JS, no network): a waterfall and span tree, the
    selected span's messages, tool calls, outputs and exceptions, search and a failed-only filter.
    With --run or --session, every trace of the run (see `runs`) or the session on one time axis.

    Each model call carries the whole conversation before it: a call whose input starts with an
    earlier call's shows "same 214 messages as call 12, 2 new" (a link to that call) and the new
    messages, and leaves out the attributes that hold them, so that a long run's page stays one a
    browser opens; --full embeds every message and attribute.

    \b
    Example:
      otel-blackbox report 4bf92f35 -o incident.html
      otel-blackbox report incident.json -o incident.html
      otel-blackbox report --run 3f9a0c1d -o run.html
    """
    exactly_one(ctx, {"TRACE_ID|CASSETTE.json": target, "--run": run_id, "--session": session_id})
    if target is None:
        page, what = _group_page(ctx, run_id, session_id, full)
    elif target.lower().endswith((".json", ".json.gz")) and Path(target).is_file():
        (cassette,) = checked_inputs([Path(target)], allow_unverified)
        page = cassette_report(cassette, unverified=carried_warning())
        what = f"cassette {safe(cassette.id)}, {counted(len(cassette.steps), 'step')}"
    else:
        with reader(ctx) as conn:
            full_id = queries.resolve_trace_id(conn, target)
            spans = load_trace(conn, full_id)
            (summary,) = queries.summarize(conn, [full_id])
            last_seen = queries.last_seen_by_trace(conn, full_id).get(full_id, summary.end_ns)
            # Within the connection: attributes stored apart are read when asked for (_store).
            with progress(len(spans) if len(spans) >= _BAR_FROM else 0, "rendering") as advance:
                page = trace_report(summary, spans, last_seen, span_done=advance, full=full)
        what = f"trace {full_id}, {counted(len(spans), 'span')}"
    with atomic_text_writer(output) as handle:
        handle.write(page)
    click.echo(f"wrote {safe(output)}: {what}")


def _group_page(
    ctx: click.Context, run_id: str | None, session_id: str | None, full: bool
) -> tuple[str, str]:
    """The page of every trace of a run or a session, and what it holds."""
    with reader(ctx) as conn:
        kind, ident, spans = group_spans(conn, run_id, session_id)
        last_seen = runs.last_seen_by_traces(conn, spans)
        pid = spans[0].pid if kind == "run" else None  # one process wrote every span of a run
        with progress(len(spans) if len(spans) >= _BAR_FROM else 0, "rendering") as advance:
            page = group_report(SpanGroup(kind, ident, pid), spans, last_seen, span_done=advance, full=full)
    traces = len({s.trace_id for s in spans})
    return page, f"{kind} {safe(ident)}, {counted(traces, 'trace')}, {counted(len(spans), 'span')}"
