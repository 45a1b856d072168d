"""The built-in agent's clients of OpenAI's two APIs, Chat Completions and Responses, on the official
``openai`` SDK (see ``sdk.py`` for the interface).

The body (``wire_request``'s) is passed as the keyword arguments of the SDK's ``create``; a field
``create`` has no argument for (a setting newer or older than the installed SDK, or one a
compatible server has) goes in ``extra_body``, so it is sent all the same. ``model`` and ``stream``
are the agent's, whatever the body says. A stream is read to its end and closed; a Chat stream asks
for its usage chunk (``stream_options.include_usage``, transport only: no model_input holds it), so
that each call's token counts are known. ``http_client``
hands the SDK its own ``httpx2.Client`` (bench/bench_agent.py puts it on an in-memory transport).
"""

from __future__ import annotations

import inspect
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import openai

from otel_blackbox._types import JsonObject

if TYPE_CHECKING:  # the SDK's own HTTP library, for the annotation only (the SDK imports it)
    import httpx2

__all__ = ["ChatClient", "ResponsesClient"]


# The arguments of ``create`` that are the SDK's own, not the request's: a body field of that name
# goes in extra_body, where it is sent as a field.
_SDK_ARGUMENTS = frozenset({"extra_headers", "extra_query", "extra_body", "timeout"})
_AGENTS = frozenset({"model", "stream"})


class _Client:
    """One SDK client (credentials and base URL from OPENAI_API_KEY / OPENAI_BASE_URL, or
    ``base_url``), and the ``create`` of one API: the client's attribute path ``ENDPOINT`` names."""

    ENDPOINT: ClassVar[str]
    STREAM_USAGE: ClassVar[bool] = False  # a stream carries its usage only when asked

    def __init__(self, *, base_url: str | None, http_client: httpx2.Client | None = None) -> None:
        # base_url None: the SDK reads OPENAI_BASE_URL, else its default; http_client None, its own.
        self._client = openai.OpenAI(base_url=base_url, http_client=http_client)
        self._create: Callable[..., Any] = operator.attrgetter(self.ENDPOINT)(self._client)
        self._arguments = frozenset(inspect.signature(self._create).parameters) - _SDK_ARGUMENTS - _AGENTS

    def send(self, body: JsonObject, *, model: str, stream: bool) -> None:
        given = {k: v for k, v in body.items() if k not in _AGENTS}
        kwargs = {k: v for k, v in given.items() if k in self._arguments}
        extra = {k: v for k, v in given.items() if k not in self._arguments}
        if not stream:
            self._create(**kwargs, model=model, extra_body=extra or None)
            return
        if self.STREAM_USAGE and "stream_options" not in body:  # the token counts --max-cost needs
            kwargs["stream_options"] = {"include_usage": True}
        with self._create(**kwargs, model=model, stream=True, extra_body=extra or None) as events:
            for _ in events:
                pass

    def close(self) -> None:
        self._client.close()


class ChatClient(_Client):
    """``client.chat.completions.create``."""

    ENDPOINT = "chat.completions.create"
    STREAM_USAGE = True


class ResponsesClient(_Client):
    """``client.responses.create``."""

    ENDPOINT = "responses.create"
