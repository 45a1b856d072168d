"""Commands over the span database: list, show, errors, stats, cleanup (export: _cli/export.py)."""

from __future__ import annotations

import sqlite3

import click

from otel_blackbox._cli.app import cli
from otel_blackbox._cli.common import (
    PRICE_MODEL,
    db_path,
    echo_json,
    exactly_one,
    group_spans,
    progress,
    reader,
    style,
    trace_run_or_session,
    utf8_text,
)
from otel_blackbox._cost import llm_calls
from otel_blackbox._cost.prices import Cost
from otel_blackbox._cost.spans import spans_cost
from otel_blackbox._render.text import (
    clip,
    fmt_duration,
    fmt_time,
    render_tree,
    safe,
    span_to_json,
    status_marker,
)
from otel_blackbox._render.words import counted
from otel_blackbox._spans.sdk_limits import ATTRIBUTES_SETTING, EVENTS_SETTING, GLOBAL_ATTRIBUTES_SETTING
from otel_blackbox._store import queries
from otel_blackbox._store.trace_logs import load_trace

__all__: list[str] = []

# A root's name in a line of `list`, at most (names are stored at most 1,024 characters long, and a
# database written before that may hold longer ones).
_ROOT_CHARS = 120
# An upper bound too: SQLite's LIMIT takes a 64-bit integer, and no one lists a billion traces.
_LIMIT = click.IntRange(min=1, max=1_000_000_000)


@cli.command("list")
@click.option("--limit", "-n", type=_LIMIT, default=20, show_default=True, help="How many traces.")
@click.option("--session", metavar="ID", callback=utf8_text, help="Only traces of this session id.")
@click.option("--errors-only", is_flag=True, help="Only traces with a failed span.")
@PRICE_MODEL
@click.option("--json", "as_json", is_flag=True, help="JSON instead of a table.")
@click.pass_context
def list_traces(
    ctx: click.Context,
    limit: int,
    session: str | None,
    errors_only: bool,
    price_model: str | None,
    as_json: bool,
) -> None:
    """Recent traces: start, status (ok / error / open / incomplete), spans, duration, cost, trace id,
    root name.

    Status: open if a span is still open, else error if one failed, else incomplete if it is an
    imported conversation that stopped before the model's last word (a call never answered, a
    tool's result or a user message with no answer after it), else ok.

    Cost: the trace's LLM calls priced now with genai-prices ("-" when none has a price, "+ N
    unpriced" when N of them have none; --price-model NAME prices their tokens as model NAME).

    \b
    Example:
      otel-blackbox list --limit 5 --errors-only
      otel-blackbox list --price-model gpt-4.1-mini     # what the same tokens would cost on it
    """
    with reader(ctx) as conn:
        traces = queries.recent_traces(conn, limit=limit, session=session, errors_only=errors_only)
        costs = llm_calls.trace_costs(conn, [t.trace_id for t in traces], as_model=price_model)
    if as_json:
        shown = [{**t.__dict__, "status": t.status, "duration_ns": t.duration_ns} for t in traces]
        echo_json([{**row, **costs[row["trace_id"]].json()} for row in shown])
        return
    if not traces:
        click.echo("no traces recorded yet" if not (session or errors_only) else "no matching traces")
        return
    width = max([9, *(len(cost.text()) for cost in costs.values())])  # "$0.0097 + 1 unpriced" fits
    starts = {t.trace_id: fmt_time(t.start_ns) for t in traces}
    stamp = max(map(len, starts.values()))  # a time with its zone: "... UTC", "... CEST"
    status_width = max(6, *(len(t.status) for t in traces))  # "incomplete" widens it
    click.echo(
        f"{'START':{stamp}}  {'STATUS':{status_width}}  {'SPANS':>5}  {'DURATION':>9}  {'COST':>{width}}  "
        f"{'TRACE ID':32}  ROOT"
    )
    for t in traces:
        status = style(f"{t.status:{status_width}}", t.status)
        spans = f"{t.span_count}" + (f"/{t.open_count}o" if t.open_count else "")
        click.echo(
            f"{starts[t.trace_id]:{stamp}}  {status}  {spans:>5}  {fmt_duration(t.duration_ns):>9}  "
            f"{costs[t.trace_id].text():>{width}}  {t.trace_id:32}  {safe(clip(t.root_name, _ROOT_CHARS))}"
        )


