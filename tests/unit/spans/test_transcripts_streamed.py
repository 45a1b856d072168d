"""Transcripts imported in bounded memory (issue 49): a conversation's spans are made a few at a time
(``otlp_documents``) and stored in batches bounded by count and by size (``_store.ingest``), and the
database holds exactly the rows the whole-document import stored.

Every LLM span holds the conversation before it, so a long session's spans at once are the square of
its length. The old import (each conversation one ``otlp_document``, span ids read back from it) is
kept reachable here as the reference; the tests set small bounds so that a mid-size session crosses
many documents and batches.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import stored_rows, write_jsonl

from otel_blackbox import BlackboxConfig
from otel_blackbox._cli.imports import _from_file, _store_traces
from otel_blackbox._spans.transcripts import otlp
from otel_blackbox._spans.transcripts.otlp import Conversation, Keys, ToolCall, Turn
from otel_blackbox._spans.transcripts.traces import (
    TranscriptBatch,
    chat_traces,
    claude_code_traces,
    codex_traces,
)
from otel_blackbox._store import ingest
from otel_blackbox._store.ingest import Importer
from otel_blackbox._store.snapshot import queued_bytes

SESSION = "7a1c9e3b-2222-4333-8444-955566667777"
WORDS = tuple(
    "order cart item price stock refund ship label queue retry cache token parse render index "  # noqa: SIM905
    "merge split batch limit offset cursor filter sort group count total amount invoice tax".split()
)


def words(rng: random.Random, size: int) -> str:
    """About ``size`` characters of seeded random words over lines: text that compresses as prose."""
    out: list[str] = []
    length = 0
    while length < size:
        line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12)))
        out.append(line)
        length += len(line) + 1
    return "\n".join(out)


# --- transcripts of each kind ----------------------------------------------------------------------


def _stamp(second: int) -> str:
    return f"2025-10-01T{9 + second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}.000Z"


def claude_records(rounds: int, output: int, *, side: bool = False) -> list[dict[str, Any]]:
    """A Claude Code session: a prompt, per round a text and a tool use (split over two records of one
    response) and the result (every seventh an error), the answer; ``side``: a subagent's file."""
    rng = random.Random(7 if side else 3)
    extra = {"isSidechain": True, "agentId": "a1b2c3d4"} if side else {"isSidechain": False}
    records: list[dict[str, Any]] = []

    def add(kind: str, second: int, **fields: Any) -> None:
        uuid = f"{'s' if side else 'm'}{len(records)}"
        parent = records[-1]["uuid"] if records else None
        records.append({"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": SESSION,
                        "timestamp": _stamp(second), "cwd": "/home/me/shop", "version": "2.0.31", **extra,
                        **fields})  # fmt: skip

    def assistant(second: int, message_id: str, block: dict[str, Any]) -> None:
        usage = {"input_tokens": 10, "output_tokens": 20, "cache_read_input_tokens": 100 + second}
        message = {"id": message_id, "role": "assistant", "model": "claude-sonnet-4-5", "content": [block]}
        add("assistant", second, message={**message, "usage": usage})

    add("user", 0, message={"role": "user", "content": words(rng, 200)})
    for n in range(rounds):
        call_id = f"toolu_{'s' if side else 'm'}{n}"
        assistant(3 * n + 1, f"msg_{n}", {"type": "text", "text": words(rng, 80)})
        assistant(3 * n + 1, f"msg_{n}", {"type": "tool_use", "id": call_id, "name": "Bash",
                                          "input": {"command": f"cat m{n}.py"}})  # fmt: skip
        result = {"type": "tool_result", "tool_use_id": call_id, "content": words(rng, output),
                  "is_error": n % 7 == 6}  # fmt: skip
        add("user", 3 * n + 2, message={"role": "user", "content": [result]})
    assistant(3 * rounds + 1, "msg_end", {"type": "text", "text": words(rng, 120)})
    return records


