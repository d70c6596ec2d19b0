"""GRPO settings read from the job JSON ``training`` block (seed 000 "Fast path — rl (GRPO)").

Why a private adapter: the job-schema part owns validation (``validators/job.py``, EK6xx) and
``envkit.jobspec``; the trainer only needs typed values with the seed's defaults, so
:func:`grpo_config` reads the block leniently and can be swapped for ``jobspec.grpo_settings``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any

from envkit.trainer.loss import LossConfig

__all__ = ["ConfigError", "GrpoConfig", "LoraSettings", "grpo_config"]


class ConfigError(ValueError):
    """The ``training`` block cannot drive a run (wrong type, impossible sizes)."""


@dataclass(frozen=True)
class LoraSettings:
    """seed 001 "LoRA fields"; neither module list set -> every linear layer."""

    rank: int = 16
    alpha: int = 32
    dropout: float = 0.0
    target_modules: tuple[str, ...] | None = None
    exclude_modules: tuple[str, ...] | None = None


@dataclass(frozen=True)
class GrpoConfig:
    num_generations_per_prompt: int = 8
    batch_size: int = 32
    num_prompts_per_step: int | None = None
    temperature: float = 1.0
    max_new_tokens: int = 512
    max_seq_length: int = 2048
    max_rollout_turns: int = 1
    learning_rate: float = 1e-5
    min_learning_rate: float | None = None
    adam_eps: float = 1e-8
    warmup_steps: int = 0
    weight_decay: float = 0.01
    lr_decay: str = "cosine"
    epochs: int = 1
    max_steps: int | None = None
    micro_batch_size: int = 1
    use_dynamic_sampling: bool = False
    batch_multiplier: float = 1.0
    dynamic_sampling_max_gen_batches: int = 10
    normalize_rewards: bool = True
    use_leave_one_out_baseline: bool = True
    overlong_filtering: bool = False
    val_at_start: bool = False
    val_at_end: bool = False
    val_check_interval: int | None = None
    keep_top_k: int | None = None
    seed: int = 42
    finetuning_type: str = "all_weights"
    lora: LoraSettings = field(default_factory=LoraSettings)
    loss: LossConfig = field(default_factory=LossConfig)

    @property
    def prompts_per_step(self) -> int:
        """``num_prompts_per_step``, else ``batch_size / num_generations_per_prompt``."""
        if self.num_prompts_per_step is not None:
            return self.num_prompts_per_step
        return max(1, self.batch_size // self.num_generations_per_prompt)

    def total_steps(self, num_rows: int) -> int:
        """``epochs`` over the rows (last partial batch dropped), capped by ``max_steps``."""
        per_epoch = max(1, num_rows // self.prompts_per_step)
        steps = self.epochs * per_epoch
        return min(steps, self.max_steps) if self.max_steps is not None else steps


_LOSS_KEYS = {f.name for f in fields(LossConfig)}
_TOP_KEYS = {f.name for f in fields(GrpoConfig)} - {"lora", "loss"}


def _lora(block: Any) -> LoraSettings:
    if block is None:
        return LoraSettings()
    if not isinstance(block, dict):
        msg = f"`training.lora` must be an object, got {type(block).__name__}"
        raise ConfigError(msg)
    known = {k: v for k, v in block.items() if k in {f.name for f in fields(LoraSettings)}}
    for key in ("target_modules", "exclude_modules"):
        if known.get(key) is not None:
            known[key] = tuple(known[key])
    return LoraSettings(**known)


def _check(cfg: GrpoConfig) -> GrpoConfig:
    if cfg.temperature <= 0:
        msg = "`training.temperature` must be > 0: greedy groups are identical (no signal)"
        raise ConfigError(msg)
    if cfg.finetuning_type not in {"all_weights", "lora"}:
        msg = f"`training.finetuning_type` {cfg.finetuning_type!r}: use 'all_weights' or 'lora'"
        raise ConfigError(msg)
    if cfg.num_generations_per_prompt < 2:  # a group needs two samples
        msg = "`training.num_generations_per_prompt` must be >= 2 (the group is the signal)"
        raise ConfigError(msg)
    if not math.isfinite(cfg.batch_multiplier) or cfg.batch_multiplier < 1:
        msg = "`training.batch_multiplier` must be >= 1"
        raise ConfigError(msg)
    return cfg


def grpo_config(job_data: dict[str, Any]) -> GrpoConfig:
    """Typed settings from a job dict; unknown ``training`` keys are left to the validator.

    :raises ConfigError: when ``training`` is not an object or a value cannot train.
    """
    block = job_data.get("training") if isinstance(job_data, dict) else None
    if not isinstance(block, dict):
        msg = "job has no `training` object"
        raise ConfigError(msg)
    if block.get("type") != "grpo":
        msg = (
            f'`training.type` is {block.get("type")!r}; GRPO needs "grpo" '
            "(the platform rejects a missing type with union_tag_not_found, EK600)"
        )
        raise ConfigError(msg)
    top = {k: v for k, v in block.items() if k in _TOP_KEYS}
    loss = LossConfig(**{k: v for k, v in block.items() if k in _LOSS_KEYS})
    try:
        cfg = GrpoConfig(**top, lora=_lora(block.get("lora")), loss=loss)
    except TypeError as exc:
        msg = f"`training` block: {exc}"
        raise ConfigError(msg) from None
    return _check(cfg)
