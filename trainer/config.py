"""The run configuration the trainer executes, derived from the job model.

Why a view and not a second model: every job field's name, type and default lives in
``envkit.model.jobspec.GrpoSettings``; :class:`GrpoConfig` wraps those settings, resolves what the
platform's compiler resolves (seed 42, ``max_new_tokens`` = ``max_seq_length``, LoRA defaults,
the step count) and groups the loss and batching knobs for the modules that take them.
Attribute access falls through to the settings, so ``cfg.learning_rate`` is the job's value.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from envkit.errors import InvalidError
from envkit.model.jobspec import (
    GrpoSettings,
    JobSpecError,
    LoraSettings,
    ParallelismSettings,
    grpo_settings,
)
from envkit.trainer.loss import LossConfig

__all__ = [
    "BatchingSettings",
    "ConfigError",
    "GrpoConfig",
    "LoraSettings",
    "ParallelismSettings",
    "grpo_config",
]

DEFAULT_SEED = 42
"""What the platform's compiler puts in for an unset ``seed``."""


class ConfigError(InvalidError, ValueError):
    """The ``training`` block cannot drive a run (wrong type, impossible sizes)."""


@dataclass(frozen=True)
class BatchingSettings:
    """How rollouts become training micro-batches (``batching_strategy`` and its budget)."""

    strategy: str = "dynamic"
    mb_tokens: int = 2048
    sequence_length_round: int = 64


def _default_settings() -> GrpoSettings:
    return GrpoSettings(type="grpo")


@dataclass(frozen=True)
class GrpoConfig:
    """The job's settings plus what the trainer derives from them."""

    settings: GrpoSettings = field(default_factory=_default_settings)

    def __getattr__(self, name: str) -> Any:
        if name == "settings":  # not yet set (unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.settings, name)

    @property
    def seed(self) -> int:
        return DEFAULT_SEED if self.settings.seed is None else self.settings.seed

    @property
    def max_new_tokens(self) -> int:
        return self.settings.max_new_tokens or self.settings.max_seq_length

    @property
    def policy_backend(self) -> str:
        return self.settings.backend

    @property
    def lora(self) -> LoraSettings:
        return self.settings.lora or LoraSettings()

    @property
    def loss(self) -> LossConfig:
        s = self.settings
        names = [f.name for f in dataclasses.fields(LossConfig)]
        return LossConfig(**{n: getattr(s, n) for n in names})

    @property
    def batching(self) -> BatchingSettings:
        s = self.settings
        return BatchingSettings(s.batching_strategy, s.mb_tokens, s.sequence_length_round)

    @property
    def hf_config_overrides(self) -> dict[str, Any]:
        """``hf_config_overrides`` with ``router_aux_loss_coef`` layered on top (as compiled)."""
        overrides = dict(self.settings.hf_config_overrides or {})
        if self.settings.router_aux_loss_coef is not None:
            overrides["router_aux_loss_coef"] = float(self.settings.router_aux_loss_coef)
        return overrides

    @property
    def automodel_kwargs(self) -> dict[str, Any]:
        return dict(self.settings.automodel_kwargs or {})

    @property
    def optimizer_steps_per_step(self) -> int:
        """``rollouts // batch_size``: NeMo-RL trains one GRPO step in this many updates."""
        rollouts = self.prompts_per_step * self.settings.num_generations_per_prompt
        return max(rollouts // self.settings.batch_size, 1)

    def steps_per_epoch(self, num_rows: int) -> int:
        """``ceil(rows / prompts_per_step)``, at least 1, as the platform's compiler counts."""
        return max(-(-num_rows // self.prompts_per_step), 1)

    def total_steps(self, num_rows: int) -> int:
        """``steps_per_epoch x epochs``, capped by ``max_steps``."""
        total = self.steps_per_epoch(num_rows) * self.settings.epochs
        cap = self.settings.max_steps
        return min(cap, total) if cap else total

    def val_period(self, num_rows: int) -> int:
        """Steps between validations, as the platform compiles ``val_check_interval``.

        Unset or 0: once per epoch; <= 1: that fraction of an epoch; above: a step count.
        Capped at one epoch, and below ``total_steps`` so validation runs before the end.
        """
        per_epoch, total = self.steps_per_epoch(num_rows), self.total_steps(num_rows)
        effective = min(per_epoch, total)
        interval = self.settings.val_check_interval
        if not interval:
            return effective
        steps = max(1, int(interval * per_epoch)) if interval <= 1 else int(interval)
        steps = min(steps, effective)
        return max(1, total - 1) if steps >= total else steps


def grpo_config(job_data: dict[str, Any]) -> GrpoConfig:
    """The run configuration of a job dict.

    :raises ConfigError: ``training`` is missing, has a wrong field, or cannot train.
    """
    training = job_data.get("training") if isinstance(job_data, dict) else None
    if isinstance(training, dict) and "type" not in training:
        msg = (
            '`training.type` is missing; GRPO needs "grpo" '
            "(the platform rejects a missing type with union_tag_not_found, EK600)"
        )
        raise ConfigError(msg)
    try:
        settings = grpo_settings(job_data)
    except JobSpecError as exc:
        raise ConfigError(str(exc)) from None
    if settings.use_leave_one_out_baseline and settings.num_generations_per_prompt < 2:
        msg = "`training.num_generations_per_prompt` must be >= 2 (the group is the signal)"
        raise ConfigError(msg)
    if settings.finetuning_type == "all_weights" and settings.lora is not None:
        msg = "`training.lora` is given but `training.finetuning_type` is all_weights (EK601)"
        raise ConfigError(msg)
    return GrpoConfig(settings)
