"""otel-blackbox: a flight recorder for LLM agents, built on OpenTelemetry.

``BlackboxSpanProcessor`` writes every span to a local SQLite file the moment it starts;
``otel-blackbox`` (the CLI) reads it back. Importing this package creates no file and starts no thread.
"""

from __future__ import annotations

from .cassette.exporter import CassetteSpanExporter
from .config import BlackboxConfig
from .exporter import BlackboxSpanExporter
from .processor import BlackboxSpanProcessor

__all__ = ["BlackboxConfig", "BlackboxSpanExporter", "BlackboxSpanProcessor", "CassetteSpanExporter"]
__version__ = "0.1.0"
