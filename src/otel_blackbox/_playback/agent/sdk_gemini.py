"""The built-in agent's Gemini client, on the official ``google-genai`` SDK.

``send`` hands the SDK the body ``GeminiGenerateContent.wire_request`` built as its own arguments:
``contents`` as ``types.Content`` and ``systemInstruction``, ``tools``, ``toolConfig``,
``safetySettings`` and ``cachedContent`` in a ``types.GenerateContentConfig`` (the SDK's models take
the wire's camelCase names), so the SDK checks them as it checks a program's. What the SDK writes from
its models is not quite the body, though: it puts every function declaration in one tool after the
built-in ones, spells the fields of the objects it holds as models in snake_case
(``inlineData.mime_type``, ``thinkingConfig.thinking_budget``), writes a whole number as a float where
it holds a float (``topK``), and bytes in URL-safe base64 (a ``thoughtSignature``). The recorded
history would then come back other than it was. So the body itself also goes in the request's
``http_options.extra_body``, which the SDK merges over what it wrote (a list whole, an object key by
key): the request carries the body as built, ``generationConfig`` included (every setting, those this
SDK has no field for too). Automatic function calling is off: every call the model makes is the
agent's to answer, never run here. ``generate_content_stream`` is read to its last chunk.

The key is the SDK's own (``GOOGLE_API_KEY``, else ``GEMINI_API_KEY``; ``GOOGLE_GENAI_USE_VERTEXAI``
and its project settings for Vertex AI), and so is the base URL, ``GOOGLE_GEMINI_BASE_URL`` (on Vertex
AI ``GOOGLE_VERTEX_BASE_URL``), which the SDK reads itself, unless ``base_url`` is given
(``types.HttpOptions(base_url=...)``).
"""

from __future__ import annotations

import copy

from google import genai
from google.genai import types

from otel_blackbox._types import JsonObject

__all__ = ["GeminiClient", "config_of"]


# The top-level body fields GenerateContentConfig holds.
_CONFIG_FIELDS = ("systemInstruction", "tools", "toolConfig", "safetySettings", "cachedContent")


def config_of(body: JsonObject) -> types.GenerateContentConfig:
    """The SDK's config for ``body``: its fields the config holds, checked by the SDK's models, and the
    whole body as the request's ``extra_body``."""
    config: JsonObject = {key: body[key] for key in _CONFIG_FIELDS if key in body}
    config["automaticFunctionCalling"] = {"disable": True}
    config["httpOptions"] = {"extraBody": copy.deepcopy(body)}
    return types.GenerateContentConfig.model_validate(config)


class GeminiClient:
    """One ``generate_content`` (or ``generate_content_stream``) a call, through one SDK client made up
    front."""

    def __init__(self, *, base_url: str | None) -> None:
        options = types.HttpOptions(base_url=base_url) if base_url else None
        self._client = genai.Client(http_options=options)

    def send(self, body: JsonObject, *, model: str, stream: bool) -> None:
        contents: list[types.Content | types.ContentDict] = [
            types.Content.model_validate(c) for c in body.get("contents") or []
        ]
        config = config_of(body)
        if stream:
            for _ in self._client.models.generate_content_stream(
                model=model, contents=contents, config=config
            ):
                pass
            return
        self._client.models.generate_content(model=model, contents=contents, config=config)

    def close(self) -> None:
        self._client.close()
