"""Commands over cassettes: inspect, verify, diff, assert (``cassette``, which writes them from
recorded spans, is in ``cassette_command.py``)."""

from __future__ import annotations

from pathlib import Path

import click

from otel_blackbox._cassette.assertions import check_expectations, format_expectations
from otel_blackbox._cassette.diff.contract import ContractCheck, find_contract
from otel_blackbox._cassette.diff.report import diff_cassettes
from otel_blackbox._cassette.diff.text import format_diff
from otel_blackbox._cassette.trusted import resealed
from otel_blackbox._cassette.verify import VerifyReport, verify_cassette, verify_file
from otel_blackbox._cli.app import cli
from otel_blackbox._cli.common import (
    ALLOW_UNVERIFIED,
    checked_inputs,
    echo_json,
    style,
)
from otel_blackbox._render.cassette_text import render_timeline
from otel_blackbox._render.text import safe

__all__: list[str] = []


@cli.command()
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--width", type=click.IntRange(min=20), default=160, show_default=True, help="Shorten values to this."
)
@ALLOW_UNVERIFIED
def inspect(path: Path, width: int, allow_unverified: bool) -> None:
    """The steps of a cassette as a readable timeline.

    When the cassette holds token counts, the header says what its model calls cost (genai-prices).

    \b
    Example:
      otel-blackbox inspect incident.json
    """
    (cassette,) = checked_inputs([path], allow_unverified)
    for line in render_timeline(cassette, limit=width):
        click.echo(line)


def _print_report(report: VerifyReport) -> None:
    for check in report.checks:
        named = check.step_index is None or check.detail.startswith("step ")
        where = "" if named else f" (step {check.step_index})"
        click.echo(
            f"{style(f'{check.status.upper():4}', check.status)}  {check.name:20} {safe(check.detail)}{where}"
        )


@cli.command()
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--expect-head", metavar="HASH", help="The last step's hash, kept elsewhere: catches a cut tail."
)
@click.option("--json", "as_json", is_flag=True, help="The report as JSON.")
def verify(path: Path, expect_head: str | None, as_json: bool) -> None:
    """Check a cassette: schema_version, hash_chain, provider_neutrality, replayability.

    Stops at the first failure and shows the rest as skipped; exit 1 on a failure.

    \b
    Example:
      otel-blackbox verify incident.json --expect-head 5d32b8fc...
    """
    report = verify_file(path, expect_head=expect_head)
    if as_json:
        echo_json(report.to_json())
    else:
        _print_report(report)
    if not report.passed:
        raise SystemExit(1)


@cli.command()
@click.argument("parent", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("child", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--semantic", is_flag=True, help="Compare step types and payloads only (two separate recordings)."
)
@click.option(
    "--contract",
    "contract_path",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="An `eval generate` contract to check the child against (default: PARENT's own, "
    "PARENT.contract.json, when there is one); the exit code is then its verdict.",
)
@click.option("--no-contract", is_flag=True, help="Ignore the contract beside PARENT.")
@click.option("--json", "as_json", is_flag=True, help="The diff as JSON.")
@ALLOW_UNVERIFIED
def diff(
    parent: Path,
    child: Path,
    semantic: bool,
    contract_path: Path | None,
    no_contract: bool,
    as_json: bool,
    allow_unverified: bool,
) -> None:
    """The first step where two cassettes diverge, and what it changed in the outcome.

    By hash (a fork against its parent) or --semantic. Exit 1 when they diverge. Each side's model
    calls are priced from their token counts (genai-prices): the child's cost beside the parent's
    (--json: cost_usd, null when unpriced). Token counts are not behaviour: --semantic ignores them.

    The closing verdict says what the child did with the parent's failure (a run failed when it
    ended in an error, never finished, or had a tool result that is an error): `failure fixed` only
    when it did what failed again without error (the tool that errored answered, or every tool the
    parent reached when the run itself failed), `failure avoided` when it succeeded without doing
    so, `still failing`, or a regression, answer, tool path or no change.

    A contract decides when there is one: --contract FILE, or PARENT's own kept beside it
    (incident.json: incident.contract.json; --no-contract ignores it). The child is checked against
    it and the exit code is 0 only when the child completed and the contract passed (a rerun always
    diverges from its incident: that alone does not fail it).

    \b
    Example:
      otel-blackbox diff run.json child.json
      otel-blackbox diff incident.json child.json --contract contract.json
    """
    # A bad contract: exit 2, before any output.
    check = None if no_contract and contract_path is None else find_contract(parent, contract_path)
    parent_cassette, child_cassette = checked_inputs([parent, child], allow_unverified)
    if allow_unverified:  # compared by what their content hashes to, never by a hash kept in the file
        parent_cassette, child_cassette = resealed(parent_cassette), resealed(child_cassette)
    evidence = None if check is None else check.evidence(parent_cassette, child_cassette)
    report = diff_cassettes(parent_cassette, child_cassette, semantic=semantic, contract=evidence)
    if as_json:
        echo_json(report.to_json() if check is None else {**report.to_json(), "contract": check.to_json()})
    else:
        for line in format_diff(report):
            click.echo(line)
        for line in [] if check is None else _contract_lines(check):
            click.echo(line)
    if (check is None and report.index is not None) or (check is not None and not check.passed):
        raise SystemExit(1)


def _contract_lines(check: ContractCheck) -> list[str]:
    """After the verdict: which contract, each assertion, then pass or fail."""
    from otel_blackbox._cassette.evals import format_results

    passed = sum(r.passed for r in check.results)
    where = " (beside the incident)" if check.beside else ""
    head = f"contract {safe(check.path)}{where} on the child: {passed}/{len(check.results)} assertions passed"
    lines = [head]
    for line, result in zip(format_results(check.results), check.results, strict=True):
        lines.append(style(line[:4], "pass" if result.passed else "fail") + line[4:])
    if not check.child_completed:
        verdict = "fail (the child did not complete)"
    else:
        verdict = "pass" if check.passed else "fail"
    return [*lines, f"contract: {style(verdict, 'pass' if check.passed else 'fail')}"]


@cli.command("assert")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--expect-status", type=click.Choice(["success", "error", "incomplete"]), help="How the run ended."
)
@click.option("--expect-final-answer", metavar="TEXT", help="The exact final answer.")
@click.option(
    "--expect-tools", metavar="A,B,...", help="The tools called, in order (comma-separated; '' for none)."
)
@click.option("--expect-failure-reason", metavar="TEXT", help="The exact failure reason.")
@ALLOW_UNVERIFIED
def assert_command(
    path: Path,
    expect_status: str | None,
    expect_final_answer: str | None,
    expect_tools: str | None,
    expect_failure_reason: str | None,
    allow_unverified: bool,
) -> None:
    """Verify a cassette, then check exact expectations; exit 1 if any fails.

    \b
    Example:
      otel-blackbox assert run.json --expect-status success --expect-tools search,booking
    """
    (cassette,) = checked_inputs([path], allow_unverified)
    report = verify_cassette(cassette)
    _print_report(report)
    tools = None if expect_tools is None else [t.strip() for t in expect_tools.split(",") if t.strip()]
    results = check_expectations(
        cassette,
        status=expect_status,
        final_answer=expect_final_answer,
        tools=tools,
        failure_reason=expect_failure_reason,
    )
    for line, result in zip(format_expectations(results), results, strict=True):
        status = "pass" if result.passed else "fail"
        click.echo(style(line[:4], status) + line[4:])
    if not report.passed or not all(r.passed for r in results):
        raise SystemExit(1)
