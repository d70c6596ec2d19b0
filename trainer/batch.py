"""Rollouts -> padded training tensors, aligned to next-token logprob positions.

Why one layout: ``token_logprobs`` returns (b, L - 1) where column t scores token t + 1, so
the response mask and the sampler's logprobs are written into the same columns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from collections.abc import Sequence

    from envkit.trainer.rollout_source import Rollout

__all__ = ["TrainBatch", "to_batch"]


@dataclass(frozen=True)
class TrainBatch:
    input_ids: torch.Tensor  # (b, L) right-padded prompt + completion
    attention_mask: torch.Tensor  # (b, L)
    response_mask: torch.Tensor  # (b, L-1) 1 where column t scores a completion token
    generation_logprobs: torch.Tensor  # (b, L-1) sampler logprobs on response columns
    rewards: torch.Tensor  # (b,)
    groups: torch.Tensor  # (b,)
    truncated: torch.Tensor  # (b,) bool

    def rows(self, index: slice) -> TrainBatch:
        """A micro-batch view."""
        return TrainBatch(*(getattr(self, f)[index] for f in self.__dataclass_fields__))

    def to(self, device: torch.device) -> TrainBatch:
        """The batch on the policy's device (CUDA when training on GPU)."""
        return TrainBatch(*(getattr(self, f).to(device) for f in self.__dataclass_fields__))


def to_batch(rollouts: Sequence[Rollout], pad_id: int) -> TrainBatch:
    """Pack rollouts; completion token j of a sample sits at column len(prompt) - 1 + j."""
    length = max(len(r.prompt_ids) + len(r.completion_ids) for r in rollouts)
    b = len(rollouts)
    ids = torch.full((b, length), pad_id, dtype=torch.long)
    attn = torch.zeros(b, length, dtype=torch.long)
    resp = torch.zeros(b, length - 1)
    gen = torch.zeros(b, length - 1)
    for i, r in enumerate(rollouts):
        seq = [*r.prompt_ids, *r.completion_ids]
        ids[i, : len(seq)] = torch.tensor(seq)
        attn[i, : len(seq)] = 1
        start = len(r.prompt_ids) - 1
        stop = start + len(r.completion_ids)
        mask = r.completion_mask if r.completion_mask is not None else [1] * len(r.completion_ids)
        resp[i, start:stop] = torch.tensor(mask, dtype=resp.dtype)
        gen[i, start:stop] = torch.tensor(r.generation_logprobs)
    return TrainBatch(
        ids,
        attn,
        resp,
        gen,
        torch.tensor([r.reward for r in rollouts], dtype=torch.float32),
        torch.tensor([r.group for r in rollouts]),
        torch.tensor([r.truncated for r in rollouts]),
    )
