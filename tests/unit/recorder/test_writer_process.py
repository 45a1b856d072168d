"""The writer process: rows are built and written by a companion process, not on the agent's GIL.

Real agents (tests/programs/writer_process_agent.py) run as their own processes; the writer is found from
the outside through /proc (its command line names ``otel-blackbox-writer``, its parent is the
agent) and the database is read with sqlite3. What is checked: nothing starts before the first
span; the writer is isolated (``python -I``, no OTEL_* variables, no sitecustomize) yet applies the
agent's configuration; rows carry the agent's pid; a killed agent's open spans end when it died;
no writer outlives its agent; os.fork, multiprocessing and a preload-then-fork server each record
every span once with its own pid; the in-thread writer takes over, with one warning, where no
process can be started or the writer process dies; every span is written, dropped or counted lost
while the file is locked; several processors in one process each have their own writer.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import queue
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
import writer_process_agent as wpa  # tests/programs/ is on sys.path (conftest.py)
from helpers import FRAMEWORK_INSTRUMENTORS_OFF, PROGRAMS, Recorder, run_cli
from opentelemetry.sdk.trace import Span, TracerProvider

from otel_blackbox import BlackboxConfig, BlackboxSpanProcessor
from otel_blackbox._recorder import auto
from otel_blackbox._recorder import process_sink as companion
from otel_blackbox._recorder.process_sink import ProcessSink
from otel_blackbox._recorder.sinks import FlushMarker
from otel_blackbox._store import writer as writer_module
from otel_blackbox._store.connection import connect_writer
from otel_blackbox._store.queries import last_seen_by_trace, recorder_of_span
from otel_blackbox._store.snapshot import Snapshotter
from otel_blackbox._store.writer import SpanWriter
from otel_blackbox.errors import ConfigError

AGENT = str(PROGRAMS / "writer_process_agent.py")
EXIT_DEADLINE_S = 15.0  # "no writer remains after a few seconds", with room for a slow machine


# -- running agents -----------------------------------------------------------------------------


def agent_env(**extra: str) -> dict[str, str]:
    """This environment without any OTEL_* variable or PYTHONPATH, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_") and k != "PYTHONPATH"}
    env.update(extra)
    return env


@dataclass
class AgentRun:
    returncode: int
    reports: list[dict[str, Any]]
    stderr: str

    def role(self, name: str) -> list[dict[str, Any]]:
        return [r for r in self.reports if r.get("role") == name]

    def one(self, name: str) -> dict[str, Any]:
        found = self.role(name)
        assert len(found) == 1, f"expected one {name} report, got {self.reports}\nstderr:\n{self.stderr}"
        return found[0]


@dataclass
class Agents:
    """Starts agents with stdout and stderr in files (a writer that inherited a pipe and outlived
    its agent would otherwise hold the test up); at teardown, kills whatever it started that is
    still running, agents and the writers they reported, by pid."""

    tmp: Path
    started: list[subprocess.Popen[str]] = field(default_factory=list)
    writers: set[int] = field(default_factory=set)
    live_agents: list[LiveAgent] = field(default_factory=list)
    count: int = 0

    def _files(self) -> tuple[Path, Path]:
        self.count += 1
        return self.tmp / f"agent-{self.count}.out", self.tmp / f"agent-{self.count}.err"

    def run(self, *args: str, env: dict[str, str] | None = None, prefix: tuple[str, ...] = ()) -> AgentRun:
        out, err = self._files()
        with out.open("w") as stdout, err.open("w") as stderr:
            proc = subprocess.Popen(
                [*prefix, sys.executable, AGENT, *args],
                env=agent_env() if env is None else env,
                stdout=stdout,
                stderr=stderr,
                text=True,
                cwd=self.tmp,
            )
            self.started.append(proc)
            returncode = proc.wait(90)
        output = out.read_text()
        try:
            reports = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
        except ValueError:
            raise AssertionError(f"unreadable reports:\n{output}\nstderr:\n{err.read_text()}") from None
        self.note(reports)
        return AgentRun(returncode, reports, err.read_text())

    def note(self, reports: list[dict[str, Any]]) -> None:
        self.writers.update(r["writer_pid"] for r in reports if r.get("writer_pid"))

    def live(self, *args: str, env: dict[str, str] | None = None, own_group: bool = False) -> LiveAgent:
        _, err = self._files()
        argv = [sys.executable, AGENT, *args]
        agent = LiveAgent(argv, agent_env() if env is None else env, err, self, own_group=own_group)
        self.started.append(agent.proc)
        self.live_agents.append(agent)
        return agent

    def cleanup(self) -> None:
        for proc in self.started:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
        for agent in self.live_agents:
            agent.close()
        for pid in self.writers:
            if not wpa.has_exited(pid) and any(wpa.WRITER_MARK in a for a in wpa.cmdline(pid)):
                os.kill(pid, signal.SIGKILL)


class LiveAgent:
    """An agent driven over stdin (``basic --ending stdin``), read a JSON line at a time."""

    def __init__(
        self, argv: list[str], env: dict[str, str], err: Path, agents: Agents, *, own_group: bool
    ) -> None:
        self.err = err
        self.agents = agents
        with err.open("w") as stderr:
            self.proc = subprocess.Popen(
                argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True,
                start_new_session=own_group,
            )  # fmt: skip
        self.lines: queue.Queue[str] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def report(self) -> dict[str, Any]:
        deadline = time.monotonic() + 60
        while True:
            try:
                line = self.lines.get(timeout=0.1)
                break
            except queue.Empty:
                # The reader stops at the end of the agent's stdout: no line will come any more.
                if (not self.reader.is_alive() and self.lines.empty()) or time.monotonic() > deadline:
                    raise AssertionError(
                        f"no report from the agent; stderr:\n{self.err.read_text()}"
                    ) from None
        report: dict[str, Any] = json.loads(line)
        self.agents.note([report])
        return report

    def send(self, line: str) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.report()

    def close(self) -> None:
        """The agent ended (killed if need be) and its pipes closed."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.end()

    def end(self) -> int:
        """Close the agent's stdin (its end of the commands: a normal exit) and wait for it."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        returncode = self.proc.wait(60)
        self.reader.join(10)
        self.proc.stdout.close()
        return returncode

    def sigkill(self, *, group: bool = False) -> int:
        """SIGKILL the agent (or its whole process group); the wall-clock time just before the signal."""
        killed_ns = time.time_ns()
        if group:
            os.killpg(self.proc.pid, signal.SIGKILL)
        else:
            self.proc.kill()
        self.proc.wait(30)
        return killed_ns


