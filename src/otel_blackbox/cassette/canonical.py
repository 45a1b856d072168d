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
import re
from typing import Any

__all__ = ["CanonicalError", "canonical_json", "hash_step", "sha256_hex"]

_MAX_SAFE_INTEGER = 2**53
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class CanonicalError(ValueError):
    """A value that has no canonical JSON form (NaN, infinity, a non-JSON type)."""


def _string(text: str) -> str:
    encoded = json.dumps(text, ensure_ascii=False)
    if _LONE_SURROGATE.search(encoded):  # JSON.stringify escapes a lone surrogate; raw would not encode
        encoded = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", encoded)
    return encoded


def _js_number(value: float) -> str:
    """ECMAScript Number::toString for a finite double."""
    if value == 0:
        return "0"  # -0 as well
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
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
        value = float(value)  # what JavaScript would have parsed
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
        for i, key in enumerate(sorted(value, key=_utf16_key)):
            if not isinstance(key, str):
                raise CanonicalError(f"object key {key!r} is not a string")
            if i:
                out.append(",")
            out.append(_string(key))
            out.append(":")
            _serialize(value[key], out)
        out.append("}")
    else:
        raise CanonicalError(f"{type(value).__name__} is not a JSON value")


def canonical_json(value: Any) -> str:
    """Keys sorted by UTF-16 code units, recursively; arrays in order; no whitespace."""
    out: list[str] = []
    _serialize(value, out)
    return "".join(out)


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def hash_step(index: int, step_type: str, timestamp: int | float, payload: Any, prev_hash: str | None) -> str:
    """The hash of a step: SHA-256 of the canonical JSON of exactly these five fields."""
    return sha256_hex(
        canonical_json(
            {
                "index": index,
                "type": step_type,
                "timestamp": timestamp,
                "payload": payload,
                "prevHash": prev_hash,
            }
        )
    )
