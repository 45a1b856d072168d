"""The workbench's HTML: the runs on the front page, the rerun form on a run's page, a job's page
(progress, verdict, diff), a contract to save, and the contracts page. Every value is escaped
(``html.escape``); the pages' scripts set text only. The ``data-testid`` hooks are a stable
interface for tests, ours and anyone's (docs/workbench.md lists them).
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence

from otel_blackbox._cassette.diff.report import DiffReport
from otel_blackbox._cassette.diff.text import format_diff
from otel_blackbox._cost.prices import Cost
from otel_blackbox._render.text import fmt_time
from otel_blackbox._store.runs import RunSummary
from otel_blackbox._types import JsonObject
from otel_blackbox._web.diff_html import DIFF_CSS, diff_block
from otel_blackbox._web.good_answers import KnownAnswer
from otel_blackbox._web.jobs import Job, failure_line
from otel_blackbox._web.workspace import StubField, Target

__all__ = [
    "BAR_CSS",
    "CSS",
    "event_line",
    "event_lines",
    "job_page",
    "rerun_panel",
    "runs_section",
    "shell",
]

e = html.escape

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fafafa}
h1{font-size:1.2em;margin:0 0 .6em}h2{font-size:1.05em;margin:1.2em 0 .4em}
nav{margin:0 0 1em}nav a{margin-right:1em}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{text-align:left;padding:.3em .6em;border-bottom:1px solid #e3e3e3;vertical-align:top}
th{background:#f0f0f0;font-weight:600}.ok,.pass,.done{color:#1a7f37}
.error,.fail,.failed{color:#cf222e;font-weight:600}.open,.running{color:#9a6700}
.mono,pre,textarea{font-family:ui-monospace,monospace;font-size:12px}
pre{white-space:pre-wrap;background:#f5f5f5;padding:.5em;border-radius:3px}
form.panel,.panel{background:#fff;border:1px solid #ddd;border-radius:4px;padding:.8em 1em;margin:.6em 0}
label{display:block;margin:.3em 0}label.inline{display:inline-block;margin-right:1em}
.hint{color:#666;font-size:12px}.note{color:#777}
.verdict{font-size:1.1em;font-weight:600;padding:.4em .6em;border-radius:3px;display:inline-block}
.verdict.good{background:#dafbe1;color:#1a7f37}.verdict.bad{background:#ffebe9;color:#cf222e}
.verdict.other{background:#fff8c5;color:#6f5400}button{padding:.3em .9em}
"""

BAR_CSS = """
#workbench{font:13px/1.4 system-ui,sans-serif;background:#fff;border-bottom:1px solid #ddd;padding:8px 16px}
#workbench nav a{margin-right:1em}#workbench form{display:flex;flex-wrap:wrap;gap:6px 14px;
align-items:flex-end;margin:6px 0 0}#workbench label{display:flex;flex-direction:column;font-size:12px}
#workbench input[type=text]{font:12px ui-monospace,monospace}
#workbench .hint{color:#666;font-size:11px;max-width:22em}#workbench .note{color:#777}
#workbench .blame{display:flex;gap:6px 14px;align-items:flex-end;border-left:1px solid #ddd;padding-left:14px}
"""

GOOD_VERDICTS = {"failure_fixed"}
BAD_VERDICTS = {"regression", "still_failing"}


def shell(title: str, body: str, *, script: str = "") -> str:
    """A whole page of the workbench: its nav, then ``body`` (HTML already escaped)."""
    nav = '<nav><a href="/">runs</a><a href="/contracts">contracts</a></nav>'
    tail = f"<script>{script}</script>" if script else ""
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>'
        f"<style>{CSS}{DIFF_CSS}</style></head><body>{nav}{body}{tail}</body></html>"
    )


def _hidden(token: str, **fields: str) -> str:
    pairs = {"token": token, **fields}
    return "".join(f'<input type="hidden" name="{e(k)}" value="{e(v)}">' for k, v in pairs.items())


def _provider_select(apis: Sequence[str], chosen: str | None, *, own: str | None = None) -> str:
    """The providers this process can reach; ``own``: the label of a first, empty choice (run all:
    each contract's own provider)."""
    if not apis:
        return (
            '<label>provider<select name="provider" disabled><option>none</option></select>'
            '<span class="hint">no provider: start ui with a key or a base URL in its environment '
            "(OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY, GEMINI_API_KEY...)</span></label>"
        )
    options = f'<option value="">{e(own)}</option>' if own else ""
    options += "".join(
        f'<option value="{e(api)}"{" selected" if api == chosen else ""}>{e(api)}</option>' for api in apis
    )
    return f'<label>provider<select name="provider">{options}</select></label>'


