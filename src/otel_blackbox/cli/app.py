"""The ``otel-blackbox`` command group and its entry point.

Exit codes: 0 ok; 1 not found, a failed check or a divergence; 2 usage or unreadable input. Every
error is one line on stderr, never a traceback.
"""

from __future__ import annotations

import os
import sys

import click

from .. import __version__
from ..config import DEFAULT_DB_PATH
from ..errors import (
    BlackboxError,
    ConfigError,
    RunLookupError,
    SessionError,
    SessionIdNotFound,
    StoreError,
    TraceNotFound,
)
from ..render.text import safe

__all__ = ["cli", "main"]


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


def _fail(message: str, code: int) -> None:
    # One line whatever the message quotes (a path, an option value, a field from a file): newlines
    # and terminal control characters are shown as escapes.
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
    except (TraceNotFound, RunLookupError, SessionIdNotFound) as exc:  # not found (or not one run): 1
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
