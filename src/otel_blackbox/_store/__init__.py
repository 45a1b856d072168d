"""The SQLite store: schema, connections, span snapshots and rows, the writer (in a thread or in the
writer process), queries, runs, retention, and ingest (how imported spans get in)."""
