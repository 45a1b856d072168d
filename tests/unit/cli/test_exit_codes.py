"""One exit-code table, kept by every command: 0 ok; 1 not found (an id the database does not hold),
a failed check or a divergence; 2 usage (a bad option, a malformed or ambiguous id) or unreadable
input (a missing file, a missing database). Each case is one line on stderr, never a traceback.

The table names every command of ``otel-blackbox --help``: a new command fails
``test_the_table_covers_every_command`` until its rows are added here.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import click
import pytest
from helpers import Recorder, run_cli, vector_path

from otel_blackbox._cli.app import COMMANDS, db_after_the_command

UNKNOWN_TRACE = "0123456789abcdef0123456789abcdef"
UNKNOWN_RUN = "0123456789abcdef"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A database with one trace and two runs whose ids share the prefix ``aaaa``; a cassette."""
    folder = tmp_path_factory.mktemp("codes")
    recorder = Recorder(folder / "blackbox.db")
    with recorder.tracer.start_as_current_span("root", attributes={"openinference.span.kind": "AGENT"}):
        pass
    recorder.flush()
    recorder.provider.shutdown()
    with closing(sqlite3.connect(folder / "blackbox.db")) as conn, conn:
        for n in (1, 2):
            conn.execute(
                "INSERT INTO recorders (pid, started_ns, last_seen_ns, run_id) VALUES (?, 1, 1, ?)",
                (n, f"aaaa00000000000{n}"),
            )
    return {
        "db": str(folder / "blackbox.db"),
        "cassette": str(vector_path("success-tool-use")),
        "missing": str(folder / "missing.json"),
        "out": str(folder / "out.json"),
    }


# (command, arguments, expected exit code, what the one line says). {db}, {cassette}, {missing} and
# {out} are the fixture's files.
CASES: list[tuple[str, tuple[str, ...], int, str]] = [
    ("list", ("--limit", "0"), 2, "Invalid value for '--limit'"),
    ("show", (UNKNOWN_TRACE,), 1, "no trace with id"),
    ("show", ("zzzz",), 2, "not a trace id"),
    ("show", ("--run", UNKNOWN_RUN), 1, "no run with id"),
    ("show", ("--run", "zzzz"), 2, "not a run id"),
    ("show", ("--run", "aaaa"), 2, "is ambiguous"),
    ("show", ("--session", "nosuch"), 1, "no span with session id"),
    ("errors", ("--limit", "x"), 2, "is not a valid integer"),
    ("stats", ("--nope",), 2, "No such option"),
    ("cleanup", ("--max-db-mb", "x"), 2, "is not a valid float"),
    ("export", ("--trace", UNKNOWN_TRACE), 1, "no trace with id"),
    ("export", ("--trace", "zzzz"), 2, "not a trace id"),
    ("runs", ("--limit", "0"), 2, "Invalid value for '--limit'"),
    ("import", ("{missing}",), 2, "missing.json"),
    ("push", ("--endpoint", "not-a-url"), 2, "expected http(s)://host[:port][/path]"),
    ("report", (UNKNOWN_TRACE, "-o", "{out}"), 1, "no trace with id"),
    ("report", ("--run", "aaaa", "-o", "{out}"), 2, "is ambiguous"),
    ("ui", ("--host", "0.0.0.0"), 2, "needs --token"),
    ("cassette", (UNKNOWN_TRACE, "-o", "{out}"), 1, "no trace with id"),
    ("cassette", ("--run", UNKNOWN_RUN, "-o", "{out}"), 1, "no run with id"),
    ("cassette", ("--run", "zzzz", "-o", "{out}"), 2, "not a run id"),
    ("inspect", ("{missing}",), 2, "missing.json"),
    ("verify", ("{missing}",), 2, "missing.json"),
    ("diff", ("{cassette}", "{missing}"), 2, "missing.json"),
    ("assert", ("{missing}",), 2, "missing.json"),
    ("eval", ("run", "{missing}", "{cassette}"), 2, "missing.json"),
    ("eval", ("run-all", "{missing}"), 2, "missing.json: no such folder"),
    ("record", ("-o", "{out}"), 2, "Missing argument"),
    ("replay", ("{missing}", "--", "true"), 2, "missing.json"),
    ("fork", ("{missing}", "--at", "1", "--set", "1", "--live", "-o", "{out}", "--", "true"), 2, "missing"),
    ("rerun", ("{missing}", "-o", "{out}"), 2, "missing.json"),
    ("blame", ("{missing}", "-o", "{out}"), 2, "missing.json"),
    ("blame", ("{cassette}", "--samples", "0", "-o", "{out}"), 2, "Invalid value for '--samples'"),
    ("mcp", ("--nope",), 2, "No such option"),
    ("serve", ("--port", "-1"), 2, "Invalid value for '--port'"),
]


def test_the_table_covers_every_command() -> None:
    assert {command for command, *_ in CASES} == set(COMMANDS)


@pytest.mark.parametrize(("command", "args", "code", "says"), CASES, ids=lambda v: str(v)[:30])
def test_every_command_keeps_the_exit_code_table(
    files: dict[str, str], command: str, args: tuple[str, ...], code: int, says: str
) -> None:
    argv = [command, *(a.format(**files) for a in args)]
    result = run_cli(*argv, db=Path(files["db"]))
    assert result.returncode == code, (argv, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], (argv, result.stderr)
    assert "Traceback" not in result.stderr


# Not `mcp`: its server starts before the database exists (a coding agent's configuration outlives
# any one recording), and each tool call says the database is missing (test_mcp.py).
@pytest.mark.parametrize("command", ["list", "show", "stats", "runs"])
def test_a_missing_database_is_unreadable_input_before_or_after_the_command(
    tmp_path: Path, command: str
) -> None:
    missing = str(tmp_path / "none.db")
    args = [command] + ([UNKNOWN_TRACE] if command == "show" else [])
    for argv in (["--db", missing, *args], [*args, "--db", missing]):
        result = run_cli(*argv)
        assert result.returncode == 2 and "database not found" in result.stderr, (argv, result.stderr)


def test_db_after_the_command_is_the_groups_up_to_a_program() -> None:
    assert db_after_the_command(["list", "--db", "a.db", "-n", "3"]) == ["--db", "a.db", "list", "-n", "3"]
    assert db_after_the_command(["--db", "a.db", "show", "--db=b.db", "x"]) == [
        "--db", "a.db", "--db=b.db", "show", "x",
    ]  # fmt: skip
    with pytest.raises(click.UsageError, match="--db needs a value"):
        db_after_the_command(["list", "--db"])
    # A program's own --db stays the program's: after `--`, and for the commands that run one.
    assert db_after_the_command(["show", "x", "--", "--db", "p"]) == ["show", "x", "--", "--db", "p"]
    for command in ("record", "replay", "fork", "rerun"):
        assert db_after_the_command([command, "--db", "p"]) == [command, "--db", "p"]
