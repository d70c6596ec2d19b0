"""``envkit validate``, ``envkit schema`` and ``envkit rule``: parse, call, return a result."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from envkit.cli._common import common_options, report_file_option
from envkit.model.diagnostics import parse_selectors
from envkit.model.gym_data import DEFAULT_GYM_VERSION
from envkit.schemas import SCHEMAS, schema_text

if TYPE_CHECKING:  # imported where built: `envkit validate` itself returns none of them
    from envkit.output.results import RuleDocs, SchemaText

__all__ = ["VALIDATE_FORMATS", "rule_command", "schema_command", "validate_command"]

VALIDATE_FORMATS = ("human", "json", "github", "sarif")
"""``envkit validate --output-format`` choices."""


@click.command("validate")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--dataset", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Prompt dataset directory (training.jsonl, validation.jsonl).")
@click.option("--job", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="GRPO job JSON to check (EK6xx).")
@click.option("--arch", type=click.Choice(["x86_64", "aarch64"]), default=None,
              help="Cluster architecture (default: the package's wheels.lock, else x86_64).")
@click.option("--python", "python_version", default=None,
              help="Target CPython version (default: the package's wheels.lock, else 3.13).")
@click.option("--glibc", default=None, metavar="2_N",
              help="Cluster glibc floor, 2_17..2_40 (default: the package's wheels.lock, "
                   "else 2_28).")
@click.option("--gym-version", default=None,
              help=f"nemo-gym version of the training image (default {DEFAULT_GYM_VERSION}).")
@click.option("--offline/--no-offline", default=None,
              help="The cluster has no egress: wheels/ must cover everything.")
@click.option("--strict/--no-strict", default=None, help="Warnings fail too.")
@click.option("--verify-hashes", is_flag=True,
              help="Check every wheel member against RECORD (default: small wheels only).")
@click.option("--select", multiple=True, metavar="CODES",
              help="Only these codes or prefixes (EK1,EK204); replaces the config's.")
@click.option("--ignore", multiple=True, metavar="CODES",
              help="Skip these codes or prefixes; replaces the config's.")
@click.option("--extend-select", multiple=True, metavar="CODES",
              help="Add codes or prefixes to the selection.")
@click.option("--extend-ignore", multiple=True, metavar="CODES",
              help="Add codes or prefixes to skip.")
@click.option("--exclude", multiple=True, metavar="GLOB",
              help="Skip workspace members (and packages of named files) matching GLOB.")
@click.option("--isolated", is_flag=True, help="Ignore envkit.toml and [tool.envkit].")
@click.option("--ignore-unowned-files", is_flag=True,
              help="Skip named files that lie in no package instead of refusing them (the "
                   "pre-commit hook passes every file a commit touches).")
@click.option("--show-settings", is_flag=True,
              help="Print each package's resolved settings instead of validating.")
@click.option("--smoke", is_flag=True,
              help="Then bring the package's servers up and score rows, as `envkit smoke` "
                   "does (one package; JSON: `envkit schema smoke`).")
@click.option("--probe", is_flag=True,
              help="Then probe whether the package will train, as `envkit probe` does (one "
                   "package, --dataset required; JSON: `envkit schema probe`).")
@click.option("--no-cache", is_flag=True, envvar="ENVKIT_NO_CACHE",
              help="Read every file and wheel now, with no store of envkit's read or "
                   "written (the tree stamps, the wheel facts); also ENVKIT_NO_CACHE=1.")
@report_file_option
@common_options(VALIDATE_FORMATS)
def validate_command(paths: tuple[Path, ...], dataset: Path | None, job: Path | None,
                     arch: str | None, python_version: str | None, glibc: str | None,
                     gym_version: str | None, offline: bool | None, strict: bool | None,
                     verify_hashes: bool, select: tuple[str, ...], ignore: tuple[str, ...],
                     extend_select: tuple[str, ...], extend_ignore: tuple[str, ...],
                     exclude: tuple[str, ...], isolated: bool, ignore_unowned_files: bool,
                     show_settings: bool, smoke: bool, probe: bool, no_cache: bool) -> object:
    """Check packages (and optionally a dataset and GRPO job) before upload.

    Each PATH is a package directory (it holds nemo-environment.yaml), a workspace root (its
    envkit.toml or [tool.envkit] lists its packages: `packages = ["envs/*"]`), or a file
    inside a package (as pre-commit passes them); any other directory is no package (EK100).
    Without PATH: the current directory, as ruff checks `.` (only --dataset/--job when they
    are given and it is neither a package nor a workspace root). Settings come from the
    closest envkit.toml or [tool.envkit] in pyproject.toml; flags win. Reports every
    violation in one run. Exit 0 when all are valid, 1 when any is not, 2 on usage errors.
    """
    from envkit.validate.gate import GateRequest, discover_for, run_gate, shown_settings
    from envkit.validate.settings import Settings

    flags = Settings(select=select or None, ignore=ignore or None,
                     extend_select=extend_select, extend_ignore=extend_ignore, arch=arch,
                     glibc=glibc, python=python_version, gym_version=gym_version,
                     offline=offline, strict=strict, dataset=dataset, job=job)
    request = GateRequest(paths=paths, flags=flags, exclude=exclude,
                          verify_hashes=verify_hashes, no_cache=no_cache, isolated=isolated,
                          ignore_unowned_files=ignore_unowned_files)
    if show_settings:
        from envkit.output.results import SettingsView

        packages = discover_for(request).packages
        return SettingsView(tuple((str(p), shown_settings(p, request))
                                  for p in packages or (Path(),)))
    if probe:  # the probe validates first (same settings), brings the package up once
        from envkit.cli.probe import run_probe_request
        from envkit.probe import ProbeRequest

        return run_probe_request(ProbeRequest.after_validate(request, "--probe"))
    if smoke:  # the smoke run validates first (same settings) and reports both
        from envkit.cli.smoke import run_smoke_request
        from envkit.smoke.run import SmokeRequest

        return run_smoke_request(SmokeRequest.after_validate(request, "--smoke"))
    return run_gate(request)


@click.command("schema")
@click.argument("name", type=click.Choice(SCHEMAS))
@common_options(formats=None)
def schema_command(name: str) -> SchemaText:
    """Print a JSON Schema shipped with envkit: the manifest, the GRPO job, or the shape of a
    command's JSON output (diagnostics, convert, rollout, train, rules, settings, smoke, probe,
    error)."""
    from envkit.output.results import SchemaText

    return SchemaText(name, schema_text(name))


@click.command("rule")
@click.argument("selectors", nargs=-1)
@click.option("--all", "show_all", is_flag=True, help="List every rule.")
@common_options()
def rule_command(selectors: tuple[str, ...], show_all: bool) -> RuleDocs:
    """Explain a rule (EK105), or list the rules a prefix selects (EK1), as `ruff rule` does."""
    from envkit.output.results import RuleDocs
    from envkit.validators import KNOWN_RULES as RULES

    if show_all or not selectors:
        return RuleDocs(tuple(RULES.values()), detail=False)
    try:
        chosen = parse_selectors(selectors, RULES.keys())
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="SELECTORS") from None
    rules = tuple(r for code, r in RULES.items() if code.startswith(chosen))
    return RuleDocs(rules, detail=len(rules) == 1 and chosen[0] in RULES)
