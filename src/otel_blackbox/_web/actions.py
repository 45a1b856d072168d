"""What the workbench's forms do, each the same function the CLI calls: a rerun by the built-in agent
(``rerun``), a contract from a good child (``eval generate``) saved with its incident, every saved
contract run (``eval run-all``). A form is checked whole before anything starts: a bad field is one
line (``BadForm``, answered 400) and no job, no file.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from otel_blackbox._cassette.diff.report import DiffReport, diff_cassettes
from otel_blackbox._cassette.evals import AssertionResult, generate_contract, run_contract
from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.model import terminal_outcome
from otel_blackbox._cassette.suite import SuiteEntry, load_suite, save_entry, stubs_of, with_rerun
from otel_blackbox._cassette.trusted import checked_cassette
from otel_blackbox._playback.agent.incident import Incident
from otel_blackbox._types import JsonObject
from otel_blackbox._web.jobs import CHILD_JOBS, Job, JobBoard
from otel_blackbox._web.workspace import Target, Workspace, incident_of, stub_fields
from otel_blackbox.errors import BlackboxError

__all__ = [
    "BadForm",
    "Form",
    "RerunForm",
    "child_contract",
    "form_value",
    "job_verdict",
    "max_cost_field",
    "model_field",
    "provider_field",
    "read_rerun_form",
    "read_stubs",
    "save_contract",
    "start_blame",
    "start_rerun",
    "start_run_all",
]

MAX_MODEL_NAME = 200
_MODEL = re.compile(r"^[\w.:/@+-]+$")  # what a provider's model names are made of


class BadForm(Exception):
    """A form field that cannot be used: 400, with this one line, and nothing started."""


Form = Mapping[str, list[str]]


def form_value(form: Form, name: str, default: str = "") -> str:
    values = form.get(name) or [default]
    return values[-1].strip()


def provider_field(form: Form, apis: list[str]) -> str:
    provider = form_value(form, "provider")
    if provider not in apis:
        offered = ", ".join(apis) or "none: start ui with a key or a base URL in its environment"
        raise BadForm(f"provider {provider or '(none)'!r} is not available here (available: {offered})")
    return provider


def model_field(form: Form, *, required: bool) -> str | None:
    model = form_value(form, "model")
    if not model:
        if required:
            raise BadForm("give a model name")
        return None
    if len(model) > MAX_MODEL_NAME or not _MODEL.match(model):
        raise BadForm(f"model {model[:60]!r}: not a model name (letters, digits and . : / @ + - _)")
    return model


def max_cost_field(form: Form, model: str | None, api: str) -> Decimal | None:
    text = form_value(form, "max_cost")
    if not text:
        return None
    from otel_blackbox._playback.budget import parse_usd, unpriced  # genai-prices: when a limit is given

    try:
        amount = parse_usd(text)
    except ValueError as exc:
        raise BadForm(f"cost limit: {exc}") from None
    if model is not None and (refused := unpriced(model, api)) is not None:
        raise BadForm(f"cost limit: {refused}")
    return amount


@dataclass(frozen=True)
class RerunForm:
    target: Target
    provider: str
    model: str
    max_cost: Decimal | None
    stubs: dict[str, Any]
    program: list[str] | None = None  # the program ui was started with, when the form chose it


def read_rerun_form(
    form: Form, target: Target, spans: list[Any], apis: list[str], program: list[str] | None = None
) -> RerunForm:
    """The rerun form, checked against the incident (its tools, its model) before anything starts.
    ``program``: the one ``ui --program`` names, which the form may choose instead of the built-in
    agent (its tools then answered from the recording, as ``rerun --stub-tools -- CMD`` does)."""
    agent = form_value(form, "agent", "built-in")
    if agent not in ("built-in", "program") or (agent == "program" and program is None):
        raise BadForm(
            f"agent {agent!r}: the built-in agent only (start ui with --program CMD to rerun a program)"
        )
    incident = incident_of(spans, target)
    model = model_field(form, required=False) or incident.model
    if not model:
        raise BadForm("the incident names no model: give a model name")
    if agent == "program":  # its own provider and base URL; its tools answered from the recording
        max_cost = max_cost_field(form, model, incident.api or "")
        return RerunForm(target, "program", model, max_cost, {}, program)
    provider = provider_field(form, apis)
    max_cost = max_cost_field(form, model, provider)
    return RerunForm(target, provider, model, max_cost, read_stubs(form, incident))


def read_stubs(form: Form, incident: Incident) -> dict[str, Any]:
    """The ``stub:TOOL`` fields written: each a tool the incident offered, its answer JSON."""
    offered = incident.offered_tools()
    # A failing call's arguments are no answer: the rerun would fail the same way.
    asked = {f.tool: f.asked for f in stub_fields(incident) if f.failed and f.asked is not None}
    stubs: dict[str, Any] = {}
    for key, values in form.items():
        if not key.startswith("stub:"):
            continue
        name, text = key.removeprefix("stub:"), values[-1].strip()
        if not text:
            continue
        if name not in offered:
            raise BadForm(f"stub {name}: the incident never offered a tool of that name")
        try:
            stubs[name] = json.loads(text)
        except ValueError:
            raise BadForm(f'stub {name}: {text[:60]!r} is not JSON (quote a string: "text")') from None
        if name in asked and stubs[name] == asked[name]:
            raise BadForm(
                f"stub {name}: that is what the failing call asked, not an answer: write the answer "
                "the tool should have given"
            )
    return stubs


def start_rerun(board: JobBoard, form: RerunForm, spans: list[Any]) -> Job:
    """The incident written, then its rerun started as a job; CassetteError (400) when the spans make
    a cassette no replay could play."""
    workspace = board.workspace
    incident, _ = workspace.write_incident(form.target, spans)
    asked: JsonObject = {
        "provider": form.provider,
        "model": form.model,
        "max_cost": None if form.max_cost is None else str(form.max_cost),
        "stubs": sorted(form.stubs),
        "program": None if form.program is None else shlex.join(form.program),
    }
    job_id = board.new_id()
    child = workspace.children / f"{form.target.kind}-{form.target.id[:16]}-{job_id}.json"
    child.parent.mkdir(parents=True, exist_ok=True)
    spec: JsonObject = {
        "incident": str(incident),
        "child": str(child),
        "provider": form.provider,
        "model": form.model,
        "max_cost": asked["max_cost"],
        "stubs": form.stubs,
        "program": form.program,
    }
    return board.start(job_id, "rerun", asked, spec, target=form.target, incident=incident, child=child)


MAX_SAMPLES = 10


def start_blame(board: JobBoard, form: Form, target: Target, spans: list[Any], apis: list[str]) -> Job:
    """``blame`` of the run as a job: the rerun form's provider, model, cost limit and stubs, and
    the samples a point (1-10) and a branch limit."""
    asked_form = read_rerun_form(form, target, spans, apis)
    samples = _number(form, "samples", 2, MAX_SAMPLES)
    max_branches = _number(form, "max_branches", None, 500)
    workspace = board.workspace
    incident, _ = workspace.write_incident(target, spans)
    job_id = board.new_id()
    asked: JsonObject = {
        "provider": asked_form.provider,
        "model": asked_form.model,
        "max_cost": None if asked_form.max_cost is None else str(asked_form.max_cost),
        "stubs": sorted(asked_form.stubs),
        "samples": samples,
        "max_branches": max_branches,
    }
    spec: JsonObject = {**asked, "stubs": asked_form.stubs, "incident": str(incident),
                        "children": str(workspace.children / f"blame-{job_id}")}  # fmt: skip
    return board.start(job_id, "blame", asked, spec, target=target, incident=incident)


def _number(form: Form, name: str, default: int | None, most: int) -> int | None:
    text = form_value(form, name)
    if not text:
        return default
    if not text.isdigit() or not 1 <= int(text) <= most:
        raise BadForm(f"{name}: a whole number from 1 to {most}, not {text[:20]!r}")
    return int(text)


def start_run_all(board: JobBoard, form: Form, apis: list[str]) -> Job:
    """Every saved contract's incident rerun and its contract checked, as one job."""
    workspace = board.workspace
    try:
        suite = load_suite(workspace.contracts)
    except BlackboxError as exc:
        raise BadForm(str(exc)) from None
    entries = suite.entries  # a broken entry is listed on the contracts page; the others run
    if not entries:
        raise BadForm(f"no contract can run: {len(suite.broken)} broken (the contracts page says why)")
    # blank: each contract's own provider
    provider = provider_field(form, apis) if form_value(form, "provider") else None
    model = model_field(form, required=False)
    max_cost = max_cost_field(form, model, provider or "")
    asked: JsonObject = {
        "provider": provider,
        "model": model,
        "max_cost": None if max_cost is None else str(max_cost),
        "contracts": [entry.name for entry in entries],
        "broken": [entry.name for entry in suite.broken],
    }
    job_id = board.new_id()
    spec: JsonObject = {
        **asked,
        "folder": str(workspace.contracts),
        "children": str(workspace.children / job_id),
    }
    return board.start(job_id, "run-all", asked, spec)


