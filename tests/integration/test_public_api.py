"""The public surface, in httpx's manner (its tests/test_exported_members.py): what ``otel_blackbox``
exports is exactly its ``__all__``, every other module is private, every error a user can catch is
in ``otel_blackbox.errors`` in one tree, and the import paths 0.1's README showed still work, with a
DeprecationWarning that says what to import instead."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import subprocess
import sys
import warnings
from types import ModuleType

import pytest
from helpers import ROOT

import otel_blackbox
from otel_blackbox import errors

PUBLIC_MODULES = {
    "otel_blackbox",
    "otel_blackbox.cli",
    "otel_blackbox.errors",
    "otel_blackbox.pytest_plugin",
    # deprecated for this release (CHANGELOG.md): the paths 0.1's README showed
    "otel_blackbox.replay",
    "otel_blackbox.replay.http",
    "otel_blackbox.replay.http.hook",
    "otel_blackbox.replay.http.transport",
    "otel_blackbox.replay.pytest_plugin",
}
DEPRECATED = {
    "otel_blackbox.replay.http.transport": ["BlackboxTransport", "AsyncBlackboxTransport",
                                            "Httpx2BlackboxTransport", "AsyncHttpx2BlackboxTransport"],
    "otel_blackbox.replay.http.hook": ["BlackboxHTTPInstrumentor"],
}  # fmt: skip


def _all_modules() -> list[str]:
    found = ["otel_blackbox"]
    for info in pkgutil.walk_packages([str(ROOT / "src" / "otel_blackbox")], prefix="otel_blackbox."):
        found.append(info.name)
    return found


def test_exported_members() -> None:
    """Every name in __all__ resolves, and every public name the package has is in __all__."""
    for name in otel_blackbox.__all__:
        assert getattr(otel_blackbox, name) is not None, name  # a lazy name, loaded here
    defined = {
        name
        for name, value in vars(otel_blackbox).items()
        if not name.startswith(("_", "@"))  # "@": pytest's assertion rewriting, in a plugin's package
        and not isinstance(value, ModuleType)  # a submodule, once imported
    }
    assert defined - {"annotations", "TYPE_CHECKING"} == set(otel_blackbox.__all__) - {"__version__"}


def test_exports_are_the_private_homes_objects() -> None:
    """The package re-exports; it defines nothing itself (one home for each class)."""
    for name in otel_blackbox.__all__:
        value = getattr(otel_blackbox, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            module = value.__module__
            assert module == "otel_blackbox.errors" or module.startswith("otel_blackbox._"), (name, module)


def test_every_other_module_is_private() -> None:
    public = {m for m in _all_modules() if not any(part.startswith("_") for part in m.split("."))}
    assert public == PUBLIC_MODULES
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for name in sorted(public):
            assert isinstance(importlib.import_module(name).__all__, list), name


def test_every_error_is_in_errors_in_one_tree() -> None:
    """Every BlackboxError subclass the package defines (every module imported) lives in
    otel_blackbox.errors, is exported from otel_blackbox, and is drawn in the module's docstring."""
    for name in _all_modules():
        if name.startswith(("otel_blackbox.replay", "otel_blackbox._playback._bootstrap.sitecustomize")):
            continue  # deprecated paths warn; sitecustomize starts a session when imported
        try:
            importlib.import_module(name)
        except ImportError as exc:  # an optional SDK (mcp) that is not installed
            assert "otel_blackbox" not in str(exc), exc
    found: set[type[errors.BlackboxError]] = set()
    todo: list[type[errors.BlackboxError]] = [errors.BlackboxError]
    while todo:
        cls = todo.pop()
        found.add(cls)
        todo.extend(cls.__subclasses__())
    for cls in found:
        assert cls.__module__ == "otel_blackbox.errors", cls
        assert getattr(otel_blackbox, cls.__name__) is cls
        assert f" {cls.__name__}" in (errors.__doc__ or ""), f"{cls.__name__} is not drawn in the tree"
    assert set(errors.__all__) == {cls.__name__ for cls in found}


@pytest.mark.parametrize("module", sorted(DEPRECATED))
def test_the_old_import_paths_still_work_and_say_where_to_go(module: str) -> None:
    """In a fresh interpreter (a module warns once, when first imported)."""
    names = DEPRECATED[module]
    code = (
        "import json, warnings\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        f"    import {module} as old\n"
        "import otel_blackbox\n"
        f"same = [getattr(old, n) is getattr(otel_blackbox, n) for n in {names!r}]\n"
        "print(json.dumps([same, [(w.category.__name__, str(w.message)) for w in caught]]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    same, caught = json.loads(out.stdout)
    assert same == [True] * len(names)
    assert [category for category, _ in caught] == ["DeprecationWarning"]
    assert module in caught[0][1] and "otel_blackbox" in caught[0][1].split(":", 1)[1]


def test_the_old_pytest_plugin_path_warns_and_defines_no_second_plugin() -> None:
    code = (
        "import json, warnings\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    import otel_blackbox.replay.pytest_plugin as old\n"
        "hooks = [n for n in dir(old) if n.startswith('pytest_')]\n"
        "print(json.dumps([[str(w.message) for w in caught], hooks]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    messages, hooks = json.loads(out.stdout)
    assert len(messages) == 1 and "otel_blackbox.pytest_plugin" in messages[0]
    assert hooks == []  # the entry point's plugin is the one pytest loads: hooks twice would clash


def test_the_recorders_are_exported() -> None:
    """The span and log recorders are public names, each a subclass of the SDK interface it fills."""
    from opentelemetry.sdk._logs import LogRecordProcessor
    from opentelemetry.sdk.trace import SpanProcessor

    assert {"BlackboxSpanProcessor", "BlackboxSpanExporter", "BlackboxLogRecordProcessor"} <= set(
        otel_blackbox.__all__
    )
    assert issubclass(otel_blackbox.BlackboxLogRecordProcessor, LogRecordProcessor)
    assert issubclass(otel_blackbox.BlackboxSpanProcessor, SpanProcessor)
