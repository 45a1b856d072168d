"""The workbench's "Edit and continue" over HTTP: a step of a recorded run changed, the run continued
by the built-in agent as a job, and a child edited again (a chain of edits, its lineage shown).

The run is the demo's refund incident (the OpenAI Agents SDK's triage agent hands off to a refund
agent whose ``refund_order`` rejects the sloppy model's "12.OO"; recorded by the processor), the
provider the fake one on 127.0.0.1, every job a real worker process driving the openai SDK. Steps of
the run's cassette: 0 and 6 model inputs, 7 a model output (the call of refund_order), 9 refund_order's
failing result. The browser walk of the same path is tests/integration/test_workbench_fork_browser.py.
"""

from __future__ import annotations

import html
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_llm import SLOW_MODEL, THOROUGH_MODEL, FakeLLMServer
from helpers import RefundRun, record_refund_incident
from workbench_client import Client, only_openai, workbench

from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.model import terminal_outcome
from otel_blackbox._cassette.verify import verify_cassette

FIXED = "refunded 12.00 on order Alpha"


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def refund(tmp_path_factory: pytest.TempPathFactory, llm: FakeLLMServer) -> RefundRun:
    return record_refund_incident(tmp_path_factory.mktemp("refund"), llm.openai_base_url)


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, llm: FakeLLMServer) -> None:
    only_openai(monkeypatch, llm.openai_base_url)


def edit_form(
    client: Client, parent: str, step: int, change: str, value: str, **fields: Any
) -> dict[str, Any]:
    """The editor's form for ``parent``'s step as a person fills it: the change chosen, its field."""
    form = {
        "token": client.token(f"/{parent}/edit/{step}"),
        "parent": parent,
        "step": str(step),
        "change": change,
        f"value:{change}": value,
        "provider": "openai-chat",
        "model": THOROUGH_MODEL,
        "max_cost": "",
    }
    return {**form, **fields}


