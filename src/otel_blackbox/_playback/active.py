"""Which session (record / replay / fork) is running in this process, if any.

A module of its own with no imports, so the span processor's hot path can read it for free.
"""

from __future__ import annotations

mode: str | None = None
