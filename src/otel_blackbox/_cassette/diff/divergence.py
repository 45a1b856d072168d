"""The first step where two cassettes stop agreeing, and the first JSON path that differs in it.

By hash (a fork against its parent: the first index whose step hashes differ, or where one side
has no step), or semantically (two separate recordings, whose timestamps and ids always differ: the
first index whose ``type`` or canonical ``payload`` differ; a ``model_input`` built from spans is
compared only in what its spans ``observed``, as a replay compares it). Only the divergent step is
walked as JSON, to name the first differing path.

A model_output's ``tokenUsage`` is not behaviour: the semantic mode leaves it out, so two runs that
said the same at a different token count agree.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from otel_blackbox._cassette.canonical import same_canonical
from otel_blackbox._cassette.diff.json_paths import PathDifference, first_difference
from otel_blackbox._cassette.model import OBSERVED, Cassette, Step, observed_view
from otel_blackbox._cost.usage import without_usage

__all__ = ["Mode", "first_divergent_index", "step_difference"]

Mode = Literal["hash", "semantic"]


def _strict_json(value: Any) -> str | None:
    """A fast C-encoded form: equal forms imply equal canonical JSON (the converse can fail)."""
    try:
        return json.dumps(value, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        return None


def _same_payload(a: Any, b: Any) -> bool:
    if a is b:
        return True
    fast = _strict_json(a)
    if fast is not None and fast == _strict_json(b):
        return True
    # Different here but maybe equal canonically: 1 vs 1.0, integers beyond 2**53.
    return same_canonical(a, b)


def _compared(parent: Step, child: Step) -> tuple[Any, Any]:
    """The payloads as the semantic mode compares them: a model_output without its ``tokenUsage``; a
    model_input built from spans (with ``observed``) only in what its spans saw, on both sides, as a
    replay compares it."""
    p, c = parent.payload, child.payload
    if parent.type == "model_output" and child.type == "model_output":
        return without_usage(p), without_usage(c)
    if parent.type != "model_input" or not (isinstance(p, dict) and isinstance(c, dict)):
        return p, c
    observed = p.get(OBSERVED, c.get(OBSERVED))
    return observed_view(p, observed), observed_view(c, observed)


def _same_step(parent: Step, child: Step, mode: Mode) -> bool:
    if parent.hash == child.hash:
        return True  # the hash covers type and payload, so semantic equality follows too
    if mode == "hash":
        return False
    return parent.type == child.type and _same_payload(*_compared(parent, child))


def first_divergent_index(parent: Cassette, child: Cassette, mode: Mode) -> int | None:
    for index, (p, c) in enumerate(zip(parent.steps, child.steps, strict=False)):
        if not _same_step(p, c, mode):
            return index
    if len(parent.steps) == len(child.steps):
        return None
    return min(len(parent.steps), len(child.steps))  # one side ended: diverged where it ends


def _hashed_fields(step: Step, mode: Mode) -> dict[str, Any]:
    # Meaning first: a changed type or payload explains more than a changed timestamp.
    if mode == "semantic":
        return {"type": step.type, "payload": step.payload}
    return {
        "type": step.type,
        "payload": step.payload,
        "timestamp": step.timestamp,
        "prevHash": step.prev_hash,
        "index": step.index,
    }


def step_difference(parent: Step, child: Step, mode: Mode) -> PathDifference | None:
    p_fields, c_fields = _hashed_fields(parent, mode), _hashed_fields(child, mode)
    if mode == "semantic":
        p_fields["payload"], c_fields["payload"] = _compared(parent, child)
    elif parent.type == child.type:
        # What the run said before its bookkeeping (a model_input's ``observed`` list): the first
        # difference named is one of meaning when there is one.
        meaning = first_difference(*_compared(parent, child), "$.payload")
        if meaning is not None:
            return meaning
    for name in p_fields:  # dict order, not canonical order: see _hashed_fields
        found = first_difference(p_fields[name], c_fields[name], f"$.{name}")
        if found is not None:
            return found
    return None
