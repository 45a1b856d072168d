"""The SQLite store: schema, connections, the writer thread, queries and retention."""
