"""GRPO advantages: leave-one-out baseline per prompt group, optional std normalisation.

Why these exact definitions: envkit trains with NeMo-RL's semantics (SPEC §8), so a reward curve
from ``envkit train`` reads the same as one from the platform's ``rl`` backend. The baseline and
std follow ``calculate_baseline_and_std_per_prompt`` (RLOO, https://arxiv.org/abs/2402.14740);
prompts are identified here by an integer group id instead of their token tensor.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

__all__ = ["GroupStats", "baseline_and_std", "compute_advantages", "group_stats"]


class GroupStats(NamedTuple):
    """Share of prompt groups by reward spread (``train_baseline_reward/pct_*``)."""

    pct_mixed: float
    pct_0: float
    pct_1: float


def _group_rows(group_ids: torch.Tensor) -> list[torch.Tensor]:
    """Row indices per distinct group id, in ascending id order."""
    return [torch.nonzero(group_ids == g).flatten() for g in torch.unique(group_ids)]


def _one_group(
    rewards: torch.Tensor, valid: torch.Tensor, *, leave_one_out: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """Baseline and std for one group. rewards, valid: (n,) -> (n,), (n,).

    Fewer than two valid samples: baseline = reward (advantage 0), std 0, as NeMo-RL does.
    """
    n = rewards.numel()
    if valid.sum() <= 1:
        return rewards.clone(), torch.zeros_like(rewards)
    weights = torch.ones(n, n, dtype=rewards.dtype)
    if leave_one_out:
        weights -= torch.eye(n, dtype=rewards.dtype)
    count = valid.sum().to(rewards.dtype) - int(leave_one_out)
    mean = weights @ (rewards * valid) / count
    mean_sq = weights @ (rewards.square() * valid) / count
    std = ((mean_sq - mean.square()) * (count / (count - 1))).clamp_min(0).sqrt().nan_to_num(0)
    return mean, std


def baseline_and_std(
    group_ids: torch.Tensor,
    rewards: torch.Tensor,
    valid_mask: torch.Tensor | None = None,
    *,
    leave_one_out: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-sample baseline and std of the other samples of the same prompt.

    group_ids: (b,) int, rewards: (b,) float, valid_mask: (b,) 0/1 -> baseline (b,), std (b,).
    """
    valid = torch.ones_like(rewards) if valid_mask is None else valid_mask.to(rewards.dtype)
    baseline = torch.zeros_like(rewards)
    std = torch.zeros_like(rewards)
    for rows in _group_rows(group_ids):
        baseline[rows], std[rows] = _one_group(
            rewards[rows], valid[rows], leave_one_out=leave_one_out
        )
    return baseline, std


def compute_advantages(
    group_ids: torch.Tensor,
    rewards: torch.Tensor,
    *,
    leave_one_out: bool = True,
    normalize: bool = True,
    valid_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """advantage = reward - baseline, divided by std only where std > 0. (b,) -> (b,).

    Dividing where std == 0 would blow up a group whose other samples all agree; NeMo-RL
    leaves those advantages unscaled.
    """
    baseline, std = baseline_and_std(group_ids, rewards, valid_mask, leave_one_out=leave_one_out)
    advantages = rewards - baseline
    if normalize:
        nonzero = std > 0
        advantages[nonzero] = advantages[nonzero] / std[nonzero]
    return advantages


def group_stats(group_ids: torch.Tensor, rewards: torch.Tensor) -> GroupStats:
    """Fractions of groups whose rewards disagree (mixed), are all 0, are all 1.

    A group with all-equal rewards has zero advantage everywhere: no gradient.
    """
    groups = [rewards[rows] for rows in _group_rows(group_ids)]
    if not groups:
        return GroupStats(0.0, 0.0, 0.0)
    mixed = sum(bool((g != g[0]).any()) for g in groups)
    zeros = sum(bool((g == 0).all()) for g in groups)
    ones = sum(bool((g == 1).all()) for g in groups)
    n = len(groups)
    return GroupStats(mixed / n, zeros / n, ones / n)
