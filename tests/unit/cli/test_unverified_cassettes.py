"""Cassettes are checked before use: a cassette edited by hand (step 0's text changed, its hash
kept) is refused by every command that reads one, with the file, the check and the step (exit 2);
with --allow-unverified the command goes on and every line of its answer carries the warning."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers import run_cli, vector_path

from otel_blackbox._cassette.io import load_cassette, save_cassette
from otel_blackbox._cassette.trusted import load_checked_cassette, resealed
from otel_blackbox.errors import CassetteError

WHY = "fails verify (hash_chain) at step 0: hash does not match its content"
PREFIX = "[unverified] "


def hand_edited(tmp_path: Path, name: str = "fork-parent") -> Path:
    """The vector with step 0's "Alice" made "Omega" in the file, as a person would: no rehash."""
    data = json.loads(vector_path(name).read_text())
    message = data["steps"][0]["payload"]["messages"][0]
    message["content"] = message["content"].replace("Alice", "Omega")
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data, indent=2))
    return path


@pytest.fixture
def edited(tmp_path: Path) -> Path:
    return hand_edited(tmp_path)


@pytest.fixture
def contract(tmp_path: Path) -> Path:
    path = tmp_path / "contract.json"
    run_cli("eval", "generate", str(vector_path("success-tool-use")), "-o", str(path), check=True)
    return path


def suite(tmp_path: Path, edited: Path, contract: Path) -> Path:
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "hotel.json").write_bytes(edited.read_bytes())
    (folder / "hotel.contract.json").write_bytes(contract.read_bytes())
    return folder


def commands(tmp_path: Path, edited: Path, contract: Path) -> dict[str, list[str]]:
    """Every command that reads a user's cassette, given the hand-edited one."""
    parent, good = str(vector_path("fork-parent")), str(vector_path("error-unknown-tool"))
    program = ["--", sys.executable, "-c", "pass"]
    out = str(tmp_path / "out.json")
    return {
        "inspect": ["inspect", str(edited)],
        "diff (child)": ["diff", parent, str(edited)],
        "diff (parent)": ["diff", str(edited), parent],
        "assert": ["assert", str(edited), "--expect-status", "success"],
        "eval run": ["eval", "run", str(contract), parent, str(edited)],
        "eval generate": ["eval", "generate", str(edited)],
        "report": ["report", str(edited), "-o", str(tmp_path / "page.html")],
        "rerun": ["rerun", str(edited), "--model", "gpt-4.1", "-o", out],
        "rerun -- CMD": ["rerun", str(edited), "--model", "gpt-4.1", "-o", out, *program],
        "blame": ["blame", str(edited), "--model", "gpt-4.1", "-o", str(tmp_path / "branches")],
        "blame --good": ["blame", good, "--good", str(edited), "-o", str(tmp_path / "branches")],
        "replay": ["replay", str(edited), *program],
        "replay (built-in)": ["replay", str(edited)],
        "fork": ["fork", str(edited), "--at", "3", "--set", '"no"', "--live", "-o", out, *program],
    }


def test_every_command_refuses_a_hand_edited_cassette(tmp_path: Path, edited: Path, contract: Path) -> None:
    assert run_cli("verify", str(edited)).returncode == 1  # what verify says: the file is broken
    for name, args in commands(tmp_path, edited, contract).items():
        result = run_cli(*args)
        assert result.returncode == 2, (name, result.stdout, result.stderr)
        (line,) = result.stderr.strip().splitlines()
        assert line.startswith("otel-blackbox: error: ") and f"{edited} {WHY}" in line, (name, line)
        assert line.endswith("; --allow-unverified goes on anyway"), (name, line)
        assert result.stdout == "", (name, result.stdout)
    assert not (tmp_path / "out.json").exists() and not (tmp_path / "page.html").exists()
    assert not (tmp_path / "branches").exists()


def test_a_suite_lists_a_hand_edited_incident_as_broken(tmp_path: Path, edited: Path, contract: Path) -> None:
    """One entry cannot stop the suite: its incident fails the check and is listed BROKEN with why,
    no rerun is made for it, and the exit code says the suite did not pass."""
    folder = suite(tmp_path, edited, contract)
    result = run_cli("eval", "run-all", str(folder), "--model", "gpt-4.1")
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("BROKEN") and lines[0].split()[-1] == "hotel"
    assert f"{folder / 'hotel.json'} {WHY}" in lines[1] and lines[1].endswith(
        "; --allow-unverified goes on anyway"
    )
    assert lines[-1] == "1 contract: 0 passed, 0 failed, 1 broken"


def _carried(result_stdout: str, result_stderr: str, edited: Path) -> list[str]:
    """The answer's lines, each checked to carry the warning; the warning first on stderr."""
    first = result_stderr.splitlines()[0]
    assert first.startswith("otel-blackbox: warning: ") and f"{edited} {WHY}" in first, result_stderr
    assert first.endswith("; going on anyway (--allow-unverified)")
    lines = result_stdout.splitlines()
    assert lines and all(line.startswith(PREFIX) for line in lines), result_stdout
    assert all(line.startswith(PREFIX) for line in result_stderr.splitlines()[1:]), result_stderr
    return [line.removeprefix(PREFIX) for line in lines]


