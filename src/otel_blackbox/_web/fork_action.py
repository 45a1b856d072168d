"""The workbench's "Edit and continue": a step of a recorded run (or of a cassette a job made)
changed, and the run let go on by the built-in agent, as ``otel-blackbox fork CASSETTE --at N
<change>`` does (``_playback/agent/edit.py``: the same ``edit_from``, the same ``start_of`` checks,
the same ``fork_built_in`` in the job's worker).

A fork's parent is named as its page's address names it: ``run/<id>`` or ``trace/<id>`` (the
recorded run, made a cassette as a rerun makes it: the workspace's incident), ``job/<id>/child`` (a
job's child: an edit of an edit, the chain's lineage kept in each job's ``asked``) or
``job/<id>/incident``. The form is checked whole, the edit against its step included, before any job
starts: a bad field is one line (``BadForm``, 400) and no job, no file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from otel_blackbox._cassette.model import Cassette
from otel_blackbox._cassette.trusted import checked_cassette
from otel_blackbox._playback.agent.edit import CHANGES, Edit, edit_from, start_of
from otel_blackbox._playback.agent.incident import Incident, read_incident
from otel_blackbox._types import JsonObject
from otel_blackbox._web.actions import (
    BadForm,
    Form,
    form_value,
    max_cost_field,
    model_field,
    provider_field,
    read_stubs,
)
from otel_blackbox._web.jobs import Job, JobBoard
from otel_blackbox._web.masking import mask_spans
from otel_blackbox._web.request_context import NotFound, StoreReader, Workbench
from otel_blackbox._web.workspace import Target, target_cassette, target_spans
from otel_blackbox.errors import BlackboxError

__all__ = ["PARENT", "ForkParent", "change_text", "lineage", "parent_of", "read_edit", "start_fork"]

# A parent as its page's address names it: run/<id>, trace/<id>, job/<id>/child, job/<id>/incident.
PARENT = re.compile(r"(?P<kind>run|trace)/(?P<id>[\w.:-]+)|job/(?P<job>[\w-]+)/(?P<what>child|incident)")


@dataclass(frozen=True)
class ForkParent:
    """The cassette a fork starts from, what its pages call it, and the job that made it (if any)."""

    name: str  # as PARENT matches it, e.g. "run/abc…" or "job/2026…/child"
    label: str  # for people: "run abc…", "the child of job 2026…"
    cassette: Cassette
    path: Path | None  # on disk (a job's cassette); None: a recorded run, in memory until a fork starts
    target: Target | None  # the recorded run or trace it comes from, for the pages' links
    job: Job | None  # the job whose cassette it is

    @property
    def incident(self) -> Incident:
        return read_incident(self.cassette, self.label)


def parent_of(server: Workbench, name: str) -> ForkParent:
    """The parent ``name`` names; NotFound (404) for a run, trace or job that is not there."""
    match = PARENT.fullmatch(name)
    if match is None:
        raise BadForm(f"parent {name[:80]!r}: run/<id>, trace/<id> or job/<id>/child")
    if match["kind"]:
        with StoreReader(server.db_path) as conn:
            target, spans = target_spans(conn, match["kind"], match["id"])
        cassette = target_cassette(mask_spans(spans), target)  # a run of several conversations: 400
        return ForkParent(f"{target.kind}/{target.id}", target.label, cassette, None, target, None)
    job = server.board.get(match["job"])
    if job is None:
        raise NotFound(f"no job {match['job']!r} in this workbench (jobs live as long as ui runs)")
    path = job.child if match["what"] == "child" else job.incident
    if path is None or not path.is_file():
        raise NotFound(f"job {job.id} has no {match['what']} cassette")
    label = f"the {match['what']} of job {job.id}"
    return ForkParent(f"job/{job.id}/{match['what']}", label, checked_cassette(path), path, job.target, job)


def read_edit(form: Form, parent: ForkParent, incident: Incident, change: str, text: str) -> tuple[Edit, str]:
    """The form's step with ``change`` (``change_text``), checked against that step (``start_of``):
    the Edit and what it changes, for people ("tool result of refund_order")."""
    step_text = form_value(form, "step")
    if not step_text.isdigit():
        raise BadForm(f"step: a step number, not {step_text[:20]!r}")
    try:
        edit = edit_from(int(step_text), change, text)
        start = start_of(parent.cassette, incident, edit)
    except BlackboxError as exc:
        raise BadForm(str(exc)) from None
    return edit, start.edit.description


def start_fork(server: Workbench, form: Form, apis: list[str]) -> Job:
    """The parent changed at the form's step and continued, as a job; its child in ``children/``."""
    parent = parent_of(server, form_value(form, "parent"))
    incident = parent.incident
    change, text = change_text(form)
    edit, described = read_edit(form, parent, incident, change, text)
    provider = provider_field(form, apis)
    model = model_field(form, required=False) or incident.model
    if not model:
        raise BadForm("the run names no model: give a model name")
    max_cost = max_cost_field(form, model, provider)
    stubs = read_stubs(form, incident)
    board = server.board
    path = parent.path
    if path is None:  # a recorded run: the cassette the edit was checked on, written as a rerun's is
        assert parent.target is not None
        path = board.workspace.save_incident(parent.target, parent.cassette)
    job_id = board.new_id()
    child = board.workspace.children / f"fork-{job_id}.json"
    child.parent.mkdir(parents=True, exist_ok=True)
    asked: JsonObject = {
        "provider": provider,
        "model": model,
        "max_cost": None if max_cost is None else str(max_cost),
        "stubs": sorted(stubs),
        "step": edit.step,
        "change": change,
        "edit": described,
        "parent": parent.name,
        "parent_label": parent.label,
        "parent_job": None if parent.job is None or not parent.name.endswith("/child") else parent.job.id,
    }
    spec: JsonObject = {
        "parent": str(path),
        "child": str(child),
        "step": edit.step,
        "change": change,
        "value": text,
        "provider": provider,
        "model": model,
        "max_cost": asked["max_cost"],
        "stubs": stubs,
    }
    return board.start(job_id, "fork", asked, spec, target=parent.target, incident=path, child=child)


def change_text(form: Form) -> tuple[str, str]:
    """The change the form chose and its text as ``edit_from`` reads it: its own field
    ``value:<change>`` as typed (a message's spaces are its own), a tool's as NAME=JSON."""
    change = form_value(form, "change")
    if change not in CHANGES:
        raise BadForm(f"change {change[:30]!r}: one of {', '.join(CHANGES)}")
    text = (form.get(f"value:{change}") or [""])[-1]
    return change, f"{form_value(form, 'tool_name')}={text}" if change == "tool" else text


def lineage(board: JobBoard, job: Job) -> list[tuple[str | None, str]]:
    """A fork's chain of edits from the recorded run to ``job``, oldest first: (job id, what it
    changed); the first has no job (the run or cassette the chain started from)."""
    chain: list[tuple[str | None, str]] = []
    current: Job | None = job
    seen: set[str] = set()
    while current is not None and current.kind == "fork" and current.id not in seen:
        seen.add(current.id)
        asked = current.asked
        chain.append((current.id, f"step {asked.get('step')}: {asked.get('edit')}"))
        parent_job = asked.get("parent_job")
        before = board.get(str(parent_job)) if parent_job else None
        if before is None or before.kind != "fork":  # where the chain started: a run, a rerun's child
            chain.append((None, str(asked.get("parent_label") or asked.get("parent"))))
        current = before
    return list(reversed(chain))
