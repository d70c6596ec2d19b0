"""GRPO on Ray: Gym bring-up + generation in one actor, the training loop in another.

Why this split: on a cluster the generation engine (vLLM) and the Gym servers live on the
rollout node(s) and the optimizer on the training GPU(s), as in NeMo-RL. Actors ask for
``num_cpus=0`` (a PACK placement group over a small machine's cores can hang); GPUs and
resource labels come from ``placement.plan_placement``, decided before any actor starts. The
driver disconnects at the end: a local Ray stops with it, an attached one (``--ray-address``)
keeps running. Weights travel trainer -> rollout actor through Ray's object store after every
optimizer step (merged for LoRA). See docs/training.md for a multi-node layout.
"""

from __future__ import annotations

import logging
import socket
from typing import TYPE_CHECKING, Any, cast

from envkit.trainer.inputs import TrainInputError
from envkit.trainer.sources.ray import RaySourceProxy, RolloutWorker, where

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from envkit.trainer.config import GrpoConfig
    from envkit.trainer.grpo import TrainOptions, TrainResult
    from envkit.trainer.placement import ActorPlacement
    from envkit.trainer.sources.base import RolloutSource

__all__ = ["RayStartError", "init_ray", "plan_for_nodes", "train_with_actors"]

log = logging.getLogger(__name__)

_CLOSE_TIMEOUT_S = 120.0


class RayStartError(TrainInputError):
    """Ray could not be started or the cluster at ``--ray-address`` cannot be reached."""


def _check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """Fail in seconds, with the fix, when nothing listens at ``host:port``.

    Why: ``ray.init`` on a dead address retries for a long time and then raises a traceback
    that does not say which option was wrong.
    """
    if address == "auto" or "://" in address or ":" not in address:
        return
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            return
    except (OSError, ValueError) as exc:
        msg = (
            f"--ray-address {address}: no Ray cluster reachable there ({exc}); start one with "
            "`ray start --head --port PORT` or pass the head node's GCS address (HOST:PORT)"
        )
        raise RayStartError(msg) from None


def init_ray(address: str | None) -> bool:
    """Attach to ``address`` or start a local 2-CPU Ray without the dashboard.

    :returns: True when this call connected (the caller then calls ``ray.shutdown``).
    :raises RayStartError: the address is unreachable or Ray refused to start.
    """
    import ray

    if ray.is_initialized():
        return False
    if address:
        _check_reachable(address)
    target = {"address": address} if address else {"num_cpus": 2}
    try:
        ray.init(**target, include_dashboard=False, log_to_driver=True)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = f"attach to the Ray cluster at {address}" if address else "start a local Ray"
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        msg = f"cannot {where}: {first}"
        if address:
            msg += (
                "; a cluster with token authentication also needs RAY_AUTH_MODE=token here and "
                "its token (RAY_AUTH_TOKEN or ~/.ray/auth_token)"
            )
        raise RayStartError(msg) from None
    return True


class _TrainerWorker:
    """Loads the policy and runs the GRPO loop against the rollout actor."""

    def where(self) -> dict[str, Any]:
        import ray

        return where(ray.get_runtime_context())

    def run(
        self,
        cfg: GrpoConfig,
        model_dir: Path,
        rollout_actor: Any,
        rows: list[dict[str, Any]],
        val_rows: list[dict[str, Any]],
        opts: TrainOptions,
    ) -> TrainResult:
        from envkit.trainer.grpo import train
        from envkit.trainer.policy import load_policy

        policy = load_policy(model_dir, cfg)
        source = RaySourceProxy(rollout_actor)
        source.refresh(policy)
        return train(cfg, policy, source, rows, opts, val_rows=val_rows)


def _unwrap(exc: BaseException) -> BaseException:
    """The actor's own exception for the errors envkit reports cleanly (no remote traceback)."""
    from envkit.gym import GymRuntimeError
    from envkit.trainer.sources.base import RolloutFailedError

    cause = getattr(exc, "cause", None)
    clean = (TrainInputError, GymRuntimeError, RolloutFailedError, OSError)
    return cause if isinstance(cause, clean) else exc


def plan_for_nodes(
    nodes: Sequence[dict[str, Any]],
    cfg: GrpoConfig,
    backend: str,
    *,
    attached: bool = False,
    labels: tuple[str | None, str | None] = (None, None),
) -> ActorPlacement:
    """The actors' options for ``ray.nodes()``; logs the plan's warnings.

    :param labels: the custom Ray resources that pin the rollout and the trainer actor
        (``--ray-rollout-resource``, ``--ray-trainer-resource``).
    :raises TrainInputError: the cluster cannot hold the actors (``PlacementError``'s message).
    """
    from envkit.trainer.placement import PlacementError, alive_node_resources, plan_placement

    rollout_label, trainer_label = labels
    try:
        plan = plan_placement(alive_node_resources(nodes), cfg, backend, attached=attached,
                              rollout_label=rollout_label, trainer_label=trainer_label)
    except PlacementError as exc:
        raise TrainInputError(str(exc)) from None
    for warning in plan.warnings:
        log.warning("%s", warning)
    log.info("Ray actors: rollout %s, trainer %s", plan.rollout, plan.trainer)
    return plan


def _stop(rollout: Any, trainer: Any) -> None:
    """Close the rollout source (Gym servers and their Ray) and kill both actors."""
    import ray

    try:
        ray.get(rollout.close.remote(), timeout=_CLOSE_TIMEOUT_S)
    except Exception as exc:  # the actor may be dead already; kill it anyway
        log.warning("closing the rollout actor failed: %s", exc)
    for actor in (trainer, rollout):
        ray.kill(actor)


def train_with_actors(
    cfg: GrpoConfig,
    model_dir: Path,
    source_factory: Callable[[], RolloutSource],
    rows: list[dict[str, Any]],
    val_rows: list[dict[str, Any]],
    opts: TrainOptions,
    address: str | None = None,
    *,
    backend: str = "hf",
    labels: tuple[str | None, str | None] = (None, None),
    on_start: Callable[[dict[str, Any]], None] | None = None,
) -> TrainResult:
    """Place and start both actors, run to the end, always stop them and disconnect.

    ``on_start`` receives where each actor runs (``{"rollout": {...}, "trainer": {...}}``).

    :raises TrainInputError: Ray cannot start/attach, or the cluster cannot hold the actors.
    """
    import ray

    connected = init_ray(address)
    try:
        plan = plan_for_nodes(ray.nodes(), cfg, backend, attached=bool(address), labels=labels)
        # 2 threads: close() must not queue behind a rollout call still running (Ctrl-C, or a
        # trainer that died mid-step), or the Gym servers would outlive a killed actor
        rollout_cls = ray.remote(**plan.rollout, max_concurrency=2)(RolloutWorker)
        rollout = rollout_cls.remote(source_factory)
        trainer = ray.remote(**plan.trainer)(_TrainerWorker).remote()
        try:
            where = {"rollout": ray.get(rollout.start.remote())}
            where["trainer"] = ray.get(trainer.where.remote())
            if on_start is not None:
                on_start(where)
            remote = trainer.run.remote(cfg, model_dir, rollout, rows, val_rows, opts)
            return cast("TrainResult", ray.get(remote))
        except ray.exceptions.RayTaskError as exc:
            raise _unwrap(exc) from None
        finally:
            _stop(rollout, trainer)
    finally:
        if connected:
            ray.shutdown()  # a local Ray stops; an attached cluster keeps running

