"""The tools over the span database: recent traces and runs, errors, one trace's tree, one span, stats.

Each opens the database read-only (``connect_reader``) for the call and closes it: nothing here
writes, and an older file is read as it is, never migrated. The queries and renderings are the
CLI's own (``_store.queries``, ``_store.runs``, ``_cost.llm_calls``, ``_render.text``).
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from otel_blackbox._cost import llm_calls
from otel_blackbox._cost.prices import Cost, unknown_model
from otel_blackbox._mcp.bounds import MAX_CHARS, VALUE_CHARS, clip_strings, dumps, fit, text_arg, text_page
from otel_blackbox._render.repeats import ModelCalls, number_calls
from otel_blackbox._render.text import clip, fmt_time, render_tree, safe, span_to_json
from otel_blackbox._render.words import counted
from otel_blackbox._spans.view.registry import view_of
from otel_blackbox._store import queries
from otel_blackbox._store import runs as store_runs
from otel_blackbox._store.connection import connect_reader, describe_sqlite_error
from otel_blackbox._store.queries import SpanRecord, TraceSummary
from otel_blackbox._store.trace_logs import load_trace
from otel_blackbox.errors import BadArgument

__all__ = [
    "check_price_model",
    "errors",
    "get_span",
    "list_runs",
    "list_traces",
    "reading",
    "show_trace",
    "stats",
]

SHOWN_CHARS = 1000  # a value in show_trace, as `show -v` shortens it
_NAME_CHARS = 200  # a span or root name in a list
_SPAN_HEX = re.compile(r"^[0-9a-f]{1,16}$")
_MAX_INDENT = 20  # levels: a very deep tree keeps its text on the page
_HEADER_CHARS = 2000  # show_trace's first line (the root's name is in it)


@contextlib.contextmanager
def reading(db: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection for one call; an SQLite failure becomes one StoreError line."""
    conn = connect_reader(db)
    try:
        yield conn
    except sqlite3.Error as exc:
        raise describe_sqlite_error(db, exc) from None
    finally:
        conn.close()


def check_price_model(name: str | None) -> str | None:
    """A model the price data knows (as ``--price-model`` takes it), else a BadArgument."""
    if name is None:
        return None
    refused = unknown_model(name)
    if refused is not None:
        raise BadArgument(refused)
    return name.strip()


def _page(key: str, items: list[dict[str, Any]], offset: int, more: bool, **extra: Any) -> str:
    """A page of JSON items that fits the bound, and the offset that asks for the next one."""
    shown = fit([dumps(item) for item in items])
    more = more or shown < len(items)
    result: dict[str, Any] = {
        **extra,
        key: items[:shown],
        "offset": offset,
        "returned": shown,
        "next_offset": offset + shown if more else None,
    }
    if more:
        result["more"] = f"there are more {key}: call again with offset={offset + shown}"
    return dumps(result)


def _check_offset(offset: int, total: int) -> None:
    if offset and offset >= total:
        raise BadArgument(f"offset {offset} is past the end ({total} in all)")


def list_traces(
    db: Path,
    *,
    limit: int = 20,
    offset: int = 0,
    session: str | None = None,
    errors_only: bool = False,
    price_model: str | None = None,
) -> str:
    as_model = check_price_model(price_model)
    text_arg("session", session)
    with reading(db) as conn:
        found = queries.recent_traces(
            conn, limit=offset + limit + 1, session=session, errors_only=errors_only
        )
        page = found[offset : offset + limit]
        costs = llm_calls.trace_costs(conn, [t.trace_id for t in page], as_model=as_model)
    rows = [
        {
            **clip_strings(t.__dict__, _NAME_CHARS),
            "status": t.status,
            "duration_ns": t.duration_ns,
            "start": fmt_time(t.start_ns),
            **_cost_fields(costs[t.trace_id]),
        }
        for t in page
    ]
    return _page("traces", rows, offset, len(found) > offset + limit, priced_as=as_model)


