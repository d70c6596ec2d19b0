"""``envkit convert verifiers``: parse options, call ``convert_verifiers``, validate the result."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import click

from envkit.cli._common import common_options, output_path_option, target_from
from envkit.cli.submit import upload_options, upload_outputs
from envkit.converters.verifiers import (
    GYM_VERIFIERS_VERSION,
    ConvertError,
    ConvertRequest,
    convert_verifiers,
)
from envkit.converters.vf_request import GYM_RELEASE_DATE
from envkit.model.gym_data import DEFAULT_GYM_VERSION
from envkit.model.target import ARCHES
from envkit.output.results import ConvertOutcome

__all__ = ["verifiers_command"]

_log = logging.getLogger("envkit")

_DIR = click.Path(file_okay=False, path_type=Path)
_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


def _env_args(value: str) -> dict[str, Any]:
    try:
        data = json.loads(value)
    except ValueError as exc:
        msg = f"--env-args must be a JSON object: {exc}"
        raise click.BadParameter(msg) from None
    if not isinstance(data, dict):
        raise click.BadParameter("--env-args must be a JSON object, e.g. '{\"num_examples\": 50}'")
    return data


@click.command("verifiers")
@click.option("--hub-id", required=True, help="owner/name on the Prime Intellect hub.")
@click.option("--hub-version", default=None, help="Release to convert (pin it).")
@click.option("--allow-latest", is_flag=True, help="Take the index's newest release.")
@output_path_option(aliases=("--out-dir",), required=True, type=_DIR,
                    help="Package directory to create.")
@click.option("--dataset-dir", required=True, type=_DIR, help="Dataset directory to create.")
@click.option("--validation-fraction", type=float, default=0.0, show_default=True,
              help="Share of the rows that go to validation.jsonl.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the split.")
@click.option("--arch", type=click.Choice(ARCHES), default="x86_64", show_default=True,
              help="Cluster architecture.")
@click.option("--glibc", default="2_28", show_default=True,
              help="Cluster glibc floor (verifiers' closure has no manylinux2014 pyzmq).")
@click.option("--index-url", default=None, help="Hub index (default: the owner's hub index).")
@click.option("--wheel", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Convert this environment wheel instead of downloading it.")
@click.option("--source", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Build the environment wheel from this source tree.")
@click.option("--verifiers-version", default=GYM_VERIFIERS_VERSION, show_default=True,
              help="verifiers to vendor (Gym's verifiers_agent pin).")
@click.option("--env-args", default="{}",
              help="JSON object passed to load_environment(); secrets as '${oc.env:VAR}'.")
@click.option("--allow-literal-secrets", is_flag=True,
              help="Accept literal values for secret-looking env-arg keys (written into the "
                   "package).")
@click.option("--constraint", "constraints", multiple=True, type=_FILE,
              help="Requirements file bounding the closure's versions (uv --constraints).")
@click.option("--override", "overrides", multiple=True, type=_FILE,
              help="Requirements file replacing what any package asks for (uv --overrides).")
@click.option("--wheels-dir", "wheels_dirs", multiple=True,
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Folder of prebuilt wheels offered to the resolver before the indexes.")
@click.option("--exclude-newer", default=GYM_RELEASE_DATE, show_default=True,
              help="Only uploads before this date are candidates (the harness's release; "
                   "'none': no bound).")
@click.option("--num-examples", type=int, default=-1, help="Rows to take (-1: all).")
@click.option("--timeout", type=float, default=600.0, show_default=True,
              help="Seconds load_environment() may take.")
@click.option("--gym-version", default=DEFAULT_GYM_VERSION, show_default=True,
              help="nemo-gym of the training image (its runtime pins join the resolution).")
@click.option("--offline", is_flag=True,
              help="Validate as if the cluster had no egress (adapter-wheels-v1 needs egress: "
                   "verifiers_agent installs verifiers from GitHub).")
@click.option("--force", is_flag=True, help="Replace existing output directories.")
@upload_options
@common_options(("json", "human", "github", "sarif"), default="json", format_alias=False)
def verifiers_command(output: Path, arch: str, glibc: str, env_args: str, exclude_newer: str,
                      upload: bool, workspace: str | None, base_url: str | None,
                      **opts: Any) -> ConvertOutcome:
    """Convert a verifiers / Prime hub environment into adapter-wheels-v1 + a rollout dataset.

    Prints the validation verdict on stdout (JSON by default); exit 0 valid, 1 failed or
    invalid (then nothing is written).
    """
    request = ConvertRequest(
        out_dir=output, target=target_from(arch, "3.13", glibc), env_args=_env_args(env_args),
        exclude_newer=None if exclude_newer == "none" else exclude_newer, **opts)
    try:
        result = convert_verifiers(request)
    except ConvertError as exc:
        if exc.report is None:
            raise
        _log.error("%s", exc)  # refused after validation: the report says why
        return ConvertOutcome(None, exc.report)
    if upload and result.report.valid:  # a package envkit rejects is never uploaded
        upload_outputs(result.package, result.dataset, workspace, base_url)
    return ConvertOutcome(result, result.report)  # named as installed (``package_as``)