def _cost_field(value: str = "") -> str:
    return (
        f'<label>cost limit (USD)<input type="text" name="max_cost" size="8" value="{e(value)}" '
        'placeholder="no limit"></label>'
    )


def runs_section(found: list[RunSummary], costs: dict[str, Cost]) -> str:
    """The front page's runs: one ``run-row`` each (``data-status`` ok / error / open)."""
    rows = []
    for run in found:
        cost = costs.get(run.run_id)
        roots = ", ".join(run.root_names) + (f" +{run.more_root_names}" if run.more_root_names else "")
        rows.append(
            f'<tr data-testid="run-row" data-status="{e(run.status)}" data-run-id="{e(run.run_id)}">'
            f'<td><a class="mono" href="/run/{e(run.run_id)}">{e(run.run_id[:16])}</a></td>'
            f'<td class="{e(run.status)}">{e(run.status)}</td><td>{e(fmt_time(run.started_ns))}</td>'
            f"<td>{run.traces}</td><td>{run.spans}</td><td>{run.error_count}</td>"
            f"<td>{e('' if cost is None or cost.usd is None else cost.text())}</td><td>{e(roots)}</td></tr>"
        )
    if not rows:
        rows.append('<tr><td colspan="8">no runs recorded yet</td></tr>')
    head = "".join(
        f"<th>{h}</th>" for h in ("run", "status", "started", "traces", "spans", "errors", "cost", "roots")
    )
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    return f"<h2>Runs</h2>{table}<h2>Traces</h2>"


def rerun_panel(
    target: Target,
    status: str,
    fields: list[StubField],
    apis: Sequence[str],
    *,
    api: str | None,
    model: str | None,
    token: str,
    read_only: bool,
    jobs: list[Job],
    program: str | None,
    unusable: str | None = None,
    known: Mapping[str, KnownAnswer] | None = None,
) -> str:
    """The bar above a run's report: nav, its jobs, and on a failed (or killed) run the rerun form
    (``unusable``: why the built-in agent cannot follow it, instead). ``known``: a good answer
    recorded for a stub's tool, which its field is prefilled with."""
    parts = ['<section id="workbench"><nav><a href="/">runs</a><a href="/contracts">contracts</a></nav>']
    if jobs:
        links = ", ".join(
            f'<a href="/job/{e(j.id)}" class="{e(j.state)}">{e(j.id)} ({e(j.state)})</a>' for j in jobs
        )
        parts.append(f"<div>reruns of this {e(target.kind)}: {links}</div>")
    if status not in ("error", "open"):
        parts.append(
            f'<div class="note">this {e(target.kind)} did not fail: nothing to rerun</div></section>'
        )
        return _bar(parts)
    stubs = [_stub_field(stub, (known or {}).get(stub.tool)) for stub in fields]
    agent = (
        '<label>agent<span><input type="radio" name="agent" value="built-in" checked> built-in'
        f' <input type="radio" name="agent" value="program"{"" if program else " disabled"}> program</span>'
        + (
            f'<span class="hint">program: {e(program)} (its tools answered from the recording)</span>'
            if program
            else '<span class="hint">start ui with --program CMD to rerun the program</span>'
        )
        + "</label>"
    )
    disabled = " disabled" if read_only or not (apis or program) else ""
    note = '<span class="note">read-only: no rerun</span>' if read_only else ""
    parts.append(
        '<form method="post" action="/rerun" data-testid="rerun-form">'
        + _hidden(token, target_kind=target.kind, target_id=target.id)
        + _provider_select(apis, api)
        + f'<label>model<input type="text" name="model" value="{e(model or "")}" size="18"></label>'
        + _cost_field()
        + agent
        + "".join(stubs)
        + f'<button type="submit" data-testid="rerun-submit"{disabled}>Rerun</button>{note}'
        # Blame: the same form's provider, model, cost limit and stubs, sent to /blame instead.
        + '<span data-testid="blame-form" class="blame">'
        + '<label>samples a point<input type="text" name="samples" value="2" size="3"></label>'
        + '<label>at most<input type="text" name="max_branches" size="4" placeholder="branches"></label>'
        + f'<button type="submit" formaction="/blame" data-testid="blame-submit"{disabled}>Blame</button>'
        + '<span class="hint">which step made it fail: branches from its steps, rerun with the '
        "provider, model, cost limit and stubs here</span></span></form></section>"
    )
    return _bar(parts)


