"""``--stub-tools``: a program's framework tools answered from the recording, their functions never run.

Each framework is reached through its narrowest public seam (one module per framework here):

* the OpenAI Agents SDK: ``FunctionTool.on_invoke_tool`` (agents_sdk.py);
* LangChain: ``BaseTool.run`` / ``arun``, which ``create_agent`` and LangGraph's ``ToolNode`` call
  (langchain.py);
* pydantic-ai: a capability's ``wrap_tool_execute`` hook, added to every run (pydantic_ai.py).

A seam is installed only while a stubbing session runs: at once when its framework is already
imported, else just after the program imports it (a finder on ``sys.meta_path``, removed with the
session). A framework version whose seam is missing gets one warning, and its tools run.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import Any, Protocol

from otel_blackbox import _stubbable as stubbing
from otel_blackbox._playback.tool_stubs import marks
from otel_blackbox._playback.tool_stubs.answers import ToolStubber

__all__ = ["install", "uninstall"]


class Seam(Protocol):
    MODULE: str  # the framework module whose import installs the seam
    FRAMEWORK: str  # its distribution, for the warning

    def install(self, module: ModuleType) -> str | None:
        """Install on the imported ``module``; why not (the seam is missing), or None."""

    def uninstall(self) -> None: ...


def _seams() -> list[Seam]:
    from otel_blackbox._playback.tool_stubs import agents_sdk, langchain, pydantic_ai

    return [agents_sdk, langchain, pydantic_ai]


_lock = threading.RLock()  # a seam may import modules of its framework while installing
_installed: list[Seam] = []
_warned: set[str] = set()  # one warning per framework per process
_finder: _AfterImport | None = None


def install(stubber: ToolStubber) -> None:
    """Answer tool invocations with ``stubber`` until ``uninstall``."""
    global _finder
    stubbing.set_active_stubber(stubber)
    marks.start()
    with _lock:
        waiting = []
        for seam in _seams():
            module = sys.modules.get(seam.MODULE)
            if module is not None:
                _install(seam, module)
            else:
                waiting.append(seam)
        if waiting and _finder is None:
            _finder = _AfterImport(waiting)
            sys.meta_path.insert(0, _finder)


def uninstall() -> None:
    global _finder
    stubbing.set_active_stubber(None)
    marks.stop()
    with _lock:
        if _finder is not None:
            if _finder in sys.meta_path:
                sys.meta_path.remove(_finder)
            _finder = None
        while _installed:
            _installed.pop().uninstall()


def _install(seam: Seam, module: ModuleType) -> None:
    if seam in _installed:
        return
    try:
        missing = seam.install(module)
    except Exception as exc:  # a framework we do not know the shape of: its tools run, the run goes on
        missing = f"{type(exc).__name__}: {exc}"
    if missing is None:
        _installed.append(seam)
    elif seam.FRAMEWORK not in _warned:
        _warned.add(seam.FRAMEWORK)
        _warn(f"[blackbox] --stub-tools cannot answer {seam.FRAMEWORK} tools ({missing}): they run for real")


def _warn(message: str) -> None:
    """One RuntimeWarning line (no source line under it); on stderr when warnings are errors (pytest's
    filterwarnings=error): the program's import of its framework must not fail because of us."""
    try:
        warnings.warn_explicit(
            message, RuntimeWarning, filename="otel_blackbox._playback.tool_stubs", lineno=0
        )
    except Exception:
        print(message, file=sys.stderr)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Installs a seam just after its framework module is first imported."""

    def __init__(self, seams: list[Seam]) -> None:
        self._seams = {seam.MODULE: seam for seam in seams}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        seam = self._seams.get(fullname)
        if seam is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _InstallingLoader(spec.loader, seam)
        return spec


class _InstallingLoader(importlib.abc.Loader):
    def __init__(self, loader: Any, seam: Seam) -> None:
        self._loader = loader
        self._seam = seam

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        created: ModuleType | None = self._loader.create_module(spec)
        return created

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        if stubbing.active_stubber() is not None:
            with _lock:
                _install(self._seam, module)

    def __getattr__(self, name: str) -> Any:  # get_resource_reader, is_package...: the real loader's
        return getattr(self._loader, name)