def list_runs(db: Path, *, limit: int = 20, offset: int = 0, price_model: str | None = None) -> str:
    as_model = check_price_model(price_model)
    with reading(db) as conn:
        found = store_runs.recent_runs(conn, limit=offset + limit + 1)
        page = found[offset : offset + limit]
        costs = llm_calls.run_costs(conn, page, as_model=as_model)
    rows = []
    for run in page:
        rows.append(
            {
                **clip_strings(run.to_json(), _NAME_CHARS),
                "started": fmt_time(run.started_ns),
                "last_seen": fmt_time(run.last_seen_ns),
                **_cost_fields(costs[run.run_id]),
            }
        )
    return _page("runs", rows, offset, len(found) > offset + limit, priced_as=as_model)


def _cost_fields(cost: Cost) -> dict[str, Any]:
    """``cost_usd`` and ``unpriced_llm_spans`` (as the CLI's JSON), and ``cost`` as the CLI writes
    it, which says what it leaves out: ``$0.0097 + 1 unpriced``."""
    return {**cost.json(), "cost": cost.text()}


def _error_row(span: SpanRecord) -> dict[str, Any]:
    exc = next(iter(span.exception_events), {}).get("attributes", {})
    reason = span.status_message or f"{exc.get('exception.type', '')}: {exc.get('exception.message', '')}"
    row = {
        "trace_id": span.trace_id,
        "span_id": span.span_id,
        "name": span.name,
        "kind": view_of(span).kind or span.span_kind,
        "start": fmt_time(span.start_ns),
        "start_ns": span.start_ns,
        "reason": reason,
        "exception_type": exc.get("exception.type"),
        "exception_message": exc.get("exception.message"),
    }
    return dict(clip_strings(row, VALUE_CHARS))


def errors(db: Path, *, limit: int = 20, offset: int = 0) -> str:
    with reading(db) as conn:
        found = queries.error_spans(conn, limit=offset + limit + 1)
    rows = [_error_row(s) for s in found[offset : offset + limit]]
    return _page("errors", rows, offset, len(found) > offset + limit)


def _tree_order(spans: list[SpanRecord]) -> list[tuple[SpanRecord, int]]:
    """Every span once, depth-first with children under parents in start order (as ``show`` draws
    them), with its depth; spans no root leads to (a parent cycle) come last, at depth 0."""
    ids = {s.span_id for s in spans}
    children: dict[str | None, list[SpanRecord]] = {}
    for span in spans:
        children.setdefault(span.parent_span_id if span.parent_span_id in ids else None, []).append(span)
    order: list[tuple[SpanRecord, int]] = []
    seen: set[int] = set()
    stack = [(root, 0) for root in reversed(children.get(None, []))]
    while stack:
        span, depth = stack.pop()
        if id(span) in seen:
            continue
        seen.add(id(span))
        order.append((span, depth))
        stack.extend((kid, depth + 1) for kid in reversed(children.get(span.span_id, [])))
    order += [(span, 0) for span in spans if id(span) not in seen]
    return order


def _rendered(
    summary: TraceSummary, span: SpanRecord, limit: int | None, price_model: str | None, calls: ModelCalls
) -> tuple[str, list[str]]:
    """``show -v``'s line for the span, and its detail lines (messages, tool calls, exceptions; a model
    call whose input starts with an earlier call's: "same 214 messages as call 12, 2 new" and the
    new ones, unless ``calls`` were numbered without collapsing)."""
    lines = render_tree(summary, [span], verbose=True, max_chars=limit, price_model=price_model, calls=calls)
    lines = lines[next((i for i, line in enumerate(lines) if line.startswith("└── ")), len(lines)) :]
    head = lines[0].removeprefix("└── ") if lines else safe(span.name)
    return head, [line.removeprefix("        ") for line in lines[1:]]


def _span_block(
    summary: TraceSummary,
    span: SpanRecord,
    depth: int,
    index: int,
    limit: int | None,
    price_model: str | None,
    calls: ModelCalls,
) -> str:
    head, details = _rendered(summary, span, limit, price_model, calls)
    pad = "  " * min(depth, _MAX_INDENT)
    parent = f"  parent {safe(span.parent_span_id)}" if span.parent_span_id else ""
    lines = [f"{pad}[{index}] {head}  span {safe(span.span_id)}{parent}"]
    lines += [f"{pad}      {line}" for line in details]
    return "\n".join(lines)