WRITE_ANSWER = "write the answer the tool should have given"


def _stub_field(stub: StubField, known: KnownAnswer | None) -> str:
    """A ``stub:TOOL`` field. Prefilled only with an answer the tool gave (``known``); a failing
    tool's field is otherwise empty and required: the browser refuses the form until it is written.
    The failing call's arguments are a hint, never the value (they are no answer)."""
    asked = "" if stub.asked is None else json.dumps(stub.asked, ensure_ascii=False)
    name = f"stub:{stub.tool}"
    if known is not None:
        value = json.dumps(known.value, ensure_ascii=False)
        hint = f"a good answer of {stub.tool}, from {known.source}: check it fits"
        attrs, state = f'value="{e(value)}" placeholder="{e(WRITE_ANSWER)}"', "known"
    elif stub.failed:
        hint = f"{WRITE_ANSWER} (JSON: a string in quotes); the failing call asked: {asked}"
        attrs, state = f'value="" placeholder="{e(WRITE_ANSWER)}" required', "write"
    else:
        hint = "never answered in the incident"
        attrs, state = 'value="" placeholder="blank: no stub"', "optional"
    return (
        f'<label>{e(name)}<input type="text" name="{e(name)}" size="36" {attrs} '
        f'data-stub="{state}" title="{e(hint)}"><span class="hint">{e(hint)}</span></label>'
    )


def _disabled(off: bool) -> str:
    return " disabled" if off else ""


def _bar(parts: list[str]) -> str:
    return "".join(parts)


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
    what = f"rerun of {job.target.label}" if job.target is not None else "run of every contract"
    if job.kind == "blame" and job.target is not None:
        what = f"blame of {job.target.label}, {asked.get('samples')} samples a point,"
    if asked.get("program"):
        return f"{what} by the program {asked['program']} (model {model}){cost}"
    return f"{what} on {asked.get('provider') or 'the incident’s provider'} (model {model}){cost}{stub}"


def _contract_results(events: list[JsonObject]) -> str:
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
        ("incident", outcome.parent_label + (f": {outcome.parent_result}" if outcome.parent_result else "")),
        ("child", outcome.child_label + (f": {outcome.child_result}" if outcome.child_result else "")),
        ("first divergence", divergence),
        ("cost", f"child {child_cost} (incident {parent_cost})"),
    ]
    table = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in rows)
    links = f'<a href="/job/{e(job.id)}/child">the child</a> · '
    links += f'<a href="/job/{e(job.id)}/incident">the incident</a>'
    if job.target is not None:
        links += f' · <a href="{e(job.target.path)}">the recorded {e(job.target.kind)}</a>'
    return (
        f'<p><span class="verdict {tone}" data-testid="verdict" data-kind="{e(outcome.kind)}">'
        f"{e(outcome.verdict)}</span></p><table>{table}</table><p>{links}</p>"
        f"<h2>Diff</h2>{diff_block(format_diff(report))}"
    )


def job_page(
    job: Job, report: DiffReport | None, *, token: str, read_only: bool, child_completed: bool
) -> str:
    """A job: what it was asked, its progress as it happens, then its verdict and diff, or why it failed."""
    record = job.record()
    lines = "".join(f"<li>{e(line)}</li>" for line in event_lines(record["events"]))
    parts = [
        f'<div data-testid="job" data-state="{e(job.state)}" data-job-id="{e(job.id)}">',
        f"<h1>{e(_asked_line(job))}</h1>",
        f'<p>job {e(job.id)}: <span class="{e(job.state)}" id="state">{e(job.state)}</span> '
        f'<span id="seconds">{job.seconds:.1f} s</span></p>',
        f'<ol id="events">{lines}</ol>',
    ]
    if job.state == "running":
        parts.append(
            f'<form method="post" action="/job/{e(job.id)}/cancel">{_hidden(token)}'
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
        if child_completed:
            parts.append(
                f'<p><a data-testid="generate-contract" href="/job/{e(job.id)}/contract">'
                "Generate contract</a> "
                '<span class="hint">from this child: the assertions a good run holds</span></p>'
            )
    parts.append(_contract_results(record["events"]))
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
