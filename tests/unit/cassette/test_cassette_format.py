"""The v2 format: the published vectors read, verify and rehash exactly; canonical JSON matches JavaScript."""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import shutil
import stat
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import VECTOR_NAMES, vector, vector_path

from otel_blackbox import _atomic as atomic
from otel_blackbox._cassette import io as cassette_io
from otel_blackbox._cassette.canonical import CanonicalError, canonical_json, hash_step
from otel_blackbox._cassette.io import load_cassette, save_cassette
from otel_blackbox._cassette.model import Cassette, terminal_outcome, tool_call_sequence
from otel_blackbox._cassette.verify import CHECK_NAMES, verify_cassette, verify_file

VECTORS = VECTOR_NAMES

# The last step's hash of each vector as the TypeScript tool published it: pinned here so that editing a
# vector together with its hashes still fails.
PUBLISHED_HEADS = {
    "success-tool-use": "ad95eb1808b8dd4d680a57a64d1da3ae568654bad327ccc756aa525e9d3dbc2f",
    "error-unknown-tool": "3728bf094854fa68466a5370fd68c929a64e65ef2a880eaeea0305a47558103d",
    "fork-parent": "ad95eb1808b8dd4d680a57a64d1da3ae568654bad327ccc756aa525e9d3dbc2f",
    "fork-child": "dc359be40a52aa2e1488d5b3233b30a8b8da3d1dc43708b02300e8a819bcf4bc",
}


# -- the vectors ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", VECTORS)
def test_vector_loads_and_passes_all_four_checks(name: str) -> None:
    for report in (verify_cassette(vector(name)), verify_file(vector_path(name))):
        assert [(c.name, c.status) for c in report.checks] == [(n, "pass") for n in CHECK_NAMES]
        assert report.passed and report.first_failure is None


@pytest.mark.parametrize("name", VECTORS)
def test_vector_rehashes_to_its_published_hashes(name: str) -> None:
    cassette = vector(name)
    for step in cassette.steps:
        assert hash_step(step.index, step.type, step.timestamp, step.payload, step.prev_hash) == step.hash
    assert cassette.head == PUBLISHED_HEADS[name]


@pytest.mark.parametrize("name", VECTORS)
def test_appending_the_vector_steps_rebuilds_the_same_chain(name: str) -> None:
    original = vector(name)
    rebuilt = Cassette(
        original.id,
        original.created_at,
        parent_id=original.parent_id,
        forked_from_step_id=original.forked_from_step_id,
    )
    for step in original.steps:
        rebuilt.append(step.type, step.payload, step.timestamp)
    assert rebuilt.to_json() == original.to_json()


def test_fork_parent_equals_success_tool_use_step_for_step_by_hash() -> None:
    parent, success = vector("fork-parent"), vector("success-tool-use")
    assert parent.id != success.id
    assert [s.hash for s in parent.steps] == [s.hash for s in success.steps]
    assert [s.id for s in parent.steps] != [s.id for s in success.steps]  # ids are not hashed


def test_fork_child_shares_the_parent_prefix_up_to_the_replaced_result() -> None:
    parent, child = vector("fork-parent"), vector("fork-child")
    assert (child.parent_id, child.forked_from_step_id) == (parent.id, parent.steps[4].id)
    assert [s.hash for s in child.steps[:3]] == [s.hash for s in parent.steps[:3]]
    assert child.steps[3].type == "tool_result" and child.steps[3].hash != parent.steps[3].hash


@pytest.mark.parametrize(
    ("name", "status", "answer", "reason", "tools"),
    [
        ("success-tool-use", "success", "Hotel booked for Alice on 2024-03-15 at 14:00.", None,
         ["search", "calendar", "booking"]),
        ("error-unknown-tool", "error", None, "unknown_tool", ["flights"]),
        ("fork-child", "success", "No hotels available for Alice this weekend. The area is fully booked "
         "\u2014 consider a different date.", None, ["search"]),
    ],
)  # fmt: skip
def test_terminal_outcome_and_tools_as_the_vectors_readme_states(
    name: str, status: str, answer: str | None, reason: str | None, tools: list[str]
) -> None:
    cassette = vector(name)
    outcome = terminal_outcome(cassette)
    assert (outcome.status, outcome.final_answer, outcome.failure_reason) == (status, answer, reason)
    assert tool_call_sequence(cassette) == tools


