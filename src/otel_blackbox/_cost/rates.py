"""A model's prices as genai-prices computes them, resolved once and kept as plain numbers (a plan),
so that pricing a call needs neither genai-prices' import (170-270 ms: pydantic models built at
import) nor its per-call work.

What genai-prices does for a call of ``model`` at ``provider``: find the model (by name and
provider), take the prices in force at the call's time (``ConditionalPrice``: the last whose
constraint holds, a start date or a time of day in UTC, else the first), then sum, for each priced
unit, its rate times the unit's count (the input tokens less the cached ones it prices apart, the
output tokens...). With a tiered price ("cliff" tiers) every rate depends on which input-token
threshold the call crossed. Within one period and one tier bracket, the price is therefore
``fee + a*input + b*output + c*cache_read + d*cache_write``: a fixed part (a per-request fee) plus
a constant rate per token of each kind.

A plan holds, for each period and bracket, those five numbers, measured with genai-prices' own
``ModelPrice.calc_price`` (the price of a few probe usages, and their differences), never read
from its tables by us; then checked, with genai-prices, on one usage of each shape (which of the
four counts are non-zero): a shape genai-prices refuses is left to it, and a plan that does not
give genai-prices' own figure on every shape is not used at all. genai-prices' figures are exact
decimals (a rate of a few digits times a count, divided by a power of ten), and so are these:
the plan's price of a call is equal to genai-prices' own, not close to it.

What a plan cannot answer (``Plan.rates`` is None) goes to genai-prices itself: cached and cache-write
tokens more than the input tokens, a shape genai-prices refuses, a constraint of a kind not known
here. Plans are kept on disk by price_cache.py.
"""

from __future__ import annotations

import bisect
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from otel_blackbox._cost.usage import TokenUsage

if TYPE_CHECKING:
    from genai_prices.types import ModelPrice

__all__ = ["Period", "Plan", "Rates", "plan_from_json", "plan_to_json", "resolve"]

_DAY_US = 86_400_000_000
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
# Shapes of a usage: which counts are non-zero (bits), as the probes' one check of each.
_INPUT, _OUTPUT, _CACHE_READ, _CACHE_WRITE = 1, 2, 4, 8
_PROBE_INPUT = 8  # the checks' input tokens above a bracket's first: more than cache read + write


# Plain classes with __slots__, not dataclasses: a dataclass costs about a millisecond to define,
# and these are defined at every start of a command that prices a call.


class Rates:
    """The price of a call within one period and tier bracket, per token of each kind (None: a
    kind genai-prices refuses with this model), and the shapes of usage genai-prices refuses."""

    __slots__ = ("cache_read", "cache_write", "fee", "input", "output", "refused")

    def __init__(
        self,
        fee: Decimal,
        input: Decimal,
        output: Decimal,
        cache_read: Decimal | None,
        cache_write: Decimal | None,
        refused: frozenset[int] = frozenset(),
    ) -> None:
        self.fee, self.input, self.output = fee, input, output
        self.cache_read, self.cache_write, self.refused = cache_read, cache_write, refused

    def usd(self, usage: TokenUsage, calls: int = 1) -> Decimal:
        """The price of ``calls`` calls whose summed counts are ``usage`` (linear: one sum)."""
        total = self.fee * calls + self.input * usage.input + self.output * usage.output
        if usage.cache_read:
            total += (self.cache_read or 0) * usage.cache_read
        if usage.cache_write:
            total += (self.cache_write or 0) * usage.cache_write
        return total


