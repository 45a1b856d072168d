"""The file a command writes: checked before the work, and the result kept when the write fails after.

A command that calls a model, runs a program or reads a large input checks where it will write
first (``check_output_file``): a folder that is missing or not writable, a path that is a folder, a
SQLite database (the one being read, or any other) are refused with one line naming the path as the
user gave it, before anything is paid for or run. A write can still fail after the work (a full
disk, the folder removed meanwhile): ``write_keeping`` then writes the result to the temporary
folder (or the home folder) and raises ``ResultKept`` naming both files, so nothing paid for is lost.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from otel_blackbox.errors import OutputError, ResultKept

__all__ = ["check_output_file", "write_keeping"]

_SQLITE_HEADER = b"SQLite format 3\x00"
_DATABASE_FILES = ("", "-wal", "-shm", "-journal")


def check_output_file(path: str | Path, *, database: str | Path | None = None) -> Path:
    """``path`` made absolute, once it is a place a new file can be written; OutputError otherwise."""
    shown = str(path)
    if not shown.strip():
        raise OutputError("the output path is empty: give the file to write")
    target = Path(path).expanduser().absolute()
    if target.is_dir():
        raise OutputError(f"{shown} is a folder: give a file path, such as {Path(shown) / 'out.json'}")
    folder = target.parent
    if not folder.exists():
        raise OutputError(f"cannot write {shown}: the folder {folder} does not exist")
    if not folder.is_dir():
        raise OutputError(f"cannot write {shown}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write {shown}: the folder {folder} is not writable")
    if database is not None and _is_database_file(target, Path(database).expanduser().absolute()):
        raise OutputError(f"{shown} is the database (or one of its files): write elsewhere")
    # Any other database too, and its -wal / -shm / -journal beside it (which hold no header of theirs).
    if _holds_sqlite(target) or any(
        target.name.endswith(suffix) and _holds_sqlite(target.with_name(target.name[: -len(suffix)]))
        for suffix in _DATABASE_FILES[1:]
    ):
        raise OutputError(f"{shown} is a SQLite database (or one of its files): write elsewhere")
    return target


def write_keeping(write: Callable[[Path], object], target: Path, what: str) -> None:
    """``write(target)``; when it fails, ``write`` to a file of its own in the temporary folder (else
    the home folder) and ResultKept naming it. OutputError when no place takes it."""
    try:
        write(target)
        return
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
    for folder in (Path(tempfile.gettempdir()), Path.home()):
        kept = folder / f"otel-blackbox-kept-{os.getpid()}-{target.name}"
        try:
            write(kept)
        except OSError:
            continue
        raise ResultKept(f"could not write {target} ({reason}): the {what} is kept in {kept}", str(kept))
    raise OutputError(f"could not write {target} ({reason}), nor keep the {what} elsewhere")


def _is_database_file(target: Path, database: Path) -> bool:
    guarded = [Path(f"{database}{suffix}") for suffix in _DATABASE_FILES]
    if target in guarded:
        return True
    try:
        return target.exists() and any(p.exists() and target.samefile(p) for p in guarded)
    except OSError:
        return False


def _holds_sqlite(target: Path) -> bool:
    try:
        with open(target, "rb") as handle:
            return handle.read(len(_SQLITE_HEADER)) == _SQLITE_HEADER
    except OSError:  # no file yet (the usual case), or one we cannot read: its folder decides
        return False
