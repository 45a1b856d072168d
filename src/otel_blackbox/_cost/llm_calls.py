"""The stored model calls a cost is computed from, read through the spans' views.

Only the attributes that tell a span's kind, model, provider and tokens are read (each reader's
``SUMMARY_KEYS``, with ``json_extract`` in SQLite), never a span's whole attribute JSON, which holds
the prompts: pricing every call of a large database stays a scan of its candidate spans (those with
token counts, a model, or the LLM kind in their columns). A call two nested spans describe is
counted once (``_spans.view.trace``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from otel_blackbox._cost.prices import Call, Cost, Price, price_call, total_of
from otel_blackbox._cost.spans import call_of_view
from otel_blackbox._spans.view.model import Tokens
from otel_blackbox._spans.view.registry import SUMMARY_KEYS, view_of
from otel_blackbox._spans.view.trace import model_calls, read_trace
from otel_blackbox._store.queries import SpanRecord, recorder_of_span

__all__ = [
    "LLMCall",
    "calls_by_run",
    "calls_of_traces",
    "cost_by_model",
    "cost_of",
    "every_call",
    "run_costs",
    "stats_with_cost",
    "trace_costs",
]

_DETAILS = ", ".join(f"json_extract(attributes, '$.\"{key}\"')" for key in SUMMARY_KEYS)
_COLUMNS = (
    "trace_id, span_id, parent_span_id, name, span_kind, oi_span_kind, status, start_ns, "
    f"model, prompt_tokens, completion_tokens, total_tokens, scope, {_DETAILS}"
)
_CANDIDATE = (
    "(prompt_tokens IS NOT NULL OR completion_tokens IS NOT NULL OR oi_span_kind = 'LLM' "
    "OR (model IS NOT NULL AND oi_span_kind IS NULL))"
)
_BATCH = 500  # trace ids per statement, well under SQLite's bound on parameters


@dataclass(frozen=True)
class LLMCall:
    trace_id: str
    span_id: str
    model: str | None
    start_ns: int
    tokens: Tokens  # as the span counted them (none: all None)
    priced: Call | None  # what pricing needs of it (None: no input or output count)

    def call(self) -> Call | None:
        return self.priced

    def price(self, as_model: str | None = None) -> Price | None:
        return None if self.priced is None else price_call(self.priced, as_model=as_model)


def _candidate(row: tuple[object, ...]) -> SpanRecord:
    """A candidate span as a record holding only its summary attributes."""
    (trace_id, span_id, parent, name, span_kind, kind, status, start_ns, model, prompt, completion,
     total, scope) = row[:13]  # fmt: skip
    attributes = {key: value for key, value in zip(SUMMARY_KEYS, row[13:], strict=True) if value is not None}
    try:
        scope_value = json.loads(str(scope or "{}"))
    except ValueError:
        scope_value = {}
    return SpanRecord(
        str(trace_id), str(span_id), parent if isinstance(parent, str) else None, str(name), str(span_kind),
        kind if isinstance(kind, str) else None, str(status), None,
        start_ns if isinstance(start_ns, int) else 0, None, None, 0, None,
        None, model if isinstance(model, str) else None, prompt if isinstance(prompt, int) else None,
        completion if isinstance(completion, int) else None, total if isinstance(total, int) else None,
        None, None, attributes, scope=scope_value if isinstance(scope_value, dict) else {},
    )  # fmt: skip


def _calls(candidates: list[SpanRecord]) -> list[LLMCall]:
    """The model calls among candidate spans (of whole traces), each once."""
    by_trace: dict[str, list[SpanRecord]] = {}
    for span in candidates:
        by_trace.setdefault(span.trace_id, []).append(span)
    calls = []
    for spans in by_trace.values():
        for span in model_calls(read_trace(spans)):
            view = view_of(span)
            tokens = view.tokens or Tokens()
            priced = call_of_view(view, span.start_ns)
            calls.append(LLMCall(span.trace_id, span.span_id, view.model, span.start_ns, tokens, priced))
    return calls


def every_call(conn: sqlite3.Connection) -> Iterator[LLMCall]:
    rows = conn.execute(f"SELECT {_COLUMNS} FROM spans WHERE {_CANDIDATE} ORDER BY trace_id")
    batch: list[SpanRecord] = []
    for row in rows:
        span = _candidate(row)
        if batch and batch[-1].trace_id != span.trace_id and len(batch) >= _BATCH:
            yield from _calls(batch)
            batch = []
        batch.append(span)
    yield from _calls(batch)


def calls_of_traces(conn: sqlite3.Connection, trace_ids: Iterable[str]) -> dict[str, list[LLMCall]]:
    """Each trace's model calls (a trace with none is absent)."""
    wanted = list(dict.fromkeys(trace_ids))
    found: dict[str, list[LLMCall]] = {}
    for start in range(0, len(wanted), _BATCH):
        batch = wanted[start : start + _BATCH]
        marks = ",".join("?" * len(batch))
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM spans WHERE trace_id IN ({marks}) AND {_CANDIDATE}", batch
        )
        for call in _calls([_candidate(row) for row in rows]):
            found.setdefault(call.trace_id, []).append(call)
    return found


