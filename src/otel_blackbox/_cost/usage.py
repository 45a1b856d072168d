"""A model call's token counts, as its ``model_output`` keeps them: the optional ``tokenUsage`` field.

``{"inputTokens": N, "outputTokens": N, "cacheReadTokens": N, "cacheWriteTokens": N}``, each a
non-negative integer, the cache counts only when not zero. ``inputTokens`` includes the cached
tokens (read and written), ``outputTokens`` the reasoning tokens, whatever the provider's own
convention: each translation converts (Anthropic's ``input_tokens`` leaves the cache out, Gemini's
``candidatesTokenCount`` the thoughts). A call that counted nothing (a replay's synthesized answer
says 0 and 0) has no ``tokenUsage``.

The counts pricing takes, too (``TokenUsage``): a span's come from its view
(``_cost.spans.usage_of_tokens``), a model_output's from ``token_usage``.

Usage is not behaviour: a replay never serves it back (it sends zero usage as before), and ``diff``
leaves it out when it compares two outputs. The name is not the providers' ``usage``, which
``verify`` (and the TypeScript Blackbox) reports as a provider response key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from otel_blackbox._types import JsonObject

__all__ = ["USAGE_FIELDS", "USAGE_KEY", "TokenUsage", "check_usage", "count", "token_usage", "usage_in",
           "usage_json", "with_usage", "without_usage"]  # fmt: skip

USAGE_KEY = "tokenUsage"
USAGE_FIELDS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")


def count(value: Any) -> int | None:
    """A token count as a provider sent it: a non-negative integer, else None (usage is read
    leniently: an odd count never fails a recording)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def usage_json(
    input_tokens: int | None,
    output_tokens: int | None,
    cache_read: int | None = None,
    cache_write: int | None = None,
) -> JsonObject | None:
    """The ``tokenUsage`` of these counts (input including the cached tokens), or None when the call
    counted nothing."""
    if not (input_tokens or output_tokens):
        return None
    usage: JsonObject = {"inputTokens": input_tokens or 0, "outputTokens": output_tokens or 0}
    if cache_read:
        usage["cacheReadTokens"] = cache_read
    if cache_write:
        usage["cacheWriteTokens"] = cache_write
    return usage


def with_usage(output: JsonObject, usage: JsonObject | None) -> JsonObject:
    """``output`` with its ``tokenUsage`` (unchanged when there is none)."""
    if usage is not None:
        output[USAGE_KEY] = usage
    return output


def without_usage(output: Any) -> Any:
    """``output`` as it behaves: without ``tokenUsage`` (the same object when it has none)."""
    if isinstance(output, dict) and USAGE_KEY in output:
        return {key: value for key, value in output.items() if key != USAGE_KEY}
    return output


def check_usage(output: Any) -> None:
    """ValueError when ``output``'s ``tokenUsage`` is not an object of non-negative integers."""
    usage_in(output)


def usage_in(output: Any) -> dict[str, int] | None:
    """The ``tokenUsage`` of a model_output, checked; None when it has none."""
    if not isinstance(output, dict) or output.get(USAGE_KEY) is None:
        return None
    usage = output[USAGE_KEY]
    if not isinstance(usage, dict):
        raise ValueError(f"field {USAGE_KEY} must be an object, not {type(usage).__name__}")
    for key, value in usage.items():
        if count(value) is None:
            raise ValueError(f"field {USAGE_KEY}.{key} must be a non-negative integer, not {value!r}"[:200])
    return dict(usage)


# --- the counts pricing reads: from a span's attributes, or from a model_output ------------------


@dataclass(frozen=True)
class TokenUsage:
    input: int = 0  # prompt tokens, cached ones included
    output: int = 0  # completion tokens, reasoning included
    cache_read: int = 0
    cache_write: int = 0


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
