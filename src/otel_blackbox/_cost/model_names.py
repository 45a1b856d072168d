"""Model names as providers and routers write them, and the names genai-prices knows them by.

LiteLLM and other routers prefix the provider (``openai/gpt-4o-mini``, ``anthropic/claude-...``,
``gemini/gemini-2.5-flash``, ``bedrock/anthropic.claude-...``); Gemini's API and Vertex name a model by
its resource path (``models/gemini-2.5-flash``, ``publishers/google/models/gemini-2.5-flash``,
``projects/P/locations/L/publishers/google/models/...``); Bedrock ids carry a vendor, a region prefix
and a version (``us.anthropic.claude-3-5-sonnet-20240620-v1:0``), which genai-prices knows under the
provider ``aws``. ``candidates`` gives the (model, provider) pairs to try, the name as written first.
"""

from __future__ import annotations

import re

__all__ = ["candidates"]

# A router's provider prefix -> genai-prices' provider id.
_PREFIXES = {
    "openai": "openai",
    "azure": "azure",
    "anthropic": "anthropic",
    "gemini": "google",
    "google": "google",
    "vertex_ai": "google",
    "vertex": "google",
    "bedrock": "aws",
    "aws": "aws",
    "mistral": "mistral",
    "groq": "groq",
    "deepseek": "deepseek",
    "xai": "x-ai",
    "cohere": "cohere",
    "together_ai": "together",
    "fireworks_ai": "fireworks",
    "openrouter": "openrouter",
}
_RESOURCE = re.compile(r"^(?:projects/[^/]+/locations/[^/]+/)?(?:publishers/[^/]+/)?models/(?P<name>[^/]+)$")
# Bedrock: [region.]vendor.model[-vN[:M]]
_BEDROCK = re.compile(r"^(?:(?:us|eu|apac|global|us-gov)\.)?[a-z0-9-]+\.[A-Za-z0-9][\w.:-]*$")


def candidates(model: str, provider: str | None) -> list[tuple[str, str | None]]:
    """The (model, provider) pairs to look a recorded model name up by, in order, without repeats."""
    found: list[tuple[str, str | None]] = [(model, provider)]
    name = model.strip()
    prefix, _, rest = name.partition("/")
    if rest and prefix.lower() in _PREFIXES:
        routed = _PREFIXES[prefix.lower()]
        found += [(rest, provider), (rest, routed)]
        name = rest
    resource = _RESOURCE.match(name)
    if resource is not None:
        name = resource.group("name")
        found += [(name, provider), (name, "google")]
    if _BEDROCK.match(name) and "/" not in name:
        found.append((name, "aws"))
    return list(dict.fromkeys(found))