def calls_by_run(
    conn: sqlite3.Connection, runs: list[tuple[str, int, int, int]], *, slack_ns: int
) -> dict[str, list[LLMCall]]:
    """Each run's model calls, by run id; ``runs``: (run id, pid, started_ns, last_seen_ns), and spans
    started up to ``slack_ns`` before their run's row (store/runs.py's START_SLACK_NS)."""
    if not runs:
        return {}
    pids = sorted({pid for _, pid, _, _ in runs})
    low, high = min(r[2] for r in runs) - slack_ns, max(r[3] for r in runs)
    wanted = {run_id for run_id, _, _, _ in runs}
    run_of: dict[tuple[str, str], str] = {}
    candidates = []
    query = (
        f"SELECT {recorder_of_span('run_id')}, {_COLUMNS} FROM spans "
        f"WHERE start_ns BETWEEN ? AND ? AND pid IN ({','.join('?' * len(pids))}) AND {_CANDIDATE}"
    )
    for row in conn.execute(query, (low, high, *pids)):
        if row[0] in wanted:
            span = _candidate(row[1:])
            run_of[(span.trace_id, span.span_id)] = row[0]
            candidates.append(span)
    found: dict[str, list[LLMCall]] = {}
    for call in _calls(candidates):
        found.setdefault(run_of[(call.trace_id, call.span_id)], []).append(call)
    return found


def cost_by_model(conn: sqlite3.Connection, *, as_model: str | None = None) -> dict[str, Any]:
    """The database's cost: by recorded model, the total, the LLM spans with no price, and the price
    data's version (``as_model``: the recorded tokens priced as that model)."""
    from otel_blackbox._cost.prices import prices_version

    by_model: dict[str, list[Call]] = {}
    tokens: dict[str, list[int]] = {}  # model -> [calls, prompt, completion, total]
    for found in every_call(conn):
        call = found.call()
        if call is not None:
            by_model.setdefault(found.model or "", []).append(call)
        if found.model is not None:
            counts = tokens.setdefault(found.model, [0, 0, 0, 0])
            counts[0] += 1
            counts[1] += found.tokens.input or 0
            counts[2] += found.tokens.output or 0
            counts[3] += found.tokens.sum or 0
    costs = {model: total_of(calls, as_model=as_model) for model, calls in by_model.items()}
    total = sum(costs.values(), Cost())
    return {
        **total.json(),
        "priced_as": as_model,
        "prices": prices_version(),
        "by_model": {model: cost.json() for model, cost in costs.items()},
        "tokens_by_model": [
            {
                "model": model,
                "llm_spans": c[0],
                "prompt_tokens": c[1],
                "completion_tokens": c[2],
                "total_tokens": c[3],
            }
            for model, c in sorted(tokens.items(), key=lambda item: -item[1][3])
        ],
    }


def stats_with_cost(conn: sqlite3.Connection, path: Any, *, as_model: str | None = None) -> dict[str, Any]:
    """``queries.stats`` with the cost: each model's ``cost_usd`` and ``unpriced_llm_spans`` (a
    ``Cost`` as JSON), the same for the total, what it was priced as, and the price data's version."""
    from otel_blackbox._store.queries import stats

    info = stats(conn, path)
    cost = cost_by_model(conn, as_model=as_model)
    info["tokens_by_model"] = cost["tokens_by_model"]  # model calls as the views count them
    for model in info["tokens_by_model"]:
        model.update(cost["by_model"].get(model["model"], Cost().json()))
    for key in ("cost_usd", "unpriced_llm_spans", "priced_as", "prices"):
        info[key] = cost[key]
    return info


def run_costs(conn: sqlite3.Connection, runs: list[Any], *, as_model: str | None = None) -> dict[str, Cost]:
    """Each run's cost, by run id (``runs``: store.runs.RunSummary)."""
    from otel_blackbox._store.runs import START_SLACK_NS

    calls = calls_by_run(
        conn, [(r.run_id, r.pid, r.started_ns, r.last_seen_ns) for r in runs], slack_ns=START_SLACK_NS
    )
    return {r.run_id: cost_of(calls.get(r.run_id, []), as_model=as_model) for r in runs}


def cost_of(calls: list[LLMCall], *, as_model: str | None = None) -> Cost:
    """What ``calls`` cost."""
    return total_of((c for c in (call.call() for call in calls) if c is not None), as_model=as_model)


def trace_costs(
    conn: sqlite3.Connection, trace_ids: Iterable[str], *, as_model: str | None = None
) -> dict[str, Cost]:
    """Each trace's cost."""
    wanted = list(trace_ids)
    calls = calls_of_traces(conn, wanted)
    return {trace_id: cost_of(calls.get(trace_id, []), as_model=as_model) for trace_id in wanted}
