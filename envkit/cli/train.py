"""``envkit train``: GRPO on a job JSON against a package's real Gym servers.

Exit 0 when training finished, 1 when the inputs fail validation or a run cannot start, 2 on
usage errors (``--print-config`` with no local dataset among them) or without the ``train``
extra.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from envkit.cli._common import (
    allow_python_override_option,
    backend_option,
    common_options,
    output_path_option,
    sigterm_as_interrupt,
)
from envkit.cli._extras import precheck, require_backend
from envkit.model.gym_data import DEFAULT_GYM_VERSION
from envkit.output.results import CompiledConfig, TrainOutcome

__all__ = ["train_command"]

_DIR = click.Path(exists=True, file_okay=False, path_type=Path)


@click.command("train")
@click.argument("job", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--env", type=_DIR, help="Environment package dir (stands in for `environment`).")
@click.option("--dataset", type=_DIR, help="Dataset dir with training.jsonl (for `dataset`).")
@click.option("--model", type=_DIR, help="HF model dir, the initial policy (for `model`).")
@output_path_option(
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("envkit-train"),
    show_default=True,
    help="Run dir: metrics.jsonl, tensorboard/, checkpoints/, final/.",
)
@click.option("--resume", is_flag=True, help="Continue from the last checkpoint in --output.")
@click.option("--ray", "use_ray", is_flag=True, help="Run generation/training as Ray actors.")
@click.option("--ray-address", help="Attach to a running Ray cluster (implies --ray).")
@click.option(
    "--ray-rollout-resource",
    metavar="NAME",
    help="Pin the rollout actor to nodes started with this custom Ray resource (implies --ray).",
)
@click.option(
    "--ray-trainer-resource",
    metavar="NAME",
    help="Pin the trainer actor to nodes started with this custom Ray resource (implies --ray).",
)
@click.option(
    "--save-period",
    default=10,
    show_default=True,
    type=click.IntRange(min=1),
    help="Checkpoint every N steps (and at the end).",
)
@backend_option()
@click.option("--gym-version", default=DEFAULT_GYM_VERSION, show_default=True,
              help="nemo-gym version the package's servers run on.")
@allow_python_override_option
@click.option("--offline", is_flag=True, help="No index for any install: wheels/ must cover all.")
@click.option(
    "--print-config",
    is_flag=True,
    help="Print the NeMo-RL config the job compiles to, and what cannot apply here; no training.",
)
@common_options()
def train_command(job: Path, env: Path | None, dataset: Path | None, use_ray: bool,
                  backend: str, print_config: bool, gym_version: str,
                  allow_python_override: bool, offline: bool,
                  **opts: Any) -> TrainOutcome | CompiledConfig:
    """Train a policy with GRPO as the platform's `rl` job JSON describes (the "Fast path —
    rl (GRPO)" of the platform's customization guide)."""
    if print_config:  # no Gym, no model: the job (and dataset) alone
        precheck("train", "train", dataset=dataset, job=job)
        from envkit.trainer.nemo_config import NoLocalDatasetError, report_for_job

        try:
            return CompiledConfig(report_for_job(job, dataset))
        except NoLocalDatasetError as exc:  # a missing option: usage (exit 2), not a verdict
            raise click.UsageError(str(exc)) from None
    precheck("train", "train", package=env, dataset=dataset, job=job)
    require_backend("train", backend)
    from envkit.gym import RuntimeOptions
    from envkit.trainer.run import TrainRequest, run_training

    pinned = opts["ray_rollout_resource"] or opts["ray_trainer_resource"]
    request = TrainRequest(
        job=job, env=env, dataset=dataset, use_ray=use_ray or bool(pinned), backend=backend,
        runtime=RuntimeOptions(gym_version=gym_version, offline=offline,
                               allow_python_override=allow_python_override), **opts)
    with sigterm_as_interrupt():
        return TrainOutcome(run_training(request))
