"""Token counts read from the attributes a convention names: one reader of counts for every family."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from otel_blackbox._spans.view.model import Tokens

__all__ = ["TokenKeys", "tokens_from"]


@dataclass(frozen=True)
class TokenKeys:
    """The attributes of each count, in order of preference."""

    input: tuple[str, ...] = ()
    output: tuple[str, ...] = ()
    total: tuple[str, ...] = ()
    cache_read: tuple[str, ...] = ()
    cache_write: tuple[str, ...] = ()
    reasoning: tuple[str, ...] = ()

    def all(self) -> tuple[str, ...]:
        return tuple(key for f in fields(self) for key in getattr(self, f.name))


def _first_int(attributes: Mapping[str, Any], keys: tuple[str, ...]) -> int | None:
    for key in keys:
        value = attributes.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return int(value)
    return None


def tokens_from(attributes: Mapping[str, Any], keys: TokenKeys) -> Tokens | None:
    """The counts the attributes hold (None when they hold none)."""
    tokens = Tokens(**{f.name: _first_int(attributes, getattr(keys, f.name)) for f in fields(keys)})
    return tokens if tokens.counted or tokens.total is not None else None
