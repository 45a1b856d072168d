"""The contract that decides a diff: the child checked against an ``eval generate`` contract, named
(``diff --contract FILE``) or kept beside the incident under its name (``incident.json`` →
``incident.contract.json``, the ``.json`` replaced). Given or found, it decides: the child passes
only when it completed and every assertion passed, whatever the verdict line says.

jsonschema (through evals) is imported only when there is a contract to load.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from otel_blackbox._cassette.model import Cassette, terminal_outcome

if TYPE_CHECKING:
    from otel_blackbox._cassette.evals import AssertionResult

__all__ = ["CONTRACT_SUFFIX", "ContractCheck", "contract_beside", "find_contract", "results_json"]

CONTRACT_SUFFIX = ".contract.json"


def contract_beside(incident: Path) -> Path:
    """Where an incident's own contract is kept: ``incident.json`` (or ``incident.json.gz``) →
    ``incident.contract.json``."""
    return incident.with_name(incident.name.removesuffix(".gz").removesuffix(".json") + CONTRACT_SUFFIX)


@dataclass
class ContractCheck:
    """A contract loaded (and validated) before the diff, then run on the child."""

    path: Path
    contract: dict[str, Any]
    beside: bool  # found beside the incident, not named
    results: list[AssertionResult] = field(default_factory=list)
    child_completed: bool = False

    def run(self, child: Cassette) -> None:
        from otel_blackbox._cassette.evals import run_contract

        self.results = run_contract(self.contract, child)
        self.child_completed = terminal_outcome(child).status == "success"

    @property
    def passed(self) -> bool:
        return self.child_completed and all(r.passed for r in self.results)

    def evidence(self, parent: Cassette, child: Cassette) -> tuple[bool, bool]:
        """Whether the contract passes on the parent and on the child, the child's results kept.
        The parent is judged on what it did, not on how it ended (its ``status`` assertions left
        out): a verdict asks the contract what the run's end alone cannot tell."""
        self.run(parent)
        parent_passes = all(r.passed for r in self.results if r.kind != "status")
        self.run(child)
        return parent_passes, self.passed

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "besideIncident": self.beside,
            "name": self.contract.get("name"),
            "childCompleted": self.child_completed,
            "passed": self.passed,
            "assertions": results_json(self.results),
        }


def results_json(results: list[AssertionResult]) -> list[dict[str, Any]]:
    """Assertion results in the JSON answers (``diff --json``, ``eval run-all --json``)."""
    return [
        {
            "kind": r.kind,
            "description": r.description,
            "passed": r.passed,
            "detail": r.detail,
            **({"proposed": True} if r.proposed else {}),
        }
        for r in results
    ]


def find_contract(incident: Path, given: Path | None) -> ContractCheck | None:
    """The contract given, else the one beside the incident when there is one, loaded: a bad one
    raises (CassetteError, as any unreadable input) before anything is shown."""
    path = given if given is not None else contract_beside(incident)
    if given is None and not path.is_file():
        return None
    from otel_blackbox._cassette.evals import load_contract

    return ContractCheck(path, load_contract(path), beside=given is None)
