"""``otel-blackbox eval``: structural regression contracts from a good run, checked against others."""

from __future__ import annotations

from pathlib import Path

import click

from otel_blackbox._cli.app import cli
from otel_blackbox._cli.common import output_option, style
from otel_blackbox._render.text import safe
from otel_blackbox._render.words import counted

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
