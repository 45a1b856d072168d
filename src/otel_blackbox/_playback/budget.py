"""``rerun --max-cost USD``: a budget that stops a rerun before the model call it can no longer afford.

Before each model call the child's calls so far are priced (_cost/cassettes.py: each model_output's
``tokenUsage``, for the model its request named, which is ``--model`` when given, at its API's
provider). Once that reaches the budget, or once a call cannot be priced (its response carried no
token counts, or genai-prices knows no price for its model), the call is not made: the rerun stops
with ``RunStopped("max_cost")``, which the child records as ``run_failed`` / ``max_cost``. A model
with no price is refused before any call where it is known up front (``unpriced``). Only answered
calls count: a program's call still in flight when its next one starts is not counted yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from otel_blackbox._cassette.model import Cassette
from otel_blackbox._cost.cassettes import CassetteCost, cassette_cost
from otel_blackbox._cost.prices import Call, format_usd, price_call, prices_version
from otel_blackbox._cost.usage import TokenUsage
from otel_blackbox._playback.record import RunStopped
from otel_blackbox._render.words import counted
from otel_blackbox._wire.apis import PRICE_PROVIDERS

__all__ = ["MAX_COST", "Budget", "parse_usd", "unpriced"]

MAX_COST = "max_cost"  # the run_failed reason
_PROBE = TokenUsage(input=1000, output=1000)


def parse_usd(text: str) -> Decimal:
    """A budget as given (``0.50``, ``$2``): a positive amount of US dollars; ValueError otherwise."""
    try:
        amount = Decimal(text.strip().removeprefix("$"))
    except InvalidOperation:
        raise ValueError(f"not an amount in US dollars: {text!r} (give one such as 0.50)") from None
    if not amount.is_finite() or amount <= 0:
        raise ValueError(f"a budget must be a positive amount in US dollars, not {text!r}")
    return amount


def unpriced(model: str, api: str | None) -> str | None:
    """Why ``--max-cost`` cannot count the calls of ``model`` on ``api``, or None when it can."""
    if price_call(Call(model, PRICE_PROVIDERS.get(api or ""), _PROBE), any_provider=True) is not None:
        return None
    return f"no price for model {model!r} in {prices_version()}, so --max-cost cannot count its calls"


@dataclass(frozen=True)
class Budget:
    limit: Decimal

    @property
    def shown(self) -> str:
        """The budget as given: ``$0.50``."""
        return f"${self.limit:f}"

    def before_call(self, child: Cassette, *, model: str | None, api: str | None, call: int) -> None:
        """RunStopped when model call number ``call`` (from 1), of ``model`` on ``api``, must not be made:
        the child's calls so far reach the budget, or what they (or this one) cost cannot be counted."""
        cost = cassette_cost(child)
        head = f"[blackbox] stopped before model call {call}"
        reason = _uncounted(cost, model, api)
        if reason is not None:
            raise RunStopped(MAX_COST, f"{head}: {reason}", maxCost=float(self.limit), model=model)
        usd = cost.usd or Decimal(0)
        if usd >= self.limit:
            calls = counted(len(cost.calls), "model call")
            raise RunStopped(
                MAX_COST,
                f"{head}: the {calls} so far cost {format_usd(usd)}, which reaches --max-cost {self.shown}",
                maxCost=float(self.limit),
                costUsd=float(usd),
            )


def _uncounted(cost: CassetteCost, model: str | None, api: str | None) -> str | None:
    """Why the budget cannot count the calls so far or the next one, or None when it can."""
    for n, call in enumerate(cost.calls, 1):
        if call.usage is None:
            return (
                f"the response of model call {n} (step {call.step}) carried no token counts, so --max-cost "
                "cannot count what the run spent (an OpenAI Chat stream has them with stream_options="
                '{"include_usage": true})'
            )
        if call.price is None:
            return (
                f"model call {n} (step {call.step}) has no price for model {call.model!r} in "
                f"{prices_version()}, so --max-cost cannot count it"
            )
    if not model:
        return "the request names no model, so --max-cost cannot price it"
    return unpriced(model, api)
