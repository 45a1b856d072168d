"""The built-in agent's Anthropic Messages client, on the official ``anthropic`` SDK.

``send`` hands the SDK the body ``AnthropicMessages.wire_request`` built: the fields ``messages.create``
takes as arguments as those, every other one (``temperature``, ``top_p``, ``top_k``, which this SDK has
no argument for, or a field newer than it) in ``extra_body``, where the SDK sends it as it is. A stream
is ``create(stream=True)`` read to its last event. The key and the base URL are the SDK's own:
``ANTHROPIC_API_KEY`` (or ``ANTHROPIC_AUTH_TOKEN``) and ``ANTHROPIC_BASE_URL``, unless ``base_url``.
"""

from __future__ import annotations

import inspect
from typing import Any

import anthropic
from anthropic.resources.messages import Messages

from otel_blackbox._types import JsonObject

__all__ = ["AnthropicClient"]


# The SDK's own arguments that are no body field, and those it sends as headers (a body field of
# that name goes in the body, as built).
_NOT_BODY = frozenset(
    {"self", "model", "stream", "extra_headers", "extra_query", "extra_body", "timeout", "user_profile_id",
     "workspace_id"}
)  # fmt: skip
_ARGUMENTS = frozenset(inspect.signature(Messages.create).parameters) - _NOT_BODY


class AnthropicClient:
    """One ``messages.create`` a call, JSON or streamed, through one SDK client made up front."""

    def __init__(self, *, base_url: str | None) -> None:
        self._client = anthropic.Anthropic(base_url=base_url)
        client = self._client
        if client.api_key is None and client.auth_token is None and client.credentials is None:
            # The SDK would fail only at the first call, with a TypeError: refuse here, as openai does.
            client.close()
            raise ValueError("no credentials: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)")

    def send(self, body: JsonObject, *, model: str, stream: bool) -> None:
        kwargs: dict[str, Any] = {k: v for k, v in body.items() if k in _ARGUMENTS}
        extra = {k: v for k, v in body.items() if k not in _ARGUMENTS and k not in ("model", "stream")}
        if extra:
            kwargs["extra_body"] = extra
        if stream:
            with self._client.messages.create(model=model, stream=True, **kwargs) as events:
                for _ in events:
                    pass
            return
        # An explicit timeout (the client's own) skips the SDK's refusal of a large max_tokens without
        # streaming: the incident made that call, so the rerun makes it too.
        self._client.messages.create(model=model, timeout=self._client.timeout, **kwargs)

    def close(self) -> None:
        self._client.close()
