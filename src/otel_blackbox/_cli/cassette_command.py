"""The cassette command: a recorded trace, run or session as v2 cassettes, one per conversation.

A cassette is one agent's conversation. A sub-agent that ran a conversation of its own (Claude
Code's Task tool, an agent used as a tool) gets a cassette beside its parent's, named after it
(``run.json``: ``run.agent-1.json``, ``run.agent-2.json``...), the two linked both ways. A run that
holds several independent conversations (several sessions of an imported folder, several chat logs
of a file, several agent runs of one process) gives one cassette each with
``--each`` (``run.json``: ``run.1.json``, ``run.2.json``...), one with ``--conversation N``, and
otherwise a refusal listing them with the command for each: never one merged sequence. A session
is one conversation by its id: its traces (turns served by several processes) stay one sequence.
"""

from __future__ import annotations

import shlex

import click

from otel_blackbox._cassette.diff.outcome import outcome_label
from otel_blackbox._cassette.from_spans.cassette import (
    beside,
    conversation_cassettes,
    file_names,
    run_conversations,
)
from otel_blackbox._cassette.io import is_gzip_name, max_file_bytes, save_cassette
from otel_blackbox._cassette.model import Cassette
from otel_blackbox._cassette.verify import check_before_writing
from otel_blackbox._cli.app import cli
from otel_blackbox._cli.common import (
    exactly_one,
    group_spans,
    output_option,
    reader,
    trace_run_or_session,
)
from otel_blackbox._config import DEFAULT_DB_PATH
from otel_blackbox._render.text import safe
from otel_blackbox._render.words import counted
from otel_blackbox._store import queries
from otel_blackbox._store.queries import SpanRecord
from otel_blackbox._store.trace_logs import load_trace
from otel_blackbox.errors import CassetteError

__all__: list[str] = []


@cli.command("cassette")
@trace_run_or_session
@output_option("Where to write the cassette (atomically); sub-agents' and --each's beside it.")
@click.option(
    "--each",
    is_flag=True,
    help="A run of several conversations: one cassette each (NAME.1.json...).",
)
@click.option(
    "--conversation",
    type=click.IntRange(min=1),
    metavar="N",
    help="A run of several conversations: the Nth only (as the refusal lists them).",
)
@click.option("--force", is_flag=True, help="Write it even if it would fail `verify` (with a warning).")
@click.pass_context
def cassette_command(
    ctx: click.Context,
    trace_id: str | None,
    run_id: str | None,
    session_id: str | None,
    output: str,
    each: bool,
    conversation: int | None,
    force: bool,
) -> None:
    """Turn a recorded trace (even a failed or killed one) into a v2 cassette.

    A cassette is one agent's conversation. A sub-agent that ran its own conversation (Claude
    Code's Task tool, an agent used as a tool) is a cassette of its own beside it: -o run.json
    writes run.agent-1.json, run.agent-2.json... The parent sees one tool call answered by the
    sub-agent's result; the two are linked both ways (`subagents`, `subagentOf`: the file, and the
    parent's step that started it).

    With --run or --session instead of TRACE_ID, the cassette of all the traces of a run (see
    `runs`) or of a session, with every model and tool round in time order: for frameworks that
    make each model call a trace of its own. A run that holds several independent conversations
    (several sessions or chat logs imported together, several agent runs of one process) is
    refused with the list of them and the command for each; --each writes them all (run.1.json,
    run.2.json...), --conversation N one.

    A cassette that would fail `verify` (spans no replay can play: a tool span no model call asked
    for) is not written: exit 2, naming the step. --force writes it, with a warning naming the step.

    An output named *.json.gz is written compressed and compact (each message stored once, a long
    run's file in proportion to it); *.json is plain v2 JSON, whose model inputs each repeat the
    conversation before them (a warning says when it is too big for commands to read).

    \b
    Example:
      otel-blackbox cassette 4bf92f35 -o incident.json
      otel-blackbox cassette --run 3f9a0c1d -o run.json.gz
      otel-blackbox cassette --run 3f9a0c1d --each -o sessions/run.json
      otel-blackbox cassette --session chat-42 -o session.json
    """
    exactly_one(ctx, {"TRACE_ID": trace_id, "--run": run_id, "--session": session_id})
    if run_id is None and (each or conversation is not None):
        raise click.UsageError("--each and --conversation choose among a run's conversations", ctx)
    if each and conversation is not None:
        raise click.UsageError("give --each or --conversation, not both", ctx)
    with reader(ctx) as conn:
        if trace_id is not None:
            spans = load_trace(conn, queries.resolve_trace_id(conn, trace_id))
            written = [(output, conversation_cassettes(spans), "")]
        else:
            kind, ident, spans = group_spans(conn, run_id, session_id)
            # A session is one conversation by its id (turns served by several processes); a run
            # holds whatever its process did.
            groups = run_conversations(spans) if kind == "run" else [spans]
            if len(groups) > 1 and not each and conversation is None:
                _refuse_several(ctx, kind, ident, groups, output)
            if conversation is not None and conversation > len(groups):
                held = counted(len(groups), "conversation")
                raise CassetteError(f"{kind} {ident} holds {held}: there is no conversation {conversation}")
            chosen = [conversation - 1] if conversation is not None else range(len(groups))
            several = len(groups) > 1
            written = []
            for n in chosen:
                group = groups[n]
                own_id = f"{kind}-{ident}" + (f"-{n + 1}" if several else "")  # id: run-<id>, run-<id>-2
                traces = len({s.trace_id for s in group})
                name = beside(output, str(n + 1)) if each and several else output
                written.append(
                    (name, conversation_cassettes(group, cassette_id=own_id), _source(kind, ident, traces))
                )
    plans = [(name, cassettes) for name, cassettes, _ in written]
    warnings = [w for _, cassettes in plans for c in cassettes if (w := check_before_writing(c, force=force))]
    for (name, cassettes), (_, _, source) in zip(plans, written, strict=True):
        for path, cassette in zip(file_names(name, cassettes), cassettes, strict=True):
            _write(path, cassette, source if cassette is cassettes[0] else "")
    for warning in warnings:
        click.echo(f"otel-blackbox: warning: {safe(warning)}", err=True)