def unescaped(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def no_refund(refund: RefundRun) -> None:
    assert not refund.ledger.exists() or refund.ledger.read_text() == "", refund.ledger.read_text()


def test_each_step_offers_the_changes_that_fit_it_with_its_content_to_edit(
    tmp_path: Path, refund: RefundRun, env: None
) -> None:
    run = f"run/{refund.run_id}"
    with workbench(refund.db, tmp_path / "wb") as client:
        assert 'data-testid="edit-steps"' in client.get(f"/{run}").body
        steps = client.get(f"/{run}/steps")
        assert steps.status == 200 and f'"editBase": "/{run}/edit"' in steps.body
        assert '"editable": ["model_input", "model_output", "tool_result"]' in steps.body

        def choices(step: int) -> tuple[list[str], str]:
            page = client.get(f"/{run}/edit/{step}")
            assert page.status == 200, page.body
            return re.findall(r'name="change" value="([\w-]+)"', page.body), html.unescape(page.body)

        changes, page = choices(9)  # refund_order's failure: a result or an error, prefilled
        assert changes == ["set", "set-error"]
        assert re.search(r'name="value:set-error"[^>]*>Error running tool', page), page
        changes, page = choices(7)  # the call of refund_order with "12.OO", to correct
        assert changes == ["calls", "answer"]
        calls = re.search(r'name="value:calls"[^>]*>(.*?)</textarea>', page, re.S)
        assert calls and json.loads(calls.group(1)) == [
            {"toolName": "refund_order", "toolInput": {"order_id": "Alpha", "amount": "12.OO"}}
        ]
        changes, page = choices(6)  # a request: its user message, the system prompt, a tool's definition
        assert changes == ["user", "insert-user", "system", "tool"]
        assert re.findall(r'<option value="(\w+)" data-definition', page) == ["refund_order"]
        assert "Refund" in (re.search(r'name="value:system"[^>]*>(.*?)</textarea>', page, re.S) or [""])[0]
        # Not a step, not a step to edit: 404, one line.
        assert client.get(f"/{run}/edit/99").status == 404
        assert "has steps 0 to 12" in unescaped(client.get(f"/{run}/edit/99").body)
        assert client.get(f"/{run}/edit/8").status == 404  # a tool_call: what the model asked is its output's
        assert client.get("/job/20261207-000000-abcdef/child/edit/1").status == 404


def test_a_fixed_tool_result_continued_and_then_the_child_edited_again(
    tmp_path: Path, refund: RefundRun, env: None, llm: FakeLLMServer
) -> None:
    run = f"run/{refund.run_id}"
    with workbench(refund.db, tmp_path / "wb") as client:
        first = client.post("/fork", edit_form(client, run, 9, "set", json.dumps(FIXED)))
        assert first.status == 303 and first.location.startswith("/job/"), first.body
        assert client.wait(first.location)["state"] == "done", client.get(first.location).body
        page = client.get(first.location).body
        assert 'data-testid="verdict" data-kind="failure_fixed"' in page, unescaped(page)
        shown = unescaped(page)
        assert "edit of run" in shown and "at step 9 (tool result of refund_order)" in shown
        assert "edited at step 9: tool result of refund_order" in shown  # the diff names it first
        (job,) = client.server.board.all()
        assert job.kind == "fork" and job.child is not None and job.incident is not None
        parent, child = load_cassette(job.incident), load_cassette(job.child)
        assert verify_cassette(child).passed
        assert [s.hash for s in child.steps[:9]] == [s.hash for s in parent.steps[:9]]
        assert child.edit == {"step": 9, "kind": "tool_result", "description": "tool result of refund_order",
                              "by": "workbench"}  # fmt: skip
        assert child.steps[9].payload["result"] == FIXED and terminal_outcome(child).status == "success"
        # The child's page: each step editable, the edit marked where it is.
        child_page = client.get(f"{first.location}/child").body
        assert f'"editBase": "{first.location}/child/edit"' in child_page
        assert '"edit": {"step": 9' in child_page

        # Edited again: the child's system prompt, continued on the other OpenAI API.
        second_form = edit_form(client, f"{first.location[1:]}/child", 6, "system",
                                "Refund exactly what was paid.", provider="openai-responses")  # fmt: skip
        second = client.post("/fork", second_form)
        assert second.status == 303, second.body
        assert client.wait(second.location)["state"] == "done", client.get(second.location).body
        lineage = re.search(r'<ol data-testid="lineage".*?</ol>', client.get(second.location).body)
        assert lineage, client.get(second.location).body
        assert re.findall(r"<li>(.*?)</li>", re.sub(r"<a [^>]*>|</a>", "", lineage.group(0))) == [
            f"run {refund.run_id}",
            f"job {first.location[5:]}: edited at step 9: tool result of refund_order",
            f"job {second.location[5:]}: edited at step 6: system prompt",
        ]
        later = next(j for j in client.server.board.all() if j.id == second.location[5:])
        assert later.incident == job.child and later.child is not None  # its parent: the first child
        grandchild = load_cassette(later.child)
        assert verify_cassette(grandchild).passed and grandchild.edit and grandchild.edit["by"] == "workbench"
        assert [s.hash for s in grandchild.steps[:6]] == [s.hash for s in child.steps[:6]]
        sent = [body for path, body in llm.requests if path.endswith("/responses")]
        # The change reached the model.
        assert sent and "Refund exactly what was paid." in json.dumps(sent[-1])
    no_refund(refund)


BAD_FORMS = [
    ({"step": "99"}, "the cassette has steps 0 to 12"),
    ({"change": "answer", "value:answer": "Done."}, "changes a model_output step; step 9 is a tool_result"),
    ({"value:set": "{not json"}, "not JSON"),
    ({"change": "rewrite"}, "one of set, set-error, answer"),
    ({"step": "nine"}, "step: a step number"),
    ({"parent": "run/../../etc"}, "run/<id>, trace/<id> or job/<id>/child"),
    ({"provider": "gemini"}, "provider 'gemini' is not available here"),
    ({"max_cost": "lots"}, "cost limit"),
    (
        {"step": "6", "change": "tool", "tool_name": "send_email", "value:tool": '{"description": "x"}'},
        "offers no such tool",
    ),
]


@pytest.mark.parametrize(("fields", "said"), BAD_FORMS, ids=[said[:24] for _, said in BAD_FORMS])
def test_a_bad_edit_is_one_line_and_starts_nothing(
    tmp_path: Path, refund: RefundRun, env: None, llm: FakeLLMServer, fields: dict[str, str], said: str
) -> None:
    workdir = tmp_path / "wb"
    with workbench(refund.db, workdir) as client:
        form = {**edit_form(client, f"run/{refund.run_id}", 9, "set", json.dumps(FIXED)), **fields}
        before = len(llm.requests)
        answer = client.post("/fork", form)
        shown = unescaped(answer.body)
        assert answer.status == 400 and said in shown, (answer.status, shown)
        assert client.server.board.all() == [] and len(llm.requests) == before
        assert not (workdir / "children").exists() or not any((workdir / "children").iterdir())


def test_the_guards_of_every_action_hold_for_an_edit(tmp_path: Path, refund: RefundRun, env: None) -> None:
    run = f"run/{refund.run_id}"
    with workbench(refund.db, tmp_path / "wb") as client:
        form = edit_form(client, run, 9, "set", json.dumps(FIXED))
        assert client.post("/fork", {k: v for k, v in form.items() if k != "token"}).status == 403
        assert client.post("/fork", form, {"Origin": "http://evil.example"}).status == 403
        assert client.server.board.all() == []
    with workbench(refund.db, tmp_path / "ro", read_only=True) as client:
        page = client.get(f"/{run}/edit/9").body
        assert 'data-testid="edit-submit" disabled' in page and "read-only: no edit" in page
        answer = client.post("/fork", edit_form(client, run, 9, "set", json.dumps(FIXED)))
        assert answer.status == 403 and "read-only" in answer.body
        assert client.server.board.all() == []


def test_an_edit_under_way_is_cancelled_and_its_child_kept(
    tmp_path: Path, refund: RefundRun, env: None
) -> None:
    with workbench(refund.db, tmp_path / "wb") as client:
        form = edit_form(client, f"run/{refund.run_id}", 9, "set", json.dumps(FIXED), model=SLOW_MODEL)
        job = client.post("/fork", form).location
        deadline = time.monotonic() + 30  # cancelled once the first (slow) model call is under way
        while not json.loads(client.get(f"/api{job}").body)["lines"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert 'data-testid="cancel"' in client.get(job).body
        assert client.post(f"{job}/cancel", {"token": client.token()}).status == 303
        assert client.wait(job, timeout=20)["state"] == "failed"
        (found,) = client.server.board.all()
        assert found.message == "cancelled" and found.child is not None
        child = load_cassette(found.child)
        assert terminal_outcome(child).failure_reason == "interrupted" and child.edit is not None
