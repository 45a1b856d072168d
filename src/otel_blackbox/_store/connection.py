"""Opening the database: the writer's connection (creates and migrates) and the reader's (read-only).

Every sqlite3 failure that a user can cause (no file, not SQLite, a newer schema, a lock held too
long) becomes one StoreError subclass with a one-line message.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

from otel_blackbox._store.schema import SCHEMA_VERSION, migrate
from otel_blackbox.errors import DatabaseLocked, DatabaseNotFound, NotABlackboxDatabase, StoreError

__all__ = ["connect_reader", "connect_writer", "describe_sqlite_error"]


def describe_sqlite_error(path: str | Path, exc: sqlite3.Error) -> StoreError:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return DatabaseLocked(f"database is locked by another process: {path}")
    if "not a database" in text or "malformed" in text or "file is encrypted" in text:
        return NotABlackboxDatabase(f"not a SQLite database, or a damaged one: {path} ({text})")
    if "unable to open" in text or "readonly" in text or "read-only" in text:
        return StoreError(f"cannot open database {path}: {text}")
    return StoreError(f"database error in {path}: {text}")


def _check_schema(path: str | Path, conn: sqlite3.Connection, table: str | None = None) -> tuple[int, int]:
    """The schema version and the number of tables and views (named ``table``, if given), read in
    one statement. A view counts: since schema version 3, ``spans`` is one.

    One statement reads one snapshot: read apart, another process could create the schema in
    between, and its tables would be taken for a foreign file's.
    """
    row = conn.execute(
        "SELECT (SELECT user_version FROM pragma_user_version),"
        " (SELECT count(*) FROM sqlite_master"
        "  WHERE type IN ('table', 'view') AND (? IS NULL OR name = ?))",
        (table, table),
    ).fetchone()
    version, tables = int(row[0]), int(row[1])
    if version > SCHEMA_VERSION:
        raise NotABlackboxDatabase(
            f"{path} has schema version {version}, newer than this otel-blackbox supports "
            f"({SCHEMA_VERSION}): upgrade otel-blackbox"
        )
    return version, tables


def connect_writer(
    path: str | Path, *, busy_timeout_ms: int = 5000, create: bool = True
) -> sqlite3.Connection:
    """A connection for writing: WAL, synchronous=NORMAL, the schema created or upgraded.

    Safe when several processes open a new file at the same moment: the schema is created inside
    an IMMEDIATE transaction that re-reads user_version.
    """
    path = Path(path)
    if not create and not path.exists():
        raise DatabaseNotFound(f"database not found: {path}")
    if path.is_dir():
        raise StoreError(f"database path is a directory: {path}")
    try:
        conn = sqlite3.connect(
            str(path), timeout=busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False
        )
    except sqlite3.Error as exc:
        raise describe_sqlite_error(path, exc) from None
    try:
        # Refuse a file that is not ours before any pragma below writes to it.
        version, tables = _check_schema(path, conn)
        if version == 0:
            if tables:
                raise NotABlackboxDatabase(f"not an otel-blackbox database (other tables found): {path}")
            if not create:
                raise NotABlackboxDatabase(f"not an otel-blackbox database (no schema): {path}")
        # Both take effect only on a file with no tables yet. 8 KiB pages hold these 1-2 KB rows
        # with less waste (30% smaller files at 1M spans, docs/scaling.md); auto_vacuum lets the
        # size cap give space back.
        conn.execute("PRAGMA page_size = 8192")
        conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
        _retry_busy(lambda: conn.execute("PRAGMA journal_mode = WAL"), busy_timeout_ms)
        conn.execute("PRAGMA synchronous = NORMAL")
        # Several writers can grow the -wal file to ~100 MB; cap what stays on disk after a checkpoint.
        conn.execute("PRAGMA journal_size_limit = 67108864")
        if _check_schema(path, conn)[0] < SCHEMA_VERSION:  # again: another process may have made it
            conn.execute("BEGIN IMMEDIATE")
            try:
                current, tables = _check_schema(path, conn)
                if current == 0 and tables:
                    raise NotABlackboxDatabase(f"not an otel-blackbox database (other tables found): {path}")
                migrate(conn, current)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return conn
    except sqlite3.Error as exc:
        conn.close()
        raise describe_sqlite_error(path, exc) from None
    except BaseException:
        conn.close()
        raise


def connect_reader(path: str | Path, *, busy_timeout_ms: int = 2000) -> sqlite3.Connection:
    """A read-only connection to an existing otel-blackbox database."""
    path = Path(path)
    if not path.exists():
        raise DatabaseNotFound(f"database not found: {path}")
    if path.is_dir():
        raise StoreError(f"database path is a directory: {path}")
    uri = f"file:{quote(os.fsencode(path.resolve()))}?mode=ro"  # bytes: a name need not be UTF-8
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=busy_timeout_ms / 1000, check_same_thread=False)
    except sqlite3.Error as exc:
        raise describe_sqlite_error(path, exc) from None
    try:
        conn.row_factory = sqlite3.Row
        version, spans_tables = _check_schema(path, conn, table="spans")
        if version == 0 or not spans_tables:
            raise NotABlackboxDatabase(f"not an otel-blackbox database (no spans table): {path}")
        return conn
    except sqlite3.Error as exc:
        conn.close()
        raise describe_sqlite_error(path, exc) from None
    except BaseException:
        conn.close()
        raise


def _retry_busy(action: Callable[[], object], busy_timeout_ms: int) -> None:
    """Switching to WAL can answer SQLITE_BUSY without calling the busy handler: retry it ourselves."""
    deadline = time.monotonic() + busy_timeout_ms / 1000
    while True:
        try:
            action()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)
