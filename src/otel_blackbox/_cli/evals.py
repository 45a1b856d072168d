"""``otel-blackbox eval``: structural regression contracts from a good run, checked against others."""

from __future__ import annotations

import os
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from otel_blackbox._cli.app import cli
from otel_blackbox._cli.common import base_url_option, echo_json, output_option, style, usd_option
from otel_blackbox._render.text import safe
from otel_blackbox._render.words import counted
from otel_blackbox._wire.apis import API_NAMES
from otel_blackbox.errors import BlackboxError

if TYPE_CHECKING:
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
def generate(path: Path, output: str, name: str | None) -> None:
    """Derive a contract from a good cassette, deterministically (no model call).

    \b
    Example:
      otel-blackbox eval generate run.json -o contract.json
    """
    # jsonschema (the contract's schema) and the cassette loader: when a subcommand runs, not for
    # `eval --help`.
    from otel_blackbox._atomic import atomic_text_writer
    from otel_blackbox._cassette.evals import dump_contract, generate_contract
    from otel_blackbox._cassette.io import load_cassette

    contract = generate_contract(load_cassette(path), name=name)
    text = dump_contract(contract)
    if output == "-":
        click.echo(text, nl=False)
        return
    with atomic_text_writer(output) as handle:
        handle.write(text)
    click.echo(f"wrote {safe(output)}: {counted(len(contract['assertions']), 'assertion')}", err=True)


@eval_group.command("run")
@click.argument("contract_path", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("cassettes", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
def run(contract_path: Path, cassettes: tuple[Path, ...]) -> None:
    """Check cassettes against a contract: a pass / fail table; exit 1 on any failure.

    \b
    Example:
      otel-blackbox eval run contract.json run2.json run3.json
    """
    from otel_blackbox._cassette.evals import load_contract, run_contract
    from otel_blackbox._cassette.io import load_cassette

    contract = load_contract(contract_path)
    failed = 0
    for path in cassettes:
        results = run_contract(contract, load_cassette(path))
        bad = [r for r in results if not r.passed]
        failed += bool(bad)
        status = "fail" if bad else "pass"
        click.echo(
            f"{style(f'{status.upper():4}', status)}  {safe(path)}  {len(results) - len(bad)}/{len(results)}"
        )
        for result in bad:
            click.echo(f"        ✗ {safe(result.description)}: {safe(result.detail)}")
    if failed:
        raise SystemExit(1)


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
def run_all(
    folder: Path,
    model: str | None,
    provider: str | None,
    base_url: str | None,
    max_cost: Decimal | None,
    children: Path | None,
    as_json: bool,
) -> None:
    """Rerun every incident of a contract suite and check each child against its contract.

    A contract suite is a folder holding, for each entry NAME, the incident NAME.json and its
    contract NAME.contract.json (as kept beside an incident for diff). Each incident is rerun by the
    built-in agent (as rerun without a program: every tool answered from the incident, never run),
    on --model / --provider, else the contract's "rerun" block, else the incident's own; the block's
    stubs answer the calls the incident did not record. The child passes when it completed and
    every assertion passed. Exit 0 when every contract passed, 1 when any failed, 2 for a setup error
    (a bad folder or contract, an option, a missing key or SDK, nothing at --base-url), checked for
    the whole suite before the first rerun.

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

    entries = load_suite(folder)
    options: dict[str, Any] = {
        "model": model,
        "provider": provider,
        "base_url": base_url,
        "max_cost": max_cost,
    }
    check_suite(entries, **options)
    where = _children(children, folder)
    results = []
    for entry in entries:
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
                "passed": len(results) - failed,
                "failed": failed,
                "children": str(where),
            }
        )
    else:
        click.echo(
            f"{counted(len(results), 'contract')}: {len(results) - failed} passed, {failed} failed "
            f"(children in {safe(where)})"
        )
    if failed:
        raise SystemExit(1)


def _echo_result(result: SuiteResult) -> None:
    status = "pass" if result.passed else "fail"
    good = sum(r.passed for r in result.results)
    name = safe(result.entry.name)
    click.echo(f"{style(f'{status.upper():4}', status)}  {name}  {good}/{len(result.results)}")
    for failure in (r for r in result.results if not r.passed):
        click.echo(f"        ✗ {safe(failure.description)}: {safe(failure.detail)}")
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
        "assertions": results_json(result.results),
    }
