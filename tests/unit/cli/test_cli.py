"""The otel-blackbox CLI, run as a user runs it (a subprocess), on a database written by real spans."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from genai_prices import Usage, calc_price
from helpers import Recorder, run_cli
from opentelemetry import trace

from otel_blackbox.cli import cli


@pytest.fixture
def recorded(recorder: Recorder) -> tuple[Path, str, str]:
    """One finished agent run with a failing tool, and one run left open (as if killed)."""
    tracer = recorder.tracer
    with tracer.start_as_current_span(
        "agent",
        attributes={"openinference.span.kind": "AGENT", "session.id": "sess-1", "input.value": "Weather?"},
    ) as root:
        with tracer.start_as_current_span(
            "ChatCompletion",
            attributes={
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o-mini",
                "llm.token_count.prompt": 20,
                "llm.token_count.completion": 5,
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.content": "What is the weather in Paris?",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_abc",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "get_weather",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"city":"Paris"}',
            },
        ):
            pass
        try:
            with tracer.start_as_current_span(
                "get_weather", attributes={"openinference.span.kind": "TOOL", "tool.name": "get_weather"}
            ):
                raise ValueError("weather service unavailable for Paris")
        except ValueError:
            pass
        done_trace = format(root.get_span_context().trace_id, "032x")
    killed = tracer.start_span("killed-agent", attributes={"openinference.span.kind": "AGENT"})
    ctx = trace.set_span_in_context(killed)
    tracer.start_span(
        "slow_tool", context=ctx, attributes={"openinference.span.kind": "TOOL", "input.value": "{}"}
    )
    recorder.flush()
    open_trace = format(killed.get_span_context().trace_id, "032x")
    return recorder.db_path, done_trace, open_trace


def test_list(recorded: tuple[Path, str, str]) -> None:
    db, done, opened = recorded
    out = run_cli("list", db=db, check=True).stdout
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["START", "STATUS", "SPANS"]
    assert lines[0].split()[4:6] == ["COST", "TRACE"]
    by_id = {next(w for w in line.split() if len(w) == 32): line for line in lines[1:]}
    assert " error " in by_id[done] and by_id[done].rstrip().endswith("agent")
    assert " open " in by_id[opened] and "2/2o" in by_id[opened]
    data = json.loads(run_cli("list", "--json", "--errors-only", db=db, check=True).stdout)
    assert [t["trace_id"] for t in data] == [done]
    assert data[0]["span_count"] == 3 and data[0]["status"] == "error" and data[0]["total_tokens"] == 25
    assert json.loads(run_cli("list", "--json", "--session", "sess-1", db=db).stdout)[0]["trace_id"] == done
    assert run_cli("list", "--session", "nobody", db=db).stdout.strip() == "no matching traces"
    assert len(json.loads(run_cli("list", "--json", "-n", "1", db=db).stdout)) == 1


def test_show_tree_and_verbose(recorded: tuple[Path, str, str]) -> None:
    db, done, opened = recorded
    out = run_cli("show", done[:8], db=db, check=True).stdout
    assert out.startswith(f"trace {done}  agent  ERROR")
    assert "└── · agent  [AGENT]" in out
    assert "ChatCompletion  [LLM]" in out and "gpt-4o-mini  tokens 20+5=25" in out
    assert (
        "✗ get_weather  [TOOL]" in out and "ERROR: ValueError: weather service unavailable for Paris" in out
    )
    verbose = run_cli("show", done, "-v", db=db, check=True).stdout
    assert "[user] What is the weather in Paris?" in verbose
    assert '[assistant] → get_weather({"city":"Paris"})  id=call_abc' in verbose
    assert "exception: ValueError: weather service unavailable for Paris" in verbose
    assert "Traceback (most recent call last)" in verbose
    assert "input: Weather?" in verbose
    killed = run_cli("show", opened, "-v", db=db, check=True).stdout
    assert "… killed-agent  [AGENT]  OPEN" in killed and "… slow_tool  [TOOL]  OPEN" in killed
    assert "still open when the recording stopped" in killed
    data = json.loads(run_cli("show", done, "--json", db=db, check=True).stdout)
    assert data["trace"]["status"] == "error" and len(data["spans"]) == 3


def test_errors_stats_export(recorded: tuple[Path, str, str], tmp_path: Path) -> None:
    db, done, opened = recorded
    errors = run_cli("errors", db=db, check=True).stdout
    assert f"get_weather [TOOL]  trace {done}  ValueError: weather service unavailable for Paris" in errors
    stats = json.loads(run_cli("stats", "--json", db=db, check=True).stdout)
    assert (stats["traces"], stats["spans"], stats["open_spans"], stats["spans_dropped"]) == (2, 5, 2, 0)
    assert stats["tokens_by_model"] == [
        {
            "model": "gpt-4o-mini",
            "llm_spans": 1,
            "prompt_tokens": 20,
            "completion_tokens": 5,
            "total_tokens": 25,
            "cost_usd": float(calc_price(Usage(input_tokens=20, output_tokens=5), "gpt-4o-mini").total_price),
            "unpriced_llm_spans": 0,
        }
    ]
    assert "tokens and cost by model:" in run_cli("stats", db=db, check=True).stdout

    out = tmp_path / "spans.jsonl"
    result = run_cli("export", "-o", str(out), db=db, check=True)
    assert result.stderr.strip() == f"wrote 5 spans to {out}"
    spans = [json.loads(line) for line in out.read_text().splitlines()]
    assert {s["context"]["trace_id"] for s in spans} == {done, opened}
    for span in spans:
        assert set(span) == {"name", "context", "parent_id", "span_kind", "start_time", "end_time",
                             "status_code", "status_message", "attributes", "events"}  # fmt: skip
    slow = next(s for s in spans if s["name"] == "slow_tool")
    assert slow["status_code"] == "ERROR" and slow["attributes"]["blackbox.span.open"] is True
    assert slow["status_message"].startswith("incomplete") and slow["end_time"] >= slow["start_time"]
    tool = next(s for s in spans if s["name"] == "get_weather")
    assert tool["span_kind"] == "TOOL" and tool["events"][0]["name"] == "exception"
    one = run_cli("export", "--trace", opened[:10], db=db, check=True).stdout.splitlines()
    assert len(one) == 2


def test_cleanup(recorded: tuple[Path, str, str]) -> None:
    db, _, _ = recorded
    out = run_cli("cleanup", "--retention", "30d", db=db, check=True).stdout
    assert out.startswith("expired 0 traces, evicted 0 for the size cap")
    assert run_cli("cleanup", "--retention", "soon", db=db).returncode == 2


def test_bad_inputs_one_line_and_exit_code(recorded: tuple[Path, str, str], tmp_path: Path) -> None:
    db, _, _ = recorded
    text = tmp_path / "notes.txt"
    text.write_text("not a database")
    cases = [
        (("list",), tmp_path / "missing.db", 2, "database not found"),
        (("list",), text, 2, "not a SQLite database"),
        (("list", "--limit", "0"), db, 2, "Invalid value for '--limit'"),
        (("list", "--limit", "many"), db, 2, "'many' is not a valid integer"),
        (("show", "deadbeef"), db, 1, "no trace with id 'deadbeef'"),
        (("show", "not-hex!"), db, 2, "not a trace id"),
        (("show",), db, 2, "give exactly one of TRACE_ID, --run, --session"),
        (("export", "--format", "csv"), db, 2, "Invalid value for '--format'"),
        (("frobnicate",), db, 2, "No such command 'frobnicate'"),
        (("export", "-o", str(tmp_path / "no-dir" / "x.jsonl")), db, 2, "no-dir does not exist"),
    ]
    for args, path, code, message in cases:
        result = run_cli(*args, db=path)
        assert result.returncode == code, (args, result.stderr)
        assert message in result.stderr, (args, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1, (args, result.stderr)
        assert "Traceback" not in result.stderr
    assert text.read_text() == "not a database"  # a bad database is never modified


def test_ambiguous_prefix(recorder: Recorder) -> None:
    # Enough traces that some share a first hex digit.
    for _ in range(40):
        with recorder.tracer.start_as_current_span("t"):
            pass
    recorder.flush()
    with closing(sqlite3.connect(recorder.db_path)) as conn:
        ids = [r[0] for r in conn.execute("SELECT trace_id FROM spans")]
    firsts = [i[0] for i in ids]
    shared = next(c for c in firsts if firsts.count(c) > 1)
    result = run_cli("show", shared, db=recorder.db_path)
    assert result.returncode == 2 and "is ambiguous" in result.stderr


def test_locked_database(recorded: tuple[Path, str, str], recorder: Recorder) -> None:
    db, _, _ = recorded
    recorder.provider.shutdown()  # the recorder's own connection would keep the lock from being taken
    locker = sqlite3.connect(db, isolation_level=None)
    locker.execute("PRAGMA locking_mode = EXCLUSIVE")
    locker.execute("BEGIN EXCLUSIVE")
    locker.execute("INSERT INTO recorders (pid, started_ns, last_seen_ns) VALUES (1, 1, 1)")
    try:
        result = run_cli("list", db=db)
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert result.returncode == 2 and "database is locked by another process" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_every_command_has_help_with_an_example() -> None:
    assert cli.help and "Example:" in cli.help
    for name, command in cli.commands.items():
        assert command.help and "Example:" in command.help, name
        result = run_cli(name, "--help")
        assert result.returncode == 0 and "Example:" in result.stdout, name


def test_export_shows_progress_on_a_terminal_only(recorded: tuple[Path, str, str], tmp_path: Path) -> None:
    import os
    import pty
    import subprocess
    import sys

    db, _, _ = recorded
    argv = [
        sys.executable,
        "-m",
        "otel_blackbox.cli",
        "--db",
        str(db),
        "export",
        "-o",
        str(tmp_path / "s.jsonl"),
    ]
    leader, follower = pty.openpty()
    with subprocess.Popen(argv, stderr=follower, stdout=subprocess.DEVNULL) as proc:
        os.close(follower)
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    os.close(leader)
    assert proc.returncode == 0 and b"exporting" in seen and b"wrote 5 spans" in seen
    piped = run_cli("export", "-o", str(tmp_path / "t.jsonl"), db=db)
    assert piped.stderr.strip() == f"wrote 5 spans to {tmp_path / 't.jsonl'}"  # no bar when not a terminal
