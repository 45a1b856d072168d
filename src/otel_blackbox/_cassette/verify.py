"""verify: four ordered checks over a cassette, stopping at the first failure.

1. ``schema_version``       the file says version 2;
2. ``hash_chain``           indexes 0..n-1, ids ``<cassette id>:<index>``, prevHash links, every hash
                            recomputed; with ``expect_head``, the last hash is the one kept elsewhere;
3. ``provider_neutrality``  nothing provider-specific (see :mod:`.neutrality`);
4. ``replayability``        the recorded outcome agrees with the steps, and there is something to replay
                            (a model call, or an HTTP exchange a session recorded).

Checks after a failure are ``skip``: once the chain is broken, nothing read from it can be trusted.
Verification never raises for a bad cassette; only :func:`verify_file` raises, and only
:class:`~otel_blackbox.errors.CassetteError` for a file that is not a cassette at all.
:func:`check_before_writing` is what a command that builds a cassette runs before writing it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from otel_blackbox._cassette.canonical import CanonicalError, StepHasher
from otel_blackbox._cassette.captured import HTTP_EXCHANGE_EVENT
from otel_blackbox._cassette.io import parse_cassette, read_document
from otel_blackbox._cassette.model import FORMAT_VERSION, Cassette, Step, choice_calls, terminal_outcome
from otel_blackbox._cassette.neutrality import audit_neutrality
from otel_blackbox._render.words import counted
from otel_blackbox.errors import CassetteError

__all__ = [
    "CHECK_NAMES",
    "CheckName",
    "CheckResult",
    "CheckStatus",
    "VerifyReport",
    "check_before_writing",
    "failure_line",
    "read_verified",
    "verify_cassette",
    "verify_file",
]

CheckName = Literal["schema_version", "hash_chain", "provider_neutrality", "replayability"]
CheckStatus = Literal["pass", "fail", "skip"]
CHECK_NAMES: tuple[CheckName, ...] = ("schema_version", "hash_chain", "provider_neutrality", "replayability")

TERMINAL_EVENTS = ("run_completed", "run_failed")
_PLAIN = re.compile(r"[A-Za-z0-9_.:\-]{1,64}", re.ASCII)


@dataclass(frozen=True)
class CheckResult:
    name: CheckName
    status: CheckStatus
    detail: str
    step_index: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "detail": self.detail,
            "step_index": self.step_index,
        }


@dataclass(frozen=True)
class VerifyReport:
    checks: tuple[CheckResult, ...]

    @property
    def passed(self) -> bool:
        return all(check.status == "pass" for check in self.checks)

    @property
    def first_failure(self) -> CheckResult | None:
        return next((check for check in self.checks if check.status == "fail"), None)

    def to_json(self) -> dict[str, Any]:
        failure = self.first_failure
        return {
            "passed": self.passed,
            "checks": [check.to_json() for check in self.checks],
            "first_failure": failure.to_json() if failure else None,
        }


class _Failed(Exception):
    """A check's verdict: the first problem, with the step it is at."""

    def __init__(self, detail: str, step_index: int | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.step_index = step_index


def _show(value: Any) -> str:
    """A value from the file, safe for a one-line detail: plain if simple, else quoted and shortened."""
    if isinstance(value, str) and _PLAIN.fullmatch(value):
        return value
    text = json.dumps(value, ensure_ascii=True, default=repr)
    return text if len(text) <= 40 else text[:39] + "…"


def _one_line(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _short_hash(value: Any) -> str:
    if isinstance(value, str) and _PLAIN.fullmatch(value):
        return value if len(value) <= 8 else f"{value[:8]}…"
    return _show(value)


def _at(position: int, problem: str) -> _Failed:
    return _Failed(f"step {position}: {problem}", position)


# -- schema_version ----------------------------------------------------------------------------------


def _check_version(version: Any, present: bool = True) -> str:
    if not present:
        raise _Failed("version field is missing")
    if isinstance(version, bool) or version != FORMAT_VERSION or not isinstance(version, int):
        shown = _one_line(json.dumps(version, ensure_ascii=True, default=repr), 40)  # "2" is not 2
        raise _Failed(f"version {shown} is not supported (expected {FORMAT_VERSION})")
    return f"version {FORMAT_VERSION}"


# -- hash_chain --------------------------------------------------------------------------------------


def _check_link(cassette: Cassette, position: int, step: Step, prev: Step | None, hasher: StepHasher) -> None:
    if step.index != position:
        raise _at(position, f"index is {step.index}, expected {position} (a step removed, added or moved)")
    expected_id = f"{cassette.id}:{position}"
    if step.id != expected_id:
        raise _at(position, f"id {_show(step.id)} is not {_show(expected_id)}")
    if prev is None and step.prev_hash is not None:
        raise _at(position, f"prevHash must be null for the first step, found {_short_hash(step.prev_hash)}")
    if prev is not None and step.prev_hash != prev.hash:
        shown = _short_hash(step.prev_hash)
        raise _at(position, f"prevHash {shown} is not the previous step's hash {_short_hash(prev.hash)}")
    try:
        recomputed = hasher.hash_step(step.index, step.type, step.timestamp, step.payload, step.prev_hash)
    except (CanonicalError, RecursionError) as exc:
        raise _at(position, f"payload has no canonical JSON form ({_one_line(str(exc))})") from None
    if recomputed != step.hash:
        stored = _short_hash(step.hash)
        raise _at(position, f"hash does not match its content (expected {recomputed[:8]}…, stored {stored})")


def _check_head(cassette: Cassette, expect_head: str) -> None:
    expected = expect_head.strip().lower()
    if not cassette.steps:
        raise _Failed(f"no steps, but the expected head is {_short_hash(expected)}")
    if cassette.head != expected:
        last = len(cassette.steps) - 1
        raise _at(
            last,
            f"last hash {_short_hash(cassette.head)} is not the expected head {_short_hash(expected)}"
            " (steps cut from the end, or another run)",
        )


def _check_chain(cassette: Cassette, expect_head: str | None) -> str:
    prev: Step | None = None
    hasher = StepHasher()  # a long run's model inputs repeat their messages: each is canonicalized once
    for position, step in enumerate(cassette.steps):
        _check_link(cassette, position, step, prev, hasher)
        prev = step
    detail = f"{counted(len(cassette.steps), 'step')}, chain intact"
    if expect_head is not None:
        _check_head(cassette, expect_head)
        detail += ", head as expected"
    return detail


# -- provider_neutrality -----------------------------------------------------------------------------


def _check_neutrality(cassette: Cassette) -> str:
    findings = audit_neutrality(cassette)
    if not findings:
        return "no provider ids, provider response keys or credentials"
    first = findings[0]
    where = "cassette" if first.step_index is None else f"step {first.step_index}"
    more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
    raise _Failed(f"{where}: {first.describe()}{more}", first.step_index)


# -- replayability -----------------------------------------------------------------------------------


@dataclass
class _Replay:
    """What the steps so far establish, read in order."""

    requested: dict[str, str] = field(default_factory=dict)  # toolCallId -> toolName, from model_outputs
    executed: dict[str, str] = field(default_factory=dict)  # toolCallId -> toolName, from tool_call steps
    last_output: tuple[int, Any] | None = None  # the latest model_output: (step, payload)


def _call_ref(step: Step, position: int) -> tuple[str, Any]:
    payload = step.payload if isinstance(step.payload, dict) else {}
    call_id = payload.get("toolCallId")
    if not isinstance(call_id, str):
        raise _at(position, f"{step.type} has no string toolCallId")
    return call_id, payload.get("toolName")


def _replay_model_output(state: _Replay, step: Step, position: int, is_last: bool) -> None:
    for call in (c for calls in choice_calls(step.payload) for c in calls):  # any choice may be run
        state.requested[call.tool_call_id] = call.tool_name
    state.last_output = (position, step.payload)


def _replay_tool_call(state: _Replay, step: Step, position: int, is_last: bool) -> None:
    call_id, name = _call_ref(step, position)
    if call_id not in state.requested:
        raise _at(position, f"tool_call {_show(call_id)} was not requested by an earlier model_output")
    if state.requested[call_id] != name:
        wanted = _show(state.requested[call_id])
        raise _at(position, f"tool_call {_show(call_id)} runs {_show(name)}, the model requested {wanted}")
    state.executed[call_id] = name


def _replay_tool_result(state: _Replay, step: Step, position: int, is_last: bool) -> None:
    call_id, name = _call_ref(step, position)
    if call_id not in state.executed:
        raise _at(position, f"tool_result {_show(call_id)} has no earlier tool_call with that toolCallId")
    if state.executed[call_id] != name:
        ran = _show(state.executed[call_id])
        raise _at(position, f"tool_result {_show(call_id)} is for {_show(name)}, its tool_call ran {ran}")


def _check_success_claim(state: _Replay, payload: dict[str, Any], position: int) -> None:
    output = state.last_output
    if output is None or not isinstance(output[1], dict) or output[1].get("type") != "final_answer":
        after = "no model_output" if output is None else f"the last model_output (step {output[0]})"
        raise _at(position, f"run_completed/success, but {after} is not a final_answer")
    text, result = output[1].get("text"), payload.get("result")
    if isinstance(text, str) and isinstance(result, str) and text != result:
        raise _at(position, f"run_completed result differs from the final_answer at step {output[0]}")


def _replay_metadata(state: _Replay, step: Step, position: int, is_last: bool) -> None:
    payload = step.payload if isinstance(step.payload, dict) else {}
    event = payload.get("event")
    if event not in TERMINAL_EVENTS:
        return
    if not is_last:
        raise _at(position, f"terminal event {event}/{_show(payload.get('status'))} is not the last step")
    if event == "run_completed" and payload.get("status") == "success":
        _check_success_claim(state, payload, position)


def _replay_nothing(state: _Replay, step: Step, position: int, is_last: bool) -> None:
    pass


_REPLAY_RULES: dict[str, Callable[[_Replay, Step, int, bool], None]] = {
    "model_input": _replay_nothing,
    "model_output": _replay_model_output,
    "tool_call": _replay_tool_call,
    "tool_result": _replay_tool_result,
    "metadata": _replay_metadata,
}


def _replayable(step: Step) -> bool:
    """A step a replay serves: a model call, or an HTTP exchange a recording session kept."""
    if step.type == "model_input":
        return True
    return (
        step.type == "metadata"
        and isinstance(step.payload, dict)
        and step.payload.get("event") == HTTP_EXCHANGE_EVENT
    )


def _check_replay(cassette: Cassette) -> str:
    state = _Replay()
    last = len(cassette.steps) - 1
    for position, step in enumerate(cassette.steps):
        _REPLAY_RULES.get(step.type, _replay_nothing)(state, step, position, position == last)
    if not any(_replayable(step) for step in cassette.steps):
        # Spans in which no model call was recognized: a replay would serve nothing and prove nothing.
        raise _Failed("no model call in the cassette: there is nothing to replay")
    return f"outcome {terminal_outcome(cassette).status}"


# -- running -----------------------------------------------------------------------------------------


def _run(checks: list[tuple[CheckName, Callable[[], str]]]) -> VerifyReport:
    results: list[CheckResult] = []
    for name, check in checks:
        if results and results[-1].status != "pass":
            results.append(CheckResult(name, "skip", "skipped (an earlier check failed)"))
            continue
        try:
            results.append(CheckResult(name, "pass", check()))
        except _Failed as failure:
            results.append(CheckResult(name, "fail", failure.detail, failure.step_index))
    return VerifyReport(tuple(results))


def _verify(
    cassette: Cassette,
    version_check: Callable[[], str],
    expect_head: str | None,
    through: CheckName = "replayability",
) -> VerifyReport:
    checks: list[tuple[CheckName, Callable[[], str]]] = [
        ("schema_version", version_check),
        ("hash_chain", lambda: _check_chain(cassette, expect_head)),
        ("provider_neutrality", lambda: _check_neutrality(cassette)),
        ("replayability", lambda: _check_replay(cassette)),
    ]
    return _run(checks[: CHECK_NAMES.index(through) + 1])


def verify_cassette(cassette: Cassette, *, expect_head: str | None = None) -> VerifyReport:
    """The four checks in order; never raises for a bad cassette."""
    return _verify(cassette, lambda: _check_version(cassette.version), expect_head)


def failure_line(failure: CheckResult) -> str:
    """A failed check as the end of one line: ``(hash_chain) at step 0: hash does not match ...``,
    or ``(schema_version): version 3 is not supported ...`` for one that is at no step."""
    detail = failure.detail
    if failure.step_index is not None and not detail.startswith("step "):
        detail = f"step {failure.step_index}: {detail}"
    where = " at " if detail.startswith("step ") else ": "
    return f"({failure.name}){where}{detail}"


def check_before_writing(cassette: Cassette, *, force: bool) -> str | None:
    """A cassette about to be written: None when it verifies. Else CassetteError, one line naming the
    check and the step where ``verify`` would fail (nothing is written); with ``force``, that line
    as a warning to show, and the caller writes it anyway. Spans can tell a story no replay can
    play (a tool span that no model call asked for): better refused here than found by ``verify``."""
    failure = verify_cassette(cassette).first_failure
    if failure is None:
        return None
    problem = f"the cassette would fail verify {failure_line(failure)}"
    if not force:
        raise CassetteError(f"{problem}; nothing written (--force writes it anyway)")
    return f"{problem}; written anyway (--force)"


def read_verified(
    path: str | Path, *, expect_head: str | None = None, through: CheckName = "replayability"
) -> tuple[Cassette, VerifyReport]:
    """Load, then run the checks up to ``through`` (``hash_chain``: only what says the file is the
    one written, the cheap part); a wrong or missing version is a schema_version failure, not an error.

    Raises CassetteError when the file is not a structurally valid cassette (not JSON, a missing field).
    """
    data = read_document(path)
    present, version = False, None
    if isinstance(data, dict):
        # Judged from the raw value: parsing would refuse a non-integer version or default a missing one.
        present, version = "version" in data, data.get("version")
        data = {key: value for key, value in data.items() if key != "version"}
    cassette = parse_cassette(data, str(path), check_version=False)
    report = _verify(cassette, lambda: _check_version(version, present), expect_head, through)
    return cassette, report


def verify_file(path: str | Path, *, expect_head: str | None = None) -> VerifyReport:
    """Load and verify (:func:`read_verified`, every check)."""
    return read_verified(path, expect_head=expect_head)[1]