def test_allow_unverified_goes_on_with_the_warning_on_every_line(
    tmp_path: Path, edited: Path, contract: Path
) -> None:
    allow = "--allow-unverified"
    parent = str(vector_path("fork-parent"))
    inspect = run_cli("inspect", str(edited), allow)
    assert inspect.returncode == 0
    assert "Book a hotel for Omega" in "\n".join(_carried(inspect.stdout, inspect.stderr, edited))

    # The diff compares what the content hashes to, never the hash the file kept: step 0 diverges.
    diff = run_cli("diff", parent, str(edited), allow)
    assert diff.returncode == 1
    lines = _carried(diff.stdout, diff.stderr, edited)
    assert "first divergence: index 0 (model_input)" in lines
    assert "differs at: $.payload.messages[0].content" in lines
    as_json = run_cli("diff", parent, str(edited), allow, "--json")
    data = json.loads(as_json.stdout)  # JSON: one field says it, no line prefix
    assert data["unverified"].startswith(f"{edited} {WHY}") and data["index"] == 0
    assert next(iter(data)) == "unverified"

    checked = run_cli("assert", str(edited), allow, "--expect-status", "success")
    assert checked.returncode == 1  # verify's report is still part of the answer: hash_chain fails
    assert any(
        line.startswith("FAIL  hash_chain") for line in _carried(checked.stdout, checked.stderr, edited)
    )

    table = run_cli("eval", "run", str(contract), str(edited), allow)
    rows = _carried(table.stdout, table.stderr, edited)
    assert rows[0].split()[0] in ("PASS", "FAIL") and str(edited) in rows[0]

    page = tmp_path / "page.html"
    report = run_cli("report", str(edited), "-o", str(page), allow)
    assert report.returncode == 0 and page.is_file()
    assert _carried(report.stdout, report.stderr, edited)[0].startswith(f"wrote {page}")
    assert f'"unverified":"{edited} {WHY}' in page.read_text().replace(
        '": "', '":"'
    )  # the page says it first


def test_a_contract_generated_unverified_stays_json_and_says_so(tmp_path: Path, edited: Path) -> None:
    """A contract on stdout is a document: no line prefix (it would not parse); it records that its
    cassette failed verify, in its own ``source``, in a file too."""
    result = run_cli("eval", "generate", str(edited), "-o", "-", "--allow-unverified")
    assert result.returncode == 0, result.stderr
    contract = json.loads(result.stdout)
    assert WHY in contract["source"]["unverified"]
    assert result.stderr.splitlines()[0].startswith("otel-blackbox: warning: ")
    kept = tmp_path / "kept.contract.json"
    assert run_cli("eval", "generate", str(edited), "-o", str(kept), "--allow-unverified").returncode == 0
    assert WHY in json.loads(kept.read_text())["source"]["unverified"]
    # The schema takes the field: the contract still loads and runs (2 would be an invalid contract).
    assert run_cli("eval", "run", str(kept), str(vector_path("success-tool-use"))).returncode in (0, 1)


def test_replay_with_allow_unverified_serves_the_edited_cassette(tmp_path: Path, edited: Path) -> None:
    """The launcher's check and the program's session (another process) both let it through: the
    program then fails as any program that makes none of the recorded calls does."""
    result = run_cli("replay", str(edited), "--allow-unverified", "--", sys.executable, "-c", "pass")
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines()[0].startswith("otel-blackbox: warning: ")
    assert "made 0 of" in result.stderr and "fails verify" not in result.stderr.splitlines()[-1]


def test_the_check_is_schema_version_and_hash_chain_only(tmp_path: Path) -> None:
    data = json.loads(vector_path("success-tool-use").read_text())
    path = tmp_path / "v3.json"
    path.write_text(json.dumps({**data, "version": 3}))
    with pytest.raises(CassetteError, match=r"v3\.json fails verify \(schema_version\): version 3 is not"):
        load_checked_cassette(path)
    allowed = load_checked_cassette(path, allow_unverified=True, option="allow_unverified=true")
    assert allowed.warning is not None and allowed.warning.endswith("going on anyway (allow_unverified=true)")
    # A cassette that verifies its chain but not its replayability is still read (verify's job).
    cut = load_cassette(vector_path("success-tool-use"))
    cut.steps = cut.steps[:1]
    save_cassette(cut, tmp_path / "cut.json")
    assert load_checked_cassette(tmp_path / "cut.json").warning is None
    # resealed: an edited cassette hashed again verifies; a sound one is unchanged.
    edited = load_cassette(hand_edited(tmp_path))
    save_cassette(resealed(edited), tmp_path / "sealed.json")
    assert load_checked_cassette(tmp_path / "sealed.json").warning is None
    sound = load_cassette(vector_path("fork-parent"))
    assert resealed(sound) == sound


def test_verify_of_a_json_file_that_is_not_a_cassette_says_so(tmp_path: Path) -> None:
    otlp = tmp_path / "x.json"
    otlp.write_text('{"resourceSpans": []}')
    result = run_cli("verify", str(otlp))
    assert result.returncode == 2
    why = "not a Blackbox cassette (no 'id' field: its keys are \"resourceSpans\")"
    assert result.stderr.strip() == f"otel-blackbox: error: {otlp}: {why}"
