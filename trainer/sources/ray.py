"""The rollout source split over Ray: the actor that owns a source, the proxy the trainer holds.

The actor (:class:`RolloutWorker`) builds its source in :meth:`RolloutWorker.start` (Gym
servers, policy endpoint); it runs with two threads so :meth:`RolloutWorker.close` never
queues behind a call still running -- a Ctrl-C while Gym is coming up must still tear it
down, and a source closed mid-start refuses to start anything more.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, cast

from envkit.trainer.generation.refit import RefitError
from envkit.trainer.sources.base import RolloutFailedError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from envkit.gym import Rollout
    from envkit.trainer.generation.refit import ProbeCheck
    from envkit.trainer.policy import Policy
    from envkit.trainer.sources.base import RolloutSource

__all__ = ["RaySourceProxy", "RolloutWorker", "where"]

_RAY_ENV = ("RAY_ADDRESS", "RAY_NAMESPACE", "RAY_JOB_ID")


def where(ctx: Any) -> dict[str, Any]:
    """Where an actor runs: node, job, and the GPUs Ray gave it."""
    return {
        "node_id": ctx.get_node_id(),
        "job_id": ctx.get_job_id(),
        "gpu_ids": [str(g) for g in ctx.get_accelerator_ids().get("GPU", [])],
        "pid": os.getpid(),
    }


class RolloutWorker:
    """Owns a rollout source (built by ``factory`` in :meth:`start`) inside its actor process."""

    def __init__(self, factory: Callable[[], RolloutSource]) -> None:
        for key in _RAY_ENV:  # Gym starts its own Ray: keep it off this cluster
            os.environ.pop(key, None)
        self._factory = factory
        self._source: RolloutSource | None = None
        self._lock = threading.Lock()
        self._closed = False

    def start(self) -> dict[str, Any]:
        """Bring the source up (Gym servers, policy endpoint); a failure raises to the driver."""
        import ray

        source = self._factory()
        with self._lock:
            if self._closed:
                msg = "the rollout actor was closed while it was starting"
                raise RolloutFailedError(msg)
            self._source = source
        source.start()
        return where(ray.get_runtime_context())

    def _live(self) -> RolloutSource:
        if self._source is None:
            msg = "the rollout actor is not started"
            raise RolloutFailedError(msg)
        return self._source

    def rollouts(
        self, rows: list[dict[str, Any]], n: int, first_group: int, seed: int | None = None
    ) -> list[Rollout]:
        return self._live().rollouts(rows, n, first_group=first_group, seed=seed)

    def load_weights(self, state: dict[str, Any], check: ProbeCheck | None = None
                     ) -> dict[str, float]:
        return self._live().load_weights(state, check)

    def sleep(self) -> None:
        self._live().sleep()

    def probes(self) -> bool:
        """Whether the engine here scores prompts (a probe check is worth computing)."""
        from envkit.trainer.generation.refit import scores_prompts

        return scores_prompts(getattr(self._live(), "engine", None))

    def restart(self) -> None:
        self._live().restart()

    def close(self) -> None:
        """Tear the source down, also while :meth:`start` is still bringing it up."""
        with self._lock:
            self._closed = True
            source, self._source = self._source, None
        if source is not None:
            source.close()


def _get(remote: Any, passes: type[Exception] | tuple[()] = ()) -> Any:
    """``ray.get``, raising the actor's own ``passes`` error as itself (the loop handles it)."""
    import ray

    try:
        return ray.get(remote)
    except ray.exceptions.RayTaskError as exc:
        if isinstance(exc.cause, passes):
            raise exc.cause from None
        raise


class RaySourceProxy:
    """A RolloutSource in the trainer that forwards to the rollout actor."""

    def __init__(self, actor: Any) -> None:
        self._actor = actor
        self._probes: bool | None = None

    def rollouts(
        self, rows: Sequence[dict[str, Any]], num_generations: int, *, first_group: int = 0,
        seed: int | None = None,
    ) -> list[Rollout]:
        remote = self._actor.rollouts.remote(list(rows), num_generations, first_group, seed)
        return cast("list[Rollout]", _get(remote, RolloutFailedError))

    def refresh(self, policy: Policy) -> dict[str, float]:
        from envkit.trainer.generation.refit import probe_expectation
        from envkit.trainer.policy import generation_weights

        if self._probes is None:
            self._probes = bool(_get(self._actor.probes.remote()))
        check = probe_expectation(policy) if self._probes else None
        return self.load_weights(generation_weights(policy), check)

    def load_weights(self, state: dict[str, Any], check: ProbeCheck | None = None
                     ) -> dict[str, float]:
        return dict(_get(self._actor.load_weights.remote(state, check), RefitError))

    def sleep(self) -> None:
        _get(self._actor.sleep.remote())

    def restart(self) -> None:
        _get(self._actor.restart.remote())
