"""Which run a process is recording to each database: so its log records join its spans' run.

A run is one row of ``recorders``, named by the recording process's pid and its start. The span
recorders (BlackboxSpanProcessor, BlackboxSpanExporter) say here when they start a run on a file;
the log recorders ask, when they first write, and put their counts on that same row, so a process
that records spans and log records to one file shows as one run. The latest span recorder of a
file wins (the program's processor that replaced the auto-added one). A forked child starts runs
of its own: what its parent registered is not its.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

__all__ = ["register", "run_start"]

_lock = threading.Lock()
_runs: dict[tuple[int, str], int] = {}  # (pid, real path) -> the run's start (ns)


def _key(path: str | Path) -> tuple[int, str]:
    return (os.getpid(), os.path.realpath(os.fspath(path)))


def register(path: str | Path, started_ns: int) -> None:
    """A span recorder of this process started a run on ``path`` at ``started_ns``."""
    with _lock:
        _runs[_key(path)] = started_ns


def run_start(path: str | Path, default_ns: int) -> int:
    """The start of this process's span run on ``path``; ``default_ns`` (a run of the log
    recorder's own) when no span recorder registered one."""
    with _lock:
        return _runs.get(_key(path), default_ns)
