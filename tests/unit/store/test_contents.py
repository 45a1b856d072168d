"""Long conversations stored once (schema version 6, _store.contents): what is read back is exactly
what was recorded, the room grows with the conversation, not its square, and no node is freed
while a row reaches it nor kept once none does (a walk of the store)."""

from __future__ import annotations

import json
import random
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from helpers import Recorder, run_cli
from opentelemetry.sdk.trace import SpanLimits

from otel_blackbox._store.connection import connect_reader, connect_writer
from otel_blackbox._store.content_split import Group, Piece, split_json
from otel_blackbox._store.contents import APART_CHARS, ContentReader, ContentWriter
from otel_blackbox._store.queries import iter_spans
from otel_blackbox._store.retention import delete_traces

LIFTED = SpanLimits(max_span_attributes=100_000, max_attribute_length=None)
WORDS = "def class return self value import from for in if else None True data item result count".split()  # noqa: SIM905


def _joined(piece: Piece) -> str:
    return piece if isinstance(piece, str) else "".join(_joined(p) for p in piece)


def _depth(piece: Piece) -> int:
    return 0 if isinstance(piece, str) else 1 + max((_depth(p) for p in piece), default=0)


def _messages(rounds: int, seed: int = 1) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You tidy code. " * 40}]
    messages.append({"role": "user", "content": "Tidy every module é ✓ 🚀"})
    for n in range(rounds):
        lines = [" ".join(rng.choice(WORDS) for _ in range(8)) for _ in range(40)]
        call = {"id": f"call_{n}", "name": "read_file", "arguments": json.dumps({"path": f"m{n}.py"})}
        messages.append({"role": "assistant", "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"call_{n}", "content": "\n".join(lines)})
    return messages


@pytest.mark.parametrize(
    "value",
    [
        {"messages": _messages(12), "model": "gpt-4o"},
        [_messages(3), {"deep": [[1, 2.5, None, True], {"a": '\\/"\u2028'}]}] * 20,
        {"input.value": json.dumps({"messages": _messages(10)}), "n": 1},
        {"input.value": json.dumps({"messages": _messages(10)}, indent=2, ensure_ascii=True)},
    ],
)
@pytest.mark.parametrize("indent", [None, 2])
def test_the_pieces_give_back_the_text_character_for_character(value: Any, indent: int | None) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    pieces = split_json(text)
    assert isinstance(pieces, Group) and _depth(pieces) >= 2  # cut, and cut inside
    assert _joined(pieces) == text


def test_a_string_holding_json_is_cut_inside_only_when_its_escapes_come_back_the_same() -> None:
    inner = json.dumps({"messages": _messages(10)}, ensure_ascii=False)  # é ✓ 🚀 as they are
    ours = json.dumps({"input.value": inner}, ensure_ascii=False)
    theirs = json.dumps({"input.value": inner})  # another encoder's escapes: the string stays one piece
    assert _depth(split_json(ours)) > _depth(split_json(theirs))
    assert _joined(split_json(theirs)) == theirs
    assert split_json("{not json " + "x" * APART_CHARS) == "{not json " + "x" * APART_CHARS


def test_a_text_stored_apart_reads_back_exactly_and_a_grown_one_adds_only_its_growth(tmp_path: Path) -> None:
    conn = connect_writer(tmp_path / "c.db")
    writer, reader = ContentWriter(conn), ContentReader(conn)
    conn.execute("BEGIN IMMEDIATE")
    writer.begin()
    texts = [json.dumps({"messages": _messages(n)}, ensure_ascii=False) for n in (40, 41, 80)]
    sizes = []
    for text in texts:
        before = conn.execute(
            "SELECT coalesce(sum(length(data)), 0) + coalesce(sum(length(children)), 0) FROM contents"
        ).fetchone()[0]
        assert reader.text(writer.store(text)) == text
        sizes.append(
            conn.execute(
                "SELECT coalesce(sum(length(data)), 0) + coalesce(sum(length(children)), 0) FROM contents"
            ).fetchone()[0]
            - before
        )
    conn.execute("COMMIT")
    assert writer.store(texts[0]) == writer.store(texts[0])  # stored once
    # One round more costs about its own message (~2 KB, compressed), not the 40 before it again.
    assert sizes[1] < len(texts[1]) - len(texts[0]) + 1500 and sizes[1] * 8 < sizes[0], sizes
    conn.close()


def _record(recorder: Recorder, rounds: int, *, tools: str) -> str:
    """An OpenInference-shaped agent of ``rounds`` model calls, each holding the conversation."""
    tracer = recorder.tracer
    messages = _messages(rounds)
    with tracer.start_as_current_span("agent") as root:
        root.set_attribute("openinference.span.kind", "AGENT")
        for n in range(rounds + 1):
            sent = messages[: 2 + 2 * n]
            with tracer.start_as_current_span("ChatCompletion") as span:
                span.set_attribute("openinference.span.kind", "LLM")
                span.set_attribute("llm.model_name", "gpt-4o")
                span.set_attribute("llm.tools.0.tool.json_schema", tools)
                for i, message in enumerate(sent):
                    prefix = f"llm.input_messages.{i}.message"
                    span.set_attribute(f"{prefix}.role", message["role"])
                    if "content" in message:
                        span.set_attribute(f"{prefix}.content", message["content"])
                    for j, call in enumerate(message.get("tool_calls", ())):
                        span.set_attribute(f"{prefix}.tool_calls.{j}.tool_call.function.name", call["name"])
                        span.set_attribute(
                            f"{prefix}.tool_calls.{j}.tool_call.function.arguments", call["arguments"]
                        )
                span.set_attribute("llm.output_messages.0.message.role", "assistant")
                span.set_attribute("llm.token_count.prompt_details.cache_read", 7 * n)
                span.add_event("sent", {"messages": json.dumps(sent)})
    recorder.flush()
    return format(root.get_span_context().trace_id, "032x")


def _walk(db: Path) -> tuple[set[int], set[int]]:
    """(the nodes some row reaches, every node stored), walked in Python, not by the sweep's SQL."""
    with closing(sqlite3.connect(db)) as conn:
        roots = [
            r
            for (r,) in conn.execute(
                "SELECT attributes_content FROM span_rows UNION SELECT events_content FROM span_rows"
            )
            if r is not None
        ]
        children = {
            i: json.loads(c) if c else [] for i, c in conn.execute("SELECT id, children FROM contents")
        }
    reached: set[int] = set()
    todo = list(roots)
    while todo:
        node = todo.pop()
        assert node in children, f"a row reaches node {node}, which is gone"
        if node not in reached:
            reached.add(node)
            todo += children[node]
    return reached, set(children)


def _bytes(db: Path) -> int:
    with closing(sqlite3.connect(db)) as conn:
        spans = conn.execute("SELECT sum(length(attributes) + length(events)) FROM span_rows").fetchone()[0]
        nodes = conn.execute(
            "SELECT coalesce(sum(length(data)), 0) + coalesce(sum(length(children)), 0) FROM contents"
        ).fetchone()[0]
    return int(spans + nodes)


def test_a_recorded_conversation_reads_back_whole_in_room_that_grows_with_its_length(tmp_path: Path) -> None:
    tools = json.dumps([{"name": "read_file", "description": "Reads a file. " * 200}])
    sizes = {}
    for rounds in (40, 80):
        db = tmp_path / f"{rounds}.db"
        recorder = Recorder(db, span_limits=LIFTED, retention="off")
        trace_id = _record(recorder, rounds, tools=tools)
        recorder.provider.shutdown()
        spans = [s for s in iter_spans(connect_reader(db), trace_id) if s.name == "ChatCompletion"]
        last = spans[-1]
        messages = _messages(rounds)
        assert last.attributes["llm.input_messages.0.message.content"] == messages[0]["content"]
        assert last.attributes["llm.tools.0.tool.json_schema"] == tools
        assert (
            last.attributes[f"llm.input_messages.{len(messages) - 1}.message.content"]
            == messages[-1]["content"]
        )
        assert json.loads(last.events[0]["attributes"]["messages"]) == messages
        assert len(last.attributes) == 5 + sum(2 if "content" in m else 3 for m in messages)
        with closing(sqlite3.connect(db)) as conn:
            apart = conn.execute(
                "SELECT count(*) FROM span_rows WHERE attributes_content IS NOT NULL"
            ).fetchone()[0]
        assert apart > rounds / 2
        sizes[rounds] = _bytes(db)
        reached, stored = _walk(db)
        assert reached <= stored
    assert sizes[80] < 2.5 * sizes[40]  # stored whole, each call's text: 4x


def test_export_gives_every_value_of_a_span_stored_apart_byte_for_byte(tmp_path: Path) -> None:
    db = tmp_path / "export.db"
    tools = json.dumps([{"name": "read_file", "description": "Reads a file. é ✓ \u2028 " * 100}])
    recorder = Recorder(db, span_limits=LIFTED, retention="off")
    trace_id = _record(recorder, 12, tools=tools)
    recorder.provider.shutdown()
    with closing(sqlite3.connect(db)) as conn:
        (span_id,) = conn.execute(
            "SELECT span_id FROM span_rows WHERE attributes_content IS NOT NULL"
            " ORDER BY start_ns DESC LIMIT 1"
        ).fetchone()
    messages = _messages(12)
    done = run_cli("--db", str(db), "export", "--format", "otlp", "--trace", trace_id, "-o", "-")
    assert done.returncode == 0, done.stderr
    spans = [s for line in done.stdout.splitlines() for r in json.loads(line)["resourceSpans"]
             for ss in r["scopeSpans"] for s in ss["spans"]]  # fmt: skip
    (span,) = [s for s in spans if s["spanId"] == span_id]
    values = {a["key"]: a["value"] for a in span["attributes"]}
    assert values["llm.tools.0.tool.json_schema"] == {"stringValue": tools}
    for i, message in enumerate(messages):
        if "content" in message:
            assert values[f"llm.input_messages.{i}.message.content"] == {"stringValue": message["content"]}
    (event,) = span["events"]
    assert event["attributes"] == [{"key": "messages", "value": {"stringValue": json.dumps(messages)}}]


def test_a_deleted_trace_frees_only_what_no_other_row_reaches(tmp_path: Path) -> None:
    db = tmp_path / "two.db"
    tools = json.dumps([{"name": "read_file", "description": "Reads a file. " * 200}])
    recorder = Recorder(db, span_limits=LIFTED, retention="off")
    first, second = _record(recorder, 20, tools=tools), _record(recorder, 25, tools=tools)
    recorder.provider.shutdown()
    kept = [(s.attributes, s.events) for s in iter_spans(connect_reader(db), second)]
    conn = connect_writer(db, create=False)
    conn.execute("BEGIN IMMEDIATE")
    delete_traces(conn, [first])
    conn.execute("COMMIT")
    reached, stored = _walk(db)
    assert reached == stored and stored  # the shared messages and tools stayed, the rest went
    assert [(s.attributes, s.events) for s in iter_spans(connect_reader(db), second)] == kept
    conn.execute("BEGIN IMMEDIATE")
    delete_traces(conn, [second])
    conn.execute("COMMIT")
    assert _walk(db) == (set(), set())
    conn.close()


def test_a_writer_stores_again_what_another_process_swept_meanwhile(tmp_path: Path) -> None:
    db = tmp_path / "swept.db"
    tools = json.dumps([{"name": "read_file", "description": "Reads a file. " * 200}])
    recorder = Recorder(db, span_limits=LIFTED, retention="off")
    first = _record(recorder, 15, tools=tools)
    with closing(connect_writer(db, create=False)) as conn:  # another connection than the writer's
        conn.execute("BEGIN IMMEDIATE")
        delete_traces(conn, [first])
        conn.execute("COMMIT")
    assert _walk(db) == (set(), set())
    second = _record(recorder, 15, tools=tools)  # the same content, from a writer that stored it once
    recorder.provider.shutdown()
    assert first != second
    spans = [s for s in iter_spans(connect_reader(db), second) if s.name == "ChatCompletion"]
    assert spans[-1].attributes["llm.tools.0.tool.json_schema"] == tools
    assert len(spans[-1].attributes) > 60
    reached, stored = _walk(db)
    assert reached == stored


def test_cleanup_sweeps_what_replaced_open_rows_left_behind(tmp_path: Path) -> None:
    db = tmp_path / "open.db"
    recorder = Recorder(db, span_limits=LIFTED, retention="off")
    with recorder.tracer.start_as_current_span("ChatCompletion") as span:
        for i, message in enumerate(_messages(10)):
            span.set_attribute(f"llm.input_messages.{i}.message.content", message.get("content", ""))
        recorder.flush()  # the open row, stored apart
        span.set_attribute("llm.output_messages.0.message.content", "done" * 3000)
    recorder.provider.shutdown()
    reached, stored = _walk(db)
    assert reached < stored  # the open row's root and top nodes: no row reaches them now
    assert run_cli("--db", str(db), "cleanup").returncode == 0
    reached_after, stored_after = _walk(db)
    assert reached_after == stored_after == reached
    with closing(connect_reader(db)) as conn:
        (span_read,) = iter_spans(conn)
    assert span_read.attributes["llm.output_messages.0.message.content"] == "done" * 3000
