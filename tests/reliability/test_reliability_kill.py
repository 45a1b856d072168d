"""SIGKILL: an agent killed at random points during heavy writing, again and again, on one file.

After every kill the database opens, passes `PRAGMA integrity_check`, and holds every span that had
been open longer than the flush interval. A cassette being saved when the process dies is the old
file or the whole new one, never half.
"""

from __future__ import annotations

import os
import random
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import STRESS_AGENT, figure, run_cli, sized

from otel_blackbox._cassette.io import load_cassette, save_cassette
from otel_blackbox._cassette.verify import verify_cassette

pytestmark = pytest.mark.reliability

FLUSH_INTERVAL_NS = 200_000_000  # BlackboxConfig's default


class Reader(threading.Thread):
    """Collects the agent's stdout lines as they come, so none is lost to the kill."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        super().__init__(daemon=True)
        self.proc = proc
        self.lines: list[str] = []
        self.first = threading.Event()

    def run(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            self.first.set()


def kill_at_random(args: list[str], rng: random.Random, low: float, high: float) -> tuple[list[str], int]:
    """Start the agent, SIGKILL it a random time after its first line; its lines and the kill time."""
    with subprocess.Popen([sys.executable, STRESS_AGENT, *args], stdout=subprocess.PIPE, text=True) as proc:
        reader = Reader(proc)
        reader.start()
        assert reader.first.wait(30), "the agent never started"
        time.sleep(rng.uniform(low, high))
        killed_ns = time.time_ns()
        proc.kill()
        proc.wait(30)
        reader.join(30)
    return reader.lines, killed_ns


def test_sigkill_during_heavy_writing_never_costs_the_database(db_path: Path) -> None:
    rounds = sized(4, 60)
    rng = random.Random(7)
    checked = missing = 0
    for round_ in range(rounds):
        # A 20 MB size cap: the file reaches it within a few rounds, so kills also land mid-eviction.
        churn = ["churn", "--db", str(db_path), "--threads", "3", "--seed", str(round_), "--max-db-mb", "20"]
        lines, killed_ns = kill_at_random(churn, rng, 0.3, 1.5)
        conn = sqlite3.connect(db_path)
        try:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok", f"round {round_}"
            on_disk = {(t, s) for t, s in conn.execute("SELECT trace_id, span_id FROM spans")}
        finally:
            conn.close()
        # Every long span that had started a flush interval before the kill is on disk.
        for line in lines:
            _, trace_id, span_id, started_ns = line.split()
            if int(started_ns) < killed_ns - FLUSH_INTERVAL_NS:
                checked += 1
                if (trace_id, span_id) not in on_disk:
                    missing += 1
        stats = run_cli("stats", db=db_path)
        assert stats.returncode == 0 and stats.stderr == "", stats.stderr
    assert checked >= rounds  # each round had long spans to check
    assert missing == 0, f"{missing} of {checked} long spans open longer than the flush interval were lost"

    conn = sqlite3.connect(db_path)
    total, still_open = conn.execute(
        "SELECT count(*), coalesce(sum(status = 'open'), 0) FROM spans"
    ).fetchone()
    conn.close()
    name = "SIGKILL during heavy writing (3 threads, ~5k spans/s, 20 MB cap)"
    figure(name, "kills survived (integrity_check ok after each)", rounds)
    figure(name, "long spans checked / missing", f"{checked} / {missing}")
    figure(name, "spans on disk at the end (open)", f"{total:,} ({still_open:,})")


def test_a_cassette_saved_while_killed_is_the_old_or_the_new_one(tmp_path: Path) -> None:
    rounds = sized(6, 100)
    rng = random.Random(11)
    out = tmp_path / "run.json"
    seen: dict[str, int] = {}
    for _ in range(rounds):
        kill_at_random(["cassettes", "--out", str(out)], rng, 0.0, 0.3)
        cassette = load_cassette(out)  # whole: it parses, and every step is there
        assert cassette.id in ("run-a", "run-b") and len(cassette.steps) == 200
        assert not [c for c in verify_cassette(cassette).checks if c.status == "fail"]  # the hash chain holds
        seen[cassette.id] = seen.get(cassette.id, 0) + 1
        leftovers = [p.name for p in tmp_path.iterdir() if p.name != out.name]
        assert all(name.startswith(".run.json.") and name.endswith(".tmp") for name in leftovers)
    figure(
        "cassette saved while killed", "kills / whole cassettes afterwards", f"{rounds} / {rounds} ({seen})"
    )
    temporaries = [p for p in tmp_path.iterdir() if p != out]
    figure("cassette saved while killed", "temporary files left beside it", len(temporaries))
    # Their processes are gone: once they are a minute old, the next save of the file removes them.
    an_hour_ago = time.time() - 3600
    for path in temporaries:
        os.utime(path, (an_hour_ago, an_hour_ago))
    save_cassette(load_cassette(out), out)
    assert list(tmp_path.iterdir()) == [out]
