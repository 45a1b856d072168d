"""``otel-blackbox eval``: structural regression contracts from a good run, checked against others."""

from __future__ import annotations

import os
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from otel_blackbox._cli.app import cli
from otel_blackbox._cli.common import (
    ALLOW_UNVERIFIED,
    base_url_option,
    carried_warning,
    checked_inputs,
    echo_document,
    echo_json,
    output_option,
    style,
    usd_option,
)
from otel_blackbox._render.text import safe
from otel_blackbox._render.words import counted
from otel_blackbox._wire.apis import API_NAMES
from otel_blackbox.errors import BadArgument, BlackboxError

if TYPE_CHECKING:
    from otel_blackbox._cassette.evals import AssertionResult
    from otel_blackbox._cassette.suite import BrokenEntry
    from otel_blackbox._playback.agent.run_all import SuiteResult

__all__: list[str] = []


@cli.group("eval")
def eval_group() -> None:
    """Structural contracts: generate one from a good cassette, run it on others.

    \b
    Example:
      otel-blackbox eval generate run.json -o contract.json
      otel-blackbox eval run contract.json run2.json run3.json
    """


@eval_group.command("generate")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@output_option("Contract file, or - for stdout.", stdout=True)
@click.option("--name", help="A name for the contract (default: from the cassette id).")
@click.option(
    "--from-failed",
    is_flag=True,
    help="From a failed run: assertions that its failure is gone (the run succeeds, no tool error, "
    "not the answer it failed on), never what it did.",
)
@ALLOW_UNVERIFIED
def generate(path: Path, output: str, name: str | None, from_failed: bool, allow_unverified: bool) -> None:
    """Derive a contract from a good cassette, deterministically (no model call).

    What the run did (status, tools, their order and short inputs, a bound on model turns, no tool
    errors) and, when its answer is a JSON object or array, its structure, proposed: each such
    assertion is marked "proposed": true, to keep (remove the mark) or drop. A failed run (an error,
    an unfinished run, a tool error) is refused: with --from-failed the contract says instead what
    must not happen again, and passes a run without that failure. An output named NAME.contract.json
    (a contract suite's entry) must have a NAME a suite reads back.

    \b
    Example:
      otel-blackbox eval generate run.json -o contract.json
      otel-blackbox eval generate incident.json --from-failed -o incident.contract.json
    """
    # jsonschema (the contract's schema) and the cassette loader: when a subcommand runs, not for
    # `eval --help`.
    from otel_blackbox._atomic import atomic_text_writer
    from otel_blackbox._cassette.contract_from_failed import contract_from_failed
    from otel_blackbox._cassette.diff.contract import CONTRACT_SUFFIX
    from otel_blackbox._cassette.diff.outcome import run_failure
    from otel_blackbox._cassette.evals import dump_contract, generate_contract, proposed_count
    from otel_blackbox._cassette.suite import check_name

    if output != "-" and Path(output).name.endswith(CONTRACT_SUFFIX):
        check_name(Path(output).name.removesuffix(CONTRACT_SUFFIX))
    (cassette,) = checked_inputs([path], allow_unverified)
    failure = run_failure(cassette)
    if failure is not None and not from_failed:
        raise BadArgument(
            f"{path}: the run failed ({failure.label}): a contract from it would require the failure; "
            "--from-failed writes one that requires it gone"
        )
    if from_failed:
        contract = contract_from_failed(cassette, name=name, source=str(path))
    else:
        contract = generate_contract(cassette, name=name)
    warning = carried_warning()
    if warning is not None:  # the contract keeps it: made from a cassette that failed verify
        contract["source"] = {**contract.get("source", {}), "unverified": warning}
    text = dump_contract(contract)
    if output == "-":
        echo_document(text)
    else:
        with atomic_text_writer(output) as handle:
            handle.write(text)
        click.echo(f"wrote {safe(output)}: {counted(len(contract['assertions']), 'assertion')}", err=True)
    proposals = proposed_count(contract)
    if proposals:
        are, them = ("is a proposal", "it") if proposals == 1 else ("are proposals", "them")
        click.echo(
            f'{counted(proposals, "assertion")} {are} ("proposed": true): keep or drop {them}', err=True
        )


