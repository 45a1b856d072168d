"""One recorded trace, or one cassette, as a single self-contained HTML file (``otel-blackbox report``).

The page is one file: inline CSS and JS, no external URL, no network fetch, so it opens from disk
and can be attached to an incident. The data rides along as JSON in
``<script type="application/json" id="blackbox-data">`` with ``<``, ``>``, ``&`` and U+2028/2029
escaped, so no value can close the script tag; the page's JS builds the DOM with ``textContent``
and ``createElement`` only, so every value from a span is shown as text, never parsed as HTML.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any

from otel_blackbox._cassette.model import Cassette, terminal_outcome, tool_calls_of
from otel_blackbox._cost.spans import spans_cost
from otel_blackbox._render.cassette_text import describe_step
from otel_blackbox._render.report_spans import iso, span_entries
from otel_blackbox._spans.sdk_limits import cut_summary
from otel_blackbox._spans.view.registry import view_of
from otel_blackbox._spans.view.trace import content_missing
from otel_blackbox._store.queries import SpanRecord, TraceSummary

__all__ = [
    "SpanGroup",
    "cassette_report",
    "embed_json",
    "group_data",
    "group_report",
    "trace_data",
    "trace_report",
]

_UNSAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_UNSAFE_RE = re.compile("[<>&\u2028\u2029\ud800-\udfff]")


# Deeper values are shown as a note: a payload nested near the JSON parser's own limit would
# otherwise exhaust the recursion limit here or in the encoder, and nobody reads level 200.
_MAX_DEPTH = 200


def _jsonable(value: Any, depth: int = 0) -> Any:
    """Plain JSON values: non-finite floats and unknown objects become strings (JSON.parse rejects NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (dict, list, tuple)) and depth >= _MAX_DEPTH:
        return f"[nested deeper than {_MAX_DEPTH} levels: not shown]"
    if isinstance(value, dict):
        return {str(k): _jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, depth + 1) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def embed_json(value: Any) -> str:
    """JSON that is safe inside a ``<script>`` element: it can never contain ``</script>`` or ``<!--``."""
    text = json.dumps(_jsonable(value), ensure_ascii=False, sort_keys=False)
    return _UNSAFE_RE.sub(lambda m: _UNSAFE.get(m.group(0)) or f"\\u{ord(m.group(0)):04x}", text)


def _tokens_by_model(spans: list[SpanRecord]) -> list[dict[str, Any]]:
    """Each model's tokens over the model calls (a call two spans describe counted once)."""
    totals: dict[str, dict[str, Any]] = {}
    for view in (view_of(s) for s in spans):
        tokens = view.tokens
        if not view.counts or tokens is None or tokens.sum is None:
            continue
        model = view.model or "unknown"
        entry = totals.setdefault(model, {"model": model, "input": 0, "output": 0, "total": 0})
        entry["input"] += tokens.input or 0
        entry["output"] += tokens.output or 0
        entry["total"] += tokens.sum
    return list(totals.values())


def _distinct(values: list[str | None]) -> list[str]:
    return list(dict.fromkeys(v for v in values if v))


@dataclass(frozen=True)
class SpanGroup:
    """What a page of several traces is about: a run (one recorder's lifetime) or a session."""

    kind: str  # "run" or "session"
    id: str
    pid: int | None = None


def _counts(spans: list[SpanRecord]) -> dict[str, Any]:
    """The header fields a one-trace page and a several-trace page share."""
    cost = spans_cost(spans)
    return {
        "costUsd": cost.dollars,
        "costText": cost.text() if cost.usd is not None else None,  # "$0.0097 + 1 unpriced"
        "unpricedLlmSpans": cost.unpriced,
        "spanCount": len(spans),
        "openCount": sum(1 for s in spans if s.status == "open"),
        "errorCount": sum(1 for s in spans if s.status == "error"),
        "tokensByModel": _tokens_by_model(spans),
        "users": _distinct([s.user_id for s in spans]),
        "noContent": content_missing(spans),  # model calls that recorded no messages, and why
        "sdkCut": cut_summary(spans),  # spans the SDK's span limits cut, and what lifts them
    }


def trace_data(
    summary: TraceSummary,
    spans: list[SpanRecord],
    last_seen_ns: int,
    span_done: Callable[[int], None] = lambda _n: None,
    *,
    full: bool = False,
) -> dict[str, Any]:
    """What the trace page shows, as plain JSON (times as nanosecond offsets from the trace start).

    ``span_done(1)`` is called after each span (for a progress bar over a large trace). ``full``:
    every input message of every model call (else a call repeating an earlier call's refers to it).
    """
    start = min([summary.start_ns, *(s.start_ns for s in spans)])
    stop = max([last_seen_ns, summary.end_ns, *(s.end_ns or s.start_ns for s in spans)])
    out, resources = span_entries(spans, start, lambda _s: last_seen_ns, span_done, full=full)
    return {
        "kind": "trace",
        "trace": {
            "traceId": summary.trace_id,
            "rootName": summary.root_name,
            "status": summary.status,
            "start": iso(start),
            "durationNs": stop - start,
            **_counts(spans),
            "lastSeen": iso(last_seen_ns) if summary.open_count else None,
            "sessions": _distinct([summary.session_id, *(s.session_id for s in spans)]),
        },
        "spans": out,
        "resources": resources,
    }


