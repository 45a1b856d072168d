"""``import --from claude-code`` on long sessions, side by side with ``import`` of the same spans as
OTLP/JSON (the generic path every import takes): wall time, spans, and bytes on disk.

Run it as a script (it is not a test and asserts nothing about timing)::

    python bench/bench_transcripts.py [--turns 50 150 300] [--output-bytes 2000] [--rounds 3]

For each length N: a Claude Code session written here (2.0 shape: a prompt, then N rounds of a
response split over two records, text then a ``Bash`` tool use, and its result of ``--output-bytes``
bytes, then the answer), imported with ``import --from claude-code`` into a fresh database; the trace
is exported (``export --format otlp``) and that file imported into another fresh database. Each import
is a CLI process, as a user runs it; the best of ``--rounds`` is reported. Every LLM span holds the
conversation before it (as OpenInference records a request), so the bytes stored grow with N².
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CLI = [sys.executable, "-m", "otel_blackbox.cli"]
SESSION = "0c9a4d2e-7777-4888-9999-aaaabbbbcccc"


class SessionRecords:
    """A Claude Code session file (2.0 shape) record by record, each the child of the one before."""

    def __init__(self, session_id: str = SESSION) -> None:
        self.session_id = session_id
        self.records: list[dict[str, Any]] = []
        self.parent: str | None = None

    def add(self, kind: str, second: int, **fields: Any) -> None:
        uuid = f"{kind[0]}{len(self.records)}"
        stamp = f"2025-06-01T{10 + second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}.000Z"
        self.records.append(
            {"type": kind, "uuid": uuid, "parentUuid": self.parent, "sessionId": self.session_id,
             "timestamp": stamp, "isSidechain": False, "cwd": "/home/me/shop", "version": "2.0.31",
             "gitBranch": "main", **fields}
        )  # fmt: skip
        self.parent = uuid

    def assistant(self, second: int, message_id: str, block: dict[str, Any], context: int = 5000) -> None:
        usage = {"input_tokens": 10, "output_tokens": 30, "cache_read_input_tokens": context}
        message = {"id": message_id, "role": "assistant", "model": "claude-sonnet-4-5", "content": [block]}
        self.add("assistant", second, message={**message, "usage": usage})

    def text(self) -> str:
        return "".join(json.dumps(r) + "\n" for r in self.records)


def session(turns: int, output_bytes: int) -> str:
    written = SessionRecords()
    add, assistant = written.add, written.assistant
    add("user", 0, message={"role": "user", "content": "Tidy every module of the shop"})
    filler = ("x" * 79 + "\n") * (output_bytes // 80)
    for n in range(turns):
        assistant(3 * n + 1, f"msg_{n}", {"type": "text", "text": f"Step {n}: reading module {n}."})
        call = {"type": "tool_use", "id": f"toolu_{n}", "name": "Bash", "input": {"command": f"cat m{n}.py"}}
        assistant(3 * n + 1, f"msg_{n}", call)
        result = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": f"# module {n}\n{filler}"}
        add("user", 3 * n + 2, message={"role": "user", "content": [result]})
    assistant(3 * turns + 1, "msg_end", {"type": "text", "text": "Every module is tidy."})
    return written.text()


def timed(argv: list[str]) -> tuple[float, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1800, check=True)
    return time.perf_counter() - start, done.stdout


def measure(turns: int, output_bytes: int, rounds: int, folder: Path) -> dict[str, Any]:
    path = folder / f"{SESSION}.jsonl"
    path.write_text(session(turns, output_bytes))
    transcript_times, otlp_times = [], []
    spans = db_bytes = otlp_db_bytes = 0
    for n in range(rounds):
        db, otlp_db, otlp_file = folder / f"t{n}.db", folder / f"o{n}.db", folder / f"spans{n}.jsonl"
        seconds, out = timed([*CLI, "--db", str(db), "import", "--from", "claude-code", str(path), "--json"])
        transcript_times.append(seconds)
        spans = json.loads(out)["spans"]
        db_bytes = db.stat().st_size
        with otlp_file.open("w") as sink:
            env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
            argv = [*CLI, "--db", str(db), "export", "--format", "otlp"]
            subprocess.run(argv, stdout=sink, env=env, timeout=600, check=True)
        seconds, _ = timed([*CLI, "--db", str(otlp_db), "import", str(otlp_file), "--json"])
        otlp_times.append(seconds)
        otlp_db_bytes = otlp_db.stat().st_size
    best_t, best_o = min(transcript_times), min(otlp_times)
    return {
        "turns": turns,
        "session_mb": round(path.stat().st_size / 1e6, 2),
        "spans": spans,
        "transcript_s": round(best_t, 2),
        "otlp_s": round(best_o, 2),
        "ratio": round(best_t / best_o, 2),
        "db_mb": round(db_bytes / 1e6, 1),
        "otlp_db_mb": round(otlp_db_bytes / 1e6, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[50, 150, 300])
    parser.add_argument("--output-bytes", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    print(f"python {platform.python_version()}, {os.cpu_count()} cores; tool outputs {args.output_bytes} B")
    print("turns  session  spans  transcript  otlp   ratio  db      otlp db")
    results = []
    for turns in args.turns:
        with tempfile.TemporaryDirectory() as tmp:
            r = measure(turns, args.output_bytes, args.rounds, Path(tmp))
        results.append(r)
        print(
            f"{r['turns']:>5}  {r['session_mb']:>5} MB  {r['spans']:>5}  {r['transcript_s']:>8} s  "
            f"{r['otlp_s']:>4} s  {r['ratio']:>5}  {r['db_mb']:>5} MB  {r['otlp_db_mb']:>5} MB"
        )
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