@cli.command()
@trace_run_or_session
@click.option(
    "-v", "--verbose", is_flag=True, help="Prompts, messages, tool calls, outputs, tokens, exceptions."
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "markdown"]), default="text", show_default=True,
    help="text: the tree for a terminal. markdown: the tree and every span's details, to paste into an "
    "issue or a chat (bounded, long values shortened, unless --full).",
)  # fmt: skip
@click.option(
    "--full", is_flag=True,
    help="With -v, --format markdown or --json: do not shorten or bound anything, and show every input "
    "message of every model call (by default a call whose input starts with an earlier call's says "
    "\"same 214 messages as call 12, 2 new\" and shows the new ones).",
)  # fmt: skip
@PRICE_MODEL
@click.option(
    "--json", "as_json", is_flag=True, help="The trace summary (or each trace's) and every span as JSON."
)
@click.pass_context
def show(
    ctx: click.Context,
    trace_id: str | None,
    run_id: str | None,
    session_id: str | None,
    verbose: bool,
    fmt: str,
    full: bool,
    price_model: str | None,
    as_json: bool,
) -> None:
    """The span tree of one trace; a unique prefix of the trace id is enough.

    With --run or --session instead of TRACE_ID, every trace of the run (see `runs`) or of the
    session, in time order. --format markdown always holds the details -v shows, and is escaped
    so that no span name or message can break it.

    Model calls are numbered (call 1, call 2...). Each one carries the whole conversation before
    it: a call whose input starts with an earlier call's whole input is shown as "same 214 messages
    as call 12, 2 new" and its new messages (--json: "same_input_as", without the attributes that
    repeat them); --full shows every message of every call.

    \b
    Example:
      otel-blackbox show 4bf92f35 -v
      otel-blackbox show 4bf92f35 --format markdown > incident.md
      otel-blackbox show --run 3f9a0c1d --format markdown
    """
    exactly_one(ctx, {"TRACE_ID": trace_id, "--run": run_id, "--session": session_id})
    if as_json and fmt != "text":
        raise click.UsageError("--json and --format markdown: give one of them", ctx)
    kind, ident = "trace", ""
    with reader(ctx) as conn:
        if trace_id is not None:
            ident = queries.resolve_trace_id(conn, trace_id)
            spans = load_trace(conn, ident)
            by_trace = {ident: spans}
        else:
            kind, ident, spans = group_spans(conn, run_id, session_id)
            by_trace = {}
            for span in spans:
                by_trace.setdefault(span.trace_id, []).append(span)
        ids = list(by_trace)  # summarized 500 at a time: SQLite bounds a statement's parameters
        summaries = {
            s.trace_id: s for n in range(0, len(ids), 500) for s in queries.summarize(conn, ids[n : n + 500])
        }
        traces = [(summaries[t], by_trace[t]) for t in sorted(by_trace, key=lambda t: summaries[t].start_ns)]
        # Within the connection: a span's attributes stored apart are read when asked for (_store).
        _print_traces(kind, ident, spans, traces, verbose=verbose, fmt=fmt, full=full,
                      price_model=price_model, as_json=as_json)  # fmt: skip


