"""A run's requests at a flat cost per turn: the wire form of the messages already sent, kept.

Turn N of the built-in agent sends every message before it, so writing each request from scratch
(``Provider.wire_request``) translates the whole conversation again: O(N) a turn, O(N^2) a run.
``RequestMemo`` keeps, for one conversation, the writer of its API's request (``write_request``'s
messages writer: what a message becomes depends on the messages before it, never on those after)
and the message objects it has written; a request whose messages begin with those very objects
only writes the new ones. The body is the one ``wire_request`` builds, byte for byte: the same
functions write it, in the same order (tests/unit/wire/test_wire_request_memo.py).

The messages must not change once sent, nor the list but by appends (the agent loop only appends to
its list); a request that does not extend the last one (another conversation, a rewritten history)
starts over. A memo holds
one conversation: the run's own, dropped with it.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any, Protocol

from otel_blackbox._types import JsonObject
from otel_blackbox._wire.anthropic.write_request import AnthropicMessagesWriter
from otel_blackbox._wire.gemini.write_request import GeminiContents, gemini_body
from otel_blackbox._wire.openai_chat.write_request import ChatMessages, chat_body
from otel_blackbox._wire.openai_responses.write_request import ResponsesInput, responses_body
from otel_blackbox._wire.protocol import Provider, WireRequest

__all__ = ["RequestMemo"]


class _Writer(Protocol):
    def extended(self, messages: Any) -> Any: ...


def _anthropic(model_input: JsonObject, writer: Any, stream: bool) -> WireRequest:
    return writer.request(model_input, stream)  # type: ignore[no-any-return]


def _chat(model_input: JsonObject, writer: Any, stream: bool) -> WireRequest:
    return chat_body(model_input, writer, stream=stream)


def _responses(model_input: JsonObject, writer: Any, stream: bool) -> WireRequest:
    return responses_body(model_input, writer, stream=stream)


def _gemini(model_input: JsonObject, writer: Any, stream: bool) -> WireRequest:
    return gemini_body(model_input, writer)  # the URL says whether it streams


# API name -> (a new messages writer, given ``native``; the request around what it wrote).
_WRITERS: dict[str, tuple[Callable[[bool], _Writer], Callable[[JsonObject, Any, bool], WireRequest]]] = {
    "openai-chat": (ChatMessages, _chat),
    "openai-responses": (ResponsesInput, _responses),
    "anthropic": (AnthropicMessagesWriter, _anthropic),
    "gemini": (GeminiContents, _gemini),
}


class RequestMemo:
    """``provider.wire_request`` for the successive requests of one conversation, each writing only
    the messages the last one did not have (the module docstring)."""

    def __init__(self, provider: Provider, *, native: bool) -> None:
        self.provider = provider
        self.native = native
        self._kind = _WRITERS.get(provider.name)
        self._writer: _Writer | None = None
        self._list: list[Any] = []  # the list whose first ``_count`` messages the writer has written
        self._count = 0

    def wire_request(self, model_input: JsonObject, *, stream: bool) -> WireRequest:
        messages = model_input.get("messages")
        if self._kind is None or not isinstance(messages, list):
            return self.provider.wire_request(model_input, stream=stream, native=self.native)
        new_writer, request = self._kind
        if self._writer is None or not self._extends(messages):
            self._writer, self._list, self._count = new_writer(self.native), [], 0
        try:
            self._writer.extended(messages[self._count :])
            wire = request(model_input, self._writer, stream)
        except Exception:  # the translation's own error, as it words it: from the whole request
            self._writer, self._list, self._count = None, [], 0
            return self.provider.wire_request(model_input, stream=stream, native=self.native)
        self._list, self._count = messages, len(messages)
        return wire

    def _extends(self, messages: list[Any]) -> bool:
        """Whether ``messages`` begins with the messages written. The agent's own list, grown by
        appends, is taken as it is (nothing to compare: flat); another list is compared message by
        message, by identity, not equality: True == 1, yet they are written apart."""
        count = self._count
        if len(messages) < count:
            return False
        if messages is self._list:
            return True
        return all(map(operator.is_, messages[:count], self._list[:count]))
