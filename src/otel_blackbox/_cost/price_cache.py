"""Price plans (rates.py) kept in a file, so a command prices its calls without importing genai-prices.

One file per genai-prices version in the user's cache folder (``$XDG_CACHE_HOME``, else
``~/.cache``; ``%LOCALAPPDATA%`` on Windows, ``~/Library/Caches`` on macOS), under
``otel-blackbox/genai-prices-<version>.json``. It maps a model name and a provider (as the spans
name them, or none) to genai-prices' plan for them, or to null when genai-prices knows no such
model. The file also names the version and the size and modification time of genai-prices' price
data (``genai_prices/data.py``): a file written for other data, or one that cannot be read or
parsed, is ignored (and replaced by the next write). A model not in the file is resolved with
genai-prices, once per process, and the file rewritten (atomically: a concurrent reader sees the
old file or the new one). When the file cannot be written (a read-only home), every command
resolves its models again: slower, never wrong.

The version is read from genai-prices' ``.dist-info`` folder name beside the package, not with
importlib.metadata, whose import alone costs more than a command's start-up budget.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from otel_blackbox._cost.rates import Plan

__all__ = ["cache_file", "data_identity", "plan_for", "reset"]

_FORMAT = 1
_DIST_INFO = ("genai_prices-", ".dist-info")
_SEP = "\x1f"  # between model and provider in a key: in neither name

_plans: dict[tuple[str, str | None], Plan | None] = {}
_file: dict[str, Any] | None = None  # the plans as read from the file (None: not read yet)


def data_identity() -> tuple[str, str] | None:
    """genai-prices' version and a fingerprint of its price data, from the first ``sys.path`` entry
    that holds the package (where import finds it); None when it is not installed as files."""
    for entry in sys.path:
        folder = entry or "."
        try:
            data = os.stat(os.path.join(folder, "genai_prices", "data.py"))
        except OSError:
            continue
        try:
            names = [
                n for n in os.listdir(folder) if n.startswith(_DIST_INFO[0]) and n.endswith(_DIST_INFO[1])
            ]
        except OSError:
            return None
        if len(names) != 1:  # none (an editable install) or several (a damaged one)
            return None
        version = names[0][len(_DIST_INFO[0]) : -len(_DIST_INFO[1])]
        return version, f"{data.st_size}:{data.st_mtime_ns}"
    return None


def cache_file(version: str) -> Path:
    if os.environ.get("XDG_CACHE_HOME"):
        base = Path(os.environ["XDG_CACHE_HOME"])
    elif sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        base = Path(os.environ["LOCALAPPDATA"])
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path.home() / ".cache"
    return base / "otel-blackbox" / f"genai-prices-{version}.json"


def plan_for(model: str, provider: str | None) -> Plan | None:
    """genai-prices' plan for the model at the provider (None: it knows no such model), from this
    process's memory, else the cache file, else genai-prices (then kept in both)."""
    key = (model, provider)
    if key in _plans:
        return _plans[key]
    # Here, not at the top: a command whose spans hold no LLM call never needs the plans.
    from otel_blackbox._cost.rates import plan_from_json, plan_to_json, resolve

    identity = data_identity()
    stored = _stored(identity).get(_key(model, provider), False) if identity else False
    if stored is not False:
        try:
            plan = plan_from_json(stored)
        except (ValueError, TypeError, AttributeError):
            pass  # a damaged entry: resolved again, and replaced
        else:
            _plans[key] = plan
            return plan
    try:
        plan = resolve(model, provider)
    except ImportError:  # pragma: no cover - a dependency of the package
        return None
    _plans[key] = plan
    if identity is not None:
        _store(identity, _key(model, provider), plan_to_json(plan))
    return plan


def reset() -> None:
    """Forget the plans this process read or resolved: the next call reads the file again, as a
    new command does (for benchmarks and tests)."""
    global _file
    _plans.clear()
    _file = None


def _key(model: str, provider: str | None) -> str:
    return f"{model}{_SEP}{provider or ''}"


def _stored(identity: tuple[str, str]) -> dict[str, Any]:
    global _file
    if _file is None:
        _file = _read(identity)
    return _file


def _read(identity: tuple[str, str]) -> dict[str, Any]:
    """The file's plans, or none when it is missing, unreadable, damaged or for other price data."""
    version, data = identity
    try:
        content = json.loads(cache_file(version).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return {}
    if (
        not isinstance(content, dict)
        or content.get("format") != _FORMAT
        or content.get("genai_prices") != version
        or content.get("data") != data
        or not isinstance(content.get("plans"), dict)
    ):
        return {}
    plans: dict[str, Any] = content["plans"]
    return plans


def _store(identity: tuple[str, str], key: str, plan: Any) -> None:
    """Add a plan to the file (re-read first: another process may have added others)."""
    from otel_blackbox._atomic import atomic_text_writer

    global _file
    version, data = identity
    plans = {**_read(identity), key: plan}
    _file = plans
    path = cache_file(version)
    content = {"format": _FORMAT, "genai_prices": version, "data": data, "plans": plans}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_text_writer(path) as handle:
            json.dump(content, handle, separators=(",", ":"))
    except OSError:
        pass  # a cache that cannot be written: the next command resolves the model again
