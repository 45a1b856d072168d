"""Atomic file output: write a temporary file beside the target, fsync, then rename over it.

A crash or an error mid-write leaves the old file (or none), never half of a new one.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

__all__ = ["atomic_text_writer"]


@contextlib.contextmanager
def atomic_text_writer(path: str | Path) -> Iterator[TextIO]:
    target = Path(path)
    mode = _file_mode(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    try:
        os.fchmod(fd, mode)  # mkstemp makes 0600 files: give the usual mode instead
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _file_mode(target: Path) -> int:
    """The replaced file's mode, or what open() would give a new file (0666 less the umask)."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except OSError:
        return 0o666 & ~_umask()


def _umask() -> int:
    # os.umask() can only be read by setting it, which races with other threads: ask Linux instead.
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022
