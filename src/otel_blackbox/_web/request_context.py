"""What a route of the workbench answers from: the server's state (``Workbench``), a read-only
connection to the database for one request (``StoreReader``), and ``NotFound`` (its 404).

A Protocol rather than the server's class: the routes (``trace_routes.py``, ``job_routes.py``) need
not import ``server.py``, which imports them.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Protocol

from otel_blackbox._store.connection import connect_reader, describe_sqlite_error
from otel_blackbox._web.guard import Guard
from otel_blackbox._web.jobs import JobBoard
from otel_blackbox._web.workspace import Workspace

__all__ = ["NotFound", "StoreReader", "Workbench"]


class NotFound(Exception):
    """A page or a job that is not there: 404."""


class Workbench(Protocol):
    """What the routes read of the server (``ViewerServer`` is one)."""

    db_path: Path  # the span database, opened read-only for each request
    program: list[str] | None  # what a rerun form may choose instead of the built-in agent
    guard: Guard
    workspace: Workspace
    board: JobBoard


class StoreReader:
    """A read-only connection for one request; sqlite3 errors become one-line StoreErrors."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn: sqlite3.Connection | None = None

    def __enter__(self) -> sqlite3.Connection:
        self.conn = connect_reader(self.path)
        return self.conn

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        if self.conn is not None:
            self.conn.close()
        if isinstance(exc, sqlite3.Error):
            raise describe_sqlite_error(self.path, exc) from None
