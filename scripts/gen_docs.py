"""Generate the two reference pages of the guide: docs/cli.md and docs/configuration.md.

    python scripts/gen_docs.py            # rewrite both pages
    python scripts/gen_docs.py --check    # exit 1, naming the first stale page, if either is not current

docs/cli.md is every command and subcommand of ``otel-blackbox`` with its ``--help``, as click
formats it at a fixed width. docs/configuration.md is every setting: the ``OTEL_BLACKBOX_*``
variables of ``otel_blackbox._config.ENV_VARS``, every field of ``BlackboxConfig`` with its type and
default, and the few variables read elsewhere (``OTHER_VARIABLES`` below). The output depends on
nothing but the code: no terminal width, no environment, sorted. tests/integration/test_docs.py checks that
both pages are current.

Standard library and click only.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
CLI_PAGE = "cli.md"
CONFIG_PAGE = "configuration.md"
# Help text is wrapped at this width whatever the terminal (click reads COLUMNS otherwise).
WIDTH = 100
PROG = "otel-blackbox"
SCRIPT = "scripts/gen_docs.py"

# BlackboxConfig fields that have no environment variable: ENV_VARS documents the others. A new
# field without a variable must be described here, or generation fails naming it.
FIELD_DOCS: dict[str, str] = {
    "max_batch_size": (
        "the most spans the shipper hands to the writer at once; this many queued wake it before "
        "the flush interval"
    ),
    "busy_timeout_ms": (
        "how long a write waits for another process's lock on the file (SQLite's busy timeout) "
        "before it counts as failed and is tried again"
    ),
    "cleanup_interval_s": "how often retention runs while recording, in seconds",
    "retention_seconds": (
        "not an argument: `retention` in seconds, worked out when the config is made (`None`: keep forever)"
    ),
}

# Variables read outside BlackboxConfig: (variable, where it is read, default, meaning).
# tests/integration/test_docs.py checks that every OTEL_BLACKBOX_* name in src/ is on the page, and every name
# on the page is in src/.
OTHER_VARIABLES: tuple[tuple[str, str, str, str], ...] = (
    (
        "OTEL_BLACKBOX_ENABLED",
        "the `opentelemetry-instrument` hook",
        "off",
        "`true` adds a `BlackboxSpanProcessor` (to `./blackbox.db` unless `OTEL_BLACKBOX_DB` says "
        "otherwise); `false` turns the hook off even when `OTEL_BLACKBOX_DB` is set",
    ),
    (
        "OTEL_BLACKBOX_MAX_CASSETTE_MB",
        "every command that reads a cassette",
        "`32`",
        "a cassette holding more JSON text, once decompressed (a `.json.gz` is read no further than "
        "that), is refused; a compact one may also rebuild at most 256 times it of v2 JSON "
        "([compressed cassettes](cassette-format.md#compressed-and-compact-cassettes-jsongz))",
    ),
    (
        "OTEL_BLACKBOX_SERVE_TOKEN",
        "`otel-blackbox serve`",
        "none",
        "the token of `--token`: every request must carry `Authorization: Bearer TOKEN` "
        "(a variable keeps it out of `ps`)",
    ),
    (
        "OTEL_BLACKBOX_UI_TOKEN",
        "`otel-blackbox ui`",
        "none",
        "the token of `--token`, needed beyond 127.0.0.1: open `/?token=TOKEN` once (a cookie keeps it) "
        "or send `Authorization: Bearer TOKEN` (a variable keeps it out of `ps`)",
    ),
    (
        "OTEL_BLACKBOX_DEBUG",
        "`otel-blackbox`",
        "unset",
        "any value: an internal error shows its traceback instead of one line",
    ),
)

# Set by `record`, `replay`, `fork` and `rerun` for the program they start (its sitecustomize
# reads them); not settings, listed so that every name the code reads is on the page.
LAUNCHER_VARIABLES: tuple[tuple[str, str], ...] = (
    ("OTEL_BLACKBOX_SESSION_MODE", "the mode: record, replay, fork or rerun"),
    ("OTEL_BLACKBOX_SESSION_CASSETTE", "the cassette to read or write"),
    ("OTEL_BLACKBOX_SESSION_MATCH", "`exact` or `sequence`"),
    ("OTEL_BLACKBOX_SESSION_REPORT", "where the program's session reports back to the command"),
    ("OTEL_BLACKBOX_SESSION_PLAN", "a fork's or a rerun's plan, as JSON"),
)


# --- docs/cli.md ---------------------------------------------------------------------------------


def _walk(command: click.Command, parent: click.Context | None, name: str) -> Iterator[click.Context]:
    """The context of ``command`` and of every subcommand under it, depth first, sorted by name."""
    ctx = click.Context(
        command,
        info_name=name,
        parent=parent,
        terminal_width=WIDTH,
        max_content_width=WIDTH,
        **command.context_settings,
    )
    yield ctx
    if isinstance(command, click.Group):
        for sub in sorted(command.list_commands(ctx)):
            subcommand = command.get_command(ctx, sub)
            if subcommand is not None and not subcommand.hidden:
                yield from _walk(subcommand, ctx, sub)


def command_paths() -> list[str]:
    """Every command of the group and of its subgroups: ``list``, ``eval``, ``eval generate``..."""
    from otel_blackbox.cli import cli

    return [ctx.command_path.removeprefix(PROG).strip() for ctx in _walk(cli, None, PROG)][1:]


def _slug(heading: str) -> str:
    return heading.lower().replace(" ", "-")


def _fence(text: str) -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}text\n{text}\n{ticks}"


def render_cli() -> str:
    from otel_blackbox.cli import cli

    contexts = list(_walk(cli, None, PROG))
    out = [
        "# Command reference",
        "",
        f"<!-- Generated by {SCRIPT} from the commands' own help; do not edit by hand. -->",
        "",
        "Every command and subcommand of `otel-blackbox`, with the help `--help` prints. The guide "
        "shows them in use: [investigating](investigating.md), [playback](playback.md), "
        "[from incident to fix](incident-to-fix.md), [ingest](ingest.md).",
        "",
        "Exit codes: `0` ok; `1` not found (an id the database does not hold), a failed check or a "
        "divergence; `2` usage (a bad option, a malformed or ambiguous id), unreadable input, or an "
        "output path that cannot be written (refused before any work: no model call, no program run). "
        "An error is one line on stderr, never a traceback. `record`, `replay`, `fork` and "
        "`rerun -- CMD` otherwise end with the program's own exit code, also when their cassette could "
        "only be kept under another name (the message gives it). `--db PATH` goes before or after the "
        "command (not after a program's own arguments).",
        "",
    ]
    out += [f"- [`{ctx.command_path}`](#{_slug(ctx.command_path)})" for ctx in contexts]
    for ctx in contexts:
        help_text = ctx.command.get_help(ctx).rstrip()
        out += ["", f"## {ctx.command_path}", "", _fence(help_text)]
    return "\n".join(out) + "\n"


# --- docs/configuration.md -----------------------------------------------------------------------


def _env_text(value: Any) -> str:
    """A default as it would be written in the environment."""
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, float) and value.is_integer():
        return f"`{int(value)}`"
    if value in ((), None, ""):
        return "none"
    return f"`{value}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _fields() -> list[dataclasses.Field[Any]]:
    from otel_blackbox._config import BlackboxConfig

    return list(dataclasses.fields(BlackboxConfig))


def field_doc(name: str) -> str:
    """One line on a BlackboxConfig field: its variable's doc, else FIELD_DOCS."""
    from otel_blackbox._config import ENV_VARS

    for _var, (field_name, doc) in ENV_VARS.items():
        if field_name == name:
            return doc
    if name not in FIELD_DOCS:
        raise SystemExit(f"{SCRIPT}: BlackboxConfig.{name} has no variable and no entry in FIELD_DOCS")
    return FIELD_DOCS[name]


