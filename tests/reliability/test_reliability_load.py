"""Load: many processes and threads on one database, and a burst far above the queue size.

Each agent is tests/programs/stress_agent.py in its own process, recording through the real SDK and
BlackboxSpanProcessor. `make stress` runs the long versions; the figures go to docs/reliability.md.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from helpers import STRESS_AGENT, figure, run_cli, sized

pytestmark = pytest.mark.reliability


def start_agent(*args: str, **popen: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, STRESS_AGENT, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )


def finish(proc: subprocess.Popen[str], timeout: float = 600) -> tuple[dict[str, Any], str]:
    """The agent's last JSON line and its stderr, once it has exited cleanly."""
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1]), err


def test_eight_processes_of_four_threads_write_every_span_exactly_once(db_path: Path) -> None:
    processes, threads, steps = 8, 4, sized(150, 2_500)
    agents = [
        start_agent(
            "load", "--db", str(db_path), "--threads", str(threads), "--steps", str(steps), "--tag", f"p{p}"
        )
        for p in range(processes)
    ]
    results = [finish(agent) for agent in agents]
    total = processes * threads * steps * 4  # four nested spans a step
    for result, stderr in results:
        assert "otel-blackbox" not in stderr and "locked" not in stderr  # no write ever failed
        assert (result["dropped"], result["write_errors"], result["written"]) == (0, 0, result["ended"])

    with closing(sqlite3.connect(db_path)) as conn:
        rows, distinct, still_open = conn.execute(
            "SELECT count(*), count(DISTINCT trace_id || span_id), coalesce(sum(status = 'open'), 0)"
            " FROM spans"
        ).fetchone()
        assert (rows, distinct, still_open) == (total, total, 0)
        roots = {name for (name,) in conn.execute("SELECT name FROM spans WHERE parent_span_id IS NULL")}
        expected = {f"p{p}/{t}/{s}" for p in range(processes) for t in range(threads) for s in range(steps)}
        assert roots == expected
        # Nesting survived: every child's parent is in its own trace, and each trace is one whole step.
        orphans = conn.execute(
            "SELECT count(*) FROM spans c WHERE c.parent_span_id IS NOT NULL AND NOT EXISTS "
            "(SELECT 1 FROM spans p WHERE p.trace_id = c.trace_id AND p.span_id = c.parent_span_id)"
        ).fetchone()[0]
        assert orphans == 0
        assert (
            conn.execute(
                "SELECT count(*) FROM (SELECT trace_id FROM spans GROUP BY trace_id HAVING count(*) != 4)"
            ).fetchone()[0]
            == 0
        )
        recorders = conn.execute(
            "SELECT count(*), sum(spans_written), sum(spans_dropped), sum(write_errors) FROM recorders"
        ).fetchone()
        assert recorders == (processes, total, 0, 0)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    began = min(r["started_at"] for r, _ in results)
    produced = max(r["produced_at"] for r, _ in results)
    done = max(r["done_at"] for r, _ in results)
    name = "load 8 processes x 4 threads"
    figure(name, "spans", total)
    figure(name, "spans/s on disk (first start to last row)", f"{total / (done - began):,.0f}")
    figure(name, "writer lag after the last span ended", f"{done - produced:.2f} s")


def test_a_burst_far_above_the_queue_drops_exactly_what_it_counts_and_recovers(db_path: Path) -> None:
    queue, spans = sized(2_000, 20_000), sized(100_000, 2_000_000)
    agent = start_agent("burst", "--db", str(db_path), "--spans", str(spans), "--queue", str(queue))
    result, stderr = finish(agent)

    # Exact accounting: every span that ended is either on disk or counted as dropped.
    assert result["dropped"] > 0  # the burst really overflowed the queue
    assert result["written"] + result["dropped"] == result["ended"]
    assert result["write_errors"] == 0
    with closing(sqlite3.connect(db_path)) as conn:
        on_disk = conn.execute("SELECT count(*) FROM spans WHERE status != 'open'").fetchone()[0]
        recovered = conn.execute("SELECT count(*) FROM spans WHERE name LIKE 'recover-%'").fetchone()[0]
    assert on_disk == result["written"]
    assert recovered == 1_000  # after the burst, nothing is lost at a normal pace
    assert result["dropped"] == result["after_burst"]["dropped"]
    assert stderr.count("queue full") == 1  # warned once
    stats = json.loads(run_cli("stats", "--json", db=db_path, check=True).stdout)
    with closing(sqlite3.connect(db_path)) as conn:  # none: every span ended (named if one is left)
        still_open = conn.execute(
            "SELECT name, span_id, written_ns FROM spans WHERE status = 'open'"
        ).fetchall()
    assert (stats["spans_dropped"], stats["spans"], still_open) == (result["dropped"], on_disk, [])

    # Memory is bounded by the queue, not by the burst: by count and by an estimate of its bytes
    # (max_queue_mb, 32 by default), well inside the 64 MB the recorder may add.
    growth_mb = result["rss_burst_mb"] - result["rss_baseline_mb"]
    assert growth_mb < 64, result

    name = f"burst of {result['burst_spans']:,} spans, 4 threads, queue {queue:,}"
    figure(name, "spans dropped (counted, and shown by stats)", f"{result['dropped']:,}")
    figure(name, "spans written during the burst", f"{result['after_burst']['written']:,}")
    figure(
        name,
        "burst duration: recorder / no-op processor",
        f"{result['burst_s']:.2f} s / {result['baseline_burst_s']:.2f} s "
        f"({result['burst_s'] / result['baseline_burst_s']:.2f}x)",
    )
    figure(
        name,
        "peak RSS: recorder / no-op processor / before the bursts",
        f"{result['rss_burst_mb']:.0f} / {result['rss_baseline_mb']:.0f} / {result['rss_before_mb']:.0f} MB",
    )
    figure(
        name,
        "slowest single start+end (recorder / no-op processor)",
        f"{result['slowest_call_s'] * 1e3:.1f} ms / {result['baseline_slowest_call_s'] * 1e3:.1f} ms",
    )
