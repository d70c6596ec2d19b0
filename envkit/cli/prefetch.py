"""``envkit prefetch``: build a package's venvs ahead of its first bring-up, start nothing.

Exit 0 when the venvs are there (built now, or already), 1 when an install failed, 2 on usage
errors (no CPython 3.13 for Gym, a bad configuration).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from envkit.cli._common import (
    allow_python_override_option,
    common_options,
    gym_python_option,
    sigterm_as_interrupt,
)
from envkit.model.gym_data import DEFAULT_GYM_VERSION

if TYPE_CHECKING:
    from envkit.gym import PrefetchResult

__all__ = ["prefetch_command"]

_DIR = click.Path(exists=True, file_okay=False, path_type=Path)


@click.command("prefetch")
@click.argument("package", type=_DIR)
@click.option("--gym-version", default=None,
              help=f"nemo-gym version the servers run on (default: the configuration's, else "
                   f"{DEFAULT_GYM_VERSION}).")
@click.option("--offline/--no-offline", default=None,
              help="Index-free installs from wheels/ (what `--offline` runs reuse; default: "
                   "the configuration's, else online).")
@click.option("--isolated", is_flag=True, help="Ignore envkit.toml and [tool.envkit].")
@click.option("--timeout", "install_timeout_s", default=1800.0, show_default=True,
              type=click.FloatRange(min=1), help="Seconds for all the installs.")
@gym_python_option
@allow_python_override_option
@common_options()
def prefetch_command(package: Path, **opts: Any) -> PrefetchResult:
    """Build PACKAGE's venvs -- Gym's and every server's, from the package's wheels -- as its
    first bring-up would, and start nothing. smoke, probe, rollout and train then reuse them;
    a second prefetch of the unchanged package does nothing and says so.
    """
    from envkit.gym import prefetch, prefetch_options

    with sigterm_as_interrupt():
        return prefetch(package, prefetch_options(package, **opts))
