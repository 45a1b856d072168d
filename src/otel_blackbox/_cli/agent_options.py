"""The built-in agent's options, one definition for every command that runs it (``rerun`` and
``fork`` with no program): the model, the provider, its SDK's settings, the tool answers, the limits."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from otel_blackbox._cli.common import base_url_option, parse_stubs, usd_option
from otel_blackbox._wire.apis import API_NAMES

if TYPE_CHECKING:
    from otel_blackbox._playback.agent.run import BuiltInRerun

__all__ = ["agent_only_given", "built_in_agent_options", "built_in_plan"]

_F = TypeVar("_F", bound=Callable[..., Any])

_OPTIONS = (
    click.option("--model", metavar="NAME", help="The model to call instead of the incident's."),
    click.option(
        "--provider",
        type=click.Choice(API_NAMES),
        help="Built-in agent: the API to rerun on (default: the incident's, else the model name's family).",
    ),
    click.option(
        "--stream/--no-stream",
        default=None,
        help="Built-in agent: stream the model's answers or not (default: as the incident's first call did).",
    ),
    click.option(
        "--base-url",
        metavar="URL",
        callback=base_url_option,
        help="Built-in agent: the provider's base URL (default: the SDK's own variable).",
    ),
    click.option(
        "--stub",
        "stubs",
        multiple=True,
        metavar="NAME=JSON",
        help="Built-in agent: answer the calls of tool NAME the incident did not record (repeatable).",
    ),
    click.option(
        "--tool-match",
        type=click.Choice(["arguments", "name"]),
        default="arguments",
        show_default=True,
        help="Built-in agent: match a call with a recorded result on its name and arguments, or its name "
        "alone.",
    ),
    click.option(
        "--max-turns",
        type=click.IntRange(min=1),
        help="Built-in agent: stop after this many model calls (default: twice the incident's, at least 10).",
    ),
    click.option(
        "--max-cost",
        metavar="USD",
        callback=usd_option,
        help="Stop before the next model call once the calls so far cost this many US dollars (priced "
        "from their token counts with genai-prices); the child ends run_failed / max_cost. A model with "
        "no price is refused.",
    ),
)


def built_in_agent_options(command: _F) -> _F:
    """--model, --provider, --stream, --base-url, --stub, --tool-match, --max-turns, --max-cost."""
    for option in reversed(_OPTIONS):  # click lists them in the order they decorate
        command = option(command)
    return command


def agent_only_given(
    provider: str | None,
    stream: bool | None,
    base_url: str | None,
    stubs: tuple[str, ...],
    tool_match: str,
    max_turns: int | None,
) -> str | None:
    """The first option given that only the built-in agent takes (a program run refuses it), or None."""
    given: dict[str, object] = {
        "--provider": provider,
        "--stream/--no-stream": stream is not None,
        "--base-url": base_url,
        "--stub": stubs,
        "--tool-match": tool_match != "arguments",
        "--max-turns": max_turns,
    }
    return next((option for option, used in given.items() if used), None)


def built_in_plan(
    output: Path,
    *,
    model: str | None,
    provider: str | None,
    stream: bool | None,
    base_url: str | None,
    stubs: tuple[str, ...],
    tool_match: str,
    max_turns: int | None,
    max_cost: Decimal | None,
    allow_unverified: bool,
) -> BuiltInRerun:
    """What the built-in agent is asked, from its options (each --stub parsed: exit 2 on a bad one)."""
    from otel_blackbox._playback.agent.run import BuiltInRerun  # the execution side: only when it runs

    return BuiltInRerun(
        output=output,
        provider=provider,
        model=model,
        stream=stream,
        base_url=base_url,
        tool_match="name" if tool_match == "name" else "arguments",
        stubs=parse_stubs(stubs),
        max_turns=max_turns,
        max_cost=max_cost,
        allow_unverified=allow_unverified,
    )
