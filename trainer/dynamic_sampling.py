"""A GRPO step's samples: rewards scaled then shaped, baselines, and DAPO dynamic sampling.

Why apart from the loop: these are NeMo-RL's rules (``scale_rewards``, ``apply_reward_shaping``,
``dynamic_sampling`` in ``nemo_rl/algorithms/grpo.py``), tested by value with a fake
generator; the loop passes in how to take prompts and how to generate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from envkit.errors import FailedError
from envkit.trainer.advantages import baseline_and_std, group_stats, scale_rewards, shape_rewards

if TYPE_CHECKING:
    from collections.abc import Callable

    from envkit.gym import Rollout
    from envkit.trainer.config import GrpoConfig

    Generate = Callable[[int, int], list[Rollout]]
    """``generate(num_prompts, first_group)``: take that many prompts and roll them out."""

__all__ = ["DynamicSamplingError", "Sampled", "sample_step", "train_metrics",
           "zero_variance_groups"]


class DynamicSamplingError(FailedError, RuntimeError):
    """Too few samples with a reward spread within ``dynamic_sampling_max_gen_batches``."""


@dataclass
class Sampled:
    """A step's training samples, their (scaled, shaped) rewards and baselines, and what the
    step generated to find them."""

    rollouts: list[Rollout]
    rewards: torch.Tensor
    baseline: torch.Tensor
    generated_rewards: list[float]
    gen_batches: int = 1
    discarded: int = 0
    failed: int = 0
    """Rollouts that errored or timed out: counted here, never scored, never trained on."""
    zero_variance: tuple[int, int] = (0, 0)
    """(groups whose rewards all agree, groups) over every generated batch of the step."""


def groups_of(rollouts: list[Rollout]) -> torch.Tensor:
    return torch.tensor([r.group for r in rollouts], dtype=torch.long)


def zero_variance_groups(rollouts: list[Rollout], rewards: torch.Tensor) -> tuple[int, int]:
    """(groups whose rewards all agree, groups): the prompts that give this batch no gradient
    (``envkit probe --model`` predicts the same share, EK810)."""
    by_group: dict[int, list[float]] = {}
    for rollout, reward in zip(rollouts, rewards.tolist(), strict=True):
        by_group.setdefault(rollout.group, []).append(reward)
    return sum(max(g) - min(g) <= 1e-9 for g in by_group.values()), len(by_group)


def _scored(rollouts: list[Rollout], cfg: GrpoConfig) -> tuple[torch.Tensor, ...]:
    """Scaled then shaped rewards (NeMo-RL's order), their baselines and stds. (b,) each.

    The std is taken over the unshaped rewards when dynamic sampling and shaping are both on.
    """
    raw = torch.tensor([r.reward for r in rollouts], dtype=torch.float32)
    scaled = scale_rewards(raw, cfg.training.reward_scaling)
    lengths = torch.tensor([len(r.completion_ids) for r in rollouts])
    truncated = torch.tensor([bool(r.truncated) for r in rollouts])
    shaping = cfg.training.reward_shaping
    rewards = shape_rewards(scaled, lengths, truncated, shaping)
    spread = scaled if cfg.training.use_dynamic_sampling and shaping is not None else rewards
    baseline, std = baseline_and_std(groups_of(rollouts), rewards, std_rewards=spread,
                                     leave_one_out=cfg.training.use_leave_one_out_baseline)
    return rewards, baseline, std


def sample_step(cfg: GrpoConfig, generate: Generate) -> Sampled:
    """One generation batch, or dynamic sampling's batches until the step is full."""
    if cfg.training.use_dynamic_sampling:
        return _dynamic(cfg, generate)
    rollouts = generate(cfg.prompts_per_step, 0)
    rewards, baseline, _ = _scored(rollouts, cfg)
    return Sampled(rollouts, rewards, baseline, rewards.tolist(),
                   zero_variance=zero_variance_groups(rollouts, rewards))


def _dynamic(cfg: GrpoConfig, generate: Generate) -> Sampled:
    """Keep *samples* whose (leave-one-out) std is not 0, fill by sample count, cut at
    ``prompts x G``. A batch asks for ``int(prompts x batch_multiplier)`` prompts (floored);
    NeMo-RL counts batches from 1 and fails only once the count exceeds
    ``dynamic_sampling_max_gen_batches``, so batch ``max + 1`` is the last try."""
    wanted = cfg.prompts_per_step * cfg.training.num_generations_per_prompt
    per_batch = int(cfg.prompts_per_step * cfg.training.batch_multiplier)
    kept: list[tuple[Any, float, float]] = []
    generated: list[float] = []
    batches = zero = groups = 0
    while batches <= cfg.training.dynamic_sampling_max_gen_batches:
        batches += 1
        rollouts = generate(per_batch, (batches - 1) * per_batch)
        rewards, baseline, std = _scored(rollouts, cfg)
        generated += rewards.tolist()
        batch_zero, batch_groups = zero_variance_groups(rollouts, rewards)
        zero, groups = zero + batch_zero, groups + batch_groups
        kept += [
            (r, float(w), float(b))
            for r, w, b, s in zip(rollouts, rewards, baseline, std, strict=True)
            if s != 0
        ]
        if len(kept) >= wanted:
            chosen = kept[:wanted]
            return Sampled(
                [k[0] for k in chosen],
                torch.tensor([k[1] for k in chosen]),
                torch.tensor([k[2] for k in chosen]),
                generated,
                batches,
                len(kept) - wanted,
                zero_variance=(zero, groups),
            )
    msg = (
        f"dynamic sampling kept {len(kept)} of {wanted} samples with a reward spread in "
        f"{batches} generation batches (`dynamic_sampling_max_gen_batches` "
        f"{cfg.training.dynamic_sampling_max_gen_batches}); raise it or `batch_multiplier`, or "
        "check the reward"
    )
    raise DynamicSamplingError(msg)


def train_metrics(sampled: Sampled, advantages: torch.Tensor) -> dict[str, float]:
    """NeMo-RL's step metrics: ``train_reward`` over every generated sample (unfiltered),
    ``baseline_reward/pct_*`` in percent of the trained samples; and envkit's
    ``train_zero_variance_share``, the share of the step's generated prompt groups whose
    rewards all agree (before dynamic sampling drops them)."""
    rollouts, n = sampled.rollouts, len(sampled.rollouts)
    stats = group_stats(sampled.baseline)
    metrics = {
        "train_reward": sum(sampled.generated_rewards) / max(len(sampled.generated_rewards), 1),
        "train_baseline_reward/pct_mixed": stats.pct_mixed,
        "train_baseline_reward/pct_0": stats.pct_0,
        "train_baseline_reward/pct_1": stats.pct_1,
        "train_advantages/mean": float(advantages.mean()) if n else 0.0,
        "train_truncation_rate": sum(bool(r.truncated) for r in rollouts) / max(n, 1),
        "train_mean_gen_tokens": sum(len(r.completion_ids) for r in rollouts) / max(n, 1),
        "train_zero_variance_share": sampled.zero_variance[0] / max(sampled.zero_variance[1], 1),
    }
    if len(sampled.generated_rewards) != n:
        metrics["train_filtered_reward"] = float(sampled.rewards.mean()) if n else 0.0
    return metrics
