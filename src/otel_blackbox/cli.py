"""The ``otel-blackbox`` command line: thin commands that parse, call the store, and print.

Exit codes: 0 ok; 1 not found (or a failed check); 2 usage or unreadable input. Every error is
one line on stderr, never a traceback.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from . import __version__
from .atomic import atomic_text_writer
from .config import DEFAULT_DB_PATH, BlackboxConfig
from .errors import BlackboxError, ConfigError, StoreError, TraceNotFound
from .formats.openinference import phoenix_spans
from .render.text import fmt_duration, fmt_time, render_tree, safe, span_to_json, status_marker
from .store import queries
from .store.connection import connect_reader, connect_writer, describe_sqlite_error
from .store.retention import cleanup as run_cleanup

__all__ = ["cli", "main"]

_STATUS_COLORS = {"ok": "green", "error": "red", "open": "yellow", "unset": None}


def _style(text: str, status: str) -> str:
    return click.style(text, fg=_STATUS_COLORS.get(status))


def _db_path(ctx: click.Context) -> Path:
    return Path(ctx.find_root().params["db"])


@contextlib.contextmanager
def _reader(ctx: click.Context) -> Iterator[sqlite3.Connection]:
    path = _db_path(ctx)
    conn = connect_reader(path)
    try:
        yield conn
    except sqlite3.Error as exc:
        raise describe_sqlite_error(path, exc) from None
    finally:
        conn.close()


def _echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    envvar="OTEL_BLACKBOX_DB",
    default=DEFAULT_DB_PATH,
    show_default=True,
    metavar="PATH",
    help="The SQLite file to read (env OTEL_BLACKBOX_DB).",
)
@click.version_option(__version__, prog_name="otel-blackbox")
def cli(db: str) -> None:
    """Investigate what an agent did, from the spans BlackboxSpanProcessor recorded.

    \b
    Example:
      otel-blackbox list
      otel-blackbox show 4bf92f35 -v
    """


@cli.command("list")
@click.option(
    "--limit", "-n", type=click.IntRange(min=1), default=20, show_default=True, help="How many traces."
)
@click.option("--session", metavar="ID", help="Only traces of this session id.")
@click.option("--errors-only", is_flag=True, help="Only traces with a failed span.")
@click.option("--json", "as_json", is_flag=True, help="JSON instead of a table.")
@click.pass_context
def list_traces(
    ctx: click.Context, limit: int, session: str | None, errors_only: bool, as_json: bool
) -> None:
    """Recent traces: start, status (ok / error / open), spans, duration, root name, trace id.

    \b
    Example:
      otel-blackbox list --limit 5 --errors-only
    """
    with _reader(ctx) as conn:
        traces = queries.recent_traces(conn, limit=limit, session=session, errors_only=errors_only)
    if as_json:
        _echo_json([{**t.__dict__, "status": t.status, "duration_ns": t.duration_ns} for t in traces])
        return
    if not traces:
        click.echo("no traces recorded yet" if not (session or errors_only) else "no matching traces")
        return
    click.echo(f"{'START':19}  {'STATUS':6}  {'SPANS':>5}  {'DURATION':>9}  {'TRACE ID':32}  ROOT")
    for t in traces:
        status = _style(f"{t.status:6}", t.status)
        spans = f"{t.span_count}" + (f"/{t.open_count}o" if t.open_count else "")
        click.echo(
            f"{fmt_time(t.start_ns):19}  {status}  {spans:>5}  {fmt_duration(t.duration_ns):>9}  "
            f"{t.trace_id:32}  {safe(t.root_name)}"
        )


@cli.command()
@click.argument("trace_id")
@click.option(
    "-v", "--verbose", is_flag=True, help="Prompts, messages, tool calls, outputs, tokens, exceptions."
)
@click.option("--full", is_flag=True, help="With -v: do not shorten long values.")
@click.option("--json", "as_json", is_flag=True, help="The trace summary and every span as JSON.")
@click.pass_context
def show(ctx: click.Context, trace_id: str, verbose: bool, full: bool, as_json: bool) -> None:
    """The span tree of one trace; a unique prefix of the trace id is enough.

    \b
    Example:
      otel-blackbox show 4bf92f35 -v
    """
    with _reader(ctx) as conn:
        full_id = queries.resolve_trace_id(conn, trace_id)
        spans = queries.trace_spans(conn, full_id)
        (summary,) = queries.summarize(conn, [full_id])
    if as_json:
        _echo_json(
            {
                "trace": {**summary.__dict__, "status": summary.status, "duration_ns": summary.duration_ns},
                "spans": [span_to_json(s) for s in spans],
            }
        )
        return
    for line in render_tree(summary, spans, verbose=verbose, max_chars=None if full else 1000, style=_style):
        click.echo(line)


@cli.command()
@click.option(
    "--limit", "-n", type=click.IntRange(min=1), default=20, show_default=True, help="How many spans."
)
@click.option("--json", "as_json", is_flag=True, help="JSON instead of text.")
@click.pass_context
def errors(ctx: click.Context, limit: int, as_json: bool) -> None:
    """Recent failed spans, newest first, each with its trace id and exception.

    \b
    Example:
      otel-blackbox errors --limit 5
    """
    with _reader(ctx) as conn:
        spans = queries.error_spans(conn, limit=limit)
    if as_json:
        _echo_json([span_to_json(s) for s in spans])
        return
    if not spans:
        click.echo("no failed spans")
        return
    for s in spans:
        exc = next(iter(s.exception_events), {}).get("attributes", {})
        reason = s.status_message or (f"{exc.get('exception.type', '')}: {exc.get('exception.message', '')}")
        kind = f" [{s.oi_span_kind}]" if s.oi_span_kind else ""
        click.echo(
            f"{fmt_time(s.start_ns)}  {_style(status_marker('error'), 'error')} {safe(s.name)}{kind}  "
            f"trace {s.trace_id}  {safe(reason)}"
        )


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="JSON instead of text.")
@click.pass_context
def stats(ctx: click.Context, as_json: bool) -> None:
    """Database size, traces, spans, open spans, spans dropped, tokens by model.

    \b
    Example:
      otel-blackbox --db traces.db stats
    """
    with _reader(ctx) as conn:
        info = queries.stats(conn, _db_path(ctx))
    if as_json:
        _echo_json(info)
        return
    click.echo(
        f"database       {info['database']}  "
        f"({info['size_bytes'] / 1e6:.2f} MB, schema v{info['schema_version']})"
    )
    click.echo(f"traces         {info['traces']}")
    click.echo(f"spans          {info['spans']}  ({info['open_spans']} open, {info['error_spans']} failed)")
    click.echo(f"spans dropped  {info['spans_dropped']}  (queue full)   write errors {info['write_errors']}")
    click.echo(f"time range     {fmt_time(info['oldest_span_ns'])} .. {fmt_time(info['newest_span_ns'])}")
    if info["tokens_by_model"]:
        click.echo("tokens by model:")
        for m in info["tokens_by_model"]:
            click.echo(
                f"  {safe(m['model'])}: {m['llm_spans']} calls, prompt {m['prompt_tokens']}, "
                f"completion {m['completion_tokens']}, total {m['total_tokens']}"
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
    config = BlackboxConfig.from_env(db_path=_db_path(ctx), retention=retention, max_db_mb=max_db_mb)
    path = _db_path(ctx)
    conn = connect_writer(path, busy_timeout_ms=config.busy_timeout_ms, create=False)
    try:
        result = run_cleanup(conn, max_age_s=config.retention_seconds, max_bytes=config.max_db_bytes)
    except sqlite3.Error as exc:
        raise describe_sqlite_error(path, exc) from None
    finally:
        conn.close()
    click.echo(
        f"expired {result.traces_expired} traces, evicted {result.traces_evicted} for the size cap; "
        f"data {result.bytes_before / 1e6:.2f} MB -> {result.bytes_after / 1e6:.2f} MB"
    )


@cli.command()
@click.option(
    "-o", "--output", default="-", show_default=True, metavar="FILE", help="Output file, or - for stdout."
)
@click.option("--trace", "trace_id", metavar="ID", help="Only this trace (a unique prefix is enough).")
@click.option(
    "--format", "fmt", type=click.Choice(["openinference"]), default="openinference", show_default=True,
    help="openinference: Phoenix v1.Span JSON, one span a line.",
)  # fmt: skip
@click.pass_context
def export(ctx: click.Context, output: str, trace_id: str | None, fmt: str) -> None:
    """Export spans as JSON lines (OpenInference, Phoenix's v1.Span shape).

    A span still open when the recording stopped is exported with status ERROR and
    blackbox.span.open = true, not dropped.

    \b
    Example:
      otel-blackbox export -o spans.jsonl --trace 4bf92f35
    """
    with _reader(ctx) as conn:
        full_id = queries.resolve_trace_id(conn, trace_id) if trace_id else None
        last_seen = queries.last_seen_by_trace(conn, full_id)
        lines = (
            json.dumps(span, ensure_ascii=False, separators=(",", ":"))
            for span in phoenix_spans(queries.iter_spans(conn, full_id), last_seen)
        )
        if output == "-":
            for line in lines:
                click.echo(line)
            return
        count = 0
        with atomic_text_writer(output) as handle:
            for line in lines:
                handle.write(line + "\n")
                count += 1
        click.echo(f"wrote {count} spans to {output}", err=True)


def _fail(message: str, code: int) -> None:
    click.echo(f"otel-blackbox: error: {message}", err=True)
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    """Entry point: click in non-standalone mode, so every failure becomes one line and an exit code."""
    try:
        cli.main(args=argv, prog_name="otel-blackbox", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(exc.ctx.get_help() if exc.ctx else "", err=True)
        sys.exit(2)
    except click.UsageError as exc:
        hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx else ""
        _fail(exc.format_message() + hint, 2)
    except click.Abort:
        _fail("aborted", 130)
    except click.ClickException as exc:
        _fail(exc.format_message(), exc.exit_code)
    except TraceNotFound as exc:
        _fail(str(exc), 1)
    except (ConfigError, StoreError, BlackboxError) as exc:
        _fail(str(exc), 2)
    except BrokenPipeError:
        # Output piped to `head`: not an error. Point stdout at devnull so the exit flush is quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
    except OSError as exc:
        _fail(f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc), 2)
    except Exception as exc:  # a bug: still one line, with a way to get the traceback
        if os.environ.get("OTEL_BLACKBOX_DEBUG"):
            raise
        _fail(f"internal error: {type(exc).__name__}: {exc} (set OTEL_BLACKBOX_DEBUG=1 for the traceback)", 2)


if __name__ == "__main__":
    main()
