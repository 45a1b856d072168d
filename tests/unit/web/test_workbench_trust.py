"""The workbench's small defects of trust, each mended (issue 48, item 7): a stub prefilled with an
answer, never the failing call's arguments; a run all's lines naming what ran; a failure line saying
what had run; a client that leaves mid-request or sits idle; a secret of ``ui``'s environment already
in the database, masked on every page and in every file; the blame page's colour and the diff's
structure.

Over the demo's refund agent (examples/handoff_agent.py) and the fake provider on 127.0.0.1, as
test_workbench.py; every rerun is a real worker process.
"""

from __future__ import annotations

import json
import os
import re
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_llm import THOROUGH_MODEL, FakeLLMServer
from helpers import EXAMPLES, REFUND_QUESTION, REFUND_STUB, RefundRun, record_refund_incident
from workbench_client import Client, only_openai, workbench

from otel_blackbox._web.job_pages import event_lines, job_page
from otel_blackbox._web.jobs import Job, JobBoard, failure_line
from otel_blackbox._web.workspace import Workspace

STUB = REFUND_STUB.split("=", 1)[1]
GOOD_ANSWER = "refunded 12.00 on order Alpha"  # what refund_order returns when it is asked right
RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() sends a reset
NOT_CLOSED = 30.0  # the bound on "closed eventually": far above the idle timeout the tests set


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def refund(tmp_path_factory: pytest.TempPathFactory, llm: FakeLLMServer) -> RefundRun:
    return record_refund_incident(tmp_path_factory.mktemp("refund"), llm.openai_base_url)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory, llm: FakeLLMServer) -> tuple[Path, str, str]:
    """One database, two runs of the refund agent: a good one (``thorough``: refund_order answered)
    and the incident (``sloppy``: refund_order rejected "12.OO"). The database, the good run's id and
    the incident's."""
    folder = tmp_path_factory.mktemp("two-runs")
    db = folder / "blackbox.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    for model, code in ((THOROUGH_MODEL, 0), ("sloppy", 1)):
        argv = [sys.executable, str(EXAMPLES / "handoff_agent.py"), "--question", REFUND_QUESTION,
                "--ledger", str(folder / "ledger.txt"), "--base-url", llm.openai_base_url, "--db", str(db),
                "--model", model, "--require-refund"]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == code, done.stderr
    with workbench(db, folder / "unused") as client:
        rows = re.findall(r'data-status="(\w+)" data-run-id="(\w+)"', client.get("/").body)
    status = {state: run_id for state, run_id in rows}
    assert sorted(status) == ["error", "ok"], rows
    return db, status["ok"], status["error"]


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, llm: FakeLLMServer) -> None:
    """openai reachable (the fake provider), no other provider."""
    only_openai(monkeypatch, llm.openai_base_url)


def _stub_input(page: str) -> str:
    found = re.search(r'<input type="text" name="stub:refund_order"[^>]*>', page)
    assert found, page
    return found.group(0)


def _form(client: Client, run_id: str, **fields: str) -> dict[str, str]:
    form = {"token": client.token(f"/run/{run_id}"), "target_kind": "run", "target_id": run_id,
            "provider": "openai-chat", "model": THOROUGH_MODEL, "max_cost": ""}  # fmt: skip
    return {**form, **fields}


# -- 1. the stub: an answer, never the arguments -------------------------------------------------------


def test_a_stub_is_prefilled_with_a_good_answer_recorded_in_another_run(
    tmp_path: Path, two_runs: tuple[Path, str, str], env: None
) -> None:
    db, good_run, incident = two_runs
    with workbench(db, tmp_path / "wb") as client:
        page = client.get(f"/run/{incident}").body
        field = _stub_input(page)
        value = re.search(r'value="([^"]*)"', field)
        assert value and json.loads(value.group(1).replace("&quot;", '"')) == GOOD_ANSWER, field
        assert 'data-stub="known"' in field and "required" not in field
        assert "12.OO" not in field  # the failing call's arguments are not the value
        # The form as the page filled it, the model changed: the failure is fixed.
        prefilled = json.dumps(GOOD_ANSWER)
        job = client.post("/rerun", _form(client, incident, **{"stub:refund_order": prefilled}))
        assert job.status == 303, job.body
        assert client.wait(job.location, timeout=120)["state"] == "done"
        shown = client.get(job.location).body
        assert 'data-kind="failure_fixed"' in shown, shown
        # The incident completed with a tool error: its row says so, never a bare "success".
        assert "<th>incident</th><td>success (tool error in refund_order)" in shown, shown
        # The good run did not fail: no form, nothing prefilled.
        assert 'data-testid="rerun-form"' not in client.get(f"/run/{good_run}").body


