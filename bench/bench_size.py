"""Bytes per span on disk for bench_recorder.py's workload (``otel_pairs``: nested AGENT / LLM
pairs, 5 attributes each, a 189-character input.value).

    python bench/bench_size.py [--spans 20000] [--db PATH] [--json out.json]

Records the spans with BlackboxSpanProcessor (its defaults, with room in the queue for all of
them) into a fresh file, shuts the provider down, runs ``PRAGMA wal_checkpoint(TRUNCATE)`` and
divides the size of the file (+ -wal + -shm) by the rows counted in ``spans``. Also: the size of
a VACUUMed copy (``VACUUM INTO``, for information: a recorder never vacuums a whole file), the
bytes of each table and index (dbstat) and the average stored row. Run it with an older source
first on PYTHONPATH to measure an older schema; it reads only ``spans``, and dbstat.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench_recorder import blackbox_config, otel_pairs, remove_db
from opentelemetry.sdk.trace import TracerProvider

from otel_blackbox import BlackboxSpanProcessor


def files_bytes(db: Path) -> int:
    return sum(p.stat().st_size for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm")) if p.exists())


def measure(db: Path, spans: int) -> dict[str, Any]:
    remove_db(db)
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(BlackboxSpanProcessor(config=blackbox_config(db, spans)))
    otel_pairs(provider.get_tracer("bench_recorder"), spans // 2)
    provider.shutdown()
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = files_bytes(db)
        (rows,) = conn.execute("SELECT count(*) FROM spans").fetchone()
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        (page_size,) = conn.execute("PRAGMA page_size").fetchone()
        (freelist,) = conn.execute("PRAGMA freelist_count").fetchone()
        table = "span_rows" if version >= 3 else "spans"
        objects = dict(conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"))
        (payload,) = conn.execute(
            "SELECT sum(payload) FROM dbstat WHERE name = ? AND pagetype IN ('leaf', 'overflow')", (table,)
        ).fetchone()
        vacuumed = db.with_name(db.name + ".vacuumed")
        remove_db(vacuumed)
        conn.execute("VACUUM INTO ?", (str(vacuumed),))
        vacuumed_size = vacuumed.stat().st_size
        remove_db(vacuumed)
    finally:
        conn.close()
    return {
        "schema_version": version,
        "spans": rows,
        "file_bytes": size,
        "bytes_per_span": size / rows,
        "vacuumed_bytes": vacuumed_size,
        "vacuumed_bytes_per_span": vacuumed_size / rows,
        "page_size": page_size,
        "freelist_pages": freelist,
        "row_payload_bytes_per_span": payload / rows,
        "objects_bytes_per_span": {name: round(b / rows, 1) for name, b in objects.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", type=int, default=20_000)
    parser.add_argument("--db", type=Path, help="where to write (default: a temporary folder)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = measure(args.db or Path(tmp) / "size.db", args.spans)
    print(f"schema version {result['schema_version']}: {result['spans']} spans")
    for label, size, per_span in (
        ("after wal_checkpoint(TRUNCATE)", result["file_bytes"], result["bytes_per_span"]),
        ("VACUUM INTO a copy", result["vacuumed_bytes"], result["vacuumed_bytes_per_span"]),
    ):
        print(f"  {label + ':':32}{size:,} bytes, {per_span:.1f} a span")
    print(f"  {'stored row payload:':32}{result['row_payload_bytes_per_span']:.1f} bytes a span")
    print(f"  page size {result['page_size']}, {result['freelist_pages']} free pages")
    for name, per_span in result["objects_bytes_per_span"].items():
        print(f"    {name:32} {per_span:8.1f} bytes a span")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
