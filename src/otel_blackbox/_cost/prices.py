"""Prices from genai-prices (pydantic's maintained price data), never from a table of ours: the
one place that prices a call. Prices are never stored with the spans: an old call is priced with
the data installed now, at the prices in force when it was made (its start time; now when it has
none). A model or provider the data does not know has no price (``None``), never $0.

genai-prices is not imported to price a call: its figures come from price plans (rates.py),
resolved with it once per model and provider and kept in a cache file for its version
(price_cache.py); a call a plan cannot price exactly is priced by genai-prices itself. Either way
the figure is genai-prices' own, to the last digit.

A figure over several calls is a ``Cost``: the sum of the priced calls and how many have no
price, which every view shows (``$0.0097 + 1 unpriced``) rather than a sum that looks complete.
Dollars are written by ``format_usd`` alone.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING, Any

from otel_blackbox._cost import price_cache
from otel_blackbox._cost.model_names import candidates
from otel_blackbox._cost.usage import TokenUsage

if TYPE_CHECKING:
    from otel_blackbox._cost.rates import Plan

__all__ = [
    "Call",
    "Cost",
    "Price",
    "format_usd",
    "price_call",
    "price_of",
    "prices_version",
    "total_of",
    "total_usd",
    "unknown_model",
]

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_YEAR_10000_NS = 253_402_300_800 * 10**9  # datetime's bound: a start past it is priced as of now


@dataclass(frozen=True)
class Price:
    usd: Decimal
    model: str  # the model the data priced (its id)
    provider: str  # the provider whose price it is

    @property
    def dollars(self) -> float:
        return float(self.usd)


@dataclass(frozen=True)
class Call:
    """What pricing needs of one recorded LLM call."""

    model: str | None
    provider: str | None
    usage: TokenUsage
    start_ns: int | None = None


class Cost:
    """What some LLM calls cost: the sum of those with a price (None: none has one) and how many
    have no price (a model genai-prices does not know: left out of the sum, never counted as $0).
    Calls without token counts are not calls that can be priced, and are in neither. (A plain
    class: every command that shows a cost defines it, and a dataclass costs a millisecond.)"""

    __slots__ = ("unpriced", "usd")

    def __init__(self, usd: Decimal | None = None, unpriced: int = 0) -> None:
        self.usd, self.unpriced = usd, unpriced

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Cost) and (self.usd, self.unpriced) == (other.usd, other.unpriced)

    def __hash__(self) -> int:
        return hash((self.usd, self.unpriced))

    def __repr__(self) -> str:
        return f"Cost(usd={self.usd!r}, unpriced={self.unpriced})"

    @classmethod
    def of(cls, prices: Iterable[Price | None]) -> Cost:
        found = list(prices)
        return cls(total_usd(found), sum(1 for p in found if p is None))

    def __add__(self, other: Cost) -> Cost:
        if self.usd is None or other.usd is None:
            return Cost(self.usd if other.usd is None else other.usd, self.unpriced + other.unpriced)
        return Cost(self.usd + other.usd, self.unpriced + other.unpriced)

    @property
    def dollars(self) -> float | None:
        return None if self.usd is None else float(self.usd)

    def text(self) -> str:
        """``$0.0097``; ``$0.0097 + 1 unpriced`` when calls were left out; ``-`` when none has a price."""
        if self.usd is None:
            return "-"
        return format_usd(self.usd) + (f" + {self.unpriced} unpriced" if self.unpriced else "")

    def json(self) -> dict[str, Any]:
        """The JSON outputs' fields: ``cost_usd`` (null: no call has a price) and ``unpriced_llm_spans``."""
        return {"cost_usd": self.dollars, "unpriced_llm_spans": self.unpriced}

    @classmethod
    def from_json(cls, fields: dict[str, Any]) -> Cost:
        """The cost ``json`` gave (its dollars as the float shows them: enough for ``text``)."""
        usd = fields.get("cost_usd")
        return cls(None if usd is None else Decimal(repr(usd)), fields.get("unpriced_llm_spans") or 0)


def price_of(
    model: str | None, provider: str | None, usage: TokenUsage, at_ns: int | None = None
) -> Price | None:
    """The call's price, or None when genai-prices knows no price for the model (at that provider).
    A name as a router or a provider writes it is tried as genai-prices names it too (model_names)."""
    if not model:
        return None
    plan = _plan(model, provider)
    if plan is None:
        return None
    at = _instant(at_ns)
    rates = plan.rates(usage, at)
    if rates is None:
        return _genai_price(plan.model, plan.provider, usage, at)
    return Price(rates.usd(usage), plan.model, plan.provider)


def _plan(model: str, provider: str | None) -> Plan | None:
    """The plan of the first of the name's forms genai-prices knows (model_names.candidates)."""
    for name, at in candidates(model, provider):
        plan = price_cache.plan_for(name, at)
        if plan is not None:
            return plan
    return None


