"""What pricing adds to ``stats``, side by side in one run: the counts alone against counts and cost.

Run it as a script (not a test; exits 0 whatever the figures)::

    python bench/bench_cost.py [--llm-spans N] [--other-spans M] [--repeat R]

A database of N LLM spans (OpenInference attributes: model, provider, token counts, cached tokens;
four models of three providers, one of them tiered, every call with its own token counts, over
three days) and M other spans, written by the real BlackboxSpanProcessor. Then, alternately, R
times each: ``queries.stats`` (what ``stats`` showed before cost) and ``queries.stats`` plus
``llm_calls.cost_by_model`` (what it shows now), in-process on a warm file, the prices this process
resolved forgotten before each run, as a command starts (the price plans then come from the cache
file, as in a command after the first); and, once, pricing every call one by one with genai-prices'
``calc_price`` at the call's start (the naive way), whose total must equal ours exactly.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

from genai_prices import Usage, calc_price
from opentelemetry.sdk.trace import TracerProvider

from otel_blackbox import BlackboxSpanProcessor
from otel_blackbox._config import BlackboxConfig
from otel_blackbox._cost import llm_calls, price_cache
from otel_blackbox._cost.prices import total_of
from otel_blackbox._store import queries
from otel_blackbox._store.connection import connect_reader

MODELS = [("gpt-4o-mini", "openai"), ("gpt-4o", "openai"), ("claude-sonnet-4-5", "anthropic"),
          ("gemini-2.5-pro", "google")]  # fmt: skip
DAY_NS = 86_400 * 10**9
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def build(
    db: Path, llm_spans: int, other_spans: int, models: list[tuple[str, str]] = MODELS
) -> list[tuple[str, str, int, int, int, int]]:
    processor = BlackboxSpanProcessor(config=BlackboxConfig(db_path=db, max_queue_size=1_000_000))
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("bench")
    rng = random.Random(7)
    now = time.time_ns()
    made = []
    for i in range(llm_spans):
        model, vendor = models[i % len(models)]
        prompt, completion = rng.randint(200, 250_000), rng.randint(10, 4_000)
        cached = rng.randint(0, prompt // 2)
        start = now - (i % 3) * DAY_NS
        attributes: dict[str, Any] = {
            "openinference.span.kind": "LLM",
            "llm.model_name": model,
            "llm.provider": vendor,
            "llm.token_count.prompt": prompt,
            "llm.token_count.completion": completion,
            "llm.token_count.total": prompt + completion,
            "llm.token_count.prompt_details.cache_read": cached,
        }
        tracer.start_span("llm", attributes=attributes, start_time=start).end(start + 1000)
        made.append((model, vendor, prompt, completion, cached, start))
    for _ in range(other_spans):
        tracer.start_span("tool", attributes={"openinference.span.kind": "TOOL"}).end()
    assert processor.force_flush(600_000)
    processor.shutdown()
    return made


def naive_total(made: list[tuple[str, str, int, int, int, int]]) -> Decimal:
    total = Decimal(0)
    for model, vendor, prompt, completion, cached, start in made:
        when = EPOCH + timedelta(microseconds=start // 1000)  # the call's start, as priced
        usage = Usage(input_tokens=prompt, output_tokens=completion, cache_read_tokens=cached or None)
        total += calc_price(usage, model, provider_id=vendor, genai_request_timestamp=when).total_price
    return total


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llm-spans", type=int, default=20_000)
    parser.add_argument("--other-spans", type=int, default=60_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--no-tiered", action="store_true", help="leave out the tiered model (gemini-2.5-pro)"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        models = [m for m in MODELS if not (args.no_tiered and m[0] == "gemini-2.5-pro")]
        made = build(db, args.llm_spans, args.other_spans, models)
        before: list[float] = []
        after: list[float] = []
        for _ in range(args.repeat):
            for mode in ("before", "after"):
                price_cache.reset()  # as a command starts: plans read from the cache file
                start = time.perf_counter()
                with connect_reader(db) as conn:
                    queries.stats(conn, db)
                    if mode == "after":
                        llm_calls.cost_by_model(conn)
                (before if mode == "before" else after).append(time.perf_counter() - start)
        with connect_reader(db) as conn:  # the total in Decimal, as the commands sum it
            total = total_of(c for c in (found.call() for found in llm_calls.every_call(conn)) if c).usd
        start = time.perf_counter()
        naive = naive_total(made)
        naive_s = time.perf_counter() - start
    assert total == naive, (total, naive)  # genai-prices' own figure, to the last digit
    b, a = statistics.median(before), statistics.median(after)
    print(f"{args.llm_spans} LLM spans ({', '.join(m for m, _ in models)}) + {args.other_spans} others")
    print(f"stats, counts only (before)     {b * 1000:8.1f} ms")
    print(f"stats, counts and cost (now)    {a * 1000:8.1f} ms   ({a / b:.2f}x)")
    print(f"calc_price on every call        {naive_s * 1000:8.1f} ms   (the same total: ${naive:.2f})")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