def _print_traces(
    kind: str,
    ident: str,
    spans: list[queries.SpanRecord],
    traces: list[tuple[queries.TraceSummary, list[queries.SpanRecord]]],
    *,
    verbose: bool,
    fmt: str,
    full: bool,
    price_model: str | None,
    as_json: bool,
) -> None:
    """What `show` prints of these traces (``spans``: all of theirs), as text, Markdown or JSON."""
    from otel_blackbox._render.repeats import number_calls

    calls = number_calls(spans, collapse=not full)  # across a run's traces: one numbering
    if as_json:
        found = [{**s.__dict__, "status": s.status, "duration_ns": s.duration_ns} for s, _ in traces]
        group = {"kind": kind, "id": ident, "traces": found} if kind != "trace" else {"trace": found[0]}
        for row, (_, trace_spans) in zip(found, traces, strict=True):
            row.update(spans_cost(trace_spans, as_model=price_model).json())
        echo_json({**group, "spans": [span_to_json(s, price_model, calls) for s in spans]})
        return
    if fmt == "markdown":
        from otel_blackbox._render.markdown.report import group_markdown, trace_markdown

        if kind == "trace":
            click.echo(trace_markdown(*traces[0], full=full, as_model=price_model), nl=False)
        else:
            click.echo(group_markdown(kind, ident, traces, full=full, as_model=price_model), nl=False)
        return
    if kind != "trace":
        click.echo(f"{kind} {safe(ident)}: {counted(len(traces), 'trace')}, {counted(len(spans), 'span')}")
    for n, (summary, trace) in enumerate(traces):
        if n or kind != "trace":
            click.echo("")
        limit = None if full else 1000
        lines = render_tree(
            summary,
            trace,
            verbose=verbose,
            max_chars=limit,
            style=style,
            price_model=price_model,
            calls=calls,
        )
        for line in lines:
            click.echo(line)


@cli.command()
@click.option("--limit", "-n", type=_LIMIT, default=20, show_default=True, help="How many spans.")
@click.option("--json", "as_json", is_flag=True, help="JSON instead of text.")
@click.pass_context
def errors(ctx: click.Context, limit: int, as_json: bool) -> None:
    """Recent failed spans, newest first, each with its trace id and exception.

    \b
    Example:
      otel-blackbox errors --limit 5
    """
    with reader(ctx) as conn:
        spans = queries.error_spans(conn, limit=limit)
    if as_json:
        echo_json([span_to_json(s) for s in spans])
        return
    if not spans:
        click.echo("no failed spans")
        return
    from otel_blackbox._spans.view.registry import view_of  # the readers: not for every command

    for s in spans:
        exc = next(iter(s.exception_events), {}).get("attributes", {})
        reason = s.status_message or (f"{exc.get('exception.type', '')}: {exc.get('exception.message', '')}")
        view = view_of(s)
        kind = f" [{safe(view.kind)}]" if view.kind else ""
        tool = view.tool.name if view.tool is not None and view.tool.name else None
        named = f" tool {safe(tool)}" if tool and tool not in s.name else ""
        click.echo(
            f"{fmt_time(s.start_ns)}  {style(status_marker('error'), 'error')} {safe(view.name or s.name)}"
            f"{kind}{named}  trace {s.trace_id}  {safe(reason)}"
        )