# The OpenTelemetry SDK's span limits decide what reaches the recorder at all (issue 49).
_SPAN_LIMITS = (
    "",
    "The SDK's span limits decide what reaches the recorder at all ([recording](recording.md#span-limits)):",
    "",
    "| variable | SDK default | for agents |",
    "| --- | --- | --- |",
    "| `OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT` (else `OTEL_ATTRIBUTE_COUNT_LIMIT`) | 128 | `100000`: "
    "OpenInference's flattened messages pass 128 after about 40 messages; the zero-code hook sets this "
    "when neither is set |",
    "| `OTEL_SPAN_EVENT_COUNT_LIMIT` | 128 | `100000` (GenAI's per-message events); the zero-code hook "
    "sets this when it is unset |",
    "| `OTEL_SPAN_LINK_COUNT_LIMIT` | 128 | left as it is |",
    "| `OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT`, `OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT` | none | leave unset: "
    "a longer value is cut and nothing counts it (the zero-code hook warns once when set) |",
    "",
    "A span they cut is stored with `blackbox.otlp.dropped_*_count` and shown as cut "
    "([schema](schema.md#reserved-keys-in-attributes)).",
)


def render_configuration() -> str:
    from otel_blackbox._config import ENV_VARS

    fields = {f.name: f for f in _fields()}
    variable_of = {name: var for var, (name, _doc) in ENV_VARS.items()}
    out = [
        "# Configuration",
        "",
        f"<!-- Generated by {SCRIPT} from otel_blackbox._config (ENV_VARS, BlackboxConfig); "
        "do not edit by hand. -->",
        "",
        "Every setting of the recorder, in one table. Values passed in code win over the environment, "
        "which wins over the defaults:",
        "",
        "```python",
        "from otel_blackbox import BlackboxConfig, BlackboxSpanProcessor",
        "",
        'processor = BlackboxSpanProcessor(db_path="traces.db", config=BlackboxConfig(capture_http=True))',
        'config = BlackboxConfig.from_env(retention="3d")  # OTEL_BLACKBOX_* first, then these',
        "```",
        "",
        "`BlackboxConfig(...)` alone does not read the environment; `BlackboxConfig.from_env(**overrides)` "
        "does, and the processor uses it when no config is given. A bad value is refused with one line "
        "naming the variable or the field (`ConfigError`, a `ValueError`). How each setting behaves: "
        "[recording](recording.md) (the queue, the writer, HTTP capture, "
        "[retention, the size cap and redaction](recording.md#retention-size-cap-and-redaction)).",
        "",
        "## Environment variables",
        "",
        "| variable | `BlackboxConfig` field | default | meaning |",
        "| --- | --- | --- | --- |",
    ]
    for var in sorted(ENV_VARS):
        name, doc = ENV_VARS[var]
        default = _env_text(fields[name].default)
        out.append(f"| `{var}` | `{name}` | {default} | {_cell(doc)} |")
    out += [
        "",
        "## `BlackboxConfig` fields",
        "",
        "| field | type | default | variable | meaning |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name in sorted(fields):
        field = fields[name]
        default = "(computed)" if not field.init else f"`{field.default!r}`"
        var = f"`{variable_of[name]}`" if name in variable_of else "none"
        out.append(
            f"| `{name}` | `{_cell(str(field.type))}` | {default} | {var} | {_cell(field_doc(name))} |"
        )
    out += [
        "",
        "## Other variables",
        "",
        "Read outside `BlackboxConfig`, by the part of otel-blackbox named.",
        "",
        "| variable | read by | default | meaning |",
        "| --- | --- | --- | --- |",
    ]
    out += [
        f"| `{var}` | {where} | {default} | {_cell(doc)} |"
        for var, where, default, doc in sorted(OTHER_VARIABLES)
    ]
    out += [
        "",
        "The standard OpenTelemetry variables apply as well: `OTEL_SDK_DISABLED=true` turns the recorder "
        "off, `OTEL_TRACES_EXPORTER=blackbox` names the end-only exporter under "
        "`opentelemetry-instrument`, and `push` follows the `OTEL_EXPORTER_OTLP_*` settings for headers, "
        "compression and certificates.",
        *_SPAN_LIMITS,
        "",
        "## Set by the launcher",
        "",
        "`record`, `replay`, `fork` and `rerun -- CMD` pass the session to the program they start in these "
        "variables. They are not settings: do not set them yourself.",
        "",
        "| variable | what it holds |",
        "| --- | --- |",
    ]
    out += [f"| `{var}` | {_cell(doc)} |" for var, doc in sorted(LAUNCHER_VARIABLES)]
    return "\n".join(out) + "\n"


# --- the command ---------------------------------------------------------------------------------


def pages() -> dict[str, str]:
    """Each generated page's file name in docs/ and the text it must hold."""
    return {CLI_PAGE: render_cli(), CONFIG_PAGE: render_configuration()}


def stale(docs: Path = DOCS) -> list[str]:
    """The generated pages of ``docs`` that are missing or differ from what the code generates."""
    found = []
    for name, text in pages().items():
        path = docs / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            found.append(name)
    return found


def write(docs: Path = DOCS) -> list[str]:
    """Rewrite the generated pages of ``docs`` that changed; return their names."""
    changed = stale(docs)
    for name, text in pages().items():
        if name in changed:
            (docs / name).write_text(text, encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1 if a generated page is not current")
    parser.add_argument("--docs", type=Path, default=DOCS, help="the docs folder (default: docs/)")
    args = parser.parse_args(argv)
    if args.check:
        outdated = stale(args.docs)
        if outdated:
            print(
                f"{SCRIPT}: {_shown(args.docs / outdated[0])} is not current: run python {SCRIPT}",
                file=sys.stderr,
            )
            return 1
        return 0
    for name in write(args.docs):
        print(f"wrote {_shown(args.docs / name)}")
    return 0


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


if __name__ == "__main__":
    sys.exit(main())
