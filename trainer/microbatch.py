"""Which rollouts train together: the micro-batch plan for ``batching_strategy`` (the "GRPO and
Reward Environments" guide).

Why a planner apart from the tensors: the grouping is the whole difference between the three
strategies, and as plain index lists it is tested without a model. The loss is normalised by
the step's token count (``loss.py``), so every plan gives the same loss and gradients; only
memory and wasted (padded) compute differ.

- ``static``: ``micro_batch_size`` rollouts per micro-batch, in order, padded to the
  micro-batch's longest rollout.
- ``dynamic``: rollouts sorted by length, a micro-batch filled while
  ``rows x bucketed width <= mb_tokens``; widths are rounded up to ``sequence_length_round``.
- ``sequence_packing``: rollouts concatenated (first-fit decreasing) into one row of at most
  ``mb_tokens`` tokens per micro-batch, no padding.

A rollout longer than the budget always goes alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from envkit.trainer.config import BatchingSettings

__all__ = ["MicroBatchPlan", "plan_microbatches", "round_up"]


@dataclass(frozen=True, slots=True)
class MicroBatchPlan:
    """One micro-batch: rows of rollout indices (a packed row holds several) and their width."""

    rows: tuple[tuple[int, ...], ...]
    width: int
    packed: bool = False


def round_up(length: int, multiple: int) -> int:
    """``length`` rounded up to a multiple of ``multiple``.

    >>> round_up(65, 64), round_up(64, 64)
    (128, 64)
    """
    return -(-length // multiple) * multiple


def plan_microbatches(
    lengths: Sequence[int], settings: BatchingSettings, micro_batch_size: int
) -> list[MicroBatchPlan]:
    """Micro-batches over rollouts of the given token lengths (prompt + completion)."""
    if settings.strategy == "static":
        return _static(lengths, max(1, micro_batch_size))
    if settings.strategy == "sequence_packing":
        return _packed(lengths, settings.mb_tokens)
    return _dynamic(lengths, settings.mb_tokens, settings.sequence_length_round)


def _static(lengths: Sequence[int], size: int) -> list[MicroBatchPlan]:
    chunks = [range(s, min(s + size, len(lengths))) for s in range(0, len(lengths), size)]
    return [MicroBatchPlan(tuple((i,) for i in c), max(lengths[i] for i in c)) for c in chunks]


def _longest_first(lengths: Sequence[int]) -> list[int]:
    """Indices by length, longest first; ties keep rollout order (a deterministic plan)."""
    return sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))


def _dynamic(lengths: Sequence[int], budget: int, multiple: int) -> list[MicroBatchPlan]:
    """Longest first, so a micro-batch's first row fixes its bucketed width."""
    plans: list[MicroBatchPlan] = []
    rows: list[int] = []
    width = 0
    for i in _longest_first(lengths):
        if rows and (len(rows) + 1) * width > budget:
            plans.append(MicroBatchPlan(tuple((r,) for r in rows), width))
            rows = []
        if not rows:
            width = round_up(lengths[i], multiple)
        rows.append(i)
    if rows:
        plans.append(MicroBatchPlan(tuple((r,) for r in rows), width))
    return plans


def _packed(lengths: Sequence[int], budget: int) -> list[MicroBatchPlan]:
    """First-fit decreasing bin packing; each bin is one unpadded row."""
    bins: list[list[int]] = []
    used: list[int] = []
    for i in _longest_first(lengths):
        slot = next((b for b, u in enumerate(used) if u + lengths[i] <= budget), None)
        if slot is None:
            bins.append([i])
            used.append(lengths[i])
        else:
            bins[slot].append(i)
            used[slot] += lengths[i]
    return [MicroBatchPlan((tuple(b),), u, packed=True) for b, u in zip(bins, used, strict=True)]
