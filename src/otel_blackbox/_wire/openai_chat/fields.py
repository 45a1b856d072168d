"""OpenAI Chat Completions' request fields: how each top-level field of a request enters
``model_input`` (``RequestFields``, in ``_wire/request_fields.py``).

On the analysis side with the rest of ``_wire``: ``read_request`` reads a request with it, and a
cassette built from spans reads a span's recorded request settings with the same table.
"""

from __future__ import annotations

from otel_blackbox._wire.request_fields import RequestFields

__all__ = ["CHAT_FIELDS"]

CHAT_FIELDS = RequestFields(
    read=frozenset({"messages", "model", "tools"}),
    neutral={
        "max_tokens": "maxTokens",
        "max_completion_tokens": "maxTokens",
        "temperature": "temperature",
        "top_p": "topP",
        "tool_choice": "toolChoice",
        "response_format": "responseFormat",
        "stop": "stop",
    },
    transport={
        "stream": "how the answer is delivered (one JSON body or SSE chunks), not what it says",
        "stream_options": "what a stream carries besides the answer (a usage chunk, obfuscation padding)",
        "metadata": "tags for the stored completion and the dashboard; the model never sees them",
        "user": "an end-user identifier for abuse monitoring and caching, not a prompt",
        "safety_identifier": "an end-user identifier for abuse detection, not a prompt",
        "service_tier": "the processing tier: latency and price, not the answer",
        "prompt_cache_key": "a prompt-cache routing key: a hit costs less, the answer is the same",
        "prompt_cache_retention": "how long cached prefixes are kept, not the answer",
        "prompt_cache_options": "prompt-cache breakpoints and their lifetime, not the answer",
        "store": "whether OpenAI keeps the completion for evals and distillation",
        "logprobs": "whether log-probabilities are reported beside the answer, not what it says",
        "top_logprobs": "how many alternatives the log-probabilities list, not what the answer says",
    },
    behaviour=(
        "seed",
        "parallel_tool_calls",
        "reasoning_effort",
        "frequency_penalty",
        "presence_penalty",
        "logit_bias",
        "n",
        "modalities",
        "audio",
        "prediction",
        "verbosity",
        "web_search_options",
        "functions",
        "function_call",
        "moderation",
    ),
)
