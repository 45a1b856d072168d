"""Deprecated: ``from otel_blackbox import BlackboxHTTPInstrumentor``."""

from __future__ import annotations

from otel_blackbox._playback.http.hook import BlackboxHTTPInstrumentor
from otel_blackbox.replay._deprecated import warn_moved

warn_moved("otel_blackbox.replay.http.hook", "import BlackboxHTTPInstrumentor from otel_blackbox")

__all__ = ["BlackboxHTTPInstrumentor"]
