"""Edit and continue, clicked through in a real headless Chromium.

``otel-blackbox ui`` runs as a user starts it over the demo's refund incident (examples/handoff_agent.py,
recorded by the processor: ``refund_order`` rejects the sloppy model's ``"12.OO"``), with the fake
provider behind ``OPENAI_BASE_URL``. From the failed run's page: its steps, the editor of
refund_order's failing result, the result corrected and the run continued on ``thorough`` (failure
fixed, the diff naming the edit); then the child's own page, its edited step marked, its system
prompt edited and continued on the other OpenAI API: a chain of two edits, the lineage shown. No tool
of the incident runs (its ledger stays empty), the pages make no request beyond the workbench and
raise no error.

Screenshots go to test-artifacts/workbench/; ``BLACKBOX_SCREENSHOTS=1`` also refreshes the
documentation's images, docs/images/workbench-edit-*.png.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from fake_llm import THOROUGH_MODEL, FakeLLMServer
from helpers import CHROMIUM, REFUND_STUB, ROOT, RefundRun, open_page, record_refund_incident
from workbench_process import JOB_PAGE, Workbench, act, ended, only_the_workbench, text_of, ui_process

from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.model import terminal_outcome
from otel_blackbox._cassette.verify import verify_cassette

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (make test installs it)")

ARTIFACTS = ROOT / "test-artifacts" / "workbench"
DOC_IMAGES = ROOT / "docs" / "images"
VIEWPORT = {"width": 1280, "height": 800}
STUB_TOOL, _, STUB_VALUE = REFUND_STUB.partition("=")  # refund_order, "refunded 12.00 on order Alpha"
SYSTEM = "Refund exactly what was paid, as the order says it."


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def incident(tmp_path_factory: pytest.TempPathFactory, llm: FakeLLMServer) -> RefundRun:
    return record_refund_incident(tmp_path_factory.mktemp("workbench-edit"), llm.openai_base_url)


def _shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=False)
    if os.environ.get("BLACKBOX_SCREENSHOTS", "") == "1":
        DOC_IMAGES.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(DOC_IMAGES / f"workbench-{name}.png"), full_page=False)


def _lineage(page: Page) -> list[str]:
    return [" ".join((t or "").split()) for t in page.locator("[data-testid=lineage] li").all_text_contents()]


def test_a_step_edited_and_continued_then_the_child_edited_again(
    browser: Any, incident: RefundRun, llm: FakeLLMServer, tmp_path: Path
) -> None:
    with ui_process(incident.db, llm.openai_base_url, "--workdir", str(tmp_path / "work")) as bench:
        _walk(browser, bench, incident, llm)
    assert not incident.ledger.exists() or incident.ledger.read_text() == ""  # no refund went through


def _walk(browser: Any, bench: Workbench, incident: RefundRun, llm: FakeLLMServer) -> None:
    page, seen = open_page(browser, f"{bench.url}/run/{incident.run_id}", "[data-testid=edit-steps]")
    page.set_viewport_size(VIEWPORT)

    # The run's steps, each editable one with its link; refund_order's failing result is step 9.
    page.locator("[data-testid=edit-steps]").click()
    page.wait_for_selector("a[data-testid=edit-step]")
    failing = page.locator("tr.step[data-step-index='9']")
    assert "refund_order" in (failing.text_content() or "")
    assert page.locator("tr.step[data-step-index='8'] a[data-testid=edit-step]").count() == 0  # a tool_call
    _shot(page, "edit-1-steps")
    failing.locator("a[data-testid=edit-step]").click()

    # The editor: the changes that fit a tool result, the error as recorded, the result to write.
    page.wait_for_selector("form[data-testid=edit-form]")
    assert text_of(page, "[data-testid=edit-step-type]").startswith("tool_result")
    assert page.locator("input[name=change]").evaluate_all("els => els.map(e => e.value)") == [
        "set",
        "set-error",
    ]
    assert page.locator("[data-testid=change-set]").is_checked()
    assert "Error running tool" in page.locator("[data-testid=value-set-error]").input_value()
    page.locator("[data-testid=value-set]").fill(STUB_VALUE)
    page.locator("form[data-testid=edit-form] input[name=model]").fill(THOROUGH_MODEL)
    _shot(page, "edit-2-editor")
    act(page, "[data-testid=edit-submit]", JOB_PAGE)
    first_job = page.url.removeprefix(bench.url)

    # Its job: progress, then the verdict and the diff against the parent, the edit named first.
    ended(page, "done")
    verdict = page.locator("[data-testid=verdict]")
    assert verdict.get_attribute("data-kind") == "failure_fixed", verdict.text_content()
    assert text_of(page, "[data-testid=diff]").startswith("The two runs edited at step 9: tool result of")
    assert _lineage(page) == [
        f"run {incident.run_id}",
        f"job {first_job[5:]}: edited at step 9: tool result of refund_order",
    ]
    _shot(page, "edit-3-verdict")

    # The child's page: the edited step marked; its request at step 6 edited in turn.
    page.locator("[data-testid=child-link]").click()
    page.wait_for_selector("tr.step[data-edited=true]")
    assert page.locator("tr.step[data-edited=true]").get_attribute("data-step-index") == "9"
    page.locator("tr.step[data-step-index='6'] a[data-testid=edit-step]").click()
    page.wait_for_selector("form[data-testid=edit-form]")
    assert page.locator("input[name=change]").evaluate_all("els => els.map(e => e.value)") == [
        "user", "insert-user", "system", "tool",
    ]  # fmt: skip
    definition = json.loads(page.locator("[data-testid=value-tool]").input_value())
    assert definition["inputSchema"]["properties"]  # refund_order's own, to edit
    page.locator("[data-testid=change-system]").check()
    page.locator("[data-testid=value-system]").fill(SYSTEM)
    form = page.locator("form[data-testid=edit-form]")
    form.locator("select[name=provider]").select_option("openai-responses")
    form.locator("input[name=model]").fill(THOROUGH_MODEL)
    # The child's refund_order result answered a call with "12.OO": a call with "12.00" needs a stub.
    form.locator("details:has(input[name^=stub]) summary").click()
    form.locator(f"input[name='stub:{STUB_TOOL}']").fill(STUB_VALUE)
    act(page, "[data-testid=edit-submit]", JOB_PAGE)
    ended(page, "done")
    second_job = page.url.removeprefix(bench.url)
    assert _lineage(page) == [
        f"run {incident.run_id}",
        f"job {first_job[5:]}: edited at step 9: tool result of refund_order",
        f"job {second_job[5:]}: edited at step 6: system prompt",
    ]
    _shot(page, "edit-4-chain")
    assert SYSTEM in json.dumps([body for path, body in llm.requests if path.endswith("/responses")][-1])
    only_the_workbench(seen, bench)
    page.close()

    # What it wrote: two children, each verifying, each its parent's prefix hash for hash.
    children = sorted((bench.root / "children").glob("fork-*.json"))
    assert len(children) == 2, children
    first, second = (load_cassette(path) for path in children)
    assert verify_cassette(first).passed and verify_cassette(second).passed
    assert [s.hash for s in second.steps[:6]] == [s.hash for s in first.steps[:6]]
    assert (first.edit or {}).get("by") == (second.edit or {}).get("by") == "workbench"
    refunds = [s.payload for s in second.steps[6:] if s.type == "tool_result"]
    stub = {"toolName": STUB_TOOL, "result": json.loads(STUB_VALUE), "stub": True}  # marked as a stub's
    assert [{k: v for k, v in r.items() if k != "toolCallId"} for r in refunds] == [stub]
    assert terminal_outcome(second).status == "success"  # the stub answered the corrected call
