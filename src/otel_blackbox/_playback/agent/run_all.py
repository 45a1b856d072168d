"""A contract suite run: each entry's incident rerun by the built-in agent, the child checked against
the entry's contract (``eval run-all``, and the workbench's "run all").

The contract's ``rerun`` block says how its good child ran (stubs, model, provider); what the caller
gives wins over it. ``check_suite`` finds every setup error (an incident, a stub, a provider, a
price, a key, the base URL) before the first rerun, so a suite does not fail half-way for a reason
that was known at the start.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from otel_blackbox._cassette.diff.contract import ContractCheck
from otel_blackbox._cassette.evals import AssertionResult
from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.model import Cassette, terminal_outcome
from otel_blackbox._cassette.suite import SuiteEntry
from otel_blackbox._playback.agent.run import BuiltInRerun, prepare_rerun, rerun_built_in
from otel_blackbox._playback.agent.sdk import make_client
from otel_blackbox._types import JsonObject
from otel_blackbox.errors import BlackboxError

__all__ = ["SuiteResult", "check_suite", "child_path", "run_entry"]

_STOPPED_LIMIT = 300


@dataclass(frozen=True)
class SuiteResult:
    entry: SuiteEntry
    child: Path | None
    results: list[AssertionResult]
    stopped: str | None  # why the rerun stopped short, one line; None when the child completed
    completed: bool = False  # the child ended run_completed / success

    @property
    def passed(self) -> bool:
        """The child completed and every assertion passed (``ContractCheck.passed``)."""
        return self.completed and all(r.passed for r in self.results)


def child_path(entry: SuiteEntry, children: Path) -> Path:
    return children / f"{entry.name}.child.json"


def _plan(
    entry: SuiteEntry,
    output: Path,
    *,
    model: str | None = None,
    provider: str | None = None,
    base_url: str | None = None,
    max_cost: Decimal | None = None,
    allow_unverified: bool = False,
) -> BuiltInRerun:
    """The rerun of an entry: the caller's model and provider, else the contract's ``rerun`` block's
    (else the incident's, which ``rerun_built_in`` chooses), and the block's stubs."""
    block: dict[str, Any] = entry.contract.get("rerun") or {}
    return BuiltInRerun(
        output=output,
        provider=provider or block.get("provider"),
        model=model or block.get("model"),
        base_url=base_url,
        stubs=dict(block.get("stubs") or {}),
        max_cost=max_cost,
        allow_unverified=allow_unverified,
        stub_hints=False,  # `eval run-all` takes no --stub: the contract's rerun block holds the stubs
    )


def check_suite(
    entries: list[SuiteEntry],
    *,
    model: str | None = None,
    provider: str | None = None,
    base_url: str | None = None,
    max_cost: Decimal | None = None,
    allow_unverified: bool = False,
) -> None:
    """Every setup error of the suite's reruns, before any call: each entry's incident and plan
    (``prepare_rerun``), then a client of each API they use (its SDK, its key, the base URL
    answering). A BlackboxError names the entry."""
    apis: set[str] = set()
    for entry in entries:
        plan = _plan(
            entry, Path(), model=model, provider=provider, base_url=base_url, max_cost=max_cost,
            allow_unverified=allow_unverified,
        )  # fmt: skip
        try:
            apis.add(prepare_rerun(entry.incident, plan)[2])
        except BlackboxError as exc:
            raise BlackboxError(f"{entry.name}: {exc}") from None
    for api in sorted(apis):
        make_client(api, base_url=base_url).close()


def run_entry(
    entry: SuiteEntry,
    *,
    children: Path,
    model: str | None,
    provider: str | None = None,
    base_url: str | None = None,
    max_cost: Decimal | None = None,
    allow_unverified: bool = False,
    progress: Callable[[JsonObject], None] | None = None,
) -> SuiteResult:
    """Rerun the entry's incident into ``children/NAME.child.json`` and check its contract on the
    child. A setup error (BlackboxError before any call) propagates; Ctrl-C too."""
    output = child_path(entry, children)
    plan = _plan(
        entry, output, model=model, provider=provider, base_url=base_url, max_cost=max_cost,
        allow_unverified=allow_unverified,
    )  # fmt: skip
    if rerun_built_in(entry.incident, plan, progress=progress) == 130:
        raise KeyboardInterrupt  # the child is written, ending interrupted
    child = load_cassette(output)
    check = ContractCheck(entry.contract_path, entry.contract, beside=True)
    check.run(child)
    return SuiteResult(entry, output, check.results, _stopped(child), check.child_completed)


def _stopped(child: Cassette) -> str | None:
    """Why the child stopped short, from its ``run_failed`` step: ``reason: message``; None when it
    did not fail."""
    outcome = terminal_outcome(child)
    if outcome.status != "error":
        return None
    payload = child.steps[-1].payload
    message = str(payload.get("message") or "").removeprefix("[blackbox] ").strip()
    line = " ".join(f"{outcome.failure_reason or 'run_failed'}: {message}".split()).rstrip(": ")
    return line if len(line) <= _STOPPED_LIMIT else f"{line[: _STOPPED_LIMIT - 1]}…"
