"""Faults: the database read-only, deleted while open, on a full disk, locked, corrupted.

In each case a real agent process (tests/programs/stress_agent.py serve) records through the fault and past
it: it runs to completion unharmed, the recorder warns once, holds or counts what it could not
write, resumes when the fault clears, and the CLI says what is wrong in one line.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import STRESS_AGENT, figure, run_cli

pytestmark = pytest.mark.reliability

WARNING = "otel-blackbox could not write to"
# Root writes anywhere: without these two capabilities it obeys file modes like any user.
# (setpriv is in util-linux, which every Debian system has.)
AS_A_USER = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"] if os.geteuid() == 0 else []


class ServedAgent:
    """The agent process, one phase at a time: `spans` makes agent steps and flushes."""

    def __init__(self, db: Path, *args: str, prefix: tuple[str, ...] = ()) -> None:
        STARTED.append(self)
        self.proc = subprocess.Popen(
            [*prefix, sys.executable, STRESS_AGENT, "serve", "--db", str(db), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def send(self, line: str) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        assert answer, f"the agent died: {self.proc.communicate(timeout=10)[1]}"
        result: dict[str, Any] = json.loads(answer)
        return result

    def steps(self, label: str, count: int, payload_bytes: int | None = None) -> dict[str, Any]:
        return self.send(f"spans {label} {count}" + (f" {payload_bytes}" if payload_bytes else ""))

    def stop(self) -> None:
        """Teardown after a failed test: no process or pipe outlives it."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate(timeout=30)

    def exit(self) -> tuple[dict[str, Any], str]:
        """The final counters and everything the agent wrote to stderr; it must exit 0."""
        out, err = self.proc.communicate("exit\n", timeout=60)
        assert self.proc.returncode == 0, err
        result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
        return result, err


STARTED: list[ServedAgent] = []


@pytest.fixture(autouse=True)
def stop_agents() -> Iterator[None]:
    yield
    while STARTED:
        STARTED.pop().stop()


def labels(db: Path) -> dict[str, int]:
    """Agent steps on disk by phase label (one root span a step)."""
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT name FROM spans WHERE parent_span_id IS NULL AND status != 'open'")
        found: dict[str, int] = {}
        for (name,) in rows:
            label = name.rsplit("-", 1)[0]
            found[label] = found.get(label, 0) + 1
        return found
    finally:
        conn.close()