@pytest.fixture
def agents(tmp_path: Path) -> Iterator[Agents]:
    started = Agents(tmp_path)
    yield started
    started.cleanup()


def wait_until(condition: Callable[[], bool], deadline_s: float = EXIT_DEADLINE_S) -> bool:
    """A bounded wait: True as soon as ``condition()`` holds, False at the deadline."""
    end = time.monotonic() + deadline_s
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def assert_exits(*pids: int) -> None:
    still = [pid for pid in pids if not wait_until(functools.partial(wpa.has_exited, pid))]
    described = {pid: wpa.cmdline(pid) for pid in still}
    assert not still, f"writer processes still running {EXIT_DEADLINE_S}s later: {described}"


def is_gone(pid: int) -> bool:
    return wpa.stat_fields(pid) is None


def assert_reaped(*pids: int) -> None:
    """Writers of this process: exited and collected (no zombie left in the host process)."""
    still = [pid for pid in pids if not wait_until(functools.partial(is_gone, pid))]
    assert not still, {pid: wpa.stat_fields(pid) for pid in still}


def query(db: Path, sql: str, *params: Any) -> list[sqlite3.Row]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def pids_by_name(db: Path) -> dict[str, int]:
    return {row["name"]: row["pid"] for row in query(db, "SELECT name, pid FROM spans")}


def written_by_pid(db: Path) -> dict[int, int]:
    """spans_written of each recorder row, by pid (one row per recording process)."""
    rows = query(db, "SELECT pid, spans_written FROM recorders")
    assert len({r["pid"] for r in rows}) == len(rows), "a process has two recorder rows"
    return {r["pid"]: r["spans_written"] for r in rows}


def assert_isolated_writer(facts: dict[str, Any]) -> int:
    """The process's writer is its own child, named, started with -I, with no OTEL_* variable."""
    writer = facts["writer_pid"]
    assert facts["writer_mode"] == "process" and isinstance(writer, int), facts
    assert facts["writer_ppid"] == facts["pid"], f"the writer's parent is not the agent: {facts}"
    assert facts["writers_found"] == [writer], facts
    argv = facts["writer_argv"]
    assert any(wpa.WRITER_MARK in arg for arg in argv), argv
    assert "I" in wpa.interpreter_flags(argv), f"the writer does not run python -I: {argv}"
    assert [k for k in facts["writer_env_keys"] if k.startswith("OTEL_")] == [], facts["writer_env_keys"]
    return writer


# -- one agent, a normal exit: laziness, isolation, attribution, configuration ----------------------

SITECUSTOMIZE_TRAP = """\
import os
with open(os.path.join(os.path.dirname(__file__), "imported-by"), "a") as handle:
    handle.write(f"{os.getpid()}\\n")
"""


@dataclass
class BasicRun:
    db: Path
    run: AgentRun
    report: dict[str, Any]
    trap: Path


@pytest.fixture(scope="module")
def basic_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BasicRun]:
    """One agent run to a normal exit with OTEL_* variables set and a sitecustomize on PYTHONPATH
    (as opentelemetry-instrument and the launcher put theirs) that notes every process importing it."""
    tmp = tmp_path_factory.mktemp("basic")
    trap = tmp / "trap"
    trap.mkdir()
    (trap / "sitecustomize.py").write_text(SITECUSTOMIZE_TRAP)
    env = agent_env(
        PYTHONPATH=str(trap),
        OTEL_SERVICE_NAME="writer-agent",
        OTEL_BLACKBOX_REDACT_FIELDS="order_code",
        OTEL_RESOURCE_ATTRIBUTES="deployment.environment=test",
    )
    started = Agents(tmp)
    db = tmp / "bb.db"
    run = started.run("basic", "--db", str(db), "--spans", "20", env=env)
    try:
        assert run.returncode == 0, run.stderr
        yield BasicRun(db, run, run.one("agent"), trap)
    finally:
        started.cleanup()


def test_nothing_starts_until_the_first_span(basic_run: BasicRun) -> None:
    report = basic_run.report
    before, created = report["before_import"], report["created"]
    # Importing otel_blackbox and creating the processor and its provider started nothing.
    assert created["children"] == [] and created["threads"] == before["threads"], report
    assert created["writer_mode"] is None and created["writer_pid"] is None
    # The first span did: one writer process, a child of the agent.
    assert report["flushed"] is True
    assert report["children"] == [report["writer_pid"]], report


def test_the_writer_process_is_isolated(basic_run: BasicRun) -> None:
    writer = assert_isolated_writer(basic_run.report)
    imported_by = (basic_run.trap / "imported-by").read_text().split()
    # The agent imported the sitecustomize on its PYTHONPATH; the writer (python -I) did not.
    assert imported_by == [str(basic_run.report["pid"])], (imported_by, writer)


def test_rows_carry_the_agents_pid_and_its_run(basic_run: BasicRun) -> None:
    agent, writer = basic_run.report["pid"], basic_run.report["writer_pid"]
    spans = query(basic_run.db, f"SELECT name, pid, {recorder_of_span('run_id')} AS run_id FROM spans")
    assert len(spans) == 20 + 2 + 5  # steps, the two spans left open, the tail written at exit
    assert {s["pid"] for s in spans} == {agent}, f"agent {agent}, writer {writer}"
    (recorder,) = query(basic_run.db, "SELECT pid, run_id FROM recorders")
    assert recorder["pid"] == agent
    assert {s["run_id"] for s in spans} == {recorder["run_id"]}  # every span joins the agent's run
    assert query(basic_run.db, "SELECT count(*) AS n FROM spans WHERE pid = ?", writer)[0]["n"] == 0


