"""``envkit init DIR``: parse -> ``envkit.init.init_project`` -> an ``InitResult``."""

from __future__ import annotations

from pathlib import Path

import click

from envkit.cli._common import common_options
from envkit.init import FORMATS, TEMPLATES, InitRequest, InitResult, init_project
from envkit.model.target import ARCHES

__all__ = ["init_command"]


@click.command("init")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--template", type=click.Choice(TEMPLATES), default="gym", show_default=True,
              help="gym: a NeMo Gym resources server; verifiers: a classic verifiers "
                   "environment for `envkit convert verifiers --source`.")
@click.option("--name", default=None,
              help="Environment name (metadata.name; default: DIRECTORY's name).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="wheels-v1",
              show_default=True, help="Package format the project builds (gym template).")
@click.option("--arch", type=click.Choice(ARCHES), default="x86_64", show_default=True,
              help="Cluster architecture the package is built for.")
@click.option("--no-ci", is_flag=True,
              help="Leave out .pre-commit-config.yaml and the GitHub Actions workflow.")
@common_options(("human", "json"), format_alias=False)
def init_command(directory: Path, template: str, name: str | None, fmt: str, arch: str,
                 no_ci: bool) -> InitResult:
    """Start a new environment project in DIRECTORY (new or empty; nothing is overwritten).

    Writes the server (or verifiers environment), its config, Gym 0.7's verifier fixture,
    training and validation rows, a GRPO job with the platform's LoRA defaults and
    envkit.toml; and, unless --no-ci, a pre-commit configuration and a GitHub Actions
    workflow that build, validate, smoke-test and probe the package. Exit 1 when DIRECTORY
    is not empty.
    """
    if template == "verifiers" and fmt != "wheels-v1":
        msg = "--format applies to the gym template (verifiers converts to adapter-wheels-v1)"
        raise click.BadParameter(msg, param_hint="--format")
    return init_project(InitRequest(directory, template, name, fmt, arch, ci=not no_ci))