@eval_group.command("run")
@click.argument("contract_path", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("cassettes", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@ALLOW_UNVERIFIED
def run(contract_path: Path, cassettes: tuple[Path, ...], allow_unverified: bool) -> None:
    """Check cassettes against a contract: a pass / fail table; exit 1 on any failure.

    \b
    Example:
      otel-blackbox eval run contract.json run2.json run3.json
    """
    from otel_blackbox._cassette.evals import load_contract, run_contract

    contract = load_contract(contract_path)
    checked = checked_inputs(cassettes, allow_unverified)  # every one, before the first row
    failed = 0
    for path, cassette in zip(cassettes, checked, strict=True):
        results = run_contract(contract, cassette)
        bad = [r for r in results if not r.passed]
        failed += bool(bad)
        status = "fail" if bad else "pass"
        click.echo(
            f"{style(f'{status.upper():4}', status)}  {safe(path)}  {len(results) - len(bad)}/{len(results)}"
        )
        for result in bad:
            click.echo(f"        ✗ {_proposed(result)}{safe(result.description)}: {safe(result.detail)}")
    if failed:
        raise SystemExit(1)


def _proposed(result: AssertionResult) -> str:
    return "(proposed) " if result.proposed else ""


def _children(folder: Path | None, suite: Path) -> Path:
    """Where the children go: the folder given (created if need be; never the suite's own, where a
    child could take an incident's name), else a new temporary folder."""
    if folder is None:
        return Path(tempfile.mkdtemp(prefix="otel-blackbox-run-all-"))
    if folder.resolve() == suite.resolve():
        raise click.BadParameter("the suite folder itself: give another folder", param_hint="--children")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise click.BadParameter(f"{folder}: {exc.strerror or exc}", param_hint="--children") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise click.BadParameter(f"{folder}: not writable", param_hint="--children")
    return folder


@eval_group.command("run-all")
@click.argument("folder", type=click.Path(path_type=Path))
@click.option(
    "--model", metavar="NAME", help="The model to rerun on (default: each contract's, else its incident's)."
)
@click.option(
    "--provider",
    type=click.Choice(API_NAMES),
    help="The API to rerun on (default: each contract's, else its incident's).",
)
@click.option(
    "--base-url",
    metavar="URL",
    callback=base_url_option,
    help="The provider's base URL (default: the SDK's own variable).",
)
@click.option(
    "--max-cost",
    metavar="USD",
    callback=usd_option,
    help="Each rerun's budget in US dollars, as rerun's: it stops before the call it cannot afford.",
)
@click.option(
    "--children",
    metavar="DIR",
    type=click.Path(file_okay=False, path_type=Path),
    help="The folder for the child cassettes, NAME.child.json (default: a new temporary folder).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@ALLOW_UNVERIFIED
def run_all(
    folder: Path,
    model: str | None,
    provider: str | None,
    base_url: str | None,
    max_cost: Decimal | None,
    children: Path | None,
    as_json: bool,
    allow_unverified: bool,
) -> None:
    """Rerun every incident of a contract suite and check each child against its contract.

    A contract suite is a folder holding, for each entry NAME, the incident NAME.json and its
    contract NAME.contract.json (as kept beside an incident for diff). Each incident is rerun by the
    built-in agent (as rerun without a program: every tool answered from the incident, never run),
    on --model / --provider, else the contract's "rerun" block, else the incident's own; the block's
    stubs answer the calls the incident did not record. The child passes when it completed and
    every assertion passed. An entry that cannot run (its contract does not load, its incident is
    missing) is listed BROKEN with the reason, and the others still run. Exit 0 when every contract
    passed, 1 when any failed or is broken, 2 for a setup error (a bad folder, an option, a missing
    key or SDK, nothing at --base-url), checked for the whole suite before the first rerun.

    \b
    Example:
      otel-blackbox eval run-all contracts/ --model gpt-4.1-mini
      otel-blackbox eval run-all contracts/ --model claude-sonnet-4-5 --provider anthropic --max-cost 0.50
      otel-blackbox eval run-all contracts/ --children children/ --json
    """
    if model is not None and not model.strip():
        raise click.BadParameter("give a model name", param_hint="--model")
    from otel_blackbox._cassette.suite import load_suite
    from otel_blackbox._playback.agent.run_all import (  # the execution side: only when it runs
        check_suite,
        run_entry,
    )

    suite = load_suite(folder, allow_unverified=allow_unverified)
    entries = suite.entries
    options: dict[str, Any] = {
        "model": model,
        "provider": provider,
        "base_url": base_url,
        "max_cost": max_cost,
        "allow_unverified": allow_unverified,
    }
    if allow_unverified:  # the warnings, before the first line (without it, check_suite refuses one)
        checked_inputs([entry.incident for entry in entries], allow_unverified)
    check_suite(entries, **options)
    # No entry to run (every one broken): no temporary folder for children there will not be.
    where = _children(children, folder) if entries or children is not None else None
    if not as_json:
        for broken in suite.broken:
            _echo_broken(broken)
    results = []
    for entry in entries:
        assert where is not None
        try:
            result = run_entry(entry, children=where, **options)
        except BlackboxError as exc:  # a setup error after all: not a contract failure
            raise BlackboxError(f"{entry.name}: {exc}") from None
        results.append(result)
        if not as_json:
            _echo_result(result)
    failed = sum(not r.passed for r in results)
    if as_json:
        echo_json(
            {
                "contracts": [_result_json(r) for r in results],
                "broken": [_broken_json(b) for b in suite.broken],
                "passed": len(results) - failed,
                "failed": failed,
                "children": None if where is None else str(where),
            }
        )
    else:
        total = len(results) + len(suite.broken)
        not_run = f", {len(suite.broken)} broken" if suite.broken else ""
        kept = "" if where is None else f" (children in {safe(where)})"
        click.echo(
            f"{counted(total, 'contract')}: {len(results) - failed} passed, {failed} failed{not_run}{kept}"
        )
    if failed or suite.broken:
        raise SystemExit(1)


def _echo_broken(broken: BrokenEntry) -> None:
    """A broken entry, before the reruns: it did not run, and the run's exit code will say so."""
    click.echo(f"{style('BROKEN', 'fail')}  {safe(broken.name)}")
    click.echo(f"        ✗ {safe(broken.reason)}")


def _broken_json(broken: BrokenEntry) -> dict[str, Any]:
    return {"name": broken.name, "contract": str(broken.contract_path), "reason": broken.reason}


def _echo_result(result: SuiteResult) -> None:
    status = "pass" if result.passed else "fail"
    good = sum(r.passed for r in result.results)
    name = safe(result.entry.name)
    click.echo(f"{style(f'{status.upper():4}', status)}  {name}  {good}/{len(result.results)}")
    for failure in (r for r in result.results if not r.passed):
        click.echo(f"        ✗ {_proposed(failure)}{safe(failure.description)}: {safe(failure.detail)}")
    if result.stopped is not None:
        click.echo(f"        ✗ the rerun stopped short: {safe(result.stopped)}")


def _result_json(result: SuiteResult) -> dict[str, Any]:
    from otel_blackbox._cassette.diff.contract import results_json

    return {
        "name": result.entry.name,
        "incident": str(result.entry.incident),
        "contract": str(result.entry.contract_path),
        "child": None if result.child is None else str(result.child),
        "passed": result.passed,
        "stopped": result.stopped,
        "assertions": [
            {**shown, "proposed": True} if r.proposed else shown
            for r, shown in zip(result.results, results_json(result.results), strict=True)
        ],
    }
