"""The SQLite schema, versioned with PRAGMA user_version and upgraded by forward migrations.

One row per span (unique on trace id + span id), real columns for what people filter and sort
by, JSON text for everything else. README's "Schema" section and semconv/columns.yaml describe it.
"""

from __future__ import annotations

import sqlite3

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "SPAN_COLUMNS", "migrate"]

# Columns written for each span, in the order of the row tuples built by store.rows.
SPAN_COLUMNS: tuple[str, ...] = (
    "trace_id", "span_id", "parent_span_id", "name", "span_kind", "oi_span_kind", "status",
    "status_message", "start_ns", "end_ns", "duration_ns", "written_ns", "session_id", "user_id",
    "model", "prompt_tokens", "completion_tokens", "total_tokens", "tool_name", "pid",
    "attributes", "events", "links", "resource", "scope",
)  # fmt: skip

_V1 = """
CREATE TABLE spans (
    id                INTEGER PRIMARY KEY,
    trace_id          TEXT    NOT NULL,           -- 32 lowercase hex digits
    span_id           TEXT    NOT NULL,           -- 16 lowercase hex digits
    parent_span_id    TEXT,                       -- NULL for a root span
    name              TEXT    NOT NULL,
    span_kind         TEXT    NOT NULL,           -- OTel: INTERNAL, SERVER, CLIENT, PRODUCER, CONSUMER
    oi_span_kind      TEXT,                       -- OpenInference: LLM, TOOL, CHAIN, AGENT, ...
    status            TEXT    NOT NULL CHECK (status IN ('open', 'ok', 'error', 'unset')),
    status_message    TEXT,
    start_ns          INTEGER NOT NULL,           -- Unix epoch nanoseconds
    end_ns            INTEGER,                    -- NULL while the span is open
    duration_ns       INTEGER,
    written_ns        INTEGER NOT NULL,           -- when this row was written (open span: last seen)
    session_id        TEXT,
    user_id           TEXT,
    model             TEXT,
    prompt_tokens     INTEGER,
    completion_tokens INTEGER,
    total_tokens      INTEGER,
    tool_name         TEXT,
    pid               INTEGER,                    -- process that recorded the span
    attributes        TEXT    NOT NULL DEFAULT '{}',  -- JSON object, flat dotted keys
    events            TEXT    NOT NULL DEFAULT '[]',  -- JSON [{name, timestamp_ns, attributes}]
    links             TEXT    NOT NULL DEFAULT '[]',  -- JSON [{trace_id, span_id, attributes}]
    resource          TEXT    NOT NULL DEFAULT '{}',  -- JSON object of resource attributes
    scope             TEXT    NOT NULL DEFAULT '{}',  -- JSON {name, version, schema_url}
    UNIQUE (trace_id, span_id)
);
CREATE INDEX spans_by_start   ON spans (start_ns);
CREATE INDEX spans_by_session ON spans (session_id, start_ns) WHERE session_id IS NOT NULL;
CREATE INDEX spans_by_kind    ON spans (oi_span_kind, start_ns) WHERE oi_span_kind IS NOT NULL;
CREATE INDEX spans_not_ok     ON spans (status, start_ns) WHERE status IN ('error', 'open');

-- One row per recording process: what it wrote and what it had to drop.
CREATE TABLE recorders (
    id                INTEGER PRIMARY KEY,
    pid               INTEGER NOT NULL,
    started_ns        INTEGER NOT NULL,
    last_seen_ns      INTEGER NOT NULL,
    spans_written     INTEGER NOT NULL DEFAULT 0,
    spans_dropped     INTEGER NOT NULL DEFAULT 0,
    write_errors      INTEGER NOT NULL DEFAULT 0
);
"""

# A run is one recorder's lifetime (one row of `recorders`): a random id the CLI can name it by
# (`runs`, `cassette --run`), given to the rows of older files too. The (pid, started_ns) index
# serves the rule that attributes a span to its run (store.queries.recorder_of_span).
_V2 = """
ALTER TABLE recorders ADD COLUMN run_id TEXT;      -- 16 lowercase hex digits
UPDATE recorders SET run_id = lower(hex(randomblob(8))) WHERE run_id IS NULL;
CREATE UNIQUE INDEX recorders_by_run_id ON recorders (run_id);
CREATE INDEX recorders_by_pid ON recorders (pid, started_ns);
"""

# MIGRATIONS[i] upgrades a database from user_version i to i + 1.
MIGRATIONS: tuple[str, ...] = (_V1, _V2)
SCHEMA_VERSION = len(MIGRATIONS)


def migrate(conn: sqlite3.Connection, current: int) -> None:
    """Apply the migrations after ``current``; the caller holds a write transaction."""
    for version in range(current, SCHEMA_VERSION):
        for statement in _statements(MIGRATIONS[version]):
            conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {version + 1}")


def _statements(script: str) -> list[str]:
    """Split a migration into statements (executescript would COMMIT the caller's transaction)."""
    lines = [line.split("--", 1)[0] for line in script.splitlines()]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]
