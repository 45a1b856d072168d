"""The Anthropic SDK's own spans (anthropic 2.x, main venv), under openinference-instrumentation-
anthropic (tests/conformance/agents/anthropic_sdk_agent.py): each model call is two spans, shown in
the tree, counted once (``stats``: 2 calls, not 4), the run shown whole and a cassette that verifies;
the SDK's spans alone say how to record the messages, and ``cassette`` refuses them in one line."""

from __future__ import annotations

import json
import re
from pathlib import Path

from harness import check_tool_error, check_whole_run, run_agent
from helpers import run_cli

AGENT = "anthropic_sdk_agent.py"


def test_whole_run_counted_once(tmp_path: Path) -> None:
    db = tmp_path / "blackbox.db"
    ran = run_agent(AGENT, db, variant="openinference")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    text = check_whole_run(db, tmp_path)
    assert text.count("same model call as span") == 2
    stats = json.loads(run_cli("stats", "--json", db=db, check=True).stdout)
    assert [m["llm_spans"] for m in stats["tokens_by_model"]] == [2]
    assert stats["unpriced_llm_spans"] == 0 and stats["cost_usd"] > 0


def test_tool_error(tmp_path: Path) -> None:
    db = tmp_path / "blackbox.db"
    ran = run_agent(AGENT, db, variant="openinference", scenario="tool-error")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    check_tool_error(db)


def test_the_sdk_alone_says_why_there_is_nothing(tmp_path: Path) -> None:
    db = tmp_path / "blackbox.db"
    ran = run_agent(AGENT, db, variant="sdk")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    (trace,) = json.loads(run_cli("list", "--json", db=db, check=True).stdout)
    shown = run_cli("show", trace["trace_id"], db=db, check=True).stdout
    assert "no content: 2 of 2 model calls recorded no messages" in shown
    assert "openinference-instrumentation-anthropic" in shown
    page = tmp_path / "report.html"
    run_cli("report", trace["trace_id"], "-o", str(page), db=db, check=True)
    data = re.search(
        r'<script type="application/json" id="blackbox-data">(.*?)</script>', page.read_text(), re.S
    )
    assert data is not None
    header = json.loads(data.group(1))["trace"]
    assert header["noContent"].startswith("2 of 2 model calls recorded no messages")
    (run,) = json.loads(run_cli("runs", "--json", db=db, check=True).stdout)
    refused = run_cli("cassette", "--run", run["run_id"], "-o", str(tmp_path / "c.json"), db=db)
    assert refused.returncode == 2 and not (tmp_path / "c.json").exists()
    assert refused.stderr.count("\n") == 1 and "recorded no messages" in refused.stderr
