"""The HTML report in a real headless Chromium (Debian's package, driven by Playwright).

No console errors, no network requests, one bar per span, selecting a span shows its prompt and
tool arguments, the error filter, the zoom of the time axis, and hostile span values that run
nothing. Screenshots are kept in test-artifacts/ for people to look at.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from helpers import CHROMIUM, ROOT, Recorder, open_page, run_cli
from opentelemetry import trace

ARTIFACTS = ROOT / "test-artifacts"
XSS = '</script><script>alert(1)</script>"><img src=x onerror=alert(2)>'

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (make test installs it)")


def _record(recorder: Recorder, hostile: bool = False) -> str:
    tracer = recorder.tracer
    text = XSS if hostile else ""
    with tracer.start_as_current_span(
        f"agent{text}",
        attributes={"openinference.span.kind": "AGENT", "input.value": f"Weather in Paris?{text}"},
    ) as root:
        with tracer.start_as_current_span(
            "ChatCompletion",
            attributes={
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o-mini",
                "llm.token_count.prompt": 20,
                "llm.token_count.completion": 5,
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.content": f"What is the weather in Paris?{text}",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_1",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "get_weather",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"city":"Paris"}',
            },
        ):
            pass
        try:
            with tracer.start_as_current_span("get_weather", attributes={"openinference.span.kind": "TOOL"}):
                raise ValueError(f"weather service unavailable{text}")
        except ValueError:
            pass
        tracer.start_span("still-running", context=trace.set_span_in_context(root))
        trace_id = format(root.get_span_context().trace_id, "032x")
    recorder.flush()
    return trace_id


def _open(browser: Any, path: Path) -> tuple[Any, dict[str, list[str]]]:
    return open_page(browser, path.as_uri(), ".bar")


def test_report_in_chromium(browser: Any, recorder: Recorder, tmp_path: Path) -> None:
    trace_id = _record(recorder)
    out = tmp_path / "incident.html"
    run_cli("report", trace_id[:8], "-o", str(out), db=recorder.db_path, check=True)
    page, seen = _open(browser, out)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
    assert page.locator(".bar").count() == 4  # one bar per span, the open one included
    assert page.locator(".bar.status-open").count() == 1  # "still-running" never ended
    page.locator(".bar", has_text="ChatCompletion").first.click()
    details = page.text_content("#details") or ""
    assert "What is the weather in Paris?" in details and "get_weather" in details and '"city"' in details
    assert "telemetry.sdk.language" in (page.text_content("#details [data-section=resource]") or "")
    page.check("#errors-only")
    visible = [b for b in page.locator(".bar").all() if b.is_visible()]
    assert len(visible) == 1 and "get_weather" in (visible[0].text_content() or "")
    page.screenshot(path=str(ARTIFACTS / "report-errors-only.png"), full_page=True)
    assert seen == {"errors": [], "requests": [], "dialogs": []}


def test_hostile_values_run_nothing(browser: Any, recorder: Recorder, tmp_path: Path) -> None:
    trace_id = _record(recorder, hostile=True)
    out = tmp_path / "hostile.html"
    run_cli("report", trace_id[:8], "-o", str(out), db=recorder.db_path, check=True)
    page, seen = _open(browser, out)
    for bar in page.locator(".bar").all():
        bar.click()
    page.screenshot(path=str(ARTIFACTS / "report-hostile.png"), full_page=True)
    assert XSS in (page.text_content("body") or "")  # shown as text, not run
    assert seen == {"errors": [], "requests": [], "dialogs": []}


def test_time_axis_zooms_and_its_labels_sit_where_they_say(
    browser: Any, recorder: Recorder, tmp_path: Path
) -> None:
    # A 10 s run with a 100 ms tool call in its middle: at the whole-trace scale it is a sliver.
    tracer, start = recorder.tracer, time.time_ns() - 20 * 10**9
    root = tracer.start_span("agent", start_time=start)
    context = trace.set_span_in_context(root)
    tracer.start_span("quick_tool", context=context, start_time=start + 5 * 10**9).end(
        end_time=start + 5 * 10**9 + 10**8
    )
    root.end(end_time=start + 10 * 10**9)
    recorder.flush()
    trace_id = format(root.get_span_context().trace_id, "032x")
    out = tmp_path / "zoom.html"
    run_cli("report", trace_id, "-o", str(out), db=recorder.db_path, check=True)
    page, seen = _open(browser, out)

    def box(selector: str) -> dict[str, float]:
        found = page.locator(selector).first.bounding_box()
        assert found is not None
        return dict(found)

    axis = box("#axis")
    ticks = page.locator("#axis .tick")
    assert ticks.all_text_contents() == ["0ns", "2.50s", "5.00s", "7.50s", "10.00s"]
    first, middle, last = (
        box("#axis .tick >> nth=0"),
        box("#axis .tick >> nth=2"),
        box("#axis .tick >> nth=4"),
    )
    assert abs(first["x"] - axis["x"]) < 1 and abs(last["x"] + last["width"] - axis["x"] - axis["width"]) < 1
    assert abs(middle["x"] + middle["width"] / 2 - axis["x"] - axis["width"] / 2) < 1  # centred on 50 %
    tool_bar = ".bar[data-span-id]:has(.bar-label:text-is('quick_tool'))"
    narrow = box(tool_bar)["width"]
    page.click("#zoom-in")
    page.click("#zoom-in")
    assert page.text_content("#zoom-level") == "4\u00d7"
    assert ticks.count() == 17 and ticks.nth(8).text_content() == "5.00s"  # four to a screen width
    assert box(tool_bar)["width"] == pytest.approx(4 * narrow, rel=0.05)
    assert box("#axis")["width"] == pytest.approx(4 * axis["width"], rel=0.01)
    assert page.evaluate(
        "(() => { const w = document.getElementById('waterfall'); return w.scrollWidth > w.clientWidth; })()"
    )
    page.locator(tool_bar).click()  # selecting it brings it into the visible part of the panel
    panel, bar = box("#waterfall"), box(tool_bar)
    assert panel["x"] <= bar["x"] and bar["x"] + bar["width"] <= panel["x"] + panel["width"]
    page.screenshot(path=str(ARTIFACTS / "report-zoomed.png"), full_page=True)
    page.click("#zoom-fit")
    assert page.text_content("#zoom-level") == "1\u00d7"
    assert box(tool_bar)["width"] == pytest.approx(narrow, rel=0.05)
    page.click("#zoom-out")  # already the whole trace: stays there
    assert page.text_content("#zoom-level") == "1\u00d7"
    assert seen == {"errors": [], "requests": [], "dialogs": []}
