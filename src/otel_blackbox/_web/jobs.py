"""The workbench's background jobs: a rerun, a fork (an edit and continue), a blame, or a run of every
saved contract, each a worker process.

``JobBoard.start`` writes the job's spec and starts ``python -m otel_blackbox._web.worker``; a thread
reads its JSON events as they come (the progress a page shows), another its log. When the process
ends, the job is ``done`` (it made its child: a verdict to show) or ``failed`` (it could not start,
its provider refused or was down, it was cancelled, or it crashed), with one readable line why,
and its record (what was asked, what happened) is written under the workspace's ``jobs/``. Every
line a page shows, and the record, is masked (``masking.py``).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.model import terminal_outcome
from otel_blackbox._types import JsonObject
from otel_blackbox._web.masking import mask, masked
from otel_blackbox._web.workspace import Target, Workspace

__all__ = ["CHILD_JOBS", "Job", "JobBoard", "failure_line", "what_ran"]

MAX_EVENTS = 2_000  # a job's events kept (a run of many contracts); the rest counted
MAX_LOG_LINES = 200
MAX_JOBS = 100  # finished jobs kept in memory; their records stay on disk
CANCEL_GRACE_S = 5.0  # after SIGINT, the worker writes its child; then it is killed
CHILD_JOBS = ("rerun", "fork")  # the jobs that end on one child cassette, judged against their parent


# What a job's events say ran before it ended: (event, one, many), counted in this order.
_RAN = (
    ("model_call", "model call", "model calls"),
    ("branch", "branch", "branches"),
    ("contract_result", "contract checked", "contracts checked"),
)


def what_ran(events: list[JsonObject]) -> str | None:
    """``3 model calls, 1 contract checked``: what a job did before its end; None when nothing ran."""
    parts = []
    for kind, one, many in _RAN:
        count = sum(1 for event in events if event.get("event") == kind)
        if count:
            parts.append(f"{count} {one if count == 1 else many}")
    return ", ".join(parts) or None


def failure_line(events: list[JsonObject], reason: str) -> str:
    """Why a job failed, saying what had run: ``could not start: ...`` only when nothing had."""
    ran = what_ran(events)
    return f"failed after {ran}: {reason}" if ran else f"could not start: {reason}"


@dataclass
class Job:
    id: str
    kind: str  # "rerun", "fork", "blame" or "run-all"
    asked: JsonObject  # what the form asked, as shown (provider, model, max_cost, stubs, ...)
    target: Target | None = None  # a rerun's run or trace
    incident: Path | None = None
    child: Path | None = None
    state: str = "running"  # running / done / failed
    message: str | None = None  # why it failed, one line
    events: list[JsonObject] = field(default_factory=list)
    dropped_events: int = 0
    log: list[str] = field(default_factory=list)
    exit_code: int | None = None
    started: float = field(default_factory=time.time)
    ended: float | None = None
    cancelled: bool = False
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    follower: threading.Thread | None = field(default=None, repr=False)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def seconds(self) -> float:
        return (self.ended or time.time()) - self.started

    def record(self) -> JsonObject:
        """The job as JSON: its page's data, and its record on disk."""
        with self.lock:
            return {
                "id": self.id,
                "kind": self.kind,
                "state": self.state,
                "asked": self.asked,
                "target": None if self.target is None else {"kind": self.target.kind, "id": self.target.id},
                "incident": None if self.incident is None else str(self.incident),
                "child": None if self.child is None else str(self.child),
                "message": self.message,
                "events": list(self.events),
                "droppedEvents": self.dropped_events,
                "log": list(self.log),
                "exitCode": self.exit_code,
                "seconds": round(self.seconds, 3),
                "cancelled": self.cancelled,
            }


