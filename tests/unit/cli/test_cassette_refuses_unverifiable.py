"""`cassette` writes no cassette that `verify` would fail, unless --force: an imported trace whose
tool span no model call asked for, through the real CLI."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import run_cli

TRACE = "2af7651916cd43dd8448eb211c80319c"
WHY = (
    "the cassette would fail verify (replayability) at step 0:"
    " tool_call call-0 was not requested by an earlier model_output"
)


def attribute(key: str, value: str) -> dict[str, object]:
    return {"key": key, "value": {"stringValue": value}}


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """An imported trace: an agent span and a TOOL span, and no LLM span that asked for the tool."""
    now = time.time_ns()
    spans = [
        {
            "traceId": TRACE,
            "spanId": "a7ad6b7169203331",
            "name": "agent",
            "startTimeUnixNano": str(now),
            "endTimeUnixNano": str(now + 5_000_000),
            "attributes": [attribute("openinference.span.kind", "CHAIN")],
        },
        {
            "traceId": TRACE,
            "spanId": "b7ad6b7169203332",
            "parentSpanId": "a7ad6b7169203331",
            "name": "lookup_order",
            "startTimeUnixNano": str(now + 1_000_000),
            "endTimeUnixNano": str(now + 2_000_000),
            "attributes": [
                attribute("openinference.span.kind", "TOOL"),
                attribute("tool.name", "lookup_order"),
                attribute("input.value", '{"order_id": 7}'),
                attribute("output.value", '{"status": "paid"}'),
            ],
        },
    ]
    source = tmp_path / "trace.json"
    source.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))
    path = tmp_path / "blackbox.db"
    run_cli("import", str(source), db=path, check=True)
    return path


def test_a_cassette_that_would_fail_verify_is_refused_and_nothing_is_written(
    db: Path, tmp_path: Path
) -> None:
    out = tmp_path / "cassettes"
    out.mkdir()
    result = run_cli("cassette", TRACE[:8], "-o", str(out / "incident.json"), db=db)
    assert result.returncode == 2
    assert result.stderr == f"otel-blackbox: error: {WHY}; nothing written (--force writes it anyway)\n"
    assert result.stdout == ""
    assert list(out.iterdir()) == []  # no cassette, no temporary file


def test_force_writes_it_with_a_warning_naming_the_step(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "incident.json"
    result = run_cli("cassette", TRACE[:8], "-o", str(out), "--force", db=db)
    assert result.returncode == 0
    assert result.stderr == f"otel-blackbox: warning: {WHY}; written anyway (--force)\n"
    assert result.stdout.startswith(f"wrote {out}: 3 steps")
    verified = run_cli("verify", str(out), "--json")
    assert verified.returncode == 1
    failure = json.loads(verified.stdout)["first_failure"]
    assert (failure["name"], failure["step_index"]) == ("replayability", 0)


def test_the_mcp_write_cassette_refuses_it_too_unless_forced(db: Path, tmp_path: Path) -> None:
    """The MCP tool holds the same rule as the CLI: a tool error naming the step, nothing written;
    with force=true, written, and the answer carries the warning."""
    from test_mcp import failed, ok, serve  # the real server over stdio, as a client starts it

    refused, forced = tmp_path / "refused.json", tmp_path / "forced.json"

    async def body(session: Any) -> None:
        error = await failed(session, "write_cassette", path=str(refused), trace_id=TRACE)
        assert error == f"{WHY}; nothing written (--force writes it anyway)"
        wrote = json.loads(await ok(session, "write_cassette", path=str(forced), trace_id=TRACE, force=True))
        assert wrote["warning"] == f"{WHY}; written anyway (--force)"

    serve(db, tmp_path, body)
    assert not refused.exists() and forced.exists()
