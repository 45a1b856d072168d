"""Every command reads a ``.json.gz`` cassette (compressed, compact) as it reads the plain file, and
a gzip file under a ``.json`` name; a cut, corrupt or oversized one is one line and exit 2."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pytest
from fake_llm import FakeLLMServer
from helpers import EXAMPLES, run_cli, vector, vector_path

from otel_blackbox._cassette.io import load_cassette, save_cassette
from otel_blackbox._cassette.verify import verify_cassette


@pytest.fixture
def packed(tmp_path: Path) -> Path:
    path = tmp_path / "run.json.gz"
    save_cassette(vector("success-tool-use"), path)
    return path


def test_verify_inspect_and_diff_read_a_compressed_cassette(tmp_path: Path, packed: Path) -> None:
    plain = str(vector_path("success-tool-use"))
    head = vector("success-tool-use").head or ""
    verified = run_cli("verify", str(packed), "--expect-head", head)
    assert verified.returncode == 0, verified.stderr
    assert verified.stdout == run_cli("verify", plain, "--expect-head", head).stdout
    inspected = run_cli("inspect", str(packed))
    assert inspected.returncode == 0, inspected.stderr
    assert inspected.stdout == run_cli("inspect", plain).stdout
    same = run_cli("diff", plain, str(packed))
    assert same.returncode == 0, same.stdout + same.stderr
    child = tmp_path / "child.json.gz"
    save_cassette(vector("fork-child"), child)
    differs = run_cli("diff", str(vector_path("fork-parent")), str(child))
    assert (
        differs.stdout
        == run_cli("diff", str(vector_path("fork-parent")), str(vector_path("fork-child"))).stdout
    )
    page = run_cli("report", str(packed), "-o", str(tmp_path / "page.html"))
    assert page.returncode == 0 and "cassette fixture-success-tool-use" in page.stdout, page.stderr
    renamed = tmp_path / "renamed.json"
    renamed.write_bytes(packed.read_bytes())
    assert run_cli("verify", str(renamed)).returncode == 0


def _error_line(result: subprocess.CompletedProcess[str], path: Path) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"otel-blackbox: error: {path}: ") and "Traceback" not in line
    return line


def test_a_cut_or_corrupt_compressed_cassette_is_one_line_exit_2(tmp_path: Path, packed: Path) -> None:
    data = packed.read_bytes()
    cut, bad = tmp_path / "cut.json.gz", tmp_path / "bad.json"
    cut.write_bytes(data[: len(data) - 10])
    bad.write_bytes(data[:30] + b"\x00" * 40 + data[70:])
    for command in ("verify", "inspect"):
        assert "cut short" in _error_line(run_cli(command, str(cut)), cut)
        assert "not valid gzip data" in _error_line(run_cli(command, str(bad)), bad)
    assert not (tmp_path / "out.json").exists()


def test_a_gzip_bomb_is_refused_by_the_cli(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.json.gz"
    with gzip.open(bomb, "wb") as handle:
        handle.write(b'{"id": "x", "pad": "' + b" " * (40 * 2**20) + b'"}')
    line = _error_line(run_cli("verify", str(bomb)), bomb)
    assert line.endswith(
        "more than the 32 MB limit once decompressed (OTEL_BLACKBOX_MAX_CASSETTE_MB); not read further"
    )


def test_record_and_replay_a_compressed_cassette(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json.gz"
    agent = [sys.executable, str(EXAMPLES / "weather_agent.py"), "--db", str(tmp_path / "bb.db")]
    with FakeLLMServer() as server:
        base_url = server.openai_base_url
        live = run_cli("record", "-o", str(cassette), "--", *agent, "--base-url", base_url)
    assert live.returncode == 0, live.stderr
    assert cassette.read_bytes()[:2] == b"\x1f\x8b"
    assert verify_cassette(load_cassette(cassette)).passed
    replay = run_cli("replay", str(cassette), "--", *agent, "--base-url", base_url)
    assert replay.returncode == 0, replay.stderr
    assert replay.stdout.splitlines()[-1] == live.stdout.splitlines()[-1]
