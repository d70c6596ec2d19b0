"""AdamW plus NeMo-RL's schedule: linear warmup, then cosine (or linear) decay to the minimum.

Why a pure :func:`lr_at`: the schedule is tested by value, and a resumed run rebuilds the
scheduler from the step count alone, so there is no hidden scheduler state to drift.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from collections.abc import Iterable

    from envkit.trainer.config import GrpoConfig

__all__ = ["lr_at", "make_optimizer", "make_scheduler"]


def lr_at(
    step: int, *, lr: float, min_lr: float, warmup: int, total: int, decay: str = "cosine"
) -> float:
    """Learning rate for optimizer step ``step`` (0-based).

    Warmup ramps linearly to ``lr`` over ``warmup`` steps, then decays to ``min_lr`` at
    ``total``; ``decay="constant"`` holds ``lr``.
    """
    if warmup > 0 and step < warmup:
        return lr * (step + 1) / warmup
    if decay == "constant" or total <= warmup:
        return lr
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    if decay == "linear":
        return lr + (min_lr - lr) * progress
    return min_lr + (lr - min_lr) * 0.5 * (1 + math.cos(math.pi * progress))


def make_optimizer(params: Iterable[torch.nn.Parameter], cfg: GrpoConfig) -> torch.optim.AdamW:
    return torch.optim.AdamW(
        [p for p in params if p.requires_grad],
        lr=cfg.learning_rate,
        eps=cfg.adam_eps,
        weight_decay=cfg.weight_decay,
    )


def make_scheduler(
    optimizer: torch.optim.Optimizer, cfg: GrpoConfig, total_steps: int
) -> torch.optim.lr_scheduler.LambdaLR:
    """LambdaLR over :func:`lr_at`, as a multiplier of the base ``learning_rate``."""
    min_lr = cfg.learning_rate if cfg.min_learning_rate is None else cfg.min_learning_rate

    def factor(step: int) -> float:
        value = lr_at(
            step,
            lr=cfg.learning_rate,
            min_lr=min_lr,
            warmup=cfg.warmup_steps,
            total=total_steps,
            decay=cfg.lr_decay,
        )
        return value / cfg.learning_rate

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
