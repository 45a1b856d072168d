"""otel-blackbox: a flight recorder for LLM agents, built on OpenTelemetry.

``BlackboxSpanProcessor`` writes every span to a local SQLite file the moment it starts;
``otel-blackbox`` (the CLI) reads it back. Importing this package creates no file and starts no thread.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for type checkers only; at run time __getattr__ loads each name on first use
    from .cassette.exporter import CassetteSpanExporter
    from .config import BlackboxConfig
    from .exporter import BlackboxSpanExporter
    from .processor import BlackboxSpanProcessor
    from .replay.session import session
    from .stubbing import stubbable

__all__ = [
    "BlackboxConfig",
    "BlackboxSpanExporter",
    "BlackboxSpanProcessor",
    "CassetteSpanExporter",
    "session",
    "stubbable",
]

# Loaded on first use: the writer process imports store modules of this package and must not pay
# for the OpenTelemetry SDK; the session pulls in the HTTP hook and the provider translations.
_HOMES = {
    "BlackboxConfig": ".config",
    "BlackboxSpanExporter": ".exporter",
    "BlackboxSpanProcessor": ".processor",
    "CassetteSpanExporter": ".cassette.exporter",
    "session": ".replay.session",
    "stubbable": ".stubbing",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'otel_blackbox' has no attribute {name!r}")
    value = getattr(importlib.import_module(home, __name__), name)
    globals()[name] = value
    return value


__version__ = "0.1.0"
