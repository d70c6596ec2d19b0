"""``envkit smoke``: the spin-up gate.

Exit 0 when every server came up and every agent returned a numeric reward, 1 when not (each
failure with its server's log tail and likely EK code), 2 on usage errors, 130 on Ctrl-C or
SIGTERM (every server torn down first).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from envkit.cli._common import (
    allow_python_override_option,
    common_options,
    gym_python_option,
    option_group,
    report_file_option,
    sigterm_as_interrupt,
)
from envkit.model.gym_data import DEFAULT_GYM_VERSION

if TYPE_CHECKING:
    from envkit.smoke import SmokeOutcome, SmokeRequest

__all__ = ["FORMATS", "run_smoke_request", "smoke_command", "smoke_runtime_options"]

_DIR = click.Path(exists=True, file_okay=False, path_type=Path)
FORMATS = ("human", "json", "github", "sarif")


smoke_runtime_options = option_group(
    click.option("--rows", default=1, show_default=True, type=click.IntRange(min=1),
                 help="Rows per agent (the dataset's first N; else a minimal row)."),
    click.option("--completion", default=None, metavar="TEXT",
                 help="Fixed reply of the scripted policy (default: the row's "
                      "expected_answer, else a fixed text)."),
    click.option("--timeout", "ready_timeout_s", default=300.0, show_default=True,
                 type=click.FloatRange(min=1), help="Seconds for every server to be ready."),
    click.option("--rollout-timeout", "rollout_timeout_s", default=120.0, show_default=True,
                 type=click.FloatRange(min=1), help="Seconds per rollout."),
    gym_python_option,
    allow_python_override_option,
    click.option("--keep-logs", type=click.Path(file_okay=False, path_type=Path),
                 help="Copy the servers' logs here."),
)
"""Options of the spin-up itself."""


_static_options = option_group(
    click.option("--dataset", type=_DIR, help="Dataset dir (training.jsonl): rows to send."),
    click.option("--arch", type=click.Choice(["x86_64", "aarch64"]), default=None,
                 help="Cluster architecture (default: the package's wheels.lock, else "
                      "x86_64)."),
    click.option("--python", "python_version", default=None,
                 help="Target CPython version (default: the package's wheels.lock, else "
                      "3.13)."),
    click.option("--glibc", default=None, metavar="2_N",
                 help="Cluster glibc floor, 2_17..2_40 (default: the package's "
                      "wheels.lock, else 2_28)."),
    click.option("--gym-version", default=None,
                 help=f"nemo-gym version of the training image (default "
                      f"{DEFAULT_GYM_VERSION})."),
    click.option("--offline/--no-offline", default=None,
                 help="No route out: index-free installs from wheels/, servers in a "
                      "network namespace with loopback only (else behind a refusing "
                      "proxy)."),
    click.option("--isolated", is_flag=True, help="Ignore envkit.toml and [tool.envkit]."),
)
"""The static pass's options, spelled and defaulted as ``envkit validate``'s."""


@click.command("smoke")
@click.argument("package", type=_DIR)
@_static_options
@smoke_runtime_options
@report_file_option
@common_options(FORMATS)
def smoke_command(package: Path, dataset: Path | None, arch: str | None,
                  python_version: str | None, glibc: str | None, gym_version: str | None,
                  offline: bool | None, isolated: bool, **runtime: Any) -> SmokeOutcome:
    """Prove PACKAGE starts and scores: validate (with validate's settings), bring its real
    Gym servers up, and drive rows through every agent against a scripted policy (no model).

    Exit 0 when all servers were ready and every rollout returned a numeric reward.
    """
    from envkit.smoke import SmokeRequest
    from envkit.validate.settings import Settings

    flags = Settings(arch=arch, python=python_version, glibc=glibc, gym_version=gym_version,
                     offline=offline, dataset=dataset)
    return run_smoke_request(SmokeRequest(package=package, flags=flags, isolated=isolated,
                                          **runtime))


def run_smoke_request(request: SmokeRequest) -> SmokeOutcome:
    """Run with SIGTERM as Ctrl-C (servers torn down)."""
    from envkit.smoke import SmokeOutcome, run_smoke

    with sigterm_as_interrupt():
        report = run_smoke(request)
    return SmokeOutcome(report, request.package)