def test_the_agents_configuration_reaches_the_writer(basic_run: BasicRun) -> None:
    # OTEL_BLACKBOX_REDACT_FIELDS was set for the agent only (the writer has no OTEL_* variable):
    # the writer redacted with it, and the agent's OTEL_SERVICE_NAME is in the resource.
    (root,) = query(basic_run.db, "SELECT attributes, resource FROM spans WHERE name = 'agent-run'")
    assert json.loads(root["attributes"])["order_code"] == "[REDACTED]"
    assert "XYZ-987654" not in root["attributes"]
    assert json.loads(root["resource"])["service.name"] == "writer-agent"


def test_counters_after_force_flush_count_the_writers_work(basic_run: BasicRun) -> None:
    report = basic_run.report
    assert (report["written"], report["dropped"], report["write_errors"]) == (20, 0, 0), report
    assert basic_run.run.stderr == "" and report["warnings"] == []


def test_a_normal_exit_writes_everything_and_leaves_no_writer(basic_run: BasicRun) -> None:
    at_exit = basic_run.run.one("exit")
    assert (at_exit["written"], at_exit["write_errors"], at_exit["warnings"]) == (25, 0, []), at_exit
    assert_exits(basic_run.report["writer_pid"])
    statuses = {r["name"]: r["status"] for r in query(basic_run.db, "SELECT name, status FROM spans")}
    assert {statuses[f"tail-{i}"] for i in range(5)} == {"unset"}  # ended after the last flush
    assert statuses["agent-run"] == statuses["never-ended"] == "open"
    (recorder,) = query(basic_run.db, "SELECT spans_written FROM recorders")
    assert recorder["spans_written"] == 25


# -- endings ----------------------------------------------------------------------------------------


def test_an_unhandled_exception_writes_everything_and_leaves_no_writer(
    agents: Agents, tmp_path: Path
) -> None:
    db = tmp_path / "bb.db"
    run = agents.run("basic", "--db", str(db), "--ending", "exception")
    assert run.returncode == 1 and "RuntimeError: agent crashed" in run.stderr
    report = run.one("agent")
    assert_exits(assert_isolated_writer(report))
    names = set(pids_by_name(db))
    assert {f"tail-{i}" for i in range(5)} <= names and {"agent-run", "never-ended"} <= names
    assert len(names) == 27


@pytest.mark.reliability
@pytest.mark.parametrize("group", [False, True], ids=["the-agent", "its-process-group"])
def test_sigkill_open_spans_end_when_the_agent_died(agents: Agents, tmp_path: Path, group: bool) -> None:
    db = tmp_path / "bb.db"
    # In its own process group, as a shell job or a supervised service is: a kill of the whole
    # group (Ctrl-C, a supervisor's stop) is for the agent, and its writer must still do its part.
    agent = agents.live("basic", "--db", str(db), "--ending", "stdin", own_group=group)
    report = agent.report()
    writer = assert_isolated_writer(report)
    assert report["flushed"] is True  # the two open spans' rows are on disk
    # Freeze the agent first: from here on it can say nothing more, so any moment recorded after
    # this one comes from the writer noticing the agent's death.
    os.kill(agent.proc.pid, signal.SIGSTOP)
    assert wait_until(lambda: (wpa.stat_fields(agent.proc.pid) or ("?",))[0] == "T")
    time.sleep(0.3)
    killed_ns = agent.sigkill(group=group)
    assert_exits(writer)
    done_ns = time.time_ns()

    trace_id = report["trace_id"]
    conn = sqlite3.connect(db)
    try:
        (last_seen_ns,) = conn.execute(
            "SELECT last_seen_ns FROM recorders WHERE pid = ?", (report["pid"],)
        ).fetchone()
        open_names = [
            r[0] for r in conn.execute("SELECT name FROM spans WHERE status = 'open' ORDER BY name")
        ]
        trace_last_seen = last_seen_by_trace(conn, trace_id)
    finally:
        conn.close()
    assert open_names == ["agent-run", "never-ended"]
    assert killed_ns <= last_seen_ns <= done_ns, (killed_ns, last_seen_ns, done_ns)
    # What `show` and the exports use as the end of an open span: the moment the agent died.
    assert killed_ns <= trace_last_seen[trace_id] <= done_ns
    shown = run_cli("show", trace_id, db=db)
    assert shown.returncode == 0 and "OPEN (last seen" in shown.stdout, shown.stdout + shown.stderr


@pytest.mark.reliability
@pytest.mark.parametrize(
    "busy_timeout_ms",
    [5_000, 100],
    ids=["waiting-in-sqlite", "held-for-a-retry"],  # the default: still waiting when the agent dies
)
def test_sigkill_while_the_file_is_locked_loses_nothing_the_writer_received(
    agents: Agents, tmp_path: Path, busy_timeout_ms: int
) -> None:
    db = tmp_path / "bb.db"
    agent = agents.live(
        "basic", "--db", str(db), "--ending", "stdin", "--flush-ms", "500",
        "--busy-timeout-ms", str(busy_timeout_ms),
    )  # fmt: skip
    report = agent.report()
    writer = assert_isolated_writer(report)
    # Another connection holds the write lock: the writer can receive spans but not write them.
    lock = sqlite3.connect(db, isolation_level=None)
    try:
        lock.execute("BEGIN IMMEDIATE")
        late = agent.send("late 30")
        assert late["flushed"] is False  # the flush could not complete: nothing was written yet
        agent.sigkill()
        # A moment more of the lock: the writer learns of the agent's death before it can write.
        time.sleep(0.5)
        assert not wpa.has_exited(writer)  # still holding the 30 spans, waiting for the file
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    assert_exits(writer)
    names = pids_by_name(db)
    assert {n: p for n, p in names.items() if n.startswith("late-")} == {
        f"late-{i}": report["pid"] for i in range(30)
    }
    (recorder,) = query(db, "SELECT spans_written, write_errors FROM recorders")
    assert (recorder["spans_written"], recorder["write_errors"]) == (20 + 30, 0)


