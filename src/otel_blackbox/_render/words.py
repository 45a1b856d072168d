"""Counts in words: ``1 call``, ``2 calls``, the one way every message and page says a count."""

from __future__ import annotations

__all__ = ["counted"]


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun``, plural unless the count is 1 (``plural`` for an irregular noun)."""
    if count == 1:
        return f"1 {noun}"
    return f"{count} {plural if plural is not None else noun + 's'}"
