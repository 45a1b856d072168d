"""The stored LLM calls a cost is computed from: model, token counts, and the few attributes pricing reads.

Only those attributes are read (``json_extract`` in SQLite), never a span's whole attribute JSON,
which holds the prompts: pricing every call of a large database stays a scan of its LLM spans.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from otel_blackbox._cost.prices import Call, Cost, Price, price_call, total_of
from otel_blackbox._cost.spans import PROVIDER_KEYS, call_of
from otel_blackbox._cost.usage import CACHE_READ_KEYS, CACHE_WRITE_KEYS, REASONING_KEYS
from otel_blackbox._store.queries import recorder_of_span

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

_KEYS = (*CACHE_READ_KEYS, *CACHE_WRITE_KEYS, *REASONING_KEYS, *PROVIDER_KEYS)
_DETAILS = ", ".join(f"json_extract(attributes, '$.\"{key}\"')" for key in _KEYS)
_COLUMNS = f"trace_id, span_id, model, prompt_tokens, completion_tokens, total_tokens, start_ns, {_DETAILS}"
_LLM = "oi_span_kind = 'LLM' AND (prompt_tokens IS NOT NULL OR completion_tokens IS NOT NULL)"
_BATCH = 500  # trace ids per statement, well under SQLite's bound on parameters


@dataclass(frozen=True)
class LLMCall:
    trace_id: str
    span_id: str
    model: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    total_tokens: int | None
    start_ns: int
    details: dict[str, Any] = field(default_factory=dict)

    def call(self) -> Call | None:
        """What pricing needs of it (None: no token counts)."""
        return call_of(
            self.model,
            self.prompt_tokens,
            self.completion_tokens,
            self.total_tokens,
            self.details,
            self.start_ns,
        )

    def price(self, as_model: str | None = None) -> Price | None:
        call = self.call()
        return None if call is None else price_call(call, as_model=as_model)


def _call(row: tuple[Any, ...]) -> LLMCall:
    details = {key: value for key, value in zip(_KEYS, row[7:], strict=True) if value is not None}
    trace_id, span_id, model, prompt, completion, total, start_ns = row[:7]
    return LLMCall(trace_id, span_id, model, prompt, completion, total, start_ns, details)


def every_call(conn: sqlite3.Connection) -> Iterator[LLMCall]:
    for row in conn.execute(f"SELECT {_COLUMNS} FROM spans WHERE {_LLM}"):
        yield _call(row)


def calls_of_traces(conn: sqlite3.Connection, trace_ids: Iterable[str]) -> dict[str, list[LLMCall]]:
    """Each trace's LLM calls (a trace with none is absent)."""
    wanted = list(dict.fromkeys(trace_ids))
    found: dict[str, list[LLMCall]] = {}
    for start in range(0, len(wanted), _BATCH):
        batch = wanted[start : start + _BATCH]
        marks = ",".join("?" * len(batch))
        for row in conn.execute(
            f"SELECT {_COLUMNS} FROM spans WHERE trace_id IN ({marks}) AND {_LLM}", batch
        ):
            call = _call(row)
            found.setdefault(call.trace_id, []).append(call)
    return found


def calls_by_run(
    conn: sqlite3.Connection, runs: list[tuple[str, int, int, int]], *, slack_ns: int
) -> dict[str, list[LLMCall]]:
    """Each run's LLM calls, by run id; ``runs``: (run id, pid, started_ns, last_seen_ns), and spans
    started up to ``slack_ns`` before their run's row (store/runs.py's START_SLACK_NS)."""
    if not runs:
        return {}
    pids = sorted({pid for _, pid, _, _ in runs})
    low, high = min(r[2] for r in runs) - slack_ns, max(r[3] for r in runs)
    wanted = {run_id for run_id, _, _, _ in runs}
    found: dict[str, list[LLMCall]] = {}
    query = (
        f"SELECT {recorder_of_span('run_id')}, {_COLUMNS} FROM spans "
        f"WHERE start_ns BETWEEN ? AND ? AND pid IN ({','.join('?' * len(pids))}) AND {_LLM}"
    )
    for row in conn.execute(query, (low, high, *pids)):
        if row[0] in wanted:
            found.setdefault(row[0], []).append(_call(row[1:]))
    return found


def cost_by_model(conn: sqlite3.Connection, *, as_model: str | None = None) -> dict[str, Any]:
    """The database's cost: by recorded model, the total, the LLM spans with no price, and the price
    data's version (``as_model``: the recorded tokens priced as that model)."""
    from otel_blackbox._cost.prices import prices_version

    by_model: dict[str, list[Call]] = {}
    for found in every_call(conn):
        call = found.call()
        if call is not None:
            by_model.setdefault(found.model or "", []).append(call)
    costs = {model: total_of(calls, as_model=as_model) for model, calls in by_model.items()}
    total = sum(costs.values(), Cost())
    return {
        **total.json(),
        "priced_as": as_model,
        "prices": prices_version(),
        "by_model": {model: cost.json() for model, cost in costs.items()},
    }


def stats_with_cost(conn: sqlite3.Connection, path: Any, *, as_model: str | None = None) -> dict[str, Any]:
    """``queries.stats`` with the cost: each model's ``cost_usd`` and ``unpriced_llm_spans`` (a
    ``Cost`` as JSON), the same for the total, what it was priced as, and the price data's version."""
    from otel_blackbox._store.queries import stats

    info = stats(conn, path)
    cost = cost_by_model(conn, as_model=as_model)
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
