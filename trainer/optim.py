"""The optimizer and LR schedule the platform compiles for a GRPO job, in closed form.

Why closed form: the platform compiles ``optimizer_type`` into torch's ``LinearLR`` warmup then
``CosineAnnealingLR`` (in ``SequentialLR``) or a ``ConstantLR``; :func:`lr_at` gives the same
value for any scheduler step, so it is tested by value and a resumed run rebuilds the
schedule from the step count alone. The scheduler steps once per GRPO step (NeMo-RL steps it
after all of a step's optimizer updates), so every update of a step shares one LR.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from collections.abc import Iterable

    from envkit.trainer.config import GrpoConfig

__all__ = ["DEFAULT_OPTIMIZER", "is_flat", "lr_at", "make_optimizer", "make_scheduler",
           "optimizer_name", "warmup_schedule"]

DEFAULT_OPTIMIZER = "adamw_with_cosine_annealing"
"""What the compiler picks for an unset ``optimizer_type``."""

_MIN_START_FACTOR = 1e-5
"""The compiler's floor on the warmup start factor."""


def is_flat(optimizer_type: str | None) -> bool:
    return (optimizer_type or DEFAULT_OPTIMIZER).endswith("_flat_lr")


def optimizer_name(optimizer_type: str | None) -> str:
    """The ``torch.optim`` class: ``Adam`` for the ``adam_*`` types, else ``AdamW``."""
    return "Adam" if (optimizer_type or DEFAULT_OPTIMIZER).startswith("adam_") else "AdamW"


def warmup_schedule(lr: float, min_lr: float | None, steps: int) -> tuple[float, int, float]:
    """``(floor, warmup steps, start factor)`` as the compiler sets them: at least one warmup
    step, from ``max(min_lr / lr, 1e-5)`` of ``lr``, towards a cosine floor of ``min_lr or 0``."""
    floor = min_lr or 0.0
    return floor, max(steps, 1), max(floor / lr, _MIN_START_FACTOR)


def lr_at(
    step: int, *, lr: float, min_lr: float | None, warmup: int, total: int, flat: bool = False
) -> float:
    """LR after ``step`` scheduler steps (0-based: step 0 is the first GRPO step).

    Cosine: ``W`` warmup steps linearly towards ``lr`` (:func:`warmup_schedule`), then cosine
    from ``lr`` to the floor over ``max(total - W, 1)`` steps. Flat: ``lr`` throughout.
    """
    if flat:
        return lr
    floor, w, start = warmup_schedule(lr, min_lr, warmup)
    if step < w:
        return lr * (start + (1.0 - start) * step / w)
    span = max(total - w, 1)
    return floor + (lr - floor) * 0.5 * (1 + math.cos(math.pi * (step - w) / span))


def make_optimizer(params: Iterable[torch.nn.Parameter], cfg: GrpoConfig) -> torch.optim.Optimizer:
    """The :func:`optimizer_name` optimizer (``Adam`` still gets the weight decay, as the
    compiler passes it)."""
    adam = optimizer_name(cfg.training.optimizer_type) == "Adam"
    cls = torch.optim.Adam if adam else torch.optim.AdamW
    return cls(
        [p for p in params if p.requires_grad],
        lr=cfg.training.learning_rate,
        betas=(cfg.training.adam_beta1, cfg.training.adam_beta2),
        eps=cfg.training.adam_eps,
        weight_decay=cfg.training.weight_decay,
        foreach=False,
    )


def make_scheduler(
    optimizer: torch.optim.Optimizer, cfg: GrpoConfig, total_steps: int
) -> torch.optim.lr_scheduler.LambdaLR:
    """LambdaLR over :func:`lr_at`, as a multiplier of the base ``learning_rate``."""
    flat = is_flat(cfg.training.optimizer_type)

    def factor(step: int) -> float:
        value = lr_at(
            step,
            lr=cfg.training.learning_rate,
            min_lr=cfg.training.min_learning_rate,
            warmup=cfg.training.warmup_steps,
            total=total_steps,
            flat=flat,
        )
        return value / cfg.training.learning_rate

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
