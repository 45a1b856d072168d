"""A job's page in the workbench: what it was asked, its progress as it happens (the same lines
``/api/job/<id>`` gives its polling script), then its verdict and diff, a blame's decisive step, a
run of every contract's results, or why it failed. Escaped as the other pages are
(``workbench_pages.py``: the shell and the form fields they share).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from otel_blackbox._cassette.diff.report import DiffReport
from otel_blackbox._cassette.diff.text import format_diff
from otel_blackbox._types import JsonObject
from otel_blackbox._web.diff_html import diff_block
from otel_blackbox._web.jobs import Job, failure_line
from otel_blackbox._web.workbench_pages import e, hidden_field, shell

__all__ = ["contract_results", "event_line", "event_lines", "job_page"]

# A verdict's colour: a fix is good news, a regression or a failure that stays is bad, the rest neither.
GOOD_VERDICTS = {"failure_fixed"}
BAD_VERDICTS = {"regression", "still_failing"}


def _disabled(off: bool) -> str:
    return " disabled" if off else ""


def event_line(event: JsonObject, before: Sequence[JsonObject] = ()) -> str:
    """One event of a job, as its page shows it; ``before``: the events that came before it (what
    a failure line says had run)."""
    kind = event.get("event")
    if kind == "model_call":
        return f"model call {event.get('call')} ({event.get('model')})…"
    if kind == "model_output":
        tools = event.get("tools") or []
        said = (
            f"calls {', '.join(map(str, tools))}"
            if tools
            else f"answers: {str(event.get('text') or '')[:160]}"
        )
        return f"model call {event.get('call')} {said}"
    if kind == "tool_answer":
        source = "your stub" if event.get("from") == "stub" else "the incident's recording"
        error = " (an error)" if event.get("error") else ""
        return f"{event.get('tool')} answered from {source}{error}"
    if kind == "contract_start":
        on = _on(event.get("provider"), event.get("model"), "its contract's own")
        return f"contract {event.get('name')}: rerunning its incident {on}"
    if kind == "contract_result":
        verdict = "pass" if event.get("passed") else "broken, not run" if event.get("broken") else "fail"
        return f"contract {event.get('name')}: {verdict}"
    if kind == "branch":
        return str(event.get("line", "")).removeprefix("[blackbox] ")
    if kind == "blame":
        decisive = (event.get("report") or {}).get("decisive")
        return f"decisive step: {decisive['index']} {decisive['type']}" if decisive else "no step found"
    if kind == "error":
        return failure_line(list(before), str(event.get("message")))
    if kind == "end":
        return f"ended (exit code {event.get('exit')})"
    return str(kind)


def event_lines(events: Sequence[JsonObject]) -> list[str]:
    """A job's events as its page lists them (its ``end`` left out)."""
    return [event_line(ev, events[:i]) for i, ev in enumerate(events) if ev.get("event") != "end"]


def _on(provider: object, model: object, own: str) -> str:
    """``on openai-chat, model thorough``; what was not given: ``own`` (its contract's own)."""
    where = str(provider) if provider else f"{own} provider"
    return f"on {where}, model {model}" if model else f"on {where}, {own} model"


def _asked_line(job: Job) -> str:
    asked = job.asked
    cost = f", cost limit ${asked['max_cost']}" if asked.get("max_cost") else ""
    stubs = asked.get("stubs") or []
    stub = f", stubs: {', '.join(stubs)}" if stubs else ""
    if job.kind == "run-all":  # each contract's rerun block chose what the form left blank
        on = _on(asked.get("provider"), asked.get("model"), "each contract’s own")
        return f"run of every contract {on}{cost}"
    model = asked.get("model") or "the incident's model"
    if job.kind == "fork":
        what = f"edit of {asked.get('parent_label')} at step {asked.get('step')} ({asked.get('edit')})"
        return f"{what}, continued on {asked.get('provider')} (model {model}){cost}{stub}"
    what = f"rerun of {job.target.label}" if job.target is not None else "run of every contract"
    if job.kind == "blame" and job.target is not None:
        what = f"blame of {job.target.label}, {asked.get('samples')} samples a point,"
    if asked.get("program"):
        return f"{what} by the program {asked['program']} (model {model}){cost}"
    return f"{what} on {asked.get('provider') or 'the incident’s provider'} (model {model}){cost}{stub}"


