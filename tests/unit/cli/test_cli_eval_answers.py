"""``eval generate`` and ``eval run`` through the CLI: proposals counted and marked, a failed run
refused without ``--from-failed`` and negated with it, a suite entry's name checked, and
``eval run-all`` listing a broken entry (the reruns themselves: tests/integration/test_run_all.py
and test_run_all_broken_entry.py)."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import run_cli
from test_contract_answers import answered

from otel_blackbox._cassette.io import save_cassette
from otel_blackbox._cassette.model import Cassette

SENSOR = '{"error": "sensor offline"}'
GOOD = '{"city": "Berlin", "temp": 12.5}'
LOOKUP = ("get_weather", {"city": "Berlin"}, False)


def saved(folder: Path, name: str, cassette: Cassette) -> Path:
    path = folder / name
    save_cassette(cassette, path)
    return path


def test_generate_counts_its_proposals_and_run_marks_them(tmp_path: Path) -> None:
    good = saved(tmp_path, "good.json", answered(GOOD, calls=[LOOKUP]))
    contract = tmp_path / "weather.contract.json"
    done = run_cli("eval", "generate", str(good), "-o", str(contract), check=True)
    assert done.stderr.splitlines() == [
        f"wrote {contract}: 9 assertions",
        '3 assertions are proposals ("proposed": true): keep or drop them',
    ]
    assert sum(a.get("proposed") is True for a in json.loads(contract.read_text())["assertions"]) == 3
    # To stdout: the same contract, the count still on stderr.
    printed = run_cli("eval", "generate", str(good), check=True)
    assert printed.stdout == contract.read_text() and "3 assertions are proposals" in printed.stderr
    other = saved(tmp_path, "other.json", answered('{"city": "Berlin"}', calls=[LOOKUP]))
    table = run_cli("eval", "run", str(contract), str(good), str(other))
    assert table.returncode == 1, table.stderr
    assert table.stdout.splitlines() == [
        f"PASS  {good}  9/9",
        f"FAIL  {other}  7/9",
        "        ✗ (proposed) answer's JSON has a value at /temp: no /temp in the answer's JSON",
        "        ✗ (proposed) answer's JSON matches its schema (type object; required: city, temp): "
        "$: 'temp' is a required property",
    ]


def test_a_failed_run_is_refused_without_from_failed(tmp_path: Path) -> None:
    incident = saved(tmp_path, "incident.json", answered(SENSOR, status="error", calls=[LOOKUP]))
    out = tmp_path / "incident.contract.json"
    refused = run_cli("eval", "generate", str(incident), "-o", str(out))
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        f"otel-blackbox: error: {incident}: the run failed (error): a contract from it would require the "
        "failure; --from-failed writes one that requires it gone"
    ]
    assert not out.exists()
    # With it: the negation, which fails the incident and the rerun that gave the same answer, and
    # passes a good run.
    done = run_cli("eval", "generate", str(incident), "--from-failed", "-o", str(out), check=True)
    assert done.stderr.splitlines()[-1] == '1 assertion is a proposal ("proposed": true): keep or drop it'
    same = saved(tmp_path, "same.json", answered(SENSOR, calls=[LOOKUP]))
    good = saved(tmp_path, "good.json", answered(GOOD, calls=[LOOKUP]))
    table = run_cli("eval", "run", str(out), str(incident), str(same), str(good))
    assert table.returncode == 1
    rows = [line for line in table.stdout.splitlines() if not line.startswith(" ")]
    assert rows == [f"FAIL  {incident}  0/3", f"FAIL  {same}  1/3", f"PASS  {good}  3/3"]
    assert run_cli("eval", "run", str(out), str(good)).returncode == 0
    # --from-failed on a run that did not fail: refused too.
    wrong = run_cli("eval", "generate", str(good), "--from-failed")
    assert wrong.returncode == 2 and "the run did not fail" in wrong.stderr and wrong.stdout == ""


def test_a_suite_entry_name_is_checked_when_generate_writes_one(tmp_path: Path) -> None:
    good = saved(tmp_path, "good.json", answered(GOOD, calls=[LOOKUP]))
    for name in ("a.contract", "A.Contract", ".hidden", "a b"):
        out = tmp_path / f"{name}.contract.json"
        refused = run_cli("eval", "generate", str(good), "-o", str(out))
        assert refused.returncode == 2, name
        assert (
            refused.stderr.startswith(f"otel-blackbox: error: entry name {name!r}: ")
            and len(refused.stderr.splitlines()) == 1
        )
        assert not out.exists()
    assert (
        "would read as the contract of 'a'"
        in run_cli("eval", "generate", str(good), "-o", str(tmp_path / "a.contract.contract.json")).stderr
    )
    # Dots inside a name are read right; a file that is not a suite's entry is not checked.
    for fine in ("weather.v2.contract.json", "contract.json", "a.contract.v2.contract.json"):
        run_cli("eval", "generate", str(good), "-o", str(tmp_path / fine), check=True)


def test_run_all_lists_broken_entries_and_exits_1(tmp_path: Path) -> None:
    """Every entry broken: nothing to rerun (no model, no key needed), each listed BROKEN with its
    reason, counted, exit 1; --json has them under "broken"."""
    suite = tmp_path / "contracts"
    suite.mkdir()
    (suite / "lost.contract.json").write_text(json.dumps({"contractVersion": 1, "assertions": []}))
    saved(suite, "bad.json", answered(GOOD))
    (suite / "bad.contract.json").write_text(
        json.dumps({"contractVersion": 1, "assertions": [{"kind": "answer_matches", "pattern": "("}]})
    )
    done = run_cli("eval", "run-all", str(suite), "--children", str(tmp_path / "children"))
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "BROKEN  bad"
    assert lines[1].startswith(
        f"        ✗ {suite / 'bad.contract.json'}: $.assertions[0].pattern: not a regular"
    )
    assert lines[2:4] == [
        "BROKEN  lost",
        f"        ✗ {suite / 'lost.contract.json'}: its incident {suite / 'lost.json'} is missing",
    ]
    assert lines[4] == f"2 contracts: 0 passed, 0 failed, 2 broken (children in {tmp_path / 'children'})"
    answer = run_cli("eval", "run-all", str(suite), "--json", "--children", str(tmp_path / "children"))
    assert answer.returncode == 1
    shown = json.loads(answer.stdout)
    assert shown["contracts"] == [] and [b["name"] for b in shown["broken"]] == ["bad", "lost"]
    assert shown["broken"][1] == {
        "name": "lost",
        "contract": str(suite / "lost.contract.json"),
        "reason": f"{suite / 'lost.contract.json'}: its incident {suite / 'lost.json'} is missing",
    }