def integrity(db: Path) -> str:
    conn = sqlite3.connect(db)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def assert_one_line_error(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 2 and result.stdout == "", result
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("otel-blackbox: error: "), (
        result.stderr
    )
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in result.stderr


def test_read_only_database(db_path: Path) -> None:
    first = ServedAgent(db_path)
    assert first.steps("before", 5)["flushed"]
    first.exit()
    db_path.chmod(0o444)
    agent = ServedAgent(db_path, prefix=tuple(AS_A_USER))
    during = agent.steps("during", 20)
    assert during["flushed"] is False and during["written"] == 0  # reported, not raised

    stats = subprocess.run(
        [*AS_A_USER, sys.executable, "-m", "otel_blackbox.cli", "--db", str(db_path), "stats"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert stats.returncode == 0, stats.stderr
    assert "NOT writable by this user" in stats.stdout

    # The fault clears: the held steps are written, then the new ones. SQLite gave the -wal and
    # -shm it created the database's mode, so the fix is `chmod u+w blackbox.db*`.
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db_path}{suffix}").chmod(0o644)
    after = agent.steps("after", 10)
    assert after["flushed"]
    final, stderr = agent.exit()
    assert final["write_errors"] == 0 and final["written"] == 30 * 4
    assert stderr.count(WARNING) == 1 and "readonly" in stderr
    assert labels(db_path) == {"before": 5, "during": 20, "after": 10}
    assert integrity(db_path) == "ok"


@pytest.mark.parametrize("deleted", ["the file", "the file, its -wal and -shm"])
def test_database_deleted_while_open(db_path: Path, deleted: str) -> None:
    agent = ServedAgent(db_path)
    assert agent.steps("before", 10)["flushed"]
    for suffix in ("", "-wal", "-shm") if "-wal" in deleted else ("",):
        Path(f"{db_path}{suffix}").unlink()
    # Five ticks with nothing to write: the writer lets go of the file and makes no new one (its
    # upkeep once re-created it, empty, a tick after the deletion).
    time.sleep(0.5)
    assert not db_path.exists()
    assert_one_line_error(run_cli("stats", db=db_path), "database not found")

    assert agent.steps("after", 10)["flushed"]  # noticed within a tick: a new file
    final, stderr = agent.exit()
    assert final["write_errors"] == 0
    assert stderr.count("was deleted or replaced while recording") == 1
    assert stderr.count(WARNING) == 0  # nothing failed: the steps went to the new file
    assert labels(db_path) == {"after": 10}
    assert integrity(db_path) == "ok"
    assert json.loads(run_cli("stats", "--json", db=db_path, check=True).stdout)["spans"] == 40


def test_full_disk(db_path: Path) -> None:
    agent = ServedAgent(db_path)
    assert agent.steps("before", 10)["flushed"]
    # RLIMIT_FSIZE of one byte: every write past it fails (EFBIG, SIGXFSZ ignored), as on a full disk.
    agent.send("rlimit 1")
    during = agent.steps("during", 30, payload_bytes=20_000)
    assert during["flushed"] is False
    assert agent.steps("still-full", 10)["flushed"] is False
    agent.send("rlimit unlimited")
    after = agent.steps("after", 10)
    assert after["flushed"]
    final, stderr = agent.exit()
    assert final["write_errors"] == 0
    assert stderr.count(WARNING) == 1 and ("full" in stderr or "disk I/O error" in stderr)
    assert labels(db_path) == {"before": 10, "during": 30, "still-full": 10, "after": 10}
    assert integrity(db_path) == "ok"


@pytest.fixture
def small_filesystem(tmp_path: Path) -> Iterator[Path]:
    """A real 4 MB filesystem (tmpfs), where this machine lets us mount one."""
    mount_point = tmp_path / "small"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount_point)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(  # intentional: no mount here (an unprivileged sandbox); RLIMIT_FSIZE covers the case
            f"cannot mount a small filesystem here ({mounted.stderr.strip()}); RLIMIT_FSIZE covers it"
        )
    try:
        yield mount_point
    finally:
        for agent in STARTED:  # nothing may hold the file open when it is unmounted
            agent.stop()
        subprocess.run(["umount", str(mount_point)], check=True)


def test_a_real_full_filesystem(small_filesystem: Path) -> None:
    db = small_filesystem / "blackbox.db"
    ballast = small_filesystem / "ballast"
    ballast.write_bytes(b"\0" * 3_000_000)  # leaves the database about 1 MB
    agent = ServedAgent(db)
    assert agent.steps("before", 5)["flushed"]
    during = agent.steps("during", 30, payload_bytes=60_000)  # random text, ~1.3 MB zlib-compressed: ENOSPC
    assert during["flushed"] is False
    stats = run_cli("stats", db=db, check=True)  # reading still works, and says why writing does not
    free = json.loads(run_cli("stats", "--json", db=db, check=True).stdout)["disk_free_bytes"]
    assert free < 200_000 and f"{free / 1e6:,.0f} MB free on its disk" in stats.stdout
    ballast.unlink()  # space again: the held steps go first, then the new ones
    assert agent.steps("after", 5)["flushed"]
    final, stderr = agent.exit()
    assert final["write_errors"] == 0
    assert stderr.count(WARNING) == 1 and "full" in stderr
    assert labels(db) == {"before": 5, "during": 30, "after": 5}
    assert integrity(db) == "ok"


def test_locked_longer_than_the_busy_timeout(db_path: Path) -> None:
    busy_ms = 200
    agent = ServedAgent(db_path, "--busy-timeout-ms", str(busy_ms))
    assert agent.steps("before", 10)["flushed"]
    locker = sqlite3.connect(db_path, isolation_level=None, timeout=10)
    locker.execute("BEGIN EXCLUSIVE")  # in WAL mode: every writer waits, readers go on
    try:
        during = agent.steps("during", 20)
        assert during["flushed"] is False
        # The agent's own thread never waited for the lock: only the writer thread did.
        assert during["slowest_step_s"] < busy_ms / 1000
        assert run_cli("list", db=db_path, check=True).stdout  # reading is not blocked
        assert_one_line_error(run_cli("cleanup", db=db_path), "database is locked by another process")
        assert agent.steps("still-locked", 5)["flushed"] is False
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert agent.steps("after", 10)["flushed"]
    final, stderr = agent.exit()
    assert final["write_errors"] == 0
    assert stderr.count(WARNING) == 1 and "locked" in stderr
    assert labels(db_path) == {"before": 10, "during": 20, "still-locked": 5, "after": 10}
    figure("locked database", "slowest agent step while locked", f"{during['slowest_step_s'] * 1e3:.2f} ms")


def test_corrupted_database_then_moved_aside(db_path: Path) -> None:
    first = ServedAgent(db_path)
    assert first.steps("old", 50)["flushed"]
    first.exit()
    with db_path.open("r+b") as handle:  # the header and the first pages overwritten
        handle.write(os.urandom(20_000))

    agent = ServedAgent(db_path)
    during = agent.steps("during", 20)
    assert during["flushed"] is False
    assert_one_line_error(run_cli("stats", db=db_path), "damaged", str(db_path))
    assert_one_line_error(run_cli("list", db=db_path), "damaged")

    aside = db_path.with_name("blackbox.db.corrupt")
    db_path.rename(aside)  # what the error suggests: move it aside, recording resumes in a new file
    assert agent.steps("after", 10)["flushed"]
    final, stderr = agent.exit()
    assert final["write_errors"] == 0
    assert stderr.count(WARNING) == 1
    assert labels(db_path) == {"during": 20, "after": 10}
    assert integrity(db_path) == "ok"


def test_pages_corrupted_while_recording(db_path: Path) -> None:
    agent = ServedAgent(db_path)
    assert agent.steps("before", 200)["flushed"]
    size = db_path.stat().st_size
    with db_path.open("r+b") as handle:  # keep the header, ruin the pages after it
        handle.seek(8192)
        handle.write(os.urandom(max(size - 8192, 8192)))
    agent.steps("during", 50)
    agent.steps("later", 50)
    final, stderr = agent.exit()  # the agent ran to completion: exit 0, every phase answered
    assert stderr.count(WARNING) <= 1 and "Traceback" not in stderr
    shown = run_cli("list", db=db_path)
    if shown.returncode != 0:
        assert_one_line_error(shown, "damaged")
    name = "pages corrupted while recording"
    figure(
        name, "steps written after / lost", f"{final['written'] // 4 - 200} / {final['write_errors'] // 4}"
    )
    figure(name, "integrity_check afterwards", integrity(db_path).splitlines()[0][:70])