@pytest.mark.reliability
def test_sigterm_to_agent_and_writer_alike_the_writer_serves_the_agents_exit(
    agents: Agents, tmp_path: Path
) -> None:
    db = tmp_path / "bb.db"
    agent = agents.live("basic", "--db", str(db), "--ending", "stdin", "--on-sigterm")
    report = agent.report()
    writer = assert_isolated_writer(report)
    # A service stopped as a whole (systemd signals every process of the unit): both get SIGTERM,
    # the writer first. The agent's handler makes 5 spans and exits; its exit flush needs the writer.
    os.kill(writer, signal.SIGTERM)
    os.kill(agent.proc.pid, signal.SIGTERM)
    at_exit = agent.report()
    assert agent.end() == 128 + signal.SIGTERM
    assert at_exit["role"] == "exit" and at_exit["warnings"] == [], at_exit
    assert (at_exit["written"], at_exit["write_errors"]) == (25, 0), at_exit
    names = pids_by_name(db)
    assert {n: p for n, p in names.items() if n.startswith("on-term-")} == {
        f"on-term-{i}": report["pid"] for i in range(5)
    }
    assert_exits(writer)


@pytest.mark.reliability
def test_a_killed_writer_process_is_replaced_by_the_thread_writer(agents: Agents, tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    agent = agents.live("basic", "--db", str(db), "--ending", "stdin")
    report = agent.report()
    writer = assert_isolated_writer(report)
    assert (report["written"], report["write_errors"]) == (20, 0)
    os.kill(writer, signal.SIGKILL)  # the OOM killer's choice, say: everything sent was written
    assert_exits(writer)
    after = agent.send("after 10")
    assert after["flushed"] is True, after
    assert (after["writer_mode"], after["writer_pid"], after["children"]) == ("thread", None, []), after
    assert len(after["warnings"]) == 1, after["warnings"]
    assert agent.end() == 0  # a normal exit, with 5 more spans written at exit
    names = pids_by_name(db)
    assert {n: p for n, p in names.items() if n.startswith("after-")} == {
        f"after-{i}": report["pid"] for i in range(10)
    }
    # The counters go on from where they were: 20 written by the process, then 10 (and 5 at exit)
    # by the thread; the processor's and the run's row alike.
    (recorder,) = query(db, "SELECT spans_written, write_errors FROM recorders")
    assert {
        "processor": (after["written"], after["write_errors"]),
        "run": (recorder["spans_written"], recorder["write_errors"]),
    } == {"processor": (30, 0), "run": (35, 0)}


# -- in the test process: counters, drops, several processors ---------------------------------------


def test_force_flush_and_shutdown_in_this_process(make_recorder: Callable[..., Recorder]) -> None:
    rec = make_recorder()
    processor = rec.processor
    assert processor.writer_mode is None and processor.writer_pid is None
    for i in range(100):
        rec.tracer.start_span(f"first-{i}").end()
    rec.flush()
    assert processor.writer_mode == "process"
    writer = processor.writer_pid
    assert writer is not None and wpa.parent_of(writer) == os.getpid()
    assert (processor.spans_written, processor.write_errors, processor.dropped_count()) == (100, 0, 0)
    for i in range(50):
        rec.tracer.start_span(f"second-{i}").end()
    rec.flush()
    assert (processor.spans_written, processor.write_errors) == (150, 0)
    # A frame far larger than a pipe's buffer: it arrives in pieces, and is stored as the marker.
    rec.tracer.start_span("huge", attributes={"input.value": "x" * 3_000_000}).end()
    rec.flush()
    (huge,) = rec.rows("SELECT attributes FROM spans WHERE name = 'huge'")
    assert json.loads(json.loads(huge["attributes"])["input.value"])["blackbox.truncated"] is True
    open_span = rec.tracer.start_span("open-at-shutdown")
    for i in range(10):
        rec.tracer.start_span(f"third-{i}").end()
    rec.provider.shutdown()  # writes what is queued, no flush first
    assert processor.spans_written == 161
    assert_reaped(writer)
    assert len(rec.rows()) == 162 and {r["pid"] for r in rec.rows()} == {os.getpid()}
    assert written_by_pid(rec.db_path) == {os.getpid(): 161}
    open_span.end()


@pytest.mark.reliability
def test_open_rows_are_written_from_the_agent_until_the_writer_process_is_ready(
    make_recorder: Callable[..., Recorder], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Python starting on a busy host takes 100 to 500 ms: the first spans of a run must not wait
    for it. Here the writer process takes 3 s to start: the long span's open row is on disk before
    the shipper has the process, written from its thread; then the process takes over."""
    monkeypatch.setattr(companion, "_BOOT", "import time; time.sleep(3); " + companion._BOOT)
    rec = make_recorder(flush_interval_ms=100)
    long_span = rec.tracer.start_span("long-tool")
    deadline = time.monotonic() + 10
    while not count_rows(rec.db_path, "SELECT count(*) FROM spans WHERE name = 'long-tool'"):
        assert time.monotonic() < deadline, "no open row while the writer process started"
        time.sleep(0.02)
    assert rec.processor._writer.sink is None  # the shipper still waits for the process
    assert [r["status"] for r in rec.rows("SELECT status FROM spans WHERE name = 'long-tool'")] == ["open"]
    rec.tracer.start_span("short").end()
    long_span.end()
    rec.flush()
    assert rec.processor.writer_mode == "process"
    assert {r["name"]: r["status"] for r in rec.rows()} == {"long-tool": "unset", "short": "unset"}
    assert (rec.processor.spans_written, rec.processor.write_errors) == (2, 0)
    assert count_rows(rec.db_path, "SELECT count(*) FROM recorders") == 1  # the bridge's run is the process's


class _PausedAfterTheRunLookup:
    """A writer's connection that, once it has looked for the run's row, waits for the other
    writer to have looked too (or for ``barrier`` to time out), before going on."""

    def __init__(self, conn: sqlite3.Connection, barrier: threading.Barrier) -> None:
        self._conn, self._barrier = conn, barrier

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        cursor = self._conn.execute(sql, *args)
        if sql.startswith("SELECT id FROM recorders"):
            with contextlib.suppress(threading.BrokenBarrierError):
                self._barrier.wait()
        return cursor


def test_two_writers_of_one_run_connecting_at_once_make_one_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bridge (open rows written from the agent while the writer process starts) and the writer
    process connect to the file at about the same moment; on a busy host both looked for the run's
    row before either had inserted it, and the run was shown as two (tests/integration/test_frameworks.py saw
    it in CI). Here each writer, once it has looked, waits for the other to have looked too (2 s
    at most: a writer that looks under the write lock keeps the other from looking meanwhile): still
    one run, shared by both."""
    db = tmp_path / "bb.db"
    config = BlackboxConfig(db_path=db)
    started_ns = time.time_ns()
    both_looked = threading.Barrier(2, timeout=2)
    monkeypatch.setattr(
        writer_module,
        "connect_writer",
        lambda *args, **kwargs: _PausedAfterTheRunLookup(connect_writer(*args, **kwargs), both_looked),
    )
    writers = [SpanWriter(config, started_ns=started_ns) for _ in range(2)]
    tracer, snapshotter = TracerProvider().get_tracer("t"), Snapshotter()
    for i, writer in enumerate(writers):
        span = cast(Span, tracer.start_span(f"long-{i}"))
        writer.receive(snapshotter.take_definitions(), [], [snapshotter.snapshot(span, is_open=True)])
    results: list[BaseException | None] = []

    def write(writer: SpanWriter) -> None:
        try:
            results.append(writer.write_pending())  # it connects: finds the run's row, or makes it
        except BaseException as exc:
            results.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in writers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for writer in writers:
        writer.close()
    assert results == [None, None]
    assert count_rows(db, "SELECT count(*) FROM recorders") == 1
    assert count_rows(db, "SELECT count(*) FROM spans WHERE name LIKE 'long-%' AND status = 'open'") == 2


@pytest.mark.reliability
def test_the_writer_process_commits_an_open_row_in_the_middle_of_a_big_batch(tmp_path: Path) -> None:
    """The writer process reads its pipe while it writes: an open row sent after 20,000 final rows,
    once the first of them are on disk, commits before the last of them (row ids: insertion order)."""
    db = tmp_path / "bb.db"
    config = BlackboxConfig(db_path=db)
    tracer = TracerProvider().get_tracer("t")
    snapshotter = Snapshotter()
    finals = []
    for i in range(20_000):
        span = cast(Span, tracer.start_span(f"burst-{i}", attributes={"input.value": "x" * 200}))
        span.end()
        finals.append(snapshotter.snapshot(span, is_open=False))
    sink = ProcessSink.start(config, time.time_ns(), lambda: 0, lambda: 0, threading.Event())
    try:
        assert sink.wait_ready(10)
        sink.deliver(snapshotter.take_definitions(), finals, [], [])
        deadline = time.monotonic() + 30
        while count_rows(db, "SELECT count(*) FROM spans") == 0:
            assert time.monotonic() < deadline, "no final row written"
            time.sleep(0.005)
        long_span = cast(Span, tracer.start_span("long-tool"))
        marker = FlushMarker()
        sink.deliver(
            snapshotter.take_definitions(), [], [snapshotter.snapshot(long_span, is_open=True)], [marker]
        )
        assert marker.done.wait(60) and marker.ok
    finally:
        sink.stop(30)
    open_id = count_rows(db, "SELECT id FROM span_rows WHERE name = 'long-tool' AND status = 'open'")
    last_final = count_rows(db, "SELECT max(id) FROM span_rows WHERE status != 'open'")
    assert count_rows(db, "SELECT count(*) FROM span_rows WHERE status != 'open'") == 20_000
    assert open_id < last_final, "the open row waited for the whole batch"


def test_the_pipe_is_never_closed_under_a_send(tmp_path: Path) -> None:
    """The reader thread gives up on the writer (it sees the pipe's end) while the shipper is still
    writing a frame to it: the descriptor stays the pipe's until that send is over. Closed at once,
    its number goes to the next file opened (the host's database, here a plain file) and the rest of
    the frame would be written into that file."""
    down_r, down_w = os.pipe()
    up_r, up_w = os.pipe()
    sink = ProcessSink(0, down_w, up_r, lambda: 0, lambda: 0, threading.Event(), 1)
    sink.pid = None  # no process: the pipe is ours to drain
    payload = b"x" * (4 << 20)  # far more than a pipe holds: the send blocks until it is read
    sent: list[BaseException | None] = []

    def send() -> None:
        try:
            sink._send(("batch", payload))
        except BaseException as exc:  # reported by the assertion below
            sent.append(exc)
        else:
            sent.append(None)

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    time.sleep(0.2)  # the pipe is full: the sender waits inside its write
    failer = threading.Thread(target=sink._fail, daemon=True)  # as the reader thread does at the pipe's end
    failer.start()
    failer.join(0.3)
    drained = 0
    try:
        with open(tmp_path / "host.db", "wb") as host_file:  # takes the lowest free descriptor
            assert host_file.fileno() != down_w, "the pipe was closed while a send was writing to it"
            while True:
                if select.select([down_r], [], [], 0.05)[0]:
                    chunk = os.read(down_r, 1 << 20)
                    if not chunk:  # the pipe's end: the failer closed it, the send being over
                        break
                    drained += len(chunk)
                elif not sender.is_alive():
                    break
            failer.join(10)
    finally:
        for fd in (down_r, up_r, up_w):  # a sender still waiting gets EPIPE
            os.close(fd)
    assert sent == [None] and not failer.is_alive()
    assert (tmp_path / "host.db").read_bytes() == b""
    assert drained > len(payload) and sink._to_child is None


def count_rows(db: Path, query: str) -> int:
    """The query's number; 0 while the writer has not made the file and its tables yet."""
    if not db.exists():
        return 0
    with contextlib.closing(sqlite3.connect(db)) as conn:
        try:
            return int(conn.execute(query).fetchone()[0] or 0)
        except sqlite3.OperationalError:  # no such table yet
            return 0


@pytest.mark.reliability
def test_drops_are_counted_exactly(make_recorder: Callable[..., Recorder]) -> None:
    rec = make_recorder(max_queue_size=10)
    burst = 2_000
    # No thread switch during the burst: nothing can drain the queue, so it must overflow.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1_000.0)
    try:
        for i in range(burst):
            rec.tracer.start_span(f"burst-{i}").end()
    finally:
        sys.setswitchinterval(interval)
    rec.flush()
    processor = rec.processor
    dropped, written = processor.dropped_count(), processor.spans_written
    assert dropped > 0 and processor.write_errors == 0
    assert written + dropped == burst, (written, dropped)
    assert len(rec.rows("SELECT * FROM spans WHERE status != 'open'")) == written
    (recorder,) = rec.rows("SELECT spans_written, spans_dropped FROM recorders")
    assert (recorder["spans_written"], recorder["spans_dropped"]) == (written, dropped)
    # Past the burst, recording goes on and nothing more is lost (5 spans: 10 items, the queue holds 20).
    for i in range(5):
        rec.tracer.start_span(f"after-{i}").end()
    rec.flush()
    assert (processor.spans_written, processor.dropped_count()) == (written + 5, dropped)


@pytest.mark.reliability
def test_every_span_is_written_dropped_or_counted_lost_while_the_file_is_locked(
    make_recorder: Callable[..., Recorder],
) -> None:
    # A small queue, a short busy timeout, and the file locked while 3,000 spans are made: the
    # writer process holds what it can for a retry and counts the rest, the queue overflows.
    rec = make_recorder(max_queue_size=200, busy_timeout_ms=100)
    rec.tracer.start_span("first").end()
    rec.flush()  # the writer process is up and the file exists
    lock = sqlite3.connect(rec.db_path, isolation_level=None)
    try:
        lock.execute("BEGIN IMMEDIATE")
        for i in range(3_000):
            rec.tracer.start_span(f"locked-{i}").end()
            if i % 100 == 0:
                time.sleep(0.01)  # an agent that waits on the network now and then
        time.sleep(0.5)
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    rec.flush()
    processor = rec.processor
    written, dropped, lost = processor.spans_written, processor.dropped_count(), processor.write_errors
    assert dropped + lost > 0, "the lock cost nothing: the test did not overflow anything"
    assert written + dropped + lost == 3_001, (written, dropped, lost)
    assert len(rec.rows("SELECT * FROM spans WHERE status != 'open'")) == written
    (recorder,) = rec.rows("SELECT spans_written, spans_dropped, write_errors FROM recorders")
    assert tuple(recorder) == (written, dropped, lost)


def test_several_processors_in_one_process_each_have_their_own_writer(
    make_recorder: Callable[..., Recorder], tmp_path: Path
) -> None:
    recorders = {name: make_recorder(path=tmp_path / f"{name}.db") for name in ("a", "b", "c")}
    idle = make_recorder(path=tmp_path / "idle.db")  # never sees a span: never starts a writer

    def record(name: str) -> None:
        for i in range(30):
            with recorders[name].tracer.start_as_current_span(f"{name}-{i}"):
                pass

    threads = [threading.Thread(target=record, args=(name,)) for name in recorders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for rec in recorders.values():
        rec.flush()
    writers = {name: rec.processor.writer_pid for name, rec in recorders.items()}
    assert len(set(writers.values())) == 3 and None not in writers.values(), writers
    mine = set(wpa.writer_processes(parent=os.getpid()))
    assert set(writers.values()) <= mine
    assert idle.processor.writer_pid is None and idle.processor.writer_mode is None
    for name, rec in recorders.items():
        assert pids_by_name(rec.db_path) == {f"{name}-{i}": os.getpid() for i in range(30)}
        assert rec.processor.spans_written == 30
    for rec in [*recorders.values(), idle]:
        rec.provider.shutdown()
    assert_reaped(*[pid for pid in writers.values() if pid is not None])
    assert not (tmp_path / "idle.db").exists()


def test_the_writers_warnings_reach_the_agents_logger_once(agents: Agents, tmp_path: Path) -> None:
    db = tmp_path / "no-such-directory" / "bb.db"
    run = agents.run("basic", "--db", str(db))
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    report = run.one("agent")
    assert_isolated_writer(report)
    assert report["flushed"] is False and report["written"] == 0
    (warning,) = report["warnings"]
    assert warning.startswith(f"otel-blackbox could not write to {db}"), warning


# -- processes that fork or spawn ---------------------------------------------------------------------


def test_a_forked_child_records_its_own_spans_once(agents: Agents, tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    # 300 spans ended and not flushed at the fork: the parent's queue goes to the parent's writer only.
    run = agents.run("prefork", "--db", str(db), "--master-spans", "300", "--workers", "1")
    assert run.returncode == 0, run.stderr
    (master_before, master), (child,) = run.role("master"), run.role("worker")
    assert master["statuses"] == [0] and child["flushed"] is True, run.reports
    parent_writer = assert_isolated_writer(master)
    child_writer = assert_isolated_writer(child)
    assert child_writer != parent_writer
    assert master_before["at_fork"]["writer_mode"] == "process"  # the fork came after a writer started
    expected = {f"master-{i}": master["pid"] for i in range(300)}
    expected |= {f"master-after-{i}": master["pid"] for i in range(2)}
    expected |= {f"worker-0-{k}": child["pid"] for k in range(3)}
    assert pids_by_name(db) == expected
    assert written_by_pid(db) == {master["pid"]: 302, child["pid"]: 3}  # nothing written twice
    assert_exits(parent_writer, child_writer)


@pytest.mark.parametrize(
    ("master_spans", "exit_"),
    [(0, "os_exit"), (1, "os_exit"), (1, "normal")],
    ids=["no-master-span-os-exit", "master-span-os-exit", "master-span-normal-exit"],
)
def test_preload_then_fork_server(agents: Agents, tmp_path: Path, master_spans: int, exit_: str) -> None:
    db = tmp_path / "bb.db"
    args = ["--master-spans", str(master_spans), "--workers", "3", "--exit", exit_]
    run = agents.run("prefork", "--db", str(db), *args)
    assert run.returncode == 0, run.stderr
    (at_fork, master), workers = run.role("master"), run.role("worker")
    assert master["statuses"] == [0, 0, 0] and len(workers) == 3, run.reports
    if master_spans == 0:  # lazy: a master that made no span forked without a writer
        assert (at_fork["at_fork"]["writer_mode"], at_fork["at_fork"]["writers_found"]) == (None, [])
    master_writer = assert_isolated_writer(master)
    worker_writers = [assert_isolated_writer(w) for w in workers]
    assert len({master_writer, *worker_writers}) == 4, "a worker shares another process's writer"
    assert sorted(w["pid"] for w in workers) == sorted(master["workers"])
    expected = {f"master-{i}": master["pid"] for i in range(master_spans)}
    expected |= {f"master-after-{i}": master["pid"] for i in range(2)}
    for w in workers:
        expected |= {f"worker-{w['index']}-{k}": w["pid"] for k in range(3)}
    assert pids_by_name(db) == expected
    assert written_by_pid(db) == {
        master["pid"]: master_spans + 2,
        **{w["pid"]: 3 for w in workers},
    }
    assert_exits(master_writer, *worker_writers)


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_multiprocessing(agents: Agents, tmp_path: Path, method: str) -> None:
    db = tmp_path / "bb.db"
    run = agents.run("mp", "--method", method, "--workers", "2", env=agent_env(WRITER_AGENT_MP_DB=str(db)))
    assert run.returncode == 0, run.stderr
    master, workers = run.one("master"), run.role("worker")
    assert master["exitcodes"] == [0, 0] and len(workers) == 2, run.reports
    master_writer = assert_isolated_writer(master)
    worker_writers = [assert_isolated_writer(w) for w in workers]
    assert all(w["flushed"] for w in workers) and len({master_writer, *worker_writers}) == 3
    if method == "forkserver":  # the forkserver imported the recorder but saw no span: no writer
        assert all(w["writers_of_parent"] == [] for w in workers), workers
    expected = {"master-before": master["pid"], "master-after": master["pid"]}
    for w in workers:
        expected |= {f"worker-{w['index']}-{k}": w["pid"] for k in range(3)}
    assert pids_by_name(db) == expected
    assert written_by_pid(db) == {master["pid"]: 2, **{w["pid"]: 3 for w in workers}}
    assert_exits(master_writer, *worker_writers)


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_multiprocessing_workers_that_just_return(agents: Agents, tmp_path: Path, method: str) -> None:
    # The flush interval is long: only what the recorder does as a worker ends writes its spans.
    db = tmp_path / "bb.db"
    env = agent_env(WRITER_AGENT_MP_DB=str(db), OTEL_BLACKBOX_FLUSH_INTERVAL_MS="60000")
    run = agents.run("mp", "--method", method, "--workers", "2", "--no-flush", env=env)
    assert run.returncode == 0, run.stderr
    master, workers = run.one("master"), run.role("worker")
    assert master["exitcodes"] == [0, 0] and len(workers) == 2, run.reports
    worker_writers = [assert_isolated_writer(w) for w in workers]
    expected = {"master-before": master["pid"], "master-after": master["pid"]}
    for w in workers:
        expected |= {f"worker-{w['index']}-{k}": w["pid"] for k in range(3)}
    assert pids_by_name(db) == expected
    assert_exits(*worker_writers)


# -- under opentelemetry-instrument and the launcher ----------------------------------------------------

INSTRUMENTED = f"""
import json, sys
sys.path.insert(0, {str(PROGRAMS)!r})
from opentelemetry import trace
from otel_blackbox._recorder import auto
import writer_process_agent as wpa

tracer = trace.get_tracer("instrumented")
with tracer.start_as_current_span("instrumented-run"):
    for i in range(5):
        tracer.start_span(f"step-{{i}}").end()
processor = auto.installed()
flushed = processor.force_flush(10_000)
print(json.dumps({{"role": "agent", "flushed": flushed, **wpa.writer_facts(processor)}}), flush=True)
"""


def test_under_opentelemetry_instrument(agents: Agents, tmp_path: Path) -> None:
    instrument = shutil.which("opentelemetry-instrument", path=os.path.dirname(sys.executable))
    assert instrument, "opentelemetry-instrument is not installed next to this Python"
    script, db, out = tmp_path / "agent.py", tmp_path / "bb.db", tmp_path / "agent.out"
    script.write_text(INSTRUMENTED)
    env = agent_env(
        OTEL_BLACKBOX_DB=str(db),
        OTEL_TRACES_EXPORTER="none",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        **FRAMEWORK_INSTRUMENTORS_OFF,
    )
    with out.open("w") as stdout:
        done = subprocess.run(
            [instrument, sys.executable, str(script)], env=env, stdout=stdout, stderr=subprocess.PIPE,
            text=True, timeout=90, cwd=tmp_path,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text().splitlines()[-1])
    agents.note([report])
    assert report["flushed"] is True
    writer = assert_isolated_writer(report)
    spans = pids_by_name(db)
    assert spans == {"instrumented-run": report["pid"], **{f"step-{i}": report["pid"] for i in range(5)}}
    assert list(written_by_pid(db)) == [report["pid"]]
    assert_exits(writer)


def test_under_the_launcher(agents: Agents, tmp_path: Path) -> None:
    db, cassette = tmp_path / "bb.db", tmp_path / "run.json"
    done = run_cli("record", "-o", str(cassette), "--", sys.executable, AGENT, "basic", "--db", str(db))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[0])
    agents.note([report])
    writer = assert_isolated_writer(report)
    assert report["written"] == 20
    rows = query(db, "SELECT pid, attributes FROM spans")
    assert len(rows) == 27 and {r["pid"] for r in rows} == {report["pid"]}
    # The session's mark, set on each span as it starts, reached the writer with the span.
    assert {json.loads(r["attributes"]).get("blackbox.session.mode") for r in rows} == {"record"}
    assert_exits(writer)


# -- the in-thread writer: chosen, or the fallback --------------------------------------------------


def assert_recorded_in_thread(run: AgentRun, db: Path) -> dict[str, Any]:
    assert run.returncode == 0, run.stderr
    report = run.one("agent")
    assert report["writer_mode"] == "thread" and report["writer_pid"] is None, report
    assert report["writers_found"] == [] and report["children"] == [], report
    assert report["flushed"] is True and report["written"] == 20 and report["write_errors"] == 0, report
    spans = pids_by_name(db)
    assert len(spans) == 27 and set(spans.values()) == {report["pid"]}
    assert "Traceback" not in run.stderr, run.stderr
    return report


def test_writer_thread_chosen_by_environment(agents: Agents, tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    run = agents.run("basic", "--db", str(db), env=agent_env(OTEL_BLACKBOX_WRITER="thread"))
    report = assert_recorded_in_thread(run, db)
    assert report["warnings"] == [] and run.stderr == ""


def test_writer_thread_chosen_in_code(make_recorder: Callable[..., Recorder]) -> None:
    before = set(wpa.writer_processes(parent=os.getpid()))
    rec = make_recorder(writer="thread")
    with rec.tracer.start_as_current_span("in-thread"):
        pass
    rec.flush()
    assert (rec.processor.writer_mode, rec.processor.writer_pid) == ("thread", None)
    assert set(wpa.writer_processes(parent=os.getpid())) <= before  # no new writer process
    assert pids_by_name(rec.db_path) == {"in-thread": os.getpid()}


@pytest.mark.parametrize("value", ["proces", "threads", "both"])
def test_an_invalid_writer_is_one_config_error(
    value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(ConfigError) as info:
        BlackboxConfig.from_env({"OTEL_BLACKBOX_WRITER": value})
    message = str(info.value)
    assert "\n" not in message and "process" in message and "thread" in message and repr(value) in message
    monkeypatch.setenv("OTEL_BLACKBOX_WRITER", value)
    with pytest.raises(ConfigError):
        BlackboxSpanProcessor(tmp_path / "bb.db")
    # Under opentelemetry-instrument: one warning naming the variable, and no recorder.
    provider = TracerProvider(shutdown_on_exit=False)
    assert (
        auto.install(provider, {"OTEL_BLACKBOX_DB": str(tmp_path / "a.db"), "OTEL_BLACKBOX_WRITER": value})
        is None
    )
    (record,) = [r for r in caplog.records if r.name == "otel_blackbox"]
    assert record.levelno == logging.WARNING and record.getMessage().count("OTEL_BLACKBOX_WRITER") == 1
    provider.shutdown()


def test_an_invalid_writer_in_the_environment_names_the_variable(tmp_path: Path) -> None:
    # README: "A bad value is refused with one line naming the variable".
    with pytest.raises(ConfigError, match="OTEL_BLACKBOX_WRITER"):
        BlackboxConfig.from_env({"OTEL_BLACKBOX_WRITER": "proces"})


@pytest.mark.parametrize(("value", "writer"), [("THREAD", "thread"), ("Process", "process")])
def test_the_writer_value_ignores_case(value: str, writer: str) -> None:
    assert BlackboxConfig.from_env({"OTEL_BLACKBOX_WRITER": value}).writer == writer


@pytest.mark.reliability
@pytest.mark.parametrize(
    "executable",
    ["/nonexistent/bin/python3", "", "directory"],
    ids=["missing", "empty", "a-directory"],
)
def test_fallback_when_python_cannot_be_started(agents: Agents, tmp_path: Path, executable: str) -> None:
    # sys.executable names no program (embedded interpreters may leave it empty): no process can start.
    if executable == "directory":
        executable = str(tmp_path)
    db = tmp_path / "bb.db"
    run = agents.run(f"--executable={executable}", "basic", "--db", str(db))
    report = assert_recorded_in_thread(run, db)
    assert len(report["warnings"]) == 1, report["warnings"]


@pytest.mark.reliability
def test_fallback_when_the_executable_is_not_python(agents: Agents, tmp_path: Path) -> None:
    # An embedded interpreter's sys.executable may be its host program (uWSGI's, for one): a process
    # starts, and exits at once without ever being a writer.
    false = shutil.which("false")
    assert false is not None
    db = tmp_path / "bb.db"
    run = agents.run(f"--executable={false}", "basic", "--db", str(db))
    report = assert_recorded_in_thread(run, db)
    assert len(report["warnings"]) == 1, report["warnings"]


RECORDS_ITS_RUN = """#!/bin/sh
echo "$$ $*" >> "$(dirname "$0")/ran"
exec sleep 30
"""


@pytest.mark.reliability
def test_a_frozen_application_is_never_started_again(agents: Agents, tmp_path: Path) -> None:
    # Frozen (PyInstaller and the like), sys.executable is the application itself: started as a
    # writer it would run the application once more, which records, and starts itself again...
    app = tmp_path / "frozen-app"
    app.write_text(RECORDS_ITS_RUN)
    app.chmod(0o755)
    db = tmp_path / "bb.db"
    run = agents.run(f"--executable={app}", "--frozen", "basic", "--db", str(db))
    ran = (tmp_path / "ran").read_text() if (tmp_path / "ran").exists() else ""
    for line in ran.splitlines():  # this test's leftovers, by pid
        pid = int(line.split()[0])
        if not wpa.has_exited(pid) and "sleep" in " ".join(wpa.cmdline(pid)):
            os.kill(pid, signal.SIGKILL)
    assert ran == "", f"the application was started as a writer: {ran}"
    report = assert_recorded_in_thread(run, db)
    assert len(report["warnings"]) <= 1, report["warnings"]


# A real uid no process here runs as: RLIMIT_NPROC counts the processes and threads of a real uid.
NPROC_UID = 54_321
# The agent as that real uid (its effective uid stays root, so it can still read the venv under
# /root), without the two capabilities that exempt a process from RLIMIT_NPROC. It lowers the
# limit to two tasks itself, after the SDK's start (its resource detectors run in a thread pool):
# its main thread and one more. The recorder's thread can start; a process after it cannot.
AS_ANOTHER_UID = ("setpriv", f"--ruid={NPROC_UID}", "--bounding-set=-sys_resource,-sys_admin", "--")
PROBE = """
import resource, subprocess, sys, threading
resource.setrlimit(resource.RLIMIT_NPROC, (2, 2))
outcome = []
def spawn():
    try:
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        outcome.append("process started")
    except OSError as exc:
        outcome.append(type(exc).__name__)
thread = threading.Thread(target=spawn)
thread.start()
thread.join()
print(outcome[0])
"""


@pytest.mark.reliability
@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv"),
    reason="needs root to set a real uid, and util-linux's setpriv",
)
def test_fallback_when_no_process_can_be_created(agents: Agents, tmp_path: Path) -> None:
    probe = subprocess.run(
        [*AS_ANOTHER_UID, sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60
    )
    # The limit is real: a thread starts, and a process from it does not.
    assert probe.stdout.strip() == "BlockingIOError", probe.stdout + probe.stderr
    db = tmp_path / "bb.db"
    run = agents.run("basic", "--db", str(db), "--nproc", "2", prefix=AS_ANOTHER_UID)
    report = assert_recorded_in_thread(run, db)
    assert report["created"]["tasks"] == 1  # the limit leaves room for one thread, not two tasks
    assert len(report["warnings"]) == 1, report["warnings"]
