"""The analysis side (reading databases and cassettes) never reaches the execution side.

Walks the import graph of the package statically (every ``import`` statement, including ones
inside functions) from each analysis module, and fails if it reaches the HTTP hook, a provider
translation, the session, an HTTP client, an LLM SDK or a network module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from helpers import ROOT

PACKAGE = ROOT / "src" / "otel_blackbox"
ANALYSIS_MODULES = [
    "otel_blackbox.cassette.verify",
    "otel_blackbox.cassette.diff",
    "otel_blackbox.cassette.assertions",
    "otel_blackbox.cassette.evals",
    "otel_blackbox.render.cassette_text",
    "otel_blackbox.render.text",
    "otel_blackbox.store.queries",
    "otel_blackbox.cli.cassettes",
    "otel_blackbox.cli.evals",
    "otel_blackbox.cli.traces",
]
FORBIDDEN_PROJECT = (
    "otel_blackbox.http",
    "otel_blackbox.providers",
    "otel_blackbox.session",
    "otel_blackbox.launch",
)
FORBIDDEN_EXTERNAL = {
    "httpx", "httpx2", "httpcore", "httpcore2", "openai", "anthropic", "requests", "urllib3", "aiohttp",
    "socket", "ssl", "http", "urllib.request", "asyncio",
}  # fmt: skip


def _module_file(name: str) -> Path | None:
    if name == "otel_blackbox":
        return PACKAGE / "__init__.py"
    relative = Path(*name.split(".")[1:])
    for candidate in (PACKAGE / relative.with_suffix(".py"), PACKAGE / relative / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imports(name: str) -> set[str]:
    path = _module_file(name)
    assert path is not None, name
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.add(module)
            found.update(
                f"{module}.{alias.name}" for alias in node.names if _module_file(f"{module}.{alias.name}")
            )
    return found


def _closure(start: str) -> tuple[set[str], set[str]]:
    """(project modules reached, external modules imported by them)."""
    seen: set[str] = set()
    external: set[str] = set()
    todo = [start]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for imported in _imports(name):
            if imported.startswith("otel_blackbox"):
                if _module_file(imported) is not None:
                    todo.append(imported)
                # each package on the way is imported too (its __init__)
                parts = imported.split(".")
                todo.extend(
                    ".".join(parts[:i]) for i in range(1, len(parts)) if _module_file(".".join(parts[:i]))
                )
            else:
                external.add(imported)
    return seen, external


@pytest.mark.parametrize("module", ANALYSIS_MODULES)
def test_analysis_module_stays_off_the_execution_side(module: str) -> None:
    reached, external = _closure(module)
    assert not [m for m in reached if m.startswith(FORBIDDEN_PROJECT)]
    bad = {m for m in external if m in FORBIDDEN_EXTERNAL or m.split(".")[0] in FORBIDDEN_EXTERNAL - {"http"}}
    assert not bad, f"{module} reaches {sorted(bad)}"


def test_the_walk_sees_what_it_should() -> None:
    # A guard against a walker that finds nothing: the CLI's cassette commands reach the loader
    # and canonical JSON, and the processor side reaches the SDK.
    reached, external = _closure("otel_blackbox.cli.cassettes")
    assert {"otel_blackbox.cassette.io", "otel_blackbox.cassette.canonical"} <= reached
    assert "click" in external
    _, processor_external = _closure("otel_blackbox.processor")
    assert "opentelemetry.sdk.trace" in processor_external