# -- canonical JSON ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1.0, "1"),
        (1e21, "1e+21"),
        (1e-7, "1e-7"),
        (1e-6, "0.000001"),
        (1e16, "10000000000000000"),
        (-0.0, "0"),
        (0.1 + 0.2, "0.30000000000000004"),
        (1.5e300, "1.5e+300"),
        (-1.23e-18, "-1.23e-18"),
        (2**53, "9007199254740992"),
        (2**53 + 1, "9007199254740992"),  # JavaScript has only the double
        (2**60, "1152921504606847000"),  # shortest digits, then zeros: not the exact 1152921504606846976
        (10**21, "1e+21"),
        ({"\uff61": 1, "\U0001f600": 2}, '{"\U0001f600":2,"\uff61":1}'),  # UTF-16: U+D83D < U+FF61
        ({"b": 1, "a": {"d": [], "c": None}}, '{"a":{"c":null,"d":[]},"b":1}'),
        ("\ud800", '"\\ud800"'),
        ("a\udfffb", '"a\\udfffb"'),
        ([[1, [2.0, []]], {}, [True, False, None]], "[[1,[2,[]]],{},[true,false,null]]"),
        ("\n\t\x01\x7f\u2028é", '"\\n\\t\\u0001\x7f\u2028é"'),
    ],
)
def test_canonical_json_corner_cases(value: Any, expected: str) -> None:
    assert canonical_json(value) == expected


@pytest.mark.parametrize(
    ("number", "written"),
    [(2**60, "1152921504606847000"), (3.0, "3"), (2.5e-7, "2.5e-7"), (1e16, "10000000000000000"), (7, "7")],
)
def test_a_long_text_is_canonical_wherever_its_numbers_are(number: Any, written: str) -> None:
    # Megabytes of prose with "1.0", "e-" and long digit runs inside strings, and one number that the
    # C encoder writes otherwise than JavaScript, deep inside: found where numbers are, not in the prose.
    prose = "version 1.0 of the e-mail tool, id 12345678901234567890; " * 200
    value = {"messages": [{"content": prose, "n": i} for i in range(20)] + [{"deep": [{"x": number}]}]}
    expected = '{"messages":[' + ",".join(f'{{"content":"{prose}","n":{i}}}' for i in range(20))
    assert canonical_json(value) == expected + f',{{"deep":[{{"x":{written}}}]}}]}}'
    assert canonical_json([number]) == f"[{written}]" and canonical_json(number) == written


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, {"x": [math.nan]}, object(), b"x", {1, 2}])
def test_canonical_json_refuses_what_has_no_json_form(value: Any) -> None:
    with pytest.raises(CanonicalError):
        canonical_json(value)


@pytest.mark.parametrize("value", [{1: 2}, {1: 2.0}, {"a": {None: "x"}}])
def test_canonical_json_refuses_a_non_string_key_whatever_the_values(value: Any) -> None:
    with pytest.raises(CanonicalError):
        canonical_json(value)


def test_step_hash_excludes_id_and_hash_and_covers_every_hashed_field() -> None:
    base = hash_step(1, "tool_call", 5, {"a": 1}, "p")
    assert base == hash_step(1, "tool_call", 5.0, {"a": 1.0}, "p")  # the same JSON
    variants = [(2, "tool_call", 5, {"a": 1}, "p"), (1, "metadata", 5, {"a": 1}, "p"),
                (1, "tool_call", 6, {"a": 1}, "p"), (1, "tool_call", 5, {"a": 2}, "p"),
                (1, "tool_call", 5, {"a": 1}, None)]  # fmt: skip
    assert all(hash_step(*v) != base for v in variants)


