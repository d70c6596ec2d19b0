"""GRPO on Ray: Gym bring-up + generation in one actor, the training loop in another.

Why this split: on a cluster the generation engine (vLLM) and the Gym servers live on the
rollout node(s) and the optimizer on the training GPU(s), as in NeMo-RL. Actors ask for
``num_cpus=0``: the machines here have 2 cores, and a PACK placement group over them can hang,
so nothing reserves CPUs. ``ray.init`` starts a local Ray unless ``--ray-address`` attaches to
a running cluster. Weights travel trainer -> rollout actor through Ray's object store after
every optimizer step (merged for LoRA). See docs/training.md for a multi-node layout.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from envkit.trainer.config import GrpoConfig
    from envkit.trainer.grpo import TrainResult
    from envkit.trainer.policy import Policy
    from envkit.trainer.rollout_source import Rollout
    from envkit.trainer.run import TrainRequest

__all__ = ["RaySourceProxy", "init_ray", "train_on_ray", "train_with_actors"]

_RAY_ENV = ("RAY_ADDRESS", "RAY_NAMESPACE", "RAY_JOB_ID")


def init_ray(address: str | None) -> None:
    """Attach to ``address`` or start a local 2-CPU Ray without the dashboard."""
    import ray

    if ray.is_initialized():
        return
    if address:
        ray.init(address=address, include_dashboard=False, log_to_driver=True)
    else:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=True)


class _RolloutWorker:
    """Owns a RolloutSource (built by ``factory``) inside its actor process."""

    def __init__(self, factory: Callable[[], Any]) -> None:
        for key in _RAY_ENV:  # Gym starts its own Ray: keep it off this cluster
            os.environ.pop(key, None)
        self._ctx = factory()
        self._source = self._ctx.__enter__() if hasattr(self._ctx, "__enter__") else self._ctx

    def rollouts(self, rows: list[dict[str, Any]], n: int, first_group: int) -> list[Rollout]:
        return self._source.rollouts(rows, n, first_group=first_group)

    def load_weights(self, state: dict[str, Any]) -> None:
        self._source.load_weights(state)

    def restart(self) -> None:
        getattr(self._source, "restart", lambda: None)()

    def close(self) -> None:
        if hasattr(self._ctx, "__exit__"):
            self._ctx.__exit__(None, None, None)


class RaySourceProxy:
    """A RolloutSource in the trainer that forwards to the rollout actor."""

    def __init__(self, actor: Any) -> None:
        self._actor = actor

    def rollouts(
        self, rows: Sequence[dict[str, Any]], num_generations: int, *, first_group: int = 0
    ) -> list[Rollout]:
        import ray

        from envkit.trainer.grpo import RolloutFailedError

        try:
            return ray.get(self._actor.rollouts.remote(list(rows), num_generations, first_group))
        except ray.exceptions.RayTaskError as exc:
            if isinstance(exc.cause, RolloutFailedError):
                raise exc.cause from None
            raise

    def refresh(self, policy: Policy) -> None:
        import ray

        from envkit.trainer.policy import generation_weights

        ray.get(self._actor.load_weights.remote(generation_weights(policy)))

    def restart(self) -> None:
        import ray

        ray.get(self._actor.restart.remote())


class _TrainerWorker:
    """Loads the policy and runs the GRPO loop against the rollout actor."""

    def run(
        self,
        cfg: GrpoConfig,
        model_dir: Path,
        rollout_actor: Any,
        rows: list,
        val_rows: list,
        opts: Any,
    ) -> TrainResult:
        from envkit.trainer.grpo import train
        from envkit.trainer.policy import load_policy

        policy = load_policy(model_dir, cfg)
        source = RaySourceProxy(rollout_actor)
        source.refresh(policy)
        return train(cfg, policy, source, rows, opts, val_rows=val_rows)


def train_with_actors(
    cfg: GrpoConfig,
    model_dir: Path,
    source_factory: Callable[[], Any],
    rows: list[dict[str, Any]],
    val_rows: list[dict[str, Any]],
    opts: Any,
    address: str | None = None,
) -> TrainResult:
    """Start both actors (``num_cpus=0``), run to the end, always stop the rollout actor."""
    import ray

    init_ray(address)
    rollout = ray.remote(num_cpus=0)(_RolloutWorker).remote(source_factory)
    trainer = ray.remote(num_cpus=0)(_TrainerWorker).remote()
    try:
        return ray.get(trainer.run.remote(cfg, model_dir, rollout, rows, val_rows, opts))
    finally:
        ray.get(rollout.close.remote())
        ray.kill(trainer)
        ray.kill(rollout)


def train_on_ray(
    cfg: GrpoConfig, request: TrainRequest, inputs: dict[str, Path], rows: list, val_rows: list
) -> TrainResult:
    from functools import partial

    from envkit.trainer.grpo import TrainOptions
    from envkit.trainer.gym_source import GymRolloutSource, gym_source_options

    source_opts = gym_source_options(cfg, request.backend, request.runtime)
    factory = partial(GymRolloutSource, inputs["environment"], inputs["model"], source_opts)
    opts = TrainOptions(request.output, resume=request.resume, save_period=request.save_period)
    return train_with_actors(
        cfg, inputs["model"], factory, rows, val_rows, opts, address=request.ray_address
    )
