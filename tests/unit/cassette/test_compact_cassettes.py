"""Cassettes in proportion to their run: ``.json.gz`` is gzip of the compact encoding
(``"encoding": "blackbox-shared-messages/1"``), in which a model_input's messages refer to an
earlier step's instead of repeating them. Decoded, it is exactly the v2 document (the same bytes
once saved as plain JSON, the same hashes), its shared messages the same Python objects; reading is
bounded in decompressed terms (a gzip bomb is refused without being inflated whole)."""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import VECTOR_NAMES, vector, vector_path

from otel_blackbox._cassette.compact import ENCODING, decode_document, encode_document
from otel_blackbox._cassette.io import load_cassette, read_text, save_cassette
from otel_blackbox._cassette.model import Cassette
from otel_blackbox._cassette.verify import verify_file
from otel_blackbox.errors import CassetteError

ROUNDS = 150
OUTPUT_BYTES = 2048


def _tool_output(round_: int) -> str:
    """2 KB of text that gzip cannot squeeze much (hex digests): its size on disk is honest."""
    digests = (hashlib.sha256(f"{round_}:{i}".encode()).hexdigest() for i in range(OUTPUT_BYTES // 64 + 1))
    return "".join(digests)[:OUTPUT_BYTES]


def long_run(rounds: int = ROUNDS) -> tuple[Cassette, int]:
    """An agent of ``rounds`` tool rounds, each model_input holding the whole conversation before it
    (as a recorder writes it: a fresh list each call), and the conversation's own bytes."""
    cassette = Cassette(id="long-run", created_at=1710460800000)
    tools = [{"name": "read_file", "description": "Read a file.", "inputSchema": {"type": "object"}}]
    system = "You are a careful coding agent; read before you edit. " * 4
    messages: list[Any] = [{"role": "user", "content": "Fix the failing test, please."}]
    ts = 1710460800000
    for n in range(rounds):
        payload = {"messages": copy.deepcopy(messages), "tools": tools, "systemPrompt": system, "model": "m"}
        cassette.append("model_input", payload, ts)
        call = {"toolCallId": f"call-{n}", "toolName": "read_file", "toolInput": {"path": f"f{n}.py"}}
        cassette.append(
            "model_output", {"type": "tool_calls", "calls": [call], "text": f"Reading {n}."}, ts + 1
        )
        cassette.append("tool_call", dict(call), ts + 2)
        result = _tool_output(n)
        cassette.append(
            "tool_result", {"toolCallId": f"call-{n}", "toolName": "read_file", "result": result}, ts + 3
        )
        messages.append({"role": "assistant", "content": [{"type": "tool_use", **call}]})
        messages.append({"role": "user", "content": [{"type": "tool_result", **call, "result": result}]})
        ts += 10
    cassette.append("model_input", {"messages": copy.deepcopy(messages), "tools": tools, "model": "m"}, ts)
    cassette.append("model_output", {"type": "final_answer", "text": "Fixed."}, ts + 1)
    cassette.append("metadata", {"event": "run_completed", "status": "success", "result": "Fixed."}, ts + 2)
    conversation = len(json.dumps([system, messages], ensure_ascii=False).encode())
    return cassette, conversation


@pytest.fixture(scope="module")
def long_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, int]:
    folder = tmp_path_factory.mktemp("long")
    cassette, conversation = long_run()
    plain, packed = folder / "run.json", folder / "run.json.gz"
    save_cassette(cassette, plain)
    save_cassette(cassette, packed)
    return plain, packed, conversation


@pytest.fixture
def roomy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plain file of the long run is the square of it: past the default limit."""
    monkeypatch.setenv("OTEL_BLACKBOX_MAX_CASSETTE_MB", "512")


def test_a_long_run_is_small_compressed_and_the_same_cassette(
    long_files: tuple[Path, Path, int], roomy: None
) -> None:
    plain, packed, conversation = long_files
    inflated = gzip.decompress(packed.read_bytes())
    assert json.loads(inflated)["encoding"] == ENCODING
    # On disk and decompressed, in proportion to the conversation; the plain file is its square.
    assert packed.stat().st_size <= 3 * conversation
    assert len(inflated) <= 3 * conversation
    assert plain.stat().st_size > 30 * conversation
    # Read back and saved as plain JSON: the very bytes of the plain file, and the other way round.
    again = packed.with_name("again.json")
    save_cassette(load_cassette(packed), again)
    assert again.read_bytes() == plain.read_bytes()
    repacked = packed.with_name("again.json.gz")
    save_cassette(load_cassette(plain), repacked)
    assert repacked.read_bytes() == packed.read_bytes()
    for path in (plain, packed):
        report = verify_file(path, expect_head=load_cassette(plain).head)
        assert report.passed, report.first_failure


def test_shared_messages_are_the_same_objects(long_files: tuple[Path, Path, int]) -> None:
    inputs = [s.payload for s in load_cassette(long_files[1]).steps_of("model_input")]
    first, last = inputs[1]["messages"], inputs[-1]["messages"]
    assert all(a is b for a, b in zip(first, last, strict=False))
    assert inputs[-1]["tools"] is inputs[0]["tools"]
    assert inputs[1]["systemPrompt"] is inputs[0]["systemPrompt"]


def test_the_plain_writer_is_json_dumps_step_by_step(tmp_path: Path) -> None:
    for name in VECTOR_NAMES:
        cassette = vector(name)
        save_cassette(cassette, tmp_path / "out.json")
        expected = json.dumps(cassette.to_json(), indent=2, ensure_ascii=False) + "\n"
        assert (tmp_path / "out.json").read_text(encoding="utf-8") == expected
    empty = Cassette(id="empty", created_at=0)
    save_cassette(empty, tmp_path / "empty.json")
    assert (tmp_path / "empty.json").read_text() == json.dumps(empty.to_json(), indent=2) + "\n"
    assert load_cassette(tmp_path / "empty.json") == empty


def test_the_vectors_read_alike_in_every_form(tmp_path: Path) -> None:
    for name in VECTOR_NAMES:
        original = load_cassette(vector_path(name))
        for target, compact in (("c.json.gz", None), ("c.json", True), ("p.json.gz", False)):
            save_cassette(original, tmp_path / target, compact=compact)
            assert load_cassette(tmp_path / target) == original
            assert verify_file(tmp_path / target).passed
    assert json.loads((tmp_path / "c.json").read_text())["encoding"] == ENCODING
    assert "encoding" not in json.loads(gzip.decompress((tmp_path / "p.json.gz").read_bytes()))


def test_a_gzip_file_under_another_name_reads(tmp_path: Path) -> None:
    save_cassette(vector("success-tool-use"), tmp_path / "run.json.gz")
    renamed = tmp_path / "run.json"
    (tmp_path / "run.json.gz").rename(renamed)
    assert load_cassette(renamed) == vector("success-tool-use")


def _one_line(exc: pytest.ExceptionInfo[CassetteError]) -> str:
    assert "\n" not in str(exc.value)
    return str(exc.value)


def test_truncated_or_corrupt_gzip_is_one_line(tmp_path: Path) -> None:
    save_cassette(vector("success-tool-use"), tmp_path / "run.json.gz")
    data = (tmp_path / "run.json.gz").read_bytes()
    cut, bad, plain_named_gz = tmp_path / "cut.json.gz", tmp_path / "bad.json.gz", tmp_path / "text.json.gz"
    cut.write_bytes(data[: len(data) // 2])
    bad.write_bytes(data[:20] + bytes(b ^ 0xFF for b in data[20:40]) + data[40:])
    plain_named_gz.write_text(vector_path("success-tool-use").read_text())
    with pytest.raises(CassetteError) as exc:
        load_cassette(cut)
    assert _one_line(exc) == f"{cut}: the gzip data is cut short (a truncated file)"
    for path in (bad, plain_named_gz):
        with pytest.raises(CassetteError, match=r"not valid gzip data") as exc:
            load_cassette(path)
        assert _one_line(exc).startswith(str(path))


def test_a_gzip_bomb_is_refused_without_inflating_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bomb = tmp_path / "bomb.json.gz"
    with gzip.open(bomb, "wb") as handle:
        handle.write(b'{"id": "x", "pad": "')
        for _ in range(64):  # 64 MB of spaces: a 64 KB file
            handle.write(b" " * 2**20)
        handle.write(b'"}')
    assert bomb.stat().st_size < 2**20
    with pytest.raises(CassetteError) as exc:
        load_cassette(bomb)
    limit = "more than the 32 MB limit once decompressed (OTEL_BLACKBOX_MAX_CASSETTE_MB)"
    assert _one_line(exc) == f"{bomb}: {limit}; not read further"
    monkeypatch.setenv("OTEL_BLACKBOX_MAX_CASSETTE_MB", "0.5")
    with pytest.raises(CassetteError, match=r"0\.5 MB limit once decompressed"):
        read_text(bomb)


def _compact(name: str = "success-tool-use") -> dict[str, Any]:
    """A vector's compact form with two model_inputs, the second taking the first's messages."""
    document = vector(name).to_json()
    encoded = encode_document(document)
    copied: dict[str, Any] = json.loads(json.dumps(encoded))  # as read from a file: nothing shared
    return copied


def _reference(document: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    for position, step in enumerate(document["steps"]):
        messages = step["payload"].get("messages") if step["type"] == "model_input" else None
        if isinstance(messages, dict) and "$prefix" in messages:
            return position, messages
    raise AssertionError("no prefix reference")


def test_tampering_with_a_shared_message_breaks_verify(tmp_path: Path) -> None:
    document = _compact()
    position, reference = _reference(document)
    shared_from = reference["$prefix"]["step"]
    document["steps"][shared_from]["payload"]["messages"][0]["content"] = "Book a hotel for Omega."
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(document))
    report = verify_file(path)
    assert not report.passed and report.first_failure is not None
    assert report.first_failure.name == "hash_chain" and report.first_failure.step_index == shared_from
    # Edited where it is shared, the later step sees the same message (it is not a copy).
    cassette = load_cassette(path)
    assert cassette.steps[position].payload["messages"][0]["content"] == "Book a hotel for Omega."


_NOT_EARLIER = "refers to step {}, which is not an earlier model_input step"
_COUNT = "takes the first {} of step 0's messages, which has 1 (a count from 1 to that)"


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        ({"$prefix": {"step": 4, "count": 1}, "then": []}, _NOT_EARLIER.format(4)),  # itself
        ({"$prefix": {"step": 8, "count": 1}, "then": []}, _NOT_EARLIER.format(8)),  # a later one
        ({"$prefix": {"step": 1, "count": 1}, "then": []}, _NOT_EARLIER.format(1)),  # a model_output
        ({"$prefix": {"step": "0", "count": 1}, "then": []}, _NOT_EARLIER.format("'0'")),
        ({"$prefix": {"step": 0, "count": 99}, "then": []}, _COUNT.format(99)),
        ({"$prefix": {"step": 0, "count": 0}, "then": []}, _COUNT.format(0)),
        ({"$prefix": {"step": 0, "count": True}, "then": []}, _COUNT.format(True)),
        ({"$prefix": {"step": 0, "count": 1}, "then": "x"}, "'then' must be a list"),
        ({"$same": 0, "then": []}, "in a compact cassette an object here is"),
    ],
)
def test_a_bad_reference_is_refused_in_one_line(tmp_path: Path, edit: Any, expected: str) -> None:
    document = _compact()
    position, _ = _reference(document)
    assert position == 4  # the vector's second model_input, taking step 0's one message
    document["steps"][position]["payload"]["messages"] = edit
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document))
    with pytest.raises(CassetteError) as exc:
        load_cassette(path)
    assert _one_line(exc).startswith(f"{path}: step 4: payload.messages: {expected}")


def test_an_unknown_encoding_is_refused() -> None:
    with pytest.raises(CassetteError, match=r"x\.json: encoding 'zip/9' is not supported"):
        decode_document({"encoding": "zip/9", "steps": []}, "x.json", max_bytes=2**20)


def test_a_plain_document_keeps_objects_that_look_like_references() -> None:
    """Without the encoding marker nothing is decoded; with it, an object member is escaped."""
    cassette = Cassette(id="odd", created_at=0)
    odd = {"$prefix": {"step": 0, "count": 1}, "then": []}
    cassette.append("model_input", {"messages": [{"role": "user", "content": "hi"}], "params": odd}, 0)
    cassette.append("model_input", {"messages": odd, "tools": [], "params": odd}, 1)
    plain = cassette.to_json()
    assert decode_document(plain, "p", max_bytes=2**20) is plain
    encoded = json.loads(json.dumps(encode_document(plain)))
    assert encoded["steps"][1]["payload"]["messages"] == {"$literal": odd}
    assert decode_document(encoded, "c", max_bytes=2**20) == plain


def _referring(first: list[Any], references: int) -> dict[str, Any]:
    """A compact document: step 0's messages, then ``references`` steps taking all of them."""
    steps: list[Any] = []
    for n in range(references + 1):
        messages = first if n == 0 else {"$prefix": {"step": 0, "count": len(first)}, "then": []}
        step = {"id": f"b:{n}", "index": n, "type": "model_input", "timestamp": n}
        steps.append({**step, "payload": {"messages": messages}, "prevHash": None, "hash": "0"})
    return {"version": 2, "encoding": ENCODING, "id": "b", "createdAt": 0, "steps": steps}


def test_references_that_rebuild_too_much_are_refused() -> None:
    """A small compact file whose references would rebuild a huge v2 document (what hashing it
    costs), or make too many shared elements (what holding it costs): refused early."""
    big = _referring([{"role": "user", "content": "x" * 100_000}], 3000)  # 300 MB of v2 from 100 KB
    with pytest.raises(CassetteError) as exc:
        decode_document(big, "b.json", max_bytes=2**20)
    assert _one_line(exc).startswith("b.json: step 2684: payload.messages: the compact cassette rebuilds")
    assert "(256 MB of v2 JSON and 262144 shared elements, from the 1 MB limit, " in str(exc.value)
    many = _referring([{}] * 1000, 300)  # 300,000 elements from 1,000
    with pytest.raises(CassetteError, match=r"step 263: payload.messages: the compact cassette rebuilds"):
        decode_document(many, "m.json", max_bytes=2**20)
    assert len(decode_document(big, "b.json", max_bytes=2**30)["steps"]) == 3001