@cli.command()
@PRICE_MODEL
@click.option("--json", "as_json", is_flag=True, help="JSON instead of text.")
@click.pass_context
def stats(ctx: click.Context, price_model: str | None, as_json: bool) -> None:
    """Database size and state, traces, spans, open spans, spans dropped, tokens and cost by model.

    Cost is computed now from the recorded tokens with genai-prices (its version is printed): a
    model it does not know has no cost, counted as unpriced ("$0.0097 + 1 unpriced"), never $0.

    \b
    Example:
      otel-blackbox --db traces.db stats
      otel-blackbox stats --price-model claude-sonnet-4-5     # the same tokens on another model
    """
    with reader(ctx) as conn:
        info = llm_calls.stats_with_cost(conn, db_path(ctx), as_model=price_model)
    if as_json:
        echo_json(info)
        return
    click.echo(
        f"database       {safe(info['database'])}  "
        f"({info['size_bytes'] / 1e6:.2f} MB, schema v{info['schema_version']})"
    )
    state = "writable" if info["writable"] else "NOT writable by this user: its recorders record nothing"
    click.echo(f"file           {state}; {info['disk_free_bytes'] / 1e6:,.0f} MB free on its disk")
    click.echo(f"traces         {info['traces']}")
    click.echo(f"spans          {info['spans']}  ({info['open_spans']} open, {info['error_spans']} failed)")
    click.echo(f"spans dropped  {info['spans_dropped']}  (queue full)   write errors {info['write_errors']}")
    cut = info["spans_cut_by_sdk_limits"]  # the SDK dropped part of these before any processor saw them
    lift = f": raise {ATTRIBUTES_SETTING} (or {GLOBAL_ATTRIBUTES_SETTING}), {EVENTS_SETTING}" if cut else ""
    click.echo(f"spans cut      {cut}  (by the OpenTelemetry SDK's span limits{lift})")
    click.echo(f"time range     {fmt_time(info['oldest_span_ns'])} .. {fmt_time(info['newest_span_ns'])}")
    if info["tokens_by_model"]:
        priced_as = f", priced as {safe(price_model)}" if price_model else ""
        click.echo(f"tokens and cost by model{priced_as}:")
        for m in info["tokens_by_model"]:
            # "$0.0097 + 1 unpriced" says what it leaves out; "-" says how many have no price
            cost = Cost.from_json(m)
            unpriced = f" ({cost.unpriced} unpriced)" if cost.unpriced and cost.usd is None else ""
            click.echo(
                f"  {safe(m['model'])}: {counted(m['llm_spans'], 'call')}, prompt {m['prompt_tokens']}, "
                f"completion {m['completion_tokens']}, total {m['total_tokens']}, "
                f"cost {cost.text()}{unpriced}"
            )
    total = Cost.from_json(info)
    n = total.unpriced
    click.echo(
        f"cost           {total.text()}"
        + (f"  ({counted(n, 'LLM span')} with no price)" if n and total.usd is None else "")
        + f"  (prices: {info['prices']})"
    )


@cli.command()
@click.option(
    "--retention", metavar="AGE", help="Keep traces this long (7d, 12h, 30); default from env / 7d."
)
@click.option("--max-db-mb", type=click.FloatRange(min=0), help="Size cap in MB; default from env / 300.")
@click.pass_context
def cleanup(ctx: click.Context, retention: str | None, max_db_mb: float | None) -> None:
    """Apply retention and the size cap now, and give the freed space back to the disk.

    \b
    Example:
      otel-blackbox cleanup --retention 3d --max-db-mb 100
    """
    # What only cleanup and export run is imported by them, not by list / show / errors / stats.
    from otel_blackbox._config import BlackboxConfig
    from otel_blackbox._store.connection import connect_writer, describe_sqlite_error
    from otel_blackbox._store.retention import CLEANUP_STEPS
    from otel_blackbox._store.retention import cleanup as run_cleanup

    config = BlackboxConfig.from_env(db_path=db_path(ctx), retention=retention, max_db_mb=max_db_mb)
    path = db_path(ctx)
    conn = connect_writer(path, busy_timeout_ms=config.busy_timeout_ms, create=False)
    try:
        with progress(CLEANUP_STEPS, "cleaning up") as advance:
            result = run_cleanup(
                conn, max_age_s=config.retention_seconds, max_bytes=config.max_db_bytes, step_done=advance
            )
    except sqlite3.Error as exc:
        raise describe_sqlite_error(path, exc) from None
    finally:
        conn.close()
    click.echo(
        f"expired {counted(result.traces_expired, 'trace')}, evicted {result.traces_evicted} for the size "
        "cap; "
        f"data {result.bytes_before / 1e6:.2f} MB -> {result.bytes_after / 1e6:.2f} MB"
    )
