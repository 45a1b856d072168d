"""Deprecated: the pytest plugin is ``otel_blackbox.pytest_plugin`` (loaded by its entry point)."""

from __future__ import annotations

from otel_blackbox.pytest_plugin import *  # noqa: F403
from otel_blackbox.pytest_plugin import __all__ as __all__
from otel_blackbox.replay._deprecated import warn_moved

warn_moved("otel_blackbox.replay.pytest_plugin", "use otel_blackbox.pytest_plugin")
