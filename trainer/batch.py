"""Rollouts -> training tensors, aligned to next-token logprob positions.

Why one layout: ``token_logprobs`` returns (b, L - 1) where column t scores token t + 1, so
the response mask and the sampler's logprobs are written into the same columns, padded or
packed: completion token j of a rollout at offset o sits at column o + len(prompt) - 1 + j.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from collections.abc import Sequence

    from envkit.gym import Rollout
    from envkit.trainer.microbatch import MicroBatchPlan

__all__ = ["MicroBatch", "build_microbatch"]


@dataclass(frozen=True, slots=True)
class MicroBatch:
    """The tensors one forward/backward pass trains on (``microbatch.py`` decides the rows).

    ``attention_mask`` is ``None`` for packed rows: HF models then read the rollout boundaries
    from ``position_ids`` (they restart at 0 per rollout) and keep the rollouts apart; that
    needs ``use_cache=False`` (``policy.token_logprobs``).
    """

    input_ids: torch.Tensor  # (b, L)
    position_ids: torch.Tensor  # (b, L)
    attention_mask: torch.Tensor | None  # (b, L) for padded rows, None for packed rows
    loss_mask: torch.Tensor  # (b, L-1) response columns, overlong-filtered
    generation_logprobs: torch.Tensor  # (b, L-1)
    advantages: torch.Tensor  # (b, L-1) each rollout's advantage on its own columns
    real_tokens: int  # tokens that are not padding

    def to(self, device: torch.device) -> MicroBatch:
        """The micro-batch on the policy's device."""
        moved: dict[str, Any] = {
            f: v.to(device) if isinstance(v := getattr(self, f), torch.Tensor) else v
            for f in self.__dataclass_fields__
        }
        return MicroBatch(**moved)


def build_microbatch(
    rollouts: Sequence[Rollout],
    advantages: torch.Tensor,
    plan: MicroBatchPlan,
    pad_id: int,
    *,
    overlong_filtering: bool,
) -> MicroBatch:
    """Lay out ``plan``'s rows; rollout k of a row starts at its running offset, position 0.

    A packed rollout's first column (scoring its second token) never scores a token of its
    neighbour.
    """
    shape = (len(plan.rows), plan.width)
    ids = torch.full(shape, pad_id, dtype=torch.long)
    pos = torch.zeros(shape, dtype=torch.long)  # pads at 0: a bucketed width may pass the context
    attn = torch.zeros(shape, dtype=torch.long)
    cols = torch.zeros(shape[0], plan.width - 1, 3)  # loss mask, generation logprob, advantage
    for row, members in enumerate(plan.rows):
        offset = 0
        for i in members:
            r = rollouts[i]
            seq = [*r.prompt_ids, *r.completion_ids]
            end = offset + len(seq)
            ids[row, offset:end] = torch.tensor(seq)
            pos[row, offset:end] = torch.arange(len(seq))
            attn[row, offset:end] = 1
            start = offset + len(r.prompt_ids) - 1
            stop = start + len(r.completion_ids)
            scored = (1,) * (stop - start) if r.completion_mask is None else r.completion_mask
            keep = not (overlong_filtering and r.truncated)
            cols[row, start:stop, 0] = torch.tensor(scored, dtype=cols.dtype) * float(keep)
            cols[row, start:stop, 1] = torch.tensor(r.generation_logprobs, dtype=cols.dtype)
            cols[row, start:stop, 2] = float(advantages[i])
            offset = end
    real = int(attn.sum())
    mask = None if plan.packed else attn
    return MicroBatch(ids, pos, mask, cols[..., 0], cols[..., 1], cols[..., 2], real)
