"""``envkit train``: GRPO on a job JSON against a package's real Gym servers.

Parse -> ``envkit.trainer.run.run_training`` -> render. Final metrics go to stdout (JSON with
``--format json``); the per-step progress line and logs go to stderr. Exit 0 when training
finished, 1 when the inputs fail validation or a run cannot start, 2 on usage errors.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.logging import RichHandler

from envkit.cli._common import sigterm_as_interrupt

__all__ = ["train_command"]

_DIR = click.Path(exists=True, file_okay=False, path_type=Path)


def _install_logging() -> None:
    handler = RichHandler(console=Console(stderr=True), show_path=False, markup=False)
    logging.basicConfig(level=logging.INFO, handlers=[handler], format="%(message)s", force=True)


@click.command("train")
@click.argument("job", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--env", type=_DIR, help="Environment package dir (stands in for `environment`).")
@click.option("--dataset", type=_DIR, help="Dataset dir with training.jsonl (for `dataset`).")
@click.option("--model", type=_DIR, help="HF model dir, the initial policy (for `model`).")
@click.option(
    "-o",
    "--output",
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
@click.option(
    "--backend",
    default="hf",
    show_default=True,
    type=click.Choice(["hf", "vllm"]),
    help="Generation engine: hf (CPU) or vllm (GPU).",
)
@click.option("--gym-version", default="0.7.0", show_default=True)
@click.option(
    "--allow-python-override",
    is_flag=True,
    help="Install nemo-gym on a 3.13 older than its Requires-Python floor.",
)
@click.option("--offline", is_flag=True, help="No index for any install: wheels/ must cover all.")
@click.option(
    "--print-config",
    is_flag=True,
    help="Print the NeMo-RL config the job compiles to, and what cannot apply here; no training.",
)
@click.option(
    "--format",
    "output_format",
    default="human",
    show_default=True,
    type=click.Choice(["human", "json"]),
)
def train_command(
    job: Path,
    env: Path | None,
    dataset: Path | None,
    model: Path | None,
    output: Path,
    resume: bool,
    use_ray: bool,
    ray_address: str | None,
    ray_rollout_resource: str | None,
    ray_trainer_resource: str | None,
    save_period: int,
    backend: str,
    gym_version: str,
    allow_python_override: bool,
    offline: bool,
    print_config: bool,
    output_format: str,
) -> int:
    """Train a policy with GRPO as the job JSON describes (seed 000 "Fast path — rl (GRPO)")."""
    if print_config:
        from envkit.trainer.nemo_config import PrintConfigError, report_for_job

        try:
            sys.stdout.write(json.dumps(report_for_job(job, dataset), indent=2) + "\n")
        except PrintConfigError as exc:
            click.echo(f"envkit train: {exc}", err=True)
            return 1
        return 0
    from envkit.trainer.gym_runtime import GymRuntimeError, RuntimeOptions
    from envkit.trainer.run import TrainInputError, TrainRequest, run_training

    _install_logging()
    request = TrainRequest(
        job=job,
        output=output,
        env=env,
        dataset=dataset,
        model=model,
        resume=resume,
        ray_address=ray_address,
        use_ray=use_ray or bool(ray_rollout_resource or ray_trainer_resource),
        ray_rollout_resource=ray_rollout_resource,
        ray_trainer_resource=ray_trainer_resource,
        save_period=save_period,
        backend=backend,
        runtime=RuntimeOptions(
            gym_version=gym_version, allow_python_override=allow_python_override, offline=offline
        ),
    )
    try:
        with sigterm_as_interrupt():
            result = run_training(request)
    except TrainInputError as exc:
        click.echo(f"envkit train: {exc}", err=True)
        for d in exc.diagnostics:
            where = f"{d.path}:{d.line}" if d.line else d.path
            click.echo(f"{where}: {d.code} {d.message} (fix: {d.hint})", err=True)
        return 1
    except GymRuntimeError as exc:
        code = f" ({exc.code})" if exc.code else ""
        click.echo(f"envkit train: Gym servers failed{code}: {exc}", err=True)
        return 1
    summary = {
        "version": "1.0",
        "steps": result.steps,
        "final_dir": str(result.final_dir),
        "metrics": str(result.metrics_path),
        "final_metrics": result.final_metrics,
    }
    if output_format == "json":
        sys.stdout.write(json.dumps(summary) + "\n")
    else:
        reward = result.final_metrics.get("train_reward")
        click.echo(
            f"trained {result.steps} steps; train_reward={reward}; model: {result.final_dir}"
        )
    return 0
