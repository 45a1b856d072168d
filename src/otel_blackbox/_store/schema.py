"""The SQLite schema, versioned with PRAGMA user_version and upgraded by forward migrations.

One row per span (unique on trace id + span id) in ``span_rows``, real columns for what people
filter and sort by, JSON text for everything else; each distinct resource and instrumentation scope
stored once (``resources``, ``scopes``). Readers read the view ``spans``: the span's columns with the
resource and scope as JSON text. docs/schema.md and semconv/columns.yaml describe it.
"""

from __future__ import annotations

import sqlite3

__all__ = ["MIGRATIONS", "ROW_START_NS", "ROW_WRITTEN_NS", "SCHEMA_VERSION", "SPAN_COLUMNS", "migrate"]

# Columns written for each span, in the order of the row tuples built by store.rows.
SPAN_COLUMNS: tuple[str, ...] = (
    "trace_id", "span_id", "parent_span_id", "name", "span_kind", "oi_span_kind", "status",
    "status_message", "start_ns", "end_ns", "duration_ns", "written_ns", "session_id", "user_id",
    "model", "prompt_tokens", "completion_tokens", "total_tokens", "tool_name", "pid",
    "attributes", "events", "links", "resource", "scope",
)  # fmt: skip
# Where a row tuple holds the columns read back before it is written (by name, never a number).
ROW_START_NS = SPAN_COLUMNS.index("start_ns")
ROW_WRITTEN_NS = SPAN_COLUMNS.index("written_ns")

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

# Each span's resource and instrumentation scope are stored once, in `resources` and `scopes`,
# and referred to by id: repeated on every row they were ~40 % of a small span's bytes. The rows
# move to `span_rows` (the columns of version 2's `spans`, the two ids in place of the two JSON
# texts, the same indexes), copied with their ids; `spans` becomes a view with the same columns in
# the same order, so every reader (SELECT * FROM spans, users' own SQL) reads what it read before.
# Create, copy, drop: ALTER TABLE ... DROP COLUMN needs SQLite 3.35 and would keep the old text.
# The view looks the two texts up in scalar subqueries, not LEFT JOINs: SQLite flattens it into
# the query and evaluates a subquery only for a query that reads `resource` or `scope`, so every
# other query has the plan it had on the table, covering indexes included. LEFT JOINs are left out
# of plain SELECTs only: count(*), min() and GROUP BY queries paid two lookups a row, and the
# join's columns made the covering indexes (count(*), DISTINCT trace_id) unusable
# (tests/unit/store/test_schema_migration.py compares the plans).
_V3 = """
CREATE TABLE resources (
    id                INTEGER PRIMARY KEY,
    json              TEXT    NOT NULL UNIQUE      -- JSON object of resource attributes
);
CREATE TABLE scopes (
    id                INTEGER PRIMARY KEY,
    json              TEXT    NOT NULL UNIQUE      -- JSON {name, version, schema_url}
);
INSERT OR IGNORE INTO resources (json) SELECT resource FROM spans ORDER BY id;
INSERT OR IGNORE INTO scopes (json) SELECT scope FROM spans ORDER BY id;
CREATE TABLE span_rows (
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
    resource_id       INTEGER REFERENCES resources (id),
    scope_id          INTEGER REFERENCES scopes (id),
    UNIQUE (trace_id, span_id)
);
INSERT INTO span_rows (
    id, trace_id, span_id, parent_span_id, name, span_kind, oi_span_kind, status, status_message,
    start_ns, end_ns, duration_ns, written_ns, session_id, user_id, model, prompt_tokens,
    completion_tokens, total_tokens, tool_name, pid, attributes, events, links, resource_id, scope_id
)
SELECT s.id, s.trace_id, s.span_id, s.parent_span_id, s.name, s.span_kind, s.oi_span_kind, s.status,
       s.status_message, s.start_ns, s.end_ns, s.duration_ns, s.written_ns, s.session_id, s.user_id,
       s.model, s.prompt_tokens, s.completion_tokens, s.total_tokens, s.tool_name, s.pid,
       s.attributes, s.events, s.links, r.id, c.id
FROM spans AS s
JOIN resources AS r ON r.json = s.resource
JOIN scopes AS c ON c.json = s.scope
ORDER BY s.id;
DROP TABLE spans;
CREATE INDEX spans_by_start   ON span_rows (start_ns);
CREATE INDEX spans_by_session ON span_rows (session_id, start_ns) WHERE session_id IS NOT NULL;
CREATE INDEX spans_by_kind    ON span_rows (oi_span_kind, start_ns) WHERE oi_span_kind IS NOT NULL;
CREATE INDEX spans_not_ok     ON span_rows (status, start_ns) WHERE status IN ('error', 'open');
CREATE VIEW spans AS
SELECT id, trace_id, span_id, parent_span_id, name, span_kind, oi_span_kind, status, status_message,
       start_ns, end_ns, duration_ns, written_ns, session_id, user_id, model, prompt_tokens,
       completion_tokens, total_tokens, tool_name, pid, attributes, events, links,
       coalesce((SELECT json FROM resources WHERE resources.id = span_rows.resource_id), '{}') AS resource,
       coalesce((SELECT json FROM scopes WHERE scopes.id = span_rows.scope_id), '{}') AS scope
FROM span_rows;
"""

