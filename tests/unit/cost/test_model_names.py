"""Model names as routers and providers write them are priced as genai-prices names them (issue 47):
LiteLLM's ``openai/gpt-4o-mini``, Gemini's ``models/...``, Vertex's resource paths and ``@`` versions,
Bedrock's regional ids. A name no form of which is known stays unpriced, never $0."""

from __future__ import annotations

from pathlib import Path

import pytest
from conventions import fixture_path, stored_spans

from otel_blackbox._cost.model_names import candidates
from otel_blackbox._cost.prices import price_of
from otel_blackbox._cost.spans import spans_cost
from otel_blackbox._cost.usage import TokenUsage
from otel_blackbox._spans.view.registry import view_of
from otel_blackbox._spans.view.trace import read_trace

USAGE = TokenUsage(input=1000, output=1000)


@pytest.mark.parametrize(
    ("written", "provider", "plain", "plain_provider"),
    [
        ("openai/gpt-4o-mini", None, "gpt-4o-mini", "openai"),
        ("openai/gpt-4o-mini", "openai", "gpt-4o-mini", "openai"),
        ("anthropic/claude-sonnet-4-5", None, "claude-sonnet-4-5", "anthropic"),
        ("gemini/gemini-2.5-flash", None, "gemini-2.5-flash", "google"),
        ("models/gemini-2.5-flash", "google", "gemini-2.5-flash", "google"),
        ("publishers/google/models/gemini-2.5-flash", None, "gemini-2.5-flash", "google"),
        (
            "projects/p-1/locations/us-central1/publishers/google/models/gemini-2.5-flash",
            None,
            "gemini-2.5-flash",
            "google",
        ),
    ],
)
def test_a_written_name_costs_what_the_plain_name_costs(
    written: str, provider: str | None, plain: str, plain_provider: str
) -> None:
    expected = price_of(plain, plain_provider, USAGE)
    assert expected is not None and expected.usd > 0
    assert price_of(written, provider, USAGE) == expected


def test_bedrock_ids_are_priced_at_aws() -> None:
    regional = price_of("us.anthropic.claude-3-5-sonnet-20240620-v1:0", None, USAGE)
    routed = price_of("bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0", None, USAGE)
    assert regional is not None and regional.provider == "aws"
    assert routed == regional


def test_the_name_as_written_is_tried_first_and_unknown_names_stay_unpriced() -> None:
    assert candidates("gpt-4o-mini", "openai")[0] == ("gpt-4o-mini", "openai")
    assert candidates("openai/gpt-4o-mini", None)[:3] == [
        ("openai/gpt-4o-mini", None),
        ("gpt-4o-mini", None),
        ("gpt-4o-mini", "openai"),
    ]
    assert price_of("someone/no-such-model-xyz", None, USAGE) is None
    assert price_of("models/no-such-model-xyz", None, USAGE) is None


def test_litellm_calls_are_priced_by_their_prefixed_name(tmp_path: Path) -> None:
    """LiteLLM under OpenInference names the model ``openai/gpt-4o-mini`` (a real capture): priced."""
    spans = read_trace(stored_spans(fixture_path("openinference", "litellm-ok"), tmp_path / "blackbox.db"))
    calls = [s for s in spans if view_of(s).counts]
    assert len(calls) == 2 and {view_of(c).model for c in calls} == {"openai/gpt-4o-mini"}
    cost = spans_cost(spans)
    assert cost.usd is not None and cost.usd > 0 and cost.unpriced == 0
