"""``envkit submit``: validate, upload the package and dataset FileSets, create the GRPO job."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from envkit.cli._common import target_from, target_options
from envkit.cli.job import follow, platform_call, platform_options
from envkit.diagnostics import parse_selectors

if TYPE_CHECKING:
    from collections.abc import Callable

    from envkit.platform.http import PlatformClient
    from envkit.platform.jobs import JobRef
    from envkit.platform.submit import SubmitResult
    from envkit.target import Target
    from envkit.validate import ValidateRequest

__all__ = ["submit_command", "upload_options", "upload_outputs"]

_DIR = click.Path(exists=True, file_okay=False, path_type=Path)


@click.command("submit")
@click.argument("job", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--env", "package", type=_DIR, required=True, help="Environment package directory.")
@click.option("--dataset", type=_DIR, required=True,
              help="Prompt dataset directory (training.jsonl, validation.jsonl).")
@platform_options
@click.option("--name", default=None, metavar="NAME",
              help="Job name (default: a fresh rl-envkit-<hex>); an existing job of that name "
                   "with the same inputs is attached to, not duplicated.")
@click.option("--model", default=None, metavar="WS/NAME",
              help="Model entity (overrides the job's).")
@click.option("--wait", "wait_", is_flag=True, help="Follow the job to its end; exit 0 only if "
              "it completes.")
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="With --wait: write metrics.jsonl and reward_curve.png here.")
@target_options
@click.option("--offline", is_flag=True, help="The cluster has no egress: wheels/ must cover "
              "everything.")
@click.option("--strict", is_flag=True, help="Warnings fail too.")
@click.option("--select", multiple=True, metavar="CODES", help="Only these codes or prefixes.")
@click.option("--ignore", multiple=True, metavar="CODES", help="Skip these codes or prefixes.")
def submit_command(job: Path, package: Path, dataset: Path, workspace: str | None,
                   base_url: str | None, name: str | None, model: str | None, wait_: bool,
                   out_dir: Path | None, arch: str, python_version: str, glibc: str | None,
                   offline: bool, strict: bool, select: tuple[str, ...],
                   ignore: tuple[str, ...]) -> int:
    """Validate PKG + DATA + JOB, upload them as FileSets, and create the GRPO job.

    Nothing is uploaded when validation fails; the target is --arch/--python/--glibc when
    given, else the one the package's wheels.lock records. Uploads are content-addressed: an
    unchanged package is not sent again and an interrupted upload resumes. The job is printed
    as JSON on stdout; progress goes to stderr.
    """
    from envkit.validate import ValidateRequest
    from envkit.validators import RULES, CheckOptions

    target = _lock_target(package) if _defaulted("arch", "glibc", "python_version") else None
    request = ValidateRequest(
        package=package, dataset=dataset, job=job,
        options=CheckOptions(target or target_from(arch, python_version, glibc),
                             offline=offline),
        select=parse_selectors(select, RULES), ignore=parse_selectors(ignore, RULES),
        strict=strict,
    )
    if not _validated(request, {"package": package, "dataset": dataset, "job": job.parent}):
        return 1
    with platform_call(base_url, workspace) as client:
        result = _upload_and_create(client, job, package, dataset, name, model)
        if result is None:
            return 1
        click.echo(json.dumps(result.job, indent=2))
        if not wait_:
            return 0
        return follow(client, _job_ref(client, result.job["name"]), out_dir)


def _defaulted(*names: str) -> bool:
    ctx = click.get_current_context()
    return all(ctx.get_parameter_source(n) is click.core.ParameterSource.DEFAULT for n in names)


def _lock_target(package: Path) -> Target | None:
    """The target a wheels-v1 build recorded in ``wheels.lock`` (``cp313-manylinux_2_28_x86_64``):
    checking a package against the platform it was built for unless told otherwise."""
    from envkit.target import Target

    try:
        tag = json.loads((package / "wheels.lock").read_text(encoding="utf-8")).get("target", "")
    except (OSError, ValueError, AttributeError):
        return None
    match = re.fullmatch(r"cp3(\d+)-manylinux_2_(\d+)_(x86_64|aarch64)", str(tag))
    if not match:
        return None
    return Target(arch=match[3], python=(3, int(match[1])), glibc=(2, int(match[2])))


def _validated(request: ValidateRequest, bases: dict[str, Path]) -> bool:
    from rich.console import Console

    from envkit.render import render_human
    from envkit.validate import validate

    report = validate(request)
    if report.valid:
        return True
    render_human(report, Console(file=sys.stderr), bases)
    click.echo("envkit: validation failed; nothing was uploaded", err=True)
    return False


def _job_ref(client: PlatformClient, name: str) -> JobRef:
    from envkit.platform.jobs import JobRef

    return JobRef(client.connection.workspace, name)


def _upload_and_create(client: PlatformClient, job: Path, package: Path, dataset: Path,
                       name: str | None, model: str | None) -> SubmitResult | None:
    """Upload and post; Ctrl-C mid-upload is one line and exit 1, nothing marked complete."""
    from rich.console import Console

    from envkit.platform.jobs import new_job_name
    from envkit.platform.progress import RichProgress
    from envkit.platform.submit import submit_job

    ref = _job_ref(client, name or new_job_name())
    try:
        with RichProgress(Console(file=sys.stderr)) as progress:
            result = submit_job(client, ref, job, package, dataset, progress, model)
    except KeyboardInterrupt:
        click.echo("envkit: interrupted during upload; nothing was marked complete. Run the same "
                   "command again to finish the upload without resending what is there.", err=True)
        return None
    verb = "created" if result.created else "attached to existing"
    click.echo(f"{verb} job {ref.workspace}/{ref.name} (environment {result.environment.ref}, "
               f"dataset {result.dataset.ref}; sent {_sent(result)})", err=True)
    return result


def _sent(result: SubmitResult) -> str:
    stats = (result.environment.stats, result.dataset.stats)
    files = sum(s.files_sent for s in stats)
    nbytes = sum(s.bytes_sent for s in stats)
    return f"{files} files, {nbytes / 1e6:.1f} MB"


def upload_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--upload`` (+ ``--workspace/--base-url``) for ``build`` and ``convert verifiers``."""
    func = platform_options(func)
    return click.option("--upload", is_flag=True,
                        help="Also upload the package (and dataset) as NeMo Platform FileSets "
                             "and print their refs on stderr.")(func)


def upload_outputs(package: Path, dataset: Path | None, workspace: str | None,
                   base_url: str | None) -> int:
    """Upload what a build/convert wrote (content-addressed, as submit does); 0 or 1."""
    from rich.console import Console

    from envkit.platform.progress import RichProgress
    from envkit.platform.submit import publish, publish_package

    with platform_call(base_url, workspace) as client:
        ws = client.connection.workspace
        try:
            with RichProgress(Console(file=sys.stderr)) as progress:
                refs = [("environment", publish_package(client, ws, package, progress).ref)]
                if dataset is not None and (dataset / "training.jsonl").is_file():
                    refs.append(("dataset", publish(client, ws, dataset, "dataset",
                                                    dataset.name, progress).ref))
        except KeyboardInterrupt:
            click.echo("envkit: interrupted during upload; nothing was marked complete. Run "
                       "the upload again to finish it.", err=True)
            return 1
    for purpose, ref in refs:
        click.echo(f"{purpose} FileSet: {ref}", err=True)
    return 0
