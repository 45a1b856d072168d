"""What an LLM call cost, in US dollars, computed when read from the tokens its span recorded.

Prices come from prices.py (genai-prices), at the prices in force when the call was made (the
span's start time); the token counts from usage.py.

Tokens: the span's prompt and completion counts (the store's columns), and where the spans recorded
them, the cached (read), cache-write and reasoning details: OpenInference's
``llm.token_count.prompt_details.cache_read`` / ``cache_write`` /
``completion_details.reasoning`` and gen_ai's ``gen_ai.usage.cache_read.input_tokens`` /
``cache_creation.input_tokens`` / ``reasoning.output_tokens``. The prompt count includes its cached
tokens (both conventions say so); they are priced at the cache rates. Reasoning tokens are priced as
output: added to the completion count only when the span's total shows the completion left them out.

The provider (OpenInference's ``llm.provider`` / ``llm.system``, gen_ai's ``gen_ai.provider.name`` /
``gen_ai.system``) decides the price of a model name where it is known.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from otel_blackbox._cost.prices import Call, Cost, Price, price_call
from otel_blackbox._cost.usage import usage_of

if TYPE_CHECKING:
    from otel_blackbox._store.queries import SpanRecord

__all__ = [
    "PROVIDER_KEYS",
    "call_of",
    "is_priced_call",
    "price_span",
    "provider_of",
    "span_price",
    "spans_cost",
]


PROVIDER_KEYS = ("llm.provider", "gen_ai.provider.name", "gen_ai.system", "llm.system")


# The conventions' provider names -> genai-prices' provider ids (the same name where absent).
_PROVIDERS = {
    "gcp.gemini": "google",
    "gcp.vertex_ai": "google",
    "gcp.gen_ai": "google",
    "gemini": "google",
    "google_genai": "google",
    "vertexai": "google",
    "aws.bedrock": "aws",
    "bedrock": "aws",
    "azure.ai.openai": "azure",
    "azure.ai.inference": "azure",
    "azure_openai": "azure",
    "mistral_ai": "mistral",
    "mistralai": "mistral",
    "xai": "x-ai",
    "x_ai": "x-ai",
}


def provider_of(attributes: Mapping[str, Any]) -> str | None:
    """genai-prices' id of the provider the span names, or None."""
    for key in PROVIDER_KEYS:
        value = attributes.get(key)
        if isinstance(value, str) and value.strip():
            name = value.strip().lower()
            return _PROVIDERS.get(name, name)
    return None


def call_of(
    model: str | None,
    prompt_tokens: int | None,
    completion_tokens: int | None,
    total_tokens: int | None,
    attributes: Mapping[str, Any],
    start_ns: int | None = None,
) -> Call | None:
    usage = usage_of(prompt_tokens, completion_tokens, total_tokens, attributes)
    return None if usage is None else Call(model, provider_of(attributes), usage, start_ns)


def price_span(
    model: str | None,
    prompt_tokens: int | None,
    completion_tokens: int | None,
    total_tokens: int | None,
    attributes: Mapping[str, Any],
    *,
    start_ns: int | None = None,
    as_model: str | None = None,
) -> Price | None:
    """The price of one LLM span; ``as_model`` prices its tokens as if that model had answered
    (its provider then comes from the data, not the span)."""
    call = call_of(model, prompt_tokens, completion_tokens, total_tokens, attributes, start_ns)
    return None if call is None else price_call(call, as_model=as_model)


def span_price(span: SpanRecord, *, as_model: str | None = None) -> Price | None:
    """The price of a stored span (None for a span that is not a priced LLM call)."""
    if span.model is None and as_model is None:
        return None
    return price_span(
        span.model,
        span.prompt_tokens,
        span.completion_tokens,
        span.total_tokens,
        span.attributes,
        start_ns=span.start_ns,
        as_model=as_model,
    )


def is_priced_call(span: SpanRecord) -> bool:
    """An LLM call that can be priced: a span of kind LLM with token counts (as llm_calls.py reads
    them), whether or not genai-prices knows its model."""
    return span.oi_span_kind == "LLM" and (
        span.prompt_tokens is not None or span.completion_tokens is not None
    )


def spans_cost(spans: list[SpanRecord], *, as_model: str | None = None) -> Cost:
    """What the LLM calls among ``spans`` cost."""
    return Cost.of(span_price(s, as_model=as_model) for s in spans if is_priced_call(s))
