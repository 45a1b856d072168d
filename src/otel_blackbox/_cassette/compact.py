"""The compact encoding of a cassette: the v2 document without the repetition between its steps.

Every ``model_input`` of a long run holds the whole conversation before it, so the v2 document of a
run of n rounds is the square of it. In the compact encoding (``"encoding":
"blackbox-shared-messages/1"`` at the top, docs/cassette-format.md) a member of a ``model_input``
payload may refer to the same member of an earlier ``model_input`` step:

- ``{"$prefix": {"step": K, "count": N}, "then": [...]}``: the first N elements of step K's
  list, then these (``messages`` growing by a round, ``tools`` gaining one);
- ``{"$same": K}``: step K's value (the tools, the system prompt, the settings);
- ``{"$literal": V}``: V itself, for a member whose value is an object (so it never reads as one
  of the two above).

Decoding rebuilds exactly the v2 document, the elements of a prefix shared as the same Python
objects (a slice of the earlier list): memory is the distinct messages plus a pointer for each place
one appears. Hashes are always those of the decoded v2 steps. Decoding is bounded: the pointers it
would make, and the size of the v2 document it rebuilds (what hashing it costs), each within a
multiple of the limit on the text read (``io.max_file_bytes``).
"""

from __future__ import annotations

import json
from array import array
from typing import Any

from otel_blackbox.errors import CassetteError

__all__ = ["ENCODING", "EXPANSION", "decode_document", "encode_document", "is_compact"]

ENCODING = "blackbox-shared-messages/1"
_KEY = "encoding"
# A compact cassette may rebuild a v2 document at most this many times the limit on the text read,
# and hold at most one shared element a 4 bytes of it: 8 GB and 8 million at the 32 MB default.
EXPANSION = 256
_POINTER_BYTES = 4
# Earlier model_input steps an encoder compares a member with: a run interleaving a few
# conversations (an agent and its sub-agents) still shares each one's history.
_CANDIDATES = 8
_PREFIX, _THEN, _SAME, _LITERAL = "$prefix", "then", "$same", "$literal"


def is_compact(data: Any) -> bool:
    return isinstance(data, dict) and _KEY in data


def encode_document(document: dict[str, Any]) -> dict[str, Any]:
    """The compact form of a v2 document (``Cassette.to_json()``): new dicts for the top level, the
    steps and the model_input payloads; every other value is the document's own object."""
    steps = document.get("steps")
    if not isinstance(steps, list):
        raise ValueError("a v2 document has a list of steps")
    out: dict[str, Any] = {}
    for key, value in document.items():
        out[key] = value
        if key == "version":
            out[_KEY] = ENCODING
    out.setdefault(_KEY, ENCODING)
    earlier: list[tuple[int, dict[str, Any]]] = []  # (index, payload) of model_input steps, newest last
    encoded: list[Any] = []
    for position, step in enumerate(steps):
        payload = _model_input_payload(step)
        if payload is None:
            encoded.append(step)
            continue
        candidates = earlier[-_CANDIDATES:][::-1]
        members = {name: _encode_member(name, value, candidates) for name, value in payload.items()}
        encoded.append({**step, "payload": members})
        earlier.append((position, payload))
    out["steps"] = encoded
    return out


def _encode_member(name: str, value: Any, candidates: list[tuple[int, dict[str, Any]]]) -> Any:
    if isinstance(value, list) and value:
        best_step, best_count = -1, 0
        for index, payload in candidates:
            other = payload.get(name)
            if not isinstance(other, list):
                continue
            count = _common_prefix(value, other)
            if count == len(other) == len(value):
                return {_SAME: index}
            if count > best_count:
                best_step, best_count = index, count
                if count == len(other):  # this one's whole list, extended: the usual growing conversation
                    break
        if best_count:
            return {_PREFIX: {"step": best_step, "count": best_count}, _THEN: value[best_count:]}
        return value
    if isinstance(value, dict) or (isinstance(value, str) and len(value) > 32):
        for index, payload in candidates:
            if name in payload and payload[name] == value:
                return {_SAME: index}
    return {_LITERAL: value} if isinstance(value, dict) else value


def _model_input_payload(step: Any) -> dict[str, Any] | None:
    payload = step.get("payload") if isinstance(step, dict) and step.get("type") == "model_input" else None
    return payload if isinstance(payload, dict) else None


def _common_prefix(a: list[Any], b: list[Any]) -> int:
    count = 0
    for x, y in zip(a, b, strict=False):  # == tries identity first: elements already shared cost nothing
        if x is not y and x != y:
            break
        count += 1
    return count


