"""The HTML report in a real headless Chromium (Debian's package, driven by Playwright).

No console errors, no network requests, one bar per span, selecting a span shows its prompt and
tool arguments, the error filter, and hostile span values that run nothing. Screenshots are kept
in test-artifacts/ for people to look at.
"""

from __future__ import annotations

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