# The JavaScript algorithm of the TypeScript tool's src/trace/hash.ts, over a JSON array read from stdin.
_NODE_CANONICAL = r"""
const serialize = (v) => {
  if (v === null) return "null";
  if (Array.isArray(v)) return "[" + v.map(serialize).join(",") + "]";
  if (typeof v === "number") {
    if (!Number.isFinite(v)) throw new Error("non-finite");
    return JSON.stringify(v);
  }
  if (typeof v === "boolean" || typeof v === "string") return JSON.stringify(v);
  return "{" + Object.keys(v).sort().map((k) => JSON.stringify(k) + ":" + serialize(v[k])).join(",") + "}";
};
let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => process.stdout.write(JSON.stringify(JSON.parse(input).map(serialize))));
"""

_KEY_POOL = [
    "a",
    "B",
    "_",
    "10",
    "9",
    "",
    "é",
    "\uff61",
    "\U0001f600",
    "\ud800",
    "\udc00x",
    "__proto__",
    "a b",
]
_TRICKY = [
    0, -0.0, 1.0, 0.5, -1.5, 1e21, 1e-7, 1e-6, 1e16, 1e20, 123456789012345680000, 2**53, 2**53 + 1, 2**60,
    -(2**64), 10**25, 5e-324, 1.7976931348623157e308, 2.2250738585072014e-308, 0.1, 1 / 3, 100, 1e300,
    "", "\ud800", "\udbff\udfff", "\U0001f600", "\x00\x1f\x7f\u2028\u2029", '"\\/', "\ufeff", "é",
    {"b": [1, {"z": None, "y": True}], "a": []}, {k: i for i, k in enumerate(_KEY_POOL)}, [[[[]]]],
]  # fmt: skip


def _random_double(rng: random.Random) -> float:
    while True:
        value: float = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        if math.isfinite(value):
            return value


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    pick = rng.randrange(8 if depth < 3 else 5)
    if pick == 0:
        return _random_double(rng)
    if pick == 1:
        return round(rng.uniform(-1e6, 1e6), rng.randrange(8))  # decimal-looking numbers
    if pick == 2:
        return rng.randrange(-(2**70), 2**70) >> rng.randrange(70)  # integers, exact and beyond 2**53
    if pick == 3:
        return rng.choice([1e-7, 1e21, 1e-6, 1e20]) * rng.uniform(0.5, 20)  # around the layout boundaries
    if pick == 4:
        return "".join(rng.choice(_KEY_POOL) for _ in range(rng.randrange(4)))
    if pick == 5:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(_KEY_POOL) + str(rng.randrange(3)): _random_value(rng, depth + 1) for _ in range(4)}


def _corpus() -> list[Any]:
    rng = random.Random(20240315)
    return _TRICKY + [_random_value(rng) for _ in range(3000)]


@pytest.mark.skipif(
    shutil.which("node") is None, reason="node is not installed: no JavaScript to compare with"
)
def test_canonical_json_is_byte_identical_to_the_javascript_algorithm() -> None:
    text = json.dumps(_corpus())  # ASCII: lone surrogates travel as \ud800 escapes
    node = str(shutil.which("node"))
    run = subprocess.run([node, "-e", _NODE_CANONICAL], input=text.encode("ascii"), capture_output=True,
                         timeout=120, check=True)  # fmt: skip
    expected: list[str] = json.loads(run.stdout.decode("utf-8"))
    # Parse the same text as node did (ints beyond 2**53 stay ints here: canonical_json must match anyway).
    values = json.loads(text)
    assert len(expected) == len(values)
    for value, js in zip(values, expected, strict=True):
        py = canonical_json(value)
        assert py.encode("utf-8") == js.encode("utf-8", "surrogatepass"), (value, py, js)


# -- saving --------------------------------------------------------------------------------------