def decode_document(data: Any, source: str, *, max_bytes: int) -> Any:
    """The v2 document a compact one encodes (a document without ``encoding`` comes back as it is).

    CassetteError, one line, for a reference that is not to an earlier model_input's member of the
    same name, a count beyond it, an unknown encoding, or a document that would rebuild more than
    the bounds allow. Structure the encoding does not touch is left for ``parse_cassette`` to judge."""
    if not is_compact(data):
        return data
    encoding = data[_KEY]
    if encoding != ENCODING:
        raise CassetteError(f"{source}: encoding {encoding!r} is not supported (expected {ENCODING!r})")
    document = {key: value for key, value in data.items() if key != _KEY}
    steps = document.get("steps")
    if isinstance(steps, list):
        document["steps"] = _Decoder(source, max_bytes).steps(steps)
    return document


class _Decoder:
    def __init__(self, source: str, max_bytes: int) -> None:
        self.source = source
        self.max_bytes = max_bytes
        self.pointers = 0
        self.rebuilt = 0  # characters of v2 JSON the references bring back
        # Per model_input step and member: its decoded value, and its size (a list: the cumulative
        # sizes of its elements, so that a prefix's size is one lookup).
        self.values: dict[int, dict[str, Any]] = {}
        self.sizes: dict[int, dict[str, int | array[int]]] = {}

    def steps(self, steps: list[Any]) -> list[Any]:
        out: list[Any] = []
        for position, step in enumerate(steps):
            payload = _model_input_payload(step)
            if payload is None:
                out.append(step)
                continue
            values: dict[str, Any] = {}
            sizes: dict[str, int | array[int]] = {}
            for name, raw in payload.items():
                values[name], sizes[name] = self.member(position, name, raw)
            self.values[position], self.sizes[position] = values, sizes
            out.append({**step, "payload": values})
        return out

    def member(self, position: int, name: str, raw: Any) -> tuple[Any, int | array[int]]:
        where = f"{self.source}: step {position}: payload.{name}"
        if not isinstance(raw, dict):
            return raw, _cumulative(raw, array("q", [0])) if isinstance(raw, list) else _size(raw)
        if set(raw) == {_LITERAL}:
            value = raw[_LITERAL]
            return value, _size(value)
        if set(raw) == {_SAME}:
            step = self.referred(raw[_SAME], position, name, where)
            value, size = self.values[step][name], self.sizes[step][name]
            total = size[-1] if isinstance(size, array) else size
            self.spend(total, len(value) if isinstance(value, list) else 0, where)
            return value, size
        prefix = raw.get(_PREFIX)
        if set(raw) == {_PREFIX, _THEN} and isinstance(prefix, dict) and set(prefix) == {"step", "count"}:
            step = self.referred(prefix["step"], position, name, where)
            count, then = prefix["count"], raw[_THEN]
            earlier, sizes = self.values[step][name], self.sizes[step][name]
            if not isinstance(earlier, list) or not isinstance(sizes, array):
                raise CassetteError(f"{where}: takes a prefix of step {step}'s {name}, which is not a list")
            if isinstance(count, bool) or not isinstance(count, int) or not 0 < count <= len(earlier):
                raise CassetteError(
                    f"{where}: takes the first {count!r} of step {step}'s {name}, which has {len(earlier)}"
                    " (a count from 1 to that)"
                )
            if not isinstance(then, list):
                raise CassetteError(f"{where}: 'then' must be a list")
            self.spend(sizes[count], count, where)
            return earlier[:count] + then, _cumulative(then, sizes[: count + 1])
        raise CassetteError(
            f"{where}: in a compact cassette an object here is {{{_PREFIX!r}: ..., 'then': [...]}},"
            f" {{{_SAME!r}: step}} or {{{_LITERAL!r}: value}}"
        )

    def referred(self, step: Any, position: int, name: str, where: str) -> int:
        if isinstance(step, bool) or not isinstance(step, int) or step not in self.values or step >= position:
            raise CassetteError(f"{where}: refers to step {step!r}, which is not an earlier model_input step")
        if name not in self.values[step]:
            raise CassetteError(f"{where}: refers to step {step}, which has no {name}")
        return step

    def spend(self, size: int, pointers: int, where: str) -> None:
        self.rebuilt += size
        self.pointers += pointers
        if self.rebuilt > self.max_bytes * EXPANSION or self.pointers * _POINTER_BYTES > self.max_bytes:
            limit = self.max_bytes / 2**20
            raise CassetteError(
                f"{where}: the compact cassette rebuilds more than its limits allow ({limit * EXPANSION:g} MB"
                f" of v2 JSON and {self.max_bytes // _POINTER_BYTES} shared elements, from the {limit:g} MB"
                " limit, OTEL_BLACKBOX_MAX_CASSETTE_MB)"
            )


def _size(value: Any) -> int:
    """About the characters of a value's JSON: what hashing it costs."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def _cumulative(elements: list[Any], start: array[int]) -> array[int]:
    """``start`` (cumulative sizes, beginning with 0) extended by the sizes of ``elements``."""
    total = start[-1]
    for element in elements:
        total += _size(element) + 1
        start.append(total)
    return start
