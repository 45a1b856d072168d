"""Benchmark: the HTML report of a 10,000-span trace, written by the CLI and rendered in Chromium.

Run it as a script (it is not a test, and exits 0 whatever the figures)::

    python bench/bench_report.py [--rounds N] [--repeat R]

Records one agent run through the real BlackboxSpanProcessor: a root AGENT span and N rounds of a
CHAIN step holding an LLM span (system and user messages, a tool call with its arguments, tokens)
and a TOOL span (input and output; every 50th fails with an exception). The default, 3,333
rounds, makes 10,000 spans. Then, R times (medians):

* ``otel-blackbox report TRACE -o report.html``, as a user runs it (a subprocess);
* the file opened in headless Chromium (Debian's ``chromium``, driven by Playwright): the time
  until every bar of the waterfall is in the page and a frame has been painted;
* selecting a span in the middle (its details shown), the error filter, and a search.

Target (the report issue): the report renders in under 2 seconds. The file size is reported.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from otel_blackbox import BlackboxConfig, BlackboxSpanProcessor

TARGET_SECONDS = 2.0
ROUND_NS = 1_500_000_000  # one round of the agent: 1.5 s
SYSTEM = "You are a travel agent. Use the tools to look things up; answer in one short paragraph."
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
# Resolves once every bar is in the page and the frame after it has been painted.
PAINTED = """(count) => new Promise((resolve) => {
  function check() {
    if (document.querySelectorAll('.bar').length === count) {
      requestAnimationFrame(() => requestAnimationFrame(() => resolve(performance.now())));
    } else { requestAnimationFrame(check); }
  }
  check();
})"""


def record_trace(db: Path, rounds: int) -> tuple[str, int]:
    """One agent run of ``rounds`` tool rounds, on disk. Its trace id and span count."""
    provider = TracerProvider(shutdown_on_exit=False)
    processor = BlackboxSpanProcessor(config=BlackboxConfig(db_path=db, max_queue_size=4 * rounds + 1024))
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("bench_report")
    end_ns = time.time_ns()  # a run that just ended: older ones fall to the retention (7 days)
    start_ns = end_ns - rounds * ROUND_NS
    root = tracer.start_span(
        "agent.run", start_time=start_ns, attributes={"openinference.span.kind": "AGENT", "session.id": "s-1"}
    )
    context = trace.set_span_in_context(root)
    for n in range(rounds):
        at = start_ns + n * ROUND_NS
        step = tracer.start_span(f"step {n}", context=context, start_time=at,
                                 attributes={"openinference.span.kind": "CHAIN"})  # fmt: skip
        inside = trace.set_span_in_context(step)
        question = (
            f"Round {n}: find a hotel in city {n % 97} for {n % 5 + 1} nights under {100 + n % 300} EUR."
        )
        arguments = json.dumps({"city": f"city {n % 97}", "nights": n % 5 + 1, "max_price": 100 + n % 300})
        llm = tracer.start_span("llm.chat", context=inside, start_time=at + 1_000_000, attributes={
            "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini",
            "llm.input_messages.0.message.role": "system", "llm.input_messages.0.message.content": SYSTEM,
            "llm.input_messages.1.message.role": "user", "llm.input_messages.1.message.content": question,
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.tool_calls.0.tool_call.id": f"call_{n}",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "search_hotels",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": arguments,
            "llm.token_count.prompt": 180 + n % 40, "llm.token_count.completion": 24,
        })  # fmt: skip
        llm.end(end_time=at + 900_000_000)
        tool = tracer.start_span("search_hotels", context=inside, start_time=at + 910_000_000, attributes={
            "openinference.span.kind": "TOOL", "tool.name": "search_hotels", "input.value": arguments,
        })  # fmt: skip
        if n % 50 == 49:
            tool.record_exception(TimeoutError(f"hotel search timed out after 30 s (round {n})"))
            tool.set_status(trace.Status(trace.StatusCode.ERROR, "hotel search timed out"))
        else:
            tool.set_attribute(
                "output.value", json.dumps([{"name": f"Hotel {n}-{k}", "price": 90 + k} for k in range(3)])
            )
        tool.end(end_time=at + 1_400_000_000)
        step.end(end_time=at + 1_450_000_000)
    root.end(end_time=end_ns)
    if not provider.force_flush(120_000):
        raise SystemExit("the recorder did not flush in time")
    provider.shutdown()
    return format(root.get_span_context().trace_id, "032x"), 1 + 3 * rounds


def write_report(db: Path, trace_id: str, out: Path) -> float:
    started = time.perf_counter()
    argv = [sys.executable, "-m", "otel_blackbox.cli", "--db", str(db), "report", trace_id, "-o", str(out)]
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"report failed: {result.stderr.strip()}")
    return time.perf_counter() - started


def render(browser: Any, report: Path, spans: int, failed: int) -> dict[str, float]:
    """Seconds to render, to select a span, to filter errors, to search; a console error, or a
    filter that shows other than the ``failed`` spans, ends the benchmark."""
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    started = time.perf_counter()
    page.goto(report.as_uri(), wait_until="commit")
    painted_ms = page.evaluate(PAINTED, spans)
    wall = time.perf_counter() - started
    timings = {"render_s": painted_ms / 1000, "render_wall_s": wall}
    middle = page.locator(".bar").nth(spans // 2)
    before = page.text_content("#details")  # the first span's, selected on load
    started = time.perf_counter()
    middle.click()
    page.wait_for_function(
        "(before) => document.getElementById('details').textContent !== before", arg=before
    )
    timings["select_s"] = time.perf_counter() - started
    started = time.perf_counter()
    page.check("#errors-only")
    page.wait_for_function(f"!document.getElementById('match-count').textContent.startsWith('{spans} of')")
    timings["errors_only_s"] = time.perf_counter() - started
    shown = page.text_content("#match-count") or ""
    page.uncheck("#errors-only")
    started = time.perf_counter()
    page.fill("#search", "city 42")
    page.wait_for_function(f"!document.getElementById('match-count').textContent.startsWith('{spans} of')")
    timings["search_s"] = time.perf_counter() - started
    page.close()
    if errors:
        raise SystemExit(f"the report logged errors: {errors[:3]}")
    if not shown.startswith(f"{failed} of"):
        raise SystemExit(f"errors-only shows {shown!r}, not the {failed} failed spans")
    return timings


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=3_333, help="tool rounds, 3 spans each (default 3333)")
    parser.add_argument("--repeat", type=int, default=3, help="repeats; medians (default 3)")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.repeat < 1:
        parser.error("--rounds and --repeat must be >= 1")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("needs Debian's chromium: make browser (or make test) installs it")
        return 0
    from playwright.sync_api import sync_playwright

    workdir = Path(tempfile.mkdtemp(prefix="bench_report-"))
    try:
        db = workdir / "blackbox.db"
        trace_id, spans = record_trace(db, args.rounds)
        out = workdir / "report.html"
        samples: list[dict[str, float]] = []
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            for _ in range(args.repeat):
                written = write_report(db, trace_id, out)
                failed = args.rounds // 50  # every 50th tool call fails
                samples.append({"cli_report_s": written, **render(browser, out, spans, failed)})
            browser.close()
        size = out.stat().st_size
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    median = {key: statistics.median(s[key] for s in samples) for key in samples[0]}
    print(f"one trace of {spans:,} spans; report file {size / 1e6:.1f} MB ({size / spans:,.0f} bytes a span)")
    print(f"medians of {args.repeat}:")
    labels = {
        "cli_report_s": "otel-blackbox report (subprocess, start to file written)",
        "render_s": "rendered in Chromium (navigation start to bars painted)",
        "render_wall_s": "the same, measured from Python",
        "select_s": "select the middle span (details shown)",
        "errors_only_s": "errors-only filter",
        "search_s": "search",
    }
    for key, label in labels.items():
        print(f"   {label:<58} {median[key]:6.3f} s")
    verdict = "PASS" if median["render_s"] < TARGET_SECONDS else "MISS"
    print(f"target: rendered in under {TARGET_SECONDS:g} s: {median['render_s']:.3f} s {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
