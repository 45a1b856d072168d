"""Prices from genai-prices (pydantic's maintained price data), never from a table of ours: the
one place that calls it. Prices are never stored: an old call is priced with the data installed
now, at the prices in force when it was made. A model or provider the data does not know has no
price (``None``), never $0. A price is cached per (model, provider, tokens, day).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal

from otel_blackbox._cost.usage import TokenUsage

__all__ = [
    "Call",
    "Price",
    "format_usd",
    "price_call",
    "price_of",
    "prices_version",
    "total_of",
    "total_usd",
    "unknown_model",
]


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


def price_of(
    model: str | None, provider: str | None, usage: TokenUsage, at_ns: int | None = None
) -> Price | None:
    """The call's price, or None when genai-prices knows no price for the model (at that provider)."""
    if not model:
        return None
    return _cached_price(model, provider, usage, _day(at_ns))


@functools.lru_cache(maxsize=4096)
def _cached_price(model: str, provider: str | None, usage: TokenUsage, day: str | None) -> Price | None:
    try:
        from genai_prices import Usage, calc_price
    except ImportError:  # pragma: no cover - a dependency of the package
        return None
    when = datetime.fromisoformat(day).replace(tzinfo=timezone.utc) if day else None
    tokens = Usage(
        input_tokens=usage.input,
        output_tokens=usage.output,
        cache_read_tokens=usage.cache_read or None,
        cache_write_tokens=usage.cache_write or None,
    )
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
    try:
        from importlib.metadata import version

        return f"genai-prices {version('genai-prices')}"
    except Exception:  # pragma: no cover
        return "genai-prices (version unknown)"


def format_usd(value: Decimal | float | None) -> str:
    """``$0.0123``: four significant decimals below a cent, two above; ``-`` for no price."""
    if value is None:
        return "-"
    amount = float(value)
    if amount == 0:
        return "$0"
    if abs(amount) < 0.01:
        return f"${amount:.6f}".rstrip("0")
    return f"${amount:,.2f}" if abs(amount) >= 1 else f"${amount:.4f}"


def total_usd(prices: list[Price | None]) -> Decimal | None:
    """The sum of the known prices; None when none is known."""
    known = [p.usd for p in prices if p is not None]
    return sum(known, Decimal(0)) if known else None


def total_of(calls: list[Call], *, as_model: str | None = None) -> tuple[Decimal | None, int]:
    """The summed price of ``calls`` and how many had no price (``as_model``: priced as that model).

    The same as pricing each call and summing, but calls of one model, provider and day whose price
    is linear in their tokens are priced once, on their summed tokens: genai-prices takes 70 to 200
    µs a call, and a database holds tens of thousands. A tiered price ("cliff" tiers: crossing a
    threshold of input tokens prices every token of the call at the tier's rate) is linear among the
    calls between two thresholds, so those are grouped by bracket; a per-request fee is not linear
    at all, and such calls are priced one by one.
    """
    groups: dict[tuple[str | None, str | None, str | None, int], list[TokenUsage]] = {}
    for call in calls:
        model, provider = (as_model, None) if as_model is not None else (call.model, call.provider)
        day = _day(call.start_ns)
        starts = _tier_starts(model, provider, day) if model else None
        # -1: not groupable (priced alone); else the bracket of the call's input tokens
        bracket = -1 if starts is None else sum(1 for start in starts if call.usage.input > start)
        key = (model, provider, day, bracket)
        groups.setdefault(key, []).append(call.usage)
    total, unpriced, priced = Decimal(0), 0, 0
    for (model, provider, day, bracket), usages in groups.items():
        if model and len(usages) > 1 and bracket >= 0:
            usd = _group_usd(model, provider, day, usages)
            if usd is None:
                unpriced += len(usages)
            else:
                total, priced = total + usd, priced + len(usages)
            continue
        for usage in usages:
            each = _cached_price(model, provider, usage, day) if model else None
            if each is None:
                unpriced += 1
            else:
                total, priced = total + each.usd, priced + 1
    return (total if priced else None), unpriced


def _group_usd(model: str, provider: str | None, day: str | None, usages: list[TokenUsage]) -> Decimal | None:
    """The price of calls whose price is linear in their tokens: n times the price of their mean
    usage (the mean of calls between two tier thresholds is between them too, so it is priced at
    their rate, where their sum would cross into the next tier)."""
    try:
        from genai_prices import Usage, calc_price
    except ImportError:  # pragma: no cover
        return None
    n = Decimal(len(usages))
    mean = Usage(
        input_tokens=Decimal(sum(u.input for u in usages)) / n,
        output_tokens=Decimal(sum(u.output for u in usages)) / n,
        cache_read_tokens=(Decimal(sum(u.cache_read for u in usages)) / n) or None,
        cache_write_tokens=(Decimal(sum(u.cache_write for u in usages)) / n) or None,
    )
    when = datetime.fromisoformat(day).replace(tzinfo=timezone.utc) if day else None
    try:
        calculation = calc_price(mean, model, provider_id=provider, genai_request_timestamp=when)
    except (LookupError, ValueError):
        return None
    return calculation.total_price * n


def _day(at_ns: int | None) -> str | None:
    return datetime.fromtimestamp(at_ns / 1e9, tz=timezone.utc).date().isoformat() if at_ns else None


@functools.lru_cache(maxsize=1024)
def _tier_starts(model: str, provider: str | None, day: str | None) -> tuple[int, ...] | None:
    """The input-token thresholds of the model's price that day (() for a flat price), or None when
    its calls must be priced one by one (a per-request fee, a shape not known here, no price)."""
    try:
        from genai_prices import data_snapshot, types
    except ImportError:  # pragma: no cover
        return None
    try:
        _, found_model = data_snapshot.get_snapshot().find_provider_model(model, None, provider, None)
    except (LookupError, ValueError):
        return None
    when = datetime.fromisoformat(day).replace(tzinfo=timezone.utc) if day else datetime.now(tz=timezone.utc)
    rates = vars(found_model.get_prices(when))
    if rates.get("requests_kcount"):
        return None
    starts: set[int] = set()
    for value in rates.values():
        if isinstance(value, types.TieredPrices):
            starts.update(int(tier.start) for tier in value.tiers)
        elif value is not None and not isinstance(value, (Decimal, int, float)):
            return None  # conditional or variant prices: one by one
    return tuple(sorted(starts))
