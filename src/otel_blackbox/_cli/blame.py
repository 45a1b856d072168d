"""``blame``: which step of a failed incident made it fail, found by branching and rerunning."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from otel_blackbox._cli.app import cli
from otel_blackbox._cli.common import (
    ALLOW_UNVERIFIED,
    base_url_option,
    checked_inputs,
    echo_json,
    parse_stubs,
    usd_option,
)
from otel_blackbox._cli.playback import PASS_THROUGH
from otel_blackbox._render.hints import suggest
from otel_blackbox._render.md_escape import code, inline
from otel_blackbox._render.text import safe
from otel_blackbox._render.words import counted
from otel_blackbox._wire.apis import API_NAMES

if TYPE_CHECKING:
    from otel_blackbox._playback.blame import BlameReport

__all__: list[str] = []


def _children(ctx: click.Context, param: click.Parameter, value: Path) -> Path:
    """-o DIR: a folder, or one that can be made (exit 2 for a file, before any call)."""
    if value.exists() and not value.is_dir():
        raise click.BadParameter(f"{value}: not a folder", ctx, param)
    return value


@cli.command(context_settings=PASS_THROUGH)
@click.argument("incident", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-o", "--output", type=click.Path(path_type=Path), required=True, metavar="DIR", callback=_children,
    help="The folder every branch's child cassette goes to (made if missing).",
)  # fmt: skip
@click.option("--model", metavar="NAME", help="The model the branches call (default: the incident's).")
@click.option(
    "--provider",
    type=click.Choice(API_NAMES),
    help="The API to call (default: the incident's, else the model's).",
)
@click.option("--base-url", metavar="URL", callback=base_url_option, help="The provider's base URL.")
@click.option(
    "--stub", "stubs", multiple=True, metavar="NAME=JSON",
    help="Answer calls of tool NAME the incident has no result for, and try it as a correction of NAME's "
    "recorded results (repeatable).",
)  # fmt: skip
@click.option(
    "--good", type=click.Path(dir_okay=False, path_type=Path), metavar="GOOD.json",
    help="A successful run of the same task: its tool results are tried as corrections of the incident's.",
)  # fmt: skip
@click.option(
    "--contract", type=click.Path(dir_okay=False, path_type=Path), metavar="C.json",
    help="Judge each branch by this contract (default: diff's verdict; a fixed failure is a success).",
)  # fmt: skip
@click.option(
    "--stub-tools", is_flag=True,
    help="With a program: its plain-Python tools answered from the recording too (as rerun -- CMD).",
)  # fmt: skip
@click.option(
    "--samples", type=click.IntRange(1, 50), default=3, show_default=True,
    help="Branches from each point measured (the model is not deterministic).",
)  # fmt: skip
@click.option("--max-cost", metavar="USD", callback=usd_option, help="Stop once the branches cost this much.")
@click.option("--max-branches", type=click.IntRange(min=1), help="Stop after this many branches.")
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True,
    help="The answer as text, JSON or Markdown.",
)  # fmt: skip
@ALLOW_UNVERIFIED
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def blame(
    incident: Path,
    output: Path,
    model: str | None,
    provider: str | None,
    base_url: str | None,
    stubs: tuple[str, ...],
    good: Path | None,
    contract: Path | None,
    samples: int,
    max_cost: Any,
    max_branches: int | None,
    fmt: str,
    stub_tools: bool,
    allow_unverified: bool,
    command: tuple[str, ...],
) -> None:
    """Which step of a failed incident made it fail: found by branching from its steps and rerunning.

    A branch from a decision (a model_output step) keeps every step before it, verbatim (the same
    hashes), and lets the model answer live from there, with the built-in agent: every tool call
    answered from the incident's results (name and arguments) or a --stub, never run; a call
    neither answers ends the branch, counted as unanswerable. A branch from a tool result puts a
    correction in its place (--good: the good run's result of the same tool, same occurrence;
    --stub) and lets the model go on. Each branch's child is judged by --contract, else by diff's
    verdict; --samples branches a point give it a success rate.

    The decisive step is the last decision from which the run can still succeed when every later
    one cannot; when no decision can, the first corrected tool result that makes it succeed. The
    search bisects over the decisions, measuring each point once, and --max-branches or --max-cost
    stop it with what it has. Every child is a cassette in -o DIR that verifies and replays offline
    (through the program, a decision branch's: the program sends no correction).
    Exit 0 when a step was found, 1 when none was (the reason is said), 2 for bad input (a
    successful incident, no model step, a --good of another task, a contract that does not parse)
    before any call.

    With a program (-- CMD) each branch is the program run again, as `rerun -- CMD` runs it: its
    model calls before the point answered with the incident's outputs, the rest live (--model), a
    corrected tool result sent to the model in place of the recorded one, every tool's HTTP (with
    --stub-tools, its Python tools too) answered from the recording; the program's own checks judge
    the branch. An incident that failed in its program after the model's answer (a check that
    raised) is refused without --contract or the program: the built-in agent cannot run that check.

    \b
    Example:
      otel-blackbox blame incident.json --model gpt-4.1 -o branches/
      otel-blackbox blame incident.json --good good-run.json --samples 5 --max-cost 1.00 -o branches/
      otel-blackbox blame incident.json --stub refund_order='"refunded"' --format json -o branches/
      otel-blackbox blame incident.json --stub get_weather='{"temp": 12}' -o branches/ -- python agent.py
    """
    from otel_blackbox._playback.blame import BlamePlan  # the execution side: when it runs
    from otel_blackbox._playback.blame import blame as find_blame

    if model is not None and not model.strip():
        raise click.BadParameter("give a model name", param_hint="--model")
    program = command[1:] if command and command[0] == "--" else command
    for option, given in (("--provider", provider), ("--base-url", base_url)):
        if given and program:
            raise click.UsageError(f"{option} is for the built-in agent: leave out the program (-- CMD)")
    if stub_tools and not program:
        raise click.UsageError("--stub-tools is for a program: give the program after --")
    parsed = parse_stubs(stubs)
    checked_inputs([incident] if good is None else [incident, good], allow_unverified)  # before any call
    plan = BlamePlan(
        output=output, provider=provider, model=model, base_url=base_url, stubs=parsed, good=good,
        contract=contract, samples=samples, max_cost=max_cost, max_branches=max_branches,
        program=program, stub_tools=stub_tools, allow_unverified=allow_unverified,
    )  # fmt: skip
    report = find_blame(incident, plan)
    if fmt == "json":
        echo_json(report.to_json())
    else:
        for line in (_markdown if fmt == "markdown" else _text)(report):
            click.echo(line)
    if report.decisive is None:
        raise SystemExit(1)


def _rates(report: BlameReport) -> list[tuple[str, str]]:
    rows = []
    for result in sorted(report.measured, key=lambda r: r.point.index):
        point = result.point
        what = f"step {point.index} {point.type}"
        if point.correction is not None:
            what += f" corrected ({point.source}: {json.dumps(point.correction, ensure_ascii=False)[:80]})"
        unanswerable = f", {result.unanswerable} unanswerable" if result.unanswerable else ""
        rows.append((what, f"{result.successes}/{len(result.branches)} succeeded{unanswerable}"))
    return rows


def _summary(report: BlameReport) -> str:
    cost = "unpriced" if report.cost_usd is None else f"${report.cost_usd:.4f}"
    measured = counted(len(report.measured), "point")
    points = counted(report.decision_count, "decision point")
    branches = counted(report.branch_count, "branch", "branches")
    calls = counted(report.model_calls, "model call")
    return f"{points}; {measured} measured: {branches}, {calls}, cost {cost}"


def _text(report: BlameReport) -> list[str]:
    from otel_blackbox._render.cassette_text import describe_step

    lines = [f"blame: {safe(report.incident.id)} failed ({safe(report.failure)})", _summary(report)]
    if report.decisive is not None:
        step = report.incident.steps[report.decisive.index]
        lines.append(f"decisive step: {step.index} {step.type}: {safe(describe_step(step, 200))}")
        if (instead := report.instead()) is not None:
            lines.append(f"  a successful branch did instead: {safe(describe_step(instead, 200))}")
    else:
        lines.append(f"no step found: {safe(report.reason)}")
    if report.stopped:
        lines.append(f"stopped: {safe(report.stopped)}")
    lines.append("success rate per point:")
    lines += [f"  {safe(what)}: {rate}" for what, rate in _rates(report)]
    lines.append(f"children in {safe(report.children)}{_replay(report)}")
    return lines


def _replay(report: BlameReport) -> str:
    """How a child replays offline: any child of the built-in agent; through the program, a decision
    branch's (a corrected tool result was sent where the program did not send it: a replay of that
    child diverges there)."""
    program = report.program
    branches = [b for r in report.measured for b in r.branches if not program or b.point.correction is None]
    if not branches:
        return ""
    replay = suggest(
        "otel-blackbox", "replay", str(branches[0].child), *(["--", *program] if program else [])
    )
    which = "a decision branch's child replays" if program else "each replays"
    return f" ({which} offline: {safe(replay)})"


def _markdown(report: BlameReport) -> list[str]:
    from otel_blackbox._render.cassette_text import describe_step

    lines = [f"## Blame: {code(report.incident.id)}", "", f"Failed: {inline(report.failure)}.", ""]
    lines.append(inline(_summary(report)) + ".")
    lines.append("")
    if report.decisive is not None:
        step = report.incident.steps[report.decisive.index]
        lines.append(f"**Decisive step {step.index}** ({step.type}): {inline(describe_step(step, 200))}")
        if (instead := report.instead()) is not None:
            lines.append(f"\nA successful branch did instead: {inline(describe_step(instead, 200))}")
    else:
        lines.append(f"**No step found:** {inline(report.reason)}")
    if report.stopped:
        lines.append(f"\nStopped: {inline(report.stopped)}")
    lines += ["", "| point | branches |", "| --- | --- |"]
    lines += [f"| {inline(what)} | {rate} |" for what, rate in _rates(report)]
    return lines
