"""import: spans from OTLP/JSON files, the OpenTelemetry SDK's span JSON, standard input, a running
Phoenix, chat logs, Claude Code sessions or Codex CLI rollouts, stored as one run."""

from __future__ import annotations

import gzip
import io
import os
import sys
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

import click

from otel_blackbox._cli.app import cli
from otel_blackbox._cli.common import db_path, echo_json, progress
from otel_blackbox._config import BlackboxConfig, parse_duration
from otel_blackbox._render.words import counted
from otel_blackbox._spans.otlp_in.documents import read_documents
from otel_blackbox._spans.otlp_in.sdk_json import (
    SDK_JSON,
    SDK_JSON_WHAT,
    is_sdk_span,
    looks_like_sdk_json,
    sdk_json_documents,
)
from otel_blackbox._spans.transcripts.chat import FORMATS
from otel_blackbox._spans.transcripts.reading import transcript_files
from otel_blackbox._spans.transcripts.traces import (
    TRANSCRIPT_KINDS,
    TranscriptBatch,
    chat_traces,
    claude_code_traces,
    codex_traces,
    transcript_kind,
)
from otel_blackbox._store.ingest import ImportCounts, Importer
from otel_blackbox.errors import BlackboxError, ConfigError, ImportInputError

__all__: list[str] = []

_FROM = {**TRANSCRIPT_KINDS, SDK_JSON: SDK_JSON_WHAT}  # what a refused file looks like, by its --from
_HEAD = 64 * 1024  # the first bytes of a file without --from: what tells the SDK's span JSON


