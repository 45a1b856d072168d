"""A workbench job, run as a process of its own: ``python -m otel_blackbox._web.worker SPEC.json``.

A process rather than a thread of the viewer: the built-in agent's HTTP hook is process-wide (one
session at a time), a cancel is the SIGINT a rerun already answers (its child written, ending
``interrupted``), and nothing a job does can take the viewer down. The job calls what the CLI calls
(``rerun_built_in``, ``fork_built_in``, ``run_entry``) and tells the workbench what happens as JSON
lines on stdout: the rerun's (or fork's) own events (``model_call``, ``model_output``,
``tool_answer``), ``contract_start`` and ``contract_result`` for a run of all contracts, ``branch``
and ``blame`` for a blame, then ``end`` with the exit code, or ``error`` with one line for a job
that could not start. Its stderr (the rerun's summary) is the job's log.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from otel_blackbox._types import JsonObject
from otel_blackbox.errors import BlackboxError

if TYPE_CHECKING:
    from otel_blackbox._playback.agent.run import BuiltInRerun

__all__ = ["main"]


def _emit(event: JsonObject) -> None:
    sys.stdout.write(json.dumps(event, default=str) + "\n")
    sys.stdout.flush()


def _cost(spec: dict[str, Any]) -> Decimal | None:
    return None if spec.get("max_cost") is None else Decimal(str(spec["max_cost"]))


def _rerun_program(spec: dict[str, Any]) -> int:
    """``rerun INCIDENT --model M --stub-tools -o CHILD -- PROGRAM``, as typed: the program's exit code."""
    command = [sys.executable, "-m", "otel_blackbox.cli", "rerun", spec["incident"], "--model", spec["model"]]
    command += ["--stub-tools", "-o", spec["child"]]
    if spec.get("max_cost") is not None:
        command += ["--max-cost", str(spec["max_cost"])]
    return subprocess.run(
        [*command, "--", *spec["program"]], stdin=subprocess.DEVNULL, check=False
    ).returncode


def _rerun(spec: dict[str, Any]) -> int:
    if spec.get("program"):
        return _rerun_program(spec)
    from otel_blackbox._playback.agent.run import rerun_built_in

    return rerun_built_in(Path(spec["incident"]), _built_in_plan(spec), progress=_emit)


def _built_in_plan(spec: dict[str, Any]) -> BuiltInRerun:
    """The built-in agent's plan a rerun's or a fork's spec asks for (its child, provider, model...)."""
    from otel_blackbox._playback.agent.run import BuiltInRerun  # the execution side: at run time

    return BuiltInRerun(
        output=Path(spec["child"]),
        provider=spec.get("provider"),
        model=spec.get("model"),
        stubs=dict(spec.get("stubs") or {}),
        max_cost=_cost(spec),
    )


def _fork(spec: dict[str, Any]) -> int:
    """``fork PARENT --at N <change> -o CHILD`` by the built-in agent, asked by the workbench."""
    from otel_blackbox._playback.agent.edit import edit_from
    from otel_blackbox._playback.agent.fork_run import fork_built_in

    plan = _built_in_plan(spec)
    edit = edit_from(int(spec["step"]), str(spec["change"]), str(spec["value"]))
    return fork_built_in(Path(spec["parent"]), edit, plan, by="workbench", progress=_emit)


def _run_all(spec: dict[str, Any]) -> int:
    from otel_blackbox._cassette.diff.contract import results_json
    from otel_blackbox._cassette.suite import load_suite
    from otel_blackbox._playback.agent.run_all import check_suite, run_entry

    suite = load_suite(Path(spec["folder"]))
    entries = suite.entries
    for broken in suite.broken:  # listed, not run: the others still are
        _emit({"event": "contract_result", "name": broken.name, "passed": False, "broken": broken.reason})
    check_suite(entries, model=spec.get("model"), provider=spec.get("provider"), max_cost=_cost(spec))
    children = Path(spec["children"])
    children.mkdir(parents=True, exist_ok=True)
    failed = 0
    for entry in entries:
        _emit({"event": "contract_start", "name": entry.name, **_what_runs(entry, spec)})
        result = run_entry(
            entry,
            children=children,
            model=spec.get("model"),
            provider=spec.get("provider"),
            max_cost=_cost(spec),
            progress=_emit,
        )
        failed += not result.passed
        _emit(
            {
                "event": "contract_result",
                "name": entry.name,
                "passed": result.passed,
                "child": None if result.child is None else str(result.child),
                "stopped": result.stopped,
                "assertions": results_json(result.results),
            }
        )
    return 1 if failed or suite.broken else 0


def _what_runs(entry: Any, spec: dict[str, Any]) -> JsonObject:
    """The provider and model an entry's rerun uses: the form's, else its contract's ``rerun`` block's,
    else its incident's (as ``run_entry`` chooses them)."""
    from otel_blackbox._playback.agent.run import BuiltInRerun, prepare_rerun

    block: dict[str, Any] = entry.contract.get("rerun") or {}
    provider, model = spec.get("provider") or block.get("provider"), spec.get("model") or block.get("model")
    plan = BuiltInRerun(output=Path(), provider=provider, model=model, stubs=dict(block.get("stubs") or {}))
    with contextlib.suppress(BlackboxError):  # else run_entry says why, in its own words
        _, _, provider, model = prepare_rerun(entry.incident, plan)
    return {"provider": provider, "model": model}


def _blame(spec: dict[str, Any]) -> int:
    from otel_blackbox._playback.blame import BlamePlan, blame

    plan = BlamePlan(
        output=Path(spec["children"]),
        provider=spec.get("provider"),
        model=spec.get("model"),
        stubs=dict(spec.get("stubs") or {}),
        samples=int(spec.get("samples") or 2),
        max_cost=_cost(spec),
        max_branches=spec.get("max_branches"),
    )
    report = blame(Path(spec["incident"]), plan, say=lambda line: _emit({"event": "branch", "line": line}))
    _emit({"event": "blame", "report": report.to_json()})
    return 0 if report.decisive is not None else 1


_KINDS = {"rerun": _rerun, "fork": _fork, "run-all": _run_all, "blame": _blame}


def main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    try:
        code = _KINDS[spec["kind"]](spec)
    except BlackboxError as exc:  # could not start: a setup error, one line
        _emit({"event": "error", "message": str(exc)})
        return 2
    except KeyboardInterrupt:  # cancelled between reruns
        _emit({"event": "end", "exit": 130})
        return 130
    _emit({"event": "end", "exit": code})
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
