"""``envkit validate``, ``envkit schema`` and ``envkit rule``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from envkit.cli._common import parse_codes, target_from, target_options
from envkit.render import render_github, render_human, render_json
from envkit.schemas import SCHEMAS, schema_text
from envkit.validate import ValidateRequest, validate
from envkit.validators import RULES, CheckOptions
from envkit.validators._base import DEFAULT_GYM_VERSION

__all__ = ["rule_command", "schema_command", "validate_command"]

_EXISTING = click.Path(exists=True, path_type=Path)


@click.command("validate")
@click.argument("package", required=False,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--dataset", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Prompt dataset directory (training.jsonl, validation.jsonl).")
@click.option("--job", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="GRPO job JSON to check (EK6xx).")
@target_options
@click.option("--gym-version", default=DEFAULT_GYM_VERSION, show_default=True,
              help="nemo-gym version of the training image.")
@click.option("--offline", is_flag=True,
              help="The cluster has no egress: wheels/ must cover everything.")
@click.option("--strict", is_flag=True, help="Warnings fail too.")
@click.option("--verify-hashes", is_flag=True,
              help="Check every wheel member against RECORD (default: small wheels only).")
@click.option("--select", multiple=True, metavar="CODES",
              help="Only these codes or prefixes (EK1,EK204).")
@click.option("--ignore", multiple=True, metavar="CODES", help="Skip these codes or prefixes.")
@click.option("--format", "output_format", type=click.Choice(["human", "json", "github"]),
              default="human", show_default=True)
@click.option("--smoke", is_flag=True,
              help="Then bring the package's servers up and score rows (`envkit smoke`).")
def validate_command(
    package: Path | None,
    dataset: Path | None,
    job: Path | None,
    arch: str,
    python_version: str,
    glibc: str | None,
    gym_version: str,
    offline: bool,
    strict: bool,
    verify_hashes: bool,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    output_format: str,
    smoke: bool = False,
) -> int:
    """Check a package (and optionally its dataset and GRPO job) before upload.

    Reports every violation in one run. Exit 0 when valid, 1 when not, 2 on usage errors.
    """
    if package is None and dataset is None and job is None:
        raise click.UsageError("give a PACKAGE directory, --dataset DIR or --job FILE")
    if smoke:  # the smoke run validates first (same options) and reports both
        from envkit.cli.smoke import smoke_from_validate

        return smoke_from_validate(package, dataset, target_from(arch, python_version, glibc),
                                   gym_version, offline, output_format,
                                   {"select": select, "ignore": ignore, "strict": strict,
                                    "verify_hashes": verify_hashes})
    request = ValidateRequest(
        package=package,
        dataset=dataset,
        job=job,
        options=CheckOptions(target_from(arch, python_version, glibc), gym_version, offline),
        select=parse_codes(select),
        ignore=parse_codes(ignore),
        strict=strict,
        verify_hashes=verify_hashes,
    )
    try:
        report = validate(request)
    except (FileNotFoundError, NotADirectoryError) as exc:  # validate()'s documented usage errors
        raise click.UsageError(str(exc)) from None
    bases = {"package": package, "dataset": dataset, "job": job.parent if job else None}
    if output_format == "json":
        click.echo(render_json(report))
    elif output_format == "github":
        text = render_github(report, bases)
        if text:
            click.echo(text)
    else:
        from rich.console import Console  # lazy: only human output pays for rich

        render_human(report, Console(file=sys.stdout), bases)
    return 0 if report.valid else 1


@click.command("schema")
@click.argument("name", type=click.Choice(SCHEMAS))
def schema_command(name: str) -> int:
    """Print a JSON Schema shipped with envkit (manifest, diagnostics report, GRPO job)."""
    click.echo(schema_text(name), nl=False)
    return 0


@click.command("rule")
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="List every rule.")
def rule_command(code: str | None, show_all: bool) -> int:
    """Explain a rule code, as `ruff rule` does."""
    if show_all or code is None:
        for rule in RULES.values():
            click.echo(f"{rule.code}  {rule.severity.value:<7}  {rule.title}")
        return 0
    rule = RULES.get(code.upper())
    if rule is None:
        raise click.BadParameter(f"unknown rule {code!r}; `envkit rule --all` lists them")
    click.echo(f"# {rule.title} ({rule.code})\n\nSeverity: {rule.severity.value}\n")
    click.echo(f"## Why is this bad?\n{rule.why}\n\n## How to fix\n{rule.fix}")
    return 0
