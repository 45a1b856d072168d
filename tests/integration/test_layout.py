"""The house's rules, checked on its files: no import circles anywhere in the package.

Every ``import`` counts: at module level, inside functions, and under ``if TYPE_CHECKING:`` (a
circle for the type checker is still two modules that each need the other). The walk is static,
over the source files, so it sees imports that a test run never executes.
"""

from __future__ import annotations

import ast
from pathlib import Path

from helpers import ROOT

PACKAGE = ROOT / "src" / "otel_blackbox"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports (``from P import m`` of a submodule m counts as m)."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    source = ".".join([*base, node.module] if node.module else base)
                else:
                    source = node.module or ""
                submodules = [f"{source}.{a.name}" for a in node.names if f"{source}.{a.name}" in modules]
                targets = submodules if len(submodules) == len(node.names) else [source, *submodules]
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circles() -> None:
    graph = import_graph()
    assert circles(graph) == []


def test_the_walk_finds_a_circle_and_the_imports_it_should() -> None:
    """A guard against a walker that sees nothing: known edges of every kind are found, and a
    circle made up here is reported."""
    graph = import_graph()
    assert "otel_blackbox._playback.interceptor" in graph["otel_blackbox._playback.session"]  # module level
    assert "otel_blackbox._recorder.capture" in graph["otel_blackbox._recorder.processor"]  # TYPE_CHECKING
    assert (
        "otel_blackbox._playback.http.hook" in graph["otel_blackbox._playback.interceptor"]
    )  # in a function
    assert "otel_blackbox._config" in graph["otel_blackbox"]  # the package's TYPE_CHECKING block
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