def codex_records(rounds: int, output: int) -> list[dict[str, Any]]:
    """A Codex rollout (the current shape): session, context, prompt, per round reasoning, a message,
    a shell call, token counts and its output (every fifth a non-zero exit code), the answer."""
    rng = random.Random(5)

    def line(second: int, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": _stamp(second), "type": kind, "payload": payload}

    def message(role: str, text: str) -> dict[str, Any]:
        part = "output_text" if role == "assistant" else "input_text"
        return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}

    def usage(given: int) -> dict[str, Any]:
        last = {"input_tokens": given, "cached_input_tokens": given // 2, "output_tokens": 30,
                "reasoning_output_tokens": 5, "total_tokens": given + 30}  # fmt: skip
        return {"type": "token_count", "info": {"total_token_usage": last, "last_token_usage": last}}

    meta = {"id": SESSION, "timestamp": _stamp(0), "cwd": "/home/me/shop", "cli_version": "0.46.0",
            "instructions": None}  # fmt: skip
    out = [
        line(0, "session_meta", meta),
        line(0, "response_item", message("user", "<user_instructions>Be brief.</user_instructions>")),
        line(1, "turn_context", {"cwd": "/home/me/shop", "model": "gpt-5-codex"}),
        line(1, "response_item", message("user", words(rng, 200))),
    ]
    for n in range(rounds):
        second = 2 + 3 * n
        arguments = json.dumps({"command": ["cat", f"m{n}.py"], "workdir": "/home/me/shop"})
        result = {"output": words(rng, output), "metadata": {"exit_code": int(n % 5 == 4)}}
        out += [
            line(second, "response_item", {"type": "reasoning", "summary": [], "encrypted_content": "gA"}),
            line(second, "response_item", message("assistant", words(rng, 80))),
            line(second, "response_item", {"type": "function_call", "name": "shell", "arguments": arguments,
                                           "call_id": f"call_{n}"}),
            line(second, "event_msg", usage(1000 + 500 * n)),
            line(second + 1, "response_item", {"type": "function_call_output", "call_id": f"call_{n}",
                                               "output": json.dumps(result)}),
        ]  # fmt: skip
    out.append(line(3 * rounds + 2, "response_item", message("assistant", words(rng, 120))))
    return out


def chat_logs(logs: int, rounds: int, output: int) -> list[dict[str, Any]]:
    """OpenAI Chat logs, one a line: system, user, per round a tool call and its result, the answer."""
    rng = random.Random(11)
    out = []
    for k in range(logs):
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": words(rng, 150)},
            {"role": "user", "content": words(rng, 100)},
        ]
        for n in range(rounds):
            arguments = json.dumps({"path": f"m{n}.py"})
            call = {"id": f"call_{k}_{n}", "type": "function",
                    "function": {"name": "read_file", "arguments": arguments}}  # fmt: skip
            messages.append({"role": "assistant", "content": words(rng, 60), "tool_calls": [call]})
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": words(rng, output)})
        messages.append({"role": "assistant", "content": words(rng, 100)})
        out.append({"model": "gpt-4o", "messages": messages})
    return out


