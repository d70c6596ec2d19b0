"""The run configuration the trainer executes, derived from the job model.

Why a view and not a second model: every job field's name, type and default lives in
``envkit.model.jobspec.GrpoSettings``; :class:`GrpoConfig` holds the job's ``training`` block
as ``training`` and adds, as properties, what the platform's compiler resolves (seed,
``max_new_tokens``, LoRA defaults, the step count) and the loss and batching groups the modules
take. The job's rules are not checked here: the trainer runs a job the validators accepted.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from envkit.errors import InvalidError
from envkit.model.jobspec import GrpoSettings, JobSpecError, LoraSettings, grpo_settings
from envkit.trainer.loss import LossConfig

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["BatchingSettings", "ConfigError", "GrpoConfig", "LoraSettings", "grpo_config"]

DEFAULT_SEED = 42
"""What the platform's compiler puts in for an unset ``seed``."""


class ConfigError(InvalidError, ValueError):
    """The ``training`` block cannot be read into the job model (a wrong type or range)."""


@dataclass(frozen=True, slots=True)
class BatchingSettings:
    """How rollouts become training micro-batches (``batching_strategy`` and its budget)."""

    strategy: str = "dynamic"
    mb_tokens: int = 2048
    sequence_length_round: int = 64


@dataclass(frozen=True, slots=True)
class GrpoConfig:
    """The job's ``training`` block (``cfg.training.<field>``) plus what the trainer derives."""

    training: GrpoSettings = field(default_factory=lambda: GrpoSettings(type="grpo"))

    @property
    def seed(self) -> int:
        return DEFAULT_SEED if self.training.seed is None else self.training.seed

    @property
    def max_new_tokens(self) -> int:
        return self.training.max_new_tokens or self.training.max_seq_length

    @property
    def lora(self) -> LoraSettings:
        return self.training.lora or LoraSettings()

    @property
    def prompts_per_step(self) -> int:
        return self.training.prompts_per_step

    @property
    def loss(self) -> LossConfig:
        fields = dataclasses.fields(LossConfig)
        return LossConfig(**{f.name: getattr(self.training, f.name) for f in fields})

    @property
    def batching(self) -> BatchingSettings:
        t = self.training
        return BatchingSettings(t.batching_strategy, t.mb_tokens, t.sequence_length_round)

    @property
    def hf_config_overrides(self) -> dict[str, Any]:
        """``hf_config_overrides`` with ``router_aux_loss_coef`` layered on top (as compiled)."""
        overrides = dict(self.training.hf_config_overrides or {})
        if self.training.router_aux_loss_coef is not None:
            overrides["router_aux_loss_coef"] = float(self.training.router_aux_loss_coef)
        return overrides

    @property
    def optimizer_steps_per_step(self) -> int:
        """``rollouts // batch_size``: NeMo-RL trains one GRPO step in this many updates."""
        rollouts = self.prompts_per_step * self.training.num_generations_per_prompt
        return max(rollouts // self.training.batch_size, 1)

    def steps_per_epoch(self, num_rows: int) -> int:
        """``ceil(rows / prompts_per_step)``, at least 1, as the platform's compiler counts."""
        return max(-(-num_rows // self.prompts_per_step), 1)

    def total_steps(self, num_rows: int) -> int:
        """``steps_per_epoch x epochs``, capped by ``max_steps``."""
        total = self.steps_per_epoch(num_rows) * self.training.epochs
        cap = self.training.max_steps
        return min(cap, total) if cap else total

    def val_period(self, num_rows: int) -> int:
        """Steps between validations, as the platform compiles ``val_check_interval``.

        Unset or 0: once per epoch; <= 1: that fraction of an epoch; above: a step count.
        Capped at one epoch, and below ``total_steps`` so validation runs before the end.
        """
        per_epoch, total = self.steps_per_epoch(num_rows), self.total_steps(num_rows)
        effective = min(per_epoch, total)
        interval = self.training.val_check_interval
        if not interval:
            return effective
        steps = max(1, int(interval * per_epoch)) if interval <= 1 else int(interval)
        steps = min(steps, effective)
        return max(1, total - 1) if steps >= total else steps


def grpo_config(job_data: Mapping[str, Any]) -> GrpoConfig:
    """The run configuration of a job dict (tests, benchmarks; a run builds it from the job it
    validated, :attr:`envkit.model.jobfile.JobDoc.typed`).

    :raises ConfigError: ``training`` is missing or a field has the wrong type or range; the
        job's cross-field rules are ``envkit validate --job``'s, not checked here.
    """
    try:
        return GrpoConfig(grpo_settings(job_data))
    except JobSpecError as exc:
        raise ConfigError(str(exc)) from None
