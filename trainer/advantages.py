"""GRPO rewards and advantages: scaling, shaping, leave-one-out baseline, std, clipping.

Why these exact definitions: envkit trains with NeMo-RL's semantics (the product spec, section
8), so a reward curve from ``envkit train`` reads the same as one from the platform's ``rl``
backend. The baseline and std follow ``calculate_baseline_and_std_per_prompt`` (RLOO,
https://arxiv.org/abs/2402.14740); prompts are identified here by an integer group id instead
of their token tensor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import torch

if TYPE_CHECKING:
    from envkit.model.jobspec import RewardScaling, RewardShaping

__all__ = [
    "GroupStats",
    "baseline_and_std",
    "clip_advantages",
    "compute_advantages",
    "group_stats",
    "scale_rewards",
    "shape_rewards",
]

_STD_EPS = 1e-6
"""NeMo-RL divides by ``std + 1e-6`` where ``std > 0``."""


class GroupStats(NamedTuple):
    """Percent of *samples* whose baseline is 0, 1 or between (``baseline_reward/pct_*``)."""

    pct_mixed: float
    pct_0: float
    pct_1: float


def _one_group(
    rewards: torch.Tensor, valid: torch.Tensor, std_rewards: torch.Tensor, *, leave_one_out: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """Baseline and std for one group. rewards, valid, std_rewards: (n,) -> (n,), (n,).

    Fewer than two valid samples: baseline = reward (advantage 0), std 0, as NeMo-RL does.
    The std is taken over ``std_rewards`` (the unshaped rewards when shaping is on).
    """
    n = rewards.numel()
    if valid.sum() <= 1:
        return rewards.clone(), torch.zeros_like(rewards)
    weights = torch.ones(n, n, dtype=rewards.dtype)
    if leave_one_out:
        weights -= torch.eye(n, dtype=rewards.dtype)
    count = valid.sum().to(rewards.dtype) - int(leave_one_out)
    mean = weights @ (rewards * valid) / count
    std_mean = weights @ (std_rewards * valid) / count
    mean_sq = weights @ (std_rewards.square() * valid) / count
    var = (mean_sq - std_mean.square()) * (count / (count - 1))
    return mean, var.clamp_min(0).sqrt().nan_to_num(0)


def baseline_and_std(
    group_ids: torch.Tensor,
    rewards: torch.Tensor,
    valid_mask: torch.Tensor | None = None,
    *,
    leave_one_out: bool = True,
    std_rewards: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-sample baseline and std of the other samples of the same prompt.

    group_ids: (b,) int, rewards: (b,) float, valid_mask: (b,) 0/1 -> baseline (b,), std (b,).
    """
    valid = torch.ones_like(rewards) if valid_mask is None else valid_mask.to(rewards.dtype)
    spread = rewards if std_rewards is None else std_rewards
    baseline = torch.zeros_like(rewards)
    std = torch.zeros_like(rewards)
    for group in torch.unique(group_ids):
        rows = torch.nonzero(group_ids == group).flatten()
        baseline[rows], std[rows] = _one_group(
            rewards[rows], valid[rows], spread[rows], leave_one_out=leave_one_out
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
    """advantage = reward - baseline, divided by ``std + 1e-6`` only where std > 0. (b,) -> (b,).

    Dividing where std == 0 would blow up a group whose other samples all agree; NeMo-RL
    leaves those advantages unscaled.
    """
    baseline, std = baseline_and_std(group_ids, rewards, valid_mask, leave_one_out=leave_one_out)
    advantages = rewards - baseline
    if normalize:
        nonzero = std > 0
        advantages[nonzero] = advantages[nonzero] / (std[nonzero] + _STD_EPS)
    return advantages


def clip_advantages(
    advantages: torch.Tensor, low: float | None, high: float | None
) -> torch.Tensor:
    """Clamp normalised advantages to ``[low, high]``; an unset side is unbounded. (b,)."""
    if low is None and high is None:  # torch's clamp needs at least one bound
        return advantages
    return advantages.clamp(min=low, max=high)


def scale_rewards(rewards: torch.Tensor, scaling: RewardScaling | None) -> torch.Tensor:
    """Clamp to ``[source_min, source_max]``, map linearly onto the target range. (b,)."""
    if scaling is None:
        return rewards
    clamped = rewards.clamp(min=scaling.source_min, max=scaling.source_max)
    share = (clamped - scaling.source_min) / (scaling.source_max - scaling.source_min)
    return scaling.target_min + share * (scaling.target_max - scaling.target_min)


def shape_rewards(
    rewards: torch.Tensor,
    response_lengths: torch.Tensor,
    truncated: torch.Tensor,
    shaping: RewardShaping | None,
) -> torch.Tensor:
    """DAPO shaping. (b,) each -> (b,).

    ``stop_properly_penalty_coef`` scales the reward of truncated responses; otherwise a
    response longer than ``max_response_length - overlong_buffer_length`` loses
    ``excess / overlong_buffer_length * overlong_buffer_penalty`` (never a bonus).
    """
    if shaping is None:
        return rewards
    if shaping.stop_properly_penalty_coef is not None:
        return torch.where(truncated.bool(), rewards * shaping.stop_properly_penalty_coef, rewards)
    buffer, penalty = shaping.overlong_buffer_length, shaping.overlong_buffer_penalty
    if buffer is None or penalty is None or shaping.max_response_length is None:
        return rewards
    excess = response_lengths.to(rewards.dtype) - (shaping.max_response_length - buffer)
    return rewards + (-excess / buffer * penalty).clamp(max=0.0)


def group_stats(baseline: torch.Tensor) -> GroupStats:
    """Percent of samples whose baseline is exactly 0, exactly 1, or neither. (b,) -> stats.

    With the leave-one-out baseline, pct_0 counts samples whose *other* samples all scored 0.
    """
    if baseline.numel() == 0:
        return GroupStats(0.0, 0.0, 0.0)
    pct_0 = 100 * float((baseline == 0).float().mean())
    pct_1 = 100 * float((baseline == 1).float().mean())
    return GroupStats(100 - pct_0 - pct_1, pct_0, pct_1)
