"""What the workbench answers about its jobs: a job's page, its cassettes (``/child``, ``/incident``)
and the contract its child would hold (``/contract``), its progress as JSON, the contracts page; and
the pages of "Edit and continue" (a run's steps, a step's editor: ``edit_pages.py``); and the
actions, each a POST that starts a job (rerun, fork, blame, run all), saves a contract or cancels a job.
Each returns the body (or, for an action, where to go next); ``server.py`` guards the request (an
action's token too) and sends the answer.
"""

from __future__ import annotations

import json
import re

from otel_blackbox._cassette.diff.contract import CONTRACT_SUFFIX
from otel_blackbox._cassette.suite import Suite, load_suite
from otel_blackbox._playback.agent.sdk import available_apis
from otel_blackbox._web.actions import (
    BadForm,
    child_contract,
    job_verdict,
    read_rerun_form,
    save_contract,
    start_blame,
    start_rerun,
    start_run_all,
)
from otel_blackbox._web.contract_pages import contract_page, contracts_page
from otel_blackbox._web.edit_pages import editor_page, steps_page
from otel_blackbox._web.fork_action import lineage, parent_of, start_fork
from otel_blackbox._web.job_pages import event_lines, job_page
from otel_blackbox._web.jobs import Job
from otel_blackbox._web.masking import mask_spans
from otel_blackbox._web.request_context import NotFound, StoreReader, Workbench
from otel_blackbox._web.workspace import target_spans
from otel_blackbox.errors import BlackboxError

__all__ = [
    "EDIT_PAGE",
    "JOB_API",
    "JOB_PAGE",
    "STEPS_PAGE",
    "act",
    "edit_view",
    "is_action",
    "job_progress",
    "job_view",
    "run_steps_view",
    "saved_contracts_page",
]

ACTIONS = frozenset({"/rerun", "/blame", "/fork", "/contracts/save", "/contracts/run-all"})
JOB_PAGE = re.compile(r"/job/(?P<id>[\w-]+)(?:/(?P<what>child|incident|contract))?")
# "Edit and continue": a recorded run's steps, and a step's editor (of a run, or of a job's cassette).
STEPS_PAGE = re.compile(r"/(?P<parent>(?:run|trace)/[\w.:-]+)/steps")
EDIT_PAGE = re.compile(
    r"/(?P<parent>(?:run|trace)/[\w.:-]+|job/[\w-]+/(?:child|incident))/edit/(?P<step>\d{1,9})"
)
JOB_API = re.compile(r"/api/job/(?P<id>[\w-]+)")
_JOB_CANCEL = re.compile(r"/job/(?P<id>[\w-]+)/cancel")


def is_action(path: str) -> bool:
    """A path a POST may go to; any other POST is refused before its body is read."""
    return path in ACTIONS or _JOB_CANCEL.fullmatch(path) is not None


def _job(server: Workbench, job_id: str) -> Job:
    job = server.board.get(job_id)
    if job is None:
        raise NotFound(f"no job {job_id!r} in this workbench (jobs live as long as ui runs; records in "
                       f"{server.workspace.jobs})")  # fmt: skip
    return job


def _contract_name(job: Job) -> str:
    """A default name for a job's contract: its target, shortened."""
    if job.target is None:
        return f"contract-{job.id}"
    return f"{job.target.kind}-{job.target.id[:12]}"


def job_view(server: Workbench, job_id: str, what: str | None) -> str:
    """``/job/<id>``: the job's page; ``what``: its ``child`` or ``incident`` cassette, or the
    ``contract`` its child would hold."""
    job = _job(server, job_id)
    guard = server.guard
    if what is None:
        report, completed = job_verdict(job)
        return job_page(job, report, token=guard.action_token, read_only=guard.read_only,
                        child_completed=completed, chain=lineage(server.board, job))  # fmt: skip
    if what in ("child", "incident"):  # broken: 400, its line; each step editable (a chain of edits)
        return steps_page(parent_of(server, f"job/{job.id}/{what}"), (f"/job/{job.id}", f"job {job.id}"))
    _, results = child_contract(job)  # contract
    name = _contract_name(job)
    return contract_page(job, results, name, server.workspace.contracts,
                         token=guard.action_token, read_only=guard.read_only)  # fmt: skip


def run_steps_view(server: Workbench, parent: str) -> str:
    """``/run/<id>/steps``: the recorded run as the cassette a fork starts from, each step editable."""
    found = parent_of(server, parent)
    back = found.target.path if found.target is not None else "/"
    return steps_page(found, (back, f"the recorded {found.target.kind if found.target else 'run'}"))


def edit_view(server: Workbench, parent: str, step: int) -> str:
    """``.../edit/<N>``: step N of a run or a job's cassette, and the form that changes it."""
    guard = server.guard
    return editor_page(parent_of(server, parent), step, token=guard.action_token, read_only=guard.read_only)


def job_progress(server: Workbench, job_id: str) -> str:
    """``/api/job/<id>``: what a running job's page polls for, its state, seconds and lines."""
    record = _job(server, job_id).record()
    lines = event_lines(record["events"])
    return json.dumps({"state": record["state"], "seconds": record["seconds"], "lines": lines})


def saved_contracts_page(server: Workbench, problem: str | None = None) -> str:
    """``/contracts``: the contracts saved in the workspace, and the last run of them all."""
    workspace, guard = server.workspace, server.guard
    suite = Suite([], [])
    if workspace.contracts.is_dir() and any(workspace.contracts.glob(f"*{CONTRACT_SUFFIX}")):
        try:
            suite = load_suite(workspace.contracts)
        except BlackboxError as exc:
            problem = str(exc)
    runs_all = [j for j in server.board.all() if j.kind == "run-all"]
    return contracts_page(suite, workspace.contracts, available_apis(), token=guard.action_token,
                          read_only=guard.read_only, last_run=runs_all[-1] if runs_all else None,
                          problem=problem)  # fmt: skip


def act(server: Workbench, path: str, form: dict[str, list[str]]) -> str:
    """The action a POST to ``path`` asks for (``is_action``), its guard passed; where to go next."""
    board = server.board
    if path in ("/rerun", "/blame"):
        kind = (form.get("target_kind") or [""])[-1]
        if kind not in ("run", "trace"):
            raise BadForm("target_kind: run or trace")
        with StoreReader(server.db_path) as conn:
            target, spans = target_spans(conn, kind, (form.get("target_id") or [""])[-1].strip())
        spans = mask_spans(spans)  # the incident written to the workspace holds no secret either
        if path == "/blame":
            job = start_blame(board, form, target, spans, available_apis())
        else:
            asked = read_rerun_form(form, target, spans, available_apis(), server.program)
            job = start_rerun(board, asked, spans)
        return f"/job/{job.id}"
    if path == "/fork":
        return f"/job/{start_fork(server, form, available_apis()).id}"
    if path == "/contracts/save":
        job = _job(server, (form.get("job") or [""])[-1])
        save_contract(server.workspace, job, form)
        return "/contracts"
    if path == "/contracts/run-all":
        job = start_run_all(board, form, available_apis())
        return f"/job/{job.id}"
    match = _JOB_CANCEL.fullmatch(path)
    assert match is not None
    job = _job(server, match["id"])
    board.cancel(job)
    return f"/job/{job.id}"
