"""Shared builders for GRPO jobs in the trainer's tests: the training block, its config, a job
file whose refs are local paths, and the toy inputs (tiny model, package, dataset) it trains on.

Why one module: the same small CPU job (a few prompts, 8 new tokens, a high learning rate so a
handful of steps move the reward) was copied into every trainer test; each test now states
only what it changes.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from envkit.trainer.config import GrpoConfig

__all__ = ["SMALL_CPU_JOB", "grpo_cfg", "training", "write_job"]

SMALL_CPU_JOB: dict[str, Any] = {
    "type": "grpo",
    "num_generations_per_prompt": 4,
    "batch_size": 16,
    "learning_rate": 3e-3,
    "weight_decay": 0.0,
    "max_new_tokens": 8,
    "micro_batch_size": 16,
    "epochs": 100,
    "seed": 1,
}
"""The small CPU job: 4 prompts x 4 generations per step, 8 new tokens."""


def training(**changes: Any) -> dict[str, Any]:
    """The job's ``training`` block: :data:`SMALL_CPU_JOB` with ``changes``."""
    return {**SMALL_CPU_JOB, **changes}


def grpo_cfg(**changes: Any) -> GrpoConfig:
    """The trainer's config for :func:`training` ``(**changes)``."""
    from envkit.trainer.config import grpo_config

    return grpo_config({"training": training(**changes)})


def write_job(path: Path, training_block: dict[str, Any], **refs: Path) -> Path:
    """A job JSON at ``path`` whose ``model``/``dataset``/``environment`` refs are local paths."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {key: str(value) for key, value in refs.items()}
    path.write_text(json.dumps({**data, "training": training_block}))
    return path
