"""The warning every deprecated import path gives, once, naming what to import instead."""

from __future__ import annotations

import warnings

__all__ = ["warn_moved"]


def warn_moved(old: str, new: str) -> None:
    warnings.warn(f"{old} is deprecated: {new}", DeprecationWarning, stacklevel=3)
