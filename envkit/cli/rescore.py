"""``envkit rescore``: the rollouts a ``rollout`` or ``train`` run recorded, scored again by
the package's current verifier, without a policy.

Exit 0 when every row was scored again (whether or not rewards changed), 1 when a row was
refused (its server keeps per-episode state a bare ``/verify`` cannot restore) or failed, or
the servers did not start, 2 on usage errors (no run record in RUN_DIR, its package gone).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from envkit.cli._common import (
    allow_python_override_option,
    common_options,
    gym_python_option,
    output_path_option,
    sigterm_as_interrupt,
)

if TYPE_CHECKING:
    from envkit.rescore import RescoreReport

__all__ = ["rescore_command"]

_DIR = click.Path(exists=True, file_okay=False, path_type=Path)


@click.command("rescore")
@click.argument("run_dir", type=_DIR)
@click.option("--offline/--no-offline", default=None,
              help="Index-free venv installs (default: as the run was brought up).")
@click.option("--concurrency", default=8, show_default=True, type=click.IntRange(min=1),
              help="Rows verified at once.")
@click.option("--timeout", "timeout_s", default=300.0, show_default=True,
              type=click.FloatRange(min=1), help="Seconds per /verify call.")
@gym_python_option
@allow_python_override_option
@output_path_option(type=click.Path(dir_okay=False, path_type=Path),
                    help="Write the rows re-scored (JSONL: `reward` the new one, "
                         "`previous_reward` the run's) here.")
@common_options()
def rescore_command(**opts: Any) -> RescoreReport:
    """Score the rollouts RUN_DIR recorded (`envkit rollout -o`, `envkit train -o`) again with
    the package's current verifier: its resources servers come up, each recorded response goes
    to /verify, and the old and new rewards are compared. No policy runs.
    """
    from envkit.rescore import RescoreRequest, rescore

    with sigterm_as_interrupt():
        return rescore(RescoreRequest(**opts))