def job_verdict(job: Job) -> tuple[DiffReport | None, bool]:
    """A finished rerun's (or fork's) diff against its incident (parent), and whether its child
    completed."""
    if job.kind not in CHILD_JOBS or job.state != "done" or job.child is None or job.incident is None:
        return None, False
    child = checked_cassette(job.child)  # a broken one (edited by hand): 400, with its line
    return diff_cassettes(checked_cassette(job.incident), child), terminal_outcome(child).status == "success"


def child_contract(job: Job) -> tuple[JsonObject, list[AssertionResult]]:
    """The contract a done job's child holds, with each assertion's result on it (its description,
    and whether it is a proposal)."""
    if job.kind != "rerun" or job.state != "done" or job.child is None:
        raise BadForm(f"job {job.id} has no finished rerun to derive a contract from")
    child = checked_cassette(job.child)
    if terminal_outcome(child).status != "success":
        raise BadForm(f"job {job.id}: its child did not complete: a contract comes from a good run")
    contract = generate_contract(child)
    return contract, run_contract(contract, child)


def save_contract(workspace: Workspace, job: Job, form: Form) -> SuiteEntry:
    """The kept assertions of the child's contract, saved with the incident (and the stubs, model and
    provider the child ran with, for run-all)."""
    contract, _ = child_contract(job)
    assertions = contract["assertions"]
    try:
        keep = sorted({int(v) for v in form.get("keep", [])})
    except ValueError:
        raise BadForm("keep: assertion numbers only") from None
    if not keep:
        raise BadForm("keep at least one assertion")
    if keep[-1] >= len(assertions) or keep[0] < 0:
        raise BadForm(f"keep: this contract has {len(assertions)} assertions, numbered from 0")
    name = form_value(form, "name")
    assert job.child is not None and job.incident is not None
    child = load_cassette(job.child)
    # A proposal kept is the person's own assertion: saved without the mark.
    chosen = [{k: v for k, v in assertions[i].items() if k != "proposed"} for i in keep]
    kept = {**contract, "name": name, "assertions": chosen}
    # A program's child ran on the program's own provider: run all reruns it on the incident's.
    provider = None if job.asked.get("program") else job.asked.get("provider")
    kept = with_rerun(kept, stubs=stubs_of(child), model=job.asked.get("model"), provider=provider)
    try:
        return save_entry(workspace.contracts, name, job.incident, kept)
    except (ValueError, BlackboxError) as exc:
        raise BadForm(str(exc)) from None
