"""Issue 48, small things met by a user: `import` of a transcript without --from names the --from that
reads it; a failed import leaves no database it made; messages take the article their word needs; a
huge span name is stored cut, as plain text, by the recorder and by `import`, and `list` prints it
bounded."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import Recorder, run_cli, write_jsonl

from otel_blackbox._render.words import with_article
from otel_blackbox._store.connection import connect_writer
from otel_blackbox._store.rows import MAX_NAME_CHARS

CHAT = {
    "model": "gpt-4o",
    "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "Sunny."},
    ],
}
CLAUDE_CODE = [
    {"type": "summary", "summary": "weather", "leafUuid": "a1"},
    {
        "type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s-1",
        "timestamp": "2025-10-01T10:00:00Z", "message": {"role": "user", "content": "Weather in Paris?"},
    },
]  # fmt: skip
CODEX = [
    {"timestamp": "2025-10-01T10:00:00Z", "type": "session_meta", "payload": {"id": "r-1", "cwd": "/tmp"}},
    {
        "timestamp": "2025-10-01T10:00:01Z",
        "type": "response_item",
        "payload": {"type": "message", "role": "user"},
    },
]
HUGE = 5 * 1024 * 1024  # a 5 MiB span name


def _files(db: Path) -> list[str]:
    return sorted(p.name for p in db.parent.glob(db.name + "*"))


@pytest.mark.parametrize(
    ("kind", "write"),
    [
        ("chat", lambda p: p.write_text(json.dumps(CHAT))),
        ("chat", lambda p: p.write_text(json.dumps(CHAT["messages"], indent=2))),  # a bare list, pretty
        ("chat", lambda p: write_jsonl(p, [CHAT, CHAT])),  # JSON Lines of chat logs
        ("claude-code", lambda p: write_jsonl(p, CLAUDE_CODE)),
        ("codex", lambda p: write_jsonl(p, CODEX)),
    ],
    ids=["chat-object", "chat-list", "chat-jsonl", "claude-code", "codex"],
)
def test_a_transcript_without_from_names_the_from_that_reads_it(
    tmp_path: Path, kind: str, write: Callable[[Path], Any]
) -> None:
    path = tmp_path / "transcript.json"
    write(path)
    db = tmp_path / "bb.db"
    done = run_cli("import", str(path), db=db)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"otel-blackbox: error: {path}") and line.endswith(f"import it with --from {kind}")
    assert _files(db) == []  # nothing stored: no database left behind
    # The hint is right: with it, the chat log is imported (the others here are too short to hold a turn).
    if kind == "chat":
        assert run_cli("import", "--from", kind, str(path), db=db).returncode == 0


def test_the_hint_for_standard_input_and_none_for_other_json(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    argv = [sys.executable, "-m", "otel_blackbox.cli", "--db", str(db), "import", "-"]
    done = subprocess.run(argv, input=json.dumps(CHAT), capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.strip().endswith("import it with --from chat")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"items": [1, 2, 3]}))
    done = run_cli("import", str(other), db=db)
    assert done.returncode == 2 and "not OTLP" in done.stderr and "--from" not in done.stderr
    assert _files(db) == []


def _spans(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM spans").fetchone()[0])


def test_a_failed_import_removes_only_the_database_it_made(
    tmp_path: Path, make_recorder: Callable[..., Recorder]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}\n')
    fresh = tmp_path / "fresh.db"
    assert run_cli("import", str(bad), db=fresh).returncode == 2
    assert _files(fresh) == []
    # A database that was there before stays, with what it held: spans, or nothing at all.
    recorded = tmp_path / "recorded.db"
    rec = make_recorder(path=recorded)
    with rec.tracer.start_as_current_span("kept"):
        pass
    rec.flush()
    assert run_cli("import", str(bad), db=recorded).returncode == 2
    assert recorded.exists() and _spans(recorded) == 1
    empty = tmp_path / "empty.db"
    connect_writer(empty).close()  # a database with no span
    assert run_cli("import", str(bad), db=empty).returncode == 2
    assert empty.exists()
    # The files before the bad one are stored and said: the new database stays.
    good = tmp_path / "good.jsonl"
    good.write_text(run_cli("export", "--format", "otlp", db=recorded, check=True).stdout)
    partly = tmp_path / "partly.db"
    done = run_cli("import", str(good), str(bad), db=partly)
    assert done.returncode == 2 and "imported 1 span" in done.stdout
    assert _spans(partly) == 1


def test_messages_take_the_article_of_their_word(tmp_path: Path) -> None:
    assert [with_article(w) for w in ("openai-chat", "anthropic", "openai-responses", "chat log")] == [
        "an openai-chat",
        "an anthropic",
        "an openai-responses",
        "a chat log",
    ]
    assert [with_article(w) for w in ("hour", "user", "one", "Euro", "item")] == [
        "an hour",
        "a user",
        "a one",
        "a Euro",
        "an item",
    ]
    path = tmp_path / "question.json"
    path.write_text(json.dumps({"messages": [{"role": "user", "content": "Weather in Paris?"}]}))
    done = run_cli("import", "--from", "chat", str(path), db=tmp_path / "bb.db")
    assert done.returncode == 2
    assert "an openai-chat chat log with no assistant turn" in done.stderr and " a openai" not in done.stderr
    done = run_cli("import", "--from", "chat", "--format", "anthropic", str(path), db=tmp_path / "bb.db")
    assert "an anthropic chat log with no assistant turn" in done.stderr


def _assert_bounded(db: Path, name: str) -> None:
    mark = f"… [truncated: {len(name):,} characters]"
    with sqlite3.connect(db) as conn:
        (stored,) = conn.execute("SELECT name FROM spans").fetchone()
    assert stored == name[:MAX_NAME_CHARS] + mark  # plain text, not the JSON marker of an attribute
    listed = run_cli("list", db=db, check=True).stdout.splitlines()
    assert len(listed) == 2 and len(listed[1]) < 400 and "blackbox.truncated" not in listed[1]
    assert json.loads(run_cli("list", "--json", db=db, check=True).stdout)[0]["root_name"] == stored


def test_a_huge_span_name_is_stored_cut_by_the_recorder(make_recorder: Callable[..., Recorder]) -> None:
    rec = make_recorder()
    name = "n" * HUGE
    with rec.tracer.start_as_current_span(name):
        pass
    rec.flush()
    _assert_bounded(rec.db_path, name)


def test_a_huge_span_name_is_stored_cut_by_import(tmp_path: Path) -> None:
    name = "i" * HUGE
    span = {
        "traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174", "name": name, "kind": 1,
        "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000001000000000",
    }  # fmt: skip
    path = tmp_path / "spans.jsonl"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}) + "\n")
    db = tmp_path / "bb.db"
    run_cli("import", str(path), db=db, check=True)
    _assert_bounded(db, name)