def test_no_known_answer_leaves_the_stub_to_be_written_and_the_arguments_are_refused(
    tmp_path: Path, refund: RefundRun, env: None
) -> None:
    workdir = tmp_path / "wb"
    with workbench(refund.db, workdir) as client:
        field = _stub_input(client.get(f"/run/{refund.run_id}").body)
        assert 'value=""' in field and " required " in field and 'data-stub="write"' in field, field
        assert 'placeholder="write the answer the tool should have given"' in field
        # The failing call's arguments sent as the stub (what the page used to prefill): refused.
        arguments = json.dumps({"order_id": "Alpha", "amount": "12.OO"})
        answer = client.post("/rerun", _form(client, refund.run_id, **{"stub:refund_order": arguments}))
        assert answer.status == 400, answer.body
        assert "that is what the failing call asked, not an answer" in answer.body
        assert client.server.board.all() == [] and not workdir.exists()


# -- 2. run all names what ran; 3. a failure line says what had run -------------------------------------


def test_run_all_names_each_contracts_own_provider_and_model(
    tmp_path: Path, refund: RefundRun, env: None
) -> None:
    with workbench(refund.db, tmp_path / "wb") as client:
        job = client.post("/rerun", _form(client, refund.run_id, **{"stub:refund_order": STUB})).location
        assert client.wait(job, timeout=120)["state"] == "done"
        saved = client.post("/contracts/save", {"token": client.token(), "job": job.rsplit("/", 1)[1],
                                                "name": "refund", "keep": ["0"]})  # fmt: skip
        assert saved.status == 303, saved.body
        run_all = client.post("/contracts/run-all", {"token": client.token(), "provider": "", "model": ""})
        assert run_all.status == 303, run_all.body
        progress = client.wait(run_all.location, timeout=120)
        assert progress["state"] == "done", progress
        title = re.search(r"<h1>([^<]*)</h1>", client.get(run_all.location).body)
        assert title, run_all.location
        # Not the incident's model (sloppy): each contract's own, and the entry's line says which.
        assert "each contract’s own" in title.group(1) and "sloppy" not in title.group(1), title.group(1)
        assert "the incident" not in title.group(1)
        line = next(x for x in progress["lines"] if x.startswith("contract refund: rerunning"))
        assert line == f"contract refund: rerunning its incident on openai-chat, model {THOROUGH_MODEL}", line


def test_a_failure_after_model_calls_says_so_not_could_not_start(tmp_path: Path) -> None:
    calls: list[dict[str, object]] = [
        {"event": "model_call", "call": 1, "model": "m"},
        {"event": "model_output", "call": 1, "tools": ["t"]},
        {"event": "model_call", "call": 2, "model": "m"},
    ]
    error = {"event": "error", "message": "--base-url http://127.0.0.1:9: nothing answers"}
    assert event_lines([error])[-1] == "could not start: --base-url http://127.0.0.1:9: nothing answers"
    assert event_lines([*calls, error])[-1] == (
        "failed after 2 model calls: --base-url http://127.0.0.1:9: nothing answers"
    )
    branches = [{"event": "branch", "line": "[blackbox] branch from step 3"}] * 3
    assert failure_line([*branches, *calls], "x") == "failed after 2 model calls, 3 branches: x"
    # The job's own line (its page's job-error and its record) says the same.
    board = JobBoard(Workspace(tmp_path))
    job = Job("20261207-000000-abcdef", "rerun", {"model": "m"}, events=[*calls, error])
    board._conclude(job, 2, error)
    assert job.state == "failed"
    assert job.message == "failed after 2 model calls: --base-url http://127.0.0.1:9: nothing answers"
    page = job_page(job, None, token="t", read_only=False, child_completed=False)
    assert "could not start" not in page and page.count("failed after 2 model calls") == 2


# -- 4. a client that leaves, a connection that idles ----------------------------------------------------


def _connect(client: Client) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", client.port), timeout=NOT_CLOSED)
    sock.settimeout(NOT_CLOSED)
    return sock


def test_a_client_closing_mid_post_leaves_no_traceback(
    tmp_path: Path, refund: RefundRun, env: None, capfd: pytest.CaptureFixture[str]
) -> None:
    workdir = tmp_path / "wb"
    with workbench(refund.db, workdir) as client:
        form = "&".join(f"{k}={v}" for k, v in _form(client, refund.run_id).items()).encode()
        head = (f"POST /rerun HTTP/1.1\r\nHost: 127.0.0.1:{client.port}\r\n"
                "Content-Type: application/x-www-form-urlencoded\r\n"
                f"Content-Length: {len(form) + 500}\r\n\r\n").encode()  # fmt: skip
        for cut in (0, len(form) // 2, len(form)):  # closed before, in, after the whole form's bytes
            with _connect(client) as sock:
                sock.sendall(head + form[:cut])
                sock.shutdown(socket.SHUT_WR)  # half-closed: its form never completes
                assert sock.recv(1 << 16) == b""  # closed by the workbench, with nothing said
        with _connect(client) as sock:  # reset outright, mid-form
            sock.sendall(head + form[:10])
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, RESET)
        # The refusal of a closed client's request is written to nobody: still no traceback.
        with _connect(client) as sock:
            sock.sendall(b"POST /rerun HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 3\r\n\r\nabc")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, RESET)
        assert client.get("/").status == 200  # still answering
        # Nothing was started from a part of a form.
        assert client.server.board.all() == [] and not workdir.exists()
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err and "BrokenPipe" not in captured.err, captured.err
    assert "ConnectionReset" not in captured.err, captured.err