def _instant(at_ns: int | None) -> int:
    """When a call is priced: its start, or now for none (or one no date can hold)."""
    return at_ns if at_ns is not None and 0 < at_ns < _YEAR_10000_NS else time.time_ns()


@functools.lru_cache(maxsize=4096)
def _genai_price(model: str, provider: str | None, usage: TokenUsage, at_ns: int) -> Price | None:
    """genai-prices' own price of a call, where no plan can give it."""
    try:
        from genai_prices import Usage, calc_price
    except ImportError:  # pragma: no cover - a dependency of the package
        return None
    tokens = Usage(
        input_tokens=usage.input,
        output_tokens=usage.output,
        cache_read_tokens=usage.cache_read or None,
        cache_write_tokens=usage.cache_write or None,
    )
    when = _EPOCH + timedelta(microseconds=at_ns // 1000)  # as the plans read it: whole µs
    try:
        calculation = calc_price(tokens, model, provider_id=provider, genai_request_timestamp=when)
    except (LookupError, ValueError):
        return None
    return Price(calculation.total_price, calculation.model.id, calculation.provider.id)


def price_call(call: Call, *, as_model: str | None = None, any_provider: bool = False) -> Price | None:
    """The price of one call. ``as_model``: its tokens priced as if that model had answered (its
    provider then comes from the data). ``any_provider``: a model its provider does not price (a
    call through a compatible proxy, a cassette's later call on another API) is priced wherever
    genai-prices finds the model name."""
    if as_model is not None:
        return price_of(as_model, None, call.usage, call.start_ns)
    price = price_of(call.model, call.provider, call.usage, call.start_ns)
    if price is None and any_provider and call.provider is not None:
        return price_of(call.model, None, call.usage, call.start_ns)
    return price


def unknown_model(name: str) -> str | None:
    """Why ``name`` cannot be a ``--price-model`` (one line), or None when the price data knows it."""
    if not name.strip() or price_of(name.strip(), None, TokenUsage(input=1000, output=1000)) is None:
        return f"{prices_version()} has no price for model {name!r}"
    return None


def prices_version() -> str:
    """The version of the price data in use (genai-prices')."""
    identity = price_cache.data_identity()
    if identity is not None:
        return f"genai-prices {identity[0]}"
    try:  # an install without a .dist-info beside the package (editable)
        from importlib.metadata import version

        return f"genai-prices {version('genai-prices')}"
    except Exception:  # pragma: no cover
        return "genai-prices (version unknown)"


def format_usd(value: Decimal | float | int | None) -> str:
    """Dollars, in one format everywhere: to the cent, or to two significant digits where that is
    finer, so a small figure keeps its size and a large one reads as money: ``$1,234.56``,
    ``$1.44``, ``$0.72``, ``$0.018``, ``$0.0097``, ``$0.000012``; ``$0.00`` for a price of zero,
    ``-`` for no price."""
    if value is None:
        return "-"
    amount = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    if not amount.is_finite():
        return "-"
    places = _places(amount)
    rounded = amount.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    places = _places(rounded)  # one digit fewer when rounding carried over ($0.0996 -> $0.10)
    sign = "-" if rounded < 0 else ""
    return f"{sign}${abs(rounded):,.{places}f}"


def _places(amount: Decimal) -> int:
    """Decimal places: two (cents), or two significant digits' worth below ten cents."""
    return 2 if amount.is_zero() else max(2, 1 - amount.adjusted())


def total_usd(prices: list[Price | None]) -> Decimal | None:
    """The sum of the known prices; None when none is known."""
    known = [p.usd for p in prices if p is not None]
    return sum(known, Decimal(0)) if known else None


def total_of(calls: Iterable[Call], *, as_model: str | None = None) -> Cost:
    """What ``calls`` cost (``as_model``: their tokens priced as that model): the same figure as
    pricing each and summing, but the calls a plan prices at the same rates (one model, period and
    tier bracket) are priced once, on their summed tokens: their price is linear in them."""
    # id(rates) -> [rates, calls, input, output, cache read, cache write]
    groups: dict[int, list[Any]] = {}
    total, unpriced, priced = Decimal(0), 0, False
    for call in calls:
        model, provider = (as_model, None) if as_model is not None else (call.model, call.provider)
        plan = _plan(model, provider) if model else None
        if plan is None:
            unpriced += 1
            continue
        usage = call.usage
        rates = plan.rates(usage, _instant(call.start_ns))
        if rates is None:
            price = price_of(model, provider, usage, call.start_ns)
            if price is None:
                unpriced += 1
            else:
                total, priced = total + price.usd, True
            continue
        group = groups.get(id(rates))
        if group is None:
            group = groups[id(rates)] = [rates, 0, 0, 0, 0, 0]
        group[1] += 1
        group[2] += usage.input
        group[3] += usage.output
        group[4] += usage.cache_read
        group[5] += usage.cache_write
    for rates, n, *counts in groups.values():
        total, priced = total + rates.usd(TokenUsage(*counts), n), True
    return Cost(total if priced else None, unpriced)
