"""OpenAI Responses' request fields: how each top-level field of a request enters ``model_input``
(``RequestFields``, in ``_wire/request_fields.py``).

On the analysis side with the rest of ``_wire``: ``read_request`` reads a request with it, and a
cassette built from spans reads a span's recorded request settings with the same table.
"""

from __future__ import annotations

from otel_blackbox._wire.request_fields import RequestFields

__all__ = ["RESPONSES_FIELDS"]

RESPONSES_FIELDS = RequestFields(
    read=frozenset({"input", "instructions", "model", "tools"}),
    neutral={
        "max_output_tokens": "maxTokens",
        "temperature": "temperature",
        "top_p": "topP",
        "tool_choice": "toolChoice",
    },
    nested={"text": ("format", "responseFormat")},
    transport={
        "stream": "how the answer is delivered (one JSON body or server-sent events), not what it says",
        "stream_options": "options of the event stream (obfuscation padding), not of the answer",
        "metadata": "the program's own labels, stored with the response",
        "user": "an end-user identifier, for abuse detection and cache bucketing",
        "safety_identifier": "an end-user identifier, for abuse detection",
        "service_tier": "the processing tier: latency and price, not the answer",
        "prompt_cache_key": "a prompt-cache bucketing key: latency and price, not the answer",
        "prompt_cache_retention": "how long the prompt cache keeps a prefix",
        "prompt_cache_options": "the prompt cache's breakpoints and lifetime",
        "store": "whether the API stores the response for later retrieval",
        "include": "what the response reports (encrypted reasoning, sources...), not what the model does",
        "background": "whether the API runs the response in the background, to be polled",
        "background_options": "the background run's completion window",
        "top_logprobs": "log probabilities the response reports, not what the model does",
        "previous_response_id": "a response id: in replay it is one the replay made up, so it differs by "
        "construction; the history it names is the run's earlier steps",
    },
    behaviour=(
        "reasoning",
        "parallel_tool_calls",
        "max_tool_calls",
        "truncation",
        "prompt",
        "conversation",
        "context_management",
        "moderation",
        "image",
        "access_programs",
    ),
)
