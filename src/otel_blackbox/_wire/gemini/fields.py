"""generationConfig's settings that have a neutral name: read by the translation, written back by
requests.py."""

from __future__ import annotations

__all__ = ["GENERATION_PARAMS"]

GENERATION_PARAMS = {"maxOutputTokens": "maxTokens", "temperature": "temperature", "topP": "topP",
           "stopSequences": "stop"}  # fmt: skip
