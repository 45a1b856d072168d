"""What a provider translation is: pure functions between one LLM API's wire format and the
neutral v2 payloads (``model_input`` / ``model_output``), both ways.

No I/O, no clock, no randomness: the same request always normalizes to the same ``model_input``,
so replay can compare a new request with a recorded step by canonical JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["CallIds", "Provider", "WireResponse"]

JsonObject = dict[str, Any]


@dataclass
class CallIds:
    """Provider tool-call ids <-> neutral ``call-N``, numbered in the order the model produced them.

    One instance per run. Recording learns provider ids from responses; in replay the agent is
    handed the neutral ids themselves, which map to themselves, so its next request normalizes
    identically either way.
    """

    to_neutral: dict[str, str] = field(default_factory=dict)

    def neutral(self, provider_id: str) -> str:
        if provider_id.startswith("call-") and provider_id[5:].isdigit():
            return provider_id  # already neutral (replay hands these out)
        if provider_id not in self.to_neutral:
            self.to_neutral[provider_id] = f"call-{len(self.to_neutral)}"
        return self.to_neutral[provider_id]

    def next_index(self) -> int:
        return len(self.to_neutral)


@dataclass
class WireResponse:
    """A synthesized HTTP response: what the SDK receives instead of the provider's."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes


class Provider(Protocol):
    """One LLM API (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages)."""

    name: str

    def handles(self, method: str, path: str) -> bool:
        """True for the endpoint this translation understands (e.g. POST .../chat/completions)."""

    def model_input(self, request: JsonObject, ids: CallIds) -> JsonObject:
        """Wire request body -> neutral ``model_input`` (messages, tools, systemPrompt, model, params)."""

    def is_streaming(self, request: JsonObject) -> bool:
        """Whether the request asked for a streamed (SSE) response."""

    def model_output(self, body: bytes, *, streamed: bool, ids: CallIds) -> JsonObject:
        """Wire response (JSON, or the whole SSE stream) -> neutral ``model_output`` payload."""

    def wire_response(self, output: JsonObject, request: JsonObject) -> WireResponse:
        """Neutral ``model_output`` -> a response in the shape the request asked for (JSON or SSE),
        carrying the neutral ``call-N`` ids, that the real SDK accepts."""
