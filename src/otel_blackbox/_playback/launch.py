"""``otel-blackbox record|replay|fork|rerun -- CMD``: run an unmodified program inside a session.

Like ``opentelemetry-instrument``, the launcher puts a directory holding a ``sitecustomize`` first
on ``PYTHONPATH``; Python imports it at start-up, before the program, and it starts the session
described by ``OTEL_BLACKBOX_SESSION_*`` variables. When the program ends (normally, by an
unhandled exception, SIGINT or SIGTERM) the session finishes and writes a small JSON report that
the launcher reads to choose its exit code, with the ``[blackbox]`` notes it prints on stderr (a
rerun's refused requests). Nothing is printed into the program's own stdout.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any, TextIO

from otel_blackbox._render.text import safe
from otel_blackbox.errors import CassetteError, ResultKept, SessionError

if TYPE_CHECKING:
    from otel_blackbox._playback.interceptor import Session

__all__ = ["bootstrap_from_env", "run_program"]

ENV_MODE = "OTEL_BLACKBOX_SESSION_MODE"
ENV_CASSETTE = "OTEL_BLACKBOX_SESSION_CASSETTE"
ENV_MATCH = "OTEL_BLACKBOX_SESSION_MATCH"
ENV_REPORT = "OTEL_BLACKBOX_SESSION_REPORT"
ENV_PLAN = "OTEL_BLACKBOX_SESSION_PLAN"  # a fork's or a rerun's plan, as JSON
_ENV = (ENV_MODE, ENV_CASSETTE, ENV_MATCH, ENV_REPORT, ENV_PLAN)
BOOTSTRAP_DIR = Path(__file__).resolve().parent / "_bootstrap"
# Offline runs still need a key for the SDKs to start; these reach no one.
PLACEHOLDER_KEYS = {
    "OPENAI_API_KEY": "sk-blackbox-placeholder",
    "ANTHROPIC_API_KEY": "sk-ant-blackbox-placeholder",
}


def _write_report(path: str, report: dict[str, Any]) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(report, handle)
    os.replace(tmp, path)


def _make_session(mode: str, cassette: str, match: str, plan_json: str | None) -> Session:
    from otel_blackbox._playback.session import open_session

    plan = json.loads(plan_json or "{}")
    stubs = {
        "stub_tools": bool(plan.get("stub_tools")),
        "run_unrecorded_tools": bool(plan.get("run_unrecorded_tools")),
    }
    allow = bool(plan.get("allow_unverified"))  # the launcher checked the cassette and warned
    if mode == "rerun":
        from otel_blackbox._playback.rerun import RerunPlan, RerunSession

        return RerunSession(
            cassette,
            RerunPlan(
                output=Path(plan["output"]),
                model=plan.get("model"),
                replies=plan.get("replies"),
                allow_network=bool(plan.get("allow_network")),
                max_cost=Decimal(plan["max_cost"]) if plan.get("max_cost") else None,
                allow_unverified=allow,
                replay_turns=int(plan.get("replay_turns") or 0),
                correction=plan.get("correction"),
                blame_branch=bool(plan.get("blame_branch")),
            ),
            **stubs,
        )
    if mode == "fork":
        from otel_blackbox._playback.fork import ForkPlan, ForkSession
        from otel_blackbox._playback.interceptor import check_match

        return ForkSession(
            cassette,
            ForkPlan(
                at=plan["at"],
                result=plan.get("result"),
                output=Path(plan["output"]),
                replies=plan["replies"],
                change=plan.get("change") or "set",
                text=plan.get("text"),
                by=plan.get("by") or "command",
            ),
            match=check_match(match),
            allow_unverified=allow,
            **stubs,
        )
    return open_session(mode, cassette, match=match, stub_tools=stubs["stub_tools"], allow_unverified=allow)


def _session_notes(session: Session) -> dict[str, Any]:
    """What the launcher reports beside the exit code: the session's notes, and whether a rerun
    re-ran anything."""
    from otel_blackbox._playback.rerun import RerunSession

    notes: dict[str, Any] = {"notes": session.notes()}
    if isinstance(session, RerunSession):
        notes["nothing_rerun"] = session.model_calls == 0
    return notes


def bootstrap_from_env() -> None:
    """In the launched program: start the session and finish it however the program ends."""
    mode, cassette = os.environ.get(ENV_MODE), os.environ.get(ENV_CASSETTE)
    report_path = os.environ.get(ENV_REPORT, "")
    if not mode or not cassette:
        return
    match = os.environ.get(ENV_MATCH, "exact")
    plan = os.environ.get(ENV_PLAN)
    # Programs this one starts must not record into the same cassette.
    for name in _ENV:
        os.environ.pop(name, None)
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p) != BOOTSTRAP_DIR]
    os.environ["PYTHONPATH"] = os.pathsep.join(paths)

    try:
        session = _make_session(mode, cassette, match, plan).start()
    except SessionError as exc:
        _write_report(report_path, {"ok": False, "error": str(exc)})
        raise SystemExit(1) from None
    except Exception as exc:
        _write_report(report_path, {"ok": False, "error": f"{type(exc).__name__}: {exc}"})
        raise SystemExit(1) from None
    failure: list[BaseException] = []
    previous_hook = sys.excepthook

    def remember(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
        failure.append(value)
        previous_hook(kind, value, tb)

    def terminate(signum: int, _frame: FrameType | None) -> None:
        stop = SystemExit(128 + signum)
        failure.append(stop)  # the recording ends run_failed / terminated, not as a success
        raise stop  # unwinds the program, then atexit finishes the session

    def finish() -> None:
        try:
            session.finish(failure[0] if failure else None)
            report: dict[str, Any] = {"ok": True}
        except ResultKept as exc:
            report = {"ok": False, "error": str(exc), "kept": exc.kept}
        except SessionError as exc:
            report = {"ok": False, "error": str(exc)}
        except Exception as exc:  # never a traceback at exit: the launcher prints one line
            report = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        report.update(_session_notes(session))
        if report_path:
            _write_report(report_path, report)

    sys.excepthook = remember
    signal.signal(signal.SIGTERM, terminate)
    atexit.register(finish)


def _check_cassette(path: Path, allow_unverified: bool) -> None:
    """Read the cassette here, before the program starts: a file that is not a cassette (or holds
    a malformed exchange or model output), or one that fails verify's hash_chain (unless
    ``allow_unverified``), is one CassetteError line, not a failure inside the program's start-up."""
    if not path.is_file():
        raise CassetteError(f"{path}: no such cassette (record it first)")
    from otel_blackbox._cassette.output import check_outputs
    from otel_blackbox._cassette.trusted import (
        checked_cassette,
    )  # the session's modules: only for the commands that run one
    from otel_blackbox._playback.exchanges import recorded_exchanges

    cassette = checked_cassette(path, allow_unverified=allow_unverified)
    recorded_exchanges(cassette, str(path))
    check_outputs(cassette, str(path))


