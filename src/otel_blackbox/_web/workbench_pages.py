"""The workbench's HTML shared by its pages and the bar over a recorded run or trace: the page's
shell and style, the runs on the front page, the rerun and blame form on a run's or trace's report,
and the form fields the other pages reuse (the job's page: ``job_pages.py``; the contracts':
``contract_pages.py``). Every value is escaped (``html.escape``); the pages' scripts set text only.
The ``data-testid`` hooks are a stable interface for tests, ours and anyone's (docs/workbench.md
lists them).
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence

from otel_blackbox._cost.prices import Cost
from otel_blackbox._render.text import fmt_time
from otel_blackbox._store.runs import RunSummary
from otel_blackbox._web.diff_html import DIFF_CSS
from otel_blackbox._web.good_answers import KnownAnswer
from otel_blackbox._web.jobs import Job
from otel_blackbox._web.workspace import StubField, Target

__all__ = [
    "BAR_CSS",
    "CSS",
    "cost_field",
    "hidden_field",
    "provider_select",
    "rerun_panel",
    "runs_section",
    "shell",
    "stub_field",
    "under_bar",
    "workbench_bar",
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


def shell(title: str, body: str, *, script: str = "") -> str:
    """A whole page of the workbench: its nav, then ``body`` (HTML already escaped)."""
    nav = '<nav><a href="/">runs</a><a href="/contracts">contracts</a></nav>'
    tail = f"<script>{script}</script>" if script else ""
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>'
        f"<style>{CSS}{DIFF_CSS}</style></head><body>{nav}{body}{tail}</body></html>"
    )


def hidden_field(token: str, **fields: str) -> str:
    pairs = {"token": token, **fields}
    return "".join(f'<input type="hidden" name="{e(k)}" value="{e(v)}">' for k, v in pairs.items())


def provider_select(apis: Sequence[str], chosen: str | None, *, own: str | None = None) -> str:
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


def cost_field(value: str = "") -> str:
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
    parts = ['<section id="workbench"><nav><a href="/">runs</a><a href="/contracts">contracts</a>']
    if unusable is None:  # a run the built-in agent can follow: any of its steps can be changed
        parts.append(f'<a href="{e(target.path)}/steps" data-testid="edit-steps">Edit and continue '
                     "from a step</a>")  # fmt: skip
    parts.append("</nav>")
    if jobs:
        links = ", ".join(
            f'<a href="/job/{e(j.id)}" class="{e(j.state)}">{e(j.kind)} {e(j.id)} ({e(j.state)})</a>'
            for j in jobs
        )
        parts.append(f"<div>jobs of this {e(target.kind)}: {links}</div>")
    if status not in ("error", "open"):
        parts.append(
            f'<div class="note">this {e(target.kind)} did not fail: nothing to rerun</div></section>'
        )
        return _bar(parts)
    stubs = [stub_field(stub, (known or {}).get(stub.tool)) for stub in fields]
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
        + hidden_field(token, target_kind=target.kind, target_id=target.id)
        + provider_select(apis, api)
        + f'<label>model<input type="text" name="model" value="{e(model or "")}" size="18"></label>'
        + cost_field()
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


def stub_field(stub: StubField, known: KnownAnswer | None, *, required: bool = True) -> str:
    """A ``stub:TOOL`` field. Prefilled only with an answer the tool gave (``known``); a failing
    tool's field is otherwise empty and ``required``: the browser refuses the form until it is
    written (an edit's form leaves it optional: the edit may be the fix). The failing call's
    arguments are a hint, never the value (they are no answer)."""
    asked = "" if stub.asked is None else json.dumps(stub.asked, ensure_ascii=False)
    name = f"stub:{stub.tool}"
    if known is not None:
        value = json.dumps(known.value, ensure_ascii=False)
        hint = f"a good answer of {stub.tool}, from {known.source}: check it fits"
        attrs, state = f'value="{e(value)}" placeholder="{e(WRITE_ANSWER)}"', "known"
    elif stub.failed:
        hint = f"{WRITE_ANSWER} (JSON: a string in quotes); the failing call asked: {asked}"
        attrs, state = f'value="" placeholder="{e(WRITE_ANSWER)}"{" required" if required else ""}', "write"
    else:
        hint = "never answered in the incident"
        attrs, state = 'value="" placeholder="blank: no stub"', "optional"
    return (
        f'<label>{e(name)}<input type="text" name="{e(name)}" size="36" {attrs} '
        f'data-stub="{state}" title="{e(hint)}"><span class="hint">{e(hint)}</span></label>'
    )


def _bar(parts: list[str]) -> str:
    return "".join(parts)


def under_bar(page: str, bar: str) -> str:
    """A report page (``html_report``) with the workbench's ``bar`` over it, and the bar's style."""
    head, _, rest = page.partition("</head>")
    rest, body, after = rest.partition("<body>")
    return f"{head}<style>{BAR_CSS}</style></head>{rest}{body}{bar}{after}"


def workbench_bar(*links: tuple[str, str]) -> str:
    """The bar over a cassette's page: the nav, then (href, text) links back where it came from."""
    extra = "".join(f'<a href="{e(href)}">{e(text)}</a>' for href, text in links)
    nav = '<nav><a href="/">runs</a><a href="/contracts">contracts</a>'
    return f'<section id="workbench">{nav}{extra}</nav></section>'
