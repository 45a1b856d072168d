"""The workbench clicked through in a real headless Chromium: the incident path, as a user walks it.

``otel-blackbox ui`` runs as a user starts it (the real CLI, in a process of its own) over the demo's
refund incident (examples/handoff_agent.py, recorded by the processor: ``refund_order`` rejects the
sloppy model's ``"12.OO"``), with the fake provider behind ``OPENAI_BASE_URL``. From the front page:
the failed run, its page opened on the failing span, a rerun with a stub for ``refund_order`` on the
``thorough`` model (fixed), a contract generated from that child and saved, and the suite run all
(green on ``thorough``, red on ``hasty``, which never calls ``refund_order``). No tool of the incident
runs (its ledger stays empty), the pages make no request beyond the workbench and raise no error.

Screenshots of each step go to test-artifacts/workbench/; ``BLACKBOX_SCREENSHOTS=1`` also refreshes
the documentation's images, docs/images/workbench-*.png.
"""

from __future__ import annotations

import json
import os
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from fake_llm import HASTY_MODEL, THOROUGH_MODEL, FakeLLMServer
from helpers import CHROMIUM, REFUND_STUB, ROOT, RefundRun, open_page, record_refund_incident, run_cli
from workbench_process import (
    JOB_PAGE,
    KEY,
    LEFT_OUT,
    Workbench,
    act,
    ended,
    only_the_workbench,
    text_of,
    ui_process,
    wait_for_job,
)

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (make test installs it)")

ARTIFACTS = ROOT / "test-artifacts" / "workbench"
DOC_IMAGES = ROOT / "docs" / "images"
VIEWPORT = {"width": 1280, "height": 800}
CONTRACT = "refund"
STUB_TOOL, _, STUB_VALUE = REFUND_STUB.partition("=")  # refund_order, "refunded 12.00 on order Alpha"
TURN_LIMIT = re.compile(r"at most \d+ model turns")  # the assertion the contract is saved without


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def incident(tmp_path_factory: pytest.TempPathFactory, llm: FakeLLMServer) -> RefundRun:
    """The refund incident, recorded by the processor from the real OpenAI Agents SDK: it failed."""
    return record_refund_incident(tmp_path_factory.mktemp("workbench"), llm.openai_base_url)


@pytest.fixture(scope="module")
def ui(incident: RefundRun, llm: FakeLLMServer) -> Iterator[Workbench]:
    """The workbench over the incident's database, its files beside it (blackbox.workbench/)."""
    with ui_process(incident.db, llm.openai_base_url) as running:
        yield running


@pytest.fixture
def openai_env(monkeypatch: pytest.MonkeyPatch, llm: FakeLLMServer) -> None:
    """For run_cli (which passes the environment on): the fake provider, a made-up key, no other."""
    for name in list(os.environ):
        if name.startswith(LEFT_OUT):
            monkeypatch.delenv(name)
    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def _page(browser: Any, bench: Workbench, path: str, ready: str) -> tuple[Page, dict[str, list[str]]]:
    page, seen = open_page(browser, bench.url + path, ready)
    page.set_viewport_size(VIEWPORT)
    return page, seen


def _shot(page: Page, name: str, doc_name: str) -> None:
    """The page as it is, for people to look at; and for the docs, when a maintainer refreshes them."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=False)
    if os.environ.get("BLACKBOX_SCREENSHOTS", "") == "1":
        DOC_IMAGES.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(DOC_IMAGES / doc_name), full_page=False)


def _rerun_thorough(page: Page) -> None:
    """On a failed run's page: the rerun on ``thorough`` with the stub for refund_order, to its end."""
    form = page.locator("form[data-testid=rerun-form]")
    form.locator("input[name=model]").fill(THOROUGH_MODEL)
    form.locator(f"input[name='stub:{STUB_TOOL}']").fill(STUB_VALUE)
    act(page, "[data-testid=rerun-submit]", JOB_PAGE)
    ended(page, "done")


