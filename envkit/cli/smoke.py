"""``envkit smoke``: the spin-up gate. Parse -> ``envkit.smoke.run_smoke`` -> render.

Exit 0 when every server came up and every agent returned a numeric reward, 1 when not (each
failure with its server's log tail and likely EK code), 2 on usage errors, 130 on Ctrl-C or
SIGTERM (every server torn down first).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from envkit.cli._common import parse_codes, sigterm_as_interrupt, target_from, target_options
from envkit.validators._base import DEFAULT_GYM_VERSION

__all__ = ["run_smoke_cli", "smoke_command", "smoke_from_validate", "smoke_runtime_options"]

_DIR = click.Path(exists=True, file_okay=False, path_type=Path)
FORMATS = ("human", "json", "github")


def smoke_runtime_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Options of the spin-up itself (shared with ``validate --smoke``)."""
    for option in reversed((
        click.option("--rows", default=1, show_default=True, type=click.IntRange(min=1),
                     help="Rows per agent (the dataset's first N; else a minimal row)."),
        click.option("--completion", default=None, metavar="TEXT",
                     help="Fixed reply of the scripted policy (default: the row's "
                          "expected_answer, else a fixed text)."),
        click.option("--timeout", "ready_timeout_s", default=300.0, show_default=True,
                     type=click.FloatRange(min=1), help="Seconds for every server to be ready."),
        click.option("--rollout-timeout", "rollout_timeout_s", default=120.0, show_default=True,
                     type=click.FloatRange(min=1), help="Seconds per rollout."),
        click.option("--gym-python", type=click.Path(exists=True, dir_okay=False,
                                                     path_type=Path),
                     help="CPython 3.13 for Gym (default: PATH, pyenv, $ENVKIT_GYM_PYTHON)."),
        click.option("--allow-python-override", is_flag=True,
                     envvar="ENVKIT_ALLOW_PYTHON_OVERRIDE", show_envvar=True,
                     help="Install nemo-gym on a 3.13 older than its Requires-Python floor."),
        click.option("--keep-logs", type=click.Path(file_okay=False, path_type=Path),
                     help="Copy the servers' logs here."),
    )):
        func = option(func)
    return func


@click.command("smoke")
@click.argument("package", type=_DIR)
@click.option("--dataset", type=_DIR, help="Dataset dir (training.jsonl): rows to send.")
@target_options
@click.option("--gym-version", default=DEFAULT_GYM_VERSION, show_default=True,
              help="nemo-gym version of the training image.")
@click.option("--offline", is_flag=True,
              help="No route out: index-free installs from wheels/, servers in a network "
                   "namespace with loopback only (else behind a refusing proxy).")
@smoke_runtime_options
@click.option("--format", "--output-format", "output_format", type=click.Choice(FORMATS),
              default="human", show_default=True)
def smoke_command(package: Path, dataset: Path | None, arch: str, python_version: str,
                  glibc: str | None, gym_version: str, offline: bool, output_format: str,
                  **runtime: Any) -> int:
    """Prove PACKAGE starts and scores: validate, bring its real Gym servers up, and drive
    rows through every agent against a scripted policy (no model).

    Exit 0 when all servers were ready and every rollout returned a numeric reward.
    """
    return run_smoke_cli(package, dataset, target_from(arch, python_version, glibc), gym_version,
                         offline, output_format, runtime)


def run_smoke_cli(package: Path, dataset: Path | None, target: Any, gym_version: str,
                  offline: bool, output_format: str, runtime: dict[str, Any],
                  static: dict[str, Any] | None = None) -> int:
    """Run and render; ``static`` carries validate's own flags (select, ignore, strict, ...)."""
    from envkit.smoke import SmokeRequest, run_smoke
    from envkit.smoke._runtime import GymVenvError

    _setup_logging()
    static = dict(static or {})
    for key in ("select", "ignore"):
        static[key] = parse_codes(static.get(key, ()))
    request = SmokeRequest(package=package, dataset=dataset, target=target,
                           gym_version=gym_version, offline=offline, **runtime, **static)
    try:
        with sigterm_as_interrupt():
            report = run_smoke(request)
    except (GymVenvError, FileNotFoundError, NotADirectoryError) as exc:
        raise click.UsageError(str(exc)) from None
    _render(report, output_format, package)
    return 0 if report.passed else 1


def _setup_logging() -> None:
    from rich.console import Console
    from rich.logging import RichHandler

    handler = RichHandler(console=Console(stderr=True), show_path=False, show_time=False)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)


def _render(report: Any, output_format: str, package: Path) -> None:
    from envkit.smoke.render import render_github, render_human, render_json

    if output_format == "json":
        click.echo(render_json(report))
    elif output_format == "github":
        text = render_github(report, package)
        if text:
            click.echo(text)
    else:
        from rich.console import Console

        render_human(report, Console(file=sys.stdout), package)


def smoke_from_validate(package: Path | None, dataset: Path | None, target: Any,
                        gym_version: str, offline: bool, output_format: str,
                        static: dict[str, Any]) -> int:
    """``envkit validate --smoke``: smoke's defaults for the runtime options."""
    import os

    if package is None:
        raise click.UsageError("--smoke needs a PACKAGE directory")
    override = os.environ.get("ENVKIT_ALLOW_PYTHON_OVERRIDE", "").lower() in ("1", "true", "yes")
    runtime = {"allow_python_override": override}
    return run_smoke_cli(package, dataset, target, gym_version, offline, output_format, runtime,
                         static)
