"""``otel-blackbox ui`` as a user starts it (the real CLI, in a process of its own), and what the
browser walks of the workbench share: acting on a form, waiting for a job's end, the page's own
requests only. The in-process server and its HTTP client: workbench_client.py."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Page

KEY = "sk-workbench-not-a-real-key"
JOB_TIMEOUT_MS = 60_000
JOB_ENDED = "[data-testid=job]:not([data-state=running])"
JOB_PAGE = re.compile(r"/job/[\w-]+$")
# Variables the workbench is started without: other providers' (it offers OpenAI alone), the recorder's.
LEFT_OUT = ("ANTHROPIC_", "GEMINI_", "GOOGLE_", "OPENAI_", "OTEL_")
_LISTENING = re.compile(r"otel-blackbox workbench on (http://127\.0\.0\.1:\d+) ")


@dataclass
class Workbench:
    """``otel-blackbox ui`` running in a process of its own, and what it wrote to stderr."""

    url: str
    root: Path  # its files: incidents, children, jobs, contracts
    stderr: list[str] = field(default_factory=list)

    @property
    def contracts(self) -> Path:
        return self.root / "contracts"


def _drain(stream: IO[str], lines: list[str], listening: threading.Event) -> None:
    for line in stream:
        lines.append(line.rstrip("\n"))
        if _LISTENING.search(line):
            listening.set()
    listening.set()  # it ended, or closed stderr, without saying where it listens


@contextlib.contextmanager
def ui_process(db: Path, openai_base_url: str, *extra: str) -> Iterator[Workbench]:
    """The real CLI's ``ui`` on any free port, offering OpenAI's APIs at ``openai_base_url`` alone."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(LEFT_OUT)}
    env |= {"OPENAI_BASE_URL": openai_base_url, "OPENAI_API_KEY": KEY}
    # Run in the database's folder, as a user does: the pages (and the docs' screenshots) name it
    # as given, blackbox.db, not a temporary path.
    argv = [sys.executable, "-m", "otel_blackbox.cli", "--db", db.name, "ui", "--port", "0", *extra]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=db.parent)  # fmt: skip
    assert proc.stderr is not None
    lines: list[str] = []
    listening = threading.Event()
    reader = threading.Thread(target=_drain, args=(proc.stderr, lines, listening), daemon=True)
    reader.start()
    try:
        assert listening.wait(30), "ui said nothing in 30 s"
        found = next((m for m in map(_LISTENING.search, lines) if m), None)
        assert found is not None, "\n".join(lines)
        where = Path(extra[extra.index("--workdir") + 1]) if "--workdir" in extra else None
        yield Workbench(found[1], where or db.parent / f"{db.stem}.workbench", lines)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        reader.join(5)
        proc.stderr.close()


def text_of(page: Page, selector: str) -> str:
    return (page.locator(selector).first.text_content() or "").strip()


def wait_for_job(page: Page) -> str:
    """The job's page once the job has ended (the page reloads itself then): its state."""
    page.wait_for_selector(JOB_ENDED, timeout=JOB_TIMEOUT_MS)
    return page.locator("[data-testid=job]").get_attribute("data-state") or ""


def act(page: Page, button: str, leads_to: str | re.Pattern[str]) -> None:
    """Click a form's submit ``button``: its POST is answered 303, and the browser follows to ``leads_to``."""
    with page.expect_response(lambda r: r.request.method == "POST") as answer:
        page.locator(button).click()
    response = answer.value
    assert response.status == 303, f"POST {response.url} answered {response.status}: {response.text()}"
    page.wait_for_url(leads_to)


def ended(page: Page, expected: str) -> None:
    state = wait_for_job(page)
    why = text_of(page, "[data-testid=job-error]") if state == "failed" else ""
    log = page.locator("#log").text_content() if page.locator("#log").count() else ""
    assert state == expected, f"job {state}: {why}\n{log}"


def only_the_workbench(seen: dict[str, list[str]], bench: Workbench) -> None:
    assert seen["errors"] == [] and seen["dialogs"] == [], seen
    assert seen["requests"] and all(url.startswith(bench.url + "/") for url in seen["requests"]), seen
