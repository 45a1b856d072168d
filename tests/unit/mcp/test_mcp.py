"""`otel-blackbox mcp`: the MCP server, driven by the official MCP client over stdio.

The server runs as a user's coding agent starts it (`python -m otel_blackbox._cli --db DB mcp`, a
subprocess), against a database the real recorder wrote while examples/weather_agent.py ran against
the fake LLM: one good run (in a session) and one whose tool failed.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Awaitable, Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from helpers import EXAMPLES, TESTS, Recorder, run_cli, vector_path
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import TextContent

from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.verify import verify_cassette

TOOLS = {
    "list_traces", "list_runs", "errors", "show_trace", "get_span", "stats", "write_cassette",
    "inspect_cassette", "verify_cassette", "diff_cassettes", "eval_run", "blame", "fork_from_step",
}  # fmt: skip
FAILURE = "weather service unavailable for Paris"
SESSION = "chat-42"
T = TypeVar("T")


@dataclass(frozen=True)
class Recorded:
    db: Path
    folder: Path
    ok_trace: str
    failed_trace: str
    runs: list[str]  # newest first, as `runs --json` lists them


def _agent(db: Path, *args: str) -> str:
    """One run of the example agent, recorded into ``db``; its trace id."""
    argv = [sys.executable, str(EXAMPLES / "weather_agent.py"), "--db", str(db), *args]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True).stdout
    return next(line.split()[1] for line in out.splitlines() if line.startswith("TRACE "))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    folder = tmp_path_factory.mktemp("mcp")
    db = folder / "blackbox.db"
    ok = _agent(db, "--session-id", SESSION)
    failed = _agent(db, "--fail-tool")
    runs = [r["run_id"] for r in json.loads(run_cli("runs", "--json", db=db, check=True).stdout)]
    return Recorded(db, folder, ok, failed, runs)


def _state(db: Path) -> list[str]:
    """What the server must not change: the bytes of the database and of its -wal. (Opening a WAL
    database, even read-only, makes SQLite create an empty -wal where there was none: no -wal and
    an empty one hold the same, nothing.)"""
    wal = Path(f"{db}-wal")
    return [
        hashlib.sha256(data).hexdigest()
        for data in (db.read_bytes(), wal.read_bytes() if wal.exists() else b"")
    ]


def serve(
    db: Path,
    cwd: Path,
    body: Callable[[ClientSession], Awaitable[T]],
    args: list[str] | None = None,
    env: dict[str, str] | None = None,
) -> T:
    """Start the server on ``db`` as a client does (or with these command-line ``args``; ``env``: its
    environment, over the few variables the client passes on), initialize, run ``body``, close. Its
    stderr is checked: a tool error is never a traceback."""
    errlog = cwd / "server-stderr.txt"
    argv = ["-m", "otel_blackbox.cli", *(args or ["--db", str(db), "mcp"])]

    async def run() -> T:
        params = StdioServerParameters(command=sys.executable, args=argv, cwd=cwd, env=env)
        with errlog.open("w") as err:
            async with (
                stdio_client(params, errlog=err) as (read, write),
                ClientSession(read, write) as session,
            ):
                init = await session.initialize()
                assert init.server_info.name == "otel-blackbox"
                return await body(session)

    result = asyncio.run(run())
    assert "Traceback" not in errlog.read_text()
    return result


async def call(session: ClientSession, name: str, /, **arguments: Any) -> tuple[bool, str]:
    """(is_error, the one text block) of a tool call."""
    result = await session.call_tool(name, arguments)
    assert len(result.content) == 1 and isinstance(result.content[0], TextContent)
    return result.is_error, result.content[0].text


async def ok(session: ClientSession, name: str, /, **arguments: Any) -> str:
    is_error, text = await call(session, name, **arguments)
    assert not is_error, text
    return text


async def failed(session: ClientSession, name: str, /, **arguments: Any) -> str:
    """A tool error: one line, naming the tool."""
    is_error, text = await call(session, name, **arguments)
    assert is_error, text
    assert "\n" not in text and text.startswith(f"Error executing tool {name}: "), text
    return text.removeprefix(f"Error executing tool {name}: ")


def test_tools_have_descriptions_and_object_schemas(recorded: Recorded, tmp_path: Path) -> None:
    async def body(session: ClientSession) -> None:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert set(tools) == TOOLS
        for tool in tools.values():
            assert tool.description and len(tool.description) > 80, tool.name
            schema = tool.input_schema
            assert schema["type"] == "object" and isinstance(schema["properties"], dict), tool.name
            for name, prop in schema["properties"].items():
                assert prop.get("description"), (tool.name, name)
        assert tools["show_trace"].input_schema["required"] == ["trace_id"]
        assert set(tools["get_span"].input_schema["required"]) == {"trace_id", "span_id"}
        assert tools["list_traces"].input_schema["properties"]["limit"]["maximum"] == 200
        assert tools["stats"].annotations is not None and tools["stats"].annotations.read_only_hint
        assert tools["write_cassette"].annotations is not None
        assert tools["write_cassette"].annotations.read_only_hint is False

    serve(recorded.db, tmp_path, body)


def test_the_database_tools_answer_what_the_cli_does(recorded: Recorded, tmp_path: Path) -> None:
    db = recorded.db
    listed = json.loads(run_cli("list", "--json", db=db, check=True).stdout)
    runs = json.loads(run_cli("runs", "--json", db=db, check=True).stdout)
    shown = json.loads(run_cli("show", recorded.failed_trace, "--json", db=db, check=True).stdout)
    before = _state(db)

    async def body(session: ClientSession) -> dict[str, Any]:
        traces = json.loads(await ok(session, "list_traces"))
        assert [t["trace_id"] for t in traces["traces"]] == [t["trace_id"] for t in listed]
        assert [t["cost_usd"] for t in traces["traces"]] == [t["cost_usd"] for t in listed]
        assert traces["next_offset"] is None
        errors_only = json.loads(await ok(session, "list_traces", errors_only=True))
        assert [t["trace_id"] for t in errors_only["traces"]] == [recorded.failed_trace]
        in_session = json.loads(await ok(session, "list_traces", session=SESSION))
        assert [t["trace_id"] for t in in_session["traces"]] == [recorded.ok_trace]
        first = json.loads(await ok(session, "list_traces", limit=1))
        second = json.loads(await ok(session, "list_traces", limit=1, offset=first["next_offset"]))
        assert [first["traces"][0]["trace_id"], second["traces"][0]["trace_id"]] == [
            t["trace_id"] for t in listed
        ]
        assert second["next_offset"] is None

        found_runs = json.loads(await ok(session, "list_runs"))
        assert [(r["run_id"], r["status"], r["cost_usd"]) for r in found_runs["runs"]] == [
            (r["run_id"], r["status"], r["cost_usd"]) for r in runs
        ]

        errors = json.loads(await ok(session, "errors"))["errors"]
        (error,) = errors
        failing = next(s for s in shown["spans"] if s["status"] == "error")
        assert (error["trace_id"], error["span_id"]) == (recorded.failed_trace, failing["span_id"])
        assert (error["exception_type"], error["exception_message"]) == ("ValueError", FAILURE)

        tree = await ok(session, "show_trace", trace_id=recorded.failed_trace[:8])
        assert tree.startswith(f"trace {recorded.failed_trace}  weather-agent  ERROR")
        assert "[user] What's the weather in Paris" in tree  # the messages by role
        assert '→ get_weather({"city": "Paris"})' in tree  # the tool calls with their arguments
        assert f"ERROR: ValueError: {FAILURE}" in tree and f"exception: ValueError: {FAILURE}" in tree
        assert re.search(r"gpt-4o-mini  tokens \d+\+\d+=\d+  cost \$", tree)
        assert tree.endswith("none remain]")

        span = json.loads(
            await ok(session, "get_span", trace_id=recorded.failed_trace[:10], span_id=failing["span_id"][:6])
        )
        assert (
            span["span_id"] == failing["span_id"]
            and span["span"]["status_message"] == f"ValueError: {FAILURE}"
        )
        assert span["span"]["events"][0]["attributes"]["exception.message"] == FAILURE
        assert span["span"]["attributes"] == failing["attributes"]

        return dict(json.loads(await ok(session, "stats")))

    stats = serve(db, tmp_path, body)
    cli_stats = json.loads(run_cli("stats", "--json", db=db, check=True).stdout)
    assert stats["tokens_by_model"][0]["llm_spans"] == 4 and stats["cost_usd"] > 0
    assert stats["unpriced_llm_spans"] == 0 and stats["prices"].startswith("genai-prices ")
    for key in set(cli_stats) - {"disk_free_bytes"}:
        assert stats[key] == cli_stats[key], key
    assert _state(db) == before


def test_show_trace_pages_cover_every_span_once(recorded: Recorded, tmp_path: Path) -> None:
    shown = json.loads(run_cli("show", recorded.ok_trace, "--json", db=recorded.db, check=True).stdout)
    every = {s["span_id"] for s in shown["spans"]}
    assert len(every) == 5

    async def body(session: ClientSession) -> tuple[str, str]:
        first = await ok(session, "show_trace", trace_id=recorded.ok_trace, limit=3)
        assert first.endswith(
            f"[2 more spans: call show_trace with trace_id={recorded.ok_trace} and offset=3]"
        )
        return first, await ok(session, "show_trace", trace_id=recorded.ok_trace, limit=3, offset=3)

    first, second = serve(recorded.db, tmp_path, body)
    pages = [re.findall(r"^ *\[\d+\] .*  span ([0-9a-f]{16})", page, re.M) for page in (first, second)]
    assert [len(page) for page in pages] == [3, 2]
    assert set(pages[0]) | set(pages[1]) == every and not set(pages[0]) & set(pages[1])
    assert "spans 3..4 of 5" in second and second.endswith("none remain]")


def test_cassettes_written_inspected_verified_diffed_and_evaluated(
    recorded: Recorded, tmp_path: Path
) -> None:
    good, bad, by_run = tmp_path / "good.json", tmp_path / "bad.json", tmp_path / "run.json"
    contract = tmp_path / "contract.json"
    before = _state(recorded.db)

    async def body(session: ClientSession) -> None:
        wrote = json.loads(await ok(session, "write_cassette", path=str(good), session_id=SESSION))
        assert wrote["path"] == str(good) and wrote["outcome"] == "success"
        await ok(session, "write_cassette", path=str(bad), trace_id=recorded.failed_trace[:12])
        older_run = recorded.runs[-1]  # the good run: it started first
        by_run_result = json.loads(
            await ok(session, "write_cassette", path=str(by_run), run_id=older_run[:8])
        )
        assert by_run_result["cassette_id"] == f"run-{older_run}"
        relative = json.loads(
            await ok(session, "write_cassette", path="here.json", trace_id=recorded.ok_trace)
        )
        assert relative["path"] == str(tmp_path / "here.json")  # from the server's working directory

        timeline = await ok(session, "inspect_cassette", path=str(bad))
        assert timeline.startswith(f"cassette {recorded.failed_trace}  v2  9 steps")
        assert f"✗ get_weather error: ValueError: {FAILURE}" in timeline
        page = await ok(session, "inspect_cassette", path=str(bad), limit=4)
        assert page.endswith("[5 more steps: call inspect_cassette with the same path and offset=4]")

        verified = json.loads(await ok(session, "verify_cassette", path=str(bad)))
        assert verified["passed"] and [c["status"] for c in verified["checks"]] == ["pass"] * 4
        head = load_cassette(bad).head
        cut = json.loads(await ok(session, "verify_cassette", path=str(bad), expect_head="0" * 64))
        assert not cut["passed"] and cut["first_failure"]["name"] == "hash_chain" and head

        diff = json.loads(
            await ok(session, "diff_cassettes", parent=str(good), child=str(bad), semantic=True)
        )
        assert diff["diverged"] and diff["outcome"]["childFailure"]["kind"] == "tool_error"
        assert diff["report"][-1].startswith("outcome: ")
        same = json.loads(await ok(session, "diff_cassettes", parent=str(good), child=str(good)))
        assert not same["diverged"] and same["outcome"]["kind"] == "no_change"

        run_cli("eval", "generate", str(good), "-o", str(contract), check=True)
        evaluated = json.loads(
            await ok(session, "eval_run", contract=str(contract), cassettes=[str(good), str(bad)])
        )
        assert not evaluated["passed"]
        assert [c["status"] for c in evaluated["cassettes"]] == ["pass", "fail"]
        (failure,) = evaluated["cassettes"][1]["failures"]
        assert failure["kind"] == "no_tool_errors" and FAILURE in failure["detail"]

    serve(recorded.db, tmp_path, body)
    for path in (good, bad, by_run, tmp_path / "here.json"):
        assert verify_cassette(load_cassette(path)).passed, path
    assert len(load_cassette(good).steps) == 9 and load_cassette(bad).id == recorded.failed_trace
    assert _state(recorded.db) == before


def test_bad_input_is_a_tool_error_and_the_server_goes_on(recorded: Recorded, tmp_path: Path) -> None:
    before = _state(recorded.db)
    not_a_cassette = tmp_path / "notes.json"
    not_a_cassette.write_text('{"hello": 1}')
    existing = tmp_path / "taken.json"
    existing.write_text("keep me")

    async def body(session: ClientSession) -> None:
        assert "limit: Input should be greater than or equal to 1" in await failed(
            session, "list_traces", limit=0
        )
        assert "trace_id: Field required" in await failed(session, "show_trace")
        assert "limit: Input should be a valid integer" in await failed(session, "errors", limit="many")
        assert await failed(session, "show_trace", trace_id="f" * 32) == f"no trace with id '{'f' * 32}'"
        assert "not a trace id" in await failed(session, "show_trace", trace_id="not-hex")
        assert "past the end (5 in all)" in await failed(
            session, "show_trace", trace_id=recorded.ok_trace, offset=5
        )
        assert "no span with id 'abcdef'" in await failed(
            session, "get_span", trace_id=recorded.ok_trace, span_id="abcdef"
        )
        assert "no price for model 'no-such-model'" in await failed(
            session, "stats", price_model="no-such-model"
        )
        assert "no run with id 'ffff'" in await failed(
            session, "write_cassette", path=str(tmp_path / "x.json"), run_id="ffff"
        )
        both = await failed(
            session, "write_cassette", path=str(tmp_path / "x.json"), trace_id="a", run_id="b"
        )
        assert both == "give exactly one of trace_id, run_id, session_id (got trace_id and run_id)"
        assert "is the database" in await failed(
            session, "write_cassette", path=str(recorded.db), trace_id=recorded.ok_trace
        )
        assert "pass overwrite=true" in await failed(
            session, "write_cassette", path=str(existing), trace_id=recorded.ok_trace
        )
        assert "does not exist" in await failed(
            session, "write_cassette", path=str(tmp_path / "no" / "x.json"), trace_id=recorded.ok_trace
        )
        assert "no such file" in await failed(session, "inspect_cassette", path=str(tmp_path / "none.json"))
        assert str(not_a_cassette) in await failed(session, "verify_cassette", path=str(not_a_cassette))
        assert "cassettes: List should have at least 1 item" in await failed(
            session, "eval_run", contract=str(not_a_cassette), cassettes=[]
        )
        is_error, text = await call(session, "no_such_tool")
        assert is_error and "no_such_tool" in text
        # Still serving, and still right.
        traces = json.loads(await ok(session, "list_traces"))
        assert {t["trace_id"] for t in traces["traces"]} == {recorded.ok_trace, recorded.failed_trace}

    serve(recorded.db, tmp_path, body)
    assert existing.read_text() == "keep me" and not (tmp_path / "x.json").exists()
    assert _state(recorded.db) == before


def test_a_missing_or_locked_database_is_a_tool_error(recorded: Recorded, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "blackbox.db"

    async def on_missing(session: ClientSession) -> None:
        assert await failed(session, "stats") == f"database not found: {missing}"
        assert await failed(session, "list_traces") == f"database not found: {missing}"
        assert len((await session.list_tools()).tools) == len(TOOLS)  # the server is still up

    # `mcp --db PATH` too (the group's --db given after the command), and it wins over one before.
    serve(missing, tmp_path, on_missing, args=["--db", str(recorded.db), "mcp", "--db", str(missing)])
    assert not missing.parent.exists()

    locked = tmp_path / "locked.db"
    shutil.copy(recorded.db, locked)
    holder = sqlite3.connect(locked, isolation_level=None)
    try:
        holder.execute("PRAGMA locking_mode = EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")

        async def on_locked(session: ClientSession) -> None:
            assert await failed(session, "errors") == f"database is locked by another process: {locked}"
            holder.execute("ROLLBACK")
            holder.close()  # released: the next call reads it
            assert json.loads(await ok(session, "errors"))["errors"][0]["exception_message"] == FAILURE

        serve(locked, tmp_path, on_locked)
    finally:
        holder.close()


def test_an_older_database_is_read_as_it_is_never_upgraded(tmp_path: Path) -> None:
    """The CLI upgrades a schema version 2 file when it reads it (test_schema_migration.py); the
    server, which only reads, leaves it as it is."""
    db = tmp_path / "v2.db"
    shutil.copyfile(TESTS / "data" / "schema_v2.db", db)
    before = _state(db)

    async def body(session: ClientSession) -> list[str]:
        assert json.loads(await ok(session, "errors"))["errors"]
        return [t["trace_id"] for t in json.loads(await ok(session, "list_traces"))["traces"]]

    listed = serve(db, tmp_path, body)
    assert len(listed) == 5 and listed[-1] == "cd613e30d8f16adf91b7584a2265b1f5"
    assert _state(db) == before
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 2


def test_a_long_span_comes_in_bounded_parts(recorder: Recorder, tmp_path: Path) -> None:
    """A value larger than one result: shortened by default, and in full, in parts that say where
    the next begins and add up to all of it."""
    prompt = "".join(f"line {i:05d} of a very long prompt\n" for i in range(2000))  # ~66 KB
    with (
        recorder.tracer.start_as_current_span("agent") as root,
        recorder.tracer.start_as_current_span(
            "llm", attributes={"openinference.span.kind": "LLM", "input.value": prompt}
        ) as child,
    ):
        pass
    recorder.flush()
    trace_id = format(root.get_span_context().trace_id, "032x")
    span_id = format(child.get_span_context().span_id, "016x")

    async def body(session: ClientSession) -> tuple[str, str, list[str]]:
        short = await ok(session, "get_span", trace_id=trace_id, span_id=span_id)
        first = await ok(session, "show_trace", trace_id=trace_id, full=True)
        assert first.endswith(f"[1 more span: call show_trace with trace_id={trace_id} and offset=1]")
        tree = await ok(session, "show_trace", trace_id=trace_id, full=True, offset=1)
        parts, offset = [], 0
        while True:
            part = await ok(
                session, "get_span", trace_id=trace_id, span_id=span_id, full=True, char_offset=offset
            )
            assert len(part) <= 20_000
            found = re.search(
                r"\n\[cut: characters \d+\.\.(\d+) of \d+ shown; \d+ more: call .* char_offset=\1\]$", part
            )
            if found is None:
                parts.append(part)
                return short, tree, parts
            parts.append(part[: found.start()])
            offset = int(found.group(1))

    short, tree, parts = serve(recorder.db_path, tmp_path, body)
    assert len(short) < 20_000 and "more chars)" in json.loads(short)["span"]["attributes"]["input.value"]
    assert len(tree) <= 20_000 and "[this span is cut: get_span" in tree
    assert len(parts) >= 4
    assert json.loads("".join(parts))["span"]["attributes"]["input.value"] == prompt


def test_without_the_extra_the_command_names_the_pip_install(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['mcp'] = None\n"
        "from otel_blackbox.cli import main\n"
        f"main(['--db', {str(tmp_path / 'blackbox.db')!r}, 'mcp'])\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("otel-blackbox: error: ") and "pip install 'otel-blackbox[mcp]'" in line


def test_a_hand_edited_cassette_is_refused_unless_allow_unverified(tmp_path: Path) -> None:
    """Step 0's text changed in the file, its hash kept: every tool that reads it answers with the
    one line of the refusal (the file, the check, the step); allow_unverified=true goes on, and the
    answer carries the warning."""
    data = json.loads(vector_path("fork-parent").read_text())
    message = data["steps"][0]["payload"]["messages"][0]
    message["content"] = message["content"].replace("Alice", "Omega")
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(data))
    parent, good = str(vector_path("fork-parent")), str(vector_path("error-unknown-tool"))
    contract = tmp_path / "contract.json"
    run_cli("eval", "generate", str(vector_path("success-tool-use")), "-o", str(contract), check=True)
    why = f"{edited} fails verify (hash_chain) at step 0: hash does not match its content"
    calls: dict[str, dict[str, Any]] = {
        "inspect_cassette": {"path": str(edited)},
        "diff_cassettes": {"parent": parent, "child": str(edited)},
        "eval_run": {"contract": str(contract), "cassettes": [parent, str(edited)]},
        "blame": {"incident": str(edited), "output": str(tmp_path / "branches")},
        "blame ": {"incident": good, "good": str(edited), "output": str(tmp_path / "branches")},
    }

    async def body(session: ClientSession) -> None:
        for name, arguments in calls.items():
            refused = await failed(session, name.strip(), **arguments)
            assert refused.startswith(why) and refused.endswith("; allow_unverified=true goes on anyway")
        timeline = await ok(session, "inspect_cassette", path=str(edited), allow_unverified=True)
        lines = timeline.splitlines()
        assert lines[0].startswith(f"[unverified] {why}") and lines[0].endswith("(allow_unverified=true)")
        assert all(line.startswith("[unverified] ") for line in lines)
        assert any("Book a hotel for Omega" in line for line in lines)
        diff = json.loads(
            await ok(session, "diff_cassettes", parent=parent, child=str(edited), allow_unverified=True)
        )
        assert diff["unverified"].startswith(why) and diff["index"] == 0  # by content, not kept hashes
        evaluated = json.loads(
            await ok(
                session, "eval_run", contract=str(contract), cassettes=[str(edited)], allow_unverified=True
            )
        )
        assert evaluated["unverified"].startswith(why) and len(evaluated["cassettes"]) == 1

    serve(tmp_path / "blackbox.db", tmp_path, body)
    assert not (tmp_path / "branches").exists()