def test_an_idle_connection_is_closed(tmp_path: Path, refund: RefundRun, env: None) -> None:
    with workbench(refund.db, tmp_path / "wb", idle_timeout=0.5) as client:
        started = time.monotonic()
        with _connect(client) as idle:  # sends nothing at all
            assert idle.recv(1) == b""  # closed by the workbench (else the recv times out after 30 s)
        with _connect(client) as slow:  # a request's headers begun, never finished
            slow.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            assert slow.recv(1) == b""
        with _connect(client) as body:  # a form promised, its body never sent: told so, then closed
            body.sendall(b"POST /rerun HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n\r\nab")
            said = b""
            while chunk := body.recv(1 << 16):
                said += chunk
            assert said.startswith(b"HTTP/1.0 408"), said[:200]
        assert time.monotonic() - started < 3 * NOT_CLOSED
        assert client.get("/").status == 200  # the workbench still answers others


# -- 5. a secret of ui's environment already in the database ---------------------------------------------


def test_a_secret_already_in_the_database_is_masked_on_every_page_and_file(
    tmp_path: Path, refund: RefundRun, env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The incident's question holds it; the workbench's environment has it as a key's value.
    secret = "refund 12.00 on it"
    assert secret in REFUND_QUESTION
    monkeypatch.setenv("ACME_API_KEY", secret)
    workdir = tmp_path / "wb"
    with workbench(refund.db, workdir) as client:
        pages = {"/": client.get("/"), "/api/traces": client.get("/api/traces")}
        pages["/run"] = client.get(f"/run/{refund.run_id}")
        trace_id = re.search(r'"traceId": "(\w{32})"', pages["/run"].body)
        assert trace_id, "no trace id in the run's page"
        pages["/trace"] = client.get(f"/trace/{trace_id.group(1)}")
        assert "[REDACTED:env]" in pages["/run"].body and "[REDACTED:env]" in pages["/trace"].body
        job = client.post("/rerun", _form(client, refund.run_id, **{"stub:refund_order": STUB})).location
        client.wait(job, timeout=120)
        for path in (job, f"/api{job}", f"{job}/incident", f"{job}/child"):
            pages[path] = client.get(path)
        assert "[REDACTED:env]" in pages[f"{job}/incident"].body
    for path, answer in pages.items():
        assert answer.status == 200, (path, answer.status)
        assert secret not in answer.body, path
    files = sorted(workdir.rglob("*.json"))  # the incident, the child, the job's spec and record
    assert any(f.parent.name == "incidents" for f in files) and any(f.parent.name == "jobs" for f in files)
    for file in files:
        assert secret not in file.read_text(encoding="utf-8"), file


# -- 6. blame's decisive step in the failure's colour; the diff with structure ---------------------------


def _blame_job(decisive: dict[str, object] | None) -> Job:
    report: dict[str, object] = {"decisive": decisive, "reason": "every branch failed", "branches": [],
                                 "decisionPoints": 3, "branchCount": 0, "modelCalls": 0}  # fmt: skip
    return Job("20261207-000000-b1a3e0", "blame", {"samples": 2}, state="done",
               events=[{"event": "blame", "report": report}])  # fmt: skip


def test_blames_decisive_step_is_shown_as_the_failure_it_is() -> None:
    decisive = {"index": 7, "type": "model_output", "description": "calls refund_order(12.OO)"}
    page = job_page(_blame_job(decisive), None, token="t", read_only=False, child_completed=False)
    shown = re.search(r'<p class="([^"]*)" data-testid="blame-decisive"', page)
    assert shown and shown.group(1) == "verdict bad", page
    none = job_page(_blame_job(None), None, token="t", read_only=False, child_completed=False)
    assert '<p class="verdict other" data-testid="blame-decisive"' in none


def test_the_diff_of_a_rerun_is_in_sections_with_its_changes_marked(
    tmp_path: Path, refund: RefundRun, env: None
) -> None:
    with workbench(refund.db, tmp_path / "wb") as client:
        job = client.post("/rerun", _form(client, refund.run_id, **{"stub:refund_order": STUB})).location
        assert client.wait(job, timeout=120)["state"] == "done"
        page = client.get(job).body
    diff = re.search(r'<div class="diff" data-testid="diff">(.*?)</div></section></div>', page, re.S)
    assert diff, page
    block = diff.group(0)
    assert re.findall(r"<h3>([^<]*)</h3>", block) == ["The two runs", "First divergence", "Outcome"]
    first = re.findall(r'<div class="dl first">.*?</div>', block)
    assert first and "first divergence" in first[0], block
    assert '<div class="dl del">' in block and '<div class="dl add">' in block
    assert re.search(r'<div class="dl verdict-line">.*outcome:.*failure fixed', block), block
    # The lines are the command's, whole: each label and value as `diff` prints it.
    text = re.sub(r"<[^>]+>", "", block.replace("</div>", "\n"))
    assert "shared prefix:" in text and "parent step" in text and "child step" in text