def contract_results(events: list[JsonObject]) -> str:
    rows = []
    for event in events:
        if event.get("event") != "contract_result":
            continue
        state = "pass" if event.get("passed") else "broken" if event.get("broken") else "fail"
        bad = [a for a in event.get("assertions") or [] if not a.get("passed")]
        details = "".join(
            f"<li>✗ {e(str(a.get('description')))}: {e(str(a.get('detail')))}</li>" for a in bad
        )
        if event.get("broken"):
            details += f"<li>not run: {e(str(event['broken']))}</li>"
        if event.get("stopped"):
            details += f"<li>the rerun stopped short: {e(str(event['stopped']))}</li>"
        total = len(event.get("assertions") or [])
        css = "pass" if state == "pass" else "fail"
        rows.append(
            f'<tr data-testid="contract-result" data-state="{state}" data-name="{e(str(event.get("name")))}">'
            f'<td>{e(str(event.get("name")))}</td><td class="{css}">{state.upper()}</td>'
            f"<td>{total - len(bad)}/{total}</td><td><ul>{details}</ul></td></tr>"
        )
    if not rows:
        return ""
    return (
        "<h2>Contracts</h2><table><thead><tr><th>contract</th><th>result</th><th>assertions</th>"
        f"<th>failing</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _blame_report(events: list[JsonObject]) -> str:
    """A blame job's answer: the decisive step (or why none), and the rate of every point measured."""
    report = next((ev.get("report") for ev in events if ev.get("event") == "blame"), None)
    if not isinstance(report, dict):
        return ""
    decisive = report.get("decisive")
    if decisive:
        head = (
            f'<p class="verdict bad" data-testid="blame-decisive" data-index="{e(str(decisive["index"]))}">'
            f"decisive step {e(str(decisive['index']))} ({e(str(decisive['type']))}): "
            f"{e(str(decisive.get('description', '')))}</p>"
        )
        if decisive.get("instead"):
            head += f"<p>a successful branch did instead: {e(str(decisive['instead']))}</p>"
    else:
        reason = e(str(report.get("reason")))
        head = f'<p class="verdict other" data-testid="blame-decisive">no step found: {reason}</p>'
    rows = "".join(
        f'<tr data-testid="blame-point" data-index="{int(b["from_index"])}"><td>{int(b["from_index"])}</td>'
        f"<td>{e(str(b['type']))}</td><td>{b['successes']}/{b['samples']}</td><td>{b['unanswerable']}</td></tr>"
        for b in sorted(report.get("branches") or [], key=lambda b: int(b["from_index"]))
    )
    summary = (
        f"{report.get('decisionPoints')} decision points; {report.get('branchCount')} branches, "
        f"{report.get('modelCalls')} model calls"
        + (f"; stopped: {report['stopped']}" if report.get("stopped") else "")
    )
    return (
        f"<h2>Blame</h2>{head}<p>{e(summary)}</p><table><thead><tr><th>step</th><th>type</th>"
        f"<th>succeeded</th><th>unanswerable</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _verdict(report: DiffReport, job: Job) -> str:
    parent = "parent" if job.kind == "fork" else "incident"
    outcome = report.outcome
    tone = "good" if outcome.kind in GOOD_VERDICTS else "bad" if outcome.kind in BAD_VERDICTS else "other"
    parent_cost = "unpriced" if report.parent_cost is None else report.parent_cost.describe()
    child_cost = "unpriced" if report.child_cost is None else report.child_cost.describe()
    divergence = (
        "none: the child repeats the incident step for step"
        if report.index is None
        else f"step {report.index} ({report.shared_prefix} steps shared)"
    )
    rows = [
        (parent, outcome.parent_label + (f": {outcome.parent_result}" if outcome.parent_result else "")),
        ("child", outcome.child_label + (f": {outcome.child_result}" if outcome.child_result else "")),
        ("first divergence", divergence),
        ("cost", f"child {child_cost} ({parent} {parent_cost})"),
    ]
    table = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in rows)
    links = f'<a href="/job/{e(job.id)}/child" data-testid="child-link">the child</a> '
    links += '<span class="hint">(edit any step of it and continue)</span> · '
    links += f'<a href="/job/{e(job.id)}/incident" data-testid="parent-link">the {parent}</a>'
    if job.target is not None:
        links += f' · <a href="{e(job.target.path)}">the recorded {e(job.target.kind)}</a>'
    return (
        f'<p><span class="verdict {tone}" data-testid="verdict" data-kind="{e(outcome.kind)}">'
        f"{e(outcome.verdict)}</span></p><table>{table}</table><p>{links}</p>"
        f"<h2>Diff</h2>{diff_block(format_diff(report))}"
    )


def _lineage(chain: Sequence[tuple[str | None, str]]) -> str:
    """A fork's chain of edits, from the run it started from to this job: each a link to its job."""
    if not chain:
        return ""
    items = "".join(
        f"<li>{e(what)}</li>" if job_id is None
        else f'<li><a href="/job/{e(job_id)}">job {e(job_id)}</a>: edited at {e(what)}</li>'
        for job_id, what in chain
    )  # fmt: skip
    return f'<ol data-testid="lineage" class="lineage">{items}</ol>'


def job_page(
    job: Job,
    report: DiffReport | None,
    *,
    token: str,
    read_only: bool,
    child_completed: bool,
    chain: Sequence[tuple[str | None, str]] = (),
) -> str:
    """A job: what it was asked, its progress as it happens, then its verdict and diff, or why it failed.
    ``chain``: a fork's lineage, oldest first (``fork_action.lineage``)."""
    record = job.record()
    lines = "".join(f"<li>{e(line)}</li>" for line in event_lines(record["events"]))
    parts = [
        f'<div data-testid="job" data-state="{e(job.state)}" data-job-id="{e(job.id)}">',
        f"<h1>{e(_asked_line(job))}</h1>",
        _lineage(chain),
        f'<p>job {e(job.id)}: <span class="{e(job.state)}" id="state">{e(job.state)}</span> '
        f'<span id="seconds">{job.seconds:.1f} s</span></p>',
        f'<ol id="events">{lines}</ol>',
    ]
    if job.state == "running":
        parts.append(
            f'<form method="post" action="/job/{e(job.id)}/cancel">{hidden_field(token)}'
            f'<button type="submit" data-testid="cancel"{_disabled(read_only)}>Cancel</button></form>'
        )
    if job.state == "failed":
        parts.append(f'<p class="failed" data-testid="job-error">{e(job.message or "failed")}</p>')
        if job.child is not None and job.child.is_file():
            parts.append(
                f'<p><a href="/job/{e(job.id)}/child">what the rerun recorded before it ended</a></p>'
            )
    if report is not None:
        parts.append(_verdict(report, job))
        if child_completed and job.kind == "rerun":  # a contract is saved with its incident
            parts.append(
                f'<p><a data-testid="generate-contract" href="/job/{e(job.id)}/contract">'
                "Generate contract</a> "
                '<span class="hint">from this child: the assertions a good run holds</span></p>'
            )
    parts.append(contract_results(record["events"]))
    parts.append(_blame_report(record["events"]))
    if job.log:
        parts.append(f'<details{" open" if job.state == "failed" else ""}><summary>log</summary>'
                     f'<pre id="log">{e(chr(10).join(job.log))}</pre></details>')  # fmt: skip
    parts.append("</div>")
    script = _POLL % json.dumps(f"/api/job/{job.id}") if job.state == "running" else ""
    return shell(f"job {job.id}", "".join(parts), script=script)


# While a job runs its page asks for its lines; when it ends, the page is drawn again with the verdict.
_POLL = """
(function(){var url=%s,list=document.getElementById('events'),secs=document.getElementById('seconds');
function tick(){fetch(url,{cache:'no-store'}).then(function(r){return r.json();}).then(function(d){
  if(d.state!=='running'){location.reload();return;}
  while(list.children.length<d.lines.length){var li=document.createElement('li');
    li.textContent=d.lines[list.children.length];list.appendChild(li);}
  secs.textContent=d.seconds.toFixed(1)+' s';setTimeout(tick,250);
}).catch(function(){setTimeout(tick,1000);});}
setTimeout(tick,250);})();
"""