class JobBoard:
    """The jobs of one workbench launch, newest last."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)

    def all(self) -> list[Job]:
        with self._lock:
            return list(self._jobs.values())

    @staticmethod
    def new_id() -> str:
        return f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"

    def start(self, job_id: str, kind: str, asked: JsonObject, spec: JsonObject, **where: Any) -> Job:
        """Start a worker on ``spec`` (its kind added); ``where``: the Job's target, incident, child."""
        job = Job(job_id, kind, asked, **where)
        self.workspace.jobs.mkdir(parents=True, exist_ok=True)
        spec_path = self.workspace.jobs / f"{job_id}.spec.json"
        spec_path.write_text(json.dumps({**spec, "kind": kind}, default=str), encoding="utf-8")
        job.proc = subprocess.Popen(
            [sys.executable, "-m", "otel_blackbox._web.worker", str(spec_path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # the viewer's Ctrl-C is not the job's
        )
        with self._lock:
            self._jobs[job_id] = job
            finished = [j for j in self._jobs.values() if j.state != "running"]
            for old in finished[: max(0, len(self._jobs) - MAX_JOBS)]:
                del self._jobs[old.id]
        log_reader = threading.Thread(target=self._read_log, args=(job, job.proc.stderr), daemon=True)
        log_reader.start()
        job.follower = threading.Thread(target=self._follow, args=(job, log_reader), daemon=True)
        job.follower.start()
        return job

    def cancel(self, job: Job) -> bool:
        """SIGINT (the child is written as interrupted), then SIGKILL after a grace; False if it ended."""
        with job.lock:
            if job.state != "running" or job.proc is None:
                return False
            job.cancelled = True
            proc = job.proc
        try:  # the worker and a program it started: their own process group
            os.killpg(proc.pid, signal.SIGINT)
        except ProcessLookupError:
            return False

        def kill_if_alive() -> None:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)

        timer = threading.Timer(CANCEL_GRACE_S, kill_if_alive)
        timer.daemon = True
        timer.start()
        return True

    def stop_all(self) -> None:
        """The viewer is closing: every running job is cancelled, and each ends (its child written)."""
        jobs = self.all()
        for job in jobs:
            self.cancel(job)
        for job in jobs:
            if job.follower is not None:
                job.follower.join(CANCEL_GRACE_S + 5)

    # -- the reader threads ---------------------------------------------------------------------------

    def _follow(self, job: Job, log_reader: threading.Thread) -> None:
        proc = job.proc
        assert proc is not None and proc.stdout is not None
        ended: JsonObject | None = None
        for raw in proc.stdout:
            try:
                event = json.loads(raw)
            except ValueError:
                continue  # not one of the worker's lines
            if not isinstance(event, dict):
                continue
            if event.get("event") in ("end", "error"):
                ended = event
            with job.lock:
                if len(job.events) < MAX_EVENTS:
                    job.events.append(masked(event))
                else:
                    job.dropped_events += 1
        code = proc.wait()
        log_reader.join(5)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        self._conclude(job, code, ended)
        try:
            self.workspace.write_record(job.id, masked(job.record()))
        except OSError as exc:  # the page still shows it; the log says why it is not on disk
            job.log.append(f"[workbench] could not write the job's record: {exc}")

    def _read_log(self, job: Job, stream: IO[bytes] | None) -> None:
        if stream is None:
            return
        for raw in stream:
            line = mask(raw.decode("utf-8", "replace").rstrip())
            with job.lock:
                if len(job.log) < MAX_LOG_LINES:
                    job.log.append(line)

    def _conclude(self, job: Job, code: int, ended: JsonObject | None) -> None:
        """The job's end, published at once: a page never sees a state that is about to change."""
        message: str | None = None
        if job.cancelled:
            state, message = "failed", "cancelled"
        elif ended is not None and ended.get("event") == "error":
            with job.lock:
                events = list(job.events)
            state, message = "failed", failure_line(events, mask(str(ended.get("message"))))
        elif ended is None or (code not in (0, 1) and not job.asked.get("program")):
            last = next((line for line in reversed(job.log) if line.strip()), "no output")
            state, message = "failed", f"the job ended with exit code {code}: {last}"
        elif job.kind in CHILD_JOBS:
            state, message = self._judge_child(job)
        else:
            state = "done"
        with job.lock:
            job.exit_code, job.ended, job.state, job.message = code, time.time(), state, message

    @staticmethod
    def _judge_child(job: Job) -> tuple[str, str | None]:
        """A rerun that wrote its child is done, unless the provider refused every model call (down,
        or the model unknown): then there is no model answer to judge, and the job failed."""
        if job.child is None or not job.child.is_file():
            return "failed", "the rerun wrote no child cassette"
        if terminal_outcome(load_cassette(job.child)).failure_reason != "model_error":
            return "done", None
        reason = next((line for line in job.log if "model call" in line and "failed" in line), None)
        return "failed", (reason or "the provider refused the model call").removeprefix("[blackbox] ")
