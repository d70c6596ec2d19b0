"""The one sample type from Gym's ``/run`` answer to the GRPO loss: :class:`Rollout`.

The client fills what Gym answered; the trainer's Gym source fills ``group`` and the masked
multi-turn token layout with :func:`dataclasses.replace` on the same object.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Rollout", "TokenTurn"]


@dataclass(frozen=True, slots=True)
class TokenTurn:
    """One policy call inside a rollout."""

    prompt_token_ids: tuple[int, ...]
    generation_token_ids: tuple[int, ...]
    generation_logprobs: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class Rollout:
    """One sampled response. ``group`` ties the samples of one prompt together.

    The first seven fields are what the loss needs; the rest say where the sample came from.
    A failed row has ``failure_reason`` set, ``reward`` None and no tokens.
    """

    group: int
    prompt_ids: tuple[int, ...]
    completion_ids: tuple[int, ...]
    generation_logprobs: tuple[float, ...]
    reward: float | None
    truncated: bool
    #: Multi-turn: 1 on tokens the policy generated, 0 on tokens the environment inserted
    #: between turns (tool results, user replies). ``None`` means all generated.
    completion_mask: tuple[int, ...] | None = None
    index: int = 0
    """Position of the row in the batch sent to Gym."""
    agent: str = ""
    failure_reason: str | None = None
    turns: tuple[TokenTurn, ...] = ()
    """The policy calls as Gym reported them (the trainer rebuilds the masked layout)."""
    record: dict[str, Any] = field(default_factory=dict)
    """Gym's full rollout row (the row, ``response``, ``reward``)."""

    @property
    def ok(self) -> bool:
        return self.failure_reason is None

    @classmethod
    def failed(cls, index: int, agent: str, reason: str, record: dict[str, Any]) -> Rollout:
        """A row that produced no sample (a server died, a timeout, no numeric reward)."""
        return cls(0, (), (), (), None, False, index=index, agent=agent,
                   failure_reason=reason, record=record)

    @classmethod
    def from_turns(cls, index: int, agent: str, reward: float, turns: tuple[TokenTurn, ...],
                   truncated: bool, record: dict[str, Any]) -> Rollout:
        """A finished row: the first call's prompt and every call's generation, concatenated."""
        return cls(
            0,
            turns[0].prompt_token_ids if turns else (),
            tuple(t for turn in turns for t in turn.generation_token_ids),
            tuple(lp for turn in turns for lp in turn.generation_logprobs),
            reward, truncated, index=index, agent=agent, turns=turns, record=record,
        )
