"""Which translation reads a request: the one place that lists the providers and asks them.

``sessions._provider_for`` does the same over its own list (it predates this module).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from .anthropic import AnthropicMessages
from .base import Provider
from .openai_chat import OpenAIChat
from .openai_responses import OpenAIResponses

__all__ = ["PROVIDERS", "provider_for"]

PROVIDERS: tuple[Provider, ...] = (OpenAIChat(), OpenAIResponses(), AnthropicMessages())


def provider_for(method: str, url: str) -> Provider | None:
    """The translation for a request to this endpoint, or None when it is not a model call we read."""
    path = urlsplit(url).path
    return next((p for p in PROVIDERS if p.handles(method, path)), None)
