"""Cost in dollars, computed when read: genai-prices' own figures, everywhere the issue lists.

Spans are recorded by the real BlackboxSpanProcessor into a real SQLite file, with the attribute
names the OpenInference and gen_ai instrumentations write (token counts, cached, cache-write and
reasoning details, the provider). Every figure is checked against genai-prices' ``calc_price`` on
the same tokens, at the span's start: equal, not close (the price plans of price_cache.py give
genai-prices' own figures); an unknown model has no cost (never $0), and a figure that leaves it out
says so.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from genai_prices import Usage, calc_price
from helpers import Recorder, run_cli

from otel_blackbox._cost import price_cache
from otel_blackbox._cost.prices import format_usd
from otel_blackbox._render.html_report import trace_data
from otel_blackbox._store import queries
from otel_blackbox._store.connection import connect_reader

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@pytest.fixture(autouse=True)
def price_cache_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """The price cache in a folder of the test's own (the CLI subprocesses inherit it)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    price_cache.reset()
    yield
    price_cache.reset()


def _openinference(model: str, provider: str, prompt: int, completion: int, **details: int) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "openinference.span.kind": "LLM",
        "llm.model_name": model,
        "llm.provider": provider,
        "llm.token_count.prompt": prompt,
        "llm.token_count.completion": completion,
        "llm.token_count.total": prompt + completion,
    }
    for key, value in details.items():
        attributes[f"llm.token_count.{key.replace('__', '.')}"] = value
    return attributes


def _gen_ai(model: str, provider: str, prompt: int, completion: int, **extra: int) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": model,
        "gen_ai.usage.input_tokens": prompt,
        "gen_ai.usage.output_tokens": completion,
        **{f"gen_ai.usage.{k.replace('__', '.')}": v for k, v in extra.items()},
    }


# (span attributes, genai-prices usage, model, provider): one call of each provider, cached tokens too.
CALLS = [
    (
        _openinference("gpt-4o-mini", "openai", 12_000, 800, prompt_details__cache_read=8_000),
        Usage(input_tokens=12_000, output_tokens=800, cache_read_tokens=8_000),
        "gpt-4o-mini",
        "openai",
    ),
    (
        _openinference(
            "claude-sonnet-4-5", "anthropic", 30_000, 1_200, prompt_details__cache_read=20_000,
            prompt_details__cache_write=5_000,
        ),
        Usage(input_tokens=30_000, output_tokens=1_200, cache_read_tokens=20_000, cache_write_tokens=5_000),
        "claude-sonnet-4-5",
        "anthropic",
    ),
    (
        _gen_ai("gemini-2.5-flash", "gcp.gemini", 9_000, 400, cache_read__input_tokens=3_000),
        Usage(input_tokens=9_000, output_tokens=400, cache_read_tokens=3_000),
        "gemini-2.5-flash",
        "google",
    ),
]  # fmt: skip


