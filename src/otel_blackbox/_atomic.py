"""Atomic file output: write a temporary file beside the target, fsync, then rename over it.

A crash or an error mid-write leaves the old file (or none), never half of a new one. A process
killed mid-write (SIGKILL runs no cleanup) leaves its temporary file, ``.<name>.<pid>.<random>.tmp``;
the next save over the same file removes it once that process is gone and the file a minute old.
Only a save over an existing file looks (one listing of the directory): a folder of thousands of
new files, such as the cassette exporter's, is never listed once per file. An error names the
target, never the temporary file.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, BinaryIO, TextIO, cast

__all__ = ["atomic_binary_writer", "atomic_text_writer"]


@contextlib.contextmanager
def atomic_text_writer(path: str | Path) -> Iterator[TextIO]:
    with _atomic_writer(path, binary=False) as handle:
        yield cast(TextIO, handle)


@contextlib.contextmanager
def atomic_binary_writer(path: str | Path) -> Iterator[BinaryIO]:
    """The same for bytes (a compressed file)."""
    with _atomic_writer(path, binary=True) as handle:
        yield cast(BinaryIO, handle)


@contextlib.contextmanager
def _atomic_writer(path: str | Path, *, binary: bool) -> Iterator[IO[Any]]:
    target = Path(path)
    try:
        replaced: os.stat_result | None = target.stat()
    except OSError:
        replaced = None
    # The replaced file's mode, or what open() would give a new file (0666 less the umask).
    mode = stat.S_IMODE(replaced.st_mode) if replaced is not None else 0o666 & ~_umask()
    prefix = f".{target.name}.{os.getpid()}."
    try:
        fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=target.parent or ".")
    except OSError as exc:
        raise _naming(exc, target) from None
    try:
        os.fchmod(fd, mode)  # mkstemp makes 0600 files: give the usual mode instead
        opened = os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="\n")
        with opened as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if exc.filename in (None, tmp):  # the write's own failure: name the user's file, not ours
            raise _naming(exc, target) from None
        raise
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if replaced is not None:
        _remove_abandoned_temporaries(target)


def _naming(exc: OSError, target: Path) -> OSError:
    """The same error about ``target``: a message never names the temporary file the user never saw."""
    return OSError(exc.errno, exc.strerror or str(exc), str(target))


# mkstemp's random part: 8 characters of this alphabet.
_TEMPORARY = re.compile(r"(\d+)\.[a-z0-9_]{8}\.tmp")
_ABANDONED_AFTER_S = 60.0  # on a shared filesystem the pid may be another host's: wait a while too


def _remove_abandoned_temporaries(target: Path) -> None:
    """Delete temporary files of earlier saves of ``target`` whose process was killed midway."""
    prefix = f".{target.name}."
    now = time.time()
    try:
        with os.scandir(target.parent or ".") as entries:
            for entry in entries:
                if not entry.name.startswith(prefix):
                    continue
                match = _TEMPORARY.fullmatch(entry.name, len(prefix))
                if match is None or _process_exists(int(match.group(1))):
                    continue
                with contextlib.suppress(OSError):
                    info = entry.stat(follow_symlinks=False)
                    if stat.S_ISREG(info.st_mode) and now - info.st_mtime >= _ABANDONED_AFTER_S:
                        os.unlink(entry.path)
    except OSError:  # an unreadable directory: the save itself succeeded, leave the rest
        pass


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # another user's process (EPERM), or a number no pid can be
        return True
    return True


def _umask() -> int:
    # os.umask() can only be read by setting it, which races with other threads: ask Linux instead.
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022
