"""Canonical JSON and step hashes, byte for byte as the JavaScript Blackbox computes them.

The JavaScript implementation sorts object keys with ``Array.prototype.sort`` (UTF-16 code
units), writes strings and numbers with ``JSON.stringify`` and rejects non-finite numbers. Python's
``json.dumps(sort_keys=True)`` agrees on ordinary data; the corners handled here are where it
does not: integral floats (``1.0`` is ``1``), exponents (``1e-7`` not ``1e-07``, ``1e+21`` not
``1e21``, ``1e16`` written out in full), integers beyond 2**53 (JavaScript keeps only a double),
keys outside the Basic Multilingual Plane, and lone surrogates (escaped, never raw).
"""

from __future__ import annotations

import hashlib
import json
import math
import operator
import re
from typing import Any

__all__ = [
    "CanonicalError",
    "StepHasher",
    "canonical_json",
    "canonical_or_none",
    "hash_step",
    "same_canonical",
    "sha256_hex",
]

_MAX_SAFE_INTEGER = 2**53
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class CanonicalError(ValueError):
    """A value that has no canonical JSON form (NaN, infinity, a non-JSON type)."""


_ENCODE_STRING = json.JSONEncoder(ensure_ascii=False).encode
_ENCODE_SORTED = json.JSONEncoder(
    ensure_ascii=False, allow_nan=False, sort_keys=True, separators=(",", ":")
).encode


def _string(text: str) -> str:
    encoded = _ENCODE_STRING(text)
    if not text.isascii() and _LONE_SURROGATE.search(encoded):
        # JSON.stringify escapes a lone surrogate; written raw it would not even encode as UTF-8.
        encoded = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", encoded)
    return encoded


def _js_number(value: float) -> str:
    """ECMAScript Number::toString for a finite double."""
    if value == 0:
        return "0"  # -0 as well
    if value.is_integer() and abs(value) <= _MAX_SAFE_INTEGER:
        return str(int(value))  # exact; above 2**53 JavaScript pads the shortest digits with zeros
    # repr gives the shortest round-tripping digits, as JavaScript does; only the layout differs.
    sign = "-" if value < 0 else ""
    mantissa, _, exp_text = repr(abs(value)).partition("e")
    digits_part, _, fraction = mantissa.partition(".")
    digits = (digits_part + fraction).lstrip("0") or "0"
    # Decimal exponent n such that value = 0.d1d2... x 10**n.
    if exp_text:
        n = int(exp_text) + len(digits_part.lstrip("0") or "0")
    elif digits_part.strip("0"):
        n = len(digits_part.lstrip("0"))
    else:
        n = -(len(fraction) - len(fraction.lstrip("0")))
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    exponent = n - 1
    exp_sign = "+" if exponent >= 0 else "-"
    head = digits[0] + ("." + digits[1:] if k > 1 else "")
    return f"{sign}{head}e{exp_sign}{abs(exponent)}"


def _number(value: int | float) -> str:
    if isinstance(value, int):
        if -_MAX_SAFE_INTEGER <= value <= _MAX_SAFE_INTEGER:
            return str(value)
        try:
            value = float(value)  # what JavaScript would have parsed
        except OverflowError:  # past the largest double: JavaScript reads Infinity
            raise CanonicalError("an integer past the largest double has no canonical JSON form") from None
    if not math.isfinite(value):
        raise CanonicalError(f"non-finite number {value!r} has no canonical JSON form")
    return _js_number(value)


