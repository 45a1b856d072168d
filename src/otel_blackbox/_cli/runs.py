"""The runs command: one line per recorder lifetime (a process run), its traces joined."""

from __future__ import annotations

import click

from otel_blackbox._cli.app import cli
from otel_blackbox._cli.common import PRICE_MODEL, echo_json, reader, style
from otel_blackbox._cost import llm_calls
from otel_blackbox._render.text import fmt_time, safe
from otel_blackbox._store import runs as store_runs

__all__: list[str] = []

# An upper bound too: SQLite's LIMIT takes a 64-bit integer.
_LIMIT = click.IntRange(min=1, max=1_000_000_000)


def _roots(summary: store_runs.RunSummary) -> str:
    names = ", ".join(safe(name) for name in summary.root_names)
    names += f" (+{summary.more_root_names} more)" if summary.more_root_names else ""
    return f"[{safe(summary.source)}] {names}" if summary.source else names


def _pid(summary: store_runs.RunSummary) -> str:
    return "-" if summary.pid < 0 else str(summary.pid)  # an import's pid is a number of its own


@cli.command()
@click.option("--limit", "-n", type=_LIMIT, default=20, show_default=True, help="How many runs.")
@PRICE_MODEL
@click.option("--json", "as_json", is_flag=True, help="JSON instead of a table.")
@click.pass_context
def runs(ctx: click.Context, limit: int, price_model: str | None, as_json: bool) -> None:
    """Recent runs, newest first: run id, pid, started, last seen, traces, spans, cost, status, roots.

    Cost: the run's LLM calls priced now with genai-prices ("-" when none has a price, "+ N
    unpriced" when N of them have none; --price-model NAME prices their tokens as model NAME).

    A run is one recorder's lifetime in one process: every trace it recorded, which joins the model
    calls of frameworks that give each call a trace of its own. Status as for a trace: open if a
    span is still open (a killed run), else error if one failed, else incomplete if one of its
    traces is an imported conversation that stopped before the model's last word, else ok. A
    unique prefix of a run id is enough for `cassette --run` and `report --run`. An `import` or a
    `serve` is a run too: its source is shown in brackets before its roots (pid "-" for an import).

    \b
    Example:
      otel-blackbox runs --limit 5
      otel-blackbox cassette --run 3f9a0c1d -o incident.json
    """
    with reader(ctx) as conn:
        found = store_runs.recent_runs(conn, limit=limit)
        costs = llm_calls.run_costs(conn, found, as_model=price_model)
    if as_json:
        echo_json([{**run.to_json(), **costs[run.run_id].json()} for run in found])
        return
    if not found:
        click.echo("no runs recorded yet")
        return
    width = max([9, *(len(cost.text()) for cost in costs.values())])  # "$0.0097 + 1 unpriced" fits
    times = {run.run_id: (fmt_time(run.started_ns), fmt_time(run.last_seen_ns)) for run in found}
    stamp = max(len(t) for pair in times.values() for t in pair)  # a time with its zone: "... UTC"
    status_width = max(6, *(len(run.status) for run in found))  # "incomplete" widens it
    click.echo(
        f"{'RUN ID':16}  {'PID':>7}  {'STARTED':{stamp}}  {'LAST SEEN':{stamp}}  {'TRACES':>6}  "
        f"{'SPANS':>7}  {'COST':>{width}}  {'STATUS':{status_width}}  ROOT SPANS"
    )
    for run in found:
        spans = f"{run.spans}" + (f"/{run.open_count}o" if run.open_count else "")
        started, last_seen = times[run.run_id]
        click.echo(
            f"{run.run_id:16}  {_pid(run):>7}  {started:{stamp}}  {last_seen:{stamp}}  "
            f"{run.traces:>6}  {spans:>7}  {costs[run.run_id].text():>{width}}  "
            f"{style(f'{run.status:{status_width}}', run.status)}  {_roots(run)}"
        )
