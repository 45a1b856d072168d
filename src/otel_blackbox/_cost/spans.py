"""What an LLM call cost, in US dollars, computed when read from the tokens its span recorded.

Prices come from prices.py (genai-prices), at the prices in force when the call was made (the
span's start time); the token counts from usage.py.

Which spans are model calls, their model, provider and tokens (input, output, cached, cache-write,
reasoning) come from the span's view (``_spans.view``), whatever convention wrote them; a call two
spans describe is priced once. The prompt count includes its cached tokens (the conventions say
so); they are priced at the cache rates. Reasoning tokens are priced as output: added to the
completion count only when the span's total shows the completion left them out.

The provider decides the price of a model name where it is known.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from otel_blackbox._cost.prices import Call, Cost, Price, price_call
from otel_blackbox._cost.usage import TokenUsage
from otel_blackbox._spans.view.model import SpanView, Tokens
from otel_blackbox._spans.view.registry import view_of

if TYPE_CHECKING:
    from otel_blackbox._store.queries import SpanRecord

__all__ = [
    "call_of_view",
    "is_priced_call",
    "provider_id",
    "span_price",
    "spans_cost",
    "usage_of_tokens",
]


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


def provider_id(name: object) -> str | None:
    """genai-prices' id of a provider as the spans name it, or None."""
    if not isinstance(name, str) or not name.strip():
        return None
    name = name.strip().lower()
    return _PROVIDERS.get(name, name)


def usage_of_tokens(tokens: Tokens | None) -> TokenUsage | None:
    """A view's token counts as pricing takes them (None: the call counted nothing). Reasoning tokens
    are added to the output only when the total shows the output count left them out (Gemini's)."""
    if tokens is None or not tokens.counted:
        return None
    prompt, completion = tokens.input or 0, tokens.output or 0
    reasoning = tokens.reasoning or 0
    if reasoning and tokens.total is not None and tokens.total >= prompt + completion + reasoning:
        completion += reasoning
    return TokenUsage(
        input=prompt,
        output=completion,
        cache_read=min(tokens.cache_read or 0, prompt),
        cache_write=tokens.cache_write or 0,
    )


def call_of_view(view: SpanView, start_ns: int | None = None) -> Call | None:
    """What pricing needs of a model call's view (None: it counted no tokens)."""
    usage = usage_of_tokens(view.tokens)
    return None if usage is None else Call(view.model, provider_id(view.provider), usage, start_ns)


def span_price(span: SpanRecord, *, as_model: str | None = None) -> Price | None:
    """The price of a stored span (None for a span that is not a priced model call, or one another
    span of the same call is counted for)."""
    view = view_of(span)
    if not view.counts or (view.model is None and as_model is None):
        return None
    call = call_of_view(view, span.start_ns)
    return None if call is None else price_call(call, as_model=as_model)


def is_priced_call(span: SpanRecord) -> bool:
    """A model call that can be priced: counted once, with token counts, whether or not genai-prices
    knows its model."""
    view = view_of(span)
    return view.counts and view.tokens is not None and view.tokens.counted


def spans_cost(spans: list[SpanRecord], *, as_model: str | None = None) -> Cost:
    """What the model calls among ``spans`` cost."""
    return Cost.of(span_price(s, as_model=as_model) for s in spans if is_priced_call(s))
