"""A contract suite folder: entries saved and loaded, the ``rerun`` block, and each bad input as one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import vector, vector_path

from otel_blackbox._cassette.evals import contract_schema, generate_contract, load_contract
from otel_blackbox._cassette.io import save_cassette
from otel_blackbox._cassette.model import Cassette
from otel_blackbox._cassette.suite import (
    BrokenEntry,
    Suite,
    SuiteEntry,
    load_suite,
    save_entry,
    stubs_of,
    with_rerun,
)
from otel_blackbox._wire.apis import API_NAMES
from otel_blackbox.errors import BadArgument, CassetteError, OutputError

INCIDENT = vector_path("success-tool-use")


@pytest.fixture
def contract() -> dict[str, Any]:
    return generate_contract(vector("success-tool-use"), name="booking")


def one_line(error: pytest.ExceptionInfo[Exception]) -> str:
    message = str(error.value)
    assert "\n" not in message
    return message


# --- save_entry and load_suite --------------------------------------------------------------------


def test_saved_entries_load_back_sorted_by_name(tmp_path: Path, contract: dict[str, Any]) -> None:
    folder = tmp_path / "suites" / "contracts"  # created, parents too
    second = save_entry(folder, "refund-2", INCIDENT, contract)
    first = save_entry(folder, "booking.v1_a", INCIDENT, contract)
    assert first == SuiteEntry(
        "booking.v1_a", folder / "booking.v1_a.json", folder / "booking.v1_a.contract.json", contract
    )
    assert load_suite(folder) == Suite([first, second], [])
    # The incident is the cassette as it was (same bytes); the contract the file form, validated.
    assert first.incident.read_bytes() == INCIDENT.read_bytes()
    assert load_contract(first.contract_path) == contract


def test_an_entry_is_kept_unless_replaced(tmp_path: Path, contract: dict[str, Any]) -> None:
    save_entry(tmp_path, "refund", INCIDENT, contract)
    renamed = {**contract, "name": "renamed"}
    with pytest.raises(OutputError) as refused:
        save_entry(tmp_path, "refund", INCIDENT, renamed)
    assert "already has an entry 'refund'" in one_line(refused)
    assert load_contract(tmp_path / "refund.contract.json")["name"] == "booking"
    save_entry(tmp_path, "refund", INCIDENT, renamed, replace=True)
    assert load_contract(tmp_path / "refund.contract.json")["name"] == "renamed"
    # Replacing an entry with its own incident keeps it whole.
    entry = save_entry(tmp_path, "refund", tmp_path / "refund.json", renamed, replace=True)
    assert entry.incident.read_bytes() == INCIDENT.read_bytes()


def test_a_compressed_incident_stays_compressed_and_a_plain_one_replaces_it(
    tmp_path: Path, contract: dict[str, Any]
) -> None:
    compressed = tmp_path / "long.json.gz"
    save_cassette(vector("success-tool-use"), compressed)  # compact inside, as a long run's
    folder = tmp_path / "suite"
    entry = save_entry(folder, "long", compressed, contract)
    assert entry.incident == folder / "long.json.gz" and not (folder / "long.json").exists()
    assert entry.incident.read_bytes() == compressed.read_bytes()  # never expanded into plain JSON
    assert load_suite(folder) == Suite([entry], [])
    with pytest.raises(OutputError):  # the other form of the same name is the same entry
        save_entry(folder, "long", INCIDENT, contract)
    plain = save_entry(folder, "long", INCIDENT, contract, replace=True)
    assert plain.incident == folder / "long.json" and not (folder / "long.json.gz").exists()
    assert load_suite(folder) == Suite([plain], [])


@pytest.mark.parametrize("name", ["", ".hidden", "..", "a/b", "a\\b", "a b", "x" * 81, "naïve"])
def test_an_unsafe_name_is_refused(tmp_path: Path, contract: dict[str, Any], name: str) -> None:
    with pytest.raises(BadArgument) as refused:
        save_entry(tmp_path / "suite", name, INCIDENT, contract)
    assert "entry name" in one_line(refused)
    assert not (tmp_path / "suite").exists()


def test_safe_names_at_the_edges(tmp_path: Path, contract: dict[str, Any]) -> None:
    for name in ("x" * 80, "a", "-dash", "_under", "v1.2"):
        assert save_entry(tmp_path, name, INCIDENT, contract).name == name


def test_a_bad_contract_or_incident_writes_nothing(tmp_path: Path, contract: dict[str, Any]) -> None:
    folder = tmp_path / "suite"
    with pytest.raises(CassetteError) as invalid:
        save_entry(folder, "refund", INCIDENT, {**contract, "contractVersion": 2})
    assert "contractVersion 2 is not supported" in one_line(invalid)
    not_a_cassette = tmp_path / "notes.json"
    not_a_cassette.write_text('{"hello": "world"}')
    with pytest.raises(CassetteError) as unreadable:
        save_entry(folder, "refund", not_a_cassette, contract)
    assert "notes.json" in one_line(unreadable)
    with pytest.raises(CassetteError):
        save_entry(folder, "refund", tmp_path / "missing.json", contract)
    assert not folder.exists()


def test_a_suite_folder_that_cannot_be_made_is_one_line(tmp_path: Path, contract: dict[str, Any]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(OutputError) as refused:
        save_entry(blocker / "suite", "refund", INCIDENT, contract)
    assert "cannot create the suite folder" in one_line(refused)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_each_bad_suite_is_one_line_naming_it(tmp_path: Path, contract: dict[str, Any]) -> None:
    with pytest.raises(CassetteError) as missing:
        load_suite(tmp_path / "nope")
    assert "nope: no such folder" in one_line(missing)
    with pytest.raises(CassetteError) as a_file:
        load_suite(write(tmp_path / "file.json", "{}"))
    assert "file.json: not a folder" in one_line(a_file)

    empty = tmp_path / "empty"
    empty.mkdir()
    write(empty / "incident.json", INCIDENT.read_text())  # an incident without a contract: not an entry
    (empty / "dir.contract.json").mkdir()  # not a file
    write(empty / ".contract.json", "{}")  # hidden
    with pytest.raises(CassetteError) as none:
        load_suite(empty)
    assert "no contract in the folder" in one_line(none)


def test_a_broken_entry_is_listed_and_the_others_load(tmp_path: Path, contract: dict[str, Any]) -> None:
    """A contract without its incident, one that is not JSON, one that is not a contract: each one
    entry listed broken with its reason, one line; the good entry loads whole."""
    folder = tmp_path / "suite"
    good = save_entry(folder, "good", INCIDENT, contract)
    write(folder / "lost.contract.json", json.dumps(contract))
    write(folder / "bad.json", INCIDENT.read_text())
    write(folder / "bad.contract.json", '{"contractVersion": 1, "assertions": [')
    write(folder / "kind.json", INCIDENT.read_text())
    write(folder / "kind.contract.json", json.dumps({"contractVersion": 1, "assertions": [{"kind": "nope"}]}))
    suite = load_suite(folder)
    assert suite.entries == [good]
    assert [(b.name, b.contract_path.name) for b in suite.broken] == [
        ("bad", "bad.contract.json"),
        ("kind", "kind.contract.json"),
        ("lost", "lost.contract.json"),
    ]
    reasons = {b.name: b.reason for b in suite.broken}
    assert all("\n" not in reason for reason in reasons.values())
    assert "bad.contract.json: not valid JSON" in reasons["bad"]
    assert "kind.contract.json: $.assertions[0].kind" in reasons["kind"]
    assert (
        reasons["lost"] == f"{folder / 'lost.contract.json'}: its incident {folder / 'lost.json'} is missing"
    )
    assert suite.broken[0] == BrokenEntry("bad", folder / "bad.contract.json", reasons["bad"])


# --- the rerun block ------------------------------------------------------------------------------


def stubbed_child() -> Cassette:
    """A built-in rerun's child as the recorder writes it: results from the incident, two stubs."""
    child = Cassette("incident-rerun-1", 0, parent_id="incident")
    child.append("model_input", {"messages": []}, 0)
    results: list[tuple[str, dict[str, Any]]] = [
        ("lookup_order", {"result": "order Alpha: paid 12.00"}),
        ("refund_order", {"result": "refunded 12.00 on order Alpha", "stub": True}),
        ("refund_order", {"result": "refunded 12.00 on order Alpha", "stub": True}),
        ("notify", {"result": {"sent": True, "to": ["a"]}, "stub": True}),
        ("audit", {"error": "no such order"}),
    ]
    for n, (tool, outcome) in enumerate(results):
        call = {"toolCallId": f"c{n}", "toolName": tool, "toolInput": {}}
        child.append("tool_call", call, n)
        child.append("tool_result", {"toolCallId": f"c{n}", "toolName": tool, **outcome}, n)
    child.append("metadata", {"event": "run_completed", "status": "success", "result": "done"}, 9)
    return child