# A run that no recorder made: `import` (its files, or a Phoenix URL) or `serve` (its address). A
# recording's source is NULL. Imported spans carry a negative pid, one per import, so no process's
# spans are ever attributed to an import's run (_store.ingest).
_V4 = """
ALTER TABLE recorders ADD COLUMN source TEXT;      -- NULL: a BlackboxSpanProcessor's recording
"""

# Content sent as OpenTelemetry log records (the Logs API: openai-v2 with EVENT_ONLY, Google ADK,
# Strands), kept beside the spans they name: only records that carry a span context are stored,
# one row each, read back by (trace id, span id) and deleted with their trace (retention, the size
# cap). A run counts what it wrote, dropped (its queue was full), skipped (no span context) and
# failed to write, as it does for spans. Written by _store.log_writer.
_V5 = """
CREATE TABLE logs (
    id                INTEGER PRIMARY KEY,
    trace_id          TEXT    NOT NULL,           -- 32 lowercase hex digits
    span_id           TEXT    NOT NULL,           -- 16 lowercase hex digits
    timestamp_ns      INTEGER NOT NULL,           -- the record's time (else when it was observed)
    event_name        TEXT,                       -- gen_ai.client.inference.operation.details, ...
    severity          TEXT,                       -- severity text, else the severity number's name
    body              TEXT    NOT NULL DEFAULT 'null',  -- JSON value
    attributes        TEXT    NOT NULL DEFAULT '{}',    -- JSON object
    pid               INTEGER,                    -- process that recorded the record
    written_ns        INTEGER NOT NULL
);
CREATE INDEX logs_by_span ON logs (trace_id, span_id);
ALTER TABLE recorders ADD COLUMN logs_written INTEGER NOT NULL DEFAULT 0;
ALTER TABLE recorders ADD COLUMN logs_dropped INTEGER NOT NULL DEFAULT 0;
ALTER TABLE recorders ADD COLUMN logs_skipped INTEGER NOT NULL DEFAULT 0;
ALTER TABLE recorders ADD COLUMN logs_write_errors INTEGER NOT NULL DEFAULT 0;
"""

# A long conversation's spans repeat it: a span's attributes or events of 2,048 characters or more
# of JSON are stored apart, cut at their JSON boundaries into nodes stored once by the hash of
# their content (_store.contents); the row keeps the root's id and a marker in its own column.
# The view gains the two ids; rows written before keep their text, read as they were. Spans the
# sender's SDK cut (its dropped counts in their attributes, kept in the row's text) get an index.
_V6 = """
CREATE TABLE contents (
    id                INTEGER PRIMARY KEY,
    hash              BLOB    NOT NULL UNIQUE,     -- blake2b-128 of the node's content
    kind              TEXT    NOT NULL CHECK (kind IN ('t', 'z', 'l')),  -- text, zlib text, list
    children          TEXT,                        -- a list: JSON array of content ids, in order
    data              BLOB                         -- a text: UTF-8 bytes (zlib-compressed for 'z')
);
CREATE TABLE content_sweeps (
    n                 INTEGER NOT NULL             -- passes of the sweep that deleted a node
);
INSERT INTO content_sweeps (n) VALUES (0);
ALTER TABLE span_rows ADD COLUMN attributes_content INTEGER;  -- root in contents, else NULL
ALTER TABLE span_rows ADD COLUMN events_content INTEGER;
CREATE INDEX spans_attributes_apart ON span_rows (attributes_content) WHERE attributes_content IS NOT NULL;
CREATE INDEX spans_events_apart ON span_rows (events_content) WHERE events_content IS NOT NULL;
CREATE INDEX spans_cut_by_sdk ON span_rows (start_ns) WHERE instr(attributes, '"blackbox.otlp.dropped_') > 0;
DROP VIEW spans;
CREATE VIEW spans AS
SELECT id, trace_id, span_id, parent_span_id, name, span_kind, oi_span_kind, status, status_message,
       start_ns, end_ns, duration_ns, written_ns, session_id, user_id, model, prompt_tokens,
       completion_tokens, total_tokens, tool_name, pid, attributes, events, links,
       coalesce((SELECT json FROM resources WHERE resources.id = span_rows.resource_id), '{}') AS resource,
       coalesce((SELECT json FROM scopes WHERE scopes.id = span_rows.scope_id), '{}') AS scope,
       attributes_content, events_content
FROM span_rows;
"""

# MIGRATIONS[i] upgrades a database from user_version i to i + 1.
MIGRATIONS: tuple[str, ...] = (_V1, _V2, _V3, _V4, _V5, _V6)
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