def test_save_then_load_round_trips_and_keeps_the_hashes(tmp_path: Path) -> None:
    original = vector("fork-child")
    tricky = Cassette("tricky", 1.5)
    tricky.append(
        "tool_result", {"toolCallId": "call-0", "toolName": "t", "result": "\ud800 \U0001f600 \u2028"}, 2**60
    )
    for cassette in (original, tricky):
        path = tmp_path / f"{cassette.id}.json"
        save_cassette(cassette, path)
        loaded = load_cassette(path)
        assert loaded.to_json() == cassette.to_json()
        assert all(step.expected_hash() == step.hash for step in loaded.steps)
    text = (tmp_path / f"{original.id}.json").read_text(encoding="utf-8")
    assert text.startswith('{\n  "version": 2,\n  "id": ') and text.endswith("}\n")


class _FailingHalfway:
    """A file handle that writes half of what it is given, then fails like a full disk."""

    def __init__(self, handle: Any, directory: Path, target: Path) -> None:
        self.handle, self.directory, self.target = handle, directory, target

    def write(self, text: bytes) -> int:
        self.handle.write(text[: len(text) // 2])
        self.handle.flush()
        temp = [p for p in self.directory.iterdir() if p != self.target]
        assert len(temp) == 1 and temp[0].stat().st_size > 0  # the half went to a temporary file
        raise OSError(28, "No space left on device")


def test_a_save_that_fails_midway_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "run.json"
    save_cassette(vector("error-unknown-tool"), target)
    before = target.read_bytes()
    real_writer = atomic.atomic_binary_writer

    @contextlib.contextmanager
    def failing_writer(path: str | Path) -> Iterator[Any]:
        with real_writer(path) as handle:
            yield _FailingHalfway(handle, tmp_path, target)

    monkeypatch.setattr(cassette_io, "atomic_binary_writer", failing_writer)
    with pytest.raises(OSError, match="No space left"):
        save_cassette(vector("success-tool-use"), target)
    assert target.read_bytes() == before
    assert list(tmp_path.iterdir()) == [target]


def test_a_saved_cassette_has_the_usual_file_mode(tmp_path: Path) -> None:
    old_umask = os.umask(0o027)
    try:
        fresh = tmp_path / "fresh.json"
        save_cassette(vector("success-tool-use"), fresh)
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o640  # 0666 less the umask, as open() gives
        fresh.chmod(0o604)
        save_cassette(vector("error-unknown-tool"), fresh)
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o604  # a replaced file keeps its mode
    finally:
        os.umask(old_umask)


def test_a_save_removes_what_killed_saves_of_the_same_file_left(tmp_path: Path) -> None:
    # SIGKILL runs no cleanup: a save killed midway leaves its temporary file beside the target.
    # The next save over the file removes it (a save of a new file does not list the directory).
    target = tmp_path / "run.json"
    save_cassette(vector("error-unknown-tool"), target)
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    dead = int(finished.stdout)  # a process that has exited
    an_hour_ago = time.time() - 3600
    names = {
        "abandoned": f".run.json.{dead}.k3x9_a2b.tmp",
        "just written": f".run.json.{dead}.q8w7e6r5.tmp",  # may be another host's save in progress
        "live process": f".run.json.{os.getpid()}.z1y2x3w4.tmp",  # a save running right now
        "another file's": f".other.json.{dead}.m4n5b6v7.tmp",
        "not ours": ".run.json.notes.tmp",
    }
    for label, name in names.items():
        (tmp_path / name).write_text("half a cassette")
        if label != "just written":
            os.utime(tmp_path / name, (an_hour_ago, an_hour_ago))
    save_cassette(vector("success-tool-use"), tmp_path / "new.json")  # a new file: nothing looked at
    assert {p.name for p in tmp_path.iterdir()} == {"run.json", "new.json", *names.values()}
    save_cassette(vector("success-tool-use"), target)
    left = {p.name for p in tmp_path.iterdir()} - {"new.json"}
    assert names["abandoned"] not in left
    assert left == {"run.json", *(name for label, name in names.items() if label != "abandoned")}