def _since(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """--since 1h: the earliest start time to pull, in Unix nanoseconds."""
    if value is None:
        return None
    try:
        seconds = parse_duration(value, name="--since")
    except ConfigError as exc:
        raise click.BadParameter(str(exc).removeprefix("--since: "), ctx, param) from None
    if seconds is None:
        raise click.BadParameter(f"expected a duration like 1h, 30m or 2d, got {value!r}", ctx, param)
    return time.time_ns() - int(seconds * 1e9)


@cli.command("import")
@click.argument("files", nargs=-1, metavar="FILE... | -")
@click.option(
    "--from-phoenix", "phoenix_url", metavar="URL", help="Pull spans from a running Phoenix instead."
)
@click.option("--project", default=None, metavar="NAME", help="The Phoenix project (default: default).")
@click.option(
    "--trace", "trace_id", default=None, metavar="ID", help="Only this trace (with --from-phoenix)."
)
@click.option(
    "--since",
    callback=_since,
    default=None,
    metavar="DURATION",
    help="Only spans started this recently: 1h, 2d.",
)
@click.option(
    "--from",
    "transcript",
    default=None,
    metavar="KIND",
    help="What the files are, if not OTLP: chat (a saved chat log), claude-code (sessions), codex "
    "(Codex CLI rollouts) or otel-sdk-json (the OpenTelemetry SDK's span JSON, also recognized).",
)
@click.option(
    "--format",
    "chat_format",
    type=click.Choice(FORMATS),
    default=None,
    metavar="SHAPE",
    help="With --from chat: openai-chat, openai-responses or anthropic (default: recognized).",
)
@click.option("--json", "as_json", is_flag=True, help="The summary as JSON.")
@click.pass_context
def import_(
    ctx: click.Context,
    files: tuple[str, ...],
    phoenix_url: str | None,
    project: str | None,
    trace_id: str | None,
    since: int | None,
    transcript: str | None,
    chat_format: str | None,
    as_json: bool,
) -> None:
    """Store the spans of OTLP/JSON files (or - for standard input) or of a Phoenix server, as one run.

    Reads one ExportTraceServiceRequest a line (what `export --format otlp` and the Collector's file
    exporter write), a TracesData document, and the trace bodies of Jaeger (/api/v3/traces) and
    Tempo (/api/traces/ID, /api/v2/traces/ID). Ids in hex or base64, enums as numbers or names;
    a file may be gzip-compressed. A file that starts as the OpenTelemetry SDK's span JSON is read
    as it (--from otel-sdk-json).

    Spans are stored as the recorder stores them (redaction, bounds, columns). Importing the same
    spans again adds nothing; a span whose end is missing stays open. The import is one run in
    `runs`, named after its source, for `cassette --run` and `report --run`. Each file is stored in
    one transaction: a bad file (not JSON, the wrong shape, a bad id) is one line naming the file,
    the line and the field, exit 2, and nothing of it is stored.

    --from-phoenix URL pulls spans through Phoenix's REST API, page by page (--project, --trace or
    --since; the PHOENIX_API_KEY variable, if set, is sent as a bearer token).

    --from otel-sdk-json reads spans as the OpenTelemetry SDK writes them itself (ReadableSpan.to_json,
    what ConsoleSpanExporter prints): that stream of JSON objects, a JSON array of them or JSON
    Lines. Ids, parents, kinds, status, attributes, events, links and resources are kept; to_json
    writes no instrumentation scope. The whole file is read before anything is stored.

    --from chat reads each FILE as a saved chat log (JSON): an OpenAI Chat `messages` array, an
    OpenAI Responses `input` list or an Anthropic `messages` list with `system`, recognized or named
    with --format; or many of them, as a JSON array or JSON Lines (one a line). Each becomes a trace:
    an AGENT root, an LLM span per assistant turn, a TOOL span per tool call with its result.
    Importing the same file again adds nothing.

    --from claude-code reads Claude Code sessions: a session file (JSONL) or a folder (every *.jsonl
    under it, such as ~/.claude/projects/<project>/), subagents' files placed under the session that
    started them. Each session is an AGENT root, an LLM span per assistant turn (model, tokens,
    cost), a TOOL span per tool use with its input and result (ERROR for is_error), in the order of
    the parentUuid chain; thinking, images and snapshots are left out and counted. Every file is
    read before anything is stored: a file that is not a session stores nothing.

    --from codex reads Codex CLI rollouts: a rollout file (JSONL) or a folder (every *.jsonl under
    it, such as ~/.codex/sessions/2025/10/01/), the current {timestamp, type, payload} lines or the
    older bare ones. Each rollout is an AGENT root, an LLM span per assistant turn (the model from
    turn_context, tokens from token_count events), a TOOL span per function call with its output
    (ERROR for a non-zero exit_code); reasoning and context messages are left out and counted.
    Every file is read before anything is stored.

    A Claude Code session or a Codex rollout imported again after it grew (one still running the
    first time) replaces its trace: the trace's id comes from the session, the spans' ids from the
    file's content.

    \b
    Example:
      otel-blackbox export --format otlp > spans.jsonl
      otel-blackbox --db incident.db import spans.jsonl
      curl -s http://tempo:3200/api/traces/4bf92f35... | otel-blackbox import -
      otel-blackbox import --from-phoenix http://127.0.0.1:6006 --project agents --since 1h
      otel-blackbox import --from otel-sdk-json console-spans.txt
      otel-blackbox import --from chat conversation.json
      otel-blackbox import --from claude-code ~/.claude/projects/-home-me-shop/
      otel-blackbox import --from codex ~/.codex/sessions/2025/10/01/
      otel-blackbox cassette --run RUN -o incident.json
    """
    _check_transcript(transcript, chat_format, phoenix_url)
    if phoenix_url is None:
        for name, value in (("--project", project), ("--trace", trace_id), ("--since", since)):
            if value is not None:
                raise click.UsageError(f"{name} goes with --from-phoenix")
        if not files:
            raise click.UsageError("name a file to import, - for standard input, or --from-phoenix URL")
        if files.count("-") > 1:
            raise click.UsageError("- (standard input) can be named once")
    elif files:
        raise click.UsageError("--from-phoenix reads from Phoenix: name no file with it")
    elif trace_id is not None and since is not None:
        raise click.UsageError("--trace and --since do not go together")
    config = BlackboxConfig.from_env(db_path=db_path(ctx))
    source = f"phoenix {phoenix_url}" if phoenix_url else ", ".join("stdin" if f == "-" else f for f in files)
    importer = Importer(config, f"import {source}")
    failed = True
    try:
        if phoenix_url is not None:
            _from_phoenix(importer, phoenix_url, project or "default", trace_id, since)
        elif transcript == "claude-code":
            _store_traces(importer, claude_code_traces(_transcript_files(files, "session")))
        elif transcript == "codex":
            _store_traces(importer, codex_traces(_transcript_files(files, "rollout")))
        elif transcript == "chat":
            for name in files:
                _from_chat(importer, name, chat_format)
        else:
            for name in files:
                _from_file(importer, name, sdk_json=transcript == SDK_JSON)
        failed = False
    except (BlackboxError, OSError, click.ClickException):
        if importer.total.spans:  # the files before the bad one are stored: say so first
            _summary(importer, config, as_json)
        raise
    finally:
        importer.close(failed=failed)  # a database this import made and stored nothing in goes
    _summary(importer, config, as_json)


def _check_transcript(transcript: str | None, chat_format: str | None, phoenix_url: str | None) -> None:
    if transcript is None:
        if chat_format is not None:
            raise click.UsageError("--format goes with --from chat")
        return
    kinds = (
        "chat (a saved chat log), claude-code (Claude Code sessions), codex (Codex CLI rollouts) or "
        f"{SDK_JSON} ({SDK_JSON_WHAT})"
    )
    if transcript not in _FROM:
        raise click.UsageError(f"--from {transcript!r}: expected {kinds}")
    if phoenix_url is not None:
        raise click.UsageError(f"--from {transcript} reads files: it does not go with --from-phoenix")
    if chat_format is not None and transcript != "chat":
        raise click.UsageError("--format goes with --from chat")


def _from_chat(importer: Importer, name: str, chat_format: str | None) -> None:
    """A file of chat logs as spans: ids from each log's content hash (so it is stored once), times
    from the file's mtime."""
    if name == "-":
        raw, base_ns = sys.stdin.buffer.read(), time.time_ns()
    else:
        path = Path(name)
        if path.is_dir():
            raise click.BadParameter(f"{name} is a directory", param_hint="FILE")
        raw, base_ns = path.read_bytes(), path.stat().st_mtime_ns
    _store_traces(importer, chat_traces(raw, "stdin" if name == "-" else name, chat_format, base_ns))


def _transcript_files(names: tuple[str, ...], kind: str) -> list[Path]:
    """The *.jsonl files the named files and folders hold; a missing path is an OSError (one line,
    exit 2, cli.app)."""
    found: list[Path] = []
    for name in names:
        if name == "-":
            raise click.BadParameter(
                "session transcripts are read from files or folders, not -", param_hint="PATH"
            )
        files = transcript_files(Path(name))
        if not files:
            raise click.BadParameter(f"{name}: no *.jsonl {kind} file in it", param_hint="PATH")
        found.extend(files)
    return found


def _store_traces(importer: Importer, batches: list[TranscriptBatch]) -> None:
    """Each file's traces in one transaction, their spans made a few at a time as they are stored."""
    with progress(len(batches) if len(batches) > 1 else 0, "storing transcripts") as advance:
        for batch in batches:
            documents = ((None, d) for d in batch.documents())
            importer.store(batch.label, documents, replace=batch.replace())
            advance(1)


def _from_file(importer: Importer, name: str, *, sdk_json: bool = False) -> ImportCounts:
    """A file of OTLP documents or of the SDK's span JSON (named, or recognized) stored; one that is
    a transcript instead is refused with the hint of the ``--from`` that reads it."""
    first: list[str | None] = []
    try:
        return _span_file(importer, name, first, sdk_json)
    except ImportInputError as exc:
        kind = first[0] if first else None
        if kind is None:
            raise
        hint = f"it looks like {_FROM[kind]}: import it with --from {kind}"
        raise ImportInputError(f"{exc}; {hint}") from None


def _span_file(importer: Importer, name: str, first: list[str | None], sdk_json: bool) -> ImportCounts:
    if name == "-":
        return _store_stream(importer, "stdin", sys.stdin.buffer, None, first, sdk_json)
    path = Path(name)
    if path.is_dir():
        raise click.BadParameter(f"{name} is a directory", param_hint="FILE")
    with path.open("rb") as stream:  # OSError (missing, unreadable): one line, exit 2 (cli.app)
        size = os.fstat(stream.fileno()).st_size
        with progress(size, f"importing {path.name}") as advance:
            if stream.read(2) == b"\x1f\x8b":  # gzip (the Collector's file exporter can compress)
                stream.seek(0)
                with gzip.open(stream) as unzipped:
                    return _store_stream(importer, name, unzipped, None, first, sdk_json)
            stream.seek(0)
            return _store_stream(importer, name, stream, advance, first, sdk_json)


def _store_stream(
    importer: Importer,
    name: str,
    stream: BinaryIO | gzip.GzipFile,
    advance: Callable[[int], None] | None,
    first: list[str | None],
    sdk_json: bool,
) -> ImportCounts:
    """OTLP documents as they stream, or the SDK's span JSON (named, or what the first bytes read
    as) read whole first: a bad span stores nothing."""
    head = _read(stream, name, _HEAD)
    if sdk_json or looks_like_sdk_json(head):
        raw = head + _read(stream, name, -1)
        if advance is not None:
            advance(len(raw))
        spans = sdk_json_documents(raw, name)  # every span read before any is stored
        del raw, head
        return importer.store(name, ((None, d) for d in spans))
    documents = read_documents(_lines(_rejoined(head, stream), advance))
    return importer.store(name, _noting_first(documents, first))


def _read(stream: BinaryIO | gzip.GzipFile, name: str, size: int) -> bytes:
    try:
        return stream.read(size)
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise ImportInputError(f"{name}: a broken gzip stream ({exc})") from None


def _rejoined(head: bytes, stream: BinaryIO | gzip.GzipFile) -> Iterator[bytes]:
    """The lines of ``head`` and then of the rest of ``stream``, the line cut between them whole."""
    for line in io.BytesIO(head):
        yield line if line.endswith(b"\n") else line + stream.readline()
    yield from stream


def _noting_first(
    documents: Iterator[tuple[int | None, object]], first: list[str | None]
) -> Iterator[tuple[int | None, object]]:
    """The documents, the --from the first reads as (a transcript kind, otel-sdk-json, or None)
    kept in ``first`` (what a refusal's hint says); no document is held past its turn."""
    for item in documents:
        if not first:
            first.append(transcript_kind(item[1]) or (SDK_JSON if is_sdk_span(item[1]) else None))
        yield item
        del item


def _lines(stream: Iterable[bytes], advance: Callable[[int], None] | None) -> Iterator[str]:
    """The stream's lines as text; bytes that are not UTF-8 raise UnicodeDecodeError (a bad file),
    and a broken gzip stream an OSError / EOFError (named by the importer). Neither form of a line
    is held here while the document read from it is stored (a line can be hundreds of MB)."""
    for raw in stream:
        if advance is not None:
            advance(len(raw))
        text = [raw.decode("utf-8")]
        del raw
        yield text.pop()


def _from_phoenix(
    importer: Importer, url: str, project: str, trace_id: str | None, since: int | None
) -> None:
    from otel_blackbox._pull.phoenix import phoenix_documents  # only this path loads the HTTP client

    documents = phoenix_documents(
        url, project=project, trace_id=trace_id, since_ns=since, token=os.environ.get("PHOENIX_API_KEY")
    )
    # Every page first: the database's write lock is not held while Phoenix answers.
    importer.store(f"phoenix {url}", list(documents), unit="page")


def _summary(importer: Importer, config: BlackboxConfig, as_json: bool) -> None:
    total = importer.total
    if as_json:
        echo_json(
            {
                "spans": total.spans,
                "traces": total.traces,
                "duplicates": total.duplicates,
                "replaced": total.replaced,
                "run_id": importer.run_id,
            }
        )
    elif total.spans:
        click.echo(
            f"imported {counted(total.spans, 'span')} of {counted(total.traces, 'trace')} into "
            f"{config.db_path} as run {importer.run_id}; {counted(total.duplicates, 'duplicate')} skipped"
            + (f"; {counted(total.replaced, 'trace')} stored before replaced" if total.replaced else "")
        )
    elif total.duplicates:
        click.echo(f"nothing new: {counted(total.duplicates, 'span')} already stored, no run added")
    else:
        click.echo("nothing to import: the input holds no spans")
    retention = config.retention_seconds
    oldest = total.oldest_start_ns
    if oldest is not None and retention is not None and oldest < time.time_ns() - retention * 1e9:
        click.echo(
            f"otel-blackbox: warning: spans older than the retention ({config.retention}) were imported; "
            "the next recording's cleanup deletes them (OTEL_BLACKBOX_RETENTION=off keeps them)",
            err=True,
        )
