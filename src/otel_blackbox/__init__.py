"""otel-blackbox: a flight recorder for LLM agents, built on OpenTelemetry.

``BlackboxSpanProcessor`` writes every span to a local SQLite file the moment it starts;
``otel-blackbox`` (the CLI) reads it back. Importing this package creates no file and starts no thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .cassette.exporter import CassetteSpanExporter
from .config import BlackboxConfig
from .exporter import BlackboxSpanExporter
from .processor import BlackboxSpanProcessor

if TYPE_CHECKING:  # for type checkers only; at run time __getattr__ loads it on first use
    from .sessions import session

__all__ = [
    "BlackboxConfig",
    "BlackboxSpanExporter",
    "BlackboxSpanProcessor",
    "CassetteSpanExporter",
    "session",
]


def __getattr__(name: str) -> object:
    # The session pulls in the HTTP hook and the provider translations: load it only when asked.
    if name == "session":
        from .sessions import session

        return session
    raise AttributeError(f"module 'otel_blackbox' has no attribute {name!r}")


__version__ = "0.1.0"
