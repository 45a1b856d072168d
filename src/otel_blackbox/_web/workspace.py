"""Where the workbench keeps what it makes, beside the database, and the incident a page reruns.

``<db stem>.workbench/`` next to the database (``ui --workdir`` chooses another): ``incidents/`` (a
run or a trace made a cassette, as ``cassette --run`` makes it), ``children/`` (each rerun's child
cassette), ``jobs/`` (each job's record: what it was asked, what it heard, how it ended) and
``contracts/`` (a contract suite: ``NAME.json`` and ``NAME.contract.json``, for ``eval run-all``).
The database itself is only ever read.
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from otel_blackbox._cassette.from_spans.cassette import cassette_from_spans, run_cassette
from otel_blackbox._cassette.io import save_cassette
from otel_blackbox._cassette.model import Cassette
from otel_blackbox._cassette.verify import check_before_writing
from otel_blackbox._playback.agent.incident import Incident, read_incident
from otel_blackbox._store import queries, runs
from otel_blackbox._store.queries import SpanRecord
from otel_blackbox._store.trace_logs import attached, load_trace
from otel_blackbox.errors import RunNotFound

__all__ = [
    "StubField",
    "Target",
    "Workspace",
    "incident_of",
    "stub_fields",
    "target_cassette",
    "target_spans",
]

_SAFE_ID = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True)
class Target:
    """What a page shows and a rerun starts from: a run (``runs``) or one trace."""

    kind: str  # "run" or "trace"
    id: str  # the full id

    @property
    def label(self) -> str:
        return f"{self.kind} {self.id}"

    @property
    def path(self) -> str:
        return f"/{self.kind}/{self.id}"


def target_spans(conn: sqlite3.Connection, kind: str, ident: str) -> tuple[Target, list[SpanRecord]]:
    """The full target of an id (a unique prefix is enough) and its spans, in time order."""
    if kind == "run":
        full = runs.resolve_run_id(conn, ident)
        spans = attached(conn, runs.run_spans(conn, full))
        if not spans:
            raise RunNotFound(f"run {full} has no spans (it recorded none, or its traces expired)")
        return Target("run", full), spans
    full = queries.resolve_trace_id(conn, ident)
    return Target("trace", full), load_trace(conn, full)


@dataclass(frozen=True)
class StubField:
    """A tool the incident has no successful recorded result for: a ``stub:NAME`` field of the form."""

    tool: str
    asked: Any  # what the failing (or unanswered) call of it asked, else None
    failed: bool  # the incident called it and it failed or never returned


def stub_fields(incident: Incident) -> list[StubField]:
    """One field per offered tool with no successful recorded result; the failing ones first."""
    answered = {r.tool_name for r in incident.results if "error" not in r.outcome}
    asked: dict[str, Any] = {}
    for result in incident.results:
        if "error" in result.outcome:
            asked[result.tool_name] = result.tool_input
    for call in incident.unanswered:
        asked[call.tool_name] = call.tool_input
    tools = sorted(incident.offered_tools() - answered, key=lambda t: (t not in asked, t))
    return [StubField(tool, asked.get(tool), tool in asked) for tool in tools]


class Workspace:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.incidents = root / "incidents"
        self.children = root / "children"
        self.jobs = root / "jobs"
        self.contracts = root / "contracts"

    @classmethod
    def beside(cls, db_path: Path) -> Workspace:
        return cls(db_path.parent / f"{db_path.stem}.workbench")

    def incident_path(self, target: Target) -> Path:
        return self.incidents / f"{target.kind}-{_SAFE_ID.sub('_', target.id)}.json"

    def write_incident(self, target: Target, spans: list[SpanRecord]) -> tuple[Path, Cassette]:
        """The target as a cassette on disk (CassetteError when it would not verify: nothing written)."""
        cassette = target_cassette(spans, target)
        return self.save_incident(target, cassette), cassette

    def save_incident(self, target: Target, cassette: Cassette) -> Path:
        """The target's cassette, already made, on disk (CassetteError when it would not verify)."""
        check_before_writing(cassette, force=False)
        path = self.incident_path(target)
        path.parent.mkdir(parents=True, exist_ok=True)
        save_cassette(cassette, path)
        return path

    def write_record(self, job_id: str, record: dict[str, Any]) -> None:
        self.jobs.mkdir(parents=True, exist_ok=True)
        (self.jobs / f"{job_id}.json").write_text(json.dumps(record, indent=2, default=str), encoding="utf-8")


def incident_of(spans: list[SpanRecord], target: Target) -> Incident:
    """The incident a rerun of ``target`` would follow, read in memory (nothing written)."""
    return read_incident(target_cassette(spans, target), target.label)


def target_cassette(spans: list[SpanRecord], target: Target) -> Cassette:
    """A run's cassette holds its one conversation (a run of several is refused, naming them)."""
    own_id = f"{target.kind}-{target.id}"
    if target.kind == "run":
        return run_cassette(spans, cassette_id=own_id)
    return cassette_from_spans(spans, cassette_id=own_id)
