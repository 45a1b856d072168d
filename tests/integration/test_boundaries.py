"""The analysis side (reading databases and cassettes) never reaches the execution side.

Walks the import graph of the package statically (every ``import`` statement, including ones
inside functions) from each analysis module, and fails if it reaches the execution side (anything
of ``otel_blackbox._playback``: the HTTP hook, a session, the built-in agent), an HTTP client, an
LLM SDK or a network module. The wire translations (``_wire``) are walked too: they are pure.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

PACKAGE = ROOT / "src" / "otel_blackbox"
# The analysis side: every module of these packages, and the store's read side. The wire
# translations (``_wire``) are on it too: pure functions, which cassettes are built with.
ANALYSIS_PACKAGES = ("_cassette", "_wire", "_cost", "_render")
ANALYSIS_MODULES = sorted(
    [
        "otel_blackbox." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts).removesuffix(".__init__")
        for package in ANALYSIS_PACKAGES
        for path in (PACKAGE / package).rglob("*.py")
    ]
    + ["otel_blackbox._store.queries", "otel_blackbox._store.runs", "otel_blackbox._spans.messages"]
)
FORBIDDEN_PROJECT = ("otel_blackbox._playback",)  # the execution side, whole
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
    tree = ast.parse(path.read_text())
    # PEP 562 lazy attributes (``otel_blackbox.session``) import only when that attribute is used.
    # ``if TYPE_CHECKING:`` imports never run.
    lazy = {
        id(node)
        for hook in tree.body
        if (isinstance(hook, ast.FunctionDef) and hook.name == "__getattr__")
        or (isinstance(hook, ast.If) and isinstance(hook.test, ast.Name) and hook.test.id == "TYPE_CHECKING")
        for node in ast.walk(hook)
    }
    for node in ast.walk(tree):
        if id(node) in lazy:
            continue
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
    # A guard against a walker that finds nothing: verify reaches the loader and canonical JSON,
    # the session reaches the hook, and the processor side reaches the SDK.
    reached, _ = _closure("otel_blackbox._cassette.verify")
    assert {"otel_blackbox._cassette.io", "otel_blackbox._cassette.canonical"} <= reached
    session_reached, _ = _closure("otel_blackbox._playback.interceptor")
    assert "otel_blackbox._playback.http.hook" in session_reached
    assert "otel_blackbox._wire.registry" in session_reached
    _, processor_external = _closure("otel_blackbox._recorder.processor")
    assert "opentelemetry.sdk.trace" in processor_external


def test_analysis_commands_load_nothing_of_the_execution_side() -> None:
    """At run time too: the CLI, every command loaded, imports no hook, provider or client."""
    code = (
        "import json, sys\n"
        "from otel_blackbox.cli import cli\n"
        "from otel_blackbox._cli.app import COMMANDS\n"
        # The commands are imported when looked up: look up every one.
        "assert len(dict(cli.commands.items())) == len(COMMANDS) > 0\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(("
        "'otel_blackbox._playback', "
        "'httpx', 'httpcore', 'openai', 'anthropic')))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


# What the recorder's own path may never load: the analysis side, the execution side (but for the
# active-mode flag it reads), the CLI, the HTTP clients, jsonschema.
_OFF_THE_RECORDER = (
    "otel_blackbox._cassette", "otel_blackbox._playback.", "otel_blackbox._render", "otel_blackbox.cli",
    "otel_blackbox._cli", "otel_blackbox._spans.otlp", "otel_blackbox._spans.openinference",
    "otel_blackbox._wire", "otel_blackbox._cost", "jsonschema", "httpx", "httpcore", "httpx2", "httpcore2",
)  # fmt: skip
_THE_RECORDERS_OWN = ("otel_blackbox._playback", "otel_blackbox._playback.active")


@pytest.mark.parametrize("writer", ["process", "thread"])
def test_the_recorders_path_loads_only_the_recorder(writer: str, tmp_path: Path) -> None:
    """In a fresh interpreter: import the package, create the processor, record, flush, shut down."""
    code = (
        "import json, sys\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "from otel_blackbox import BlackboxConfig, BlackboxSpanProcessor\n"
        f"processor = BlackboxSpanProcessor(config=BlackboxConfig(db_path={str(tmp_path / 'bb.db')!r}, "
        f"writer={writer!r}))\n"
        "provider = TracerProvider(shutdown_on_exit=False)\n"
        "provider.add_span_processor(processor)\n"
        "with provider.get_tracer('t').start_as_current_span('step'):\n"
        "    pass\n"
        "assert processor.force_flush(10_000) and processor.spans_written == 1\n"
        "mode = processor.writer_mode\n"
        "provider.shutdown()\n"
        f"print(json.dumps([mode, sorted(m for m in sys.modules if m.startswith({_OFF_THE_RECORDER!r}) "
        f"and m not in {_THE_RECORDERS_OWN!r})]))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert json.loads(out.stdout) == [writer, []]
