"""Anthropic Messages' request fields: how each top-level field of a request enters ``model_input``
(``RequestFields``, in ``_wire/request_fields.py``).

On the analysis side with the rest of ``_wire``: ``read_request`` reads a request with it, and a
cassette built from spans reads a span's recorded request settings with the same table.
"""

from __future__ import annotations

from otel_blackbox._wire.request_fields import RequestFields

__all__ = ["ANTHROPIC_FIELDS"]

ANTHROPIC_FIELDS = RequestFields(
    read=frozenset({"messages", "model", "system", "tools"}),
    neutral={
        "max_tokens": "maxTokens",
        "temperature": "temperature",
        "top_p": "topP",
        "tool_choice": "toolChoice",
        "stop_sequences": "stop",
    },
    nested={"output_config": ("format", "responseFormat")},
    transport={
        "stream": "how the answer is delivered (JSON or SSE), not what it says; replay answers in the "
        "shape asked",
        "metadata": "an identifier of the end user (user_id) for abuse detection; the model never sees it",
        "service_tier": "which capacity serves the request (priority or standard): latency and billing",
        "container": "the id of a container an earlier response handed out, for reuse; replay hands out "
        "none (an object's skills are compared, as params.container.skills)",
        "inference_geo": "the region the request is processed in: data residency, not the answer",
        "cache_control": "a prompt-cache marker on the last cacheable block: cost and latency, not the "
        "answer",
        "diagnostics": "asks for a report of prompt-cache misses against an earlier message id: reporting",
        "user_profile_id": "whom the request is attributed to (the SDK sends it as a header)",
        "workspace_id": "which workspace the request is billed to (the SDK sends it as a header)",
        "speed": "output tokens per second (fast mode: the same model, faster, at another price): how "
        "fast, not what",
        "billing_policy": "who is billed for the request (beta)",
        "fallback_credit_token": "a token from an earlier refusal that bills a retry's cache at the read "
        "rate (beta)",
        "thread": "server-held conversation state (beta): a message id a response handed out (replay "
        "hands out its own); the messages compared are the ones this request sent",
    },
    behaviour=("thinking", "top_k", "mcp_servers", "context_management", "compaction", "fallbacks"),
)
