"""The workbench's mended pages in a real headless Chromium (issue 48, item 7): the failing tool's
stub is empty and required (the browser refuses the form unchanged), the diff of a rerun in sections
with its changes coloured and its first divergence marked, still text to select and copy, and blame's
decisive step in the failure's colour.

The workbench runs in this process (tests/workbench_client.py) over the refund incident, with the
fake provider behind ``OPENAI_BASE_URL``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_llm import THOROUGH_MODEL, FakeLLMServer
from helpers import CHROMIUM, REFUND_STUB, ROOT, RefundRun, open_page, record_refund_incident
from workbench_client import only_openai, workbench

from otel_blackbox._web.job_pages import job_page
from otel_blackbox._web.jobs import Job

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (make test installs it)")

ARTIFACTS = ROOT / "test-artifacts" / "workbench"
STUB_TOOL, _, STUB_VALUE = REFUND_STUB.partition("=")
FAILURE_RED = "rgb(207, 34, 46)"  # .verdict.bad, the workbench's failure colour


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def incident(tmp_path_factory: pytest.TempPathFactory, llm: FakeLLMServer) -> RefundRun:
    return record_refund_incident(tmp_path_factory.mktemp("trust"), llm.openai_base_url)


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, llm: FakeLLMServer) -> None:
    only_openai(monkeypatch, llm.openai_base_url)


def test_the_stub_must_be_written_and_the_diff_reads_in_sections(
    browser: Any, incident: RefundRun, tmp_path: Path, env: None
) -> None:
    with workbench(incident.db, tmp_path / "wb") as client:
        url = f"{client.origin}/run/{incident.run_id}"
        page, seen = open_page(browser, url, "form[data-testid=rerun-form]")
        page.set_viewport_size({"width": 1280, "height": 800})
        posts: list[str] = []
        page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
        form = page.locator("form[data-testid=rerun-form]")
        stub = form.locator(f"input[name='stub:{STUB_TOOL}']")
        assert stub.input_value() == ""  # never the failing call's arguments
        assert stub.get_attribute("placeholder") == "write the answer the tool should have given"
        hint = stub.locator("xpath=following-sibling::span[@class='hint']").text_content() or ""
        assert "12.OO" in hint  # the arguments shown as what was asked, beside the field
        form.locator("input[name=model]").fill(THOROUGH_MODEL)
        # Submitted with the stub as the page left it: the browser refuses, nothing is sent.
        page.locator("[data-testid=rerun-submit]").click()
        assert stub.evaluate("el => el.validity.valueMissing") is True
        assert page.evaluate("document.activeElement && document.activeElement.name") == f"stub:{STUB_TOOL}"
        assert page.url == url and posts == []
        # Written: taken, and the rerun ends with its verdict and diff.
        stub.fill(STUB_VALUE)
        with page.expect_response(lambda r: r.request.method == "POST") as answer:
            page.locator("[data-testid=rerun-submit]").click()
        assert answer.value.status == 303
        page.wait_for_selector("[data-testid=job]:not([data-state=running])", timeout=60_000)
        assert page.locator("[data-testid=job]").get_attribute("data-state") == "done"
        diff = page.locator("[data-testid=diff]")
        assert diff.locator("h3").all_text_contents() == ["The two runs", "First divergence", "Outcome"]
        first = diff.locator(".dl.first").first
        assert (first.text_content() or "").startswith(" first divergence:")
        colours = page.evaluate(
            """() => Object.fromEntries(['.dl.first', '.dl.del', '.dl.add'].map(s =>
                 [s, getComputedStyle(document.querySelector('[data-testid=diff] ' + s)).backgroundColor]))"""
        )
        assert len(set(colours.values())) == 3 and "rgba(0, 0, 0, 0)" not in colours.values(), colours
        # Text a person can select and copy: the whole block, as the command prints its lines.
        selected = page.evaluate(
            """() => { const d = document.querySelector('[data-testid=diff]');
                 const r = document.createRange(); r.selectNodeContents(d);
                 const s = getSelection(); s.removeAllRanges(); s.addRange(r); return s.toString(); }"""
        )
        assert "shared prefix:" in selected and re.search(r"outcome: failure fixed", selected), selected
        assert page.evaluate(
            "getComputedStyle(document.querySelector('[data-testid=diff] .dl')).userSelect"
        ) in ("auto", "text")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "diff-sections.png"), full_page=True)
        assert seen["errors"] == [] and seen["dialogs"] == [], seen
        page.close()


def test_blames_decisive_step_is_in_the_failure_colour(browser: Any) -> None:
    report = {"decisive": {"index": 7, "type": "model_output", "description": "calls refund_order"},
              "branches": [{"from_index": 7, "type": "model_output", "successes": 0, "samples": 2,
                            "unanswerable": 0}],
              "decisionPoints": 3, "branchCount": 2, "modelCalls": 4}  # fmt: skip
    job = Job("20261207-000000-b1a3e0", "blame", {"samples": 2}, state="done",
              events=[{"event": "blame", "report": report}])  # fmt: skip
    page = browser.new_page()
    page.set_content(job_page(job, None, token="t", read_only=False, child_completed=False))
    decisive = page.locator("[data-testid=blame-decisive]")
    assert decisive.evaluate("el => getComputedStyle(el).color") == FAILURE_RED
    background = decisive.evaluate("el => getComputedStyle(el).backgroundColor")
    assert background != "rgb(218, 251, 225)"  # not the success green
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "blame-decisive.png"), full_page=False)
    page.close()
