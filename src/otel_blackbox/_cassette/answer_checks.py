"""Contract assertions on what a run *said*: its final answer (``terminal_outcome``'s, a run that
completed), as text or as JSON.

``answer_contains`` / ``answer_not_contains`` (a text, ``ignore_case`` optional), ``answer_matches``
(a Python regular expression, ``re.search``), ``answer_json`` (the value at a JSON Pointer
``equals`` a JSON value, compared canonically, or ``exists``) and ``answer_schema`` (the answer's
JSON validates against a JSON Schema, draft 2020-12). A run with no final answer fails each of
them; an answer that is not JSON fails the two JSON kinds, saying why (but for ``exists: false``:
it has no value at any pointer).

``propose_from_answer`` is what ``eval generate`` proposes from a good run's answer: structural
assertions only (the keys of a JSON object and their types), never its wording, each marked
``"proposed": true`` for a person to keep or drop.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, best_match
from referencing.exceptions import Unresolvable

from otel_blackbox._cassette.canonical import same_canonical
from otel_blackbox._cassette.contract_checks import Facts, Judged, clip, short
from otel_blackbox._cassette.diff.json_paths import child_path
from otel_blackbox._cassette.json_pointer import pointer_to, resolve_pointer

__all__ = ["ANSWER_CHECKS", "answer_problem", "parse_answer", "propose_from_answer"]

Assertion = dict[str, Any]
MAX_PROPOSED_KEYS = 20  # a JSON answer's first keys proposed, in its own order
_SHOWN = 80  # how much of an answer a detail quotes

_JSON_TYPES: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (bool, "boolean"),  # before int: a bool is an int in Python
    ((int, float), "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def parse_answer(text: str) -> tuple[bool, Any]:
    """(True, the answer's JSON value) or (False, why it is not JSON: one line)."""
    try:
        return True, json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        return False, f"the answer is not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
    except (ValueError, RecursionError) as exc:  # NaN / Infinity, too deep, too many digits
        return False, f"the answer is not JSON: {exc}"


def _no_answer(facts: Facts) -> str:
    return f"no final answer (status {facts.status})"


def _text(a: Assertion) -> str:
    return short(a["text"]) + (" (any case)" if a.get("ignore_case") else "")


def _find(a: Assertion, answer: str) -> int:
    """Where the text starts in the answer, or -1; ``ignore_case``: as ``re.IGNORECASE`` compares."""
    if a.get("ignore_case"):
        found = re.search(re.escape(a["text"]), answer, re.IGNORECASE)
        return -1 if found is None else found.start()
    return answer.find(a["text"])


def _contains(a: Assertion, facts: Facts) -> Judged:
    description = f"answer contains {_text(a)}"
    if facts.answer is None:
        return Judged(description, False, _no_answer(facts))
    at = _find(a, facts.answer)
    if at < 0:
        return Judged(description, False, f"not in the answer: {short(facts.answer, _SHOWN)}")
    return Judged(description, True, f"found at character {at}")


def _not_contains(a: Assertion, facts: Facts) -> Judged:
    description = f"answer does not contain {_text(a)}"
    if facts.answer is None:
        return Judged(description, False, _no_answer(facts))
    at = _find(a, facts.answer)
    if at >= 0:
        return Judged(description, False, f"found at character {at}: {short(facts.answer[at:], _SHOWN)}")
    return Judged(description, True, "not in the answer")


def _matches(a: Assertion, facts: Facts) -> Judged:
    description = f"answer matches /{a['pattern']}/"
    if facts.answer is None:
        return Judged(description, False, _no_answer(facts))
    found = re.search(a["pattern"], facts.answer)
    if found is None:
        return Judged(description, False, f"no match in the answer: {short(facts.answer, _SHOWN)}")
    return Judged(description, True, f"matched {short(found.group(0), _SHOWN)} at character {found.start()}")


def _json_description(a: Assertion) -> str:
    at = f"at {a['pointer']}" if a["pointer"] else "whole"
    if "equals" in a:
        return f"answer's JSON {at} = {short(a['equals'])}"
    if a["pointer"] == "":
        return "answer is JSON" if a["exists"] else "answer is not JSON"
    return f"answer's JSON has {'a value' if a['exists'] else 'no value'} at {a['pointer']}"


def _json(a: Assertion, facts: Facts) -> Judged:
    description = _json_description(a)
    if facts.answer is None:
        return Judged(description, False, _no_answer(facts))
    parsed, value = parse_answer(facts.answer)
    if not parsed:
        # An answer that is not JSON has no value at any pointer: what `exists: false` asks.
        return Judged(description, a.get("exists") is False, value)
    found, at = resolve_pointer(value, a["pointer"])
    if "equals" in a:
        if not found:
            return Judged(description, False, f"no {a['pointer']} in the answer's JSON")
        return Judged(description, same_canonical(at, a["equals"]), f"actual: {short(at)}")
    if found:
        return Judged(description, bool(a["exists"]), f"present: {short(at)}")
    return Judged(description, not a["exists"], f"no {a['pointer']} in the answer's JSON")


def _schema_summary(schema: Any) -> str:
    if not isinstance(schema, dict):
        return ""
    parts = []
    if isinstance(schema.get("type"), str):
        parts.append(f"type {schema['type']}")
    required = schema.get("required")
    if isinstance(required, list) and required:
        parts.append("required: " + clip(", ".join(map(str, required)), 60))
    return f" ({'; '.join(parts)})" if parts else ""


def _schema(a: Assertion, facts: Facts) -> Judged:
    description = f"answer's JSON matches its schema{_schema_summary(a['schema'])}"
    if facts.answer is None:
        return Judged(description, False, _no_answer(facts))
    parsed, value = parse_answer(facts.answer)
    if not parsed:
        return Judged(description, False, value)
    try:
        error = best_match(Draft202012Validator(a["schema"]).iter_errors(value))
    except Unresolvable as exc:  # a $ref to elsewhere: nothing is fetched
        return Judged(description, False, f"the schema cannot be applied: {clip(str(exc), 120)}")
    if error is None:
        return Judged(description, True, "valid")
    path = "$"
    for part in error.absolute_path:
        path = child_path(path, part)
    return Judged(description, False, f"{path}: {clip(error.message, 160)}")


ANSWER_CHECKS: dict[str, Callable[[Assertion, Facts], Judged]] = {
    "answer_contains": _contains,
    "answer_not_contains": _not_contains,
    "answer_matches": _matches,
    "answer_json": _json,
    "answer_schema": _schema,
}


def answer_problem(a: Assertion) -> tuple[str, str] | None:
    """What the contract's schema cannot see: (field, why) for a pattern that is not a regular
    expression or a schema that is not a JSON Schema; None when the assertion is sound."""
    if a.get("kind") == "answer_matches":
        try:
            re.compile(a["pattern"])
        except (re.error, RecursionError, OverflowError) as exc:
            return "pattern", f"not a regular expression: {exc}"
    elif a.get("kind") == "answer_schema":
        try:
            Draft202012Validator.check_schema(a["schema"])
        except SchemaError as exc:
            return "schema", f"not a JSON Schema (draft 2020-12): {exc.message}"
    return None


def _type_of(value: Any) -> str:
    for kinds, name in _JSON_TYPES:
        if isinstance(value, kinds):
            return name
    return "null"


def propose_from_answer(answer: str | None) -> list[Assertion]:
    """From a good run's answer: for a JSON object, that each of its keys is there and a schema of
    their types; for a JSON array, that it is one. Text gives nothing (its wording is no contract)."""
    if answer is None:
        return []
    parsed, value = parse_answer(answer)
    if not parsed:
        return []
    if isinstance(value, list):
        return [{"kind": "answer_schema", "schema": {"type": "array"}, "proposed": True}]
    if not isinstance(value, dict):
        return []
    keys = list(value)[:MAX_PROPOSED_KEYS]
    proposed: list[Assertion] = [
        {"kind": "answer_json", "pointer": pointer_to(key), "exists": True, "proposed": True} for key in keys
    ]
    schema: dict[str, Any] = {"type": "object"}
    if keys:
        schema["required"] = keys
        schema["properties"] = {key: {"type": _type_of(value[key])} for key in keys}
    proposed.append({"kind": "answer_schema", "schema": schema, "proposed": True})
    return proposed
