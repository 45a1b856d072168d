"""Figures that say what they leave out, in one format of dollars.

The issue's case: a trace of four priced LLM calls and one whose model genai-prices does not know.
Every view that shows its cost (list, runs, show's header, stats, Markdown, the HTML report in
Chromium, the viewer's list and its JSON, MCP's list_traces / list_runs / stats) says
``$X + 1 unpriced`` with X written by ``format_usd``, and every JSON output keeps ``cost_usd`` beside
``unpriced_llm_spans``. A trace none of whose calls has a price shows no price (``-``, blank,
"no price"), never $0.
"""

from __future__ import annotations

import concurrent.futures
import json
import re
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from genai_prices import Usage, calc_price
from helpers import CHROMIUM, Recorder, open_page, run_cli
from mcp import ClientSession
from test_mcp import ok, serve

from otel_blackbox._cost import price_cache
from otel_blackbox._cost.prices import format_usd

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
PRICED = [("gpt-4o-mini", 12_000, 800, 8_000), ("gpt-4o-mini", 3_000, 250, 0), ("gpt-4o", 5_000, 700, 1_024),
          ("gpt-4.1-mini", 2_500, 300, 0)]  # fmt: skip
UNKNOWN = "fake-model-x"


@pytest.fixture(autouse=True)
def cache_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    price_cache.reset()
    yield
    price_cache.reset()


@dataclass(frozen=True)
class Recorded:
    db: Path
    partial: str  # four priced calls and one unknown model
    unpriced: str  # only the unknown model
    total: Decimal  # the partial trace's four priced calls, as genai-prices prices them
    when: datetime  # when they started

    @property
    def shown(self) -> str:
        return f"{format_usd(self.total)} + 1 unpriced"


