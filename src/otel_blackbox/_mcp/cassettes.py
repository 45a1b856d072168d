"""The tools over cassettes: one written from the database (the server's only write), inspect, verify,
diff, eval run, and blame (branches rerun on a live model), with the CLI's own functions
(``cassette.*``, ``render.cassette_text``, ``playback.blame``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from otel_blackbox._cassette.diff.contract import find_contract
from otel_blackbox._cassette.diff.report import diff_cassettes as diff_reports
from otel_blackbox._cassette.diff.text import format_diff
from otel_blackbox._cassette.from_spans.cassette import conversation_cassettes, file_names, run_cassettes
from otel_blackbox._cassette.io import save_cassette
from otel_blackbox._cassette.model import Cassette, terminal_outcome
from otel_blackbox._cassette.trusted import load_checked_cassette, resealed
from otel_blackbox._cassette.verify import check_before_writing, verify_file
from otel_blackbox._cli.common import group_spans
from otel_blackbox._mcp.bounds import MAX_CHARS, VALUE_CHARS, clip_strings, dumps, fit, text_arg, usd_arg
from otel_blackbox._mcp.traces import reading
from otel_blackbox._output_file import check_output_file
from otel_blackbox._render.cassette_text import render_timeline
from otel_blackbox._render.text import safe
from otel_blackbox._render.words import counted
from otel_blackbox._store import queries
from otel_blackbox._store.trace_logs import load_trace
from otel_blackbox.errors import BadArgument, OutputError

__all__ = [
    "MAX_CASSETTES",
    "blame_incident",
    "carrying",
    "checked_cassettes",
    "diff_cassettes",
    "diff_result",
    "eval_run",
    "inspect_cassette",
    "output_target",
    "verify_cassette",
    "write_cassette",
]

MAX_CASSETTES = 50  # one eval_run call
_DETAIL_CHARS = 300  # an assertion's description or detail in eval_run
ALLOW = "allow_unverified=true"  # how a tool's caller goes on with a cassette that fails verify


def checked_cassettes(paths: list[str], allow_unverified: bool) -> tuple[list[Cassette], str | None]:
    """The cassettes, each checked before use (schema_version, hash_chain): a broken one is the
    tool's error (one line: the file, the check, the step), unless ``allow_unverified``; then the
    warnings, joined, for the answer to carry."""
    checked = [load_checked_cassette(Path(p), allow_unverified=allow_unverified, option=ALLOW) for p in paths]
    warnings = [c.warning for c in checked if c.warning is not None]
    return [c.cassette for c in checked], "; ".join(warnings) or None


def carrying(warning: str | None, result: dict[str, Any]) -> dict[str, Any]:
    return result if warning is None else {"unverified": warning, **result}


def output_target(path: str, db: Path, overwrite: bool) -> Path:
    """Where the cassette goes: a file the CLI's -o would take (never the database, a folder, or a
    missing folder), and not over a file unless ``overwrite``."""
    try:
        target = check_output_file(path, database=db)
    except OutputError as exc:
        raise BadArgument(str(exc)) from None
    if target.exists() and not overwrite:
        raise BadArgument(f"{target} exists: pass overwrite=true to replace it")
    return target


def _subagent_files(names: list[str], cassettes: list[Cassette]) -> list[dict[str, Any]]:
    """Each sub-agent's cassette written beside the main one: its file, and the step of its parent's
    (the call its result answers) that started it."""
    found: list[dict[str, Any]] = []
    for name, sub in zip(names[1:], cassettes[1:], strict=True):
        link: dict[str, Any] = sub.subagent_of or {}
        entry: dict[str, Any] = {
            "path": name,
            "steps": len(sub.steps),
            "outcome": terminal_outcome(sub).status,
        }
        found.append({**entry, **{k: link[k] for k in ("step", "toolName") if k in link}})
    return found


def write_cassette(
    db: Path,
    path: str,
    *,
    trace_id: str | None = None,
    run_id: str | None = None,
    session_id: str | None = None,
    overwrite: bool = False,
    force: bool = False,
) -> str:
    given = {"trace_id": trace_id, "run_id": run_id, "session_id": session_id}
    named = [name for name, value in given.items() if value is not None]
    if len(named) != 1:
        got = f" (got {' and '.join(named)})" if named else ""
        raise BadArgument(f"give exactly one of trace_id, run_id, session_id{got}")
    text_arg("session_id", session_id)
    target = output_target(path, db, overwrite)
    with reading(db) as conn:
        if trace_id is not None:
            spans = load_trace(conn, queries.resolve_trace_id(conn, trace_id))
            cassettes = conversation_cassettes(spans)
            source = f"trace {spans[0].trace_id}"
        else:
            kind, ident, spans = group_spans(conn, run_id, session_id)
            own_id = f"{kind}-{ident}"
            cassettes = (
                run_cassettes(spans, cassette_id=own_id)
                if kind == "run"
                else conversation_cassettes(spans, cassette_id=own_id)
            )
            traces = len({s.trace_id for s in spans})
            source = f"{counted(traces, 'trace')} of {kind} {ident}"
    names = file_names(str(target), cassettes)
    for name in names[1:]:  # a sub-agent's file beside it: the same rule as the main one's
        output_target(name, db, overwrite)
    # CassetteError: a tool error, nothing written
    warnings = [w for c in cassettes if (w := check_before_writing(c, force=force)) is not None]
    for name, written in zip(names, cassettes, strict=True):
        save_cassette(written, name)
    cassette = cassettes[0]
    outcome = terminal_outcome(cassette)
    result = {
        "path": str(target),
        "cassette_id": cassette.id,
        "source": source,
        "steps": len(cassette.steps),
        "outcome": outcome.status,
        "final_answer": outcome.final_answer,
        "failure_reason": outcome.failure_reason,
        "head": cassette.head,
        **({"subagents": _subagent_files(names, cassettes)} if len(cassettes) > 1 else {}),
        **({"warning": "; ".join(warnings)} if warnings else {}),
    }
    return dumps(clip_strings(result, VALUE_CHARS))


def inspect_cassette(
    path: str, *, offset: int = 0, limit: int = 100, width: int = 160, allow_unverified: bool = False
) -> str:
    """``otel-blackbox inspect``: the cassette's header, then its steps from ``offset``, one a line
    (with ``allow_unverified``, a cassette that fails verify: the warning first, and every line
    starting ``[unverified] ``)."""
    (cassette,), warning = checked_cassettes([path], allow_unverified)
    lines = render_timeline(cassette, limit=width)
    total = len(cassette.steps)
    if offset and offset >= total:
        raise BadArgument(f"offset {offset} is past the end ({counted(total, 'step')})")
    first_step = len(lines) - total - (1 if cassette.head else 0)
    header, steps, tail = (
        lines[:first_step],
        lines[first_step : first_step + total],
        lines[first_step + total :],
    )
    page = steps[offset : offset + limit]
    shown = fit(page, MAX_CHARS - sum(len(line) + 1 for line in header) - 600)
    end = offset + shown
    out = [*header, f"steps {offset}..{end - 1} of {total}", *page[:shown]]
    if end < total:
        out.append(f"[{total - end} more steps: call inspect_cassette with the same path and offset={end}]")
    else:
        out += [*tail, f"[end of the cassette: none of its {counted(total, 'step')} remain]"]
    if warning is not None:
        out = [f"[unverified] {line}" for line in [warning, *out]]
    return "\n".join(out)


def verify_cassette(path: str, *, expect_head: str | None = None) -> str:
    """``otel-blackbox verify --json``: the four checks in order, the first failure, passed or not."""
    report = verify_file(Path(path), expect_head=expect_head)
    return dumps(clip_strings(report.to_json(), VALUE_CHARS))


def diff_cassettes(parent: str, child: str, *, semantic: bool = False, allow_unverified: bool = False) -> str:
    """``otel-blackbox diff``: the first divergent step and what it changed in the outcome, and the
    contract kept beside the parent (``incident.contract.json``) checked on the child when there is one."""
    return dumps(diff_result(parent, child, semantic=semantic, allow_unverified=allow_unverified))


def diff_result(
    parent: str, child: str, *, semantic: bool = False, allow_unverified: bool = False
) -> dict[str, Any]:
    """What ``diff_cassettes`` answers, as a dict (``fork_from_step`` carries it)."""
    check = find_contract(Path(parent), None)
    (parent_cassette, child_cassette), warning = checked_cassettes([parent, child], allow_unverified)
    if warning is not None:  # compared by what their content hashes to, never by a hash kept in the file
        parent_cassette, child_cassette = resealed(parent_cassette), resealed(child_cassette)
    evidence = None if check is None else check.evidence(parent_cassette, child_cassette)
    report = diff_reports(parent_cassette, child_cassette, semantic=semantic, contract=evidence)
    result: dict[str, Any] = {
        "diverged": report.diverged,
        "index": report.index,
        "shared_prefix": report.shared_prefix,
        "verdict": report.outcome.verdict,
        "outcome": clip_strings(report.outcome.to_json(), VALUE_CHARS),
        "report": format_diff(report),
    }
    if check is not None:
        result["contract"] = clip_strings(check.to_json(), _DETAIL_CHARS)
    return carrying(warning, result)


def eval_run(contract: str, cassettes: list[str], *, allow_unverified: bool = False) -> str:
    """``otel-blackbox eval run``: each cassette checked against the contract, pass or fail."""
    from otel_blackbox._cassette.evals import load_contract, run_contract  # jsonschema: only for this tool

    if not cassettes:
        raise BadArgument("cassettes is empty: give at least one cassette path")
    if len(cassettes) > MAX_CASSETTES:
        raise BadArgument(f"{len(cassettes)} cassettes: at most {MAX_CASSETTES} a call")
    loaded = load_contract(Path(contract))
    checked, warning = checked_cassettes(cassettes, allow_unverified)
    rows: list[dict[str, Any]] = []
    for path, cassette in zip(cassettes, checked, strict=True):
        results = run_contract(loaded, cassette)
        failed = [r for r in results if not r.passed]
        rows.append(
            {
                "path": path,
                "status": "fail" if failed else "pass",
                "passed": len(results) - len(failed),
                "assertions": len(results),
                "failures": [
                    {"kind": r.kind, "description": r.description, "detail": r.detail, "proposed": r.proposed}
                    for r in failed
                ],
            }
        )
    result = {
        "contract": contract,
        "name": safe(loaded.get("name", "")),
        "passed": all(row["status"] == "pass" for row in rows),
        "cassettes": clip_strings(rows, _DETAIL_CHARS),
    }
    return dumps(carrying(warning, result))


def blame_incident(
    incident: str,
    output: str,
    *,
    model: str | None = None,
    provider: str | None = None,
    stubs: dict[str, Any] | None = None,
    good: str | None = None,
    contract: str | None = None,
    samples: int = 3,
    max_cost: str | None = None,
    max_branches: int | None = None,
    allow_unverified: bool = False,
) -> str:
    """``otel-blackbox blame --format json``: the decisive step, found by branching and rerunning."""
    from otel_blackbox._playback.blame import BlamePlan, blame  # the execution side: only for this tool

    budget = usd_arg("max_cost", max_cost)
    folder = Path(output)
    if folder.exists() and not folder.is_dir():
        raise BadArgument(f"output {output}: not a folder")
    _, warning = checked_cassettes([incident] if good is None else [incident, good], allow_unverified)
    plan = BlamePlan(
        output=folder, provider=provider, model=model, stubs=dict(stubs or {}),
        good=None if good is None else Path(good), contract=None if contract is None else Path(contract),
        samples=samples, max_cost=budget, max_branches=max_branches, allow_unverified=allow_unverified,
    )  # fmt: skip
    report = blame(Path(incident), plan, say=lambda _line: None)  # stdout is the protocol
    return dumps(carrying(warning, clip_strings(report.to_json(), VALUE_CHARS)))