def _save_contract(page: Page, name: str) -> tuple[list[str], str]:
    """From a done job's page: its contract with every assertion kept but the turn limit (``at most N
    model turns``), named ``name``, not saved yet; the assertions' text, and the one left out."""
    page.locator("a[data-testid=generate-contract]").click()
    page.wait_for_selector("form[data-testid=contract]")
    assertions = page.locator("li[data-testid=assertion]")
    texts = [(t or "").strip() for t in assertions.all_text_contents()]
    turns = [t for t in texts if TURN_LIMIT.fullmatch(t)]
    assert len(texts) >= 2 and len(turns) == 1, texts
    assertions.filter(has_text=TURN_LIMIT).locator("input[name=keep]").uncheck()
    page.locator("form[data-testid=contract] input[name=name]").fill(name)
    return texts, turns[0]


def _run_all(page: Page, model: str) -> None:
    """On /contracts: Run all on ``model``, to its end (the run-all job's page)."""
    page.locator("form:has([data-testid=run-all]) input[name=model]").fill(model)
    act(page, "[data-testid=run-all]", JOB_PAGE)
    wait_for_job(page)


def _failed_run(page: Page, incident: RefundRun) -> None:
    """From the front page, the failed run's page."""
    row = page.locator(f"[data-testid=run-row][data-run-id='{incident.run_id}']")
    assert row.get_attribute("data-status") == "error"
    row.locator("td").first.locator("a").click()
    page.wait_for_url(f"**/run/{incident.run_id}")
    page.wait_for_selector("[data-testid=span-detail] h2")


def _no_refund(incident: RefundRun) -> None:
    assert not incident.ledger.exists() or incident.ledger.read_text() == "", incident.ledger.read_text()


def test_the_incident_path_clicked_to_a_green_contract_suite(
    browser: Any, ui: Workbench, incident: RefundRun, openai_env: None
) -> None:
    assert "files in blackbox.workbench" in "\n".join(ui.stderr)  # <db stem>.workbench/, beside the database
    page, seen = _page(browser, ui, "/", "[data-testid=run-row]")
    rows = page.locator("[data-testid=run-row]")
    assert rows.count() == 1 and rows.first.get_attribute("data-run-id") == incident.run_id
    assert page.locator("[data-testid=run-row][data-status=error]").count() == 1
    _shot(page, "1-runs", "workbench-1-runs.png")

    # The run's page, opened on the failing span: refund_order, which rejected "12.OO".
    _failed_run(page, incident)
    assert text_of(page, "[data-testid=span-detail] h2") == STUB_TOOL
    selected = page.locator("[data-testid=span-detail]").get_attribute("data-span-id")
    row = page.locator(f"[data-testid=span-row][data-span-id='{selected}']")
    assert row.get_attribute("data-status") == "error"
    form = page.locator("form[data-testid=rerun-form]")
    assert form.locator("select[name=provider]").input_value().startswith("openai-")
    assert form.locator("input[name=token]").get_attribute("type") == "hidden"
    assert form.locator("input[name=token]").input_value()
    stub = form.locator(f"input[name='stub:{STUB_TOOL}']")
    assert stub.input_value() == "" and stub.get_attribute("required") is not None  # to be written
    form.locator("input[name=model]").fill(THOROUGH_MODEL)
    form.locator(f"input[name='stub:{STUB_TOOL}']").fill(STUB_VALUE)
    _shot(page, "2-run", "workbench-2-run.png")

    # The rerun: its job, then its verdict and diff.
    act(page, "[data-testid=rerun-submit]", JOB_PAGE)
    job_url = page.url
    ended(page, "done")
    verdict = page.locator("[data-testid=verdict]")
    assert (verdict.text_content() or "").startswith("failure fixed"), verdict.text_content()
    assert verdict.get_attribute("data-kind") == "failure_fixed"
    assert text_of(page, "[data-testid=diff]")
    assert page.locator("#events li").count() > 0  # its progress lines
    assert page.locator(f"a[href='{job_url.removeprefix(ui.url)}/child']").count() >= 1
    _shot(page, "3-verdict", "workbench-3-verdict.png")

    # A contract from the child, its last assertion left out, saved.
    texts, left_out = _save_contract(page, CONTRACT)
    assert f"tool {STUB_TOOL} called at least 1 time" in texts, texts
    assert page.locator("input[name=keep]:checked").count() == len(texts) - 1
    _shot(page, "4-contract", "workbench-4-contract.png")
    act(page, "[data-testid=save-contract]", "**/contracts")
    saved = page.locator("[data-testid=saved-contract]")
    assert saved.count() == 1 and saved.first.get_attribute("data-name") == CONTRACT

    # Run all: green on the good model.
    _run_all(page, THOROUGH_MODEL)
    ended(page, "done")
    results = page.locator("[data-testid=contract-result]")
    assert results.count() == 1, page.content()
    assert results.first.get_attribute("data-state") == "pass", results.first.text_content()
    assert results.first.get_attribute("data-name") == CONTRACT
    page.locator("nav a[href='/contracts']").click()
    page.wait_for_url("**/contracts")
    last_run = page.locator("[data-testid=contract-result]")
    assert last_run.count() == 1 and last_run.first.get_attribute("data-state") == "pass"
    _shot(page, "5-run-all", "workbench-5-run-all.png")

    _no_refund(incident)
    only_the_workbench(seen, ui)
    page.close()

    # What it saved is a suite the CLI runs as it is.
    contract = ui.contracts / f"{CONTRACT}.contract.json"
    assert contract.is_file() and (ui.contracts / f"{CONTRACT}.json").is_file()
    saved_contract = json.loads(contract.read_text(encoding="utf-8"))
    kinds = [a["kind"] for a in saved_contract["assertions"]]
    assert len(kinds) == len(texts) - 1 and "max_model_turns" not in kinds, (left_out, kinds)
    assert saved_contract["rerun"]["stubs"] == {STUB_TOOL: json.loads(STUB_VALUE)}
    done = run_cli("eval", "run-all", str(ui.contracts), "--model", THOROUGH_MODEL)
    assert done.returncode == 0, done.stdout + done.stderr
    _no_refund(incident)


