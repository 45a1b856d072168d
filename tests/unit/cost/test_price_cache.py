"""Prices without genai-prices' start-up cost: price plans resolved once, kept in a cache file.

Every figure is compared with genai-prices' own ``calc_price`` at the call's time, for equality
(Decimal ``==``), both when the plan was just resolved and when it comes from the file; the CLI
commands read the file without importing genai-prices. A file for another genai-prices version, or
for other price data, is not used; a damaged file is ignored (and replaced), never a traceback.
Each test has a cache folder of its own (``XDG_CACHE_HOME``, which the CLI subprocesses inherit).
Speed is bench/bench_cli_startup.py's business, not a test's.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from genai_prices import Usage, calc_price, types
from genai_prices.data import providers
from helpers import Recorder, run_cli

from otel_blackbox._cost import price_cache
from otel_blackbox._cost.prices import Call, price_of, total_of
from otel_blackbox._cost.usage import TokenUsage

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
HOUR_NS = 3600 * 10**9


@pytest.fixture(autouse=True)
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "cache-home"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    price_cache.reset()
    yield home
    price_cache.reset()


def _ns(year: int, month: int, day: int, hour: int = 12, minute: int = 0) -> int:
    return (
        (datetime(year, month, day, hour, minute, tzinfo=timezone.utc) - EPOCH)
        // timedelta(microseconds=1)
        * 1000
    )


def _genai(
    model: str, provider: str | None, usage: TokenUsage, at_ns: int
) -> tuple[Decimal, str, str] | None:
    """genai-prices' own figure (and the model and provider it priced), or None when it has none."""
    tokens = Usage(
        input_tokens=usage.input,
        output_tokens=usage.output,
        cache_read_tokens=usage.cache_read or None,
        cache_write_tokens=usage.cache_write or None,
    )
    when = EPOCH + timedelta(microseconds=at_ns // 1000)
    try:
        found = calc_price(tokens, model, provider_id=provider, genai_request_timestamp=when)
    except (LookupError, ValueError):
        return None
    return found.total_price, found.model.id, found.provider.id


def _usd(model: str, provider: str | None, usage: TokenUsage, at_ns: int) -> Decimal:
    found = _genai(model, provider, usage, at_ns)
    assert found is not None, model
    return found[0]


def _ours(model: str, provider: str | None, usage: TokenUsage, at_ns: int) -> tuple[Decimal, str, str] | None:
    price = price_of(model, provider, usage, at_ns)
    return None if price is None else (price.usd, price.model, price.provider)


DATED_USAGE = TokenUsage(input=50_000, output=2_000, cache_read=10_000)


def _dated_model() -> tuple[str, str, int, int]:
    """A model whose price of DATED_USAGE changed on a date (a StartDateConstraint), from
    genai-prices' data: its name, provider, and an instant before and at that date."""
    for provider in providers:
        for model in provider.models:
            for conditional in model.prices if isinstance(model.prices, list) else []:
                if isinstance(conditional.constraint, types.StartDateConstraint):
                    day = conditional.constraint.start_date
                    on = _ns(day.year, day.month, day.day, 0)
                    if _genai(model.id, provider.id, DATED_USAGE, on - 1) != _genai(
                        model.id, provider.id, DATED_USAGE, on
                    ):
                        return model.id, provider.id, on - 1, on
    raise AssertionError("genai-prices has no model whose price changed on a date")


U = TokenUsage
CASES: list[tuple[str, str | None, TokenUsage]] = [
    ("gpt-4o-mini", "openai", U(input=12_000, output=800, cache_read=8_000)),
    ("gpt-4o-mini", "openai", U(input=1, output=0)),
    ("gpt-4o", None, U(input=5_000, output=1_000, cache_read=1_024)),
    ("claude-sonnet-4-5", "anthropic", U(input=30_000, output=1_200, cache_read=20_000, cache_write=5_000)),
    ("claude-sonnet-4-5", "anthropic", U(input=250_000, output=10, cache_write=40_000)),
    ("gemini-2.5-pro", "google", U(input=199_999, output=3_000, cache_read=50_000)),
    ("gemini-2.5-pro", "google", U(input=200_000, output=3_000)),
    ("gemini-2.5-pro", "google", U(input=200_001, output=3_000, cache_read=100_000)),
    ("gemini-2.5-flash", "google", U(input=9_000, output=400, cache_read=3_000)),
    ("deepseek-chat", "deepseek", U(input=4_000, output=900, cache_read=1_000)),
    ("gpt-4o-mini", "openai", U(input=100, output=10, cache_read=80, cache_write=80)),  # more cached than in
    ("no-such-model-anywhere", None, U(input=10, output=10)),
]
# deepseek-chat's standard price holds from 00:30 to 16:30 UTC (a TimeOfDateConstraint), its
# off-peak price otherwise: noon, then 20:00 and 00:29 (off-peak, the second just before the edge).
TIMES = [_ns(2026, 11, 2, 12), _ns(2026, 11, 2, 20), _ns(2025, 1, 15, 0, 29)]


def test_plans_give_genai_prices_own_figures_resolved_and_from_the_file(cache_home: Path) -> None:
    model, provider, before, on = _dated_model()
    cases = [(m, p, u, at) for m, p, u in CASES for at in TIMES]
    cases += [(model, provider, DATED_USAGE, at) for at in (before, on)]
    deepseek = [_genai("deepseek-chat", "deepseek", U(input=4_000, output=900), at) for at in TIMES[:2]]
    assert deepseek[0] != deepseek[1]  # the cases do cross a time-of-day price
    for source in ("genai-prices", "the cache file"):
        for m, p, usage, at in cases:
            assert _ours(m, p, usage, at) == _genai(m, p, usage, at), (source, m, p, usage, at)
        assert price_cache.cache_file(_version()).is_file()
        price_cache.reset()  # as a new command: the plans now come from the file
    stored = json.loads(price_cache.cache_file(_version()).read_text())["plans"]
    assert stored["no-such-model-anywhere\x1f"] is None  # unknown: kept as unknown, not asked again
    assert {"gpt-4o-mini\x1fopenai", "gemini-2.5-pro\x1fgoogle", "deepseek-chat\x1fdeepseek"} <= set(stored)


def test_a_total_is_exactly_the_sum_of_genai_prices_figures() -> None:
    """total_of sums the calls of one model, period and tier bracket before pricing them: the
    result must be the sum of each call's own price, to the last digit."""
    rng = random.Random(35)
    models = [("gpt-4o-mini", "openai"), ("claude-sonnet-4-5", "anthropic"), ("gemini-2.5-pro", "google"),
              ("deepseek-chat", "deepseek"), ("fake-model-x", "openai")]  # fmt: skip
    calls = []
    for _ in range(400):
        model, provider = rng.choice(models)
        prompt = rng.randint(0, 300_000)
        cached = rng.randint(0, prompt // 2)
        written = rng.randint(0, (prompt - cached) // 3) if provider == "anthropic" else 0
        usage = TokenUsage(input=prompt, output=rng.randint(0, 4_000), cache_read=cached, cache_write=written)
        calls.append(Call(model, provider, usage, _ns(2026, 11, 2, 0) + rng.randint(0, 48 * HOUR_NS)))
    figures = [_genai(c.model or "", c.provider, c.usage, c.start_ns or 0) for c in calls]
    cost = total_of(calls)
    assert cost.usd == sum((f[0] for f in figures if f is not None), Decimal(0))
    assert cost.unpriced == sum(1 for f in figures if f is None) > 0
    as_model = total_of(calls, as_model="gpt-4.1")
    assert as_model.usd == sum((_usd("gpt-4.1", None, c.usage, c.start_ns or 0) for c in calls), Decimal(0))
    assert as_model.unpriced == 0


# --- the CLI --------------------------------------------------------------------------------------


def _record(db: Path) -> tuple[str, int]:
    """One trace: an agent span and three priced LLM calls (cached tokens too); its id and start."""
    recorder = Recorder(db)
    start = time.time_ns()
    with recorder.tracer.start_as_current_span("agent", start_time=start) as root:
        for model, provider, prompt, completion, cached in (
            ("gpt-4o-mini", "openai", 12_000, 800, 8_000),
            ("claude-sonnet-4-5", "anthropic", 30_000, 1_200, 20_000),
            ("gpt-4o-mini", "openai", 900, 40, 0),
        ):
            attributes: dict[str, str | int] = {
                "openinference.span.kind": "LLM",
                "llm.model_name": model,
                "llm.provider": provider,
                "llm.token_count.prompt": prompt,
                "llm.token_count.completion": completion,
                "llm.token_count.prompt_details.cache_read": cached,
            }
            recorder.tracer.start_span(model, attributes=attributes, start_time=start).end(start + 1_000)
    recorder.flush()
    recorder.processor.shutdown()
    return format(root.get_span_context().trace_id, "032x"), start


def _expected(start: int) -> float:
    calls = [("gpt-4o-mini", "openai", TokenUsage(12_000, 800, 8_000)),
             ("claude-sonnet-4-5", "anthropic", TokenUsage(30_000, 1_200, 20_000)),
             ("gpt-4o-mini", "openai", TokenUsage(900, 40))]  # fmt: skip
    return float(sum((_usd(m, p, u, start) for m, p, u in calls), Decimal(0)))


def _version() -> str:
    identity = price_cache.data_identity()
    assert identity is not None
    return identity[0]


def _listed_cost(db: Path) -> float:
    result = run_cli("list", "--json", db=db)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    (row,) = json.loads(result.stdout)
    assert row["unpriced_llm_spans"] == 0
    return float(row["cost_usd"])


@pytest.mark.parametrize("command", [["list"], ["show", "{trace}"], ["stats"], ["runs"]])
def test_commands_price_from_the_cache_without_importing_genai_prices(
    command: list[str], tmp_path: Path
) -> None:
    db = tmp_path / "blackbox.db"
    trace_id, start = _record(db)
    assert _listed_cost(db) == _expected(start)  # the first command resolves the plans and keeps them
    loaded = tmp_path / "modules.json"
    args = ["--db", str(db), *(a.format(trace=trace_id[:8]) for a in command)]
    code = (
        "import json, sys\nfrom otel_blackbox.cli import main\ntry:\n"
        f"    main({args!r})\nfinally:\n"
        f"    open({str(loaded)!r}, 'w').write(json.dumps(sorted(sys.modules)))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "$" in result.stdout  # it priced
    modules = json.loads(loaded.read_text())
    assert not [m for m in modules if m.startswith(("genai_prices", "pydantic", "importlib.metadata"))]


def _bogus_file(version: str, data: str) -> dict[str, Any]:
    """A cache file whose plans price every token of gpt-4o-mini and claude at $1."""
    rates = {"fee": "0", "input": "1", "output": "1", "cache_read": "0", "cache_write": "0", "refused": []}
    period = {"since_ns": None, "hours_us": None, "starts": [], "brackets": [rates]}
    plan = {"exact": True, "periods": [period]}
    return {
        "format": 1,
        "genai_prices": version,
        "data": data,
        "plans": {
            "gpt-4o-mini\x1fopenai": {**plan, "model": "gpt-4o-mini", "provider": "openai"},
            "claude-sonnet-4-5\x1fanthropic": {**plan, "model": "claude-sonnet-4-5", "provider": "anthropic"},
        },
    }


def _recorded_with_cache_path(db: Path) -> tuple[int, str, str, Path]:
    """The database recorded; its start, genai-prices' version and data, and the cache file's path
    for them (its folder made, the file not written)."""
    _, start = _record(db)
    identity = price_cache.data_identity()
    assert identity is not None
    version, data = identity
    path = price_cache.cache_file(version)
    path.parent.mkdir(parents=True)
    return start, version, data, path


def test_a_cache_for_another_genai_prices_version_or_data_is_not_used(tmp_path: Path) -> None:
    db = tmp_path / "blackbox.db"
    start, version, data, path = _recorded_with_cache_path(db)
    # Control: the same file, written for this version and data, is what answers.
    path.write_text(json.dumps(_bogus_file(version, data)))
    assert _listed_cost(db) == 12_000 + 800 + 30_000 + 1_200 + 900 + 40
    for other in (_bogus_file("0.0.1", data), _bogus_file(version, "1:2")):
        path.write_text(json.dumps(other))
        assert _listed_cost(db) == _expected(start)
        rewritten = json.loads(path.read_text())  # replaced by this version's plans
        assert (rewritten["genai_prices"], rewritten["data"]) == (version, data)
    # A file named for another version is never read.
    path.unlink()
    (path.parent / "genai-prices-0.0.1.json").write_text(json.dumps(_bogus_file("0.0.1", data)))
    assert _listed_cost(db) == _expected(start)


GOOD_RATES: dict[str, Any] = {
    "fee": "0", "input": "1", "output": "1", "cache_read": None, "cache_write": None, "refused": [],
}  # fmt: skip
GOOD_PERIOD: dict[str, Any] = {"since_ns": None, "hours_us": None, "starts": [], "brackets": [GOOD_RATES]}
HEAD = b'{"format": 1, "genai_prices": "%(version)s", "data": "%(data)s", '
DAMAGED = [b"\x00\xff\xfe not even text", b"{not json", b"[]", HEAD + b'"plans": []}',
           HEAD + b'"plans": {"gpt-4o-mini\\u001fopenai": 7}}']  # fmt: skip


def _plan(exact: Any = True, model: Any = "gpt-4o-mini", **period: Any) -> dict[str, Any]:
    periods = [] if period.get("none") else [{**GOOD_PERIOD, **period}]
    return {"model": model, "provider": "openai", "exact": exact, "periods": periods}


DAMAGED_PLANS: list[dict[str, Any]] = [
    _plan(model=1), _plan(none=True), _plan(starts=[5]), _plan(since_ns="x"), _plan(hours_us=[1]),
    _plan(exact="yes"),
    *(_plan(brackets=[{**GOOD_RATES, **change}])
      for change in ({"input": "abc"}, {"output": "NaN"}, {"fee": 3}, {"refused": [99]}, {"refused": "x"})),
]  # fmt: skip


@pytest.mark.parametrize("damage", range(len(DAMAGED) + len(DAMAGED_PLANS)))
def test_a_damaged_cache_file_is_ignored_and_replaced(damage: int, tmp_path: Path) -> None:
    db = tmp_path / "blackbox.db"
    start, version, data, path = _recorded_with_cache_path(db)
    if damage < len(DAMAGED):
        path.write_bytes(DAMAGED[damage] % {b"version": version.encode(), b"data": data.encode()})
    else:
        plans = {"gpt-4o-mini\x1fopenai": DAMAGED_PLANS[damage - len(DAMAGED)]}
        path.write_text(json.dumps({"format": 1, "genai_prices": version, "data": data, "plans": plans}))
    for command in ("list", "stats", "runs"):
        result = run_cli(command, db=db)
        assert result.returncode == 0 and result.stderr == "", (command, result.stderr)
    assert _listed_cost(db) == _expected(start)
    plans = json.loads(path.read_text())["plans"]  # replaced: a good plan where the damage was
    assert (
        plans["gpt-4o-mini\x1fopenai"]["model"] == "gpt-4o-mini" and plans["gpt-4o-mini\x1fopenai"]["periods"]
    )


def test_a_cache_folder_that_cannot_be_written_still_prices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "blackbox.db"
    _, start = _record(db)
    blocked = tmp_path / "a-file-not-a-folder"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    result = run_cli("stats", db=db)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert _listed_cost(db) == _expected(start)
