"""Atomic file output: write a temporary file beside the target, fsync, then rename over it.

A crash or an error mid-write leaves the old file (or none), never half of a new one.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

__all__ = ["atomic_text_writer"]


@contextlib.contextmanager
def atomic_text_writer(path: str | Path) -> Iterator[TextIO]:
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