def test_run_all_red_shows_the_failing_assertion(browser: Any, ui: Workbench, incident: RefundRun) -> None:
    if not (ui.contracts / f"{CONTRACT}.contract.json").is_file():  # run alone: the suite made here
        page, seen = _page(browser, ui, "/", "[data-testid=run-row]")
        _failed_run(page, incident)
        _rerun_thorough(page)
        _save_contract(page, CONTRACT)
        act(page, "[data-testid=save-contract]", "**/contracts")
    else:
        page, seen = _page(browser, ui, "/contracts", "[data-testid=saved-contract]")
    _run_all(page, HASTY_MODEL)
    state = page.locator("[data-testid=job]").get_attribute("data-state")
    results = page.locator("[data-testid=contract-result]")
    assert results.count() == 1, page.content()
    result = results.first
    assert result.get_attribute("data-state") == "fail", (state, result.text_content())
    failing = [(t or "").strip() for t in result.locator("li").all_text_contents()]
    assert any(STUB_TOOL in line for line in failing), failing
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "run-all-red.png"), full_page=False)
    _no_refund(incident)
    only_the_workbench(seen, ui)
    page.close()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_job_whose_provider_is_down(browser: Any, incident: RefundRun, tmp_path: Path) -> None:
    down = f"http://127.0.0.1:{_closed_port()}/v1"
    with ui_process(incident.db, down, "--workdir", str(tmp_path / "work")) as bench:
        page, seen = _page(browser, bench, f"/run/{incident.run_id}", "form[data-testid=rerun-form]")
        form = page.locator("form[data-testid=rerun-form]")
        form.locator("input[name=model]").fill(THOROUGH_MODEL)
        form.locator(f"input[name='stub:{STUB_TOOL}']").fill(STUB_VALUE)
        act(page, "[data-testid=rerun-submit]", JOB_PAGE)
        assert wait_for_job(page) == "failed"
        why = text_of(page, "[data-testid=job-error]")
        assert why, page.content()
        assert re.search(r"model call|connect", why, re.IGNORECASE), why
        body = page.locator("body").text_content() or ""
        assert "Traceback" not in body, body
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "provider-down.png"), full_page=False)
        only_the_workbench(seen, bench)
        page.close()
        assert not any("Traceback" in line or "internal error" in line for line in bench.stderr), bench.stderr
    _no_refund(incident)
