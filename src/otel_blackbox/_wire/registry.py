"""Which translation reads a request: the one place that lists the providers and asks them."""

from __future__ import annotations

from urllib.parse import urlsplit

from otel_blackbox._wire.anthropic.translation import AnthropicMessages
from otel_blackbox._wire.gemini.translation import GeminiGenerateContent
from otel_blackbox._wire.openai_chat.translation import OpenAIChat
from otel_blackbox._wire.openai_responses.translation import OpenAIResponses
from otel_blackbox._wire.protocol import Provider

__all__ = ["PROVIDERS", "provider_for"]

PROVIDERS: tuple[Provider, ...] = (
    OpenAIChat(),
    OpenAIResponses(),
    AnthropicMessages(),
    GeminiGenerateContent(),
)


def provider_for(method: str, url: str) -> Provider | None:
    """The translation for a request to this endpoint, or None when it is not a model call we read."""
    path = urlsplit(url).path
    provider = next((p for p in PROVIDERS if p.handles(method, path)), None)
    # Gemini names the model (and streaming) in the URL: its translation is bound to the request's.
    return provider.at(url) if isinstance(provider, GeminiGenerateContent) else provider
