"""Deprecated: ``from otel_blackbox import BlackboxTransport`` (and its async and httpx2 variants)."""

from __future__ import annotations

from otel_blackbox._playback.http import transport as _transport
from otel_blackbox.replay._deprecated import warn_moved

warn_moved("otel_blackbox.replay.http.transport", "import the transports from otel_blackbox")

__all__ = list(_transport.__all__)
globals().update({name: getattr(_transport, name) for name in __all__})
