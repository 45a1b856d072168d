"""The ``otel-blackbox`` command group and its entry point.

Exit codes: 0 ok; 1 not found, a failed check or a divergence; 2 usage or unreadable input. Every
error is one line on stderr, never a traceback.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator, MutableMapping
from gettext import gettext as _

import click

from otel_blackbox._config import DEFAULT_DB_PATH
from otel_blackbox._version import __version__
from otel_blackbox.errors import (
    BlackboxError,
    ConfigError,
    MalformedRunId,
    MalformedTraceId,
    ResultKept,
    RunNotFound,
    SessionError,
    SessionIdNotFound,
    StoreError,
    TraceNotFound,
)

__all__ = ["COMMANDS", "cli", "main"]

# Every command: the module of this package that defines it, and the summary `otel-blackbox --help`
# shows for it (the first sentence of its help; a test checks they are equal). A command's module is
# imported only when that command is looked up, so that a command loads only what it runs and the
# group's help loads none (jsonschema, the cassette package and the viewer's HTTP server cost more
# than a read command's whole run).
COMMANDS: dict[str, tuple[str, str]] = {
    "list": (
        "traces",
        "Recent traces: start, status (ok / error / open / incomplete), spans, duration, cost, trace id,"
        " root name.",
    ),
    "show": ("traces", "The span tree of one trace; a unique prefix of the trace id is enough."),
    "errors": ("traces", "Recent failed spans, newest first, each with its trace id and exception."),
    "stats": (
        "traces",
        "Database size and state, traces, spans, open spans, spans dropped, tokens and cost by model.",
    ),
    "cleanup": ("traces", "Apply retention and the size cap now, and give the freed space back to the disk."),
    "export": ("export", "Export spans as JSON lines: OpenInference (Phoenix's v1.Span shape) or OTLP/JSON."),
    "runs": (
        "runs",
        "Recent runs, newest first: run id, pid, started, last seen, traces, spans, cost, status, roots.",
    ),
    "import": (
        "imports",
        "Store the spans of OTLP/JSON files (or - for standard input) or of a Phoenix server, as one run.",
    ),
    "push": (
        "push",
        "Send recorded spans to an OTLP/HTTP receiver (protobuf), with the OpenTelemetry exporter.",
    ),
    "report": (
        "report",
        "One trace (a unique id prefix, from --db), a run or a session, or one cassette, as one HTML page.",
    ),
    "ui": (
        "ui",
        "The workbench: runs, a run's timeline opened on its failing span, a rerun from the page, "
        "its verdict and diff, contracts saved and run all.",
    ),
    "cassette": (
        "cassette_command",
        "Turn a recorded trace (even a failed or killed one) into a v2 cassette.",
    ),
    "inspect": ("cassettes", "The steps of a cassette as a readable timeline."),
    "verify": (
        "cassettes",
        "Check a cassette: schema_version, hash_chain, provider_neutrality, replayability.",
    ),
    "diff": ("cassettes", "The first step where two cassettes diverge, and what it changed in the outcome."),
    "assert": ("cassettes", "Verify a cassette, then check exact expectations; exit 1 if any fails."),
    "eval": ("evals", "Structural contracts: generate one from a good cassette, run it on others."),
    "record": ("playback", "Run a program live and record its LLM (and other HTTP) traffic as a cassette."),
    "replay": (
        "playback",
        "Run a program offline against a cassette: no network, no API key, no model variance.",
    ),
    "fork": (
        "playback",
        "Change one step of a run and let the run continue from there.",
    ),
    "rerun": (
        "rerun",
        "Rerun a recorded incident with the model live and every tool answered from the recording.",
    ),
    "blame": (
        "blame",
        "Which step of a failed incident made it fail: found by branching from its steps and rerunning.",
    ),
    "mcp": ("mcp", "A Model Context Protocol server over stdio, for a coding agent to read the black box."),
    "serve": (
        "serve",
        "Receive spans over OTLP/HTTP (protobuf or JSON) from any OpenTelemetry SDK or Collector.",
    ),
}


class _LazyCommands(MutableMapping[str, click.Command]):
    """The group's command table (``cli.commands``): every name of ``COMMANDS`` is in it from the
    start, and looking one up imports its module, which registers its commands as it loads. Names
    and membership never import anything (click lists them for "did you mean", and to sort them)."""

    def __init__(self, homes: dict[str, str]) -> None:
        self._homes = dict(homes)
        self._loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded and name in self._homes:
            importlib.import_module(f"{__package__}.{self._homes[name]}")
            if name not in self._loaded:  # a bug in COMMANDS: never "no such command"
                raise RuntimeError(f"{__package__}.{self._homes[name]} defines no command {name!r}")
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        self._homes.pop(name, None)
        self._loaded.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._homes or name in self._loaded

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*self._homes, *self._loaded]))

    def __len__(self) -> int:
        return len(self._homes.keys() | self._loaded.keys())

    def loaded(self, name: str) -> click.Command | None:
        """The command if its module is loaded; never imports."""
        return self._loaded.get(name)


# Commands whose arguments may end with a program's own (which may have a --db of its own): a --db
# after them is theirs to refuse, never moved. None of them reads the database.
_RUNS_A_PROGRAM = frozenset({"record", "replay", "fork", "rerun"})


def db_after_the_command(args: list[str]) -> list[str]:
    """``--db PATH`` given after the command name is the group's option as if given before it (and
    wins over one before, as a later option does); up to a ``--``, and never for a command that runs
    a program."""
    position = 0
    while position < len(args) and args[position].startswith("-") and args[position] != "--":
        position += 2 if args[position] == "--db" else 1
    if position >= len(args) or args[position] in _RUNS_A_PROGRAM:
        return args
    moved: list[str] = []
    kept: list[str] = []
    rest = iter(args[position + 1 :])
    for arg in rest:
        if arg == "--":
            kept += [arg, *rest]
        elif arg == "--db":
            value = next(rest, None)
            if value is None:
                raise click.UsageError("--db needs a value: --db PATH")
            moved += [arg, value]
        elif arg.startswith("--db="):
            moved.append(arg)
        else:
            kept.append(arg)
    return [*args[:position], *moved, args[position], *kept]


class _Group(click.Group):
    """A group whose help lists the commands without importing their modules, and whose --db may
    also follow the command."""

    commands: _LazyCommands

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, db_after_the_command(args))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # click's Group.format_commands, with a command not loaded yet described by a stand-in that
        # carries its summary: click shortens it to the terminal exactly as it would the whole help.
        rows: list[tuple[str, click.Command]] = []
        for name in self.list_commands(ctx):
            command = self.commands.loaded(name) or click.Command(name, help=COMMANDS[name][1])
            if not command.hidden:
                rows.append((name, command))
        if rows:
            limit = formatter.width - 6 - max(len(name) for name, _ in rows)
            with formatter.section(_("Commands")):  # translated as click does
                formatter.write_dl([(name, command.get_short_help_str(limit)) for name, command in rows])


@click.group(
    cls=_Group,
    commands=_LazyCommands({name: module for name, (module, _) in COMMANDS.items()}),
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--db",
    envvar="OTEL_BLACKBOX_DB",
    default=DEFAULT_DB_PATH,
    show_default=True,
    metavar="PATH",
    help="The SQLite file to read (env OTEL_BLACKBOX_DB); before or after the command.",
)
@click.version_option(__version__, prog_name="otel-blackbox")
def cli(db: str) -> None:
    """Investigate what an agent did, from the spans BlackboxSpanProcessor recorded.

    \b
    Example:
      otel-blackbox list
      otel-blackbox show 4bf92f35 -v
    """


def _fail(message: str, code: int) -> None:
    # One line whatever the message quotes (a path, an option value, a field from a file): newlines
    # and terminal control characters are shown as escapes.
    from otel_blackbox._render.text import (
        safe,  # only on the way out: a command that succeeds may not need it
    )

    click.echo(f"otel-blackbox: error: {safe(message)}", err=True)
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
    except ResultKept as exc:  # the work is done and kept elsewhere: a program's own exit code stands
        _fail(str(exc), 2 if exc.exit_code is None else exc.exit_code)
    except (MalformedTraceId, MalformedRunId) as exc:  # not an id at all: usage, 2
        _fail(str(exc), 2)
    except (TraceNotFound, RunNotFound, SessionIdNotFound) as exc:  # not found: 1 (ambiguous: 2, below)
        _fail(str(exc), 1)
    except SessionError as exc:  # a divergence, a missing call, a refused recording
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