def group_data(
    group: SpanGroup,
    spans: list[SpanRecord],
    last_seen_by_trace: dict[str, int],
    span_done: Callable[[int], None] = lambda _n: None,
    *,
    full: bool = False,
) -> dict[str, Any]:
    """The page of several traces (a run's, a session's): the same span entries as a trace page,
    each carrying its trace id, under a header for the whole group. ``last_seen_by_trace`` says
    where each trace's open spans are drawn to end (as on that trace's own page)."""

    def last_seen_of(span: SpanRecord) -> int:
        return last_seen_by_trace.get(span.trace_id, span.written_ns)

    ends = [s.end_ns or s.start_ns for s in spans]
    start = min((s.start_ns for s in spans), default=0)
    stop = max([start, *ends, *(last_seen_of(s) for s in spans if s.status == "open")])
    out, resources = span_entries(spans, start, last_seen_of, span_done, full=full)
    counts = _counts(spans)
    status = "open" if counts["openCount"] else "error" if counts["errorCount"] else "ok"
    return {
        "kind": group.kind,
        "group": {
            "kind": group.kind,
            "id": group.id,
            "pid": group.pid,
            "status": status,
            "start": iso(start),
            "durationNs": stop - start,
            "traceCount": len({s.trace_id for s in spans}),
            "rootNames": _distinct([s.name for s in spans if s.parent_span_id is None]),
            **counts,
            "lastSeen": iso(max(last_seen_by_trace.values()))
            if counts["openCount"] and last_seen_by_trace
            else None,
            "sessions": _distinct([s.session_id for s in spans]),
        },
        "spans": out,
        "resources": resources,
    }


def cassette_data(cassette: Cassette) -> dict[str, Any]:
    outcome = terminal_outcome(cassette)
    first = cassette.steps[0].timestamp if cassette.steps else 0
    rounds = 0
    steps = []
    for step in cassette.steps:
        if step.type == "model_output" and tool_calls_of(step.payload):
            rounds += 1
        in_round = step.type in ("tool_call", "tool_result") or (
            step.type == "model_output" and bool(tool_calls_of(step.payload))
        )
        steps.append(
            {
                "id": step.id,
                "index": step.index,
                "type": step.type,
                "timestamp": step.timestamp,
                "offsetMs": step.timestamp - first,
                "description": describe_step(step, 200),
                "hash": step.hash,
                "hashShort": step.hash[:8],
                "prevHash": step.prev_hash,
                "toolRound": rounds if in_round and rounds else None,
                "payload": step.payload,
            }
        )
    return {
        "kind": "cassette",
        "cassette": {
            "id": cassette.id,
            "version": cassette.version,
            "createdAt": cassette.created_at,
            "parentId": cassette.parent_id,
            "forkedFromStepId": cassette.forked_from_step_id,
            "edit": cassette.edit,
            "head": cassette.head,
            "stepCount": len(cassette.steps),
            "toolRounds": rounds,
            "outcome": {
                "status": outcome.status,
                "finalAnswer": outcome.final_answer,
                "failureReason": outcome.failure_reason,
            },
        },
        "steps": steps,
    }


@functools.cache
def _template() -> str:
    return resources.files(__package__).joinpath("report.html").read_text(encoding="utf-8")


def _page(data: dict[str, Any]) -> str:
    before, marker, after = _template().partition("__BLACKBOX_DATA__")
    assert marker, "report.html lost its data marker"
    return before + embed_json(data) + after


def trace_report(
    summary: TraceSummary,
    spans: list[SpanRecord],
    last_seen_ns: int,
    span_done: Callable[[int], None] = lambda _n: None,
    *,
    select_failure: bool = False,
    full: bool = False,
) -> str:
    """The trace page: header, waterfall, span tree, details, search, errors-only, arrow keys;
    opened on the span where it failed with ``select_failure`` (else on the first span); ``full``:
    every input message of every model call, and every attribute."""
    data = trace_data(summary, spans, last_seen_ns, span_done, full=full)
    return _page({**data, "selectFailure": select_failure, "full": full})


def group_report(
    group: SpanGroup,
    spans: list[SpanRecord],
    last_seen_by_trace: dict[str, int],
    span_done: Callable[[int], None] = lambda _n: None,
    *,
    select_failure: bool = False,
    full: bool = False,
) -> str:
    """The page of a run or a session: every trace's spans on one time axis, the same views."""
    data = group_data(group, spans, last_seen_by_trace, span_done, full=full)
    return _page({**data, "selectFailure": select_failure, "full": full})


# The steps a person can change and let the run go on from (the workbench's "Edit and continue").
EDITABLE_STEPS = ("model_input", "model_output", "tool_result")


def cassette_report(
    cassette: Cassette, *, unverified: str | None = None, edit_base: str | None = None
) -> str:
    """The cassette page: the steps in order with type, description, short hash and tool round;
    ``unverified``: why the cassette failed verify, shown first when it is used anyway;
    ``edit_base``: where each editable step's "Edit and continue" goes (``edit_base/N``: the
    workbench's editor), none when not given (a static report)."""
    data = cassette_data(cassette)
    if unverified is not None:
        data["cassette"]["unverified"] = unverified
    if edit_base is not None:
        data["editBase"], data["editable"] = edit_base, list(EDITABLE_STEPS)
    return _page(data)
