"""The first differing JSON path between two values, with both values (or ``ABSENT``).

Object keys are visited in canonical order (their UTF-16 code units, as canonical JSON sorts
them) and leaves compared canonically. Paths read ``$.a.b[0]``: identifier keys dotted, other keys
quoted in brackets, indexes in brackets. A cassette diff names its divergent step's first
difference with it; a replay names what its request changed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from otel_blackbox._cassette.canonical import same_canonical

__all__ = ["ABSENT", "PathDifference", "child_path", "first_difference"]


class _Absent:
    """A path present on one side only (distinct from a JSON null)."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = _Absent()


@dataclass(frozen=True)
class PathDifference:
    """The first differing JSON path inside the divergent step, with both values (or ABSENT)."""

    path: str
    parent: Any
    child: Any

    def to_json(self) -> dict[str, Any]:
        """An absent side is left out (JSON has no "absent", and null is a value)."""
        data: dict[str, Any] = {"path": self.path}
        if self.parent is not ABSENT:
            data["parent"] = self.parent
        if self.child is not ABSENT:
            data["child"] = self.child
        return data


def _utf16(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def child_path(path: str, key: str | int) -> str:
    """``$.a.b[0]``: identifier keys dotted, other keys quoted in brackets, indexes in brackets."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    if key.isidentifier():
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def first_difference(parent: Any, child: Any, path: str = "$") -> PathDifference | None:
    """The first leaf where two JSON values differ, object keys visited in canonical order."""
    if isinstance(parent, dict) and isinstance(child, dict):
        for key in sorted(parent.keys() | child.keys(), key=_utf16):
            sub = child_path(path, key)
            if key not in parent or key not in child:
                return PathDifference(sub, parent.get(key, ABSENT), child.get(key, ABSENT))
            found = first_difference(parent[key], child[key], sub)
            if found is not None:
                return found
        return None
    if isinstance(parent, list) and isinstance(child, list):
        for index in range(max(len(parent), len(child))):
            sub = child_path(path, index)
            if index >= len(parent) or index >= len(child):
                return PathDifference(sub, _item(parent, index), _item(child, index))
            found = first_difference(parent[index], child[index], sub)
            if found is not None:
                return found
        return None
    return None if same_canonical(parent, child) else PathDifference(path, parent, child)


def _item(values: list[Any], index: int) -> Any:
    return values[index] if index < len(values) else ABSENT
