"""The LLM APIs this project reads and writes: the one list of their names, and what each name
maps to outside the wire (genai-prices' provider id, the SDK the built-in agent calls).

The names are the translations' own (``Provider.name``) and the ``--provider`` choices of ``rerun``.
This module imports nothing, so the CLI can list the choices without loading a translation.
"""

from __future__ import annotations

__all__ = ["API_NAMES", "PRICE_PROVIDERS", "SDK_PACKAGES"]

API_NAMES = ("openai-chat", "openai-responses", "anthropic", "gemini")

# API name -> genai-prices' provider id, to price a cassette's calls.
PRICE_PROVIDERS = {
    "openai-chat": "openai",
    "openai-responses": "openai",
    "anthropic": "anthropic",
    "gemini": "google",
}

# API name -> the package (and pip name) of the official SDK the built-in agent calls.
SDK_PACKAGES = {
    "openai-chat": "openai",
    "openai-responses": "openai",
    "anthropic": "anthropic",
    "gemini": "google-genai",
}
