"""``envkit train`` as one call: read and validate the inputs once, bring Gym up, run GRPO.

Why here and not in the CLI: the command only parses and renders (STYLE "a thin click layer");
tests call :func:`run_training` directly. What the run reads, and how it is validated, is
``trainer/inputs.py``; this module decides where the run happens (in this process, or as Ray
actors through ``trainer/ray_run.py``).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from envkit.gym import ROLLOUTS_FILE, RunFile, write_run_file
from envkit.supply.provenance import run_record, write_provenance
from envkit.trainer.inputs import TrainInputError, TrainInputs, TrainRequest, read_inputs

if TYPE_CHECKING:
    from collections.abc import Callable

    from envkit.trainer.grpo import TrainOptions, TrainResult
    from envkit.trainer.sources.gym import GymRolloutSource

__all__ = ["TrainInputError", "TrainRequest", "run_training"]


def run_training(request: TrainRequest) -> TrainResult:
    """Validate, then train through the package's Gym servers; returns the run's result.

    :raises TrainInputError: inputs missing, unreadable, or invalid (with diagnostics).
    """
    _refuse_previous_run(request)
    inputs = read_inputs(request)
    paths = inputs.paths
    provenance = run_record(paths.environment, paths.dataset, request.job)
    write_provenance(request.output, provenance)
    write_run_file(request.output, RunFile(
        "train", str(paths.environment.resolve()), provenance.package_sha256,
        ROLLOUTS_FILE, request.runtime.gym_version, request.runtime.offline))
    from envkit.trainer.grpo import TrainOptions  # torch loads once the inputs are valid
    from envkit.trainer.sources.gym import GymRolloutSource, gym_source_options

    source_opts = gym_source_options(inputs.config, request.backend, request.runtime,
                                     record_to=request.output / ROLLOUTS_FILE)
    source = partial(GymRolloutSource, paths.environment, paths.model, source_opts)
    opts = TrainOptions(request.output, resume=request.resume, save_period=request.save_period)
    if request.use_ray or request.ray_address:
        from envkit.trainer.ray_run import train_with_actors

        labels = (request.ray_rollout_resource, request.ray_trainer_resource)
        return train_with_actors(inputs.config, paths.model, source, inputs.train_rows,
                                 inputs.val_rows, opts, address=request.ray_address,
                                 backend=request.backend, labels=labels)
    return _train_local(inputs, source, opts)


def _refuse_previous_run(request: TrainRequest) -> None:
    """A fresh run never writes over another run's metrics and checkpoints.

    Why: mixing them would give a curve with the old run's step 0 and a ``--resume`` that
    continues the wrong run's checkpoint. Only ``--resume`` may reuse the directory.
    """
    if request.resume:
        return
    out = request.output
    if (out / "metrics.jsonl").is_file() or any((out / "checkpoints").glob("step_*")):
        msg = (
            f"{out} holds a previous run (metrics.jsonl / checkpoints/): pass --resume to "
            "continue it, or choose another -o (or delete it) to start over"
        )
        raise TrainInputError(msg)


def _train_local(inputs: TrainInputs, source: Callable[[], GymRolloutSource],
                 opts: TrainOptions) -> TrainResult:
    """Train in this process; a model that does not load is an input error."""
    from envkit.trainer.grpo import train
    from envkit.trainer.policy import load_policy

    model_dir = inputs.paths.model
    try:
        policy = load_policy(model_dir, inputs.config)
    except (OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        msg = f"cannot load a causal LM and tokenizer from {model_dir}: {first}"
        raise TrainInputError(msg) from None
    with source() as gym:
        gym.refresh(policy)
        return train(inputs.config, policy, gym, inputs.train_rows, opts, val_rows=inputs.val_rows)
