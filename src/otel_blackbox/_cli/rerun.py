"""``rerun``: a recorded incident run again with the model live (another model, another provider)
and every other recorded request answered from the recording: with the program (``-- CMD``), or by
the built-in agent, which replays the conversation on the provider's official SDK."""

from __future__ import annotations

import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import click

from otel_blackbox._cli.agent_options import agent_only_given, built_in_agent_options, built_in_plan
from otel_blackbox._cli.app import cli
from otel_blackbox._cli.common import ALLOW_UNVERIFIED, checked_inputs, output_option
from otel_blackbox._cli.playback import (
    PASS_THROUGH,
    read_script,
    run_program,
    stub_plan,
    stub_tools_option,
)

__all__: list[str] = []


@cli.command(context_settings=PASS_THROUGH)
@click.argument("incident", type=click.Path(dir_okay=False, path_type=Path))
@built_in_agent_options
@click.option(
    "--script",
    type=click.Path(dir_okay=False, path_type=Path),
    help="With -- CMD: answer model calls from these neutral model outputs instead of a live model.",
)
@click.option(
    "--allow-network",
    is_flag=True,
    help="With -- CMD: send (and record) the non-model requests the incident did not record.",
)
@stub_tools_option(unrecorded=True)
@output_option("Child cassette.", path=True)
@ALLOW_UNVERIFIED
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def rerun(
    incident: Path,
    model: str | None,
    provider: str | None,
    stream: bool | None,
    base_url: str | None,
    stubs: tuple[str, ...],
    tool_match: str,
    max_turns: int | None,
    max_cost: Decimal | None,
    script: Path | None,
    allow_network: bool,
    stub_tools: bool,
    run_unrecorded_tools: bool,
    output: Path,
    allow_unverified: bool,
    command: tuple[str, ...],
) -> None:
    """Rerun a recorded incident with the model live and every tool answered from the recording.

    With no program, a built-in agent (a plain tool-calling loop on the provider's official SDK)
    replays the incident's conversation: its system prompt, tools and params turn by turn, its user
    turns, and every tool call answered from the incident's recorded results (on name and
    arguments; each once), never executed. A call it did not record is answered by --stub, or
    stops the run (exit 1, the call named). Credentials come from the SDK's own variables
    (OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY...). Exit 0 when the child completed.

    With -- CMD, the program runs again: its model calls go live (with --model NAME, naming NAME)
    or come from a --script of neutral model outputs; every other HTTP request the incident
    recorded (a tool's API) is answered from it and never sent again; one it did not record is
    refused with a [blackbox] message naming it, unless --allow-network. With --stub-tools its
    framework tools do not run either: each call gets the incident's result with the same tool
    name and arguments (each once); a call with none is a tool error the model sees, named at the
    end (or, with --run-unrecorded-tools, runs for real). Exit: the program's; 1 if it made no
    model call but exited 0.

    The child cassette records the run with the incident as its parent; the built-in agent's last line
    says what its model calls cost, priced from their token counts (genai-prices). Before any call,
    -o is checked (a missing folder, a folder, a database), and for the built-in agent the key,
    --base-url (well formed, and something listening there) and each --stub's tool (one the
    incident offered or called): exit 2. A child that cannot be written at the end is kept under
    a name the message gives. With --max-cost
    USD, before each model call the calls so far are priced (with the model actually called), and a
    program rerun says what they cost at the end: once they reach the budget, the call
    is not made (the built-in agent stops; a program gets a [blackbox] HTTP 400 for it), the child
    ends run_failed / max_cost, and the exit code is 1. A model with no price is refused before any
    call, exit 2 (for a program rerun without --model, at its first call of such a model).
    --max-cost goes with a live model, not with --script.

    \b
    Example:
      otel-blackbox rerun incident.json --model claude-sonnet-4-5 --provider anthropic -o fixed.json
      otel-blackbox rerun incident.json --stub refund_order='{"ok": true}' -o fixed.json
      otel-blackbox rerun incident.json --model gpt-4.1 -o fixed.json -- python agent.py
      otel-blackbox rerun incident.json --model gpt-4.1 --max-cost 0.50 -o fixed.json
      otel-blackbox rerun incident.json --stub-tools -o fixed.json -- python agent.py
      otel-blackbox diff incident.json fixed.json      # ... outcome: failure fixed: ...
    """
    if model is not None and not model.strip():
        raise click.BadParameter("give a model name", param_hint="--model")
    budget = _budget(max_cost, script)
    # Not a cassette, or one that fails verify's hash_chain: one line and exit 2, before anything runs.
    (recorded,) = checked_inputs([incident], allow_unverified)
    if output.resolve() == incident.resolve():
        raise click.BadParameter("the child cassette would overwrite the incident", param_hint="-o")
    program = command[1:] if command and command[0] == "--" else command
    if not program:
        given_options = (
            ("--script", script),
            ("--allow-network", allow_network),
            ("--run-unrecorded-tools", run_unrecorded_tools),
        )  # --stub-tools is what the built-in agent always does: accepted
        for option, given in given_options:
            if given:
                raise click.UsageError(f"{option} is for a program rerun: give the program after --")
        sys.exit(_rerun_built_in(incident, output, model, provider, stream, base_url, stubs, tool_match,
                                 max_turns, budget, allow_unverified))  # fmt: skip
    agent_only = agent_only_given(provider, stream, base_url, stubs, tool_match, max_turns)
    if agent_only is not None:
        raise click.UsageError(f"{agent_only} is for the built-in agent: leave out the program (-- CMD)")
    if model is not None and script is not None:
        raise click.UsageError("--model chooses the live model and --script answers instead of one: give one")
    if budget is not None and model is not None:
        _check_priced(model, recorded.api.get("name") if isinstance(recorded.api, dict) else None)
    plan = {
        "output": str(output.resolve()),
        "model": model,
        "replies": read_script(script) if script is not None else None,
        "allow_network": allow_network,
        "max_cost": None if budget is None else str(budget),
        **stub_plan(stub_tools, run_unrecorded_tools),
        "allow_unverified": allow_unverified,
    }
    sys.exit(run_program("rerun", incident, program, plan=plan))


def _budget(max_cost: Decimal | None, script: Path | None) -> Decimal | None:
    """--max-cost (parsed by its callback), refused beside --script (exit 2)."""
    if max_cost is not None and script is not None:
        raise click.UsageError("--max-cost is a budget for a live model: --script answers without one")
    return max_cost


def _check_priced(model: str, api: Any) -> None:
    """A program rerun's --model under --max-cost: refused up front when it has no price (exit 2)."""
    from otel_blackbox._playback.budget import unpriced

    refused = unpriced(model, api if isinstance(api, str) else None)
    if refused is not None:
        raise click.BadParameter(refused, param_hint="--max-cost")


def _rerun_built_in(
    incident: Path,
    output: Path,
    model: str | None,
    provider: str | None,
    stream: bool | None,
    base_url: str | None,
    stubs: tuple[str, ...],
    tool_match: str,
    max_turns: int | None,
    budget: Decimal | None,
    allow_unverified: bool,
) -> int:
    from otel_blackbox._playback.agent.run import rerun_built_in  # the execution side: only when it runs

    plan = built_in_plan(
        output, model=model, provider=provider, stream=stream, base_url=base_url, stubs=stubs,
        tool_match=tool_match, max_turns=max_turns, max_cost=budget, allow_unverified=allow_unverified,
    )  # fmt: skip
    return rerun_built_in(incident, plan)