def _utf16_key(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def _serialize(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_string(value))
    elif isinstance(value, (int, float)):
        out.append(_number(value))
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _serialize(item, out)
        out.append("]")
    elif isinstance(value, dict):
        out.append("{")
        for key in value:
            if not isinstance(key, str):  # before sorting: a non-string key cannot be sorted
                raise CanonicalError(f"object key {key!r} is not a string")
        for i, key in enumerate(sorted(value, key=_utf16_key)):
            if i:
                out.append(",")
            out.append(_string(key))
            out.append(":")
            _serialize(value[key], out)
        out.append("}")
    else:
        raise CanonicalError(f"{type(value).__name__} is not a JSON value")


# The C encoder agrees with JavaScript except on: an integral float ("1.0"), an exponent ("1e-05",
# "1e+16"), an int past 2**53 (16+ digits), a character outside the Basic Multilingual Plane (key
# order) and a lone surrogate. A number of the compact text starts it or follows ':', ',' or '[':
# the patterns look only there (a long run's text is megabytes of prose and code, where a search
# for any "1.0" or 16 digits hit everywhere). A match inside a string is a false alarm that only
# costs the exact path.
_AT_NUMBER = r"(?:^|[:,\[])-?"
_INTEGRAL_FLOAT = re.compile(_AT_NUMBER + r"[0-9]+\.0(?![0-9])")
_EXPONENT = re.compile(_AT_NUMBER + r"[0-9]+(?:\.[0-9]+)?e[-+][0-9]")
_LONG_DIGITS = re.compile(_AT_NUMBER + r"[0-9]{16}")
_OUTSIDE_BMP = re.compile("[\ud800-\udfff\U00010000-\U0010ffff]")
_DIGITS_AS_ZERO = str.maketrans("123456789", "000000000")


def _same_as_javascript(text: str) -> bool:
    if ".0" in text and _INTEGRAL_FLOAT.search(text):
        return False
    if ("e-" in text or "e+" in text) and _EXPONENT.search(text):
        return False
    if not text.isascii() and _OUTSIDE_BMP.search(text):
        return False
    if len(text) > 4096 and "0" * 16 not in text.translate(_DIGITS_AS_ZERO):  # no 16 digits at all
        return True
    return _LONG_DIGITS.search(text) is None


def _string_keys_only(value: Any) -> bool:
    """The C encoder would quietly turn a key like 1 or None into a string: find any first."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if not all(type(key) is str for key in item):
                return False
            stack.extend(v for v in item.values() if isinstance(v, (dict, list, tuple)))
        elif isinstance(item, (list, tuple)):
            stack.extend(v for v in item if isinstance(v, (dict, list, tuple)))
    return True


def canonical_json(value: Any) -> str:
    """Keys sorted by UTF-16 code units, recursively; arrays in order; no whitespace."""
    try:
        fast = _ENCODE_SORTED(value) if _string_keys_only(value) else None
    except (TypeError, ValueError):
        fast = None  # NaN, odd types: the exact path raises the right error
    if fast is not None and _same_as_javascript(fast):
        return fast
    out: list[str] = []
    _serialize(value, out)
    return "".join(out)


def canonical_or_none(value: Any) -> str | None:
    """The canonical JSON, or None for a value that has none (NaN, an integer past the largest
    double, nesting past the recursion limit): for comparing values read from any file."""
    try:
        return canonical_json(value)
    except (CanonicalError, RecursionError):
        return None


def same_canonical(a: Any, b: Any) -> bool:
    """Whether two values have the same canonical JSON (1 and 1.0 do; true and 1 do not). A value
    with no canonical form equals nothing."""
    text = canonical_or_none(a)
    return text is not None and text == canonical_or_none(b)


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def hash_step(index: int, step_type: str, timestamp: int | float, payload: Any, prev_hash: str | None) -> str:
    """The hash of a step: SHA-256 of the canonical JSON of exactly these five fields."""
    # The five keys in canonical order around the payload's own canonical JSON: the hash's
    # prevHash (64 hex digits) never sends the whole step down the exact path.
    prev = "null" if prev_hash is None else _string(prev_hash)
    return sha256_hex(
        f'{{"index":{_number(index)},"payload":{canonical_json(payload)},"prevHash":{prev},'
        f'"timestamp":{_number(timestamp)},"type":{_string(step_type)}}}'
    )


class StepHasher:
    """``hash_step``, keeping the canonical bytes of the messages of the model_input steps it hashed.

    Each model call's input holds every message before it, so hashing it from scratch canonicalizes
    the whole conversation again: O(N) a turn. Here a message object met before (by identity: the
    caller shares the objects of the previous step's messages, and never mutates them) is not
    canonicalized again, and a step whose messages extend the previous step's reuses their joined
    bytes. The hash is ``hash_step``'s, byte for byte; only SHA-256 itself still reads every byte of
    the step, which the format's hash requires.

    Bounded: it holds the messages of the last step hashed and their bytes, nothing older."""

    def __init__(self) -> None:
        self._messages: list[Any] = []  # the last step's messages (kept: their ids stay theirs)
        self._joined = bytearray()  # their canonical JSON, comma-separated: grown in place, not copied
        self._texts: dict[int, bytes] = {}  # id of each of those messages -> its canonical bytes

    def hash_step(
        self, index: int, step_type: str, timestamp: int | float, payload: Any, prev_hash: str | None
    ) -> str:
        messages = payload.get("messages") if isinstance(payload, dict) else None
        if not isinstance(messages, list) or not all(type(key) is str for key in payload):
            return hash_step(index, step_type, timestamp, payload, prev_hash)
        digest = hashlib.sha256()
        digest.update(f'{{"index":{_number(index)},"payload":{{'.encode())
        # The payload's keys in canonical order, its messages from their kept bytes.
        for i, key in enumerate(sorted(payload, key=_utf16_key)):
            head = f"{',' if i else ''}{_string(key)}:"
            if key == "messages":
                digest.update(f"{head}[".encode())
                digest.update(self._joined_messages(messages))
                digest.update(b"]")
            else:
                digest.update(f"{head}{canonical_json(payload[key])}".encode())
        prev = "null" if prev_hash is None else _string(prev_hash)
        digest.update(
            f'}},"prevHash":{prev},"timestamp":{_number(timestamp)},"type":{_string(step_type)}}}'.encode()
        )
        return digest.hexdigest()

    def _joined_messages(self, messages: list[Any]) -> bytearray:
        kept, texts = self._messages, self._texts
        if len(messages) >= len(kept) and all(map(operator.is_, messages, kept)):
            new = messages[len(kept) :]  # the usual case: the step before's messages, and the new ones
            joined = self._joined
        else:  # another conversation, or a history rewritten: the messages it shares are still known
            new, joined = messages, bytearray()
        pieces = [texts.get(id(m)) or canonical_json(m).encode() for m in new]
        for piece in pieces:
            if joined:
                joined += b","
            joined += piece
        if new is messages:  # only this step's messages are kept: one conversation's, whatever ran before
            texts = {}
        texts.update(zip(map(id, new), pieces, strict=True))
        self._messages, self._joined, self._texts = list(messages), joined, texts
        return joined