def run_program(
    mode: str,
    cassette: str | Path,
    command: Sequence[str],
    *,
    match: str = "exact",
    plan: dict[str, Any] | None = None,
    stdout: TextIO | None = None,
) -> int:
    """Run ``command`` in a session; the program's exit code, or 1 when the session failed.
    ``stdout``: where the program's own output goes (default: ours; ``blame`` keeps its answer apart).

    A rerun whose program made no model call re-ran nothing: 1 when the program itself exited 0.
    """
    if mode != "record":
        _check_cassette(Path(cassette), bool((plan or {}).get("allow_unverified")))
    with tempfile.TemporaryDirectory(prefix="otel-blackbox-") as tmp:
        report_path = os.path.join(tmp, "report.json")
        env = dict(os.environ)
        env.update({ENV_MODE: mode, ENV_CASSETTE: str(Path(cassette).resolve()), ENV_MATCH: match})
        env[ENV_REPORT] = report_path
        if plan is not None:
            env[ENV_PLAN] = json.dumps(plan)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(BOOTSTRAP_DIR), env.get("PYTHONPATH", "")) if p)
        if _offline(mode, plan):
            for name, value in PLACEHOLDER_KEYS.items():
                env.setdefault(name, value)
            if not env.get("GOOGLE_API_KEY"):  # google-genai reads either; GOOGLE_API_KEY wins
                env.setdefault("GEMINI_API_KEY", "blackbox-placeholder")
        try:
            completed = subprocess.run(list(command), env=env, check=False, stdout=stdout)
        except FileNotFoundError:
            raise SessionError(f"command not found: {command[0]}") from None
        except KeyboardInterrupt:
            return 130
        try:
            with open(report_path, encoding="utf-8") as handle:
                report = json.load(handle)
        except (OSError, ValueError):
            raise SessionError(
                f"the program ended (exit {completed.returncode}) without finishing the session: "
                "was it killed, or is it not a Python program?"
            ) from None
    for note in report.get("notes", []):
        print(safe(note), file=sys.stderr)
    if report.get("kept"):  # the cassette is written, elsewhere: the program's exit code still holds
        raise ResultKept(str(report.get("error")), str(report["kept"]), completed.returncode)
    if not report.get("ok"):
        raise SessionError(str(report.get("error")))
    if report.get("nothing_rerun") and completed.returncode == 0:
        return 1
    return completed.returncode


def _offline(mode: str, plan: dict[str, Any] | None) -> bool:
    """Whether no model is called live: the SDKs then get placeholder keys to start with."""
    if mode == "record":
        return False
    return mode != "rerun" or (plan or {}).get("replies") is not None