class Period:
    """The prices of one ``ConditionalPrice`` (or the model's only prices): its constraint, its
    tier thresholds of input tokens, and the rates of each bracket (one more than thresholds)."""

    __slots__ = ("brackets", "hours_us", "since_ns", "starts")

    def __init__(
        self,
        since_ns: int | None,  # StartDateConstraint: from midnight UTC of its date
        hours_us: tuple[int, int] | None,  # TimeOfDateConstraint: [start, end) in µs of the UTC day
        starts: tuple[int, ...],
        brackets: tuple[Rates, ...],
    ) -> None:
        self.since_ns, self.hours_us, self.starts, self.brackets = since_ns, hours_us, starts, brackets

    def active(self, at_ns: int) -> bool:
        """As genai-prices' constraints: a date compares the UTC date; a time of day the UTC time,
        across midnight when the end comes before the start."""
        if self.since_ns is not None:
            return at_ns >= self.since_ns
        if self.hours_us is not None:
            now, (start, end) = (at_ns // 1000) % _DAY_US, self.hours_us
            return (now >= start or now < end) if end < start else start <= now < end
        return True


class Plan:
    """A model's prices at one provider: its id and the provider's (genai-prices' names), and its
    periods in genai-prices' order (``exact`` False: every call is left to genai-prices)."""

    __slots__ = ("exact", "model", "periods", "provider")

    def __init__(self, model: str, provider: str, periods: tuple[Period, ...], exact: bool = True) -> None:
        self.model, self.provider, self.periods, self.exact = model, provider, periods, exact

    def rates(self, usage: TokenUsage, at_ns: int) -> Rates | None:
        """The rates of a call at ``at_ns``; None when only genai-prices can price it exactly."""
        if not self.exact or usage.cache_read + usage.cache_write > usage.input:
            return None
        period = self.periods[0]
        if len(self.periods) > 1:  # genai-prices tries them last to first; none in force: the first
            period = next((p for p in reversed(self.periods) if p.active(at_ns)), period)
        rates = period.brackets[bisect.bisect_left(period.starts, usage.input) if period.starts else 0]
        if rates.refused and _shape(usage) in rates.refused:
            return None
        return rates


def _shape(usage: TokenUsage) -> int:
    return (
        (_INPUT if usage.input else 0)
        | (_OUTPUT if usage.output else 0)
        | (_CACHE_READ if usage.cache_read else 0)
        | (_CACHE_WRITE if usage.cache_write else 0)
    )


# --- resolving a plan with genai-prices ----------------------------------------------------------


def resolve(model: str, provider: str | None) -> Plan | None:
    """The plan of ``model`` at ``provider`` (None: any provider genai-prices finds for it), or None
    when genai-prices knows no such model. Imports genai-prices."""
    from genai_prices import data_snapshot, types

    try:
        found_provider, found = data_snapshot.get_snapshot().find_provider_model(model, None, provider, None)
    except (LookupError, ValueError):
        return None
    inexact = Plan(found.id, found_provider.id, (), exact=False)
    prices = found.prices
    conditional = (
        [(None, prices)]
        if isinstance(prices, types.ModelPrice)
        else [(c.constraint, c.prices) for c in prices]
    )
    periods = []
    try:
        for constraint, model_price in conditional:
            periods.append(_period(constraint, model_price))
    except (_Unplannable, ArithmeticError, LookupError, TypeError, ValueError, AttributeError):
        return inexact  # a shape of data not known here (or an older genai-prices): ask it each time
    return Plan(found.id, found_provider.id, tuple(periods)) if periods else inexact


class _Unplannable(Exception):
    pass


def _period(constraint: Any, model_price: ModelPrice) -> Period:
    from genai_prices import types

    since_ns, hours_us = None, None
    if isinstance(constraint, types.StartDateConstraint):
        since_ns = _date_ns(constraint.start_date)
    elif isinstance(constraint, types.TimeOfDateConstraint):
        hours_us = (_time_of_day_us(constraint.start_time), _time_of_day_us(constraint.end_time))
    elif constraint is not None:
        raise _Unplannable(f"a constraint of type {type(constraint).__name__}")
    starts: set[int] = set()
    for value in vars(model_price).values():
        if isinstance(value, types.TieredPrices):
            starts.update(tier.start for tier in value.tiers)
        elif value is not None and not isinstance(value, Decimal):
            raise _Unplannable(f"a price of type {type(value).__name__}")
    thresholds = tuple(sorted(starts))
    brackets = []
    for n in range(len(thresholds) + 1):
        low = thresholds[n - 1] + 1 if n else 0
        if n < len(thresholds) and thresholds[n] < low + _PROBE_INPUT:
            raise _Unplannable("a tier bracket too narrow to measure")
        brackets.append(_measure(model_price, low))
    return Period(since_ns, hours_us, thresholds, tuple(brackets))


def _measure(model_price: ModelPrice, low: int) -> Rates:
    """The rates of the bracket whose smallest input count is ``low``, from genai-prices' prices of
    probe usages in it; then checked on one usage of every shape."""
    from genai_prices import Usage

    def price(usage: TokenUsage) -> Decimal:
        counts = Usage(
            input_tokens=usage.input,
            output_tokens=usage.output,
            cache_read_tokens=usage.cache_read or None,
            cache_write_tokens=usage.cache_write or None,
        )
        return model_price.calc_price(counts)["total_price"]

    base = price(TokenUsage(input=low))
    per_input = price(TokenUsage(input=low + 1)) - base
    per_output = price(TokenUsage(input=low, output=1)) - base
    above = base + per_input  # input low + 1: room for one cached token
    per_cached: list[Decimal | None] = []
    for cached in (TokenUsage(input=low + 1, cache_read=1), TokenUsage(input=low + 1, cache_write=1)):
        try:
            per_cached.append(price(cached) - above)
        except ValueError:  # genai-prices refuses such a count with this model
            per_cached.append(None)
    rates = Rates(base - per_input * low, per_input, per_output, per_cached[0], per_cached[1])
    refused = set()
    for shape in range(16):
        usage = _probe_usage(shape, low)
        if usage is None:
            continue
        try:
            actual = price(usage)
        except ValueError:
            refused.add(shape)
            continue
        unknown = (usage.cache_read and rates.cache_read is None) or (
            usage.cache_write and rates.cache_write is None
        )
        if unknown or rates.usd(usage) != actual:
            raise _Unplannable("genai-prices' price is not the plan's")
    return Rates(
        rates.fee, rates.input, rates.output, rates.cache_read, rates.cache_write, frozenset(refused)
    )


def _probe_usage(shape: int, low: int) -> TokenUsage | None:
    """A usage of that shape in the bracket starting at ``low`` (None: no usage of the bracket has it)."""
    if not shape & _INPUT and (low or shape & (_CACHE_READ | _CACHE_WRITE)):
        return None  # cached tokens are input tokens; a bracket above the first has input tokens
    return TokenUsage(
        input=low + _PROBE_INPUT if shape & _INPUT else 0,
        output=5 if shape & _OUTPUT else 0,
        cache_read=3 if shape & _CACHE_READ else 0,  # with cache_write, fewer than _PROBE_INPUT
        cache_write=2 if shape & _CACHE_WRITE else 0,
    )


def _date_ns(day: date) -> int:
    return (
        (datetime(day.year, day.month, day.day, tzinfo=timezone.utc) - _EPOCH)
        // timedelta(microseconds=1)
        * 1000
    )


def _time_of_day_us(value: time) -> int:
    """A time of day in µs of the UTC day (a naive time is UTC, as genai-prices takes it)."""
    if value.tzinfo is not None:
        value = datetime.combine(date(1970, 1, 1), value).astimezone(timezone.utc).time()
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond


# --- plans as JSON (the cache file) -------------------------------------------------------------


def plan_to_json(plan: Plan | None) -> Any:
    if plan is None:
        return None
    return {
        "model": plan.model,
        "provider": plan.provider,
        "exact": plan.exact,
        "periods": [
            {
                "since_ns": p.since_ns,
                "hours_us": list(p.hours_us) if p.hours_us else None,
                "starts": list(p.starts),
                "brackets": [
                    {
                        "fee": str(r.fee),
                        "input": str(r.input),
                        "output": str(r.output),
                        "cache_read": None if r.cache_read is None else str(r.cache_read),
                        "cache_write": None if r.cache_write is None else str(r.cache_write),
                        "refused": sorted(r.refused),
                    }
                    for r in p.brackets
                ],
            }
            for p in plan.periods
        ],
    }


def plan_from_json(value: Any) -> Plan | None:
    """A plan as plan_to_json wrote it; ValueError for anything else (a damaged cache)."""
    if value is None:
        return None
    model, provider, exact = _text(value, "model"), _text(value, "provider"), value.get("exact")
    periods = value.get("periods")
    if not isinstance(exact, bool) or not isinstance(periods, list) or (exact and not periods):
        raise ValueError("not a price plan")
    return Plan(model, provider, tuple(_period_from_json(p) for p in periods), exact)


def _period_from_json(value: Any) -> Period:
    if not isinstance(value, dict):
        raise ValueError("not a price period")
    since, hours, starts, brackets = (value.get(k) for k in ("since_ns", "hours_us", "starts", "brackets"))
    if since is not None and not _is_int(since):
        raise ValueError("not a start date")
    if hours is not None and not (
        isinstance(hours, list) and len(hours) == 2 and all(_is_int(h) and 0 <= h < _DAY_US for h in hours)
    ):
        raise ValueError("not a time of day")
    if not (
        isinstance(starts, list)
        and all(_is_int(s) and s >= 0 for s in starts)
        and starts == sorted(set(starts))
    ):
        raise ValueError("not tier thresholds")
    if not isinstance(brackets, list) or len(brackets) != len(starts) + 1:
        raise ValueError("not one bracket more than thresholds")
    return Period(
        since, (hours[0], hours[1]) if hours else None, tuple(starts), tuple(map(_rates_from_json, brackets))
    )


def _rates_from_json(value: Any) -> Rates:
    if not isinstance(value, dict):
        raise ValueError("not rates")
    refused = value.get("refused")
    if not isinstance(refused, list) or not all(_is_int(s) and 0 <= s < 16 for s in refused):
        raise ValueError("not shapes")
    return Rates(
        _decimal(value.get("fee")),
        _decimal(value.get("input")),
        _decimal(value.get("output")),
        None if value.get("cache_read") is None else _decimal(value["cache_read"]),
        None if value.get("cache_write") is None else _decimal(value["cache_write"]),
        frozenset(refused),
    )


def _text(value: Any, key: str) -> str:
    found = value.get(key) if isinstance(value, dict) else None
    if not isinstance(found, str):
        raise ValueError(f"no {key}")
    return found


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _decimal(value: Any) -> Decimal:
    """A rate as str(Decimal) wrote it: finite (a rate may be negative: a difference of prices)."""
    if not isinstance(value, str):
        raise ValueError("not a rate")
    try:
        number = Decimal(value)
    except ArithmeticError:  # decimal.InvalidOperation: not a number
        raise ValueError("not a rate") from None
    if not number.is_finite():
        raise ValueError("not a finite rate")
    return number