def _source(kind: str, ident: str, traces: int) -> str:
    return f" from {counted(traces, 'trace')} of {kind} {safe(ident)}"


def _write(path: str, cassette: Cassette, source: str) -> None:
    size = save_cassette(cassette, path)
    if size > max_file_bytes():  # a plain one of a long run, whose model inputs repeat the conversation
        instead = (
            "raise OTEL_BLACKBOX_MAX_CASSETTE_MB to read it"
            if is_gzip_name(path)
            else f"write it as {safe(path)}.gz instead (compressed and compact, read by every command)"
        )
        click.echo(
            f"otel-blackbox: warning: {safe(path)} holds {size / 2**20:.1f} MB of JSON, over the"
            f" {max_file_bytes() / 2**20:g} MB limit of commands that read it"
            f" (OTEL_BLACKBOX_MAX_CASSETTE_MB); {instead}",
            err=True,
        )
    link = cassette.subagent_of
    role = ""
    if link is not None:
        answers = f", answering {link['toolName']} at step {link['step']}" if "toolName" in link else ""
        role = f"; sub-agent of {safe(link.get('cassette'))}{answers}"
    elif cassette.subagents:
        role = f"; {counted(len(cassette.subagents), 'sub-agent')} beside it"
    steps = f"{counted(len(cassette.steps), 'step')}{source}"
    click.echo(f"wrote {safe(path)}: {steps}, outcome {_outcome(cassette)}, head {cassette.head}{role}")


def _outcome(cassette: Cassette) -> str:
    """The outcome, with why when the run ended without an answer."""
    label = outcome_label(cassette)
    last = cassette.steps[-1].payload if cassette.steps else None
    why = last.get("message") if isinstance(last, dict) and last.get("event") == "run_ended" else None
    return f"{label} ({safe(why)})" if isinstance(why, str) and why else label


def _refuse_several(
    ctx: click.Context, kind: str, ident: str, groups: list[list[SpanRecord]], output: str
) -> None:
    """Several conversations, no choice made: each listed with the command that writes it (exit 2)."""
    db = ctx.find_root().params.get("db")
    base = ["otel-blackbox", *(["--db", str(db)] if db and db != DEFAULT_DB_PATH else []), "cassette"]
    click.echo(
        f"otel-blackbox: error: {kind} {safe(ident)} holds {len(groups)} conversations, which one cassette"
        f" cannot replay in one sequence; --each writes one cassette each ({safe(beside(output, '1'))}"
        f" ...), or one of them:",
        err=True,
    )
    for n, group in enumerate(groups, 1):
        traces = list(dict.fromkeys(s.trace_id for s in group))
        root = next((s for s in group if s.parent_span_id is None), group[0])
        which = [traces[0]] if len(traces) == 1 else [f"--{kind}", ident, "--conversation", str(n)]
        command = shlex.join([*base, *which, "-o", beside(output, str(n))])
        click.echo(f"  {n}. {safe(root.name)} ({counted(len(traces), 'trace')}): {safe(command)}", err=True)
    raise SystemExit(2)
