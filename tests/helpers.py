"""Helpers the tests share: a recorder on a temp database and the CLI run as a user runs it."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import TracerProvider

from otel_blackbox import BlackboxConfig, BlackboxSpanProcessor
from otel_blackbox.cassette.io import load_cassette
from otel_blackbox.cassette.model import Cassette

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
# The Blackbox trace format v2 test vectors, copied verbatim from shared/interop/blackbox-v2.
VECTORS_DIR = ROOT / "tests" / "vectors" / "blackbox-v2"
VECTOR_NAMES = ("success-tool-use", "error-unknown-tool", "fork-parent", "fork-child")

# `make stress` sets BLACKBOX_STRESS=1: the reliability tests run their long versions (more
# processes, more kills, more fuzzing examples) and their figures go into docs/reliability.md.
STRESS = os.environ.get("BLACKBOX_STRESS", "") == "1"
FIGURES: list[tuple[str, str, str]] = []  # (test, figure, value): printed at the end of the run


def sized(ci: int, stress: int) -> int:
    """The CI size of a reliability test, or its long version under `make stress`."""
    return stress if STRESS else ci


def fuzz_examples(ci: int) -> int:
    """Hypothesis examples for a fuzz test: twenty times more under `make stress`."""
    return sized(ci, ci * 20)


def figure(test: str, name: str, value: object) -> None:
    """A measured figure worth reporting (spans/s, peak RSS, kills survived...)."""
    FIGURES.append((test, name, str(value)))


def vector_path(name: str) -> Path:
    return VECTORS_DIR / f"{name}.v2.json"


def vector(name: str) -> Cassette:
    return load_cassette(vector_path(name))


class Recorder:
    """A TracerProvider wired to a BlackboxSpanProcessor on a temp database."""

    def __init__(self, db_path: Path, **config: Any) -> None:
        self.db_path = db_path
        self.processor = BlackboxSpanProcessor(config=BlackboxConfig(db_path=db_path, **config))
        self.provider = TracerProvider(shutdown_on_exit=False)
        self.provider.add_span_processor(self.processor)
        self.tracer = self.provider.get_tracer("tests")

    def rows(self, query: str = "SELECT * FROM spans ORDER BY start_ns", *params: Any) -> list[sqlite3.Row]:
        conn = sqlite3.connect(self.db_path)
        conn.row_factory = sqlite3.Row
        try:
            return conn.execute(query, params).fetchall()
        finally:
            conn.close()

    def flush(self) -> None:
        assert self.processor.force_flush(10_000)


def run_cli(*args: str, db: Path | None = None, check: bool = False) -> subprocess.CompletedProcess[str]:
    """The real console entry point, in a subprocess, as a user runs it."""
    argv = [sys.executable, "-m", "otel_blackbox.cli"]
    if db is not None:
        argv += ["--db", str(db)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_BLACKBOX")}
    result = subprocess.run([*argv, *args], capture_output=True, text=True, env=env, timeout=60)
    if check and result.returncode != 0:
        raise AssertionError(f"exit {result.returncode}: {result.stderr}")
    return result