def _llm(model: str, prompt: int, completion: int, cached: int) -> dict[str, Any]:
    return {
        "openinference.span.kind": "LLM",
        "llm.model_name": model,
        "llm.provider": "openai",
        "llm.token_count.prompt": prompt,
        "llm.token_count.completion": completion,
        "llm.token_count.total": prompt + completion,
        "llm.token_count.prompt_details.cache_read": cached,
    }


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    db = tmp_path_factory.mktemp("partial") / "blackbox.db"
    recorder = Recorder(db)
    start = time.time_ns()
    ids = []
    for root, calls in (("partial", [*PRICED, (UNKNOWN, 100, 10, 0)]), ("unpriced", [(UNKNOWN, 50, 5, 0)])):
        with recorder.tracer.start_as_current_span(root, start_time=start) as span:
            for n, (model, prompt, completion, cached) in enumerate(calls):
                attributes = _llm(model, prompt, completion, cached)
                recorder.tracer.start_span(f"call {n} {model}", attributes=attributes, start_time=start).end(
                    start + 1_000
                )
        ids.append(format(span.get_span_context().trace_id, "032x"))
        start += 10_000
    recorder.flush()
    recorder.processor.shutdown()
    when = EPOCH + timedelta(microseconds=(start - 20_000) // 1000)
    total = sum(
        (
            calc_price(
                Usage(input_tokens=p, output_tokens=c, cache_read_tokens=k or None),
                m,
                provider_id="openai",
                genai_request_timestamp=when,
            ).total_price
            for m, p, c, k in PRICED
        ),
        Decimal(0),
    )
    return Recorded(db, ids[0], ids[1], total, when)


def _by_trace(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {row["trace_id"]: row for row in rows}


def test_list_and_runs_say_how_many_calls_the_figure_leaves_out(recorded: Recorded) -> None:
    db = recorded.db
    listed = _by_trace(json.loads(run_cli("list", "--json", db=db, check=True).stdout))
    assert (listed[recorded.partial]["cost_usd"], listed[recorded.partial]["unpriced_llm_spans"]) == (
        float(recorded.total),
        1,
    )
    assert (listed[recorded.unpriced]["cost_usd"], listed[recorded.unpriced]["unpriced_llm_spans"]) == (
        None,
        1,
    )
    table = run_cli("list", db=db, check=True).stdout.splitlines()
    (partial,) = [line for line in table if recorded.partial in line]
    (unpriced,) = [line for line in table if recorded.unpriced in line]
    assert f"  {recorded.shown}  {recorded.partial}" in partial
    assert re.search(rf"\s-  {recorded.unpriced}", unpriced) and "$" not in unpriced  # no price, not $0
    # The column is as wide as its widest figure: COST ends, as each figure does, two spaces before
    # the trace id.
    header = table[0]
    assert header.index("TRACE ID") - header.index("COST") - len("COST") == 2
    assert partial.index(recorded.partial) - partial.index(recorded.shown) - len(recorded.shown) == 2

    (run,) = json.loads(run_cli("runs", "--json", db=db, check=True).stdout)  # one recorder: one run
    assert (run["cost_usd"], run["unpriced_llm_spans"]) == (float(recorded.total), 2)
    runs = run_cli("runs", db=db, check=True).stdout
    assert f"  {format_usd(recorded.total)} + 2 unpriced  " in runs


def test_show_says_it_in_its_header_json_and_markdown(recorded: Recorded) -> None:
    db = recorded.db
    text = run_cli("show", recorded.partial, db=db, check=True).stdout.splitlines()
    assert f"  cost {recorded.shown}" in text[0]
    assert any(f"{UNKNOWN}  tokens 100+10=110  cost -" in line for line in text)  # the call left out
    shown = json.loads(run_cli("show", recorded.partial, "--json", db=db, check=True).stdout)
    assert (shown["trace"]["cost_usd"], shown["trace"]["unpriced_llm_spans"]) == (float(recorded.total), 1)
    markdown = run_cli("show", recorded.partial, "--format", "markdown", db=db, check=True).stdout
    assert "- Cost: " + recorded.shown.replace("$", "\\$") + " (genai-prices " in markdown

    nothing = run_cli("show", recorded.unpriced, db=db, check=True).stdout.splitlines()
    assert "cost" not in nothing[0] and "$" not in "\n".join(nothing)
    markdown = run_cli("show", recorded.unpriced, "--format", "markdown", db=db, check=True).stdout
    assert "- Cost: no price (genai-prices " in markdown and "1 LLM call with no price" in markdown


def test_stats_says_it_for_the_total_and_each_model(recorded: Recorded) -> None:
    text = run_cli("stats", db=recorded.db, check=True).stdout
    both = f"{format_usd(recorded.total)} + 2 unpriced"  # the database: both traces' unknown calls
    assert re.search(rf"^cost           {re.escape(both)}  \(prices: genai-prices ", text, re.M)
    assert f"{UNKNOWN}: 2 calls, prompt 150, completion 15, total 165, cost - (2 unpriced)" in text
    stats = json.loads(run_cli("stats", "--json", db=recorded.db, check=True).stdout)
    assert (stats["cost_usd"], stats["unpriced_llm_spans"]) == (float(recorded.total), 2)


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (make test installs it)")
def test_the_html_report_says_it_in_chromium(recorded: Recorded, browser: Any, tmp_path: Path) -> None:
    page_file = tmp_path / "report.html"
    run_cli("report", recorded.partial, "-o", str(page_file), db=recorded.db, check=True)
    page, seen = open_page(browser, page_file.as_uri(), ".bar")
    assert (page.text_content("[data-field=cost] .value") or "") == recorded.shown
    page.locator(".bar", has_text=UNKNOWN).first.click()
    assert "no price" in (page.text_content("#details") or "")
    page.locator(".bar", has_text="call 0 gpt-4o-mini").first.click()
    usd = calc_price(
        Usage(input_tokens=12_000, output_tokens=800, cache_read_tokens=8_000),
        "gpt-4o-mini",
        provider_id="openai",
        genai_request_timestamp=recorded.when,
    ).total_price
    assert format_usd(usd) in (page.text_content("#details") or "")
    assert seen == {"errors": [], "requests": [], "dialogs": []}


def test_the_viewer_says_it_in_its_list_and_json(recorded: Recorded) -> None:
    from otel_blackbox._web.server import make_server

    server = make_server(recorded.db, port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        with urllib.request.urlopen(f"{base}/api/traces", timeout=10) as response:
            listed = _by_trace(json.loads(response.read())["traces"])
        with urllib.request.urlopen(f"{base}/", timeout=10) as response:
            page = response.read().decode()
    finally:
        server.shutdown()
        server.server_close()
    partial, unpriced = listed[recorded.partial], listed[recorded.unpriced]
    assert (partial["cost_usd"], partial["unpriced_llm_spans"]) == (float(recorded.total), 1)
    assert recorded.shown in partial["cells"] and f"<td>{recorded.shown}</td>" in page
    assert (unpriced["cost_usd"], unpriced["unpriced_llm_spans"]) == (None, 1)
    assert unpriced["cells"][-2] == ""  # the cost column: blank, never $0


def test_mcp_says_it_in_list_traces_list_runs_and_stats(recorded: Recorded, tmp_path: Path) -> None:
    async def body(session: ClientSession) -> tuple[Any, Any, Any]:
        traces = json.loads(await ok(session, "list_traces"))["traces"]
        runs = json.loads(await ok(session, "list_runs"))["runs"]
        stats = json.loads(await ok(session, "stats"))
        return traces, runs, stats

    # In a thread of its own: Playwright's sync API (the report's test) keeps an event loop running
    # in this one, where asyncio.run refuses to start another.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        traces, runs, stats = pool.submit(serve, recorded.db, tmp_path, body).result(timeout=120)
    listed = _by_trace(traces)
    partial, unpriced = listed[recorded.partial], listed[recorded.unpriced]
    assert (partial["cost_usd"], partial["unpriced_llm_spans"], partial["cost"]) == (
        float(recorded.total),
        1,
        recorded.shown,
    )
    assert (unpriced["cost_usd"], unpriced["unpriced_llm_spans"], unpriced["cost"]) == (None, 1, "-")
    ((run),) = runs
    assert (run["unpriced_llm_spans"], run["cost"]) == (2, f"{format_usd(recorded.total)} + 2 unpriced")
    assert (stats["unpriced_llm_spans"], stats["cost"]) == (2, f"{format_usd(recorded.total)} + 2 unpriced")


@pytest.mark.parametrize(
    ("usd", "shown"),
    [
        (Decimal("0.000012"), "$0.000012"),
        (Decimal("0.00001234"), "$0.000012"),
        (Decimal("0.009669"), "$0.0097"),
        (Decimal("0.009"), "$0.0090"),
        (Decimal("0.0180"), "$0.018"),
        (Decimal("0.0996"), "$0.10"),
        (Decimal("0.72"), "$0.72"),
        (Decimal("0.7200"), "$0.72"),
        (Decimal("1.44"), "$1.44"),
        (Decimal("1234.5612"), "$1,234.56"),
        (0.009669, "$0.0097"),
        (Decimal(0), "$0.00"),
        (None, "-"),
    ],
)
def test_one_format_of_dollars(usd: Decimal | float | None, shown: str) -> None:
    """To the cent, or to two significant digits where that is finer."""
    assert format_usd(usd) == shown
