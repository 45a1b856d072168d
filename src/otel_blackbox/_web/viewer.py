"""A local, read-only web viewer over the span database: ``otel-blackbox ui``.

Standard library only (``http.server``). It binds to 127.0.0.1 and nothing else, answers only GET,
and opens the database read-only (``mode=ro``) for each request, so traces a running agent writes
appear without a restart and the viewer can never change the file.

Routes: ``/`` the trace list (filters as query parameters), ``/api/traces`` the same list as JSON,
``/trace/<id>`` one trace's HTML report (a unique id prefix is enough).
"""

from __future__ import annotations

import html
import json
import re
import sqlite3
import sys
import time
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit

from otel_blackbox._config import parse_duration
from otel_blackbox._cost import llm_calls
from otel_blackbox._cost.spans import format_usd
from otel_blackbox._render.html_report import trace_report
from otel_blackbox._render.text import bidi_escaped, fmt_duration, fmt_time
from otel_blackbox._store import queries
from otel_blackbox._store.connection import connect_reader, describe_sqlite_error
from otel_blackbox.errors import AmbiguousTraceId, ConfigError, StoreError, TraceNotFound

__all__ = ["LOCAL_HOST", "TraceFilter", "ViewerServer", "make_server", "parse_filter"]

LOCAL_HOST = "127.0.0.1"
DEFAULT_LIMIT = 50
MAX_LIMIT = 1000
REFRESH_SECONDS = 3
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}
_SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class BadRequest(ValueError):
    """A filter value the viewer cannot use: answered with 400 and this one-line message."""


@dataclass(frozen=True)
class TraceFilter:
    errors: bool = False
    open: bool = False
    session: str | None = None
    q: str | None = None
    since: str | None = None
    since_ns: int | None = None
    limit: int = DEFAULT_LIMIT

    def query_string(self) -> str:
        params: dict[str, str] = {}
        if self.errors:
            params["errors"] = "1"
        if self.open:
            params["open"] = "1"
        if self.session:
            params["session"] = self.session
        if self.q:
            params["q"] = self.q
        if self.since:
            params["since"] = self.since
        if self.limit != DEFAULT_LIMIT:
            params["limit"] = str(self.limit)
        return urlencode(params)


