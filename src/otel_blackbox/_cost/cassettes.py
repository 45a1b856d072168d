"""What a cassette's model calls cost, in US dollars, from the ``tokenUsage`` of its model_outputs.

Each model_output is priced with prices.py (genai-prices, never a table of ours) for the
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
from otel_blackbox._cost.prices import Call, Price, format_usd, price_call, total_usd
from otel_blackbox._cost.usage import TokenUsage, token_usage
from otel_blackbox._wire.apis import PRICE_PROVIDERS

__all__ = ["CallCost", "CassetteCost", "call_costs", "cassette_cost", "provider_of_api"]


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
            at_ns = _at_ns(step.timestamp)
            price = (
                None if usage is None else price_call(Call(model, provider, usage, at_ns), any_provider=True)
            )
            costs.append(CallCost(step.index, model, usage, price))
    return costs


def _at_ns(timestamp: Any) -> int | None:
    """A step's timestamp (milliseconds) in nanoseconds; None (today's prices) for one no date can hold."""
    if isinstance(timestamp, bool) or not isinstance(timestamp, (int, float)):
        return None
    return int(timestamp) * 1_000_000 if 0 < timestamp < _YEAR_9999_MS else None


def cassette_cost(cassette: Cassette, *, provider: str | None = None) -> CassetteCost:
    return CassetteCost(call_costs(cassette, provider=provider))
