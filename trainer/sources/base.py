"""The narrow interface the GRPO loop generates through: :class:`RolloutSource`.

Why an interface: the loop in ``grpo.py`` must not care whether a reward came from a Python
function (fast tests), from the package's Gym servers through the agent (real runs), or from
an actor on another node (Ray).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from envkit.errors import FailedError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from envkit.gym import Rollout
    from envkit.trainer.generation.refit import ProbeCheck
    from envkit.trainer.policy import Policy

__all__ = ["GenerationSource", "RolloutFailedError", "RolloutSource"]


class RolloutFailedError(FailedError, RuntimeError):
    """A rollout source failed in a way it can recover from (e.g. a Gym server died)."""


class GenerationSource(Protocol):
    """What the GRPO loop calls: generate, follow the weights, recover. A driver-side proxy of
    a source living in a Ray actor is one too; bringing the source up and down is its owner's
    (:class:`RolloutSource`)."""

    def rollouts(
        self, rows: Sequence[dict[str, Any]], num_generations: int, *, first_group: int = 0,
        seed: int | None = None,
    ) -> list[Rollout]:
        """``num_generations`` scored samples per row, grouped by ``first_group + row index``.

        With ``seed`` each sample draws from its own generator, seeded with
        ``seeds.sample_seed(seed, group, index)``, whatever order the requests are served in.

        :raises RolloutFailedError: a recoverable failure; the loop calls :meth:`restart`.
        """

    def refresh(self, policy: Policy) -> dict[str, float]:
        """Make generation use the policy's current weights (after every optimizer step);
        returns the refit's metrics, empty where generation runs on the policy module itself.

        :raises RefitError: the engine could not take the weights, or then scores the probe
            unlike the trainer (the step must stop).
        """

    def load_weights(self, state: dict[str, Any], check: ProbeCheck | None = None
                     ) -> dict[str, float]:
        """New generation weights from another process (a plain model's state dict), then,
        where the engine can score a prompt, the probe ``check`` (the trainer's logprobs)."""

    def sleep(self) -> None:
        """Free the generation engine's device memory while the trainer trains (colocated);
        the next :meth:`refresh` wakes it. A no-op where nothing can sleep."""

    def restart(self) -> None:
        """Recover after a :class:`RolloutFailedError` (a no-op where nothing can break)."""


class RolloutSource(GenerationSource, Protocol):
    """A source its owner brings up and down (the loop's caller, or the Ray actor)."""

    def start(self) -> None:
        """Bring up what generation needs (servers, endpoint); the Ray actor calls it."""

    def close(self) -> None:
        """Stop everything :meth:`start` brought up; safe from another thread mid-start."""
