"""Gemini's fields: how each top-level field of a ``generateContent`` request enters ``model_input``
(``GEMINI_FIELDS``, a ``RequestFields``: ``_wire/request_fields.py``), the settings of its
``generationConfig`` that have a neutral name, and the fields of a response's candidate that report
a hosted tool. Read by ``read_request`` and ``read_response``, written back by ``write_request`` and
``write_response``; a cassette built from spans reads recorded settings with the same tables.
"""

from __future__ import annotations

from otel_blackbox._wire.request_fields import RequestFields

__all__ = ["FOUND_FIELDS", "GEMINI_FIELDS", "GENERATION_PARAMS"]

# The top-level fields, as the API spells them. The settings in generationConfig are read by
# read_request.py itself (each under its own name but the neutral ones, GENERATION_PARAMS), and
# toolConfig is toolChoice.
GEMINI_FIELDS = RequestFields(
    read=frozenset({"contents", "systemInstruction", "tools", "toolConfig", "generationConfig"}),
    neutral={},
    transport={
        "labels": "the program's own billing labels; the model never sees them",
        "serviceTier": "the processing tier: latency and price, not the answer",
        "store": "whether the API keeps the request and response",
        "continuationToken": "a token a response handed out to continue it; replay hands out none, and "
        "the history it stands for is the run's earlier steps",
    },
    behaviour=("safetySettings", "cachedContent"),
)

# generationConfig's settings that have a neutral name.
GENERATION_PARAMS = {"maxOutputTokens": "maxTokens", "temperature": "temperature", "topP": "topP",
                     "stopSequences": "stop"}  # fmt: skip

# The hostedTools a candidate's metadata holds (not parts), and the field each one is.
FOUND_FIELDS = {"google_search": "groundingMetadata", "grounding": "groundingMetadata",
                "url_context": "urlContextMetadata"}  # fmt: skip