def _flag(name: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise BadRequest(f"{name}: expected 1 or 0, got {value!r}")


def parse_filter(query: str, *, now_ns: int | None = None) -> TraceFilter:
    """The list filters from a URL query string; BadRequest on a value that cannot be used."""
    raw = {k: v[-1] for k, v in parse_qs(query, keep_blank_values=True).items()}
    limit = DEFAULT_LIMIT
    if raw.get("limit", "").strip():
        text = raw["limit"].strip()
        # ASCII digits only, and few of them: int() would take "²" or "١" and choke on 5,000 digits.
        if not re.fullmatch("[0-9]{1,9}", text) or not 1 <= int(text) <= MAX_LIMIT:
            raise BadRequest(f"limit: expected a whole number from 1 to {MAX_LIMIT}, got {raw['limit']!r}")
        limit = int(text)
    since = raw.get("since", "").strip() or None
    since_ns = None
    if since is not None:
        try:
            seconds = parse_duration(since, name="since")
        except ConfigError as exc:
            raise BadRequest(str(exc)) from None
        if seconds is not None:
            now = time.time_ns() if now_ns is None else now_ns
            # Before the epoch (99999999d, infinity): every trace. SQLite's integers stop at 2**63.
            since_ns = now - int(seconds * 1e9) if seconds * 1e9 < now else 0
    return TraceFilter(
        errors=_flag("errors", raw.get("errors", "")),
        open=_flag("open", raw.get("open", "")),
        session=raw.get("session", "").strip() or None,
        q=raw.get("q", "").strip() or None,
        since=since,
        since_ns=since_ns,
        limit=limit,
    )


def _share_since(conn: sqlite3.Connection, since_ns: int) -> float:
    """About what share of the recorded time span falls after ``since_ns`` (two index lookups)."""
    first: int | None = conn.execute("SELECT min(start_ns) FROM spans").fetchone()[0]
    last: int | None = conn.execute("SELECT max(start_ns) FROM spans").fetchone()[0]
    if first is None or last is None or last <= first:
        return 1.0
    return max(0.0, min(1.0, (last - since_ns) / (last - first)))


def find_traces(conn: sqlite3.Connection, flt: TraceFilter) -> list[queries.TraceSummary]:
    """The newest traces matching every filter, newest first."""
    if not (flt.open or flt.q or flt.since_ns is not None):
        # The common case: walk the start-time index, as `otel-blackbox list` does.
        return queries.recent_traces(conn, limit=flt.limit, session=flt.session, errors_only=flt.errors)
    # Open and failed spans have a partial index, and a recent time window the start-time index:
    # those filters first name the traces that can match, so that only their spans are grouped
    # rather than the whole table on every refresh. A window holding most of the file, or the text
    # search (no index can serve it), is cheaper as one scan. The HAVING clauses decide exactly.
    candidates: list[str] = []
    candidate_params: list[str | int] = []
    having: list[str] = []
    having_params: list[str | int] = []
    for wanted, status in ((flt.errors, "error"), (flt.open, "open")):
        if wanted:
            candidates.append(f"SELECT trace_id FROM spans WHERE {queries.NOT_OK} AND status = '{status}'")
            having.append(f"sum(status = '{status}') > 0")
    if flt.since_ns is not None:
        if _share_since(conn, flt.since_ns) < 0.5:
            candidates.append("SELECT trace_id FROM spans WHERE start_ns >= ?")
            candidate_params.append(flt.since_ns)
        having.append("min(start_ns) >= ?")
        having_params.append(flt.since_ns)
    if flt.q:
        # Root name (a span without a parent) or trace id contains the text, case-insensitively.
        having.append(
            "(instr(trace_id, lower(?)) > 0 OR "
            "sum(parent_span_id IS NULL AND instr(lower(name), lower(?)) > 0) > 0)"
        )
        having_params += [flt.q, flt.q]
    where = [f"trace_id IN ({' INTERSECT '.join(candidates)})"] if candidates else []
    params: list[str | int] = list(candidate_params)
    if flt.session is not None:
        where.append("session_id = ?")
        params.append(flt.session)
    clause = f"WHERE {' AND '.join(where)}" if where else ""
    rows = conn.execute(
        f"SELECT trace_id FROM spans {clause} GROUP BY trace_id "
        f"HAVING {' AND '.join(having)} ORDER BY min(start_ns) DESC LIMIT ?",
        [*params, *having_params, flt.limit],
    ).fetchall()
    return queries.summarize(conn, [str(r[0]) for r in rows])


def summary_json(t: queries.TraceSummary, cost_usd: float | None = None) -> dict[str, Any]:
    return {**t.__dict__, "status": t.status, "duration_ns": t.duration_ns, "cost_usd": cost_usd}


def _row_cells(t: queries.TraceSummary, cost_usd: float | None) -> list[str]:
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
        "" if cost_usd is None else format_usd(cost_usd),  # no price: blank, never $0
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
    costs: dict[str, float | None] | None = None,
) -> str:
    e = html.escape
    rows: list[str] = []
    for t in traces:
        cells = _row_cells(t, (costs or {}).get(t.trace_id))
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
        f'<h1>otel-blackbox traces <span class="mono">{e(str(db))}</span></h1>{form}'
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


class ViewerServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, db_path: Path, port: int, *, verbose: bool = False) -> None:
        self.db_path = db_path
        self.verbose = verbose
        super().__init__((LOCAL_HOST, port), ViewerHandler)


