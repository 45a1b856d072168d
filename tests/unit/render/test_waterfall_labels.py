"""The report's waterfall labels in a real headless Chromium: a long span name is cut to the room its
row has (an ellipsis), never past the panel's edge, and whole on hover; a bar wider than the room
beside it carries its label inside."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from helpers import CHROMIUM, ROOT, Recorder, open_page, run_cli
from opentelemetry import trace

ARTIFACTS = ROOT / "test-artifacts"
LONG = "summarise_the_quarterly_refund_ledger_for_every_region_" * 6 + "and_then_file_it"

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (make test installs it)")


def _record(recorder: Recorder) -> str:
    """A 10 s agent span; a short tool span early, and the long-named one near its end."""
    tracer, start = recorder.tracer, time.time_ns() - 20 * 10**9
    root = tracer.start_span("agent", start_time=start)
    context = trace.set_span_in_context(root)
    tracer.start_span("lookup", context=context, start_time=start + 10**9).end(end_time=start + 2 * 10**9)
    tracer.start_span(LONG, context=context, start_time=start + 8 * 10**9).end(end_time=start + 9 * 10**9)
    root.end(end_time=start + 10 * 10**9)
    recorder.flush()
    return format(root.get_span_context().trace_id, "032x")


def test_long_labels_are_cut_to_their_room_and_whole_on_hover(
    browser: Any, recorder: Recorder, tmp_path: Path
) -> None:
    out = tmp_path / "labels.html"
    run_cli("report", _record(recorder), "-o", str(out), db=recorder.db_path, check=True)
    page, seen = open_page(browser, out.as_uri(), ".bar")
    page.set_viewport_size({"width": 1280, "height": 800})
    panel = page.locator("#waterfall").bounding_box()
    assert panel is not None
    labels = page.locator(".bar-label")
    assert labels.count() == 3
    for n in range(labels.count()):
        label = labels.nth(n)
        name = label.text_content() or ""
        assert label.get_attribute("title") == name  # the whole name, on hover
        box = label.bounding_box()
        assert box is not None
        assert panel["x"] - 1 <= box["x"] and box["x"] + box["width"] <= panel["x"] + panel["width"] + 1, (
            name[:20],
            box,
            panel,
        )
    long_label = page.locator(".bar-label", has_text="and_then_file_it")
    cut = long_label.evaluate("el => [el.scrollWidth, el.clientWidth, getComputedStyle(el).textOverflow]")
    assert cut[0] > cut[1] and cut[2] == "ellipsis", cut  # cut, with an ellipsis
    # The bar ends at 90 %: its label goes to its left, where the room is.
    assert "label-left" in (page.locator(".bar", has=long_label).get_attribute("class") or "")
    # The whole-width agent bar has no room beside it: its label is inside it, readable.
    agent = page.locator(".bar", has=page.locator(".bar-label", has_text="agent"))
    assert "label-inside" in (agent.first.get_attribute("class") or "")
    long_label.hover()  # a label takes the pointer: it shows its title, a click on it selects its span
    long_label.click()
    assert page.locator("#details h2").text_content() == LONG
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report-long-labels.png"), full_page=True)
    assert seen == {"errors": [], "requests": [], "dialogs": []}
