"""What a cassette's model calls cost, in US dollars, from the ``tokenUsage`` of its model_outputs.

Each model_output is priced with otel_blackbox._cost.spans (genai-prices, never a table of ours) for the
model its ``model_input`` asked for, at the provider of the cassette's API (its ``api`` hint, else a
built-in agent's ``agent.provider``: ``openai-chat`` and ``openai-responses`` are openai,
``anthropic`` anthropic, ``gemini`` google), at the prices in force when the call was recorded (the
step's timestamp). The hint is the first call's API: a model that provider does not price (a later
call on another API, or through a compatible proxy) is priced at the provider genai-prices finds
for the model name. A call with no ``tokenUsage``, or whose model the data does not know, has no price
(never $0); the total is the sum of the priced calls, None when none is.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from otel_blackbox._cassette.model import Cassette
from otel_blackbox._cost.spans import Price, TokenUsage, format_usd, price_of, total_usd
from otel_blackbox._cost.usage import usage_in
from otel_blackbox._wire.apis import PRICE_PROVIDERS

__all__ = [
    "CallCost",
    "CassetteCost",
    "call_costs",
    "cassette_cost",
    "price_call",
    "token_usage",
]

_YEAR_9999_MS = 253_402_300_799_000


@dataclass(frozen=True)
class CallCost:
    """One model call: the model_output's step, the model asked for, its tokens and its price."""

    step: int
    model: str | None
    usage: TokenUsage | None
    price: Price | None


@dataclass(frozen=True)
class CassetteCost:
    calls: list[CallCost]

    @property
    def usd(self) -> Decimal | None:
        return total_usd([c.price for c in self.calls])

    @property
    def dollars(self) -> float | None:
        usd = self.usd
        return None if usd is None else float(usd)

    @property
    def unpriced(self) -> list[CallCost]:
        return [c for c in self.calls if c.price is None]

    def describe(self) -> str:
        """``$0.0123``; ``$0.0123 (1 of 3 model calls has no price)``; ``-`` and why when none has one."""
        missing = len(self.unpriced)
        if not self.calls:
            return "- (no model call)"
        if not missing:
            return format_usd(self.usd)
        if all(c.usage is None for c in self.calls):
            return "- (no token counts recorded)"
        verb = "has" if missing == 1 else "have"
        return f"{format_usd(self.usd)} ({missing} of {len(self.calls)} model calls {verb} no price)"


def provider_of_api(cassette: Cassette) -> str | None:
    """genai-prices' provider of the cassette's API, or None when it does not say."""
    for hint in (cassette.api, cassette.agent):
        name = hint.get("name", hint.get("provider")) if isinstance(hint, dict) else None
        if isinstance(name, str) and name in PRICE_PROVIDERS:
            return PRICE_PROVIDERS[name]
    return None


def token_usage(output: Any) -> TokenUsage | None:
    """A model_output's ``tokenUsage`` as pricing takes it; None when it has none (or a malformed one)."""
    try:
        usage = usage_in(output)
    except ValueError:
        return None
    if usage is None:
        return None
    given = usage.get("inputTokens", 0)
    return TokenUsage(
        input=given,
        output=usage.get("outputTokens", 0),
        cache_read=min(usage.get("cacheReadTokens", 0), given),
        cache_write=usage.get("cacheWriteTokens", 0),
    )


def call_costs(cassette: Cassette, *, provider: str | None = None) -> list[CallCost]:
    """Every model call of the cassette, in order, priced (``provider``: instead of the API's)."""
    provider = provider or provider_of_api(cassette)
    costs: list[CallCost] = []
    model: str | None = None
    for step in cassette.steps:
        payload = step.payload if isinstance(step.payload, dict) else {}
        if step.type == "model_input":
            model = payload.get("model") if isinstance(payload.get("model"), str) else None
        elif step.type == "model_output":
            usage = token_usage(payload)
            price = None if usage is None else price_call(model, provider, usage, _at_ns(step.timestamp))
            costs.append(CallCost(step.index, model, usage, price))
    return costs


def price_call(
    model: str | None, provider: str | None, usage: TokenUsage, at_ns: int | None = None
) -> Price | None:
    """The price of one call: at ``provider``, else wherever genai-prices finds the model name."""
    price = price_of(model, provider, usage, at_ns)
    return price_of(model, None, usage, at_ns) if price is None and provider is not None else price


def _at_ns(timestamp: Any) -> int | None:
    """A step's timestamp (milliseconds) in nanoseconds; None (today's prices) for one no date can hold."""
    if isinstance(timestamp, bool) or not isinstance(timestamp, (int, float)):
        return None
    return int(timestamp) * 1_000_000 if 0 < timestamp < _YEAR_9999_MS else None


def cassette_cost(cassette: Cassette, *, provider: str | None = None) -> CassetteCost:
    return CassetteCost(call_costs(cassette, provider=provider))