def batches_of(kind: str, tmp_path: Path, rounds: int) -> list[TranscriptBatch]:
    if kind == "claude-code":
        main = write_jsonl(tmp_path / "project" / f"{SESSION}.jsonl", claude_records(rounds, 1500))
        side = write_jsonl(
            tmp_path / "project" / SESSION / "subagents" / "agent-a1b2c3d4.jsonl",
            claude_records(rounds // 3, 900, side=True),
        )
        return claude_code_traces([main, side])
    if kind == "codex":
        return codex_traces([write_jsonl(tmp_path / f"rollout-{SESSION}.jsonl", codex_records(rounds, 1500))])
    raw = "".join(json.dumps(r) + "\n" for r in chat_logs(3, rounds // 2, 1500)).encode()
    return chat_traces(raw, "chats.jsonl", None, 1_700_000_000_000_000_000)


# --- the old import, as the reference ----------------------------------------------------------------


def rows(db: Path) -> list[dict[str, Any]]:
    """Every span row, as a dict (attributes and events stored apart read back)."""
    return [dict(r) for r in stored_rows(db)]


def whole_span_ids(documents: list[dict[str, Any]]) -> dict[str, set[str]]:
    """The span ids of each trace in whole documents (what the old import replaced by)."""
    found: dict[str, set[str]] = {}
    for document in documents:
        for resource in document["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    found.setdefault(span["traceId"], set()).add(span["spanId"])
    return found


def old_import(db: Path, batches: list[TranscriptBatch]) -> None:
    """Every conversation one whole document, made before storing; one batch of up to 512 spans."""
    importer = Importer(BlackboxConfig(db_path=db), "import reference")
    try:
        for batch in batches:
            documents = [
                otlp.otlp_document(p.conversation, p.keys, p.base_ns, parent=p.parent) for p in batch.parts
            ]
            replace = whole_span_ids(documents) if batch.keyed_by_session else None
            importer.store(batch.label, [(None, d) for d in documents], replace=replace)
    finally:
        importer.close()


def new_import(db: Path, batches: list[TranscriptBatch]) -> Importer:
    importer = Importer(BlackboxConfig(db_path=db), "import reference")
    try:
        _store_traces(importer, batches)
    finally:
        importer.close()
    return importer


@pytest.fixture
def small_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Documents of 5 spans or 24 KB, batches of 7 spans or 96 KB: a mid-size session crosses many."""
    monkeypatch.setattr(otlp, "DOCUMENT_SPANS", 5)
    monkeypatch.setattr(otlp, "DOCUMENT_BYTES", 24 * 1024)
    monkeypatch.setattr(ingest, "_BATCH", 7)
    monkeypatch.setattr(ingest, "_BATCH_BYTES", 96 * 1024)


# --- the same rows -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["claude-code", "codex", "chat"])
def test_streamed_import_stores_exactly_the_rows_of_the_whole_document_import(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches = batches_of(kind, tmp_path, 40)
    old_import(tmp_path / "old.db", batches)
    with monkeypatch.context() as patch:
        patch.setattr(otlp, "DOCUMENT_SPANS", 5)
        patch.setattr(otlp, "DOCUMENT_BYTES", 24 * 1024)
        patch.setattr(ingest, "_BATCH", 7)
        patch.setattr(ingest, "_BATCH_BYTES", 96 * 1024)
        assert sum(1 for b in batches for _ in b.documents()) > 10  # many documents, not one a part
        new_import(tmp_path / "new.db", batches)
    old, new = rows(tmp_path / "old.db"), rows(tmp_path / "new.db")
    assert len(old) > 60 and new == old
    assert {r["name"] for r in new} >= {
        "Bash" if kind == "claude-code" else "shell" if kind == "codex" else "read_file"
    }


@pytest.mark.parametrize("kind", ["claude-code", "codex", "chat"])
def test_the_span_ids_a_grown_session_is_replaced_by_are_named_without_making_the_spans(
    kind: str, tmp_path: Path
) -> None:
    for batch in batches_of(kind, tmp_path, 12):
        whole = [otlp.otlp_document(p.conversation, p.keys, p.base_ns, parent=p.parent) for p in batch.parts]
        assert batch.replace() == (whole_span_ids(whole) if batch.keyed_by_session else None)
        streamed = [s for d in batch.documents() for s in d["resourceSpans"][0]["scopeSpans"][0]["spans"]]
        assert streamed == [s for d in whole for s in d["resourceSpans"][0]["scopeSpans"][0]["spans"]]


def test_span_ids_count_compactions_errors_and_calls_with_no_result() -> None:
    call = ToolCall("c1", "read", "{}")
    turns = (
        Turn("user", "go"),
        Turn("assistant", "", tool_calls=(call, ToolCall("c2", "read", "{}"))),  # c2: never answered
        Turn("tool", "done", call_id="c1"),
        Turn("compaction"),
        Turn("assistant", "failed", is_error=True),
        Turn("assistant", "", tool_calls=(ToolCall("", "grep", "{}"),)),
        Turn("tool", "found", name="grep"),  # no id: matched by name
        Turn("assistant", "done"),
    )
    conversation = Conversation(turns, source="chat")
    keys = Keys("trace key", "span key")
    for parent in (None, ("ab" * 16, "cd" * 8)):
        document = otlp.otlp_document(conversation, keys, 0, parent=parent)
        ((trace_id, ids),) = whole_span_ids([document]).items()
        assert otlp.conversation_span_ids(conversation, keys, parent=parent) == (trace_id, ids)
        assert len(ids) == 1 + 4 + 2


# --- bounded -------------------------------------------------------------------------------------


class Counting:
    """Spans made (otlp._span) and spans handed to the store's writes (Importer._write), the made
    count noted at each write."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.made = 0
        self.written = 0
        self.writes: list[tuple[int, int, int, list[int]]] = []  # (made, written before, batch, sizes)
        span, write = otlp._span, Importer._write

        def counted_span(*args: Any, **kwargs: Any) -> dict[str, Any]:
            self.made += 1
            return span(*args, **kwargs)

        def counted_write(
            importer: Importer, conn: Any, inserter: Any, rows: Any, batch: Any, *a: Any, **k: Any
        ) -> None:
            self.writes.append((self.made, self.written, len(batch), [queued_bytes(s) for s, _ in batch]))
            self.written += len(batch)
            write(importer, conn, inserter, rows, batch, *a, **k)

        monkeypatch.setattr(otlp, "_span", counted_span)
        monkeypatch.setattr(Importer, "_write", counted_write)


def test_a_long_session_is_imported_with_a_bounded_number_of_spans_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_bounds: None
) -> None:
    batches = batches_of("claude-code", tmp_path, 150)
    counting = Counting(monkeypatch)
    importer = new_import(tmp_path / "long.db", batches)
    assert importer.total.spans == counting.made == counting.written > 300
    full = [w for w in counting.writes if w[2]]
    assert len(full) > 40
    for made, written_before, size, sizes in full:
        # made and not yet written: this batch, and at most the rest of one document
        assert made - written_before - size < otlp.DOCUMENT_SPANS
        assert size <= ingest._BATCH
        assert sum(sizes[:-1]) < ingest._BATCH_BYTES  # full once past the bytes, never later
    # the late LLM spans (each the whole conversation before it) end batches by their size
    assert any(size < ingest._BATCH and sum(sizes) >= ingest._BATCH_BYTES for _, _, size, sizes in full)


def otlp_lines(batches: list[TranscriptBatch]) -> Iterator[str]:
    for batch in batches:
        for document in batch.documents():
            yield json.dumps(document) + "\n"


def test_an_otlp_file_of_many_lines_is_stored_in_bounded_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_bounds: None
) -> None:
    batches = batches_of("codex", tmp_path, 60)
    path = tmp_path / "spans.jsonl"
    path.write_text("".join(otlp_lines(batches)))
    counting = Counting(monkeypatch)
    importer = Importer(BlackboxConfig(db_path=tmp_path / "otlp.db"), "import spans")
    try:
        counts = _from_file(importer, str(path))
    finally:
        importer.close()
    full = [w for w in counting.writes if w[2]]
    assert counts.spans == counting.written > 120 and len(full) > 15
    assert all(size <= ingest._BATCH and sum(sizes[:-1]) < ingest._BATCH_BYTES for _, _, size, sizes in full)
    reference = tmp_path / "reference.db"
    old_import(reference, batches)
    assert rows(tmp_path / "otlp.db") == rows(reference)
