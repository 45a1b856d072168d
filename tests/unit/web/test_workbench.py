"""The workbench's actions over HTTP: who may act, bad input, jobs that fail or are cancelled.

The incident is the demo's refund run (the OpenAI Agents SDK, recorded by the processor) and the
provider the fake one on 127.0.0.1; every rerun is a real worker process driving the openai SDK.
The browser walk of the same path is tests/integration/test_workbench_browser.py.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_llm import FAIL_MODEL, SLOW_MODEL, THOROUGH_MODEL, FakeLLMServer
from helpers import EXAMPLES, REFUND_QUESTION, REFUND_STUB, RefundRun, record_refund_incident
from workbench_client import Client, only_openai, workbench

from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.model import terminal_outcome

STUB = REFUND_STUB.split("=", 1)[1]
ACTIONS = ["/rerun", "/fork", "/contracts/save", "/contracts/run-all", "/job/20261207-000000-abcdef/cancel"]


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def refund(tmp_path_factory: pytest.TempPathFactory, llm: FakeLLMServer) -> RefundRun:
    return record_refund_incident(tmp_path_factory.mktemp("refund"), llm.openai_base_url)


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, llm: FakeLLMServer) -> None:
    """openai reachable (the fake provider), no other provider: what the form offers."""
    only_openai(monkeypatch, llm.openai_base_url)


def rerun_form(client: Client, refund: RefundRun, **fields: Any) -> dict[str, Any]:
    form = {
        "token": client.token(f"/run/{refund.run_id}"),
        "target_kind": "run",
        "target_id": refund.run_id,
        "provider": "openai-chat",
        "model": THOROUGH_MODEL,
        "max_cost": "",
        "stub:refund_order": STUB,
    }
    return {**form, **fields}


def nothing_started(client: Client, workdir: Path) -> None:
    assert client.server.board.all() == []
    assert not workdir.exists() or not any(p.is_file() for p in workdir.rglob("*")), list(workdir.rglob("*"))


def test_the_rerun_form_offers_what_the_incident_needs(tmp_path: Path, refund: RefundRun, env: None) -> None:
    with workbench(refund.db, tmp_path / "wb") as client:
        front = client.get("/")
        # A browser sends a form's Origin only when the page's referrer policy lets it (no-referrer:
        # "Origin: null", which the guard refuses): the workbench's own forms must be taken.
        assert front.status == 200 and front.headers["referrer-policy"] == "same-origin"
        assert re.findall(r'data-testid="run-row" data-status="(\w+)" data-run-id="(\w+)"', front.body) == [
            ("error", refund.run_id)
        ]
        page = client.get(f"/run/{refund.run_id[:8]}").body  # a prefix is enough
        assert 'data-testid="rerun-form"' in page and 'data-testid="rerun-submit"' in page
        # Only the provider this process can reach; the incident's model; a stub for the tool whose
        # only recorded result is the error: no good answer recorded, so empty and required, the
        # failing call's arguments a hint (never the value: they are no answer).
        assert re.findall(r'<option value="([\w-]+)"', page) == ["openai-chat", "openai-responses"]
        assert 'name="model" value="sloppy"' in page
        assert re.findall(r'name="(stub:\w+)"', page) == ["stub:refund_order"]
        assert 'formaction="/blame" data-testid="blame-submit"' in page  # the same fields, to blame
        stub = re.search(r'<input type="text" name="stub:refund_order"[^>]*>', page)
        assert stub and 'value=""' in stub.group(0) and " required " in stub.group(0), stub
        assert 'placeholder="write the answer the tool should have given"' in stub.group(0)
        asked = '{"order_id": "Alpha", "amount": "12.OO"}'
        assert f"the failing call asked: {asked}" in page.replace("&quot;", '"')
        assert '"selectFailure": true' in page  # the report opens on the failing span


def test_every_action_needs_the_launch_token_from_this_origin(
    tmp_path: Path, refund: RefundRun, env: None
) -> None:
    workdir = tmp_path / "wb"
    with workbench(refund.db, workdir) as client:
        form = rerun_form(client, refund)
        for path in ACTIONS:
            refused = {
                "no token": client.post(path, {k: v for k, v in form.items() if k != "token"}),
                "a wrong token": client.post(path, {**form, "token": "x" * 43}),
                "another origin": client.post(path, form, {"Origin": "http://evil.example"}),
                "another site": client.post(path, form, {"Sec-Fetch-Site": "cross-site"}),
                "a null origin": client.post(path, form, {"Origin": "null"}),
            }
            for why, answer in refused.items():
                assert answer.status == 403, (path, why, answer.status, answer.body)
            nothing_started(client, workdir)
        # Other methods are not actions; a GET changes nothing.
        assert client.request("PUT", "/rerun", b"").status == 405
        assert client.get("/rerun").status == 404
        # The same form from the page itself is taken: the refusals above were the checks'.
        taken = client.post("/rerun", form)
        assert taken.status == 303 and taken.location.startswith("/job/"), taken.body
        assert client.wait(taken.location)["state"] == "done"


def test_read_only_shows_everything_and_refuses_every_action(
    tmp_path: Path, refund: RefundRun, env: None
) -> None:
    workdir = tmp_path / "wb"
    with workbench(refund.db, workdir, read_only=True) as client:
        page = client.get(f"/run/{refund.run_id}")
        assert page.status == 200 and 'data-testid="rerun-submit" disabled' in page.body
        form = rerun_form(client, refund)
        for path in ACTIONS:
            answer = client.post(path, form)
            assert answer.status == 403 and "read-only" in answer.body, (path, answer.body)
        nothing_started(client, workdir)


def test_beyond_loopback_every_request_needs_the_access_token(
    tmp_path: Path, refund: RefundRun, env: None
) -> None:
    with workbench(refund.db, tmp_path / "wb", host="127.0.0.2", token="s3cret-access") as client:
        assert client.get("/").status == 403
        assert client.get("/", {"Authorization": "Bearer wrong"}).status == 403
        assert client.get("/", {"Authorization": "Bearer s3cret-access"}).status == 200
        opened = client.get("/?token=s3cret-access")
        assert opened.status == 303 and opened.location == "/"
        cookie = opened.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        assert client.get("/contracts", {"Cookie": cookie.split(";")[0]}).status == 200
        assert client.get("/?token=wrong").status == 403
        # Acting needs both: the access token and the launch token.
        page = client.get(f"/run/{refund.run_id}", {"Cookie": cookie.split(";")[0]}).body
        token = re.search(r'name="token" value="([^"]+)"', page)
        assert token
        form = {**rerun_form_fields(refund), "token": token.group(1)}
        assert client.post("/rerun", form).status == 403
        taken = client.post("/rerun", form, {"Cookie": cookie.split(";")[0]})
        assert taken.status == 303


def rerun_form_fields(refund: RefundRun) -> dict[str, str]:
    return {"target_kind": "run", "target_id": refund.run_id, "provider": "openai-chat",
            "model": THOROUGH_MODEL, "stub:refund_order": STUB}  # fmt: skip


def test_a_page_asked_by_another_host_name_is_refused(tmp_path: Path, refund: RefundRun) -> None:
    with workbench(refund.db, tmp_path / "wb") as client:
        assert client.get("/", {"Host": "evil.example:8765"}).status == 403
        assert client.get("/", {"Host": f"localhost:{client.port}"}).status == 200


BAD_RERUNS = [
    ({"target_id": "ffffffffffffffff"}, 404, "no run"),
    ({"target_kind": "session"}, 400, "target_kind: run or trace"),
    ({"stub:refund_order": "refunded 12.00"}, 400, "stub refund_order: 'refunded 12.00' is not JSON"),
    ({"stub:send_email": '"sent"'}, 400, "stub send_email: the incident never offered a tool of that name"),
    ({"max_cost": "-1"}, 400, "cost limit: a budget must be a positive amount"),
    ({"max_cost": "lots"}, 400, "cost limit: not an amount in US dollars"),
    ({"max_cost": "0.50"}, 400, "cost limit: "),  # the fake model has no price: refused before any call
    ({"provider": "anthropic"}, 400, "provider 'anthropic' is not available here"),
    ({"provider": ""}, 400, "provider '(none)' is not available here"),
    ({"model": "gpt 4; rm -rf"}, 400, "not a model name"),
    ({"agent": "program"}, 400, "agent 'program': the built-in agent only (start ui with --program CMD"),
]


@pytest.mark.parametrize(("change", "status", "message"), BAD_RERUNS)
def test_a_bad_rerun_form_is_one_message_and_starts_nothing(
    tmp_path: Path, refund: RefundRun, env: None, change: dict[str, str], status: int, message: str
) -> None:
    workdir = tmp_path / "wb"
    with workbench(refund.db, workdir) as client:
        answer = client.post("/rerun", rerun_form(client, refund, **change))
        assert answer.status == status, answer.body
        text = re.sub(r"<[^>]+>", " ", answer.body).replace("&#x27;", "'")
        assert message in text and "Traceback" not in text, text
        nothing_started(client, workdir)


def test_bad_requests_of_every_other_kind(tmp_path: Path, refund: RefundRun, env: None) -> None:
    workdir = tmp_path / "wb"
    with workbench(refund.db, workdir) as client:
        token = client.token()
        assert client.get("/run/ffffffffffff").status == 404
        assert client.get("/job/nope").status == 404
        assert client.get("/api/job/nope").status == 404
        assert client.post("/contracts/save", {"token": token, "job": "nope"}).status == 404
        nothing = client.post("/contracts/run-all", {"token": token, "provider": "openai-chat"})
        assert nothing.status == 400 and "no such folder" in nothing.body
        # Refused on its Content-Length, before its body is read (sent short: no broken pipe).
        huge_form = {"Content-Type": "application/x-www-form-urlencoded", "Content-Length": str(2 << 20)}
        huge = client.request("POST", "/rerun", b"x", huge_form)
        assert huge.status == 413
        wrong = client.request("POST", "/rerun", b'{"token": 1}', {"Content-Type": "application/json"})
        assert wrong.status == 400 and "urlencoded" in wrong.body
        nothing_started(client, workdir)


def test_saving_a_contract_checks_what_is_kept(tmp_path: Path, refund: RefundRun, env: None) -> None:
    with workbench(refund.db, tmp_path / "wb") as client:
        job = client.post("/rerun", rerun_form(client, refund)).location
        assert client.wait(job)["state"] == "done"
        page = client.get(f"{job}/contract").body
        count = page.count('data-testid="assertion"')
        assert count >= 5
        token, job_id = client.token(), job.rsplit("/", 1)[1]
        bad: list[tuple[dict[str, Any], str]] = [
            ({"keep": []}, "keep at least one assertion"),
            ({"keep": ["0", str(count)]}, f"this contract has {count} assertions"),
            ({"keep": ["x"]}, "assertion numbers only"),
            ({"keep": ["0"], "name": "../escape"}, "../escape"),
        ]
        for fields, message in bad:
            answer = client.post(
                "/contracts/save", {"token": token, "job": job_id, "name": "refund", **fields}
            )
            assert answer.status == 400 and message in answer.body.replace("&#x27;", "'"), answer.body
        saved = client.post(
            "/contracts/save", {"token": token, "job": job_id, "name": "refund", "keep": ["0", "1"]}
        )
        assert saved.status == 303 and saved.location == "/contracts"
        contract = json.loads((tmp_path / "wb" / "contracts" / "refund.contract.json").read_text())
        assert len(contract["assertions"]) == 2
        assert contract["rerun"] == {"stubs": {"refund_order": "refunded 12.00 on order Alpha"},
                                     "model": THOROUGH_MODEL, "provider": "openai-chat"}  # fmt: skip
        again = client.post(
            "/contracts/save", {"token": token, "job": job_id, "name": "refund", "keep": ["0"]}
        )
        assert again.status == 400 and "refund" in again.body  # never overwritten
        # The run-all form, on the suite that now holds one contract: each bad field one 400, no job.
        bad_runs: list[tuple[dict[str, str], str]] = [
            ({"provider": "anthropic"}, "provider 'anthropic' is not available here"),
            ({"provider": "openai-chat", "max_cost": "-1"}, "cost limit: a budget must be a positive amount"),
            ({"model": "not a model!"}, "not a model name"),
        ]
        for run_fields, message in bad_runs:
            answer = client.post("/contracts/run-all", {"token": token, **run_fields})
            assert answer.status == 400 and message in answer.body.replace("&#x27;", "'"), answer.body
        assert [j.kind for j in client.server.board.all()] == ["rerun"]
        # A file in the suite that is not a contract: the page says so and still answers.
        (tmp_path / "wb" / "contracts" / "broken.contract.json").write_text("{not json")
        suite = client.get("/contracts")
        assert suite.status == 200 and 'data-testid="problem"' in suite.body
        assert "broken.contract.json" in suite.body


def test_a_model_the_provider_refuses_fails_the_job_with_a_readable_record(
    tmp_path: Path, refund: RefundRun, env: None
) -> None:
    with workbench(refund.db, tmp_path / "wb") as client:
        job = client.post("/rerun", rerun_form(client, refund, model=FAIL_MODEL)).location
        progress = client.wait(job)
        assert progress["state"] == "failed", progress
        page = client.get(job).body
        error = re.search(r'data-testid="job-error">([^<]*)<', page)
        assert error and "model call 1 failed" in error.group(1) and "injected failure" in error.group(1)
        assert "Traceback" not in page
        record = json.loads((tmp_path / "wb" / "jobs" / f"{job.rsplit('/', 1)[1]}.json").read_text())
        assert record["state"] == "failed" and "model call 1 failed" in record["message"]


def test_a_job_whose_provider_is_down(
    tmp_path: Path, refund: RefundRun, env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    with workbench(refund.db, tmp_path / "wb") as client:
        job = client.post("/rerun", rerun_form(client, refund)).location
        assert client.wait(job)["state"] == "failed"
        message = re.search(r'data-testid="job-error">([^<]*)<', client.get(job).body)
        assert message and "Connection" in message.group(1), message


def test_a_running_job_is_cancelled_and_its_child_kept(tmp_path: Path, refund: RefundRun, env: None) -> None:
    with workbench(refund.db, tmp_path / "wb") as client:
        job = client.post("/rerun", rerun_form(client, refund, model=SLOW_MODEL)).location
        deadline = time.monotonic() + 30  # cancelled once the first (slow) model call is under way
        while not json.loads(client.get(f"/api{job}").body)["lines"] and time.monotonic() < deadline:
            time.sleep(0.05)
        running = client.get(job).body
        assert 'data-state="running"' in running and 'data-testid="cancel"' in running
        assert client.post(f"{job}/cancel", {"token": client.token()}).status == 303
        progress = client.wait(job, timeout=20)
        assert progress["state"] == "failed", progress
        (found,) = client.server.board.all()
        assert found.message == "cancelled" and found.child is not None
        assert terminal_outcome(load_cassette(found.child)).failure_reason == "interrupted"


def test_the_program_given_to_ui_reruns_with_its_tools_answered_from_the_recording(
    tmp_path: Path, refund: RefundRun, env: None, llm: FakeLLMServer
) -> None:
    ledger = tmp_path / "ledger.txt"
    program = [sys.executable, str(EXAMPLES / "handoff_agent.py"), "--question", REFUND_QUESTION,
               "--ledger", str(ledger), "--base-url", llm.openai_base_url]  # fmt: skip
    with workbench(refund.db, tmp_path / "wb", program=program) as client:
        page = client.get(f"/run/{refund.run_id}").body
        assert 'value="program">' in page and "handoff_agent.py" in page
        job = client.post("/rerun", rerun_form(client, refund, agent="program")).location
        progress = client.wait(job, timeout=120)
        assert progress["state"] == "done", client.get(job).body
        (done,) = client.server.board.all()
        assert done.asked["program"] and done.child is not None
        child = load_cassette(done.child)
        assert child.parent_id is not None and child.steps_of("model_output")
        page = client.get(job).body
        assert 'data-testid="verdict"' in page and 'data-testid="generate-contract"' in page
        # Its contract keeps the model; the provider was the program's own, so run all takes the incident's.
        saved = client.post(
            "/contracts/save", {"token": client.token(), "job": done.id, "name": "program", "keep": ["0"]}
        )
        assert saved.status == 303, saved.body
        contract = json.loads((tmp_path / "wb" / "contracts" / "program.contract.json").read_text())
        assert contract["rerun"]["model"] == THOROUGH_MODEL and "provider" not in contract["rerun"]
    # The program ran with the model live and its tools answered from the incident: no refund.
    assert not ledger.exists() or ledger.read_text() == ""


def test_blame_from_the_run_page_names_the_refund_decision(
    tmp_path: Path, refund: RefundRun, env: None
) -> None:
    with workbench(refund.db, tmp_path / "wb") as client:
        page = client.get(f"/run/{refund.run_id}").body
        assert 'data-testid="blame-form"' in page and 'name="samples"' in page
        form = {**rerun_form(client, refund), "samples": "1"}
        job = client.post("/blame", form)
        assert job.status == 303, job.body
        assert client.wait(job.location, timeout=120)["state"] == "done"
        shown = client.get(job.location).body
        incident = load_cassette(next((tmp_path / "wb" / "incidents").glob("*.json")))
        refund_call = next(
            s for s in incident.steps if s.type == "model_output" and "12.OO" in json.dumps(s.payload)
        )
        assert f'data-testid="blame-decisive" data-index="{refund_call.index}"' in shown
        assert shown.count('data-testid="blame-point"') >= 3
        bad = client.post("/blame", {**form, "samples": "99"})
        assert bad.status == 400 and "samples: a whole number from 1 to 10" in bad.body


def _edit_by_hand(path: Path) -> None:
    """Step 0's payload changed in the file, its hash kept: what `verify` calls a broken chain."""
    data = json.loads(path.read_text())
    data["steps"][0]["payload"]["edited"] = "by hand"
    path.write_text(json.dumps(data))


def test_a_page_on_a_hand_edited_cassette_is_the_refusal(
    tmp_path: Path, refund: RefundRun, env: None
) -> None:
    with workbench(refund.db, tmp_path / "wb") as client:
        job = client.post("/rerun", rerun_form(client, refund)).location
        assert client.wait(job)["state"] == "done"
        record = client.server.board.get(job.rsplit("/", 1)[1])
        assert record is not None and record.incident is not None and record.child is not None
        assert client.get(job).status == 200 and client.get(f"{job}/contract").status == 200
        _edit_by_hand(record.incident)
        why = f"{record.incident} fails verify (hash_chain) at step 0: hash does not match its content"
        for page in (job, f"{job}/incident"):  # the verdict diffs the incident; the incident's own page
            answer = client.get(page)
            assert answer.status == 400 and why in answer.body.replace("&#x27;", "'"), (page, answer.body)
        assert client.get(f"{job}/child").status == 200  # the child is sound
        _edit_by_hand(record.child)
        answer = client.get(f"{job}/contract")
        assert answer.status == 400 and f"{record.child} fails verify (hash_chain) at step 0" in answer.body