def _expected(usage: Usage, model: str, provider: str | None, at_ns: int) -> Decimal:
    """genai-prices' own price of the call, at its start (to the µs, as a datetime holds it)."""
    when = EPOCH + timedelta(microseconds=at_ns // 1000)
    return calc_price(usage, model, provider_id=provider, genai_request_timestamp=when).total_price


def _start_ns(db: Path, trace_id: str) -> int:
    """When the trace's calls started (_record starts them all at once)."""
    shown = json.loads(run_cli("show", trace_id, "--json", db=db, check=True).stdout)
    (start,) = {s["start_ns"] for s in shown["spans"]}
    return int(start)


def _total(db: Path, trace_id: str) -> Decimal:
    at = _start_ns(db, trace_id)
    return sum((_expected(u, m, p, at) for _, u, m, p in CALLS), Decimal(0))


def _record(db: Path, spans: list[tuple[str, dict[str, Any]]], *, root: str = "agent") -> str:
    """One trace: a root span and one child span per (name, attributes), all starting now: inside
    the run's window (a start taken when the module was imported can be minutes older than the run
    on a slow machine, past the window's slack, and the run would not count them)."""
    recorder = Recorder(db)
    start_ns = time.time_ns()
    with recorder.tracer.start_as_current_span(root, start_time=start_ns) as parent:
        for name, attributes in spans:
            recorder.tracer.start_span(name, attributes=attributes, start_time=start_ns).end(start_ns + 1_000)
        trace_id = format(parent.get_span_context().trace_id, "032x")
    recorder.flush()
    recorder.processor.shutdown()
    return trace_id


@pytest.fixture(scope="module")
def priced(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    db = tmp_path_factory.mktemp("cost") / "blackbox.db"
    spans = [(f"call {model}", attributes) for attributes, _, model, _ in CALLS]
    spans.append(("call fake-model-x", _openinference("fake-model-x", "openai", 100, 10)))  # no price
    return db, _record(db, spans)


def test_each_llm_span_costs_what_genai_prices_says(priced: tuple[Path, str]) -> None:
    db, trace_id = priced
    at = _start_ns(db, trace_id)
    shown = json.loads(run_cli("show", trace_id, "--json", db=db, check=True).stdout)
    costs = {span["name"]: span["cost_usd"] for span in shown["spans"]}
    for _, usage, model, provider in CALLS:
        assert costs[f"call {model}"] == float(_expected(usage, model, provider, at)), model
    assert costs["call fake-model-x"] is None  # unknown: no cost, not $0
    assert costs["agent"] is None  # not an LLM call
    text = run_cli("show", trace_id, db=db, check=True).stdout
    assert "fake-model-x  tokens 100+10=110  cost -" in text
    assert f"cost {format_usd(_total(db, trace_id))} + 1 unpriced" in text.splitlines()[0]


def test_stats_gives_cost_by_model_the_total_and_the_unpriced_spans(priced: tuple[Path, str]) -> None:
    db, trace_id = priced
    at = _start_ns(db, trace_id)
    stats = json.loads(run_cli("stats", "--json", db=db, check=True).stdout)
    by_model = {m["model"]: m for m in stats["tokens_by_model"]}
    for _, usage, model, provider in CALLS:
        assert by_model[model]["cost_usd"] == float(_expected(usage, model, provider, at))
    assert (
        by_model["fake-model-x"]["cost_usd"] is None and by_model["fake-model-x"]["unpriced_llm_spans"] == 1
    )
    assert stats["cost_usd"] == float(_total(db, trace_id))
    assert stats["unpriced_llm_spans"] == 1 and stats["prices"].startswith("genai-prices ")
    text = run_cli("stats", db=db, check=True).stdout
    assert f"cost           {format_usd(_total(db, trace_id))} + 1 unpriced  (prices: genai-prices" in text
    assert "fake-model-x: 1 call, prompt 100, completion 10, total 110, cost - (1 unpriced)" in text


def test_price_model_reprices_the_recorded_tokens(priced: tuple[Path, str]) -> None:
    db, trace_id = priced
    at = _start_ns(db, trace_id)
    as_opus = json.loads(
        run_cli("stats", "--json", "--price-model", "claude-opus-4-1", db=db, check=True).stdout
    )
    usages = [u for _, u, _, _ in CALLS] + [Usage(input_tokens=100, output_tokens=10)]
    expected = float(sum(_expected(u, "claude-opus-4-1", None, at) for u in usages))
    assert as_opus["cost_usd"] == expected
    assert as_opus["unpriced_llm_spans"] == 0 and as_opus["priced_as"] == "claude-opus-4-1"
    for command in ("runs", "list"):  # list takes --price-model too, as runs, show and stats do
        (row,) = json.loads(
            run_cli(command, "--json", "--price-model", "claude-opus-4-1", db=db, check=True).stdout
        )
        assert (row["cost_usd"], row["unpriced_llm_spans"]) == (expected, 0), command
        text = run_cli(command, "--price-model", "claude-opus-4-1", db=db, check=True).stdout
        assert format_usd(expected) in text and "unpriced" not in text, command
    for command in ("stats", "list"):
        refused = run_cli(command, "--price-model", "no-such-model-anywhere", db=db)
        assert refused.returncode == 2 and "has no price for model 'no-such-model-anywhere'" in refused.stderr
        assert "Traceback" not in refused.stderr


def test_list_runs_report_and_viewer_show_the_cost(priced: tuple[Path, str]) -> None:
    db, trace_id = priced
    total = _total(db, trace_id)
    (listed,) = json.loads(run_cli("list", "--json", db=db, check=True).stdout)
    assert (listed["cost_usd"], listed["unpriced_llm_spans"]) == (float(total), 1)
    assert f"{format_usd(total)} + 1 unpriced" in run_cli("list", db=db, check=True).stdout
    (run,) = json.loads(run_cli("runs", "--json", db=db, check=True).stdout)
    assert (run["cost_usd"], run["unpriced_llm_spans"]) == (float(total), 1)
    with connect_reader(db) as conn:
        spans = queries.trace_spans(conn, trace_id)
        (summary,) = queries.summarize(conn, [trace_id])
    data = trace_data(summary, spans, summary.end_ns)
    assert (data["trace"]["costUsd"], data["trace"]["unpricedLlmSpans"]) == (float(total), 1)
    assert data["trace"]["costText"] == f"{format_usd(total)} + 1 unpriced"
    by_name = {s["name"]: (s["costUsd"], s["costText"]) for s in data["spans"]}
    assert by_name["call fake-model-x"] == (None, None) and by_name["call gpt-4o-mini"][1].startswith("$")


def test_a_gen_ai_span_and_an_openinference_span_of_one_call_price_the_same(tmp_path: Path) -> None:
    db = tmp_path / "blackbox.db"
    same_call = [
        ("openinference", _openinference("gpt-4o", "openai", 5_000, 700, prompt_details__cache_read=1_024,
                                         completion_details__reasoning=300)),
        ("gen_ai", _gen_ai("gpt-4o", "openai", 5_000, 700, cache_read__input_tokens=1_024,
                           reasoning__output_tokens=300)),
    ]  # fmt: skip
    trace_id = _record(db, same_call)
    shown = json.loads(run_cli("show", trace_id, "--json", db=db, check=True).stdout)
    costs = {span["name"]: span["cost_usd"] for span in shown["spans"]}
    usage = Usage(input_tokens=5_000, output_tokens=700, cache_read_tokens=1_024)
    expected = float(_expected(usage, "gpt-4o", "openai", _start_ns(db, trace_id)))
    assert costs["openinference"] == costs["gen_ai"] == expected


def test_reasoning_left_out_of_the_completion_is_priced_as_output(tmp_path: Path) -> None:
    """Gemini's completion count leaves its thoughts out; the total says so."""
    db = tmp_path / "blackbox.db"
    attributes = _openinference("gemini-2.5-pro", "google", 2_000, 100, completion_details__reasoning=900)
    attributes["llm.token_count.total"] = 3_000
    trace_id = _record(db, [("thinking", attributes)])
    shown = json.loads(run_cli("show", trace_id, "--json", db=db, check=True).stdout)
    (cost,) = [s["cost_usd"] for s in shown["spans"] if s["name"] == "thinking"]
    usage = Usage(input_tokens=2_000, output_tokens=1_000)
    assert cost == float(_expected(usage, "gemini-2.5-pro", "google", _start_ns(db, trace_id)))


def test_a_total_is_the_sum_of_each_calls_price_tiers_included(tmp_path: Path) -> None:
    """Totals price the calls of one model, period and tier bracket on their summed tokens: it must
    equal the sum of each call's price, across gemini-2.5-pro's 200k-token tier too."""
    db = tmp_path / "blackbox.db"
    calls = [("gpt-4o-mini", "openai", 1_000 + 37 * i, 50 + i) for i in range(20)]
    calls += [
        ("gemini-2.5-pro", "google", 150_000 + 30_000 * i, 500) for i in range(4)
    ]  # across the 200k tier
    trace_id = _record(
        db, [(f"call {i}", _openinference(m, p, inp, out)) for i, (m, p, inp, out) in enumerate(calls)]
    )
    at = _start_ns(db, trace_id)
    expected = float(
        sum(_expected(Usage(input_tokens=inp, output_tokens=out), m, p, at) for m, p, inp, out in calls)
    )
    stats = json.loads(run_cli("stats", "--json", db=db, check=True).stdout)
    assert stats["cost_usd"] == expected
    (listed,) = json.loads(run_cli("list", "--json", db=db, check=True).stdout)
    assert listed["trace_id"] == trace_id and listed["cost_usd"] == expected
    flat = sum(
        _expected(Usage(input_tokens=inp, output_tokens=out), "gemini-2.5-pro", None, at)
        for _, _, inp, out in calls[-4:]
    )
    tiered = _expected(
        Usage(input_tokens=sum(c[2] for c in calls[-4:]), output_tokens=2_000), "gemini-2.5-pro", None, at
    )
    assert flat != tiered  # summing the tiered calls' tokens would have mispriced them


def test_show_prices_as_another_model_and_gives_the_trace_cost(priced: tuple[Path, str]) -> None:
    db, trace_id = priced
    at = _start_ns(db, trace_id)
    usages = [u for _, u, _, _ in CALLS] + [Usage(input_tokens=100, output_tokens=10)]
    expected = sum((_expected(u, "gpt-4.1", None, at) for u in usages), Decimal(0))
    shown = json.loads(
        run_cli("show", trace_id, "--json", "--price-model", "gpt-4.1", db=db, check=True).stdout
    )
    assert (shown["trace"]["cost_usd"], shown["trace"]["unpriced_llm_spans"]) == (float(expected), 0)
    assert sum(Decimal(repr(s["cost_usd"])) for s in shown["spans"] if s["cost_usd"] is not None) == expected
    text = run_cli("show", trace_id, "--price-model", "gpt-4.1", db=db, check=True).stdout
    assert f"cost {format_usd(expected)} (as gpt-4.1)" in text.splitlines()[0]
    markdown = run_cli(
        "show", trace_id, "--format", "markdown", "--price-model", "gpt-4.1", db=db, check=True
    ).stdout
    assert "- Cost: " + format_usd(expected).replace("$", "\\$") + " as if" in markdown


def test_the_viewer_lists_each_trace_with_its_cost(priced: tuple[Path, str]) -> None:
    import threading
    import urllib.request

    from otel_blackbox._web.server import make_server

    db, trace_id = priced
    server = make_server(db, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        with urllib.request.urlopen(f"{base}/api/traces", timeout=10) as response:
            (listed,) = json.loads(response.read())["traces"]
        with urllib.request.urlopen(f"{base}/", timeout=10) as response:
            page = response.read().decode()
    finally:
        server.shutdown()
        server.server_close()
    total = _total(db, trace_id)
    assert listed["trace_id"] == trace_id
    assert (listed["cost_usd"], listed["unpriced_llm_spans"]) == (float(total), 1)
    assert f"{format_usd(total)} + 1 unpriced" in listed["cells"]
    assert "<th>cost</th>" in page and f"<td>{format_usd(total)} + 1 unpriced</td>" in page
