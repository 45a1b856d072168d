"""What the viewer answers with: the trace list as an HTML page (which refreshes itself from the
JSON rows), a listed trace as those JSON rows, and the page of an error message. Every recorded
value is escaped (``html.escape``, or set as text by the page's script)."""

from __future__ import annotations

import html
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import quote

from otel_blackbox._cost.prices import Cost
from otel_blackbox._render.text import bidi_escaped, fmt_duration, fmt_time
from otel_blackbox._store import queries
from otel_blackbox._web.filters import TraceFilter

__all__ = ["list_page", "message_page", "row_cells", "summary_json"]

REFRESH_SECONDS = 3


def summary_json(t: queries.TraceSummary, cost: Cost | None = None) -> dict[str, Any]:
    """A listed trace as JSON, with ``cost_usd`` and ``unpriced_llm_spans`` (as `list --json`)."""
    return {**t.__dict__, "status": t.status, "duration_ns": t.duration_ns, **(cost or Cost()).json()}


def row_cells(t: queries.TraceSummary, cost: Cost | None) -> list[str]:
    return [
        fmt_time(t.start_ns),
        t.status,
        str(t.span_count),
        str(t.open_count),
        str(t.error_count),
        fmt_duration(t.duration_ns),
        bidi_escaped(t.root_name),  # as the report shows it
        bidi_escaped(t.session_id or ""),
        "" if t.total_tokens is None else str(t.total_tokens),
        "" if cost is None or cost.usd is None else cost.text(),  # no price: blank, never $0
        t.trace_id,
    ]


_COLUMNS = [
    "start", "status", "spans", "open", "errors", "duration", "root", "session", "tokens", "cost", "trace id"
]  # fmt: skip

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fafafa}
h1{font-size:1.2em;margin:0 0 .6em}
form{margin:0 0 1em;display:flex;gap:.8em;flex-wrap:wrap;align-items:center}
input[type=text]{padding:.2em .4em}table{border-collapse:collapse;width:100%;background:#fff}
th,td{text-align:left;padding:.3em .6em;border-bottom:1px solid #e3e3e3;white-space:nowrap}
td.root{white-space:normal;word-break:break-all}th{background:#f0f0f0;font-weight:600}
tr:hover{background:#f5f8ff}.ok{color:#1a7f37}.error{color:#cf222e;font-weight:600}.open{color:#9a6700}
.mono{font-family:ui-monospace,monospace;font-size:12px}#note{color:#777;margin-left:auto}a{color:#0550ae}
"""

_JS = """
(function(){
  var cols=%s, body=document.getElementById('rows'), note=document.getElementById('note');
  function fill(list){
    body.textContent='';
    if(!list.length){var tr=body.insertRow(),td=tr.insertCell();td.colSpan=cols;
      td.textContent='no matching traces';return;}
    list.forEach(function(t){
      var tr=body.insertRow(),cells=t.cells;
      for(var i=0;i<cells.length;i++){
        var td=tr.insertCell();
        if(i===1){td.className=cells[i];}
        if(i===6){td.className='root';}
        if(i===cells.length-1){
          var a=document.createElement('a');a.href='/trace/'+encodeURIComponent(t.trace_id);
          a.className='mono';a.textContent=cells[i];td.appendChild(a);
        } else {td.textContent=cells[i];}
      }
    });
  }
  function tick(){
    fetch('/api/traces'+location.search,{cache:'no-store'}).then(function(r){
      if(!r.ok){throw new Error('HTTP '+r.status);}return r.json();
    }).then(function(d){fill(d.traces);note.textContent='updated '+new Date().toLocaleTimeString();})
      .catch(function(e){note.textContent='refresh failed: '+e.message;});
  }
  setInterval(tick,%d);
})();
"""


def list_page(
    traces: list[queries.TraceSummary],
    flt: TraceFilter,
    db: Path,
    costs: dict[str, Cost] | None = None,
    *,
    top: str = "",
) -> str:
    """The front page: ``top`` (the workbench's runs, already HTML), then the traces, refreshed live."""
    e = html.escape
    rows: list[str] = []
    for t in traces:
        cells = row_cells(t, (costs or {}).get(t.trace_id))
        tds = []
        for i, cell in enumerate(cells[:-1]):
            cls = f' class="{e(cell)}"' if i == 1 else (' class="root"' if i == 6 else "")
            tds.append(f"<td{cls}>{e(cell)}</td>")
        link = f'<a class="mono" href="/trace/{e(quote(t.trace_id, safe=""))}">{e(t.trace_id)}</a>'
        rows.append(f"<tr>{''.join(tds)}<td>{link}</td></tr>")
    if not rows:
        rows.append(f'<tr><td colspan="{len(_COLUMNS)}">no matching traces</td></tr>')
    head = "".join(f"<th>{e(c)}</th>" for c in _COLUMNS)

    def checkbox(name: str, on: bool, label: str) -> str:
        checked = " checked" if on else ""
        return f'<label><input type="checkbox" name="{name}" value="1"{checked}> {label}</label>'

    form = (
        '<form method="get" action="/">'
        + checkbox("errors", flt.errors, "errors")
        + checkbox("open", flt.open, "open")
        + f'<label>session <input type="text" name="session" value="{e(flt.session or "")}"></label>'
        + f'<label>search <input type="text" name="q" value="{e(flt.q or "")}" '
        'placeholder="root name or trace id"></label>'
        + f'<label>since <input type="text" name="since" size="5" value="{e(flt.since or "")}" '
        'placeholder="1h"></label>'
        + f'<label>limit <input type="text" name="limit" size="4" value="{flt.limit}"></label>'
        + '<button type="submit">filter</button> <a href="/">reset</a>'
        + f'<span id="note">auto-refresh every {REFRESH_SECONDS}s</span></form>'
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        "<title>otel-blackbox</title>"
        f"<style>{_CSS}</style></head><body>"
        '<nav><a href="/">runs</a> <a href="/contracts">contracts</a></nav>'
        f'<h1>otel-blackbox <span class="mono">{e(str(db))}</span></h1>{top}{form}'
        f'<table><thead><tr>{head}</tr></thead><tbody id="rows">{"".join(rows)}</tbody></table>'
        f"<script>{_JS % (len(_COLUMNS), REFRESH_SECONDS * 1000)}</script></body></html>"
    )


def message_page(status: HTTPStatus, message: str) -> str:
    e = html.escape
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{status.value} {e(status.phrase)}'
        f"</title></head><body><h1>{status.value} {e(status.phrase)}</h1><p>{e(message)}</p>"
        '<p><a href="/">all traces</a></p></body></html>'
    )
