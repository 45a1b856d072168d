"""What both OpenAI translations write a request with (``openai_chat``, ``openai_responses``): the
request being built, and the conversation's messages written one after the other."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, TypeVar

from otel_blackbox._types import JsonObject
from otel_blackbox._wire.neutral_parts import objects_of

__all__ = ["Building", "WrittenMessages"]


@dataclass
class Building:
    """A request being built from a model_input: whether it was recorded on this API, and the
    phrases of what it says that the request cannot (each once, in the order met)."""

    native: bool
    dropped: list[str] = field(default_factory=list)

    def drop(self, what: str) -> None:
        if what not in self.dropped:
            self.dropped.append(what)


_Written = TypeVar("_Written", bound="WrittenMessages")


@dataclass
class WrittenMessages(ABC):
    """A conversation's messages written one after the other in an OpenAI API's shape (``add``):
    what a message becomes depends on the calls before it (``names``), never on what follows."""

    native: bool
    build: Building = field(init=False)
    out: list[JsonObject] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)  # the calls so far: id -> tool name

    def __post_init__(self) -> None:
        self.build = Building(self.native)

    def extended(self: _Written, messages: Any) -> _Written:
        """These messages written after those written so far (a value that is no list: none)."""
        for message in objects_of(messages):
            self.add(message)
        return self

    @abstractmethod
    def add(self, message: JsonObject) -> None:
        """Write one message after those written so far (each API's writer says how)."""
