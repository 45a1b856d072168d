"""Shared fixtures: a temporary database, a provider with BlackboxSpanProcessor, the fake LLM server."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import CHROMIUM, EXAMPLES, FIGURES, PROGRAMS, STRESS, TESTS, Recorder

# Test modules are named by their file name alone (pytest's default import mode, so every name is
# unique), and a few reuse another's cases from another folder (test_readme_matrix reads the feature
# tests' cells): every test folder is on sys.path, as the examples and the programs are.
TEST_FOLDERS = sorted({str(path.parent) for path in TESTS.rglob("test_*.py")})
sys.path[:0] = [str(EXAMPLES), str(PROGRAMS), *TEST_FOLDERS]

from fake_llm import FakeLLMServer  # noqa: E402 (examples/ is on sys.path from here)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "blackbox.db"


@pytest.fixture
def recorder(db_path: Path) -> Iterator[Recorder]:
    rec = Recorder(db_path)
    yield rec
    rec.provider.shutdown()


@pytest.fixture
def make_recorder(db_path: Path) -> Iterator[Callable[..., Recorder]]:
    made: list[Recorder] = []

    def make(**config: Any) -> Recorder:
        rec = Recorder(config.pop("path", db_path), **config)
        made.append(rec)
        return rec

    yield make
    for rec in made:
        rec.provider.shutdown()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium per module (Playwright driving Debian's package)."""
    from playwright.sync_api import sync_playwright

    args = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run"]  # fmt: skip
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=args)
        yield instance
        instance.close()


@pytest.fixture(scope="session")
def fake_llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Under pytest-xdist, a worker hands its figures to the controller, which prints them all."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["blackbox_figures"] = list(FIGURES)


def pytest_testnodedown(node: Any, error: Any) -> None:
    FIGURES.extend(tuple(figure) for figure in getattr(node, "workeroutput", {}).get("blackbox_figures", []))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The reliability tests' figures, one line each (`make stress` copies them into docs/reliability.md)."""
    if not FIGURES:
        return
    terminalreporter.section("blackbox figures" + (" (stress)" if STRESS else ""))
    for test, name, value in FIGURES:
        terminalreporter.write_line(f"{test}: {name} = {value}")
