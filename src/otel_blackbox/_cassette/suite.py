"""A contract suite: a folder of incidents, each with its contract beside it (``NAME.json`` and
``NAME.contract.json``, the convention ``diff`` already reads), which ``eval run-all`` reruns and
checks. The workbench saves entries here and CI runs them; this module only reads and writes the
files (the reruns are the execution side's, ``_playback.agent.run_all``).

One entry cannot break the suite: an entry whose contract does not load, or whose incident is
missing, is read as broken (``BrokenEntry``, with the reason) while the others run. A name is checked
when an entry is saved (``check_name``, the workbench's and the CLI's rule), so that its two files
read back as that entry.

A contract may carry a ``rerun`` block: the stub answers, model and provider of the good child it
was generated from, so that a rerun of its incident can be answered and run the same way again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from otel_blackbox._atomic import atomic_binary_writer, atomic_text_writer
from otel_blackbox._cassette.diff.contract import CONTRACT_SUFFIX
from otel_blackbox._cassette.evals import dump_contract, load_contract, validate_contract
from otel_blackbox._cassette.io import document_of, is_gzip, parse_cassette, read_text
from otel_blackbox._cassette.model import Cassette
from otel_blackbox._cassette.trusted import load_checked_cassette
from otel_blackbox.errors import BadArgument, CassetteError, OutputError

__all__ = [
    "BrokenEntry",
    "Suite",
    "SuiteEntry",
    "check_name",
    "load_suite",
    "save_entry",
    "stubs_of",
    "with_rerun",
]

# A name is a file stem on every system: no separator, no leading dot (hidden, or ".."). A dot inside
# is read right, but not ".contract" at the end: NAME.contract's incident, NAME.contract.json, would
# read as the contract of an entry NAME.
_SAFE_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,79}")
_READ_AS_ANOTHER = CONTRACT_SUFFIX.removesuffix(".json")  # ".contract"


@dataclass(frozen=True)
class SuiteEntry:
    name: str
    incident: Path
    contract_path: Path
    contract: dict[str, Any]


@dataclass(frozen=True)
class BrokenEntry:
    """An entry that cannot run: its contract unreadable or invalid, or its incident missing."""

    name: str
    contract_path: Path
    reason: str  # one line


@dataclass(frozen=True)
class Suite:
    """A suite folder read: the entries that can run, and the broken ones, each sorted by name."""

    entries: list[SuiteEntry]
    broken: list[BrokenEntry]


def _names(folder: Path) -> list[str]:
    """The entries' names: each ``NAME.contract.json`` file (not hidden), sorted; a file that is the
    incident of an entry whose name ends in ``.contract`` (an older suite's) is not one."""
    names = {
        path.name.removesuffix(CONTRACT_SUFFIX)
        for path in folder.glob(f"*{CONTRACT_SUFFIX}")
        if path.is_file() and not path.name.startswith(".")
    }
    return sorted(name for name in names if f"{name}{_READ_AS_ANOTHER}" not in names)


def load_suite(folder: Path, *, allow_unverified: bool = False) -> Suite:
    """Every entry of the folder, its contract loaded and validated. A missing folder, or one with no
    contract, is a CassetteError (one line); an entry whose contract does not load, or whose
    incident is missing or fails verify's hash chain (unless ``allow_unverified``), is listed broken,
    with the reason, and the others still run."""
    if not folder.is_dir():
        what = "not a folder" if folder.exists() else "no such folder"
        raise CassetteError(
            f"{folder}: {what} (a contract suite is a folder of NAME.json + NAME{CONTRACT_SUFFIX})"
        )
    names = _names(folder)
    if not names:
        raise CassetteError(f"{folder}: no contract in the folder (NAME{CONTRACT_SUFFIX} beside NAME.json)")
    entries, broken = [], []
    for name in names:
        contract_path, incident = folder / f"{name}{CONTRACT_SUFFIX}", incident_of(folder, name)
        try:
            contract = load_contract(contract_path)
        except CassetteError as exc:
            broken.append(BrokenEntry(name, contract_path, str(exc)))
            continue
        if not incident.is_file():
            reason = f"{contract_path}: its incident {incident} is missing"
            broken.append(BrokenEntry(name, contract_path, reason))
            continue
        if not allow_unverified:
            try:
                load_checked_cassette(incident)
            except CassetteError as exc:
                broken.append(BrokenEntry(name, contract_path, str(exc)))
                continue
        entries.append(SuiteEntry(name, incident, contract_path, contract))
    return Suite(entries, broken)


def check_name(name: str) -> str:
    """The name if it is a safe file stem that reads back as itself (letters, digits, ``-``, ``_``,
    ``.``; 1 to 80; no leading dot; not ending in ``.contract``); else BadArgument, one line."""
    if not _SAFE_NAME.fullmatch(name):
        raise BadArgument(
            f"entry name {name!r}: use 1 to 80 letters, digits, '-', '_' or '.', not starting with '.'"
        )
    if name.lower().endswith(_READ_AS_ANOTHER):
        stem = name[: -len(_READ_AS_ANOTHER)]
        raise BadArgument(
            f"entry name {name!r}: a name cannot end in {_READ_AS_ANOTHER!r} (its incident "
            f"{name}.json would read as the contract of {stem!r}); choose another"
        )
    return name


def save_entry(
    folder: Path, name: str, incident: Path, contract: dict[str, Any], *, replace: bool = False
) -> SuiteEntry:
    """Keep an incident and its contract in the suite as ``NAME.json`` and ``NAME.contract.json``.

    Both are checked first (a cassette, a valid contract), and an existing entry is kept unless
    ``replace``. The incident is written before the contract: an entry exists once its contract
    does, so one cut short leaves no contract without its incident."""
    check_name(name)
    contract = validate_contract(contract)
    text = read_text(incident)  # decompressed; a compact cassette stays compact (read as such)
    parse_cassette(document_of(text, str(incident)), str(incident))  # CassetteError: not a cassette
    # A compressed incident stays compressed (NAME.json.gz, compact inside: a long run's); a plain
    # one stays plain v2, the interchange format.
    compressed = is_gzip(incident)
    incident_out = folder / f"{name}{'.json.gz' if compressed else '.json'}"
    contract_out = folder / f"{name}{CONTRACT_SUFFIX}"
    other_form = folder / f"{name}{'.json' if compressed else '.json.gz'}"
    if not replace:
        for path in (contract_out, incident_out, other_form):
            if path.exists():
                raise OutputError(
                    f"{path}: the suite already has an entry {name!r} (replace it, or choose a name)"
                )
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{folder}: cannot create the suite folder ({exc.strerror or exc})") from None
    if compressed:
        with atomic_binary_writer(incident_out) as binary:
            binary.write(incident.read_bytes())
    else:
        with atomic_text_writer(incident_out) as handle:
            handle.write(text)
    other_form.unlink(missing_ok=True)  # replaced by the new form: one incident an entry
    with atomic_text_writer(contract_out) as handle:
        handle.write(dump_contract(contract))
    return SuiteEntry(name, incident_out, contract_out, contract)


def incident_of(folder: Path, name: str) -> Path:
    """An entry's incident: NAME.json, else NAME.json.gz (a compressed one), else NAME.json (missing)."""
    plain = folder / f"{name}.json"
    compressed = folder / f"{name}.json.gz"
    return compressed if not plain.exists() and compressed.exists() else plain


def stubs_of(child: Cassette) -> dict[str, Any]:
    """The stub answers a built-in rerun's child got (its ``tool_result`` steps marked ``"stub": true``):
    tool name → result, for the contract's ``rerun.stubs``. A stub always answers with a result."""
    stubs: dict[str, Any] = {}
    for step in child.steps_of("tool_result"):
        payload = step.payload if isinstance(step.payload, dict) else {}
        tool = payload.get("toolName")
        if payload.get("stub") is True and isinstance(tool, str) and "result" in payload:
            stubs.setdefault(tool, payload["result"])
    return stubs


def with_rerun(
    contract: dict[str, Any],
    *,
    stubs: dict[str, Any] | None = None,
    model: str | None = None,
    provider: str | None = None,
) -> dict[str, Any]:
    """A copy of the contract whose ``rerun`` block has these parts (None keeps the contract's own;
    an empty part is left out, and an empty block too); CassetteError if the result is not valid."""
    block = dict(contract.get("rerun") or {})
    for key, value in (("stubs", stubs), ("model", model), ("provider", provider)):
        if value is not None:
            block[key] = value
        if not block.get(key):
            block.pop(key, None)
    updated = {k: v for k, v in contract.items() if k != "rerun"}
    if block:
        updated["rerun"] = block
    return validate_contract(updated)
