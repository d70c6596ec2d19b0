"""``envkit submit``: parse, call ``envkit.platform.commands.submit``, return its outcome."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from envkit.cli._common import common_options, option_group, output_path_option
from envkit.cli._extras import missing_modules, require_extra
from envkit.cli.job import platform_options, where_from
from envkit.model.gym_data import DEFAULT_GYM_VERSION

if TYPE_CHECKING:
    from envkit.platform.outcomes import SubmitOutcome
    from envkit.validate.gate import GateRequest

__all__ = ["submit_command", "upload_options", "upload_outputs"]

_DIR = click.Path(exists=True, file_okay=False, path_type=Path)
_gate_options = option_group(
    click.option("--arch", type=click.Choice(["x86_64", "aarch64"]), default=None,
                 help="Cluster architecture (default: the package's wheels.lock, else x86_64)."),
    click.option("--python", "python_version", default=None, metavar="3.N",
                 help="Target CPython (default: the package's wheels.lock, else 3.13)."),
    click.option("--glibc", default=None, metavar="2_N",
                 help="Cluster glibc floor, 2_17..2_40 (default: the package's wheels.lock, "
                      "else 2_28)."),
    click.option("--gym-version", default=None,
                 help=f"nemo-gym version of the training image (default {DEFAULT_GYM_VERSION})."),
    click.option("--offline/--no-offline", default=None,
                 help="The cluster has no egress: wheels/ must cover everything."),
    click.option("--strict/--no-strict", default=None, help="Warnings fail too."),
    click.option("--select", multiple=True, metavar="CODES",
                 help="Only these codes or prefixes; replaces the configuration's."),
    click.option("--ignore", multiple=True, metavar="CODES",
                 help="Skip these codes or prefixes; replaces the configuration's."),
    click.option("--extend-select", multiple=True, metavar="CODES",
                 help="Add codes or prefixes to the selection."),
    click.option("--extend-ignore", multiple=True, metavar="CODES",
                 help="Add codes or prefixes to skip."),
    click.option("--isolated", is_flag=True, help="Ignore envkit.toml and [tool.envkit]."),
)


@click.command("submit")
@click.argument("job", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--env", "package", type=_DIR, required=True,
              help="Environment package root: the directory holding nemo-environment.yaml (a "
                   "directory above it is refused, EK100).")
@click.option("--dataset", type=_DIR, required=True,
              help="Prompt dataset directory (training.jsonl, validation.jsonl).")
@platform_options
@click.option("--name", default=None, metavar="NAME",
              help="Job name (default: a fresh rl-envkit-<hex>); an existing job of that name "
                   "with the same inputs is attached to, not duplicated.")
@click.option("--model", default=None, metavar="WS/NAME",
              help="Model entity (overrides the job's).")
@click.option("--wait", "wait_", is_flag=True,
              help="Follow the job to its end; exit 0 only if it completes.")
@output_path_option(type=click.Path(file_okay=False, path_type=Path), default=None,
                    help="With --wait: write metrics.jsonl and reward_curve.png here.")
@_gate_options
@common_options(("json", "human"), default="json")
def submit_command(job: Path, package: Path, dataset: Path, workspace: str | None,
                   base_url: str | None, name: str | None, model: str | None, wait_: bool,
                   output: Path | None, **gate: Any) -> SubmitOutcome:
    """Validate PKG + DATA + JOB, upload them as FileSets, and create the GRPO job.

    Validation is `envkit validate`'s (settings from envkit.toml or [tool.envkit]; flags
    win); nothing is uploaded when it fails. Uploads are content-addressed: an unchanged
    package is not sent again and an interrupted upload resumes. Exit 0 when the job was
    created (with --wait: when it completed), 1 when validation or the platform refused, 2 on
    usage errors or without the `platform` extra.
    """
    from envkit.platform.commands import SubmitRequest, check_submission, submit

    request = SubmitRequest(
        package=package, dataset=dataset, job=job, gate=_gate_request(**gate),
        where=where_from(base_url, workspace), name=name, model=model, wait=wait_,
        output=output)
    if missing_modules("platform"):  # the inputs first: they need fixing either way
        check_submission(request)
        require_extra("submit", "platform")
    return submit(request)


def _gate_request(arch: str | None, python_version: str | None, glibc: str | None,
                  gym_version: str | None, offline: bool | None, strict: bool | None,
                  select: tuple[str, ...], ignore: tuple[str, ...],
                  extend_select: tuple[str, ...], extend_ignore: tuple[str, ...],
                  isolated: bool) -> GateRequest:
    from envkit.validate.gate import GateRequest
    from envkit.validate.settings import Settings

    flags = Settings(select=select or None, ignore=ignore or None, extend_select=extend_select,
                     extend_ignore=extend_ignore, arch=arch, glibc=glibc, python=python_version,
                     gym_version=gym_version, offline=offline, strict=strict)
    return GateRequest(flags=flags, isolated=isolated)


upload_options = option_group(
    click.option("--upload", is_flag=True,
                 help="Also upload the package (and dataset) as NeMo Platform FileSets and log "
                      "their refs on stderr."),
    platform_options)
"""``--upload`` (+ ``--workspace/--base-url``) for ``build`` and ``convert verifiers``."""


def upload_outputs(package: Path, dataset: Path | None, workspace: str | None,
                   base_url: str | None) -> None:
    """Upload what a build/convert wrote (content-addressed, as submit does); failures are
    exceptions the entry point maps (``PlatformError``: exit 1, ``MissingExtra``: exit 2)."""
    require_extra("build --upload", "platform")
    from envkit.platform.commands import upload_outputs as upload

    upload(where_from(base_url, workspace), package, dataset)
