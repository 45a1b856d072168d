"""The workbench's contract pages: a contract generated from a good child, to keep assertions of and
save, and the suite's page (every saved contract, and Run all). Escaped as the other pages are.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from otel_blackbox._cassette.evals import AssertionResult
from otel_blackbox._cassette.suite import Suite
from otel_blackbox._web.job_pages import contract_results
from otel_blackbox._web.jobs import Job
from otel_blackbox._web.workbench_pages import cost_field, e, hidden_field, provider_select, shell

__all__ = ["contract_page", "contracts_page"]


def _assertion_item(i: int, result: AssertionResult) -> str:
    """One assertion with its box: ticked, unless it is a proposal (marked, for a person to tick)."""
    proposed = ' data-proposed="true"' if result.proposed else ""
    checked = "" if result.proposed else " checked"
    mark = '<mark data-testid="proposed">proposed</mark> ' if result.proposed else ""
    return (
        f'<li data-testid="assertion"{proposed}><label class="inline">'
        f'<input type="checkbox" name="keep" value="{i}"{checked}> {mark}{e(result.description)}</label></li>'
    )


def contract_page(
    job: Job, results: list[AssertionResult], name: str, folder: Path, *, token: str, read_only: bool
) -> str:
    """The contract a good child would hold: each assertion with a box to keep it, and Save. A
    proposal (a guess from the child's answer) is marked and left unticked: ticked, it is kept as
    the person's own (saved without the mark); unticked, dropped."""
    items = "".join(_assertion_item(i, result) for i, result in enumerate(results))
    proposals = sum(r.proposed for r in results)
    note = (
        f'<p class="note" data-testid="proposals">{proposals} proposed from the child\'s answer (its '
        "JSON keys and their types): tick one to keep it as your own, leave it unticked to drop it</p>"
        if proposals
        else ""
    )
    disabled = " disabled" if read_only else ""
    body = (
        f"<h1>Contract from job {e(job.id)}</h1>"
        f'<p class="note">saved in {e(str(folder))} with its incident, for the contracts page and '
        f"<code>otel-blackbox eval run-all {e(str(folder))}</code></p>"
        + note
        + '<form method="post" action="/contracts/save" class="panel" data-testid="contract">'
        + hidden_field(token, job=job.id)
        + f'<label>name<input type="text" name="name" value="{e(name)}" size="40"></label>'
        + f"<ol>{items}</ol>"
        + f'<button type="submit" data-testid="save-contract"{disabled}>Save contract</button></form>'
    )
    return shell(f"contract from job {job.id}", body)


def contracts_page(
    suite: Suite,
    folder: Path,
    apis: Sequence[str],
    *,
    token: str,
    read_only: bool,
    last_run: Job | None,
    problem: str | None = None,
) -> str:
    """Every saved contract with its incident, and Run all (each incident rerun, each contract checked);
    a broken entry is listed with why, and Run all runs the others."""
    entries = suite.entries
    rows = "".join(
        f'<tr data-testid="saved-contract" data-name="{e(entry.name)}"><td>{e(entry.name)}</td>'
        f'<td class="mono">{e(entry.incident.name)}</td><td>{len(entry.contract.get("assertions", []))}</td>'
        f"<td>{e(str((entry.contract.get('rerun') or {}).get('model') or ''))}</td></tr>"
        for entry in entries
    ) + "".join(
        f'<tr data-testid="broken-contract" data-name="{e(entry.name)}"><td>{e(entry.name)}</td>'
        f'<td colspan="3"><span class="failed">BROKEN</span> {e(entry.reason)}</td></tr>'
        for entry in suite.broken
    )
    if suite.broken:
        count = len(suite.broken)
        broken = f"{count} entry of the suite is broken" if count == 1 else f"{count} entries are broken"
        problem = f"{problem}; {broken}" if problem else f"{broken}: listed below, left out of Run all"
    if not rows:
        rows = '<tr><td colspan="4">no contract saved yet: generate one from a good rerun</td></tr>'
    disabled = " disabled" if read_only or not apis or not entries else ""
    body = (
        f'<h1>Contracts <span class="mono">{e(str(folder))}</span></h1>'
        + (f'<p class="failed" data-testid="problem">{e(problem)}</p>' if problem else "")
        + "<table><thead><tr><th>contract</th><th>incident</th><th>assertions</th>"
        + "<th>its model</th></tr></thead>"
        + f"<tbody>{rows}</tbody></table>"
        + '<form method="post" action="/contracts/run-all" class="panel">'
        + hidden_field(token)
        + provider_select(apis, None, own="each contract's own")
        + '<label>model<input type="text" name="model" size="18" placeholder="each contract\'s own"></label>'
        + cost_field()
        + f'<button type="submit" data-testid="run-all"{disabled}>Run all</button>'
        + ('<span class="note"> read-only</span>' if read_only else "")
        + "</form>"
    )
    if last_run is not None:
        state = last_run.state
        body += (
            f'<p>last run: <a href="/job/{e(last_run.id)}">{e(last_run.id)}</a> '
            f'<span class="{e(state)}">{e(state)}</span></p>' + contract_results(last_run.record()["events"])
        )
    return shell("contracts", body)
