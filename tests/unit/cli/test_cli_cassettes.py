"""The cassette commands as a user runs them: exit codes, output, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import run_cli, vector, vector_path

from otel_blackbox._cassette.io import save_cassette
from otel_blackbox._cassette.trusted import resealed

ANSWER = "Hotel booked for Alice on 2024-03-15 at 14:00."


def test_verify_pass_and_fail(tmp_path: Path) -> None:
    result = run_cli("verify", str(vector_path("success-tool-use")), check=True)
    lines = result.stdout.splitlines()
    checks = ["schema_version", "hash_chain", "provider_neutrality", "replayability"]
    assert [line.split()[:2] for line in lines] == [["PASS", check] for check in checks]
    tampered = vector("success-tool-use")
    tampered.steps[5].payload["toolInput"]["date"] = "2024-03-16"
    save_cassette(tampered, tmp_path / "t.json")
    result = run_cli("verify", str(tmp_path / "t.json"))
    assert result.returncode == 1
    fail = result.stdout.splitlines()[1]
    assert fail.startswith("FAIL  hash_chain") and "step 5" in fail
    assert [line.split()[0] for line in result.stdout.splitlines()[2:]] == ["SKIP", "SKIP"]
    head = vector("success-tool-use").head
    assert head is not None
    cut = vector("success-tool-use")
    cut.steps = cut.steps[:-2]
    save_cassette(cut, tmp_path / "cut.json")
    assert run_cli("verify", str(tmp_path / "cut.json")).returncode == 0  # a clean cut keeps a valid chain
    result = run_cli("verify", str(tmp_path / "cut.json"), "--expect-head", head)
    assert result.returncode == 1 and "hash_chain" in result.stdout
    report = json.loads(run_cli("verify", str(vector_path("fork-child")), "--json", check=True).stdout)
    assert report["passed"] is True and len(report["checks"]) == 4


def test_diff_assert_eval(tmp_path: Path) -> None:
    parent, child = str(vector_path("fork-parent")), str(vector_path("fork-child"))
    same = run_cli("diff", parent, str(vector_path("success-tool-use")))
    assert same.returncode == 0 and "no behavioral change" in same.stdout.lower().replace(
        "behavioural", "behavioral"
    )
    diverged = run_cli("diff", parent, child)
    assert diverged.returncode == 1
    assert "first divergence: index 3 (tool_result)" in diverged.stdout
    assert "differs at: $.payload.result.available" in diverged.stdout
    data = json.loads(run_cli("diff", parent, child, "--json").stdout)
    assert data["index"] == 3

    ok = run_cli(
        "assert", str(vector_path("success-tool-use")), "--expect-status", "success",
        "--expect-tools", "search,calendar,booking", "--expect-final-answer", ANSWER,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stdout
    bad = run_cli("assert", str(vector_path("error-unknown-tool")), "--expect-status", "success")
    assert bad.returncode == 1 and "FAIL status: expected success, got error" in bad.stdout
    reason = run_cli(
        "assert", str(vector_path("error-unknown-tool")), "--expect-failure-reason", "unknown_tool"
    )
    assert reason.returncode == 0

    contract = tmp_path / "contract.json"
    run_cli("eval", "generate", str(vector_path("success-tool-use")), "-o", str(contract), check=True)
    again = run_cli("eval", "generate", str(vector_path("success-tool-use")), check=True).stdout
    assert contract.read_text() == again  # deterministic
    table = run_cli("eval", "run", str(contract), parent, child)
    assert table.returncode == 1
    assert table.stdout.splitlines()[0].startswith("PASS") and "FAIL" in table.stdout.splitlines()[1]


def test_inspect_and_cassette_help() -> None:
    out = run_cli("inspect", str(vector_path("error-unknown-tool")), check=True).stdout
    assert out.splitlines()[0].startswith("cassette fixture-error-unknown-tool  v2  5 steps  outcome error")
    assert "✗ flights error: Unknown fixture tool" in out
    for command in (["eval", "generate"], ["eval", "run"]):
        assert "Example:" in run_cli(*command, "--help", check=True).stdout


def test_inspect_shows_what_a_model_said_beyond_its_text(tmp_path: Path) -> None:
    cassette = vector("success-tool-use")
    last = [s for s in cassette.steps if s.type == "model_output"][-1]
    last.payload.update(
        stopReason="max_tokens",
        reasoning=[{"text": "t", "signature": "s"}, {"redacted": "r"}],
        hostedTools=[{"toolName": "web_search", "toolInput": {"query": "q"}}],
        choices=[{"type": "final_answer", "text": "b"}],
    )
    save_cassette(resealed(cassette), tmp_path / "c.json")  # edited here: hashed again, so it verifies
    out = run_cli("inspect", str(tmp_path / "c.json"), check=True).stdout
    line = next(line for line in out.splitlines() if line.startswith(f"#{last.index} "))
    assert "(stopped: max_tokens; reasoning ×2; hosted: web_search; +1 more choice)" in line
    last.payload["refusal"] = 5
    save_cassette(resealed(cassette), tmp_path / "bad.json")
    out = run_cli("inspect", str(tmp_path / "bad.json"), check=True).stdout  # shown, never a traceback
    assert "(malformed: field refusal must be a string, not int)" in out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "the file is empty"),
        (b"not json at all", "not valid JSON"),
        (b'{"version": 2, "id": "x", "createdAt": NaN, "steps": []}', "non-finite"),
        (b'{"version": 1, "id": "x", "createdAt": 0, "steps": []}', "version 1 is not supported"),
        (b'{"version": 2, "createdAt": 0, "steps": []}', "not a Blackbox cassette (no 'id' field"),
        (b'{"version": 2, "id": 5, "createdAt": 0, "steps": []}', "field 'id' must be"),
        (b'{"version": 2, "id": "x", "createdAt": 0, "steps": [{"type": "dance"}]}', "unknown step type"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b"\xff\xfe not utf-8", "not UTF-8"),
    ],
)
def test_bad_cassettes_are_one_line_exit_2(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    for args in (["inspect", str(path)], ["diff", str(path), str(vector_path("fork-parent"))],
                 ["assert", str(path), "--expect-status", "success"], ["eval", "generate", str(path)],
                 ["verify", str(path)]):  # fmt: skip
        result = run_cli(*args)
        if args[0] == "verify" and "version" in message:
            # verify reports an unsupported version as its first check failing, not as unreadable input
            assert result.returncode == 1 and "FAIL  schema_version" in result.stdout
            continue
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "Traceback" not in result.stderr


def test_a_50_mb_file_is_refused_quickly(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    with path.open("wb") as handle:
        handle.write(b'{"version": 2, "id": "x", "createdAt": 0, "steps": [], "pad": "')
        handle.write(b"a" * (50 * 1024 * 1024))
        handle.write(b'"}')
    result = run_cli("inspect", str(path))
    assert result.returncode == 2
    assert "larger than the" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_missing_files_and_bad_contracts(tmp_path: Path) -> None:
    result = run_cli("inspect", str(tmp_path / "nope.json"))
    assert result.returncode == 2 and "no such file" in result.stderr
    contract = tmp_path / "c.json"
    contract.write_text(json.dumps({"contractVersion": 1, "name": "x", "assertions": [{"kind": "teleport"}]}))
    result = run_cli("eval", "run", str(contract), str(vector_path("fork-parent")))
    assert result.returncode == 2 and "$.assertions[0]" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
