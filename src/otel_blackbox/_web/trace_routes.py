"""What the workbench answers about what was recorded: the front page (runs, then the traces the
filters in its query find), ``/api/traces`` (those traces as JSON), and ``/run/<id>`` or
``/trace/<id>``: the report opened on where it failed, under the bar with the rerun form. Each
returns the body; ``server.py`` guards the request and sends it.
"""

from __future__ import annotations

import json
import shlex

from otel_blackbox._cost import llm_calls
from otel_blackbox._playback.agent.incident import Incident
from otel_blackbox._playback.agent.sdk import available_apis
from otel_blackbox._render.html_report import SpanGroup, group_report, trace_report
from otel_blackbox._store import queries, runs
from otel_blackbox._web.filters import parse_filter
from otel_blackbox._web.good_answers import KnownAnswer, known_answers
from otel_blackbox._web.masking import mask_spans
from otel_blackbox._web.pages import list_page, row_cells, summary_json
from otel_blackbox._web.request_context import StoreReader, Workbench
from otel_blackbox._web.trace_list import find_traces
from otel_blackbox._web.workbench_pages import rerun_panel, runs_section, under_bar
from otel_blackbox._web.workspace import incident_of, stub_fields, target_spans
from otel_blackbox.errors import BlackboxError

__all__ = ["front_page", "target_page", "traces_json"]


def front_page(server: Workbench, query: str) -> str:
    """``/``: the latest runs, then the traces the filters (``query``) find."""
    flt = parse_filter(query)
    with StoreReader(server.db_path) as conn:
        traces = find_traces(conn, flt)
        costs = llm_calls.trace_costs(conn, [t.trace_id for t in traces])
        found = runs.recent_runs(conn, limit=flt.limit)
        run_costs = llm_calls.run_costs(conn, found)
    top = runs_section(found, run_costs)
    return list_page(traces, flt, server.db_path, costs, top=top)


def traces_json(server: Workbench, query: str) -> str:
    """``/api/traces``: the traces the filters find, each with the cells of its row."""
    flt = parse_filter(query)
    with StoreReader(server.db_path) as conn:
        traces = find_traces(conn, flt)
        costs = llm_calls.trace_costs(conn, [t.trace_id for t in traces])
    payload = {
        "traces": [
            {**summary_json(t, costs[t.trace_id]), "cells": row_cells(t, costs[t.trace_id])} for t in traces
        ]
    }
    return json.dumps(payload, default=str)


def target_page(server: Workbench, kind: str, ident: str) -> str:
    """A run's or a trace's report, opened on where it failed, under the workbench's bar."""
    incident: Incident | None = None
    unusable = None
    known: dict[str, KnownAnswer] = {}
    with StoreReader(server.db_path) as conn:
        target, spans = target_spans(conn, kind, ident)
        spans = mask_spans(spans)  # a secret of this process already in the database: not shown
        if kind == "run":
            summary = runs.run_summary(conn, target.id)
            status = summary.status
            last_seen = runs.last_seen_by_traces(conn, spans)
            page = group_report(
                SpanGroup("run", target.id, spans[0].pid), spans, last_seen, select_failure=True
            )
        else:
            (trace,) = queries.summarize(conn, [target.id])
            status = trace.status
            seen = queries.last_seen_by_trace(conn, target.id).get(target.id, trace.end_ns)
            page = trace_report(trace, spans, seen, select_failure=True)
        try:
            incident = incident_of(spans, target)
        except BlackboxError as exc:  # spans no built-in agent can follow (no model call)
            unusable = str(exc)
        if incident is not None and status in ("error", "open"):  # the stubs' good answers, if known
            failing = [f.tool for f in stub_fields(incident) if f.failed]
            known = known_answers(conn, incident, failing, exclude={s.trace_id for s in spans})
    guard = server.guard
    server_program = None if server.program is None else shlex.join(server.program)
    jobs = [j for j in server.board.all() if j.target == target]
    if incident is None:
        panel = rerun_panel(target, status, [], [], api=None, model=None, token=guard.action_token,
                            read_only=guard.read_only, jobs=jobs, program=server_program,
                            unusable=unusable)  # fmt: skip
    else:
        apis = available_apis()
        api = incident.api if incident.api in apis else (apis[0] if apis else None)
        panel = rerun_panel(target, status, stub_fields(incident), apis, api=api, model=incident.model,
                            token=guard.action_token, read_only=guard.read_only, jobs=jobs,
                            program=server_program, known=known)  # fmt: skip
    return under_bar(page, panel)
