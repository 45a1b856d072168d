"""Neutral tool-call ids: provider ids, and calls that carry none, as ``call-0, call-1, ...``.

Shared by the wire translations (_wire/) and the cassettes built from spans (_cassette/from_spans/), so
both number the same calls the same way; pure, no I/O.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from otel_blackbox._cassette.canonical import canonical_or_none
from otel_blackbox._cassette.model import choice_calls

__all__ = ["CallIds", "call_signature"]

# Bounds on what ``CallIds.made`` keeps for a long-lived process (the processor's HTTP capture).
_MAX_SIGNATURES = 50_000
_MAX_PER_SIGNATURE = 1_000


def call_signature(name: str, arguments: Any) -> str:
    """What tells calls apart when they carry no id: the tool's name and its canonical arguments."""
    return f"{name}\x00{canonical_or_none(arguments) or repr(arguments)}"


@dataclass
class CallIds:
    """Provider tool-call ids <-> neutral ``call-N``, numbered in the order the model produced them.

    One instance per run. Recording learns provider ids from responses; in replay the agent is
    handed the neutral ids themselves, which map to themselves, so its next request normalizes
    identically either way.

    Calls can also come without an id (Gemini's usually do, and a program may drop the ids it was
    handed). ``made`` keeps the neutral ids of the calls the model made, by ``call_signature``,
    oldest first; ``in_history`` tells which of them a request's history holds. Calls served from a
    cassette or a script never pass through a translation: ``learn`` records them the same way.
    """

    to_neutral: dict[str, str] = field(default_factory=dict)
    # A fork continues after the ids its copied prefix already uses.
    start: int = 0
    made: dict[str, list[str]] = field(default_factory=dict)

    def neutral(self, provider_id: str) -> str:
        if provider_id.startswith("call-") and provider_id[5:].isdigit():
            return provider_id  # already neutral (replay hands these out)
        if provider_id not in self.to_neutral:
            self.to_neutral[provider_id] = f"call-{self.start + len(self.to_neutral)}"
        return self.to_neutral[provider_id]

    def known(self, provider_id: str) -> str | None:
        """The neutral id of a call id this run has seen, without numbering a new one."""
        if provider_id.startswith("call-") and provider_id[5:].isdigit():
            return provider_id
        return self.to_neutral.get(provider_id)

    def next_index(self) -> int:
        return self.start + len(self.to_neutral)

    def made_call(self, signature: str, provider_id: str | None) -> str:
        """The neutral id of a call in a model's response, remembered under its signature."""
        neutral = self.neutral(provider_id or f"unnamed-{self.next_index()}")
        self._remember(signature, neutral)
        return neutral

    def in_history(self, calls: list[tuple[str, str | None]]) -> list[str]:
        """The neutral ids of a request's history calls, given as (signature, provider id or None).

        A call with an id uses it. The others are matched with the calls of the same signature the
        model made, from the latest back: a history that dropped its oldest turns still matches, and
        so does a later conversation that makes a call an earlier one made (two conversations that
        take turns making the same call do not). A call the model never made in this run (a history
        the program wrote) is numbered on, once.
        """
        total, seen = Counter(signature for signature, _ in calls), Counter[str]()
        found = []
        for signature, provider_id in calls:
            made = self.made.get(signature, [])
            position = len(made) - total[signature] + seen[signature]
            seen[signature] += 1
            if provider_id is not None:
                found.append(self.neutral(provider_id))
            elif position >= 0:
                found.append(made[position])
            else:
                found.append(self.neutral(f"{signature}\x00#{seen[signature]}"))
        return found

    def learn(self, output: dict[str, Any]) -> None:
        """A model output the program was served from a cassette or a script: its calls, remembered as
        if a translation had read them from a response."""
        for call in (c for calls in choice_calls(output) for c in calls):
            self._remember(call_signature(call.tool_name, call.tool_input), call.tool_call_id)

    def _remember(self, signature: str, neutral: str) -> None:
        ids = self.made.setdefault(signature, [])
        ids.append(neutral)
        if len(ids) > _MAX_PER_SIGNATURE:  # a history is matched from its latest calls back
            del ids[: len(ids) - _MAX_PER_SIGNATURE]
        if len(self.made) > _MAX_SIGNATURES:  # the oldest signatures first
            for old in list(self.made)[: len(self.made) // 2]:
                del self.made[old]