def test_stubs_of_a_child_are_its_stub_answers() -> None:
    assert stubs_of(stubbed_child()) == {
        "refund_order": "refunded 12.00 on order Alpha",
        "notify": {"sent": True, "to": ["a"]},
    }
    assert stubs_of(vector("success-tool-use")) == {}  # recorded results only


def test_with_rerun_adds_the_block_and_leaves_out_empty_parts(contract: dict[str, Any]) -> None:
    stubs = stubs_of(stubbed_child())
    full = with_rerun(contract, stubs=stubs, model="thorough", provider="openai-responses")
    assert full["rerun"] == {"stubs": stubs, "model": "thorough", "provider": "openai-responses"}
    assert "rerun" not in contract  # a copy
    assert with_rerun(contract, stubs={}, model="") == contract  # nothing to say: no block
    # None keeps what the contract has; an empty part removes it.
    assert with_rerun(full, model="hasty")["rerun"] == {**full["rerun"], "model": "hasty"}
    assert with_rerun(full, stubs={})["rerun"] == {"model": "thorough", "provider": "openai-responses"}
    with pytest.raises(CassetteError) as unknown:
        with_rerun(contract, provider="openai")
    assert "$.rerun.provider" in one_line(unknown)


def test_the_rerun_block_in_the_schema(tmp_path: Path, contract: dict[str, Any]) -> None:
    block = contract_schema()["properties"]["rerun"]
    assert block["properties"]["provider"]["enum"] == list(API_NAMES)  # one list of API names
    # A contract with the block round-trips through a suite; one without it (version 1 as before) too.
    saved = save_entry(tmp_path, "with", INCIDENT, with_rerun(contract, stubs={"booking": {"ok": True}}))
    save_entry(tmp_path, "without", INCIDENT, contract)
    assert [e.contract.get("rerun") for e in load_suite(tmp_path).entries] == [
        {"stubs": {"booking": {"ok": True}}},
        None,
    ]
    assert saved.contract["contractVersion"] == 1
    extras: list[dict[str, Any]] = [{"maxTurns": 3}, {"model": 4}, {"stubs": []}]
    for extra in extras:
        write(tmp_path / "with.contract.json", json.dumps({**contract, "rerun": extra}))
        (broken,) = load_suite(tmp_path).broken
        assert "with.contract.json: $.rerun" in broken.reason