def _trace(conn: sqlite3.Connection, trace_id: str) -> tuple[TraceSummary, list[SpanRecord]]:
    full_id = queries.resolve_trace_id(conn, trace_id)
    spans = load_trace(conn, full_id)
    (summary,) = queries.summarize(conn, [full_id])
    return summary, spans


def show_trace(
    db: Path,
    trace_id: str,
    *,
    offset: int = 0,
    limit: int = 50,
    full: bool = False,
    price_model: str | None = None,
) -> str:
    as_model = check_price_model(price_model)
    with reading(db) as conn:  # spans' attributes stored apart are read when asked for (_store)
        summary, spans = _trace(conn, trace_id)
        order = _tree_order(spans)
        _check_offset(offset, len(order))
        calls = number_calls(spans, collapse=not full)
        tree = render_tree(summary, spans, price_model=as_model, calls=calls)
        value_chars = None if full else SHOWN_CHARS
        blocks = [
            _span_block(summary, span, depth, offset + i, value_chars, as_model, calls)
            for i, (span, depth) in enumerate(order[offset : offset + limit])
        ]
    notes = [line for line in tree[1:] if line.startswith("no content: ")]  # the trace's own notes
    header = clip("\n".join(tree[:1] + notes[:1]), _HEADER_CHARS)
    budget = MAX_CHARS - len(header) - 600
    shown = fit(blocks, budget)
    if blocks and len(blocks[0]) > budget:  # one span larger than a page: cut, and say where the rest is
        blocks[0] = (
            blocks[0][:budget]
            + f"\n[this span is cut: get_span with trace_id={summary.trace_id} and span_id="
            f"{safe(order[offset][0].span_id)} gives all of it]"
        )
    end = offset + shown
    lines = [header, f"spans {offset}..{end - 1} of {len(order)} (tree order, each under its parent)"]
    lines += blocks[:shown]
    if end < len(order):
        lines.append(
            f"[{counted(len(order) - end, 'more span')}: call show_trace with "
            f"trace_id={summary.trace_id} and offset={end}]"
        )
    else:
        lines.append(f"[end of the trace: spans {offset}..{end - 1} of {len(order)} shown, none remain]")
    return "\n".join(lines)


def _find_span(spans: list[SpanRecord], trace_id: str, prefix: str) -> SpanRecord:
    wanted = prefix.strip().lower()
    if not _SPAN_HEX.match(wanted):
        raise BadArgument(f"not a span id (expected 1 to 16 hex digits): {prefix!r}")
    found = [s for s in spans if s.span_id.startswith(wanted)]
    if not found:
        raise BadArgument(f"no span with id {prefix!r} in trace {trace_id}")
    if len({s.span_id for s in found}) > 1:
        shown = ", ".join(s.span_id for s in found[:5])
        raise BadArgument(f"span id {prefix!r} is ambiguous in trace {trace_id}: it matches {shown}")
    return found[0]


def get_span(
    db: Path,
    trace_id: str,
    span_id: str,
    *,
    full: bool = False,
    char_offset: int = 0,
    price_model: str | None = None,
) -> str:
    as_model = check_price_model(price_model)
    with reading(db) as conn:  # spans' attributes stored apart are read when asked for (_store)
        summary, spans = _trace(conn, trace_id)
        span = _find_span(spans, summary.trace_id, span_id)
        calls = number_calls(spans, collapse=not full)
        head, details = _rendered(summary, span, None if full else SHOWN_CHARS, as_model, calls)
        result = {
            "trace_id": summary.trace_id,
            "span_id": span.span_id,
            "line": head,
            "details": details,
            "span": clip_strings(span_to_json(span, as_model, calls), None if full else VALUE_CHARS),
        }
    again = (
        f"get_span with trace_id={summary.trace_id}, span_id={safe(span.span_id)}, full={str(full).lower()}"
    )
    return text_page(dumps(result), char_offset, again=again)


def stats(db: Path, *, price_model: str | None = None) -> str:
    """``otel-blackbox stats --json``: the same queries, merged the same way."""
    as_model = check_price_model(price_model)
    with reading(db) as conn:
        info = llm_calls.stats_with_cost(conn, db, as_model=as_model)
    info["cost"] = Cost.from_json(info).text()  # "$0.0097 + 1 unpriced", as `stats` shows it
    return dumps(clip_strings(info, _NAME_CHARS))