class ViewerHandler(BaseHTTPRequestHandler):
    server: ViewerServer
    server_version = "otel-blackbox-viewer"

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            sys.stderr.write(f"{self.address_string()} - {format % args}\n")

    def _send(self, status: HTTPStatus, body: str, content_type: str = "text/html; charset=utf-8") -> None:
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for key, value in _SECURITY_HEADERS.items():
            self.send_header(key, value)
        if status == HTTPStatus.METHOD_NOT_ALLOWED:
            self.send_header("Allow", "GET")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _error(self, status: HTTPStatus, message: str, *, as_json: bool = False) -> None:
        if as_json:
            self._send(status, json.dumps({"error": message}), "application/json")
        else:
            self._send(status, message_page(status, message))

    def _host_ok(self) -> bool:
        # Refuse a Host other than the loopback one: a web page cannot reach the viewer by DNS rebinding.
        host = (self.headers.get("Host") or "").strip().lower()
        name = host.rsplit(":", 1)[0] if not host.startswith("[") else host.split("]", 1)[0] + "]"
        return name in {LOCAL_HOST, "localhost"}

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        as_json = url.path.startswith("/api/")
        if not self._host_ok():
            self._error(HTTPStatus.FORBIDDEN, "the viewer answers only on 127.0.0.1", as_json=as_json)
            return
        try:
            if url.path in ("/", "/index.html"):
                flt = parse_filter(url.query)
                with self._reader() as conn:
                    traces = find_traces(conn, flt)
                    costs = llm_calls.trace_costs(conn, [t.trace_id for t in traces])
                self._send(HTTPStatus.OK, list_page(traces, flt, self.server.db_path, costs))
            elif url.path == "/favicon.ico":  # every browser asks; a 404 is an error in its console
                self._send(HTTPStatus.NO_CONTENT, "", "image/x-icon")
            elif url.path == "/api/traces":
                flt = parse_filter(url.query)
                with self._reader() as conn:
                    traces = find_traces(conn, flt)
                    costs = llm_calls.trace_costs(conn, [t.trace_id for t in traces])
                payload = {
                    "traces": [
                        {**summary_json(t, costs[t.trace_id]), "cells": _row_cells(t, costs[t.trace_id])}
                        for t in traces
                    ]
                }
                self._send(HTTPStatus.OK, json.dumps(payload, default=str), "application/json")
            elif url.path.startswith("/trace/"):
                self._send(HTTPStatus.OK, self._report(unquote(url.path[len("/trace/") :])))
            else:
                self._error(HTTPStatus.NOT_FOUND, f"no such page: {url.path}", as_json=as_json)
        except BadRequest as exc:
            self._error(HTTPStatus.BAD_REQUEST, str(exc), as_json=as_json)
        except TraceNotFound as exc:
            self._error(HTTPStatus.NOT_FOUND, str(exc), as_json=as_json)
        except AmbiguousTraceId as exc:
            self._error(HTTPStatus.BAD_REQUEST, str(exc), as_json=as_json)
        except StoreError as exc:
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, str(exc), as_json=as_json)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the browser went away before the answer: nothing to tell anyone
        except Exception as exc:  # a bug: still an answer, and one log line rather than a traceback
            reason = f"{type(exc).__name__}: {exc}"
            sys.stderr.write(f"otel-blackbox viewer: internal error on {self.path!r}: {reason}\n")
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, "internal error", as_json=as_json)

    do_HEAD = do_GET

    def _refuse(self) -> None:
        self.close_connection = True  # the body (if any) is never read
        self._error(HTTPStatus.METHOD_NOT_ALLOWED, "the viewer is read-only: only GET is allowed")

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse

    def _reader(self) -> _Reader:
        return _Reader(self.server.db_path)

    def _report(self, trace_id: str) -> str:
        with self._reader() as conn:
            full_id = queries.resolve_trace_id(conn, trace_id)
            spans = queries.trace_spans(conn, full_id)
            summaries = queries.summarize(conn, [full_id])
            if not summaries:
                raise TraceNotFound(f"no trace with id {trace_id!r}")
            (summary,) = summaries
            last_seen = queries.last_seen_by_trace(conn, full_id).get(full_id, summary.end_ns)
        return trace_report(summary, spans, last_seen)


class _Reader:
    """A read-only connection for one request; sqlite3 errors become one-line StoreErrors."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn: sqlite3.Connection | None = None

    def __enter__(self) -> sqlite3.Connection:
        self.conn = connect_reader(self.path)
        return self.conn

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        if self.conn is not None:
            self.conn.close()
        if isinstance(exc, sqlite3.Error):
            raise describe_sqlite_error(self.path, exc) from None


def make_server(
    db_path: str | Path, *, host: str = LOCAL_HOST, port: int = 0, verbose: bool = False
) -> ViewerServer:
    """A viewer bound to 127.0.0.1:port (0: any free port); ConfigError for any other host."""
    if host != LOCAL_HOST:
        raise ConfigError(f"--host {host}: the viewer is local-only and binds to {LOCAL_HOST} only")
    return ViewerServer(Path(db_path), port, verbose=verbose)
